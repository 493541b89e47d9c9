// ipv4_fwd.uc -- router4 IPv4 forwarding: two MEs per input port (a pair: role A takes
// the port's even frames, role B the odd ones), all 8 threads each
// (examples/router4/README.md, "Forwarding" and "Order").  The algorithm, the order of its checks and
// its memory layout are those of microblocks/ipv4_fwd.mbl (RFC 1812) behind the
// eth_classify block of microblocks/router.mbl; router4.h has the layout.
//
// Per frame, each thread:
//   1. in context order (token SIG_TOK_GET) takes (handle, length) off its RX ring (the
//      receive ME alternates the port's frames between the pair's two rings);
//   2. reads frame bytes 8..39 from DRAM in one burst (EtherType and the 20-byte IPv4
//      header), then at once issues the two lookups that depend only on the destination:
//      the local4 home slot (exact_hash with mul_step) and the trie root word;
//   3. while they are in flight, checks the header on a fast path that only good headers
//      pass (EtherType 0x0800 and version/IHL 0x45 in one compare, lengths, checksum,
//      martian source and destination); anything else goes to the slow path, which
//      re-checks in the MBL block's exact order and finds the verdict;
//   4. local4 (open-addressed probe), TTL, the rest of the trie walk (dependent reads),
//      the next-hop record, the MTU;
//   5. decrements the TTL, updates the checksum (RFC 1624), rewrites the Ethernet
//      addresses, writes frame bytes 0..31 back to DRAM;
//   6. in context order (token SIG_TOK_PUT): role A hands its verdict to B through B's
//      next-neighbour ring (handle | output port, or 0); role B first applies A's verdict
//      for the frame before its own (a put on that TX ring), then puts its own handle on
//      the TX ring of the next hop's port.
// Drops free the buffer and count the reason; exceptions put (handle, code << 16 |
// next_hop) on the exception ring at once.  Every thread takes both turns once per round,
// whatever happened to its frame, and B applies verdicts in the order A0 B1 A2 B3 ... (two
// counters in B's local memory), so frames of the input port leave in arrival order.

#include "router4.h"

.me 2 3 4 5

// ---------------------------------------------------------------- signals
#define SIG_TOK_GET 1     // my turn to take from the RX ring
#define SIG_TOK_PUT 2     // my turn to put on a TX ring
#define SIG_GET 3         // RX ring entry in $0, $1
#define SIG_HDR 4         // frame bytes 8..39 in $$0..$$7
#define SIG_L4 5          // local4 entry in $2..$4
#define SIG_TRIE 6        // trie word in $5
#define SIG_NH 7          // next-hop record in $6..$9
#define SIG_WR 8          // header written back ($$0..$$7 out free again); owed
#define SIG_PUT_A 9       // B: TX ring put of A's frame done ($0 out free); owed
#define SIG_AUX 10        // rare paths: exception put, buffer free
#define SIG_PUT_B 11      // B: TX ring put of its own frame done ($11 out free); owed

// ---------------------------------------------------------------- transfer registers
// in : $0 handle, $1 frame length (RX ring entry); $2..$4 local4 entry [hdr, value, key];
//      $5 trie word; $6..$9 next-hop record; $$0..$$7 frame bytes 8..39
// out: $0 A's handle for the TX ring (B); $11 B's own handle for the TX ring;
//      $1, $2 exception entry; $3 handle to free;
//      $$0..$$7 frame bytes 0..31 to write back
// Frame bytes 8..39 as big-endian words:
//   $$1 = EtherType | version/IHL | TOS      $$2 = total length | id
//   $$3 = flags/fragment | TTL | protocol    $$4 = checksum | source[31:16]
//   $$5 = source[15:0] | destination[31:16]  $$6 = destination[15:0] | payload

