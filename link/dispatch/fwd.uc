// fwd.uc -- the forwarding MEs' dispatch loop around a compiled pipeline body
// (docs/me-backend.md, "Dispatch and link"; the body contract: "The body fragment").
// The linker (npkit.link) writes two files next to each other and assembles this
// one with them on the include path:
//   layout.h  the runtime's layout for this program (where rings, buffers, counters and
//             the local-memory areas are), the dispatch numbers (WINDOW_QW, DISPATCH_LM_BYTE,
//             FWD_PER_PORT, DROP_CNT_BASE, ...), what the body needs of the metadata
//             (META_CLEAR_k, META_IN_PORT_PER_FRAME, BODY_USES_LM0, BODY_ENTRY_FIRST) and the
//             overrides of router4.h;
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
// generalised): every frame's verdict becomes a record (see TAG_*); ME i, in the put turn
// of its own frame, first passes on the records of the i frames that precede it (ME
// 0 .. i - 1's, already merged by ME i - 1, read from its next-neighbour ring), then its
// own; ME i < N - 1 writes them to ME i + 1's next-neighbour ring, the last ME applies them
// (TX ring put, exception ring put).  A shared local-memory word (SHARED_LM_BYTE) counts
// the upstream records still owed before the ME's next frame (position after each own
// frame, one less per record passed), so an idle turn can pass on upstream records that
// precede the ME's next frame (the port's last frames leave without waiting for more).
// Drops are applied at once by the deciding ME (their order does not matter) and travel as
// empty records.  So each port's frames leave, and its exceptions reach the exception ring,
// in arrival order.  N = 1 is the same code with no upstream.
//
// Per frame, each thread:
//   1. (get turn) takes (handle, length) off its RX ring;
//   2. reads the header window (packet bytes 0 .. WINDOW_QW * 8 - 1) from DRAM into
//      $$0.. in one burst, and sets up the metadata at LM_ADDR_1: len, word META_DRAM_ADDR
//      the DRAM byte address of packet byte 0, and zero in the words META_CLEAR_k, the ones
//      the body may read before it writes them and may write (init zeroes words 2..11 once,
//      so a word the body never writes stays 0; in_port is written once at init unless
//      the body may write it);
//   3. runs the body;
//   4. turns meta word META_VERDICT into its record: forward -> handle | out_port << 2 |
//      TAG_FORWARD (an out_port >= PORTS is dropped as reserved reason BAD_PORT_INDEX);
//      drop -> count reason meta word META_CODE (1..DROP_REASON_MAX, else reserved index
//      0), free the buffer, record 0; exception -> handle | TAG_EXCEPTION and a second
//      word code << 16 | next_hop & 0xFFFF; anything else -> dropped, counted at index 0;
//   5. (put turn) passes on / applies the upstream records, then its own.
// The last ME applies a TX put from a transfer register of its own per record of the turn
// (no wait inside the turn), then, after passing the token, waits for a scratch read issued
// behind them (the scratch unit completes one ME's commands in issue order) before the
// registers are the body's again.  Exceptions are put from $14, $15 and waited for at once
// (rare).  The dispatch keeps its state in a12..a15, b12..b15, signals 11..15 and metadata
// words 13..15 (the body's ABI, compiler/me/abi.py); every other register is scratch here
// and the body's there.

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
#define handle b12        // the frame's handle | TAG_FORWARD (the tag bits are clear in a handle)
#define port b13          // input port
#define position b14      // my place in the port's chain, 0 .. FWD_PER_PORT - 1
#define k_data b15        // K_DATA: DRAM address of packet byte 0 = K_DATA + handle << BUF_SHIFT

// ---------------------------------------------------------------- records
// One word: 0 (dropped: nothing to do) or handle | tag (handles are 32-byte aligned);
// forward: handle | out_port << OUT_PORT_SHIFT | TAG_FORWARD; exception: handle |
// TAG_EXCEPTION followed by a second word, code << 16 | next_hop & 0xFFFF.
#define TAG_MASK 0x1F
#define TAG_FORWARD 1
#define TAG_EXCEPTION 2
#define TAG_EXCEPTION_BIT 1
#define TAG_FORWARD_BIT 0     // clear: dropped (0) or an exception
#define OUT_PORT_SHIFT 2
#define OUT_PORT_MASK 7   // PORTS <= 8

