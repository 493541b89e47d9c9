// rx.uc -- l2wire receive: one ME per port, all 8 threads (README.md, "Receive").
//
// The MSF hands a frame over as mpackets, one RBUF element each (docs/media.md, "Receive"):
// one status per mpacket (length of the mpacket, SOP, EOP, element).  Per mpacket, each
// thread:
//   1. gets the status (autopushed into $0/$1 + SIG_STATUS) and copies it; at SOP it asks the
//      port's SRAM Q-array freelist for a buffer (sram[dequeue]);
//   2. re-registers on the receive-thread freelist in context order (token SIG_TOK_REG), so
//      the MSF can hand it the next mpacket while it works on this one;
//   3. in context order (token SIG_TOK_ASM) reads and updates the port's reassembly state in
//      local memory: at SOP the new buffer and offset 0, else the frame's buffer and the
//      offset of this mpacket; a frame longer than BUF_MAX_FRAME gives its buffer back;
//   4. moves the mpacket RBUF -> DRAM at that offset (dram[rbuf_rd], one command) and, at
//      EOP, writes the metadata to SRAM; frees the element once the data is in DRAM;
//   5. in context order (token SIG_TOK_PUT), at EOP, puts the handle on the scratch ring to
//      the transmit ME.
// Mpackets are handed to threads in registration order and pass both critical sections in
// that order, so the frame's pieces land in one buffer and its put follows every earlier
// mpacket's DRAM write: the ring holds the port's frames in arrival order.
// (The Linux IXP2400 driver's ixp2400_rx.uc keeps per-channel state the same way.)

#include "l2wire.h"

.me 0 1

// ---------------------------------------------------------------- signals
#define SIG_STATUS 1      // autopush: receive status in $0/$1
#define SIG_TOK_REG 2     // my turn to register on the receive-thread freelist
#define SIG_TOK_PUT 3     // my turn to put on the ring
#define SIG_DEQ 4         // buffer handle in $2
#define SIG_META 5        // metadata written
#define SIG_PUT 6         // ring put done ($3 free again)
#define SIG_LAST 8        // the mpacket's RBUF -> DRAM command
#define SIG_TOK_ASM 7     // my turn to read and update the reassembly state
#define SIG_ENQ 9         // buffer of a too-long frame back on the freelist ($5 free again)

// ---------------------------------------------------------------- transfer registers
// $0, $1   in : receive status words 0 and 1 (autopush)
// $2       in : dequeued buffer handle
// $3       out: handle put on the ring
// $5       out: handle of a too-long frame, back to the freelist
// $8..$11  out: metadata LW0..LW3 (LW0 and LW3 are constant, written once)
#define XFER_STATUS 0