// ---------------------------------------------------------------- registers
// bank A: per-thread constants, then scratch values that meet bank-B ones
#define tok_get_next a0   // SAME_ME_SIGNAL value: SIG_TOK_GET to context + 1
#define tok_put_next a1   // SAME_ME_SIGNAL value: SIG_TOK_PUT to context + 1
#define k_data a2         // frame address = k_data + (handle << BUF_SHIFT)
#define trie_base a3      // SRAM byte address of fib4_trie word 0
#define l4_base a4        // SRAM byte address of local4 entry 0
#define nh_base a5        // SRAM byte address of nexthops record 0
#define mask16 a6         // 0xFFFF
#define k_eth_ip a7       // 0x080045: EtherType IPv4, version 4, IHL 5
#define k_f000 a8         // first address byte >= 240 <=> these bits all set
#define k_ffff0000 a9
#define k_feff0000 a10
#define k_mult a11        // EXACT_HASH_MULTIPLIER
#define k_3fc a12         // a trie byte index, times 4
#define ta1 a13
#define ta2 a14           // also: exception code / drop counter offset
#define lenm14 a15        // frame length - 14 (signed: negative for runts)
// bank B: per-frame values
#define ring b0           // RX ring = ME - FWD_FIRST_ME; bit 0: role (0 = A, 1 = B)
#define handle b1
#define dbuf b2           // DRAM address of the frame
#define tl b3             // IPv4 total length
#define dst b4            // IPv4 destination
#define nh b5             // next-hop index (meta.next_hop)
#define tb1 b6
#define tb2 b7
#define oport b8          // output port
#define probe_off b9      // local4 entry offset being probed (slot * 12)
#define probes b10        // local4 probes left
#define cnt_base b11      // CNT_BASE
#define self_wr b12       // SAME_ME_SIGNAL value: SIG_WR to myself (re-owe it)
#define ring_test b13     // address of my ring's "empty?" test
#define rec b14           // my verdict for the put turn: handle | output port, or 0
#define self_pa b15       // SAME_ME_SIGNAL value: SIG_PUT_A to myself (+ 16: SIG_PUT_B)

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[tb1, 0]                       // ME number << 3 | context
    alu_shf[ring, --, B, tb1, >>3]
    alu[ring, ring, -, FWD_FIRST_ME]
    load_addr[ta1, ring_tests#]
    alu_shf[ring_test, ta1, +, ring, <<1]
    alu[tb2, tb1, AND, 7]
    immed[ta1, (SIG_WR << 3)]
    alu[self_wr, tb2, OR, ta1]
    immed[ta1, (SIG_PUT_A << 3)]
    alu[self_pa, tb2, OR, ta1]
    alu[tb1, tb1, +, 1]
    alu[tb1, tb1, AND, 7]
    alu[tok_get_next, tb1, OR, (SIG_TOK_GET << 3)]
    alu[tok_put_next, tb1, OR, (SIG_TOK_PUT << 3)]
    immed32[k_data, K_DATA]
    immed32[trie_base, TRIE_ADDR]
    immed32[l4_base, LOCAL4_ADDR]
    immed32[nh_base, NH_ADDR]
    immed[mask16, 0xFFFF]
    immed32[k_eth_ip, 0x080045]
    immed[k_f000, 0xF000]
    immed32[k_ffff0000, 0xFFFF0000]
    immed32[k_feff0000, 0xFEFF0000]
    immed32[k_mult, EXACT_HASH_MULTIPLIER]
    immed[k_3fc, 0x3FC]
    immed[cnt_base, CNT_BASE]
    // a header write-back, and in B each put turn's two TX put completions, are "owed":
    // owe the first ones to myself
    local_csr_wr[SAME_ME_SIGNAL, self_wr]
    local_csr_wr[SAME_ME_SIGNAL, self_pa]
    alu[tb2, self_pa, +, ((SIG_PUT_B - SIG_PUT_A) << 3)]
    local_csr_wr[SAME_ME_SIGNAL, tb2]
    // LM_ADDR 0 = word 0 for every thread: B's counters a_done, b_done
    immed[tb1, 0]
    local_csr_wr[ACTIVE_LM_ADDR_0, tb1]
    nop
    nop
    nop
    // context 0 starts holding both tokens and clears the counters
    br!=ctx[0, loop#]
    immed[*l$index0[0], 0]
    immed[*l$index0[1], 0]
    immed[tb1, (SIG_TOK_GET << 3)]
    local_csr_wr[SAME_ME_SIGNAL, tb1]
    immed[tb1, (SIG_TOK_PUT << 3)]
    local_csr_wr[SAME_ME_SIGNAL, tb1]

// ================================================================ per frame
loop:
    ctx_arb[SIG_TOK_GET]
    // RX ring empty?  (the state names a ring statically: one test per ring)
    jump[ring_test, ring_tests#]
ring_tests:
    br_inp_state[SCR_Ring0_Empty, idle#]
    br[get#]
    br_inp_state[SCR_Ring1_Empty, idle#]
    br[get#]
    br_inp_state[SCR_Ring2_Empty, idle#]
    br[get#]
    br_inp_state[SCR_Ring3_Empty, idle#]
get:
    scratch[get, $0, ring, RX_RING_BASE, RX_ENTRY_WORDS], sig_done[SIG_GET]
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
    ctx_arb[SIG_GET]
    alu[handle, --, B, $0]
    beq[nothing#]                       // cannot happen: this ME is the ring's only reader
    alu_shf[dbuf, k_data, +, handle, <<BUF_SHIFT]
    dram[read, $$0, dbuf, 8, 4], sig_done[SIG_HDR]
    alu[lenm14, $1, -, 14]
    ctx_arb[SIG_HDR]

    // the destination and the two reads that depend only on it, issued at once (they
    // have no side effect: for a frame that fails a check they are simply not used)
    dbl_shf[dst, $$5, $$6, >>16]
    mul_step[dst, k_mult], 32x32_start  // exact_hash of one key word: dst * 0x9E3779B1
    mul_step[dst, k_mult], 32x32_step1
    mul_step[dst, k_mult], 32x32_step2
    mul_step[dst, k_mult], 32x32_step3
    mul_step[dst, k_mult], 32x32_step4
    mul_step[tb1, --], 32x32_last
    alu_shf[ta1, --, B, tb1, >>16]      // h ^ h >> 16, masked to the table size
    alu[ta1, ta1, XOR, tb1]
    alu[ta1, ta1, AND, (LOCAL4_SIZE - 1)]
    alu_shf[probe_off, --, B, ta1, <<2] // slot * 12 = slot * 4 + slot * 8
    alu_shf[probe_off, probe_off, +, ta1, <<3]
    sram[read, $2, l4_base, probe_off, 3], sig_done[SIG_L4]
    alu[tb2, mask16, AND, $$5]          // destination[31:16]: the trie root index
    alu_shf[ta2, trie_base, +, tb2, <<2]
    sram[read, $5, ta2, 0, 1], sig_done[SIG_TRIE]

    // fast path: only a good, option-less IPv4 header passes every test below
    alu_shf[--, k_eth_ip, -, $$1, >>8]  // EtherType 0x0800, version 4, IHL 5
    bne[slow#]
    alu_shf[tl, --, B, $$2, >>16]
    alu[--, tl, -, 20]
    blt[slow#]
    alu[--, lenm14, -, tl]              // total length <= delivered (and so >= 34 bytes)
    blt[slow#]
    alu_shf[ta1, --, B, $$6, >>16]      // header checksum: the ten 16-bit words ...
    alu[ta1, ta1, +16, $$1]
    alu[tb1, ta1, +, $$2]               // ... summed 32 bits at a time with end-around carry
    alu[tb1, tb1, +carry, $$3]
    alu[tb1, tb1, +carry, $$4]
    alu[tb1, tb1, +carry, $$5]
    alu[tb1, tb1, +carry, 0]
    alu[tb1, tb1, +carry, 0]
    alu_shf[ta1, --, B, tb1, <<rot16]   // high half of s + rot16(s) = the 16-bit fold
    alu[tb2, ta1, +, tb1]
    alu[--, tb2, -, k_ffff0000]         // good <=> the fold is 0xFFFF
    bcc[slow#]
    br=byte[$$4, 1, 0, slow#]           // source 0/8, 127/8, 240/4 (and 255.255.255.255)
    br=byte[$$4, 1, 127, slow#]
    alu[--, k_f000, AND~, $$4]
    beq[slow#]
    br=byte[$$5, 1, 0, slow#]           // destination 0/8, 127/8, 240/4 (and broadcast)
    br=byte[$$5, 1, 127, slow#]
    alu[--, k_f000, AND~, $$5]
    beq[slow#]
    ctx_arb[SIG_L4, SIG_TRIE]

checked:
    // local4.contains(dst): the home slot first
    br_bclr[$2, VALID_BIT, not_local#]
    alu[--, dst, -, $4]
    beq[for_router#]
    br[probe#]
not_local:
    br=byte[$$3, 1, 0, ttl_expired#]    // TTL <= 1
    br=byte[$$3, 1, 1, ttl_expired#]
    // the trie walk: 16 bits at the root (read above), then 8 and 8
    br_bclr[$5, LPM_CHILD_BIT, leaf#]
    alu_shf[tb2, --, B, dst, >>6]
    alu[tb2, k_3fc, AND, tb2]
    alu_shf[ta2, trie_base, +, $5, <<2] // the shift drops the CHILD bit
    sram[read, $5, ta2, tb2, 1], ctx_swap[SIG_TRIE]
    br_bclr[$5, LPM_CHILD_BIT, leaf#]
    alu_shf[tb2, --, B, dst, <<2]
    alu[tb2, k_3fc, AND, tb2]
    alu_shf[ta2, trie_base, +, $5, <<2]
    sram[read, $5, ta2, tb2, 1], ctx_swap[SIG_TRIE]
leaf:
    br_bclr[$5, LPM_ROUTE_BIT, no_route#]
    alu[nh, mask16, AND, $5]
    alu_shf[tb1, --, B, $5, <<22]       // (index & (NH_SIZE - 1)) * 16
    alu_shf[ta1, nh_base, +, tb1, >>18]
    sram[read, $6, ta1, 0, 4], sig_done[SIG_NH]
    ctx_arb[SIG_NH, SIG_WR]             // + the previous write-back ($$ out free)
    alu[ta1, mask16, AND, $9]           // MTU
    alu[--, ta1, -, tl]
    blt[too_big#]
    alu_shf[oport, --, B, $9, >>16]
    alu[--, oport, -, PORTS]
    bcs[bad_port#]

    // rewrite: bytes 0..11 from the next hop, TTL - 1, checksum per RFC 1624 eqn. 3:
    // HC' = ~(~HC + ~m + m') with m' = m - 0x100, i.e. ~(~HC + 0xFEFF), folded
    alu[$$0, --, B, $6]
    alu[$$1, --, B, $7]
    alu[$$2, --, B, $8]
    alu[$$3, --, B, $$1]
    alu[$$4, --, B, $$2]
    alu_shf[$$5, $$3, -, 1, <<8]
    alu[tb1, k_ffff0000, XOR, $$4]      // ~HC in the high half (source bits below)
    alu[tb1, tb1, +, k_feff0000]
    alu[ta1, 0, +carry, 0]              // the carry out of the high half ...
    alu_shf[tb1, tb1, +, ta1, <<16]     // ... folded back in
    alu[$$6, k_ffff0000, XOR, tb1]
    alu[$$7, --, B, $$5]
    dram[write, $$0, dbuf, 0, 4], sig_done[SIG_WR]
    // The TX ring put does not wait for the write: DRAM commands of one channel are served
    // in issue order, and the frame's bytes are all on one channel (README, "Forwarding").
    scratch[incr, --, cnt_base, (CNT_IP_FORWARDED - CNT_BASE)]
    br[put_turn#], defer[1]
    alu_shf[rec, handle, OR, $9, >>16]  // handle | output port (checked < PORTS)

// ================================================================ slow path
// The header failed a fast-path test: the MBL block's checks in their order.
slow:
    ctx_arb[SIG_L4, SIG_TRIE]
    alu[--, lenm14, -, 0]
    blt[drop_runt#]
    br!=byte[$$1, 3, 0x08, not_ipv4#]   // EtherType (eth_classify)
    br!=byte[$$1, 2, 0x00, not_ipv4#]
    alu[--, lenm14, -, 20]
    blt[drop_ip_too_short#]
    alu_shf[tb1, 15, AND, $$1, >>12]
    alu[--, tb1, -, 4]
    bne[drop_bad_version#]
    alu_shf[tb1, 15, AND, $$1, >>8]     // IHL
    alu[--, tb1, -, 5]
    blt[drop_bad_ihl#]
    alu_shf[tl, --, B, $$2, >>16]
    alu_shf[ta1, --, B, tb1, <<2]
    alu[--, tl, -, ta1]
    blt[drop_bad_length#]
    alu[--, lenm14, -, tl]
    blt[drop_bad_length#]
    alu[--, tb1, -, 5]
    bne[options#]
    alu_shf[ta1, --, B, $$6, >>16]
    alu[ta1, ta1, +16, $$1]
    alu[tb1, ta1, +, $$2]
    alu[tb1, tb1, +carry, $$3]
    alu[tb1, tb1, +carry, $$4]
    alu[tb1, tb1, +carry, $$5]
    alu[tb1, tb1, +carry, 0]
    alu[tb1, tb1, +carry, 0]
    alu_shf[ta1, --, B, tb1, <<rot16]
    alu[tb2, ta1, +, tb1]
    alu[--, tb2, -, k_ffff0000]
    bcc[drop_bad_checksum#]
    alu[--, dst, +, 1]                  // 255.255.255.255
    beq[for_router#]
    br=byte[$$4, 1, 0, drop_martian_source#]
    br=byte[$$4, 1, 127, drop_martian_source#]
    alu[--, k_f000, AND~, $$4]
    beq[drop_martian_source#]
    br=byte[$$5, 1, 0, drop_martian_destination#]
    br=byte[$$5, 1, 127, drop_martian_destination#]
    alu[--, k_f000, AND~, $$5]
    beq[drop_martian_destination#]
    br[checked#]

// local4: the home slot holds another key; probe the next slots (open addressing) until
// the key, an empty slot or LOCAL4_SIZE probes in all
probe:
    immed[probes, (LOCAL4_SIZE - 1)]
probe_next:
    alu[probe_off, probe_off, +, LOCAL4_ENTRY_BYTES]
    immed[ta1, (LOCAL4_SIZE * LOCAL4_ENTRY_BYTES)]
    alu[--, probe_off, -, ta1]
    blt[probe_read#]
    immed[probe_off, 0]
probe_read:
    sram[read, $2, l4_base, probe_off, 3], ctx_swap[SIG_L4]
    br_bclr[$2, VALID_BIT, not_local#]
    alu[--, dst, -, $4]
    beq[for_router#]
    alu[probes, probes, -, 1]
    bne[probe_next#]
    br[not_local#]

// ================================================================ exceptions
// (handle, code << 16 | next_hop) on the exception ring, at once: each ME's exceptions are
// in arrival order, the pair's two streams interleave.  The control plane owns the buffer
// from then on.  next_hop is 0 before the route is known.
too_big:
    local_csr_wr[SAME_ME_SIGNAL, self_wr]   // no write-back this time: stay owed
    br_bset[$$3, 30, frag_needed#]      // DF
    br[exception#], defer[1]
    immed[ta2, EXC_FRAGMENT]
frag_needed:
    br[exception#], defer[1]
    immed[ta2, EXC_FRAG_NEEDED]
not_ipv4:
    br[exception_early#], defer[1]
    immed[ta2, EXC_NOT_IPV4]
options:
    br[exception_early#], defer[1]
    immed[ta2, EXC_OPTIONS]
for_router:
    br[exception_early#], defer[1]
    immed[ta2, EXC_FOR_ROUTER]
ttl_expired:
    br[exception_early#], defer[1]
    immed[ta2, EXC_TTL_EXPIRED]
no_route:
    immed[ta2, EXC_NO_ROUTE]
exception_early:
    immed[nh, 0]
exception:
    alu[$1, --, B, handle]
    alu_shf[$2, nh, OR, ta2, <<16]
    scratch[put, $1, EXC_RING, 0, EXC_ENTRY_WORDS], ctx_swap[SIG_AUX]
    br[put_turn#], defer[1]
    immed[rec, 0]

// ================================================================ drops
// The buffer goes back to its freelist (queue FREELIST_QUEUE of the handle's channel: the
// forwarding ME only sees received buffers) and the reason is counted.
bad_port:
    local_csr_wr[SAME_ME_SIGNAL, self_wr]   // no write-back this time: stay owed
    br[drop#], defer[1]
    immed[ta2, (CNT_BAD_PORT - CNT_BASE)]
drop_runt:
    br[drop#], defer[1]
    immed[ta2, (CNT_RUNT - CNT_BASE)]
drop_ip_too_short:
    br[drop#], defer[1]
    immed[ta2, (CNT_IP_TOO_SHORT - CNT_BASE)]
drop_bad_version:
    br[drop#], defer[1]
    immed[ta2, (CNT_BAD_VERSION - CNT_BASE)]
drop_bad_ihl:
    br[drop#], defer[1]
    immed[ta2, (CNT_BAD_IHL - CNT_BASE)]
drop_bad_length:
    br[drop#], defer[1]
    immed[ta2, (CNT_BAD_LENGTH - CNT_BASE)]
drop_bad_checksum:
    br[drop#], defer[1]
    immed[ta2, (CNT_BAD_CHECKSUM - CNT_BASE)]
drop_martian_source:
    br[drop#], defer[1]
    immed[ta2, (CNT_MARTIAN_SOURCE - CNT_BASE)]
drop_martian_destination:
    immed[ta2, (CNT_MARTIAN_DESTINATION - CNT_BASE)]
drop:
    scratch[incr, --, cnt_base, ta2]
    alu_shf[tb1, --, B, handle, >>26]   // the handle's channel, queue FREELIST_QUEUE
    alu_shf[tb1, FREELIST_QUEUE, OR, tb1, <<26]
    alu[$3, --, B, handle]
    sram[enqueue, $3, tb1, 0], ctx_swap[SIG_AUX]
    immed[rec, 0]

// ================================================================ the put turn
// In context order.  A: hand the verdict (rec) to B.  B: apply A's verdict for the frame
// before mine unless an idle turn did already (a_done > b_done), then my own.
put_turn:
    br_bset[ring, 0, put_b#]
    ctx_arb[SIG_TOK_PUT]
put_a:
    br_inp_state[NN_FULL, put_a_full#]  // only this thread puts on B's ring now: no race
    alu[*n$index++, --, B, rec]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[loop#]
put_a_full:
    ctx_arb[voluntary]                  // B is behind: wait, keeping the turn
    br[put_a#]

put_b:
    ctx_arb[SIG_TOK_PUT, SIG_PUT_A, SIG_PUT_B]
    alu[tb1, --, B, *l$index0[1]]       // b_done: my frame is B's frame number b_done,
    alu[--, tb1, -, *l$index0[0]]       // A's frame number b_done comes before it
    bne[put_b_a_applied#]
put_b_pop:
    br_inp_state[NN_EMPTY, put_b_wait#]
    alu[tb2, --, B, *n$index++]
    beq[put_b_a_none#]
    alu[$0, tb2, AND~, 1]               // A's handle ...
    alu[tb2, tb2, AND, 1]               // ... and output port
    scratch[put, $0, tb2, TX_RING_BASE, 1], sig_done[SIG_PUT_A]
    br[put_b_own#], defer[1]
    alu[*l$index0[0], *l$index0[0], +, 1]
put_b_wait:
    ctx_arb[voluntary]                  // A has not decided yet: wait, keeping the turn
    br[put_b_pop#]
put_b_a_none:
    alu[*l$index0[0], *l$index0[0], +, 1]
put_b_a_applied:
    local_csr_wr[SAME_ME_SIGNAL, self_pa]   // no A put this turn: stay owed
put_b_own:
    alu[*l$index0[1], *l$index0[1], +, 1]
    alu[--, --, B, rec]
    beq[put_b_own_none#]
    alu[$11, rec, AND~, 1]
    alu[tb2, rec, AND, 1]
    scratch[put, $11, tb2, TX_RING_BASE, 1], sig_done[SIG_PUT_B]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[loop#]
put_b_own_none:
    alu[tb2, self_pa, +, ((SIG_PUT_B - SIG_PUT_A) << 3)]
    local_csr_wr[SAME_ME_SIGNAL, tb2]   // no own put: stay owed
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[loop#]

// ================================================================ nothing to do
// Ring empty: still take my turn in the put order.  B applies A's next verdict when no
// frame of its own comes before it (a_done == b_done), so the port's last frame leaves
// even when no frame follows it.
idle:
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
nothing:
    br_bset[ring, 0, idle_b#]
    ctx_arb[SIG_TOK_PUT]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[loop#]
idle_b:
    ctx_arb[SIG_TOK_PUT, SIG_PUT_A, SIG_PUT_B]
    alu[tb2, self_pa, +, ((SIG_PUT_B - SIG_PUT_A) << 3)]
    local_csr_wr[SAME_ME_SIGNAL, tb2]   // no own put: stay owed
    alu[tb1, --, B, *l$index0[1]]
    alu[--, tb1, -, *l$index0[0]]
    bne[idle_b_none#]                   // B's next frame comes first
    br_inp_state[NN_EMPTY, idle_b_none#]
    alu[tb2, --, B, *n$index++]
    beq[idle_b_a_none#]
    alu[$0, tb2, AND~, 1]
    alu[tb2, tb2, AND, 1]
    scratch[put, $0, tb2, TX_RING_BASE, 1], sig_done[SIG_PUT_A]
    alu[*l$index0[0], *l$index0[0], +, 1]
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[loop#]
idle_b_a_none:
    alu[*l$index0[0], *l$index0[0], +, 1]
idle_b_none:
    local_csr_wr[SAME_ME_SIGNAL, self_pa]   // no A put this turn: stay owed
    local_csr_wr[SAME_ME_SIGNAL, tok_put_next]
    br[loop#]