// metadata words private to the dispatch (LM_ADDR_1)
#define LM_SHARED 13      // byte address of the shared count (LM_ADDR_0 outside the body)
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
    immed32[k_data, K_DATA]
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
    immed[a3, SHARED_LM_BYTE]
    alu[*l$index1[LM_SHARED], --, B, a3]
    // metadata words 2..11 are 0 from here on unless the body writes them (the per-frame
    // set-up zeroes again only the ones it may write and read first: META_CLEAR_k)
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
    alu[*l$index1[META_IN_PORT], --, B, port]   // this ME serves one input port
    // context 0 starts holding both tokens and sets the shared count: position upstream
    // records precede this ME's first frame
    br!=ctx[0, loop#]
    alu[*l$index0[0], --, B, position]
    immed[b6, (SIG_TOK_GET << 3)]
    local_csr_wr[SAME_ME_SIGNAL, b6]
    immed[b6, (SIG_TOK_PUT << 3)]
    br[loop#], defer[1]
    local_csr_wr[SAME_ME_SIGNAL, b6]

// ---------------------------------------------------------------- the last ME's put turn
// (here to fall through into loop).  b2: my record.
last_turn:
    alu[--, --, B, *l$index0[0]]
    beq[last_own#]                      // none owed: N = 1, or an idle turn passed them on
#ifdef FWD_CHAIN_LONG
    br[upstream#], defer[1]
    immed[b4, 1]                        // my own turn: wait for each, then my own record
#else
    // N = 2: exactly one upstream record precedes my frame, so the count stays 1 (no
    // position tests, no count update: the general code's work, specialised)
last_up:
    br_inp_state[NN_EMPTY, last_up_wait#]
last_up_ready:
    alu[a0, --, B, *n$index++]
    br_bclr[a0, TAG_FORWARD_BIT, last_up_other#]
    alu_shf[a1, OUT_PORT_MASK, AND, a0, >>OUT_PORT_SHIFT]
    alu[$0, a0, AND~, TAG_MASK]
    scratch[put, $0, a1, TX_RING_BASE, 1]
#endif
own_apply:                              // b2: my record
    br_bclr[b2, TAG_FORWARD_BIT, own_apply_other#]
    alu[$7, handle, AND~, TAG_MASK]
    scratch[put, $7, a5, TX_RING_BASE, 1]
apply_done:
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    scratch[read, $15, 0, 0, 1], ctx_swap[SIG_PUT]   // completes after the TX puts

// ================================================================ per frame
loop:
    ctx_arb[SIG_TOK_GET]
    jump[ring_test, ring_tests#]
ring_tests:                             // the state names a ring statically: one per ring
                                        // (two instructions each: the jump's stride)
    br_!inp_state[RX_EMPTY_0, get#]
    br[empty#]
    br_!inp_state[RX_EMPTY_1, get#]
    br[empty#]
#ifdef RX_EMPTY_2
    br_!inp_state[RX_EMPTY_2, get#]
    br[empty#]
    br_!inp_state[RX_EMPTY_3, get#]
    br[empty#]
#endif
#ifdef RX_EMPTY_4
    br_!inp_state[RX_EMPTY_4, get#]
    br[empty#]
    br_!inp_state[RX_EMPTY_5, get#]
    br[empty#]
#endif
#ifdef RX_EMPTY_6
    br_!inp_state[RX_EMPTY_6, get#]
    br[empty#]
    br_!inp_state[RX_EMPTY_7, get#]
    br[empty#]
#endif
get:
    scratch[get, $0, ring, RX_RING_BASE, RX_ENTRY_WORDS], sig_done[SIG_IO]
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
#ifdef BODY_USES_LM0
    local_csr_wr[ACTIVE_LM_ADDR_0, *l$index1[LM_SPILL]]   // the body's spill area
#endif
    ctx_arb[SIG_IO]
    alu[handle, $0, OR, TAG_FORWARD]
    alu_shf[a0, k_data, +, $0, <<BUF_SHIFT]   // DRAM byte address of packet byte 0
#ifdef WINDOW_QW
    dram[read, $$0, a0, 0, WINDOW_QW], sig_done[SIG_IO]
#endif
#ifdef META_IN_PORT_PER_FRAME
    alu[*l$index1[META_IN_PORT], --, B, port]
#endif
    alu[*l$index1[META_LEN], --, B, $1]
#ifdef META_CLEAR_2
    immed[*l$index1[2], 0]
#endif
#ifdef META_CLEAR_3
    immed[*l$index1[3], 0]
#endif
#ifdef META_CLEAR_4
    immed[*l$index1[4], 0]
#endif
#ifdef META_CLEAR_5
    immed[*l$index1[5], 0]
#endif
#ifdef META_CLEAR_6
    immed[*l$index1[6], 0]
#endif
#ifdef META_CLEAR_7
    immed[*l$index1[7], 0]
#endif
#ifdef META_CLEAR_8
    immed[*l$index1[8], 0]
#endif
#ifdef META_CLEAR_9
    immed[*l$index1[9], 0]
#endif
#ifdef META_CLEAR_10
    immed[*l$index1[10], 0]
#endif
#ifdef META_CLEAR_11
    immed[*l$index1[11], 0]
#endif
    alu[*l$index1[META_DRAM_ADDR], --, B, a0]
#ifdef WINDOW_QW
    ctx_arb[SIG_IO]
#endif
#ifndef BODY_ENTRY_FIRST
    br[body_entry#]
#endif

#include "body.uc"

// ================================================================ the verdict -> my record (b2)
body_exit:
#ifdef BODY_USES_LM0
    local_csr_wr[ACTIVE_LM_ADDR_0, *l$index1[LM_SHARED]]  // the shared count, from the put turn on
#endif
#ifdef PORTS_SHIFT
    // PORTS a power of two: forward with a good port <=> (verdict ^ forward) | out_port >>
    // log2(PORTS) == 0, one test (the record is built in the defer slot, every other
    // path sets b2 again)
    alu[a5, --, B, *l$index1[META_OUT_PORT]]
    alu[b0, *l$index1[META_VERDICT], XOR, VERDICT_FORWARD]
    alu_shf[--, b0, OR, a5, >>PORTS_SHIFT]
    bne[not_forward_or_bad#], defer[1]
    alu_shf[b2, handle, OR, a5, <<OUT_PORT_SHIFT]
#else
    alu[--, *l$index1[META_VERDICT], -, VERDICT_FORWARD]
    bne[not_forward#]
    alu[a5, --, B, *l$index1[META_OUT_PORT]]
    alu[--, a5, -, PORTS]
    bcs[bad_port#]
    alu_shf[b2, handle, OR, a5, <<OUT_PORT_SHIFT]
#endif

// ================================================================ the put turn of my frame
// b2: my record (a5: the out_port of a forward; b3: the second word of an exception).
// *l$index0[0]: upstream records still owed before my frame.
own_turn:
    ctx_arb[SIG_TOK_PUT]
    br=byte[position, 0, LAST_POSITION, last_turn#]
#ifdef FWD_CHAIN_LONG
    alu[--, --, B, *l$index0[0]]
    bne[own_upstream#]
    alu[*l$index0[0], --, B, position]  // none owed (the first ME, or passed on when idle)
#endif
// Not the last ME: pass my record on (N <= 2: the first ME, which never owes upstream
// records: its count stays 0)
own_pass:
    br_inp_state[NN_FULL, own_pass_full#]
    br_bset[b2, TAG_EXCEPTION_BIT, own_pass_exception#]
    br[loop#], defer[2]                 // not the last ME: nothing to wait for
    alu[*n$index++, --, B, b2]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]

#ifdef FWD_CHAIN_LONG
own_upstream:
    immed[b4, 1]                        // upstream records first, then my own
#endif
// Upstream records (*l$index0[0] > 0 of them still precede my next frame).  b4 bit 0: set
// in the turn of my own frame (wait for each, then my own record), clear in an idle turn
// (pass on the ones that are there; b4 >> 1: the count owed when the turn began).
upstream:
    br_inp_state[NN_EMPTY, up_empty#]
    alu[a0, --, B, *n$index++]
    br!=byte[position, 0, LAST_POSITION, up_pass#]
up_apply:                               // the last ME applies it
    br_bclr[a0, TAG_FORWARD_BIT, up_apply_other#]
    alu_shf[a1, OUT_PORT_MASK, AND, a0, >>OUT_PORT_SHIFT]
#ifdef FWD_CHAIN_LONG
    // up to LAST_POSITION upstream records in one turn: the n-th from the end uses $(n - 1)
    alu[b0, --, B, *l$index0[0]]
    load_addr[a2, up_slots#]
    alu_shf[a2, a2, +, b0, <<2]
    jump[a2, up_slots#]
#else
    alu[$0, a0, AND~, TAG_MASK]         // one upstream record per turn at most
    scratch[put, $0, a1, TX_RING_BASE, 1]
#endif
up_next:
    alu[*l$index0[0], *l$index0[0], -, 1]
    bne[upstream#]
    br_bclr[b4, 0, idle_done#]          // an idle turn: done

// ---------------------------------------------------------------- my own record
own_record:
    alu[*l$index0[0], --, B, position]  // owed before my next frame
    br=byte[position, 0, LAST_POSITION, own_apply#]
    br[own_pass#]

last_own:                               // the last ME, none owed
    br[own_apply#], defer[1]
    alu[*l$index0[0], --, B, position]  // owed before my next frame
#ifndef FWD_CHAIN_LONG
last_up_other:                          // not a forward: the general code, in my own turn
    br[up_apply_other#], defer[1]
    immed[b4, 1]
#endif

own_apply_other:
    br=byte[b2, 0, 0, apply_done#]      // dropped: done already
own_apply_exception:
    alu[a0, --, B, b2]
    alu[a1, --, B, b3]
    br[apply_exception#], defer[1]
    immed[b5, 1]                        // then apply_done
own_pass_exception:                     // the writer puts both words in one turn
    alu[*n$index++, --, B, b2]
own_pass_second:
    br_inp_state[NN_FULL, own_pass_second_full#]
    alu[*n$index++, --, B, b3]
pass_done:                              // not the last ME: nothing to wait for
    br[loop#], defer[1]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]

// ---------------------------------------------------------------- upstream, the rest
up_pass:                                // not the last ME: pass it on
    br_inp_state[NN_FULL, up_pass_full#]   // only this thread writes the ring now
    alu[*n$index++, --, B, a0]
    br_bclr[a0, TAG_EXCEPTION_BIT, up_next#]
up_pass_second:                         // an exception's second word (written in the same turn)
    br_inp_state[NN_EMPTY, up_pass_second_wait#]
    alu[a1, --, B, *n$index++]
up_pass_second_put:
    br_inp_state[NN_FULL, up_pass_second_full#]
    br[up_next#], defer[1]
    alu[*n$index++, --, B, a1]

up_apply_other:
    br=byte[a0, 0, 0, up_next#]         // dropped: done already
up_apply_exception:
    br_inp_state[NN_EMPTY, up_apply_second_wait#]
    alu[a1, --, B, *n$index++]
    br[apply_exception#], defer[1]
    immed[b5, 0]                        // then up_next

#ifdef FWD_CHAIN_LONG
up_slots:                               // four instructions each (the jump's stride)
    nop                                 // owed 0: not reached
    nop
    nop
    nop
    alu[$0, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $0, a1, TX_RING_BASE, 1]
    nop
    alu[$1, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $1, a1, TX_RING_BASE, 1]
    nop
    alu[$2, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $2, a1, TX_RING_BASE, 1]
    nop
#ifdef FWD_CHAIN_LONGER
    // chains of 5..8 MEs (one receive port, npkit.link plan.py): up to 7 records a turn
    alu[$3, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $3, a1, TX_RING_BASE, 1]
    nop
    alu[$4, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $4, a1, TX_RING_BASE, 1]
    nop
    alu[$5, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $5, a1, TX_RING_BASE, 1]
    nop
    alu[$6, a0, AND~, TAG_MASK]
    br[up_next#], defer[1]
    scratch[put, $6, a1, TX_RING_BASE, 1]
    nop
#endif
#endif

// an exception record (a0, a1) to the exception ring, at once; then b5 ? apply_done : up_next
apply_exception:
    alu[$14, a0, AND~, TAG_MASK]
    alu[$15, --, B, a1]
    scratch[put, $14, EXC_RING, 0, EXC_ENTRY_WORDS], ctx_swap[SIG_IO]
    br=byte[b5, 0, 0, up_next#]
    br[apply_done#]

// ================================================================ other verdicts
#ifdef PORTS_SHIFT
not_forward_or_bad:                     // b0: verdict ^ forward
    alu[--, --, B, b0]
    beq[bad_port#]
#endif
not_forward:
    alu[a0, --, B, *l$index1[META_VERDICT]]
    alu[a1, --, B, *l$index1[META_CODE]]
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
#ifdef RX_FL_PAIRS
    alu[a2, port, AND, 1]               // 4 ports: two freelists a channel, queue port & 1
    alu_shf[b1, a2, OR, b1, <<26]
#else
    alu_shf[b1, FREELIST_QUEUE, OR, b1, <<26]
#endif
    alu[$15, handle, AND~, TAG_MASK]
    sram[enqueue, $15, b1, 0], ctx_swap[SIG_IO]
    br[own_turn#], defer[1]
    immed[b2, 0]

bad_port:
    br[drop_count#], defer[1]
    immed[a1, BAD_PORT_INDEX]

exception:
    alu_shf[b0, --, B, *l$index1[META_NEXT_HOP], <<16]
    alu_shf[b0, --, B, b0, >>16]        // next_hop & 0xFFFF
    alu_shf[b3, b0, OR, a1, <<16]       // code << 16 | next_hop
    br[own_turn#], defer[1]
    alu[b2, handle, XOR, (TAG_FORWARD ^ TAG_EXCEPTION)]   // handle | TAG_EXCEPTION

// ================================================================ ordering waits
// Keeping the turn until a neighbour catches up (bench/compiled_vs_hand.py counts the code
// from order_wait on as polling, not work).
order_wait:
up_empty:
    br_bclr[b4, 0, idle_empty#]         // idle: nothing more to pass on now
    ctx_arb[voluntary]                  // the frame before mine is not decided yet: wait,
    br[upstream#]                       // keeping the turn
up_pass_second_wait:
    ctx_arb[voluntary]
    br[up_pass_second#]
up_apply_second_wait:
    ctx_arb[voluntary]
    br[up_apply_exception#]
up_pass_full:
    ctx_arb[voluntary]                  // the next ME is behind: wait, keeping the turn
    br[up_pass#]
up_pass_second_full:
    ctx_arb[voluntary]
    br[up_pass_second_put#]
own_pass_full:
    ctx_arb[voluntary]
    br[own_pass#]
own_pass_second_full:
    ctx_arb[voluntary]
    br[own_pass_second#]
#ifndef FWD_CHAIN_LONG
last_up_wait:                           // the frame before mine is not decided yet
    ctx_arb[voluntary]                  // (its own test: the retries are polling)
    br_inp_state[NN_EMPTY, last_up_wait#]
    br[last_up_ready#]
#endif

// ================================================================ an idle turn
// Ring empty: take the put turn all the same, in the same order (pass on upstream records
// that precede my next frame, if they are there).
empty:
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
    ctx_arb[SIG_TOK_PUT]
    alu[b4, --, B, *l$index0[0]]
    beq[idle_nothing#]                  // none owed: nothing to pass on
    br[upstream#], defer[1]
    alu_shf[b4, --, B, b4, <<1]         // bit 0 clear: idle
idle_empty:                             // the next upstream record is not there yet
    alu_shf[--, b4, -, *l$index0[0], <<1]
    beq[idle_nothing#]                  // none passed on in this turn
idle_done:                              // some passed on: the last ME waits for their puts
    br=byte[position, 0, LAST_POSITION, apply_done#]
idle_nothing:                           // (pass_done's code: the benchmark counts it as polling)
    br[loop#], defer[1]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
