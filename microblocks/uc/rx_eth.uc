// rx_eth.uc -- router4 receive: one ME per port, all 8 threads
// (examples/router4/README.md, "Receive"; adapted from examples/l2wire/rx.uc).
//
// Per frame, each thread:
//   1. gets the MSF receive status (autopushed into $0/$1 + SIG_STATUS) and copies it;
//   2. asks the port's SRAM Q-array freelist for a buffer (sram[dequeue]) and, while that
//      is in flight, re-registers on the receive-thread freelist in context order (token
//      SIG_TOK_REG), so the MSF can hand it the next frame while it works on this one;
//   3. moves the frame RBUF -> DRAM (dram[rbuf_rd]: all its elements in flight at once, up
//      to 8 + the last one) while writing metadata LW1..LW3 to SRAM (sram[write]);
//   4. frees the RBUF elements as soon as the data is in DRAM;
//   5. in context order (token SIG_TOK_PUT) puts (handle, length) on one of the port's two
//      RX rings, alternately (half A, half B: the two forwarding MEs of the port).
// Frames are handed to threads in registration order and put on the rings in the same
// round-robin order: the port's frames, in arrival order, alternate between the rings.

#include "router4.h"

.me 0 1

// ---------------------------------------------------------------- signals
#define SIG_STATUS 1      // autopush: receive status in $0/$1
#define SIG_TOK_REG 2     // my turn to register on the receive-thread freelist
#define SIG_TOK_PUT 3     // my turn to put on the ring
#define SIG_DEQ 4         // buffer handle in $2
#define SIG_META 5        // metadata written
#define SIG_PUT 6         // ring put done ($3, $4 free again)
#define SIG_LAST 7        // the frame's last (or only) RBUF -> DRAM command
#define SIG_DMA0 8        // its full 128-byte elements before it, one signal each
#define SIG_DMA1 9
#define SIG_DMA2 10
#define SIG_DMA3 11
#define SIG_DMA4 12
#define SIG_DMA5 13
#define SIG_DMA6 14
#define SIG_DMA7 15

// ---------------------------------------------------------------- transfer registers
// $0, $1   in : receive status words 0 and 1 (autopush)
// $2       in : dequeued buffer handle
// $3, $4   out: ring entry (handle, frame length)
// $8..$10  out: metadata LW1..LW3 (LW3 is constant, written once)
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
#define c64 a9
#define c128 a10
#define cnt_no_buf a11    // scratch address of this port's no-buffer counter
#define cnt_too_long a12  // scratch address of this port's too-long counter
#define drop_cnt a13      // the counter of the drop being handled
#define table_m2 a14      // address of last_table - 2
#define t_a a15           // init scratch
// bank B: per-frame values
#define st0 b0            // status word 0: length | port << 16 | SOP | EOP
#define st1 b1            // status word 1: first element | count << 16
#define handle b2
#define dbuf b3           // DRAM address of the next command
#define len b4            // bytes left to move
#define fl_csr b5         // MSF_RX_THREAD_FREELIST_BASE + port
#define ring b6           // RX ring of half A = RX_RING_BASE + 2 * port (half B: + 1)
#define c128b b7          // 128 (for rbuf, bank A)
#define port b8
#define ret b9            // where the last command returns to
#define idx b10           // jump-table entry
#define t_b b11           // init scratch
#define t_b2 b12

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]                       // ME number << 3 | context
    alu_shf[port, MEDIA_PORT_MASK, AND, t_b, >>3]   // receive port = ME & MEDIA_PORT_MASK
#ifdef RX_RINGS_PER_PORT
    // a compiled pipeline's own number of rings per port (npkit.link)
    alu[t_b2, 0, -, port]               // port is 0 or 1: port * RX_RINGS_PER_PORT
    alu[t_b2, t_b2, AND, RX_RINGS_PER_PORT]
    alu[ring, t_b2, +, RX_RING_BASE]
#else
    alu_shf[ring, RX_RING_BASE, +, port, <<1]
#endif
    alu[fl_csr, port, +, MSF_RX_THREAD_FREELIST_BASE]
