// pool.uc -- docs/datapath.md's compiled data path: a pool of forwarding MEs per input port
// receives, runs the compiled body and transmits each frame on one thread, the header never
// leaving the thread (RBUF -> transfer registers -> local memory -> body -> transfer
// registers -> TBUF).  No RX or TX MEs; DRAM and a buffer only for a frame's bytes past
// the window and for exceptions.  The template is the
// hand-written tests/me/link/xfer_path/xferpool.uc; the body ABI is compiler/me/abi.py's
// LM_WINDOW_ABI (the window in *l$index0[2..15], $14/$15 left to the receive status).
//
// npkit.link.pool (link/pool.py) assembles it with two files on the include path:
//   pool.h    POOL_FIRST_ME, POOL_MES (N MEs per input port: port p has MEs POOL_FIRST_ME
//             + N p .. + N - 1 in next-neighbour order, fwd.uc's ME index 0..15),
//             PORTS, ELEMENT_SHIFT, TBUF_PART_ELEMENTS / _SHIFT (a port's TBUF partition),
//             scratch: TOK_BASE (two wrap words per input port), CLAIM_BASE (a claim
//             counter per output port), DROP_CNT_BASE / DROP_REASON_MAX /
//             BAD_PORT_INDEX (fwd.uc's drop counters), CNT_TOO_LONG / CNT_RX_NO_BUFFER (the
//             media's, per port), FRAME_BYTES_MAX (a buffer's data bytes), RASM_BASE (a reassembly word per input port), HANDLE_BASE (a buffer
//             handle word per RBUF element), ELEMENT_BYTES, TBUF_PART_BYTES, the buffers' and exception ring's numbers
//             (router4.h's names: RX_FL_CHANNEL, FREELIST_QUEUE, K_DATA, BUF_SHIFT, ...),
//             DISPATCH_LM_BYTE and the META_* / VERDICT_* numbers;
//   body.uc   the compiled body (body_entry# ... br[body_exit#]).
//
// Per frame, each thread: status ($14, $15) -> msf[read] of 14 longwords of the element into
// $0..$13, and while it runs the REG turn (re-register on the port's receive-thread
// freelist: the MSF deals frames in registration order; the wrap word goes through $15,
// free until I register) -> window copied to local memory -> (a frame longer than the
// window: a buffer, bytes 56.. RBUF -> DRAM) -> element freed -> metadata set up -> body ->
// ALLOC turn: a forward claims the next TBUF element of its output port
// (scratch test_and_add in the turn, awaited after it), anything else takes an idle turn
// and is counted (drops by reason as fwd.uc does; an exception's frame and record go out
// as fwd.uc's do, the record onto the exception ring in the turn) -> each TBUF
// element written as soon as TX_SEQUENCE shows it free (the window: local memory -> $0..$13
// out -> msf[write]; a frame with a buffer: its tail DRAM -> TBUF element by element) ->
// control word (-> the buffer back).  The REG and ALLOC tokens pass in the pool's cyclic order (ME-major,
// context-minor): SAME_ME_SIGNAL inside an ME, NEXT_NEIGHBOR_SIGNAL to the next ME, a
// scratch wrap word from the last ME to the first.  A frame of several RBUF elements
// (mpackets) is reassembled in a buffer, one thread per mpacket, each taking both turns
// (docs/datapath.md, "Mpackets"): the first keeps its element (the header window) and
// stores bytes 56..; a later one stores its bytes at its offset and frees its element;
// the last one reads the window from the first element and runs the body.  With RX_STAGE
// (the pipeline's first stage is a receive stage) the body runs once per element instead,
// with SOP/EOP in metadata word 11, and its media.consume() takes an idle turn.  Metadata
// words 12 (the frame's DRAM address, when it has a buffer), 13 (its buffer), 14 (a
// multi-element frame's SOP element) and 15 (its TBUF elements - 1) are the dispatch's.
//
// Registers: the body owns a0..a11, b0..b11, signals 1..10, $0..$13; the dispatch keeps
// a12..a15, b12..b15 and signals 11..15.

#include "pool.h"

#define FRAME_MAX 56                    // $0..$13: the window
#define TX_SOP 0x1000000                // TBUF control word flags (docs/media.md, "Transmit")
#define TX_EOP 0x2000000
#define VERDICT_TOO_LONG 7              // not verdicts of the body: this dispatch's own
#define VERDICT_NO_BUFFER 6
#define VERDICT_UNCOUNTED 15
#define LM_HANDLE 13                    // metadata word: the frame's buffer (0: none)
#define LM_SOP 14                       // metadata word: a multi-element frame's SOP element
                                        // as RBUF_ELEMENT_DONE wants it (0: none), freed
                                        // after the EOP thread's ALLOC turn
#define LM_MORE 15                      // metadata word: TBUF elements the frame needs - 1

#define SIG_STATUS 11
#define SIG_TOK_REG 12
#define SIG_TOK_ALLOC 13
#define SIG_IO 14
#define SIG_TX 15         // TBUF writes, token wrap words

#define XFER_STATUS 14

#define flags a12         // bit 0: I take the tokens from the wrap word; bit 1: I pass by
                          // NEXT_NEIGHBOR_SIGNAL; bit 2: I pass through the wrap word;
                          // RX_STAGE: bit 3: I hold the REG turn; bit 4: I have yet to
                          // take it (rx_turn_take / rx_turn_pass)
#define st1 a13           // status word 1 (the element), after the body the output port
#define ret a14
#define t_a a15
#define tok_w b12         // scratch address of the port's REG wrap word (ALLOC: + 4)
#define fl_csr b13        // the port's receive-thread freelist CSR
#define nextctx b14       // (context + 1) & 7
#define t_b b15


init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]                             // ME number << 3 | ctx
    alu[t_a, t_b, AND, 7]                     // ctx
    alu[nextctx, t_a, +, 1]
    alu[nextctx, nextctx, AND, 7]
    // metadata (LM_ADDR_1) at DISPATCH_LM_BYTE + 128 ctx, window and spill (LM_ADDR_0) 64 on
    alu_shf[t_a, --, B, t_a, <<7]
    immed[b2, DISPATCH_LM_BYTE]
    alu[t_a, t_a, +, b2]
    local_csr_wr[ACTIVE_LM_ADDR_1, t_a]
    immed[b2, 64]
    alu[t_a, t_a, +, b2]
    local_csr_wr[ACTIVE_LM_ADDR_0, t_a]
    alu_shf[a1, --, B, t_b, >>3]              // ME number 0x00..0x07, 0x10..0x17
    alu_shf[b1, --, B, a1, >>1]
    alu[b1, b1, AND, 8]
    alu[a1, a1, AND, 7]
    alu[a1, a1, OR, b1]                       // ME index 0..15: next-neighbour order
    alu[a1, a1, -, POOL_FIRST_ME]             // pool ME index: N port + position
    alu[a0, t_b, AND, 7]                      // ctx
    immed[b0, 0]                              // port
