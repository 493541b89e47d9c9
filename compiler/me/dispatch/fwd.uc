// fwd.uc -- the forwarding ME's dispatch loop around a compiled pipeline body
// (docs/me-backend.md, "Dispatch and link"; the body contract: "The body fragment").
// The linker (compiler/me/link.py) writes two files next to each other and assembles this
// one with them on the include path:
//   layout.h  the runtime's layout for this program (where rings, buffers, counters and
//             the local-memory areas are), the dispatch numbers (WINDOW_QW, DISPATCH_LM_BYTE,
//             DROP_CNT_BASE, ...) and the overrides of router4.h;
//   body.uc   the compiled body: body_entry# ... br[body_exit#].
//
// Mapping: one forwarding ME per input port p (ME FWD_FIRST_ME + p).  Receive (rx_eth.uc)
// alternates the port's good frames between RX rings 2p (half A) and 2p + 1 (half B).
// The 8 threads take frames in context order (token SIG_TOK_GET) and the port's k-th frame
// goes to the thread whose turn is k; as every turn takes exactly one frame (a thread whose
// ring is empty waits, keeping the turn), frame k always lands on context k mod 8, and so
// even contexts only ever read half A and odd contexts half B.  Verdicts are applied in the
// same context order (token SIG_TOK_PUT), so the port's frames leave in arrival order.
//
// Per frame, each thread:
//   1. (get turn) takes (handle, length) off its RX ring;
//   2. reads the header window (packet bytes 0 .. WINDOW_QW * 8 - 1) from DRAM into
//      $$0.. in one burst, and sets up the metadata at LM_ADDR_1: in_port, len, words
//      2..11 zero, word META_DRAM_ADDR the DRAM byte address of packet byte 0;
//   3. runs the body;
//   4. (put turn) acts on meta word META_VERDICT: forward -> the TX ring of meta.out_port
//      (an out_port >= PORTS is dropped as reserved reason BAD_PORT_INDEX); drop -> count
//      reason meta word META_CODE (1..DROP_REASON_MAX, else reserved index 0) and free the
//      buffer; exception -> (handle, code << 16 | next_hop & 0xFFFF) on the exception
//      ring; anything else -> dropped, counted at reserved index 0.
// The dispatch keeps its state in a12..a15, b12..b15 and signals 11..15 (the body's ABI,
// compiler/me/abi.py); every other register is scratch here and the body's there.

#include "layout.h"
#include "router4.h"

.me 2 3

// ---------------------------------------------------------------- signals (11..15)
#define SIG_TOK_GET 11    // my turn to take a frame from my RX ring
#define SIG_TOK_PUT 12    // my turn to apply a verdict
#define SIG_IO 13         // RX ring get, header window read
#define SIG_PUT 14        // the put turn's command (TX/exception put, buffer free)

// ---------------------------------------------------------------- registers (survive the body)
#define tok_get_next a12  // SAME_ME_SIGNAL value: SIG_TOK_GET to context + 1
#define tok_put_next a13  // SAME_ME_SIGNAL value: SIG_TOK_PUT to context + 1
#define ring a14          // my RX ring - RX_RING_BASE: 2 * port + (context & 1)
#define ring_test a15     // address of my ring's "empty?" test
#define handle b12
#define port b13          // input port = ME - FWD_FIRST_ME

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[b0, 0]                        // ME number << 3 | context
    alu_shf[port, --, B, b0, >>3]
    alu[port, port, -, FWD_FIRST_ME]
    alu[a0, b0, AND, 1]                 // half: even contexts A, odd contexts B
    alu_shf[b1, a0, +, port, <<1]
    alu[ring, --, B, b1]
    load_addr[a1, ring_tests#]
    alu_shf[ring_test, a1, +, b1, <<1]  // two instructions per test
    alu[b2, b0, AND, 7]                 // context
    alu[b3, b2, +, 1]
    alu[b3, b3, AND, 7]
    immed[a2, (SIG_TOK_GET << 3)]
    alu[tok_get_next, b3, OR, a2]
    immed[a2, (SIG_TOK_PUT << 3)]
    alu[tok_put_next, b3, OR, a2]
    // this context's metadata (LM_ADDR_1) and spill area (LM_ADDR_0): 32 words each context
    alu_shf[b4, --, B, b2, <<7]
    immed[a3, DISPATCH_LM_BYTE]
    alu[b5, a3, +, b4]
    local_csr_wr[ACTIVE_LM_ADDR_1, b5]
    immed[a3, 64]
    alu[b5, a3, +, b5]
    local_csr_wr[ACTIVE_LM_ADDR_0, b5]
    nop
    nop
    nop
    // context 0 starts holding both tokens
    br!=ctx[0, loop#]
    immed[b6, (SIG_TOK_GET << 3)]
    local_csr_wr[SAME_ME_SIGNAL, b6]
    immed[b6, (SIG_TOK_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, b6]

// ================================================================ per frame
loop:
    ctx_arb[SIG_TOK_GET]
test_ring:
    jump[ring_test, ring_tests#]
ring_tests:                             // the state names a ring statically: one per ring
    br_inp_state[RX_EMPTY_0, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_1, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_2, empty#]
    br[get#]
    br_inp_state[RX_EMPTY_3, empty#]
    br[get#]
empty:
    ctx_arb[voluntary]                  // my frame is the next one of my ring: keep the turn
    br[test_ring#]
get:
    scratch[get, $0, ring, RX_RING_BASE, RX_ENTRY_WORDS], sig_done[SIG_IO]
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
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

// ================================================================ the put turn
body_exit:
    alu[a0, --, B, *l$index1[META_VERDICT]]
    alu[a1, --, B, *l$index1[META_CODE]]
    ctx_arb[SIG_TOK_PUT]
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
    alu[$0, --, B, handle]
    sram[enqueue, $0, b1, 0], sig_done[SIG_PUT]
    br[put_done#]

forward:
    alu[b0, --, B, *l$index1[META_OUT_PORT]]
    alu[--, b0, -, PORTS]
    bcs[bad_port#]
    alu[$0, --, B, handle]
    scratch[put, $0, b0, TX_RING_BASE, 1], sig_done[SIG_PUT]
    br[put_done#]
bad_port:
    br[drop_count#], defer[1]
    immed[a1, BAD_PORT_INDEX]

exception:
    alu[$0, --, B, handle]
    alu_shf[b0, --, B, *l$index1[META_NEXT_HOP], <<16]
    alu_shf[b0, --, B, b0, >>16]        // next_hop & 0xFFFF
    alu_shf[$1, b0, OR, a1, <<16]       // code << 16 | next_hop
    scratch[put, $0, EXC_RING, 0, EXC_ENTRY_WORDS], sig_done[SIG_PUT]

put_done:
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    ctx_arb[SIG_PUT]
    br[loop#]
