// fwd.uc -- the forwarding MEs' dispatch loop around a compiled pipeline body
// (docs/me-backend.md, "Dispatch and link"; the body contract: "The body fragment").
// The linker (compiler/me/link.py) writes two files next to each other and assembles this
// one with them on the include path:
//   layout.h  the runtime's layout for this program (where rings, buffers, counters and
//             the local-memory areas are), the dispatch numbers (WINDOW_QW, DISPATCH_LM_BYTE,
//             FWD_PER_PORT, DROP_CNT_BASE, ...) and the overrides of router4.h;
//   body.uc   the compiled body: body_entry# ... br[body_exit#].
//
// Mapping: FWD_PER_PORT = N forwarding MEs per input port, a chain of adjacent MEs
// FWD_FIRST_ME + N p + i, i = 0 .. N - 1 (the chain position).  Receive (rx_eth.uc) deals
// the port's good frames round robin to the port's N RX rings, ring N p + i feeding ME i
// of the chain: frame k of the port goes to ME k mod N.  Inside an ME the 8 threads take
// frames off the ring in context order (token SIG_TOK_GET) and take their put turns in the
// same order (token SIG_TOK_PUT); a thread that finds the ring empty still takes its put
// turn (an idle turn), so put order = get order = the ME's frame order.
//
// The verdicts are merged back into arrival order along the chain (router4's A/B pair,
// generalised): every frame's verdict becomes a two-word record (see TAG_*); ME i, in the
// put turn of its own frame, first passes on the records of the i frames that precede it
// (ME 0 .. i - 1's, already merged by ME i - 1, read from its next-neighbour ring), then its
// own; ME i < N - 1 writes them to ME i + 1's next-neighbour ring, the last ME applies them
// (TX ring put, exception ring put).  A shared local-memory word (SHARED_LM_BYTE) counts
// the records passed since the ME's own last frame, so an idle turn can pass on upstream
// records that precede the ME's next frame (the port's last frames leave without waiting
// for more).  Drops are applied at once by the deciding ME (their order does not matter)
// and travel as empty records.  So each port's frames leave, and its exceptions reach the
// exception ring, in arrival order.  N = 1 is the same code with no upstream.
//
// Per frame, each thread:
//   1. (get turn) takes (handle, length) off its RX ring;
//   2. reads the header window (packet bytes 0 .. WINDOW_QW * 8 - 1) from DRAM into
//      $$0.. in one burst, and sets up the metadata at LM_ADDR_1: in_port, len, words
//      2..11 zero, word META_DRAM_ADDR the DRAM byte address of packet byte 0;
//   3. runs the body;
//   4. turns meta word META_VERDICT into its record: forward -> (handle | TAG_FORWARD,
//      meta.out_port) (an out_port >= PORTS is dropped as reserved reason BAD_PORT_INDEX);
//      drop -> count reason meta word META_CODE (1..DROP_REASON_MAX, else reserved index
//      0), free the buffer, record (0, 0); exception -> (handle | TAG_EXCEPTION,
//      code << 16 | next_hop & 0xFFFF); anything else -> dropped, counted at index 0;
//   5. (put turn) passes on / applies the upstream records, then its own.
// The last ME applies a turn's TX puts from $0.. (one transfer register per record, no
// wait in the turn), then, after passing the token, waits for a scratch read issued behind
// them (the scratch unit completes one ME's commands in issue order) before the registers
// are the body's again.  Exceptions are put from $14, $15 and waited for at once (rare).
// The dispatch keeps its state in a12..a15, b12..b15, signals 11..15 and metadata words
// 13..15 (the body's ABI, compiler/me/abi.py); every other register is scratch here and
// the body's there.

#include "layout.h"
#include "router4.h"

.me 2 3

// ---------------------------------------------------------------- signals (11..15)
#define SIG_TOK_GET 11    // my turn to take a frame from my RX ring
#define SIG_TOK_PUT 12    // my turn to pass on / apply verdicts
#define SIG_IO 13         // RX ring get, header window read, drop's free, exception put
#define SIG_PUT 14        // the put turn's TX puts done (a scratch read behind them)

