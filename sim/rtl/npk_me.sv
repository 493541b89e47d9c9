// One npkit microengine in SystemVerilog: 8 (or 4) contexts, GPR A/B banks, transfer
// registers, next-neighbour registers and ring, local memory, the ALU / shifter /
// byte_align / ld_field unit, immed*, mul_step, CRC, CAM, branches with defer slots,
// ctx_arb and the local CSRs.  Memory and unit commands (sram, scratch, dram, msf, hash)
// are *issued*: decoded, their operands read, reported on the cmd_* outputs, counted in the
// command FIFO (a full FIFO stalls the ME), and a ctx_swap puts the context to sleep on the
// command's signal; the memory model outside completes them (writes the transfer-in
// registers, raises the signal, frees the FIFO slot).  docs/rtl.md lists what it covers.
//
// Timing is the C++ model's (docs/sim-core.md): one instruction per cycle, a taken branch
// costs BRANCH_PENALTY cycles less its defer slots, a context switch costs nothing (the
// arbiter picks the next Ready context combinationally in the cycle it runs).  So the RTL
// and the model agree cycle by cycle, not only in their final state.
//
// The control store is outside (a RAM macro in hardware; the Verilator wrapper npk_me_sim
// holds it): cs_addr out, cs_data/cs_loaded back in the same cycle.  The decoder
// (npk_isa.svh) is generated from sim/isa.py by sim/rtl/gen_decoder.py.
//
// A word the RTL does not implement raises fault FAULT_NOT_COVERED with the opcode in
// fault_word: never a silent pass.  Faults are sticky and stop the ME.
module npk_me #(
    parameter int LM_WORDS = 640,
    parameter int CS_WORDS = 8192,
    parameter int NN_REGS = 128,
    parameter int BRANCH_PENALTY = 3,
    parameter int LM_ADDR_DELAY = 3,  // BRANCH_PENALTY and LM_ADDR_DELAY: at most 15
    parameter int CMD_FIFO_DEPTH = 8  // commands issued and not completed: at most 255
) (
    input  logic        clk,
    input  logic        rst,
    input  logic [4:0]  me_number,   // ACTIVE_CTX_STS (an input: one build serves every ME)
    input  logic        mode4,       // 4-context mode (CTX_ENABLES bit 31)
    input  logic [63:0] prng_seed,   // PSEUDO_RANDOM_NUMBER state after reset
    // control store
    output logic [12:0] cs_addr,
    input  logic [39:0] cs_data,
    input  logic        cs_loaded,   // cs_data is a word of the image (else: off the end)
    // a signal from outside (memory model, other MEs): pending from the next cycle
    input  logic        sig_valid,
    input  logic [2:0]  sig_ctx,
    input  logic [3:0]  sig_num,
    // unit states for br_inp_state, from the testbench (scratch rings live outside the ME)
    input  logic [15:0] scr_ring_full,
    input  logic [15:0] scr_ring_empty,
    // next neighbour: the previous ME writes our NN registers / pushes onto our NN ring ...
    input  logic        prev_nn_we,
    input  logic        prev_nn_push,
    input  logic [6:0]  prev_nn_idx,
    input  logic [31:0] prev_nn_data,
    // ... and we write the next ME's (n$k, *n$index++), read its registers when merging
    // into them (immed_w0[n$k, ...]) and see whether its ring is full
    output logic        nn_out_we,
    output logic        nn_out_push,
    output logic [6:0]  nn_out_idx,
    output logic [31:0] nn_out_data,
    output logic [6:0]  next_nn_raddr,
    input  logic [31:0] next_nn_rdata,
    input  logic        next_nn_full,
    // what happened this cycle
    output logic        retire,      // an instruction executed
    output logic [2:0]  retire_ctx,
    output logic [12:0] retire_pc,
    output logic        idle,        // no context executing or Ready, no stall
    output logic [63:0] cycle,
    output logic [3:0]  fault,       // sticky; FAULT_NONE while running
    output logic [39:0] fault_word,
    output logic [12:0] fault_pc,
    output logic [2:0]  fault_ctx,
    // the command issued by the retiring instruction (memory/unit commands and the
    // NEXT_NEIGHBOR_SIGNAL write, which also reaches outside the ME)
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
`include "npk_isa.svh"  // generated from sim/isa.py by sim/rtl/gen_decoder.py

  // ---------------------------------------------------------------- constants
  localparam logic [1:0] ST_INACTIVE = 2'd0, ST_READY = 2'd1, ST_EXEC = 2'd2, ST_SLEEP = 2'd3;
  localparam logic [3:0] FAULT_NONE = 4'd0, FAULT_ILLEGAL = 4'd1, FAULT_NOT_COVERED = 4'd2,
                         FAULT_BAD_ADDRESS = 4'd3, FAULT_DEFER = 4'd4, FAULT_CS_OVERFLOW = 4'd5,
                         FAULT_RING_OVERFLOW = 4'd6, FAULT_MUL_SEQUENCE = 4'd7;
  localparam logic [4:0] MUL_IDLE = 5'h1F;

  // ---------------------------------------------------------------- architectural state
  logic [31:0] gpr_a[128] /*verilator public_flat_rw*/;
  logic [31:0] gpr_b[128] /*verilator public_flat_rw*/;
  logic [31:0] xs_in[128] /*verilator public_flat_rw*/;    // $x read side (SRAM-in)
  logic [31:0] xs_out[128] /*verilator public_flat_rw*/;   // $x write side (SRAM-out)
  logic [31:0] xd_in[128] /*verilator public_flat_rw*/;    // $$x read side
  logic [31:0] xd_out[128] /*verilator public_flat_rw*/;
  logic [31:0] lm[LM_WORDS] /*verilator public_flat_rw*/;
  logic [31:0] nn[128] /*verilator public_flat_rw*/;  // this ME's NN registers / NN ring
  // CAM: 16 entries and their use order (cam_lru[0] = least recently used)
  logic [31:0] cam_tag[16] /*verilator public_flat_rw*/;
  logic [3:0]  cam_state[16] /*verilator public_flat_rw*/;
  logic        cam_valid[16] /*verilator public_flat_rw*/;
  logic [3:0]  cam_lru[16] /*verilator public_flat_rw*/;

  // per context
  logic [12:0] pc[8] /*verilator public_flat_rw*/;
  logic [1:0]  state[8] /*verilator public_flat_rw*/;
  logic        enabled[8];
  logic        cc_z[8] /*verilator public_flat_rw*/;
  logic        cc_n[8] /*verilator public_flat_rw*/;
  logic        cc_c[8] /*verilator public_flat_rw*/;
  logic        cc_v[8] /*verilator public_flat_rw*/;
  logic [31:0] last_alu[8];
  logic [15:0] signals[8] /*verilator public_flat_rw*/;
  logic [15:0] wait_mask[8];
  logic        wait_any[8];
  logic [1:0]  defer_left[8];
  logic        deferred_swap[8];  // what the defer slots end in: 0 branch, 1 swap
  logic [12:0] defer_target[8];
  logic [1:0]  swap_mode[8];
  logic [31:0] lm_addr[8][2] /*verilator public_flat_rw*/;
  logic [31:0] lm_pending[8][2];
  logic [3:0]  lm_wait[8][2];     // instructions of the context still using the old LM_ADDR
  logic [1:0]  byte_index[8];
  logic [31:0] crc_remainder[8];
  logic        csr_pending[8];
  logic [31:0] csr_value[8];
  logic [63:0] instructions[8] /*verilator public_flat_rw*/;
  logic [4:0]  mul_next[8];       // the mul_step expected next; MUL_IDLE: none in progress
  logic [63:0] mul_product[8];

  // per ME
  logic        cur_valid;
  logic [2:0]  cur;
  logic [2:0]  last;
  logic [63:0] time_q /*verilator public_flat_rw*/;
  // commands issued and not completed (the completion side, outside, decrements it)
  logic [7:0]  outstanding /*verilator public_flat_rw*/;
  logic [3:0]  stall;
  logic [6:0]  nn_put, nn_get;
  logic [31:0] ctx_arb_cntl;
  logic [31:0] mbox[4];
  logic [63:0] prng;

  assign cycle = time_q;

  // ---------------------------------------------------------------- mutants
  // Deliberately broken instructions for the checker's own test (tests/sim/rtl): a
  // simulation-only register the harness sets, so one Verilator build serves the clean and
  // the broken RTL.  Under SYNTHESIS (yosys) it does not exist and every mutant is off.
  // 0: none; 1: alu XOR computes OR; 2: bge tests N != V; 3: *l$index0++ adds 8
  localparam logic [3:0] MUT_ALU_XOR = 4'd1, MUT_BR_BGE = 4'd2, MUT_LM_INC = 4'd3;
`ifndef SYNTHESIS
  logic [3:0] mutant /*verilator public_flat_rw*/;
  function automatic logic mutant_is(input logic [3:0] m);
    mutant_is = mutant == m;
  endfunction
`else
  function automatic logic mutant_is(input logic [3:0] m);
    mutant_is = m == 4'd0 && m != 4'd0;
  endfunction
`endif

  // ---------------------------------------------------------------- helpers
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [6:0] phys(input logic [2:0] ctx, input logic [7:0] idx);
    phys = mode4 ? {ctx[1:0], idx[4:0]} : {ctx, idx[3:0]};
  endfunction

  function automatic logic [31:0] shifter(input logic [31:0] v, input logic [1:0] kind,
                                          input logic [4:0] n);
    case (kind)
      SHIFT_TYPES_SHL: shifter = v << n;
      SHIFT_TYPES_SHR: shifter = v >> n;
      SHIFT_TYPES_SHL_ROT: shifter = (v << n) | (v >> (6'd32 - {1'b0, n}));
      default: shifter = (v >> n) | (v << (6'd32 - {1'b0, n}));
    endcase
  endfunction

  // LM word index of an LM operand, given the two pointers (byte addresses)
  function automatic logic [32:0] lm_index(input logic [7:0] code, input logic [31:0] p0,
                                           input logic [31:0] p1);
    logic [4:0] k;
    k = opnd_kind(code);
    lm_index = (k == OK_LM1 || k == OK_LM1_INC || k == OK_LM1_DEC) ? {3'b0, p1[31:2]}
                                                                   : {3'b0, p0[31:2]};
    if (k == OK_LM0 || k == OK_LM1) lm_index = lm_index + {25'b0, opnd_index(code)};
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  function automatic logic is_lm(input logic [7:0] code);
    logic [4:0] k;
    k = opnd_kind(code);
    is_lm = k == OK_LM0 || k == OK_LM1 || k == OK_LM0_INC || k == OK_LM0_DEC ||
           k == OK_LM1_INC || k == OK_LM1_DEC;
  endfunction

  // the pointers after an access through code (post-increment / decrement by 4 bytes)
  function automatic logic [63:0] lm_post(input logic [7:0] code, input logic [31:0] p0,
                                          input logic [31:0] p1);
    case (opnd_kind(code))
      OK_LM0_INC: lm_post = {p1, p0 + (mutant_is(MUT_LM_INC) ? 32'd8 : 32'd4)};
      OK_LM0_DEC: lm_post = {p1, p0 - 32'd4};
      OK_LM1_INC: lm_post = {p1 + 32'd4, p0};
      OK_LM1_DEC: lm_post = {p1 - 32'd4, p0};
      default: lm_post = {p1, p0};
    endcase
  endfunction


  // a register index within the context's share of its file
  function automatic logic opnd_in_range(input logic [7:0] code);
    logic [4:0] k;
    k = opnd_kind(code);
    if (k == OK_GPR_A || k == OK_GPR_B || k == OK_XFER_S || k == OK_XFER_D || k == OK_NN)
      opnd_in_range = mode4 ? opnd_index(code) < 8'd32 : opnd_index(code) < 8'd16;
    else opnd_in_range = k != OK_RESERVED;
  endfunction

  // ---------------------------------------------------------------- wake-up and arbiter
  logic [7:0] wake_ok, eff_ready;
  logic [3:0] nctx;
  always_comb begin
    nctx = mode4 ? 4'd4 : 4'd8;
    for (int i = 0; i < 8; i++) begin
      logic [15:0] got;
      got = signals[i] & wait_mask[i];
      wake_ok[i] = state[i] == ST_SLEEP && (wait_any[i] ? got != 16'd0 : got == wait_mask[i]);
      eff_ready[i] = (state[i] == ST_READY || wake_ok[i]) && i < 32'(nctx);
    end
  end

  logic       have_ctx, picked;
  logic [2:0] ex;  // the executing context this cycle
  always_comb begin
    logic found;
    logic [3:0] cand;
    found = 1'b0;
    cand = 4'd0;
    ex = cur;
    picked = 1'b0;
    if (!cur_valid) begin
      for (int k = 0; k < 8; k++) begin
        cand = 4'(last) + 4'd1 + 4'(k);
        if (cand >= nctx) cand = cand - nctx;
        if (cand >= nctx) cand = cand - nctx;
        if (!found && k < 32'(nctx) && eff_ready[cand[2:0]]) begin
          found = 1'b1;
          ex = cand[2:0];
        end
      end
      picked = found;
    end
    have_ctx = cur_valid || found;
  end

  wire running = fault == FAULT_NONE && !rst;
  wire exec = running && stall == 4'd0 && have_ctx;
  assign cs_addr = pc[ex];
  assign idle = running && stall == 4'd0 && !have_ctx;

  function automatic logic is_mul_start(input logic [3:0] st);
    is_mul_start = st == MUL_STEPS_K24X8_START || st == MUL_STEPS_K16X16_START ||
           st == MUL_STEPS_K32X32_START;
  endfunction
  function automatic logic is_mul_last(input logic [3:0] st);
    is_mul_last = st == MUL_STEPS_K24X8_LAST || st == MUL_STEPS_K16X16_LAST ||
           st == MUL_STEPS_K32X32_LAST;
  endfunction

  // ---------------------------------------------------------------- decode
  // every format's view of the word; each instruction uses some fields of one of them
  /* verilator lint_off UNUSEDSIGNAL */
  wire [39:0] w = cs_data;
  wire [4:0] opcode = w[39:35];
  wire [34:0] payload = w[34:0];
  fmt_alu_t f_alu;
  fmt_dbl_shf_t f_dbl;
  fmt_immed_t f_imm;
  fmt_ld_field_t f_ldf;
  fmt_byte_align_t f_ba;
  fmt_bitop_t f_bit;
  fmt_br_t f_br;
  fmt_br_ctx_t f_brc;
  fmt_br_bit_t f_brb;
  fmt_br_byte_t f_bry;
  fmt_br_signal_t f_brs;
  fmt_jump_t f_jmp;
  fmt_ctx_arb_t f_arb;
  fmt_local_csr_t f_csr;
  fmt_mul_step_t f_mul;
  fmt_crc_t f_crc;
  fmt_cam_t f_cam;
  fmt_br_inp_state_t f_inp;
  fmt_mem_t f_mem;
  fmt_hash_t f_hash;
  assign f_mem = payload;
  assign f_hash = payload;
  assign f_alu = payload;
  assign f_dbl = payload;
  assign f_imm = payload;
  assign f_ldf = payload;
  assign f_ba = payload;
  assign f_bit = payload;
  assign f_br = payload;
  assign f_brc = payload;
  assign f_brb = payload;
  assign f_bry = payload;
  assign f_brs = payload;
  assign f_jmp = payload;
  assign f_arb = payload;
  assign f_csr = payload;
  assign f_mul = payload;
  assign f_crc = payload;
  assign f_cam = payload;
  assign f_inp = payload;
  /* verilator lint_on UNUSEDSIGNAL */

  // operand slots: A (first source), B (second source), D (destination)
  logic       use_a, use_b, use_d, merge_d;
  logic [7:0] code_a, code_b, code_d;
  logic       covered, legal;
  always_comb begin
    use_a = 1'b0; use_b = 1'b0; use_d = 1'b0; merge_d = 1'b0;
    code_a = OPERAND_NONE; code_b = OPERAND_NONE; code_d = OPERAND_NONE;
    covered = 1'b1;
    legal = word_legal(w);
    case (opcode)
      OP_ALU: begin
        use_a = 1; use_b = 1; use_d = 1;
        code_a = f_alu.a_f; code_b = f_alu.b_f; code_d = f_alu.dest_f;
      end
      OP_DBL_SHF: begin
        use_a = 1; use_b = 1; use_d = 1;
        code_a = f_dbl.a_f; code_b = f_dbl.b_f; code_d = f_dbl.dest_f;
      end
      OP_IMMED: begin
        use_d = 1; code_d = f_imm.dest_f;
        merge_d = f_imm.variant_f != IMMED_VARIANTS_IMMED &&
                  f_imm.variant_f != IMMED_VARIANTS_LOAD_ADDR;
      end
      OP_LD_FIELD: begin
        use_b = 1; use_d = 1; code_b = f_ldf.src_f; code_d = f_ldf.dest_f;
        merge_d = !f_ldf.clr_f[0];
      end
      OP_BYTE_ALIGN: begin
        use_a = 1; use_b = 1; use_d = 1;
        code_a = f_ba.a_f; code_b = f_ba.b_f; code_d = f_ba.dest_f;
      end
      OP_BITOP: begin
        use_b = 1; use_d = 1; code_b = f_bit.src_f; code_d = f_bit.dest_f;
      end
      OP_BR, OP_BR_CTX, OP_BR_INP_STATE, OP_NOP: ;
      OP_MUL_STEP: begin
        if (is_mul_start(f_mul.step_f)) begin
          use_a = 1; use_b = 1; code_a = f_mul.a_f; code_b = f_mul.b_f;
        end else if (is_mul_last(f_mul.step_f) || f_mul.step_f == MUL_STEPS_K32X32_LAST2) begin
          use_d = 1; code_d = f_mul.dest_f;
        end
      end
      OP_CRC: begin
        use_b = 1; use_d = 1; code_b = f_crc.src_f; code_d = f_crc.dest_f;
      end
      OP_CAM:
        case (f_cam.op_f)
          // the entry of cam_write / cam_write_state is read from the dest field, first
          CAM_OPS_CAM_WRITE: begin
            use_a = 1; use_b = 1; code_a = f_cam.dest_f; code_b = f_cam.src_f;
          end
          CAM_OPS_CAM_WRITE_STATE: begin use_a = 1; code_a = f_cam.dest_f; end
          CAM_OPS_CAM_CLEAR: ;
          default: begin use_b = 1; use_d = 1; code_b = f_cam.src_f; code_d = f_cam.dest_f; end
        endcase
      OP_BR_SIGNAL: legal = legal && f_brs.sig_f != 4'd0;
      OP_BR_BIT: begin use_b = 1; code_b = f_brb.reg_f; end
      OP_BR_BYTE: begin use_b = 1; code_b = f_bry.reg_f; end
      OP_JUMP: begin use_b = 1; code_b = f_jmp.reg_f; end
      OP_CTX_ARB: legal = legal && !f_arb.sigs_f[0];
      OP_LOCAL_CSR: begin
        use_b = f_csr.write_f[0]; code_b = f_csr.src_f;
        // NEXT_NEIGHBOR_SIGNAL reaches another ME: issued as a command (cmd_*)
      end
      OP_SRAM, OP_SCRATCH, OP_DRAM, OP_MSF: begin
        use_a = 1; use_b = 1; code_a = f_mem.a_f; code_b = f_mem.b_f;
      end
      OP_HASH: ;
      default: covered = 1'b0;
    endcase
    // the decoder's static checks (the model makes them at load)
    if (use_a && !opnd_in_range(code_a)) legal = 1'b0;
    if (use_b && !opnd_in_range(code_b)) legal = 1'b0;
    if (opcode == OP_LOCAL_CSR && !opnd_in_range(f_csr.src_f)) legal = 1'b0;
    if (use_d && (!opnd_in_range(code_d) || !opnd_writable(code_d))) legal = 1'b0;
  end

  // ---------------------------------------------------------------- operands
  // The LM pointers in effect at the start of the instruction, then after A, after B.
  logic [31:0] p0_s, p1_s, p0_a, p1_a, p0_b, p1_b, p0_d, p1_d;
  logic [32:0] lm_i_a, lm_i_b, lm_i_d;
  logic        lm_bad;
  logic [31:0] val_a, val_b, old_d;
  logic [6:0]  ph_a, ph_b, ph_d;
  assign ph_a = phys(ex, opnd_index(code_a));
  assign ph_b = phys(ex, opnd_index(code_b));
  assign ph_d = phys(ex, opnd_index(code_d));
  logic [6:0]  get_a, get_b;  // NN_GET after the A and B reads (*n$index++ pops the ring)

  function automatic logic [31:0] read_file(input logic [7:0] code, input logic [6:0] ph,
                                            input logic [32:0] li);
    case (opnd_kind(code))
      OK_GPR_A: read_file = gpr_a[ph];
      OK_GPR_B: read_file = gpr_b[ph];
      OK_XFER_S: read_file = xs_in[ph];
      OK_XFER_D: read_file = xd_in[ph];
      OK_NN: read_file = nn[ph];
      OK_IMM: read_file = {24'b0, opnd_index(code)};
      OK_LM0, OK_LM1, OK_LM0_INC, OK_LM0_DEC, OK_LM1_INC, OK_LM1_DEC:
        read_file = li < 33'(LM_WORDS) ? lm[li[$clog2(LM_WORDS)-1:0]] : 32'd0;
      default: read_file = 32'd0;
    endcase
  endfunction

  // the current value of a destination (merging instructions): $x reads its *out* register
  function automatic logic [31:0] read_dest(input logic [7:0] code, input logic [6:0] ph,
                                            input logic [32:0] li);
    case (opnd_kind(code))
      OK_XFER_S: read_dest = xs_out[ph];
      OK_XFER_D: read_dest = xd_out[ph];
      OK_NN: read_dest = next_nn_rdata;  // the next ME's register, where the write goes
      OK_NN_RING: read_dest = 32'd0;
      default: read_dest = read_file(code, ph, li);
    endcase
  endfunction

  always_comb begin
    // a pending LM_ADDR write has already landed in lm_addr when its delay is over
    p0_s = lm_addr[ex][0];
    p1_s = lm_addr[ex][1];
    lm_i_a = lm_index(code_a, p0_s, p1_s);
    val_a = use_a ? read_file(code_a, ph_a, lm_i_a) : 32'd0;
    {p1_a, p0_a} = use_a ? lm_post(code_a, p0_s, p1_s) : {p1_s, p0_s};
    get_a = nn_get;
    if (use_a && opnd_kind(code_a) == OK_NN_RING && nn_get != nn_put) begin
      val_a = nn[nn_get];  // an empty ring reads 0 and moves nothing
      get_a = 7'((32'(nn_get) + 1) % NN_REGS);
    end
    lm_i_b = lm_index(code_b, p0_a, p1_a);
    val_b = use_b ? read_file(code_b, ph_b, lm_i_b) : 32'd0;
    {p1_b, p0_b} = use_b ? lm_post(code_b, p0_a, p1_a) : {p1_a, p0_a};
    get_b = get_a;
    if (use_b && opnd_kind(code_b) == OK_NN_RING && get_a != nn_put) begin
      val_b = nn[get_a];
      get_b = 7'((32'(get_a) + 1) % NN_REGS);
    end
    lm_i_d = lm_index(code_d, p0_b, p1_b);
    old_d = merge_d ? read_dest(code_d, ph_d, lm_i_d) : 32'd0;
    {p1_d, p0_d} = use_d ? lm_post(code_d, p0_b, p1_b) : {p1_b, p0_b};
    lm_bad = (use_a && is_lm(code_a) && lm_i_a >= 33'(LM_WORDS)) ||
             (use_b && is_lm(code_b) && lm_i_b >= 33'(LM_WORDS)) ||
             (use_d && is_lm(code_d) && lm_i_d >= 33'(LM_WORDS));
  end

  // ---------------------------------------------------------------- execute
  logic        d_we;
  logic [31:0] d_val;
  logic        cc_we, z_n, n_n, c_n, v_n, z_only;
  logic        alu_we;
  logic        taken, swap;
  logic [15:0] swap_mask;  // the signals a swap waits for, and its mode
  logic [1:0]  swap_md;
  logic [12:0] target;
  logic [1:0]  defer;
  logic        sig_clear;
  logic [3:0]  sig_clear_num;
  logic        csr_rd, csr_wr, csr_consumed;
  logic [31:0] csr_rd_val;
  logic        bad_jump;
  logic [63:0] prng_next;
  logic        crc_we;
  logic [31:0] crc_next;
  logic        mul_we, mul_bad;
  logic [4:0]  mul_next_n;
  logic [63:0] mul_product_n;
  logic        cam_hit;
  logic [3:0]  cam_hit_e, cam_e;
  logic        cam_touch, cam_write, cam_write_state, cam_clear;

  // one byte into a CRC remainder (sim/core/units.cpp, crc_update)
  function automatic logic [31:0] crc_byte(input logic [2:0] kind, input logic [31:0] rem_in,
                                           input logic [7:0] byte_in);
    logic [31:0] rem;
    logic fb;
    rem = rem_in;
    case (kind)
      CRC_KINDS_CRC_32, CRC_KINDS_CRC_ISCSI: begin
        rem = rem ^ {24'b0, byte_in};
        for (int i = 0; i < 8; i++)
          rem = (rem >> 1) ^ (rem[0] ? (kind == CRC_KINDS_CRC_32 ? 32'hEDB88320 : 32'h82F63B78)
                                     : 32'd0);
      end
      CRC_KINDS_CRC_CCITT: begin
        rem = (rem & 32'hFFFF) ^ ({24'b0, byte_in} << 8);
        for (int i = 0; i < 8; i++) rem = ((rem << 1) ^ (rem[15] ? 32'h1021 : 32'd0)) & 32'hFFFF;
      end
      CRC_KINDS_CRC_10: begin
        rem = (rem & 32'h3FF) ^ ({24'b0, byte_in} << 2);
        for (int i = 0; i < 8; i++) rem = ((rem << 1) ^ (rem[9] ? 32'h233 : 32'd0)) & 32'h3FF;
      end
      default: begin  // crc_5
        rem = rem & 32'h1F;
        for (int i = 7; i >= 0; i--) begin
          fb = rem[4] ^ byte_in[i];
          rem = (rem << 1) & 32'h1F;
          if (fb) rem = rem ^ 32'h05;
        end
      end
    endcase
    crc_byte = rem;
  endfunction

  function automatic logic cond_true(input logic [3:0] c, input logic z, input logic n,
                                     input logic cy, input logic v);
    case (c)
      CONDITIONS_BR: cond_true = 1'b1;
      CONDITIONS_BEQ: cond_true = z;
      CONDITIONS_BNE: cond_true = !z;
      CONDITIONS_BLT: cond_true = n != v;
      CONDITIONS_BGE: cond_true = mutant_is(MUT_BR_BGE) ? n != v : n == v;
      CONDITIONS_BMI: cond_true = n;
      CONDITIONS_BPL: cond_true = !n;
      CONDITIONS_BCS: cond_true = cy;
      CONDITIONS_BCC: cond_true = !cy;
      CONDITIONS_BVS: cond_true = v;
      CONDITIONS_BVC: cond_true = !v;
      CONDITIONS_BGT: cond_true = !z && n == v;
      CONDITIONS_BLE: cond_true = z || n != v;
      CONDITIONS_BHI: cond_true = cy && !z;
      default: cond_true = !cy || z;  // BLS
    endcase
  endfunction

  // xorshift64* (the model's PSEUDO_RANDOM_NUMBER): the next state
  function automatic logic [63:0] xorshift(input logic [63:0] s);
    logic [63:0] x;
    x = s != 64'd0 ? s : 64'h2545F4914F6CDD1D;
    x = x ^ (x >> 12);
    x = x ^ (x << 25);
    x = x ^ (x >> 27);
    xorshift = x;
  endfunction

  /* verilator lint_off UNUSEDSIGNAL */
  always_comb begin
    logic [31:0] a, b, r;
    logic [32:0] wide;
    logic        cin;
    logic [63:0] ab;
    logic [31:0] bytes;
    logic [31:0] v16;
    logic        set;
    logic [63:0] prod;
    d_we = 1'b0; d_val = 32'd0;
    cc_we = 1'b0; z_n = cc_z[ex]; n_n = cc_n[ex]; c_n = cc_c[ex]; v_n = cc_v[ex];
    z_only = 1'b0; alu_we = 1'b0;
    taken = 1'b0; swap = 1'b0; target = 13'd0; defer = 2'd0;
    swap_mask = 16'd0; swap_md = CTX_ARB_MODES_ALL;
    sig_clear = 1'b0; sig_clear_num = 4'd0;
    csr_rd = 1'b0; csr_wr = 1'b0; csr_consumed = 1'b0; csr_rd_val = 32'd0;
    bad_jump = 1'b0;
    prng_next = xorshift(prng);
    crc_we = 1'b0; crc_next = crc_remainder[ex];
    mul_we = 1'b0; mul_bad = 1'b0; mul_next_n = mul_next[ex]; mul_product_n = mul_product[ex];
    cam_hit = 1'b0; cam_hit_e = 4'd0; cam_e = 4'd0;
    cam_touch = 1'b0; cam_write = 1'b0; cam_write_state = 1'b0; cam_clear = 1'b0;
    a = val_a; b = val_b; r = 32'd0; wide = 33'd0; cin = 1'b0; ab = 64'd0; bytes = 32'd0;
    v16 = 32'd0; set = 1'b0; prod = 64'd0;
    case (opcode)
      OP_ALU: begin
        b = shifter(val_b, f_alu.shift_f, f_alu.shamt_f);
        c_n = 1'b0; v_n = 1'b0;
        case (f_alu.op_f)
          ALU_OPS_B: r = b;
          ALU_OPS_NOT_B: r = ~b;
          ALU_OPS_AND: r = a & b;
          ALU_OPS_NOT_AND: r = ~a & b;
          ALU_OPS_AND_NOT: r = a & ~b;
          ALU_OPS_OR: r = a | b;
          ALU_OPS_XOR: r = mutant_is(MUT_ALU_XOR) ? a | b : a ^ b;
          ALU_OPS_MINUS, ALU_OPS_B_MINUS_A, ALU_OPS_MINUS_CARRY: begin
            logic [31:0] x, y;
            logic borrow;
            x = f_alu.op_f == ALU_OPS_B_MINUS_A ? b : a;
            y = f_alu.op_f == ALU_OPS_B_MINUS_A ? a : b;
            borrow = f_alu.op_f == ALU_OPS_MINUS_CARRY ? !cc_c[ex] : 1'b0;
            r = x - y - {31'b0, borrow};
            c_n = {1'b0, x} >= {1'b0, y} + {32'b0, borrow};
            v_n = ((x ^ y) & (x ^ r)) >> 31 != 32'd0;
          end
          default: begin  // the additions
            logic [31:0] y;
            case (f_alu.op_f)
              ALU_OPS_PLUS_8: y = b & 32'hFF;
              ALU_OPS_PLUS_16: y = b & 32'hFFFF;
              ALU_OPS_PLUS_4: y = b & 32'hF;
              default: y = b;
            endcase
            cin = f_alu.op_f == ALU_OPS_PLUS_CARRY ? cc_c[ex] : 1'b0;
            wide = {1'b0, a} + {1'b0, y} + {32'b0, cin};
            r = wide[31:0];
            c_n = wide[32];
            v_n = (~(a ^ y) & (a ^ r)) >> 31 != 32'd0;
          end
        endcase
        z_n = r == 32'd0; n_n = r[31];
        cc_we = 1'b1; alu_we = 1'b1;
        d_we = 1'b1; d_val = r;
      end
      OP_DBL_SHF: begin
        ab = {val_a, val_b} >> (f_dbl.indirect_f[0] ? last_alu[ex][4:0] : f_dbl.shamt_f);
        d_we = 1'b1; d_val = ab[31:0];
      end
      OP_IMMED: begin
        v16 = {16'b0, f_imm.value_f};
        if (f_imm.invert_f[0]) v16 = ~v16;
        case (f_imm.variant_f)
          IMMED_VARIANTS_IMMED: begin
            r = {16'b0, f_imm.value_f} << {f_imm.shift_f, 3'b000};
            if (f_imm.invert_f[0]) r = ~r;
          end
          IMMED_VARIANTS_IMMED_W0: r = {old_d[31:16], v16[15:0]};
          IMMED_VARIANTS_IMMED_W1: r = {v16[15:0], old_d[15:0]};
          IMMED_VARIANTS_IMMED_B0: r = {old_d[31:8], v16[7:0]};
          IMMED_VARIANTS_IMMED_B1: r = {old_d[31:16], v16[7:0], old_d[7:0]};
          IMMED_VARIANTS_IMMED_B2: r = {old_d[31:24], v16[7:0], old_d[15:0]};
          IMMED_VARIANTS_IMMED_B3: r = {v16[7:0], old_d[23:0]};
          default: r = {16'b0, f_imm.value_f};  // load_addr
        endcase
        if (csr_pending[ex]) begin
          r = r | csr_value[ex];
          csr_consumed = 1'b1;
        end
        d_we = 1'b1; d_val = r;
      end
      OP_LD_FIELD: begin
        b = shifter(val_b, f_ldf.shift_f, f_ldf.shamt_f);
        bytes = {{8{f_ldf.mask_f[3]}}, {8{f_ldf.mask_f[2]}}, {8{f_ldf.mask_f[1]}},
                 {8{f_ldf.mask_f[0]}}};
        r = (old_d & ~bytes) | (b & bytes);  // old_d is 0 for ld_field_w_clr
        if (f_ldf.load_cc_f[0]) begin
          cc_we = 1'b1; z_n = r == 32'd0; n_n = r[31]; c_n = 1'b0; v_n = 1'b0;
        end
        d_we = 1'b1; d_val = r;
      end
      OP_BYTE_ALIGN: begin
        if (f_ba.le_f[0]) ab = {val_b, val_a} >> {byte_index[ex], 3'b000};
        else ab = ({val_a, val_b} << {byte_index[ex], 3'b000}) >> 32;
        d_we = 1'b1; d_val = ab[31:0];
      end
      OP_BITOP: begin
        if (f_bit.op_f == BITOPS_FFS) begin
          r = 32'd0;
          for (int i = 31; i >= 0; i--) if (val_b[i]) r = 32'(i);
          cc_we = 1'b1; z_only = 1'b1; z_n = val_b == 32'd0;
        end else begin
          r = 32'd0;
          for (int i = 0; i < 32; i++) r = r + {31'b0, val_b[i]};
        end
        d_we = 1'b1; d_val = r;
      end
      OP_BR: begin
        taken = cond_true(f_br.cond_f, cc_z[ex], cc_n[ex], cc_c[ex], cc_v[ex]);
        target = f_br.target_f; defer = f_br.defer_f;
      end
      OP_BR_CTX: begin
        taken = (ex == f_brc.ctx_f) != f_brc.ne_f[0];
        target = f_brc.target_f; defer = f_brc.defer_f;
      end
      OP_BR_BIT: begin
        set = val_b[f_brb.bit_f];
        taken = f_brb.clr_f[0] ? !set : set;
        target = f_brb.target_f; defer = f_brb.defer_f;
      end
      OP_BR_BYTE: begin
        r = val_b >> {f_bry.byte_f, 3'b000};
        taken = (r[7:0] == f_bry.value_f) != f_bry.ne_f[0];
        target = f_bry.target_f; defer = f_bry.defer_f;
      end
      OP_BR_SIGNAL: begin
        set = signals[ex][f_brs.sig_f];
        sig_clear = 1'b1; sig_clear_num = f_brs.sig_f;
        taken = set != f_brs.not_f[0];
        target = f_brs.target_f; defer = f_brs.defer_f;
      end
      OP_JUMP: begin
        taken = 1'b1; target = val_b[12:0]; defer = f_jmp.defer_f;
        bad_jump = val_b >= 32'(CS_WORDS);
      end
      OP_CTX_ARB: begin
        swap = 1'b1; defer = f_arb.defer_f;
        swap_mask = f_arb.sigs_f; swap_md = f_arb.mode_f;
      end
      OP_SRAM, OP_SCRATCH, OP_DRAM, OP_MSF: begin  // ctx_swap: sleep until its signal
        swap = f_mem.swap_f[0];
        swap_mask = 16'd1 << f_mem.sig_f; swap_md = CTX_ARB_MODES_ALL;
      end
      OP_HASH: begin
        swap = f_hash.swap_f[0];
        swap_mask = 16'd1 << f_hash.sig_f; swap_md = CTX_ARB_MODES_ALL;
      end
      OP_BR_INP_STATE: begin
        if (f_inp.state_f == INP_STATES_NN_EMPTY) set = nn_put == nn_get;
        else if (f_inp.state_f == INP_STATES_NN_FULL) set = next_nn_full;
        else if (f_inp.state_f >= INP_STATES_SCR_RING0_EMPTY)
          set = scr_ring_empty[f_inp.state_f[3:0]];
        else set = scr_ring_full[f_inp.state_f[3:0]];
        taken = set != f_inp.not_f[0];
        target = f_inp.target_f; defer = f_inp.defer_f;
      end
      OP_CRC: begin
        for (int i = 0; i < 4; i++)
          crc_next = crc_byte(f_crc.kind_f, crc_next,
                              f_crc.le_f[0] ? val_b[8 * i +: 8] : val_b[24 - 8 * i +: 8]);
        crc_we = 1'b1;
        d_we = 1'b1; d_val = val_b;
      end
      OP_MUL_STEP: begin
        if (is_mul_start(f_mul.step_f)) begin
          if (f_mul.step_f == MUL_STEPS_K24X8_START)
            mul_product_n = {32'b0, val_a & 32'hFFFFFF} * {32'b0, val_b & 32'hFF};
          else if (f_mul.step_f == MUL_STEPS_K16X16_START)
            mul_product_n = {32'b0, val_a & 32'hFFFF} * {32'b0, val_b & 32'hFFFF};
          else mul_product_n = {32'b0, val_a} * {32'b0, val_b};
          mul_next_n = {1'b0, f_mul.step_f} + 5'd1;
        end else if (mul_next[ex] != {1'b0, f_mul.step_f}) begin
          mul_bad = 1'b1;
        end else if (is_mul_last(f_mul.step_f)) begin
          d_we = 1'b1; d_val = mul_product[ex][31:0];
          mul_next_n = f_mul.step_f == MUL_STEPS_K32X32_LAST ? {1'b0, MUL_STEPS_K32X32_LAST2}
                                                              : MUL_IDLE;
        end else if (f_mul.step_f == MUL_STEPS_K32X32_LAST2) begin
          d_we = 1'b1; d_val = mul_product[ex][63:32];
          mul_next_n = MUL_IDLE;
        end else begin
          mul_next_n = {1'b0, f_mul.step_f} + 5'd1;
        end
        mul_we = 1'b1;
      end
      OP_CAM: begin
        for (int e = 0; e < 16; e++)
          if (!cam_hit && cam_valid[e] && cam_tag[e] == val_b) begin
            cam_hit = 1'b1;
            cam_hit_e = 4'(e);
          end
        case (f_cam.op_f)
          CAM_OPS_CAM_LOOKUP: begin
            d_we = 1'b1;
            d_val = cam_hit ? {20'b0, cam_state[cam_hit_e], 1'b1, cam_hit_e, 3'b000}
                            : {25'b0, cam_lru[0], 3'b000};
            cam_touch = cam_hit; cam_e = cam_hit_e;
          end
          CAM_OPS_CAM_WRITE: begin
            cam_e = val_a[3:0]; cam_write = 1'b1; cam_touch = 1'b1;
          end
          CAM_OPS_CAM_CLEAR: cam_clear = 1'b1;
          CAM_OPS_CAM_READ_TAG: begin d_we = 1'b1; d_val = cam_tag[val_b[3:0]]; end
          CAM_OPS_CAM_READ_STATE: begin
            d_we = 1'b1; d_val = {20'b0, cam_state[val_b[3:0]], 8'b0};
          end
          default: begin cam_e = val_a[3:0]; cam_write_state = 1'b1; end  // cam_write_state
        endcase
      end
      OP_LOCAL_CSR: begin
        if (f_csr.write_f[0]) csr_wr = 1'b1;
        else begin
          csr_rd = 1'b1;
          case (f_csr.csr_f)
            LOCAL_CSRS_CTX_ENABLES: begin
              csr_rd_val = {mode4, 31'b0};
              for (int i = 0; i < 8; i++) csr_rd_val[8 + i] = enabled[i];
            end
            LOCAL_CSRS_ACTIVE_CTX_STS: csr_rd_val = {24'b0, me_number, ex};
            LOCAL_CSRS_BYTE_INDEX: csr_rd_val = {30'b0, byte_index[ex]};
            LOCAL_CSRS_ACTIVE_LM_ADDR_0: csr_rd_val = p0_s;
            LOCAL_CSRS_ACTIVE_LM_ADDR_1: csr_rd_val = p1_s;
            LOCAL_CSRS_TIMESTAMP_LOW: csr_rd_val = time_q[35:4];
            LOCAL_CSRS_TIMESTAMP_HIGH: csr_rd_val = {4'b0, time_q[63:36]};
            LOCAL_CSRS_PSEUDO_RANDOM_NUMBER: begin
              prod = prng_next * 64'h2545F4914F6CDD1D;
              csr_rd_val = prod[63:32];
            end
            LOCAL_CSRS_CRC_REMAINDER: csr_rd_val = crc_remainder[ex];
            LOCAL_CSRS_NN_PUT: csr_rd_val = {25'b0, nn_put};
            LOCAL_CSRS_NN_GET: csr_rd_val = {25'b0, nn_get};
            LOCAL_CSRS_CTX_ARB_CNTL: csr_rd_val = ctx_arb_cntl;
            LOCAL_CSRS_MAILBOX0, LOCAL_CSRS_MAILBOX1, LOCAL_CSRS_MAILBOX2, LOCAL_CSRS_MAILBOX3:
              csr_rd_val = mbox[f_csr.csr_f[1:0]];
            default: csr_rd_val = 32'd0;
          endcase
        end
      end
      default: ;
    endcase
  end
  /* verilator lint_on UNUSEDSIGNAL */

  // what this instruction does to the flow: taken branch / swap inside defer slots is a fault
  wire in_defer = defer_left[ex] != 2'd0;
  logic [3:0] fault_now;
  always_comb begin
    fault_now = FAULT_NONE;
    if (!cs_loaded) fault_now = FAULT_CS_OVERFLOW;
    else if (!legal) fault_now = FAULT_ILLEGAL;
    else if (!covered) fault_now = FAULT_NOT_COVERED;
    else if (lm_bad) fault_now = FAULT_BAD_ADDRESS;
    else if (bad_jump) fault_now = FAULT_CS_OVERFLOW;
    else if (in_defer && (taken || swap)) fault_now = FAULT_DEFER;
    else if (mul_bad) fault_now = FAULT_MUL_SEQUENCE;
    else if (d_we && opnd_kind(code_d) == OK_NN_RING && next_nn_full)
      fault_now = FAULT_RING_OVERFLOW;
  end

  // a command with the FIFO full waits (the model retries it when a command completes)
  wire is_cmd = opcode == OP_SRAM || opcode == OP_SCRATCH || opcode == OP_DRAM ||
                opcode == OP_MSF || opcode == OP_HASH;
  wire cmd_full = is_cmd && cs_loaded && 32'(outstanding) >= CMD_FIFO_DEPTH;
  assign retire = exec && !cmd_full && fault_now == FAULT_NONE;
  assign cmd_valid = retire && (is_cmd || (opcode == OP_LOCAL_CSR && f_csr.write_f[0] &&
                                           f_csr.csr_f == LOCAL_CSRS_NEXT_NEIGHBOR_SIGNAL));
  assign cmd_op = opcode;
  assign cmd_sub = opcode == OP_HASH ? {2'b0, f_hash.size_f} :
                   opcode == OP_LOCAL_CSR ? 4'd0 : f_mem.cmd_f;
  assign cmd_xfer = opcode == OP_HASH ? f_hash.xfer_f : opcode == OP_LOCAL_CSR ? 6'd0 : f_mem.xfer_f;
  assign cmd_count = opcode == OP_HASH ? {2'b0, f_hash.count_f} :
                     opcode == OP_LOCAL_CSR ? 4'd0 : f_mem.count_f;
  assign cmd_sig = opcode == OP_HASH ? f_hash.sig_f : opcode == OP_LOCAL_CSR ? 4'd0 : f_mem.sig_f;
  assign cmd_swap = swap && opcode != OP_LOCAL_CSR;
  assign cmd_a = val_a;
  assign cmd_b = val_b;
  assign next_nn_raddr = ph_d;
  // the next ME's NN register or ring: the write of this instruction, if it goes there
  assign nn_out_we = retire && d_we && opnd_kind(code_d) == OK_NN;
  assign nn_out_push = retire && d_we && opnd_kind(code_d) == OK_NN_RING;
  assign nn_out_idx = ph_d;
  assign nn_out_data = d_val;
  assign retire_ctx = ex;
  assign retire_pc = pc[ex];

  // ---------------------------------------------------------------- state update
  function automatic logic [3:0] penalty(input logic [1:0] d);
    penalty = BRANCH_PENALTY > 32'(d) ? 4'(BRANCH_PENALTY - 32'(d)) : 4'd0;
  endfunction

  always_ff @(posedge clk) begin
    if (rst) begin
      for (int i = 0; i < 8; i++) begin
        pc[i] <= 13'd0;
        state[i] <= i < 32'(nctx) ? ST_READY : ST_INACTIVE;
        enabled[i] <= i < 32'(nctx);
        cc_z[i] <= 0; cc_n[i] <= 0; cc_c[i] <= 0; cc_v[i] <= 0;
        last_alu[i] <= 0; signals[i] <= 0; wait_mask[i] <= 0; wait_any[i] <= 0;
        defer_left[i] <= 0; deferred_swap[i] <= 0; defer_target[i] <= 0; swap_mode[i] <= 0;
        for (int k = 0; k < 2; k++) begin
          lm_addr[i][k] <= 0; lm_pending[i][k] <= 0; lm_wait[i][k] <= 0;
        end
        byte_index[i] <= 0; crc_remainder[i] <= 0; csr_pending[i] <= 0; csr_value[i] <= 0;
        instructions[i] <= 0;
        mul_next[i] <= MUL_IDLE; mul_product[i] <= 0;
      end
      for (int e = 0; e < 16; e++) begin
        cam_valid[e] <= 1'b0; cam_tag[e] <= 0; cam_state[e] <= 0; cam_lru[e] <= 4'(e);
      end
      cur_valid <= 1'b0;
      cur <= 3'd0;
      last <= mode4 ? 3'd3 : 3'd7;
      time_q <= 64'd0;
      stall <= 4'd0;
      outstanding <= 8'd0;
      nn_put <= 0; nn_get <= 0; ctx_arb_cntl <= 0;
      for (int i = 0; i < 4; i++) mbox[i] <= 0;
      prng <= prng_seed;
      fault <= FAULT_NONE; fault_word <= 0; fault_pc <= 0; fault_ctx <= 0;
    end else if (fault == FAULT_NONE) begin
      time_q <= time_q + 64'd1;
      // wake-ups: a sleeping context whose signals arrived becomes Ready ('all' consumes them)
      for (int i = 0; i < 8; i++)
        if (wake_ok[i]) begin
          state[i] <= ST_READY;
          if (!wait_any[i]) signals[i] <= signals[i] & ~wait_mask[i];
        end
      if (sig_valid && sig_num != 4'd0) signals[sig_ctx][sig_num] <= 1'b1;
      // the previous ME's writes into our NN registers and ring
      if (prev_nn_we) nn[prev_nn_idx] <= prev_nn_data;
      if (prev_nn_push) begin
        nn[nn_put] <= prev_nn_data;
        nn_put <= 7'((32'(nn_put) + 1) % NN_REGS);
      end
      if (stall != 4'd0) begin
        stall <= stall - 4'd1;
      end else if (exec && cmd_full) begin  // the context is picked, the command waits
        if (picked) begin
          state[ex] <= ST_EXEC;
          cur <= ex;
          cur_valid <= 1'b1;
          last <= ex;
          if (wake_ok[ex] && !wait_any[ex]) signals[ex] <= signals[ex] & ~wait_mask[ex];
        end
      end else if (exec && fault_now != FAULT_NONE) begin
        fault <= fault_now; fault_word <= w; fault_pc <= pc[ex]; fault_ctx <= ex;
      end else if (exec) begin
        if (picked) begin
          state[ex] <= ST_EXEC;
          cur <= ex;
          cur_valid <= 1'b1;
          last <= ex;
          if (wake_ok[ex] && !wait_any[ex]) signals[ex] <= signals[ex] & ~wait_mask[ex];
        end
        instructions[ex] <= instructions[ex] + 64'd1;
        if (is_cmd) outstanding <= outstanding + 8'd1;
        // registers
        if (d_we)
          case (opnd_kind(code_d))
            OK_GPR_A: gpr_a[ph_d] <= d_val;
            OK_GPR_B: gpr_b[ph_d] <= d_val;
            OK_XFER_S: xs_out[ph_d] <= d_val;
            OK_XFER_D: xd_out[ph_d] <= d_val;
            OK_LM0, OK_LM1, OK_LM0_INC, OK_LM0_DEC, OK_LM1_INC, OK_LM1_DEC:
              lm[lm_i_d[$clog2(LM_WORDS)-1:0]] <= d_val;
            default: ;
          endcase
        if (cc_we) begin
          cc_z[ex] <= z_n;
          if (!z_only) begin cc_n[ex] <= n_n; cc_c[ex] <= c_n; cc_v[ex] <= v_n; end
        end
        if (alu_we) last_alu[ex] <= d_val;
        if (crc_we) crc_remainder[ex] <= crc_next;
        if (mul_we) begin mul_next[ex] <= mul_next_n; mul_product[ex] <= mul_product_n; end
        nn_get <= get_b;
        if (cam_clear)
          for (int e = 0; e < 16; e++) begin
            cam_valid[e] <= 1'b0; cam_tag[e] <= 0; cam_state[e] <= 0; cam_lru[e] <= 4'(e);
          end
        if (cam_write) begin
          cam_valid[cam_e] <= 1'b1; cam_tag[cam_e] <= val_b; cam_state[cam_e] <= f_cam.state_f;
        end
        if (cam_write_state) cam_state[cam_e] <= f_cam.state_f;
        if (cam_touch) begin  // entry cam_e becomes the most recently used
          logic seen;
          seen = 1'b0;
          for (int q = 0; q < 15; q++) begin
            if (cam_lru[q] == cam_e) seen = 1'b1;
            if (seen) cam_lru[q] <= cam_lru[q + 1];
          end
          cam_lru[15] <= cam_e;
        end
        if (csr_consumed) csr_pending[ex] <= 1'b0;
        if (csr_rd) begin csr_pending[ex] <= 1'b1; csr_value[ex] <= csr_rd_val; end
        if (sig_clear) signals[ex][sig_clear_num] <= 1'b0;
        if (csr_rd && f_csr.csr_f == LOCAL_CSRS_PSEUDO_RANDOM_NUMBER) prng <= prng_next;
        // LM pointers: post-modified, then a pending LM_ADDR write lands after its delay
        for (int k = 0; k < 2; k++) begin
          logic [31:0] p;
          logic wr;
          p = k == 0 ? p0_d : p1_d;
          wr = csr_wr && f_csr.csr_f == (k == 0 ? LOCAL_CSRS_ACTIVE_LM_ADDR_0
                                                : LOCAL_CSRS_ACTIVE_LM_ADDR_1);
          if (wr && LM_ADDR_DELAY == 0) begin
            lm_addr[ex][k] <= val_b;
          end else if (wr) begin
            lm_addr[ex][k] <= p;
            lm_pending[ex][k] <= val_b;
            lm_wait[ex][k] <= 4'(LM_ADDR_DELAY);
          end else if (lm_wait[ex][k] == 4'd1) begin
            lm_addr[ex][k] <= lm_pending[ex][k];
            lm_wait[ex][k] <= 4'd0;
          end else begin
            lm_addr[ex][k] <= p;
            if (lm_wait[ex][k] != 4'd0) lm_wait[ex][k] <= lm_wait[ex][k] - 4'd1;
          end
        end
        // local CSR writes
        if (csr_wr)
          case (f_csr.csr_f)
            LOCAL_CSRS_CTX_ENABLES:
              for (int i = 0; i < 8; i++)
                if (i < 32'(nctx)) begin
                  if (!val_b[8 + i] && enabled[i] && 3'(i) != ex) begin
                    enabled[i] <= 1'b0;
                    state[i] <= ST_INACTIVE;
                  end else if (val_b[8 + i] && !enabled[i]) begin
                    enabled[i] <= 1'b1;
                    if (state[i] == ST_INACTIVE) state[i] <= ST_READY;
                  end
                end
            LOCAL_CSRS_SAME_ME_SIGNAL:
              if (val_b[6:3] != 4'd0) signals[val_b[2:0]][val_b[6:3]] <= 1'b1;
            LOCAL_CSRS_BYTE_INDEX: byte_index[ex] <= val_b[1:0];
            LOCAL_CSRS_PSEUDO_RANDOM_NUMBER: prng <= {32'b0, val_b};
            LOCAL_CSRS_CRC_REMAINDER: crc_remainder[ex] <= val_b;
            LOCAL_CSRS_NN_PUT: nn_put <= 7'(val_b % 32'(NN_REGS));
            LOCAL_CSRS_NN_GET: nn_get <= 7'(val_b % 32'(NN_REGS));
            LOCAL_CSRS_CTX_ARB_CNTL: ctx_arb_cntl <= val_b;
            LOCAL_CSRS_MAILBOX0, LOCAL_CSRS_MAILBOX1, LOCAL_CSRS_MAILBOX2, LOCAL_CSRS_MAILBOX3:
              mbox[f_csr.csr_f[1:0]] <= val_b;
            default: ;  // read-only CSRs ignore writes
          endcase
        // control flow
        pc[ex] <= pc[ex] + 13'd1;
        if (in_defer) begin
          defer_left[ex] <= defer_left[ex] - 2'd1;
          if (defer_left[ex] == 2'd1) begin
            if (!deferred_swap[ex]) pc[ex] <= defer_target[ex];
            else do_swap(ex, swap_mode[ex]);
          end
        end else if (taken) begin
          if (defer == 2'd0) begin
            pc[ex] <= target;
            stall <= penalty(2'd0);
          end else begin
            stall <= penalty(defer);
            defer_left[ex] <= defer;
            deferred_swap[ex] <= 1'b0;
            defer_target[ex] <= target;
          end
        end else if (swap) begin
          wait_mask[ex] <= swap_mask;
          swap_mode[ex] <= swap_md;
          if (defer == 2'd0) do_swap(ex, swap_md);
          else begin
            defer_left[ex] <= defer;
            deferred_swap[ex] <= 1'b1;
          end
        end
      end
    end
  end

  // the context leaves the ME: killed, back of the round robin, or asleep on its signals
  task automatic do_swap(input logic [2:0] c, input logic [1:0] mode);
    cur_valid <= 1'b0;
    case (mode)
      CTX_ARB_MODES_KILL: state[c] <= ST_INACTIVE;
      CTX_ARB_MODES_VOLUNTARY: state[c] <= ST_READY;
      default: begin
        state[c] <= ST_SLEEP;
        wait_any[c] <= mode == CTX_ARB_MODES_ANY;
      end
    endcase
  endtask
endmodule