pos:
    alu[--, a1, -, POOL_MES]
    blt[pos_done#]
    alu[a1, a1, -, POOL_MES]
    br[pos#], defer[1]
    alu[b0, b0, +, 1]
pos_done:
    alu[*l$index1[META_IN_PORT], --, B, b0]
    immed[*l$index1[LM_SOP], 0]               // set by a multi-element frame's EOP thread,
    immed[*l$index1[LM_MORE], 0]              // cleared when it frees the SOP element
    alu[fl_csr, b0, +, MSF_RX_THREAD_FREELIST_BASE]
    alu_shf[t_a, --, B, b0, <<3]
    immed[tok_w, TOK_BASE]
    alu[tok_w, tok_w, +, t_a]
    alu[b1, --, B, a0]
    alu_shf[t_b, b1, OR, a1, <<3]             // roles by position << 3 | ctx
    immed[flags, 0]
    alu[--, t_b, -, 0]
    bne[not_first#]
    immed[flags, 1]
not_first:
    immed[a2, ((POOL_MES << 3) - 1)]          // the pool's last thread
    alu[--, t_b, -, a2]
    bne[not_wrap#]
    alu[flags, flags, OR, 4]
    br[roles_done#]
not_wrap:
    alu[--, b1, -, 7]
    bne[roles_done#]
    alu[flags, flags, OR, 2]
roles_done:
    // words 2..11 of the metadata are zeroed per frame; the first thread of the pool holds
    // both tokens: they start in the wrap words
    br_bclr[flags, 0, first_register#]
    immed[$13, 1]
    scratch[write, $13, tok_w, 0, 1], ctx_swap[SIG_TX]
    scratch[write, $13, tok_w, 4, 1], ctx_swap[SIG_TX]
first_register:
    load_addr[ret, first_reg_taken#]
    br[take_reg#]
first_reg_taken:
    immed[t_a, ((SIG_STATUS << 8) | XFER_STATUS)]
    msf[fast_wr, --, fl_csr, t_a]
    load_addr[ret, rx_loop#]
    br[pass_reg#]

rx_loop:
    ctx_arb[SIG_STATUS]
    alu[st1, --, B, $15]
    alu[b4, --, B, $14]                       // status word 0: SOP bit 24, EOP bit 25
    immed[t_b, 0xFFFF]
    alu[t_a, t_b, AND, $14]                   // mpacket length
    alu[*l$index1[META_LEN], --, B, t_a]
    alu[t_a, t_b, AND, st1]
    alu_shf[a4, --, B, t_a, <<ELEMENT_SHIFT]  // the element's RBUF address
#ifndef RX_STAGE
    br_bclr[b4, 24, mp_later#]                // a later mpacket of a frame
    br_bclr[b4, 25, mp_sop#]                  // the first of several
#endif
    msf[read, $0, a4, 0, 14], sig_done[SIG_IO]
#ifndef RX_STAGE                              // a receive stage: the REG turn at rx_turn
    load_addr[ret, reg_taken#]                // the REG turn while the window comes in
    br[take_reg#]
reg_taken:
    immed[t_a, ((SIG_STATUS << 8) | XFER_STATUS)]
    msf[fast_wr, --, fl_csr, t_a]
    load_addr[ret, reg_passed#]
    br[pass_reg#]
#endif
reg_passed:
    immed[*l$index1[LM_HANDLE], 0]            // no buffer (yet)
    ctx_arb[SIG_IO]
    alu[*l$index0[2], --, B, $0]
    alu[*l$index0[3], --, B, $1]
    alu[*l$index0[4], --, B, $2]
    alu[*l$index0[5], --, B, $3]
    alu[*l$index0[6], --, B, $4]
    alu[*l$index0[7], --, B, $5]
    alu[*l$index0[8], --, B, $6]
    alu[*l$index0[9], --, B, $7]
    alu[*l$index0[10], --, B, $8]
    alu[*l$index0[11], --, B, $9]
    alu[*l$index0[12], --, B, $10]
    alu[*l$index0[13], --, B, $11]
    alu[*l$index0[14], --, B, $12]
    alu[*l$index0[15], --, B, $13]
#ifdef RX_STAGE
    br_bclr[b4, 24, rx_mpacket#]              // one of several: the body stores it
    br_bclr[b4, 25, rx_mpacket#]
#endif
    alu[--, *l$index1[META_LEN], -, (FRAME_MAX + 1)]
    blt[window_only#]
    // longer than the window: a buffer of the port's freelist, bytes FRAME_MAX.. of the
    // element to it (dram[rbuf_rd], in quadwords), before the element is freed
    alu[a0, --, B, *l$index1[META_IN_PORT]]
    alu[a1, a0, +, RX_FL_CHANNEL]
    alu_shf[a1, FREELIST_QUEUE, OR, a1, <<26]
    sram[dequeue, $0, a1, 0], ctx_swap[SIG_IO]
    alu[b5, --, B, $0]                        // the handle (0: the freelist is empty)
    beq[no_buffer#]
    alu[*l$index1[LM_HANDLE], --, B, b5]
    immed32[a2, K_DATA]
    alu_shf[a2, a2, +, b5, <<BUF_SHIFT]       // DRAM address of the frame's byte 0
    alu[*l$index1[META_DRAM_ADDR], --, B, a2] // for the body's reads past the window
    alu[b2, a2, +, FRAME_MAX]
    alu[a4, a4, +, FRAME_MAX]
    alu[b6, *l$index1[META_LEN], -, (FRAME_MAX - 7)]
    alu_shf[b6, --, B, b6, >>3]               // quadwords of the tail: 1..
    load_addr[a7, window_only#]
    br[rbuf_rd_n#]

// dram[rbuf_rd] of b6 (1..16) quadwords from RBUF address a4 to DRAM address b2, awaited;
// returns to a7
rbuf_rd_n:
    load_addr[a6, rbuf_rd_table#]
    alu_shf[a6, a6, +, b6, <<1]
    alu[a6, a6, -, 2]
    jump[a6, rbuf_rd_table#]
rbuf_rd_table:
    dram[rbuf_rd, --, b2, a4, 1], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 2], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 3], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 4], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 5], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 6], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 7], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 8], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 9], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 10], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 11], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 12], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 13], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 14], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 15], ctx_swap[SIG_IO]
    rtn[a7]
    dram[rbuf_rd, --, b2, a4, 16], ctx_swap[SIG_IO]
    rtn[a7]
window_only:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
meta_setup:
    immed[*l$index1[2], 0]
    immed[*l$index1[3], 0]
    immed[*l$index1[4], 0]
    immed[*l$index1[5], 0]
    immed[*l$index1[6], 0]
    immed[*l$index1[7], 0]
    immed[*l$index1[8], 0]
    immed[*l$index1[9], 0]
    immed[*l$index1[10], 0]
    alu_shf[b4, --, B, b4, >>24]
#ifdef RX_STAGE
    alu[*l$index1[META_MEDIA], b4, AND, 3]    // the status's SOP (bit 0) and EOP (bit 1)
    // the body's receive stage runs in the port's REG turn, so its per-port state (MBL
    // registers) changes in mpacket order.  The body takes the turn (rx_turn_take: at its
    // entry, or where the stage's media.turn_begin() says) and passes it when the stage is
    // over (rx_turn_pass); a body that never took it takes and passes it at its exit.
    // Everything before (the window, a one-element frame's tail) is outside the turn.
    immed[*l$index1[LM_MORE], 0]              // buffer.attach sets it (a drop leaves it)
    br[body_entry#], defer[1]
    alu[flags, flags, OR, 16]                 // bit 4: the REG turn is still to be taken
// an mpacket of a frame of several elements with a receive stage: no buffer of the
// dispatch's; its element is held for the body's buffer.store (metadata word LM_SOP,
// compiler/me/abi.py META_RX_ELEMENT: element | 1 << 16) and freed at the body's exit
rx_mpacket:
    immed[t_b, 0xFFFF]
    alu[t_a, t_b, AND, st1]
    immed[t_b, 1]
    alu_shf[t_a, t_a, OR, t_b, <<16]
    br[meta_setup#], defer[1]
    alu[*l$index1[LM_SOP], --, B, t_a]
#else
    br[body_entry#], defer[1]
    alu[*l$index1[META_MEDIA], b4, AND, 3]    // the status's SOP (bit 0) and EOP (bit 1)
#endif

// a frame of several elements (docs/datapath.md, "Mpackets").  The first mpacket: a buffer
// (asked for before the REG turn, awaited in it), HANDLE[element] and the port's
// reassembly word (element | 1 << 16) written in the turn; bytes FRAME_MAX.. of the element
// to DRAM; the element stays allocated for the EOP thread's window read
mp_sop:
    alu[a0, --, B, *l$index1[META_IN_PORT]]
    alu[a1, a0, +, RX_FL_CHANNEL]
    alu_shf[a1, FREELIST_QUEUE, OR, a1, <<26]
    sram[dequeue, $0, a1, 0], sig_done[SIG_IO]
    load_addr[ret, sop_reg#]
    br[take_reg#]
sop_reg:
    immed[t_a, ((SIG_STATUS << 8) | XFER_STATUS)]
    msf[fast_wr, --, fl_csr, t_a]
    immed[t_b, 0xFFFF]
    alu[a5, t_b, AND, st1]                    // the SOP element
    immed32[b7, HANDLE_BASE]
    alu_shf[a2, b7, +, a5, <<2]
    immed32[b7, RASM_BASE]
    alu_shf[a1, b7, +, a0, <<2]
    immed[b7, 1]
    alu_shf[$2, a5, OR, b7, <<16]             // element | next mpacket's index 1
    ctx_arb[SIG_IO]
    alu[b5, --, B, $0]                        // the handle (0: the freelist is empty)
    alu[$1, --, B, b5]
    scratch[write, $1, a2, 0, 1], sig_done[SIG_IO]
    scratch[write, $2, a1, 0, 1], sig_done[SIG_TX]
    ctx_arb[SIG_IO, SIG_TX]
    load_addr[ret, sop_passed#]
    br[pass_reg#]
sop_passed:
    alu[--, --, B, b5]
    beq[sop_no_buffer#]
    br[idle#]                                 // the EOP thread stores my bytes FRAME_MAX..
sop_no_buffer:                                // counted once; the later mpackets only free
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    br[count_no_buffer#]

// a later mpacket: e | k << 16 from the port's reassembly word (test_and_add of 1 << 16
// issued in the REG turn, so in mpacket order), its bytes to DRAM at k * ELEMENT_BYTES;
// the ALLOC turn only after the copy, so the EOP thread finds the frame whole in DRAM
mp_later:
    alu[a0, --, B, *l$index1[META_IN_PORT]]
    immed32[b7, RASM_BASE]
    alu_shf[a1, b7, +, a0, <<2]
    load_addr[ret, later_reg#]
    br[take_reg#]
later_reg:
    immed[a3, 1]
    alu_shf[$1, --, B, a3, <<16]
    scratch[test_and_add, $1, a1, 0], sig_done[SIG_IO]
    immed[t_a, ((SIG_STATUS << 8) | XFER_STATUS)]
    msf[fast_wr, --, fl_csr, t_a]
    load_addr[ret, later_passed#]
    br[pass_reg#]
later_passed:
    ctx_arb[SIG_IO]
    alu[a5, --, B, $1]                        // SOP element | k << 16
    immed[t_b, 0xFFFF]
    alu[a8, t_b, AND, a5]                     // SOP element
    alu_shf[b3, --, B, a5, >>16]              // k
    immed32[b7, HANDLE_BASE]
    alu_shf[a2, b7, +, a8, <<2]
    scratch[read, $2, a2, 0, 1], ctx_swap[SIG_IO]
    alu[b5, --, B, $2]                        // the frame's buffer (0: none, dropped)
    beq[later_no_buffer#]
    immed32[a2, K_DATA]
    alu_shf[a2, a2, +, b5, <<BUF_SHIFT]       // DRAM address of the frame's byte 0
    alu_shf[b3, --, B, b3, <<ELEMENT_SHIFT]   // this mpacket's offset in the frame
    alu[b2, a2, +, b3]
    alu[a3, *l$index1[META_LEN], +, 7]
    alu_shf[b6, --, B, a3, >>3]               // quadwords: 1..ELEMENT_BYTES / 8
    alu[a3, b3, +, *l$index1[META_LEN]]       // the frame's bytes up to mine
    immed[b7, FRAME_BYTES_MAX]
    alu[--, b7, -, a3]
    blt[later_too_long#]                      // past the buffer: not stored
    br_bset[b4, 25, later_eop#]
    load_addr[a7, later_stored#]
    br[rbuf_rd_n#]
later_stored:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    br[idle#]
later_no_buffer:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    br[idle#]
// a frame longer than its buffer: the mpackets past it are not stored; at the last one
// the frame is counted under CNT_TOO_LONG, its buffer goes back, its SOP element is freed
later_too_long:
    br_bset[b4, 25, eop_too_long#], defer[1]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    br[idle#]
eop_too_long:
    alu[*l$index1[LM_HANDLE], --, B, b5]
    immed[b7, 1]
    alu_shf[a3, a8, OR, b7, <<16]
    alu[*l$index1[LM_SOP], --, B, a3]
    br[not_forward#], defer[1]
    immed[*l$index1[META_VERDICT], VERDICT_TOO_LONG]
// the last mpacket: its bytes stored, the window read from the SOP element, its own element
// freed; the frame then runs the body as a one-element frame with a buffer would
later_eop:
    // the SOP element's bytes FRAME_MAX.. go to the buffer too (here, not in the SOP
    // thread: so the element can be freed as soon as this thread has them and the window,
    // when no middle mpacket reads HANDLE[element] any more)
    alu_shf[a11, --, B, a8, <<ELEMENT_SHIFT]
    alu[a11, a11, +, FRAME_MAX]               // the SOP element's byte FRAME_MAX
    alu[b10, a2, +, FRAME_MAX]                // the buffer's byte FRAME_MAX
    dram[rbuf_rd, --, b10, a11, ((ELEMENT_BYTES - FRAME_MAX) >> 3)], sig_done[SIG_TX]
    load_addr[a7, eop_stored#]
    br[rbuf_rd_n#]
eop_stored:
    alu_shf[a4, --, B, a8, <<ELEMENT_SHIFT]   // the SOP element's RBUF address
    msf[read, $0, a4, 0, 14], sig_done[SIG_IO]
    alu[a3, b3, +, *l$index1[META_LEN]]       // the frame's length
    alu[*l$index1[META_LEN], --, B, a3]
    alu[*l$index1[LM_HANDLE], --, B, b5]
    alu[*l$index1[META_DRAM_ADDR], --, B, a2]
    immed[b7, 1]
    alu_shf[a3, a8, OR, b7, <<16]
    alu[*l$index1[LM_SOP], --, B, a3]
    alu[a3, *l$index1[META_LEN], -, 1]
    alu_shf[a3, --, B, a3, >>ELEMENT_SHIFT]
    alu[*l$index1[LM_MORE], --, B, a3]        // TBUF elements - 1
    immed32[b4, 0x03000000]                   // a whole frame: SOP and EOP for META_MEDIA
    ctx_arb[SIG_IO, SIG_TX]                   // the window, and the SOP element's bytes
    alu[*l$index0[2], --, B, $0]
    alu[*l$index0[3], --, B, $1]
    alu[*l$index0[4], --, B, $2]
    alu[*l$index0[5], --, B, $3]
    alu[*l$index0[6], --, B, $4]
    alu[*l$index0[7], --, B, $5]
    alu[*l$index0[8], --, B, $6]
    alu[*l$index0[9], --, B, $7]
    alu[*l$index0[10], --, B, $8]
    alu[*l$index0[11], --, B, $9]
    alu[*l$index0[12], --, B, $10]
    alu[*l$index0[13], --, B, $11]
    alu[*l$index0[14], --, B, $12]
    alu[*l$index0[15], --, B, $13]
    alu_shf[a3, --, B, b3, >>ELEMENT_SHIFT]   // my index in the frame
    alu[--, a3, -, 1]                         // a frame of two mpackets: no middle one
    bne[window_only#]                         // reads HANDLE[SOP element], free it now
    alu[a3, --, B, *l$index1[LM_SOP]]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, a3]
    br[window_only#], defer[1]                // frees my element, runs the body
    immed[*l$index1[LM_SOP], 0]

no_buffer:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    br[not_forward#], defer[1]
    immed[*l$index1[META_VERDICT], VERDICT_NO_BUFFER]

#include "body.uc"

body_exit:
#ifdef RX_STAGE
    // the REG turn first, if the body still holds it (a verdict inside the receive stage:
    // media.consume(), a drop): the stage's state is written (its scratch commands are
    // issued, and the scratch unit keeps their order); what follows is this mpacket's
    // own (its stores past the window, its element), awaited outside the turn
    load_addr[ret, rx_turn_passed#]
    br[rx_turn_pass#]
rx_turn_passed:
    alu[t_a, --, B, *l$index1[LM_SOP]]        // an mpacket's element held for the body
    beq[rx_element_free#]
    br_bclr[t_a, 31, rx_element_stored#]      // bit 31: the body's last buffer.store is
    ctx_arb[SIG_IO]                           // in flight (compiler/me/back/buffers.py)
    alu_shf[t_a, --, B, t_a, <<1]
    alu_shf[t_a, --, B, t_a, >>1]
rx_element_stored:
    // bit 30: the element holds a buffer's window (buffer.store at 0); the buffer's
    // attach or free frees it (compiler/me/abi.py RX_KEEP_DESC_BYTE), not this exit
    br_bclr[t_a, 30, rx_element_own#]
    br[rx_element_free#], defer[1]
    immed[*l$index1[LM_SOP], 0]
rx_element_own:
    // the body passes the mpacket itself on (a forward or an exception without
    // buffer.attach): its bytes past the window go to a buffer as a one-element frame's
    alu[--, --, B, *l$index1[LM_HANDLE]]
    bne[rx_element_done#]                     // attached: the frame is in its buffer
    alu[t_b, --, B, *l$index1[META_VERDICT]]
    alu[--, t_b, -, VERDICT_FORWARD]
    beq[rx_element_tail#]
    alu[--, t_b, -, VERDICT_EXCEPTION]
    bne[rx_element_done#]
rx_element_tail:
    alu[--, *l$index1[META_LEN], -, (FRAME_MAX + 1)]
    blt[rx_element_done#]
    alu[a0, --, B, *l$index1[META_IN_PORT]]
    alu[a1, a0, +, RX_FL_CHANNEL]
    alu_shf[a1, FREELIST_QUEUE, OR, a1, <<26]
    sram[dequeue, $0, a1, 0], ctx_swap[SIG_IO]
    alu[b5, --, B, $0]                        // the handle (0: the freelist is empty)
    bne[rx_element_buffer#]
    br[rx_element_done#], defer[1]
    immed[*l$index1[META_VERDICT], VERDICT_NO_BUFFER]
rx_element_buffer:
    alu[*l$index1[LM_HANDLE], --, B, b5]
    immed32[a2, K_DATA]
    alu_shf[a2, a2, +, b5, <<BUF_SHIFT]       // DRAM address of the frame's byte 0
    alu[*l$index1[META_DRAM_ADDR], --, B, a2]
    alu[b2, a2, +, FRAME_MAX]
    immed[t_b, 0xFFFF]
    alu[a4, t_b, AND, t_a]
    alu_shf[a4, --, B, a4, <<ELEMENT_SHIFT]
    alu[a4, a4, +, FRAME_MAX]
    alu[b6, *l$index1[META_LEN], -, (FRAME_MAX - 7)]
    alu_shf[b6, --, B, b6, >>3]               // quadwords of the tail: 1..
    load_addr[a7, rx_element_done#]
    br[rbuf_rd_n#]
rx_element_done:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, t_a]
    immed[*l$index1[LM_SOP], 0]
rx_element_free:
#endif
    alu[--, *l$index1[META_VERDICT], -, VERDICT_FORWARD]
    bne[not_forward#]
    alu[st1, --, B, *l$index1[META_OUT_PORT]]   // st1 from here: the output port
    alu[--, st1, -, PORTS]
    bcs[not_forward#]
    load_addr[ret, alloc_taken#]
    br[take_alloc#]
alloc_taken:
    alu[$13, *l$index1[LM_MORE], +, 1]        // the TBUF elements the frame needs
    immed[t_b, CLAIM_BASE]
    alu_shf[t_b, t_b, +, st1, <<2]
    scratch[test_and_add, $13, t_b, 0], sig_done[SIG_IO]
    load_addr[ret, alloc_passed#]
    br[pass_alloc#]
alloc_passed:
    ctx_arb[SIG_IO]
    alu[ret, --, B, $13]                      // ret here: my element's sequence number
    alu[a3, --, B, *l$index1[LM_SOP]]
    bne[tx_free_sop#]                         // not taken on the one-element path
tx_sequence:
    immed32[t_b, MSF_TX_SEQUENCE_BASE]
    alu_shf[t_b, t_b, +, st1, <<2]
    alu[b5, --, B, *l$index1[LM_HANDLE]]
    bne[tx_tail_start#]
// a frame in the window alone (no buffer): one element, written when it is free
space:
    msf[read, $13, t_b, 0, 1], ctx_swap[SIG_IO]
    alu[t_a, ret, -, $13]                     // claimed before me and not yet sent
    alu[t_a, t_a, +, *l$index1[LM_MORE]]      // ... and mine after the first
    alu[--, (TBUF_PART_ELEMENTS - 1), -, t_a]
    blt[space#]
    alu[$0, --, B, *l$index0[2]]
    alu[$1, --, B, *l$index0[3]]
    alu[$2, --, B, *l$index0[4]]
    alu[$3, --, B, *l$index0[5]]
    alu[$4, --, B, *l$index0[6]]
    alu[$5, --, B, *l$index0[7]]
    alu[$6, --, B, *l$index0[8]]
    alu[$7, --, B, *l$index0[9]]
    alu[$8, --, B, *l$index0[10]]
    alu[$9, --, B, *l$index0[11]]
    alu[$10, --, B, *l$index0[12]]
    alu[$11, --, B, *l$index0[13]]
    alu[$12, --, B, *l$index0[14]]
    alu[$13, --, B, *l$index0[15]]
    alu[t_a, ret, AND, (TBUF_PART_ELEMENTS - 1)]
    alu_shf[t_b, --, B, st1, <<TBUF_PART_SHIFT]   // the port's TBUF partition
    alu[t_a, t_a, +, t_b]                     // element
    immed32[t_b, MSF_TBUF_BASE]
    alu_shf[t_b, t_b, +, t_a, <<ELEMENT_SHIFT]
    msf[write, $0, t_b, 0, 14], ctx_swap[SIG_TX]
    immed32[t_b, (TX_SOP | TX_EOP)]
    alu_shf[t_b, t_b, OR, st1, <<16]
    alu[$14, t_b, OR, *l$index1[META_LEN]]    // control word: SOP | EOP | port << 16 | length
    immed32[t_b, MSF_TBUF_CTL_BASE]
    alu_shf[t_b, t_b, +, t_a, <<2]
    msf[write, $14, t_b, 0, 1], ctx_swap[SIG_TX]
    br[rx_loop#]
// a multi-element frame's SOP element is freed as soon as its ALLOC turn has passed, not
// after the wait for TBUF space: every mpacket of the frame has passed its ALLOC turn (no
// thread reads HANDLE[element] any more) and the window is in local memory
tx_free_sop:
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, a3]
    br[tx_sequence#], defer[1]
    immed[*l$index1[LM_SOP], 0]

// a frame with a buffer (longer than the window): written element by element, each TBUF
// element as soon as it is free (TX_SEQUENCE: my element j is free when j < a9 = sequence
// + TBUF_PART_ELEMENTS - ret), so the copies overlap the transmission of the frames
// ahead of mine in the port's ring; the control word once every element is in.  Element
// 0: the window by msf[write] and bytes FRAME_MAX.. from DRAM; element j: bytes
// ELEMENT_BYTES j .. from DRAM, 16 quadwords, or what is left for the last one (the
// quadwords the rbuf_rd wrote).  Element j's dram[tbuf_wr] signals j % 9 + 1 (the body's
// signals, free after its exit; the tenth element waits for the first's), the last one
// signal 10.  Without this, at 1,280 B (11 elements, two frames in a port's 32-element
// partition) a frame waited for the whole frame ahead to leave and then for its twelve
// DRAM latencies, longer than one frame on the line: the line idled and the RBUF
// overflowed (docs/datapath.md, "Line rate with frames of several elements")
tx_tail_start:
    alu[b9, --, B, t_b]                       // the port's TX_SEQUENCE
    alu[b11, --, B, *l$index1[LM_MORE]]       // my last element
    immed[*l$index1[LM_MORE], 0]
    alu[a11, ret, AND, (TBUF_PART_ELEMENTS - 1)]
    alu_shf[t_b, --, B, st1, <<TBUF_PART_SHIFT]
    alu[t_a, a11, +, t_b]                     // my first element (its control word)
    alu_shf[a8, --, B, t_b, <<ELEMENT_SHIFT]  // the partition's first TBUF byte
    alu_shf[b8, --, B, a11, <<ELEMENT_SHIFT]  // element j's byte offset in the partition
    immed[a10, (TBUF_PART_BYTES - 1)]
    immed[a5, ELEMENT_BYTES]
    alu[b2, --, B, *l$index1[META_DRAM_ADDR]] // element j's bytes in DRAM
    immed[a9, 0]                              // my elements known to be free

te0:
    alu[--, a9, -, 0]
    ble[tp0#]                            // element 0 not free yet
    alu[$0, --, B, *l$index0[2]]
    alu[$1, --, B, *l$index0[3]]
    alu[$2, --, B, *l$index0[4]]
    alu[$3, --, B, *l$index0[5]]
    alu[$4, --, B, *l$index0[6]]
    alu[$5, --, B, *l$index0[7]]
    alu[$6, --, B, *l$index0[8]]
    alu[$7, --, B, *l$index0[9]]
    alu[$8, --, B, *l$index0[10]]
    alu[$9, --, B, *l$index0[11]]
    alu[$10, --, B, *l$index0[12]]
    alu[$11, --, B, *l$index0[13]]
    alu[$12, --, B, *l$index0[14]]
    alu[$13, --, B, *l$index0[15]]
    alu[a4, a8, +, b8]
    immed32[b3, MSF_TBUF_BASE]
    alu[b3, b3, +, a4]
    msf[write, $0, b3, 0, 14], sig_done[SIG_TX]
    alu[--, b11, -, 0]
    beq[tl0#]
    alu[a4, a4, +, FRAME_MAX]
    alu[b3, b2, +, FRAME_MAX]
    dram[tbuf_wr, --, b3, a4, ((ELEMENT_BYTES - FRAME_MAX) >> 3)], sig_done[1]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te1:
    alu[--, a9, -, 1]
    ble[tp1#]                            // element 1 not free yet
    alu[--, b11, -, 1]
    beq[tl1#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[2]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te2:
    alu[--, a9, -, 2]
    ble[tp2#]                            // element 2 not free yet
    alu[--, b11, -, 2]
    beq[tl2#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[3]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te3:
    alu[--, a9, -, 3]
    ble[tp3#]                            // element 3 not free yet
    alu[--, b11, -, 3]
    beq[tl3#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[4]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te4:
    alu[--, a9, -, 4]
    ble[tp4#]                            // element 4 not free yet
    alu[--, b11, -, 4]
    beq[tl4#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[5]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te5:
    alu[--, a9, -, 5]
    ble[tp5#]                            // element 5 not free yet
    alu[--, b11, -, 5]
    beq[tl5#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[6]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te6:
    alu[--, a9, -, 6]
    ble[tp6#]                            // element 6 not free yet
    alu[--, b11, -, 6]
    beq[tl6#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[7]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te7:
    alu[--, a9, -, 7]
    ble[tp7#]                            // element 7 not free yet
    alu[--, b11, -, 7]
    beq[tl7#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[8]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te8:
    alu[--, a9, -, 8]
    ble[tp8#]                            // element 8 not free yet
    alu[--, b11, -, 8]
    beq[tl8#]
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[9]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te9:
    alu[--, a9, -, 9]
    ble[tp9#]                            // element 9 not free yet
    alu[--, b11, -, 9]
    beq[tl9#]
    ctx_arb[1]                             // element 0's copy
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[1]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te10:
    alu[--, a9, -, 10]
    ble[tp10#]                            // element 10 not free yet
    alu[--, b11, -, 10]
    beq[tl10#]
    ctx_arb[2]                             // element 1's copy
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[2]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te11:
    alu[--, a9, -, 11]
    ble[tp11#]                            // element 11 not free yet
    alu[--, b11, -, 11]
    beq[tl11#]
    ctx_arb[3]                             // element 2's copy
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[3]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te12:
    alu[--, a9, -, 12]
    ble[tp12#]                            // element 12 not free yet
    alu[--, b11, -, 12]
    beq[tl12#]
    ctx_arb[4]                             // element 3's copy
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[4]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te13:
    alu[--, a9, -, 13]
    ble[tp13#]                            // element 13 not free yet
    alu[--, b11, -, 13]
    beq[tl13#]
    ctx_arb[5]                             // element 4's copy
    alu[a4, a8, +, b8]
    dram[tbuf_wr, --, b2, a4, (ELEMENT_BYTES >> 3)], sig_done[5]
    alu[b2, b2, +, a5]
    alu[b8, b8, +, a5]
    alu[b8, b8, AND, a10]
te14:
    alu[--, a9, -, 14]
    ble[tp14#]                            // element 14 not free yet
    br[tl14#]
tp0:
    load_addr[a7, te0#]
    br[tx_poll#]
tp1:
    load_addr[a7, te1#]
    br[tx_poll#]
tp2:
    load_addr[a7, te2#]
    br[tx_poll#]
tp3:
    load_addr[a7, te3#]
    br[tx_poll#]
tp4:
    load_addr[a7, te4#]
    br[tx_poll#]
tp5:
    load_addr[a7, te5#]
    br[tx_poll#]
tp6:
    load_addr[a7, te6#]
    br[tx_poll#]
tp7:
    load_addr[a7, te7#]
    br[tx_poll#]
tp8:
    load_addr[a7, te8#]
    br[tx_poll#]
tp9:
    load_addr[a7, te9#]
    br[tx_poll#]
tp10:
    load_addr[a7, te10#]
    br[tx_poll#]
tp11:
    load_addr[a7, te11#]
    br[tx_poll#]
tp12:
    load_addr[a7, te12#]
    br[tx_poll#]
tp13:
    load_addr[a7, te13#]
    br[tx_poll#]
tp14:
    load_addr[a7, te14#]
    br[tx_poll#]
tl0:
    alu[a4, a8, +, b8]
    alu[a4, a4, +, FRAME_MAX]
    alu[b2, b2, +, FRAME_MAX]
    alu[b6, *l$index1[META_LEN], -, (FRAME_MAX - 7)]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait0#]
    br[tx_last#]
tl1:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 1) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait1#]
    br[tx_last#]
tl2:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 2) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait2#]
    br[tx_last#]
tl3:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 3) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait3#]
    br[tx_last#]
tl4:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 4) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait4#]
    br[tx_last#]
tl5:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 5) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait5#]
    br[tx_last#]
tl6:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 6) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait6#]
    br[tx_last#]
tl7:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 7) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait7#]
    br[tx_last#]
tl8:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 8) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait8#]
    br[tx_last#]
tl9:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 9) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait9#]
    br[tx_last#]
tl10:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 10) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait9#]
    br[tx_last#]
tl11:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 11) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait9#]
    br[tx_last#]
tl12:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 12) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait9#]
    br[tx_last#]
tl13:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 13) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait9#]
    br[tx_last#]
tl14:
    alu[a4, a8, +, b8]
    immed[b3, ((ELEMENT_BYTES * 14) - 7)]
    alu[b6, *l$index1[META_LEN], -, b3]
    alu_shf[b6, --, B, b6, >>3]            // its quadwords
    load_addr[a7, tx_wait9#]
    br[tx_last#]
// my free elements: a9 = TX_SEQUENCE + TBUF_PART_ELEMENTS - ret; returns to a7
tx_poll:
    msf[read, $13, b9, 0, 1], ctx_swap[SIG_IO]
    alu[a9, $13, -, ret]
    alu[a9, a9, +, TBUF_PART_ELEMENTS]
    rtn[a7]
// the last element: b6 (1..16) quadwords from DRAM b2 to TBUF byte a4 on signal 10, then
// to a7, the wait for the copies still in flight
tx_last:
    load_addr[a6, tbuf_wr_table#]
    alu_shf[a6, a6, +, b6, <<1]
    alu[a6, a6, -, 2]
    jump[a6, tbuf_wr_table#]
tx_wait9:
    ctx_arb[9]
tx_wait8:
    ctx_arb[8]
tx_wait7:
    ctx_arb[7]
tx_wait6:
    ctx_arb[6]
tx_wait5:
    ctx_arb[5]
tx_wait4:
    ctx_arb[4]
tx_wait3:
    ctx_arb[3]
tx_wait2:
    ctx_arb[2]
tx_wait1:
    ctx_arb[1]
tx_wait0:
    ctx_arb[10, SIG_TX]                       // the last element, and the window's msf[write]
    // valid once every byte is in the TBUF: one control word per element (docs/media.md,
    // "Transmit"), SOP on the first, EOP on the last, in ring order, each after the one
    // before it (faster than the line sends an element, so the frame leaves as if validated
    // at once); the buffer goes back after the last word (its bytes are in the TBUF), so the
    // line does not wait for the sram[enqueue].  b6: the word without its length, a9: k,
    // b8: element k in the partition, a8: the partition's first element
    immed32[b6, TX_SOP]
    alu_shf[b6, b6, OR, st1, <<16]
    immed[a9, 0]
    alu[b8, --, B, a11]
    alu_shf[a8, --, B, st1, <<TBUF_PART_SHIFT]
tx_ctl:
    alu[a6, a8, +, b8]
    immed32[b3, MSF_TBUF_CTL_BASE]
    alu_shf[b3, b3, +, a6, <<2]
    alu[--, a9, -, b11]
    beq[tx_ctl_last#]
    alu[$14, a5, OR, b6]                      // a full element (a5 = ELEMENT_BYTES)
    msf[write, $14, b3, 0, 1], ctx_swap[SIG_TX]
    alu_shf[b6, --, B, st1, <<16]             // later elements: no SOP
    alu[a9, a9, +, 1]
    alu[b8, b8, +, 1]
    br[tx_ctl#], defer[1]
    alu[b8, b8, AND, (TBUF_PART_ELEMENTS - 1)]
tx_ctl_last:
    alu_shf[b2, --, B, b11, <<ELEMENT_SHIFT]
    alu[b2, *l$index1[META_LEN], -, b2]       // the last element's bytes
    immed32[a10, TX_EOP]
    alu[a4, a10, OR, b2]
    alu[$14, a4, OR, b6]
    msf[write, $14, b3, 0, 1], sig_done[SIG_TX]
    alu[$13, --, B, b5]
    alu[a1, --, B, *l$index1[META_IN_PORT]]
    alu[a1, a1, +, RX_FL_CHANNEL]
    alu_shf[a1, FREELIST_QUEUE, OR, a1, <<26]
    sram[enqueue, $13, a1, 0], sig_done[SIG_IO]   // awaited before $13 is used again
    ctx_arb[SIG_IO, SIG_TX]
    br[rx_loop#]
tbuf_wr_table:
    dram[tbuf_wr, --, b2, a4, 1], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 2], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 3], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 4], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 5], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 6], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 7], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 8], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 9], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 10], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 11], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 12], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 13], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 14], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 15], sig_done[10]
    rtn[a7]
    dram[tbuf_wr, --, b2, a4, 16], sig_done[10]
    rtn[a7]

// a drop, an exception, a bad port or a frame too long: counted, then an idle turn
not_forward:
    alu[t_a, --, B, *l$index1[META_VERDICT]]
    alu[--, t_a, -, VERDICT_EXCEPTION]
    beq[count_exception#]
    alu[b5, --, B, *l$index1[LM_HANDLE]]      // a buffer goes back to the freelist
    beq[no_handle#]
    alu[$13, --, B, b5]
    alu[a1, --, B, *l$index1[META_IN_PORT]]
    alu[a1, a1, +, RX_FL_CHANNEL]
    alu_shf[a1, FREELIST_QUEUE, OR, a1, <<26]
    sram[enqueue, $13, a1, 0], ctx_swap[SIG_IO]
no_handle:
    alu[--, t_a, -, VERDICT_DROP]
    beq[count_drop#]
    alu[--, t_a, -, VERDICT_TOO_LONG]
    beq[count_too_long#]
    alu[--, t_a, -, VERDICT_NO_BUFFER]
    beq[count_no_buffer#]
    alu[--, t_a, -, VERDICT_UNCOUNTED]
    beq[idle#]
    alu[--, t_a, -, VERDICT_CONSUMED]         // a receive stage took the mpacket in
    beq[idle#]
    alu[--, t_a, -, VERDICT_FORWARD]
    bne[count_index#], defer[1]
    immed[t_a, 0]                             // no verdict: reserved index 0
    br[count_index#], defer[1]
    immed[t_a, BAD_PORT_INDEX]                // a forward to a port that is not there
count_drop:
    alu[t_a, --, B, *l$index1[META_CODE]]
    alu[--, DROP_REASON_MAX, -, t_a]
    bcs[count_index#]                         // 0 <= code <= DROP_REASON_MAX
    immed[t_a, 0]
count_index:
    immed[t_b, DROP_CNT_BASE]
    br[counted#], defer[1]
    alu_shf[t_b, t_b, +, t_a, <<2]
// an exception: the frame as the body left it goes to a buffer of the input port's freelist
// (window -> DRAM, descriptor LW1..LW3 as rx_eth.uc writes them), and its record (handle,
// code << 16 | next_hop) onto the exception ring in my ALLOC turn, so exceptions keep
// arrival order; no buffer: counted under the media's rx_no_buffer, an idle turn
count_exception:
    alu[a0, --, B, *l$index1[META_IN_PORT]]
    alu[b0, --, B, *l$index1[LM_HANDLE]]      // a frame longer than the window has one,
    bne[exc_buffer#]                          // its tail in place already
    alu[a1, a0, +, RX_FL_CHANNEL]
    alu_shf[a1, FREELIST_QUEUE, OR, a1, <<26]
    sram[dequeue, $0, a1, 0], ctx_swap[SIG_IO]
    alu[b0, --, B, $0]                        // the handle (0: the freelist is empty)
    beq[exc_no_buffer#]
exc_buffer:
    alu[$$0, --, B, *l$index0[2]]
    alu[$$1, --, B, *l$index0[3]]
    alu[$$2, --, B, *l$index0[4]]
    alu[$$3, --, B, *l$index0[5]]
    alu[$$4, --, B, *l$index0[6]]
    alu[$$5, --, B, *l$index0[7]]
    alu[$$6, --, B, *l$index0[8]]
    alu[$$7, --, B, *l$index0[9]]
    alu[$$8, --, B, *l$index0[10]]
    alu[$$9, --, B, *l$index0[11]]
    alu[$$10, --, B, *l$index0[12]]
    alu[$$11, --, B, *l$index0[13]]
    alu[$$12, --, B, *l$index0[14]]
    alu[$$13, --, B, *l$index0[15]]
    immed32[a2, K_DATA]
    alu_shf[a2, a2, +, b0, <<BUF_SHIFT]       // DRAM address of the frame's byte 0
    dram[write, $$0, a2, 0, 7], sig_done[SIG_IO]
    alu[b1, --, B, *l$index1[META_LEN]]
    immed[a3, (BUF_DATA_OFFSET << 16)]
    alu[$0, a3, OR, b1]                       // LW1 offset << 16 | buffer_size
    alu_shf[$1, FREELIST_QUEUE, OR, b1, <<16] // LW2 packet_size << 16 | freelist queue
    immed[b2, NO_PORT]
    alu_shf[$2, b2, OR, a0, <<16]             // LW3 input_port << 16 | output_port
    sram[write, $0, b0, META_FIRST_BYTE, META_WRITE_WORDS], sig_done[SIG_TX]
    alu[a3, --, B, *l$index1[META_CODE]]
    alu[b3, --, B, *l$index1[META_NEXT_HOP]]
    alu_shf[b3, --, B, b3, <<16]
    alu_shf[b3, --, B, b3, >>16]
    alu_shf[$15, b3, OR, a3, <<16]            // code << 16 | next_hop & 0xFFFF
    alu[$14, --, B, b0]
    ctx_arb[SIG_IO, SIG_TX]
    load_addr[ret, exc_taken#]
    br[take_alloc#]
exc_taken:
    scratch[put, $14, EXC_RING, 0, EXC_ENTRY_WORDS], ctx_swap[SIG_IO]
    load_addr[ret, free_sop#]
    br[pass_alloc#]
exc_no_buffer:
    immed[t_b, CNT_RX_NO_BUFFER]
    br[counted#], defer[1]
    alu_shf[t_b, t_b, +, a0, <<2]
count_too_long:
    alu[t_a, --, B, *l$index1[META_IN_PORT]]
    immed[t_b, CNT_TOO_LONG]
    br[counted#], defer[1]
    alu_shf[t_b, t_b, +, t_a, <<2]
count_no_buffer:
    alu[t_a, --, B, *l$index1[META_IN_PORT]]
    immed[t_b, CNT_RX_NO_BUFFER]
    br[counted#], defer[1]
    alu_shf[t_b, t_b, +, t_a, <<2]
counted:
    scratch[incr, --, t_b, 0]
idle:
    load_addr[ret, idle_taken#]
    br[take_alloc#]
idle_taken:
    load_addr[ret, free_sop#]
    br[pass_alloc#]
// after the ALLOC turn: a multi-element frame's SOP element is free (every mpacket of the
// frame has passed its ALLOC turn, so no thread reads HANDLE[element] any more)
free_sop:
    immed[*l$index1[LM_MORE], 0]              // also when a frame of two mpackets freed
    alu[t_a, --, B, *l$index1[LM_SOP]]        // its SOP element before the body
    beq[rx_loop#]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, t_a]
    br[rx_loop#], defer[1]
    immed[*l$index1[LM_SOP], 0]

// ---------------------------------------------------------------- tokens (return to ret)
#ifdef RX_STAGE
// compiler/me/abi.py's RX_TURN_LABEL: the body's receive stage is over (the body calls it
// with the return address in ret) or the body is: pass the REG turn if still held
rx_turn_pass:
    br_bset[flags, 4, rx_turn_owed#]
    br_bclr[flags, 3, rx_turn_gone#]
    alu[flags, flags, XOR, 8]
    alu[t_b, --, B, ret]                      // pass_reg keeps t_b
    load_addr[ret, rx_turn_yield#]
    br[pass_reg#]
rx_turn_owed:
    // a body that did not take the turn (a verdict before its stage's media.turn_begin()):
    // every mpacket takes and passes it once, so take it now and pass it at once
    alu[flags, flags, XOR, 16]
    alu[t_b, --, B, ret]                      // take_reg and pass_reg keep t_b
    load_addr[ret, rx_turn_owed_taken#]
    br[take_reg#]
rx_turn_owed_taken:
    immed[t_a, ((SIG_STATUS << 8) | XFER_STATUS)]
    msf[fast_wr, --, fl_csr, t_a]
    load_addr[ret, rx_turn_yield#]
    br[pass_reg#]
rx_turn_yield:
    // yield once: the next context of this ME, which the turn has just woken, runs its
    // receive stage now instead of after my forwarding stages
    ctx_arb[voluntary]
    rtn[t_b]
rx_turn_gone:
    rtn[ret]
// compiler/me/abi.py's RX_TURN_TAKE_LABEL: the body's receive stage starts its turn (at the
// body's entry, or at its media.turn_begin()): take the REG token, re-register
rx_turn_take:
    alu[flags, flags, XOR, 24]                // bit 3: I hold the REG turn; bit 4 cleared
    alu[t_b, --, B, ret]                      // take_reg keeps t_b
    load_addr[ret, rx_turn_taken#]
    br[take_reg#]
rx_turn_taken:
    immed[t_a, ((SIG_STATUS << 8) | XFER_STATUS)]
    msf[fast_wr, --, fl_csr, t_a]
    rtn[t_b]
#endif
take_reg:
    br_bset[flags, 0, take_reg_w#]
    ctx_arb[SIG_TOK_REG]
    rtn[ret]
take_reg_w:
    immed[$15, 0]
    scratch[swap, $15, tok_w, 0, 1], ctx_swap[SIG_TX]
    alu[--, --, B, $15]
    bne[took_reg_w#]
    ctx_arb[voluntary]
    br[take_reg_w#]
took_reg_w:
    rtn[ret]
pass_reg:
    alu_shf[t_a, nextctx, OR, SIG_TOK_REG, <<3]
    br_bset[flags, 1, pass_reg_nn#]
    br_bset[flags, 2, pass_reg_w#]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    rtn[ret]
pass_reg_nn:
    local_csr_wr[NEXT_NEIGHBOR_SIGNAL, t_a]
    rtn[ret]
pass_reg_w:
    immed[$15, 1]
    scratch[write, $15, tok_w, 0, 1], ctx_swap[SIG_TX]
    rtn[ret]
take_alloc:
    br_bset[flags, 0, take_alloc_w#]
    ctx_arb[SIG_TOK_ALLOC]
    rtn[ret]
take_alloc_w:
    immed[$13, 0]
    scratch[swap, $13, tok_w, 4, 1], ctx_swap[SIG_TX]
    alu[--, --, B, $13]
    bne[took_alloc_w#]
    ctx_arb[voluntary]
    br[take_alloc_w#]
took_alloc_w:
    rtn[ret]
pass_alloc:
    alu_shf[t_a, nextctx, OR, SIG_TOK_ALLOC, <<3]
    br_bset[flags, 1, pass_alloc_nn#]
    br_bset[flags, 2, pass_alloc_w#]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    rtn[ret]
pass_alloc_nn:
    local_csr_wr[NEXT_NEIGHBOR_SIGNAL, t_a]
    rtn[ret]
pass_alloc_w:
    immed[$13, 1]
    scratch[write, $13, tok_w, 4, 1], ctx_swap[SIG_TX]
    rtn[ret]
