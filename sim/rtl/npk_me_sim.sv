// The Verilator top: one npk_me with its control store (a RAM macro in hardware; here an
// array the harness fills through the public names) and the testbench side of its
// neighbours: the next ME's NN registers and ring (what n$k / *n$index++ write), the
// scratch-ring states br_inp_state reads.  Not synthesised (yosys elaborates npk_me alone).
module npk_me_sim #(
    parameter int LM_WORDS = 640,
    parameter int CS_WORDS = 8192,
    parameter int NN_REGS = 128,
    parameter int BRANCH_PENALTY = 3,
    parameter int LM_ADDR_DELAY = 3,
    parameter int CMD_FIFO_DEPTH = 8
) (
    input  logic        clk,
    input  logic        rst,
    input  logic [4:0]  me_number,
    input  logic        mode4,
    input  logic [63:0] prng_seed,
    input  logic        sig_valid,
    input  logic [2:0]  sig_ctx,
    input  logic [3:0]  sig_num,
    output logic        retire,
    output logic [2:0]  retire_ctx,
    output logic [12:0] retire_pc,
    output logic        idle,
    output logic [63:0] cycle,
    output logic [3:0]  fault,
    output logic [39:0] fault_word,
    output logic [12:0] fault_pc,
    output logic [2:0]  fault_ctx,
    output logic        cmd_valid,
    output logic [4:0]  cmd_op,
    output logic [3:0]  cmd_sub,
    output logic [5:0]  cmd_xfer,
    output logic [3:0]  cmd_count,
    output logic [3:0]  cmd_sig,
    output logic        cmd_swap,
    output logic [31:0] cmd_a,
    output logic [31:0] cmd_b
);
  logic [39:0] cstore[CS_WORDS] /*verilator public_flat_rw*/;
  logic [13:0] image_words /*verilator public_flat_rw*/;
  logic [12:0] cs_addr;
  // the next ME's NN registers and ring indices (nobody pops them here)
  logic [31:0] next_nn[NN_REGS] /*verilator public_flat_rw*/;
  logic [6:0]  next_put /*verilator public_flat_rw*/;
  logic [6:0]  next_get /*verilator public_flat_rw*/;
  logic [15:0] scr_full /*verilator public_flat_rw*/;
  logic [15:0] scr_empty /*verilator public_flat_rw*/;
  logic        nn_out_we, nn_out_push;
  logic [6:0]  nn_out_idx, next_nn_raddr;
  logic [31:0] nn_out_data;

  always_ff @(posedge clk) begin
    if (nn_out_we) next_nn[nn_out_idx] <= nn_out_data;
    if (nn_out_push) begin
      next_nn[next_put] <= nn_out_data;
      next_put <= 7'((32'(next_put) + 1) % NN_REGS);
    end
  end

  npk_me #(
      .LM_WORDS(LM_WORDS), .CS_WORDS(CS_WORDS), .NN_REGS(NN_REGS),
      .BRANCH_PENALTY(BRANCH_PENALTY), .LM_ADDR_DELAY(LM_ADDR_DELAY),
      .CMD_FIFO_DEPTH(CMD_FIFO_DEPTH)
  ) me (
      .clk, .rst, .me_number, .mode4, .prng_seed, .cs_addr,
      .cs_data(cstore[cs_addr]), .cs_loaded({1'b0, cs_addr} < image_words),
      .sig_valid, .sig_ctx, .sig_num,
      .scr_ring_full(scr_full), .scr_ring_empty(scr_empty),
      .prev_nn_we(1'b0), .prev_nn_push(1'b0), .prev_nn_idx(7'd0), .prev_nn_data(32'd0),
      .nn_out_we, .nn_out_push, .nn_out_idx, .nn_out_data, .next_nn_raddr,
      .next_nn_rdata(next_nn[next_nn_raddr]),
      .next_nn_full(7'((32'(next_put) + 1) % NN_REGS) == next_get),
      .retire, .retire_ctx, .retire_pc, .idle, .cycle,
      .fault, .fault_word, .fault_pc, .fault_ctx,
      .cmd_valid, .cmd_op, .cmd_sub, .cmd_xfer, .cmd_count, .cmd_sig, .cmd_swap, .cmd_a, .cmd_b
  );
endmodule