// ---------------------------------------------------------------- registers
// bank A: per-thread constants (+ rbuf, which meets dbuf (B) in dram[rbuf_rd])
#define reg_word a0       // (SIG_STATUS << 8) | XFER_STATUS: freelist registration value
#define tok_reg_next a1   // SAME_ME_SIGNAL value: SIG_TOK_REG to context + 1
#define tok_put_next a2   // SAME_ME_SIGNAL value: SIG_TOK_PUT to context + 1
#define fl_qaddr a3       // Q-array address of the port's freelist
#define k_data a4         // data address = k_data + (handle << BUF_SHIFT)
#define mask16 a5         // 0xFFFF
#define rbuf a6           // RBUF byte address of the next command
#define lw1_hi a7         // BUF_DATA_OFFSET << 16
#define max_len a8        // BUF_MAX_FRAME
#define tok_asm_next a9   // SAME_ME_SIGNAL value: SIG_TOK_ASM to context + 1
#define t_a2 a10          // DRAM address scratch
#define cnt_no_buf a11    // scratch address of this port's no-buffer counter
#define cnt_too_long a12  // scratch address of this port's too-long counter
#define table_m2 a14      // address of last_table - 2
#define t_a a15           // init scratch
// bank B: per-frame values
#define st0 b0            // status word 0: mpacket length | port << 16 | SOP | EOP
#define st1 b1            // status word 1: element | 1 << 16
#define handle b2
#define dbuf b3           // DRAM address of the mpacket
#define len b4            // bytes in the mpacket
#define fl_csr b5         // MSF_RX_THREAD_FREELIST_BASE + port
#define ring b6           // scratch ring number = port
#define total b7          // frame bytes up to the end of this mpacket
#define port b8
#define ret b9            // where the last command returns to
#define idx b10           // jump-table entry
#define t_b b11           // init scratch
#define t_b2 b12
#define off b13           // offset of the mpacket in the frame
// local memory (LM_ADDR 0 = 0 for every thread): [1] handle of
// the frame being reassembled (0: it is being dropped), [2] its bytes so far

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]                       // ME number << 3 | context
    alu_shf[port, 1, AND, t_b, >>3]     // receive port = ME & 1
    alu[ring, --, B, port]
    alu[fl_csr, port, +, MSF_RX_THREAD_FREELIST_BASE]
    alu_shf[fl_qaddr, FREELIST_QUEUE, OR, port, <<26]   // SRAM channel = port
    alu_shf[t_b2, --, B, port, <<2]
    immed[cnt_no_buf, CNT_RX_NO_BUFFER]
    alu[cnt_no_buf, cnt_no_buf, +, t_b2]
    immed[cnt_too_long, CNT_RX_TOO_LONG]
    alu[cnt_too_long, cnt_too_long, +, t_b2]
    // tokens go to the next context: SAME_ME_SIGNAL value = (ctx + 1) & 7 | sig << 3
    alu[t_b, t_b, +, 1]
    alu[t_b, t_b, AND, 7]
    alu[tok_reg_next, t_b, OR, (SIG_TOK_REG << 3)]
    alu[tok_put_next, t_b, OR, (SIG_TOK_PUT << 3)]
    alu[tok_asm_next, t_b, OR, (SIG_TOK_ASM << 3)]
    immed[reg_word, ((SIG_STATUS << 8) | XFER_STATUS)]
    immed32[k_data, K_DATA]
    immed[mask16, 0xFFFF]
    immed[lw1_hi, (BUF_DATA_OFFSET << 16)]
    immed[max_len, BUF_MAX_FRAME]
    load_addr[table_m2, last_table#]
    alu[table_m2, table_m2, -, 2]
    // constant metadata words
    immed[$8, 0]                        // LW0 buffer_next
    alu[t_a, port, XOR, 1]              // output port
    alu_shf[$11, t_a, OR, port, <<16]   // LW3 input_port << 16 | output_port
    // one ring-put completion is "owed" at every put: owe the first one to myself
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_b, t_b, OR, (SIG_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    // LM_ADDR 0 = word 0 for every thread: the reassembly state
    immed[t_b, 0]
    local_csr_wr[ACTIVE_LM_ADDR_0, t_b]
    nop
    nop
    nop
    // context 0 starts holding the tokens, no frame in progress
    br!=ctx[0, first_register#]
    immed[*l$index0[1], 0]
    immed[*l$index0[2], 0]
    immed[t_b, (SIG_TOK_ASM << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    immed[t_b, (SIG_TOK_REG << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    immed[t_b, (SIG_TOK_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]

first_register:
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]

// ================================================================ per mpacket
rx_loop:
    ctx_arb[SIG_STATUS]
    alu[st0, --, B, $0]
    alu[st1, --, B, $1]
    br_bclr[st0, 24, not_sop#]
    sram[dequeue, $2, fl_qaddr, 0], sig_done[SIG_DEQ]   // SOP: a buffer for the new frame
not_sop:
    // register for my next mpacket now, in context order
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]
    alu[rbuf, mask16, AND, st1]
    alu_shf[rbuf, --, B, rbuf, <<ELEMENT_SHIFT]
    alu[len, mask16, AND, st0]
    br_bclr[st0, 24, assemble#]
    ctx_arb[SIG_DEQ]
    alu[handle, --, B, $2]

    // reassembly state, in mpacket order
assemble:
    ctx_arb[SIG_TOK_ASM]
    br_bclr[st0, 24, continue#]
    alu[*l$index0[1], --, B, handle]    // SOP: the new frame's buffer (0: none, dropped)
    immed[*l$index0[2], 0]
continue:
    alu[handle, --, B, *l$index0[1]]
    beq[dropping#]
    alu[off, --, B, *l$index0[2]]
    alu[total, *l$index0[2], +, len]
    alu[--, max_len, -, total]
    blt[too_long#]
    alu[*l$index0[2], --, B, total]
    local_csr_wr[SAME_ME_SIGNAL, tok_asm_next]

    // RBUF -> DRAM: the mpacket (1..128 bytes, rounded up to 16) at its offset; at EOP the
    // metadata LW1..LW3 at the same time
    alu[t_a2, k_data, +, off]
    alu_shf[dbuf, t_a2, +, handle, <<BUF_SHIFT]
    br_bset[st0, 25, eop#]
    br[last#], defer[1]
    load_addr[ret, wait_mid#]
eop:
    alu[$9, lw1_hi, OR, total]          // LW1 offset << 16 | buffer_size
    alu_shf[$10, FREELIST_QUEUE, OR, total, <<16] // LW2 packet_size << 16 | freelist queue
    sram[write, $8, handle, 0, META_WRITE_WORDS], sig_done[SIG_META]
    br[last#], defer[1]
    load_addr[ret, wait_eop#]
wait_eop:
    ctx_arb[SIG_LAST, SIG_META]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]  // status word 1 is element | 1 << 16
    ctx_arb[SIG_TOK_PUT, SIG_PUT]
    alu[$3, --, B, handle]
    scratch[put, $3, ring, 0, 1], sig_done[SIG_PUT]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[rx_loop#]

wait_mid:
    ctx_arb[SIG_LAST]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
pass_put:
    // not the end of a frame: take the put turn only to keep the order (the owed SIG_PUT
    // stays owed: no put issued)
    ctx_arb[SIG_TOK_PUT]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[rx_loop#]

// the mpacket, 1..128 bytes rounded up to 16 (the DRAM access unit): jump to entry
// ceil(len / 16) - 1 of the table, which returns to ret
last:
    alu[idx, len, +, 15]
    alu_shf[idx, --, B, idx, >>4]
    alu_shf[idx, table_m2, +, idx, <<1]
    jump[idx, last_table#]
last_table:
    dram[rbuf_rd, --, dbuf, rbuf, 2], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 4], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 6], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 8], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 10], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 12], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 14], sig_done[SIG_LAST]
    rtn[ret]
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_LAST]
    rtn[ret]

// ================================================================ drops
// A dropped frame's mpackets are freed and pass both turns, so the other threads keep their
// order.  The drop is counted once: at SOP (no buffer) or at the mpacket that makes the
// frame too long (its buffer goes back to the freelist).
too_long:
    immed[*l$index0[1], 0]              // the rest of the frame is dropped
    local_csr_wr[SAME_ME_SIGNAL, tok_asm_next]
    alu[$5, --, B, handle]
    sram[enqueue, $5, fl_qaddr, 0], sig_done[SIG_ENQ]
    scratch[incr, --, cnt_too_long, 0]
    ctx_arb[SIG_ENQ]
    br[drop_free#]
dropping:
    local_csr_wr[SAME_ME_SIGNAL, tok_asm_next]
    br_bclr[st0, 24, drop_free#]
    scratch[incr, --, cnt_no_buf, 0]    // SOP without a buffer
drop_free:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    br[pass_put#]