#ifdef RX_FL_PAIRS
    // two ports per SRAM channel (npkit.link, 4 ports): port p's freelist is
    // queue p & 1 of channel RX_FL_CHANNEL + (p >> 1)
    alu_shf[t_b2, --, B, port, >>1]
    alu[t_b2, t_b2, +, RX_FL_CHANNEL]
    alu[t_a, port, AND, 1]
    alu_shf[fl_qaddr, t_a, OR, t_b2, <<26]
#else
    alu[t_b2, port, +, RX_FL_CHANNEL]
    alu_shf[fl_qaddr, FREELIST_QUEUE, OR, t_b2, <<26]   // SRAM channel RX_FL_CHANNEL + port
#endif
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
    immed[reg_word, ((SIG_STATUS << 8) | XFER_STATUS)]
    immed32[k_data, K_DATA]
    immed[mask16, 0xFFFF]
    immed[lw1_hi, (BUF_DATA_OFFSET << 16)]
    immed[max_len, BUF_MAX_FRAME]
    immed[c64, 64]
    immed[c128, 128]
    immed[c128b, 128]
    load_addr[table_m2, last_table#]
    alu[table_m2, table_m2, -, 2]
    // constant metadata word LW3: input_port << 16 | output_port (not known yet)
    immed[t_a, NO_PORT]
    alu_shf[$10, t_a, OR, port, <<16]
#ifdef RX_FL_PAIRS
    alu[t_a, port, AND, 1]              // from here on: the freelist queue (LW2)
#endif
    // one ring-put completion is "owed" at every put: owe the first one to myself
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_b, t_b, OR, (SIG_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    // LM_ADDR 0 = word 0 for every thread: the half of the next put (README "Receive")
    immed[t_b, 0]
    local_csr_wr[ACTIVE_LM_ADDR_0, t_b]
    nop
    nop
    nop
    // context 0 starts holding both tokens and starts with half A
    br!=ctx[0, first_register#]
    immed[*l$index0[0], 0]
    immed[t_b, (SIG_TOK_REG << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    immed[t_b, (SIG_TOK_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]

first_register:
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]

// ================================================================ per frame
rx_loop:
    ctx_arb[SIG_STATUS]
    alu[st0, --, B, $0]
    alu[st1, --, B, $1]
    alu[len, mask16, AND, st0]
    alu[--, max_len, -, len]
    blt[too_long#]
    sram[dequeue, $2, fl_qaddr, 0], sig_done[SIG_DEQ]
    // register for my next frame now, in context order
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]
    // while the dequeue is in flight: RBUF address and the per-frame metadata words
    alu[rbuf, mask16, AND, st1]
    alu_shf[rbuf, --, B, rbuf, <<ELEMENT_SHIFT]
    alu[$8, lw1_hi, OR, len]            // LW1 offset << 16 | buffer_size
#ifdef RX_FL_PAIRS
    alu_shf[$9, t_a, OR, len, <<16]     // LW2 packet_size << 16 | freelist queue
#else
    alu_shf[$9, FREELIST_QUEUE, OR, len, <<16]    // LW2 packet_size << 16 | freelist queue
#endif
    ctx_arb[SIG_DEQ]
    alu[handle, --, B, $2]
    beq[no_buffer#]
    sram[write, $8, handle, META_FIRST_BYTE, META_WRITE_WORDS], sig_done[SIG_META]
    alu_shf[dbuf, k_data, +, handle, <<BUF_SHIFT]

    // RBUF -> DRAM: full 128-byte elements with one 16-quadword command each, then the
    // rest (1..128 bytes) with one command rounded up to 16 bytes; every command of the
    // frame in flight at once (up to 8 + 1, then the next batch).  A frame never straddles
    // the end of the port's RBUF partition, so there is no wrap.  The RBUF is freed as
    // soon as the data is in DRAM, before waiting for the ring-put turn.
    // Minimum-size frames (<= 64 bytes: one 8-quadword command) go straight through.
    alu[--, c64, -, len]
    blt[chunk0#]
    dram[rbuf_rd, --, dbuf, rbuf, 8], sig_done[SIG_LAST]
wait0:
    ctx_arb[SIG_LAST, SIG_META]
done:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]  // status word 1 is first | count << 16
    ctx_arb[SIG_TOK_PUT, SIG_PUT]
    alu[$3, --, B, handle]
    alu[$4, mask16, AND, st0]           // frame length (status word 0 bits 15..0)
    scratch[put, $3, ring, *l$index0[0], RX_ENTRY_WORDS], sig_done[SIG_PUT]
#ifdef RX_RINGS_PER_PORT
    alu[t_b, *l$index0[0], +, 1]        // the next frame goes to the next ring, round robin
    alu[--, t_b, -, RX_RINGS_PER_PORT]
    blt[next_ring#]
    immed[t_b, 0]
next_ring:
    alu[*l$index0[0], --, B, t_b]
#else
    alu[*l$index0[0], *l$index0[0], XOR, 1]   // the next frame goes to the other half
#endif
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[rx_loop#]

chunk0:
    alu[--, c128, -, len]
    bge[last0#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA0]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk1:
    alu[--, c128, -, len]
    bge[last1#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA1]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk2:
    alu[--, c128, -, len]
    bge[last2#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA2]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk3:
    alu[--, c128, -, len]
    bge[last3#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA3]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk4:
    alu[--, c128, -, len]
    bge[last4#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA4]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk5:
    alu[--, c128, -, len]
    bge[last5#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA5]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk6:
    alu[--, c128, -, len]
    bge[last6#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA6]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
chunk7:
    alu[--, c128, -, len]
    bge[last7#]                       // 128 bytes or fewer left: the exact-size last command
    dram[rbuf_rd, --, dbuf, rbuf, 16], sig_done[SIG_DMA7]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[rbuf, rbuf, +, c128b]
    // more than 8 full elements: let this batch land, then move the next one
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_DMA5, SIG_DMA6, SIG_DMA7]
    br[chunk0#]

last0:
    br[last#], defer[1]
    load_addr[ret, wait0#]
last1:
    br[last#], defer[1]
    load_addr[ret, wait1#]
last2:
    br[last#], defer[1]
    load_addr[ret, wait2#]
last3:
    br[last#], defer[1]
    load_addr[ret, wait3#]
last4:
    br[last#], defer[1]
    load_addr[ret, wait4#]
last5:
    br[last#], defer[1]
    load_addr[ret, wait5#]
last6:
    br[last#], defer[1]
    load_addr[ret, wait6#]
last7:
    br[last#], defer[1]
    load_addr[ret, wait7#]

// the last 1..128 bytes, rounded up to 16 (the DRAM access unit): jump to entry
// ceil(len / 16) - 1 of the table; each entry returns to the wait that matches the number
// of full elements issued before it
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

wait1:
    ctx_arb[SIG_DMA0, SIG_LAST, SIG_META]
    br[done#]
wait2:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_LAST, SIG_META]
    br[done#]
wait3:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_LAST, SIG_META]
    br[done#]
wait4:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_LAST, SIG_META]
    br[done#]
wait5:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_LAST, SIG_META]
    br[done#]
wait6:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_DMA5, SIG_LAST, SIG_META]
    br[done#]
wait7:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_DMA5, SIG_DMA6, SIG_LAST, SIG_META]
    br[done#]

// ================================================================ drops
// The frame is dropped and counted, its RBUF elements freed, and the thread still takes
// its turn on the rings (passes SIG_TOK_PUT) so the others keep their order; the half does
// not change, so the forwarding pair still sees the good frames alternate.  No put is
// issued, so the owed SIG_PUT stays owed.
too_long:
    alu[drop_cnt, --, B, cnt_too_long]
    // not registered yet for the next frame: do it now, in turn
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]
    br[drop#]
no_buffer:
    alu[drop_cnt, --, B, cnt_no_buf]
drop:
    scratch[incr, --, drop_cnt, 0]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    ctx_arb[SIG_TOK_PUT]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[rx_loop#]