// ---------------------------------------------------------------- registers (survive the body)
#define tok_get_next a12  // SAME_ME_SIGNAL value: SIG_TOK_GET to context + 1
#define tok_put_next a13  // SAME_ME_SIGNAL value: SIG_TOK_PUT to context + 1
#define ring a14          // my RX ring - RX_RING_BASE = ME - FWD_FIRST_ME = N * port + position
#define ring_test a15     // address of my ring's "empty?" test
#define handle b12
#define port b13          // input port
#define position b14      // my place in the port's chain, 0 .. FWD_PER_PORT - 1

// ---------------------------------------------------------------- records
// word 0: 0 (nothing to do: dropped) or handle | tag (handles are 32-byte aligned);
// word 1: the output port (forward) or code << 16 | next_hop (exception)
#define TAG_MASK 0x1F
#define TAG_FORWARD 1
#define TAG_EXCEPTION 2
#define TAG_EXCEPTION_BIT 1

// metadata word private to the dispatch (LM_ADDR_1)
#define LM_SPILL 14       // byte address of my spill area (LM_ADDR_0 in the body)

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[b0, 0]                        // ME number << 3 | context
    alu_shf[b1, --, B, b0, >>3]         // ME number 0x00..0x07, 0x10..0x17 (two clusters)
    alu_shf[a1, --, B, b1, >>1]
    alu[a1, a1, AND, 8]
    alu[b1, b1, AND, 7]
    alu[b1, a1, OR, b1]                 // ME index 0..15: next-neighbour order
    alu[b1, b1, -, FWD_FIRST_ME]
    alu[ring, --, B, b1]
    load_addr[a1, ring_tests#]
    alu_shf[ring_test, a1, +, b1, <<1]  // two instructions per test
    immed[port, 0]
split:                                  // port = ring / N, position = ring mod N
    alu[--, b1, -, FWD_PER_PORT]
    blt[split_done#]
    alu[b1, b1, -, FWD_PER_PORT]
    br[split#], defer[1]
    alu[port, port, +, 1]
split_done:
    alu[position, --, B, b1]
    alu[b2, b0, AND, 7]                 // context
    alu[b3, b2, +, 1]
    alu[b3, b3, AND, 7]
    immed[a2, (SIG_TOK_GET << 3)]
    alu[tok_get_next, b3, OR, a2]
    immed[a2, (SIG_TOK_PUT << 3)]
    alu[tok_put_next, b3, OR, a2]
    // this context's metadata (LM_ADDR_1) and spill area: 32 words each context; LM_ADDR_0
    // points at the shared word outside the body
    alu_shf[b4, --, B, b2, <<7]
    immed[a3, DISPATCH_LM_BYTE]
    alu[b5, a3, +, b4]
    local_csr_wr[ACTIVE_LM_ADDR_1, b5]
    immed[a3, SHARED_LM_BYTE]
    local_csr_wr[ACTIVE_LM_ADDR_0, a3]
    immed[a3, 64]
    alu[b5, a3, +, b5]
    alu[*l$index1[LM_SPILL], --, B, b5]
    // context 0 starts holding both tokens and clears the shared count
    br!=ctx[0, loop#]
    immed[*l$index0[0], 0]
    immed[b6, (SIG_TOK_GET << 3)]
    local_csr_wr[SAME_ME_SIGNAL, b6]
    immed[b6, (SIG_TOK_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, b6]

// ================================================================ per frame
loop:
    ctx_arb[SIG_TOK_GET]
    jump[ring_test, ring_tests#]
ring_tests:                             // the state names a ring statically: one per ring
    br_inp_state[RX_EMPTY_0, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_1, empty#]
    br[get#]
#ifdef RX_EMPTY_2
    br_inp_state[RX_EMPTY_2, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_3, empty#]
    br[get#]
#endif
#ifdef RX_EMPTY_4
    br_inp_state[RX_EMPTY_4, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_5, empty#]
    br[get#]
#endif
#ifdef RX_EMPTY_6
    br_inp_state[RX_EMPTY_6, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_7, empty#]
    br[get#]
#endif
get:
    scratch[get, $0, ring, RX_RING_BASE, RX_ENTRY_WORDS], sig_done[SIG_IO]
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
    alu[a1, --, B, *l$index1[LM_SPILL]]
    local_csr_wr[ACTIVE_LM_ADDR_0, a1]  // the body's spill area
    ctx_arb[SIG_IO]
    alu[handle, --, B, $0]
    immed32[a0, K_DATA]
    alu_shf[a0, a0, +, handle, <<BUF_SHIFT]   // DRAM byte address of packet byte 0
#ifdef WINDOW_QW
    dram[read, $$0, a0, 0, WINDOW_QW], sig_done[SIG_IO]
#endif
    alu[*l$index1[META_IN_PORT], --, B, port]
    alu[*l$index1[META_LEN], --, B, $1]
    immed[*l$index1[2], 0]
    immed[*l$index1[3], 0]
    immed[*l$index1[4], 0]
    immed[*l$index1[5], 0]
    immed[*l$index1[6], 0]
    immed[*l$index1[7], 0]
    immed[*l$index1[8], 0]
    immed[*l$index1[9], 0]
    immed[*l$index1[10], 0]
    immed[*l$index1[11], 0]
    alu[*l$index1[META_DRAM_ADDR], --, B, a0]
#ifdef WINDOW_QW
    ctx_arb[SIG_IO]
#endif
    br[body_entry#]

#include "body.uc"

// ================================================================ the verdict -> my record (b2, b3)
body_exit:
    immed[a2, SHARED_LM_BYTE]
    local_csr_wr[ACTIVE_LM_ADDR_0, a2]  // the shared count, from the put turn on
    alu[a0, --, B, *l$index1[META_VERDICT]]
    alu[a1, --, B, *l$index1[META_CODE]]
    alu[--, a0, -, VERDICT_FORWARD]
    beq[forward#]
    alu[--, a0, -, VERDICT_EXCEPTION]
    beq[exception#]
    alu[--, a0, -, VERDICT_DROP]
    bne[bad_verdict#]
    alu[b0, a1, -, 1]                   // reason ids 1..DROP_REASON_MAX count as themselves
    immed[a2, DROP_REASON_MAX]
    alu[--, b0, -, a2]
    bcc[drop_count#]
bad_verdict:                            // no verdict, or one the runtime does not know
    immed[a1, 0]
drop_count:                             // a1: counter index
    immed[a2, DROP_CNT_BASE]
    alu_shf[b0, --, B, a1, <<2]
    scratch[incr, --, a2, b0]
    alu_shf[b1, --, B, handle, >>26]    // the handle's channel, queue FREELIST_QUEUE
    alu_shf[b1, FREELIST_QUEUE, OR, b1, <<26]
    alu[$15, --, B, handle]
    sram[enqueue, $15, b1, 0], ctx_swap[SIG_IO]
    immed[b2, 0]
    br[own_turn#], defer[1]
    immed[b3, 0]

forward:
    alu[b3, --, B, *l$index1[META_OUT_PORT]]
    alu[--, b3, -, PORTS]
    bcs[bad_port#]
    br[own_turn#], defer[1]
    alu[b2, handle, OR, TAG_FORWARD]
bad_port:
    br[drop_count#], defer[1]
    immed[a1, BAD_PORT_INDEX]

exception:
    alu_shf[b0, --, B, *l$index1[META_NEXT_HOP], <<16]
    alu_shf[b0, --, B, b0, >>16]        // next_hop & 0xFFFF
    alu_shf[b3, b0, OR, a1, <<16]       // code << 16 | next_hop
    alu[b2, handle, OR, TAG_EXCEPTION]

own_turn:
    immed[b4, 1]                        // a turn with a frame of my own
    ctx_arb[SIG_TOK_PUT]
    br[turn#]

// ================================================================ the put turn
// Ring empty: an idle turn, in the same order (passes on upstream records that precede my
// next frame, if they are there).
empty:
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
    immed[a2, SHARED_LM_BYTE]
    local_csr_wr[ACTIVE_LM_ADDR_0, a2]
    immed[b4, 0]
    ctx_arb[SIG_TOK_PUT]

// b4: 1 with a frame of my own (record b2, b3), 0 idle.  *l$index0[0]: upstream records
// passed since my last own frame; position of them precede each of my frames.
turn:
    immed[b6, 0]                        // transfer registers used (last ME): 4 x records
upstream:
    alu[a0, --, B, *l$index0[0]]
    alu[--, position, -, a0]
    beq[own#]                           // my own frame is next
up_first:
    br_inp_state[NN_EMPTY, up_empty#]
    alu[a0, --, B, *n$index++]
up_second:                              // the writer puts both words in one turn
    br_inp_state[NN_EMPTY, up_second_wait#]
    alu[a1, --, B, *n$index++]
    alu[*l$index0[0], *l$index0[0], +, 1]
    br[emit#], defer[1]
    immed[b5, 0]                        // then more upstream
up_second_wait:
    ctx_arb[voluntary]
    br[up_second#]
up_empty:
    alu[--, b4, -, 0]
    beq[turn_done#]                     // idle: nothing more to pass on now
    ctx_arb[voluntary]                  // the frame before mine is not decided yet: wait,
    br[up_first#]                       // keeping the turn
own:
    alu[--, b4, -, 0]
    beq[turn_done#]
    immed[*l$index0[0], 0]
    alu[a0, --, B, b2]
    alu[a1, --, B, b3]
    immed[b5, 1]                        // then the turn is done

// a record (a0, a1): the last ME applies it, the others pass it on; then b5 ? done : upstream
emit:
    alu[--, position, -, LAST_POSITION]
    beq[apply#]
pass_first:
    br_inp_state[NN_FULL, pass_first_full#]   // only this thread writes the ring now
    alu[*n$index++, --, B, a0]
pass_second:
    br_inp_state[NN_FULL, pass_second_full#]
    alu[*n$index++, --, B, a1]
emitted:
    alu[--, b5, -, 0]
    beq[upstream#]
    br[turn_done#]
pass_first_full:
    ctx_arb[voluntary]                  // the next ME is behind: wait, keeping the turn
    br[pass_first#]
pass_second_full:
    ctx_arb[voluntary]
    br[pass_second#]

apply:
    alu[--, a0, -, 0]
    beq[emitted#]                       // dropped: done already
    br_bset[a0, TAG_EXCEPTION_BIT, apply_exception#]
    load_addr[a2, fwd_slots#]           // forward: TX put from transfer register b6 / 4
    alu[a2, a2, +, b6]
    jump[a2, fwd_slots#]
apply_exception:
    alu[$14, a0, AND~, TAG_MASK]
    alu[$15, --, B, a1]
    scratch[put, $14, EXC_RING, 0, EXC_ENTRY_WORDS], ctx_swap[SIG_IO]
    br[emitted#]
slot_used:
    br[emitted#], defer[1]
    alu[b6, b6, +, 4]

fwd_slots:                              // four instructions each (the jump's stride)
    alu[$0, a0, AND~, TAG_MASK]
    scratch[put, $0, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$1, a0, AND~, TAG_MASK]
    scratch[put, $1, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$2, a0, AND~, TAG_MASK]
    scratch[put, $2, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$3, a0, AND~, TAG_MASK]
    scratch[put, $3, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$4, a0, AND~, TAG_MASK]
    scratch[put, $4, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$5, a0, AND~, TAG_MASK]
    scratch[put, $5, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$6, a0, AND~, TAG_MASK]
    scratch[put, $6, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop
    alu[$7, a0, AND~, TAG_MASK]
    scratch[put, $7, a1, TX_RING_BASE, 1]
    br[slot_used#]
    nop

turn_done:
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    alu[--, b6, -, 0]
    beq[loop#]                          // no TX put this turn
    immed[a0, 0]
    scratch[read, $15, a0, 0, 1], sig_done[SIG_PUT]   // completes after the TX puts
    ctx_arb[SIG_PUT]
    br[loop#]
