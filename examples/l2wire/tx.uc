// tx.uc -- l2wire transmit: one ME per port, all 8 threads (README.md, "Transmit").
//
// Per frame, each thread:
//   1. in context order (token SIG_TOK_GET) takes a handle off its scratch ring
//      (scratch[get]; the ring is tested first so idle threads cost no scratch bandwidth);
//   2. reads metadata LW1..LW3 (size, offset, freelist, output port) from SRAM;
//   3. in context order (token SIG_TOK_ALLOC) allocates TBUF elements: the allocation
//      counter lives in local memory, and the free space is checked against the port's
//      TX_SEQUENCE (elements transmitted so far), re-read only when the TBUF looks full;
//   4. copies the frame DRAM -> TBUF (dram[tbuf_wr]: all its elements in flight at once,
//      up to 7 + the last one, wrapping in the port's TBUF partition);
//   5. validates the frame (msf[write] of one TBUF control word per element, SOP on the
//      first, EOP on the last: docs/media.md, "Transmit") and returns the buffer to its
//      freelist (sram[enqueue]) -- the frame is in the TBUF, the DRAM copy is not needed
//      any more.
// Both ordered sections visit the threads round robin, so frames leave in ring order.

#include "l2wire.h"

.me 2 3

// ---------------------------------------------------------------- signals
#define SIG_TOK_GET 1     // my turn to take from the ring
#define SIG_TOK_ALLOC 2   // my turn to allocate TBUF elements
#define SIG_GET 3         // handle in $0
#define SIG_META 4        // metadata LW1..LW3 in $1..$3
#define SIG_SEQ 5         // TX_SEQUENCE in $4
#define SIG_CTL 6         // control word written ($5 free again)
#define SIG_ENQ 7         // buffer enqueued ($6 free again)
#define SIG_LAST 8        // the frame's last (or only) DRAM -> TBUF command
#define SIG_DMA0 9        // its full 128-byte elements before it, one signal each
#define SIG_DMA1 10
#define SIG_DMA2 11
#define SIG_DMA3 12
#define SIG_DMA4 13
#define SIG_DMA5 14
#define SIG_DMA6 15

// ---------------------------------------------------------------- transfer registers
// $0 in: handle   $1..$3 in: metadata LW1..LW3   $4 in: TX_SEQUENCE
// $5 out: TBUF control word   $6 out: handle to enqueue

// ---------------------------------------------------------------- registers
// bank A: per-thread constants (+ tbuf and t_a, which meet bank-B values)
#define tok_get_next a0   // SAME_ME_SIGNAL value: SIG_TOK_GET to context + 1
#define tok_alloc_next a1 // SAME_ME_SIGNAL value: SIG_TOK_ALLOC to context + 1
#define k_buffer a2       // buffer address = k_buffer + (handle << BUF_SHIFT)
#define mask16 a3         // 0xFFFF
#define chan_mask a4      // CHANNEL_MASK
#define sop_eop a5        // TX_SOP | TX_EOP
#define part_first a6     // first TBUF element of the port's partition
#define ctl_base a7       // MSF_TBUF_CTL_BASE
#define seq_addr a8       // MSF_TX_SEQUENCE_BASE + 4 * port
#define c64 a9
#define c128 a10
#define cnt_race a11      // scratch address of this port's race counter
#define tbuf a12          // TBUF byte address of the next command
#define t_a a13           // per-frame scratch in bank A
#define table_m2 a14      // address of last_table - 2
// bank B: per-frame values
#define handle b0
#define len b1            // frame length, then bytes left to copy
#define dbuf b2           // DRAM address of the next command
#define nelem b3          // TBUF elements of the frame
#define elem b4           // first TBUF element of the frame
#define t_b b5
#define qaddr b6          // Q-array address of the buffer's freelist
#define ctl_addr b7       // MSF_TBUF_CTL_BASE + 4 * elem
#define ring b8           // scratch ring = ME & 1
#define tbuf_end b9       // TBUF byte address just past the port's partition
#define tbuf_start b10    // TBUF byte address of the port's partition
#define c128b b11
#define port b12
#define ret b13           // where the last command returns to
#define idx b14           // jump-table entry
#define port_se a15       // the frame's output port << 16 (metadata LW3) | SOP | EOP
#define head b15          // the next control word without its length: port << 16 (| SOP)

// TBUF control word flags (docs/media.md, "Transmit")
#define TX_SOP 0x1000000
#define TX_EOP 0x2000000

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]                       // ME number << 3 | context
    alu_shf[ring, 1, AND, t_b, >>3]     // ring = ME & 1
    alu[port, ring, XOR, 1]             // transmit port = (ME & 1) ^ 1
    alu_shf[part_first, --, B, port, <<5]       // port * TBUF_PART_ELEMENTS
    alu_shf[tbuf_start, --, B, port, <<(5 + ELEMENT_SHIFT)]
    immed[t_a, (TBUF_PART_ELEMENTS << ELEMENT_SHIFT)]
    alu[tbuf_end, t_a, +, tbuf_start]
    immed32[ctl_base, MSF_TBUF_CTL_BASE]
    immed32[seq_addr, MSF_TX_SEQUENCE_BASE]
    alu_shf[seq_addr, seq_addr, +, port, <<2]
    immed[cnt_race, CNT_TX_RACE]
    alu_shf[cnt_race, cnt_race, +, port, <<2]
    alu[t_b, t_b, +, 1]
    alu[t_b, t_b, AND, 7]
    alu[tok_get_next, t_b, OR, (SIG_TOK_GET << 3)]
    alu[tok_alloc_next, t_b, OR, (SIG_TOK_ALLOC << 3)]
    immed32[k_buffer, K_BUFFER]
    immed[mask16, 0xFFFF]
    immed32[chan_mask, CHANNEL_MASK]
    immed32[sop_eop, (TX_SOP | TX_EOP)]
    immed[c64, 64]
    immed[c128, 128]
    immed[c128b, 128]
    load_addr[table_m2, last_table#]
    alu[table_m2, table_m2, -, 2]
    // LM_ADDR 0 = word 0 for every thread: the shared TBUF allocation state
    immed[t_b, 0]
    local_csr_wr[ACTIVE_LM_ADDR_0, t_b]
    nop
    nop
    nop
    // a control-word write and an enqueue completion are "owed" at every frame: owe the
    // first ones to myself
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_a, t_b, OR, (SIG_CTL << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    alu[t_a, t_b, OR, (SIG_ENQ << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    // context 0 starts holding both tokens and clears the allocation state
    br!=ctx[0, tx_loop#]
    immed[*l$index0[0], 0]
    immed[*l$index0[1], 0]
    immed[t_b, (SIG_TOK_GET << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    immed[t_b, (SIG_TOK_ALLOC << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]

// ================================================================ per frame
tx_loop:
    ctx_arb[SIG_TOK_GET]
    // ring empty?  (the state names a ring statically: one test per ring)
    br_bset[ring, 0, test_ring1#]
    br_inp_state[SCR_Ring0_Empty, empty#]
get:
    scratch[get, $0, ring, 0, 1], sig_done[SIG_GET]
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
    ctx_arb[SIG_GET]
    alu[handle, --, B, $0]
    beq[raced#]
    sram[read, $1, handle, META_TX_FIRST_BYTE, META_TX_WORDS], sig_done[SIG_META]
    alu_shf[dbuf, k_buffer, +, handle, <<BUF_SHIFT]
    alu[qaddr, chan_mask, AND, handle]
    // metadata here, and the previous frame's control word and enqueue done ($5, $6)
    ctx_arb[SIG_META, SIG_CTL, SIG_ENQ]
    alu[len, mask16, AND, $1]           // LW1 buffer_size
    alu_shf[t_a, --, B, $1, >>16]       // LW1 offset
    alu[dbuf, dbuf, +, t_a]
    alu[t_a, mask16, AND, $2]           // LW2 freelist queue
    alu[qaddr, qaddr, OR, t_a]
    alu[t_b, mask16, AND, $3]           // LW3 output port
    alu_shf[port_se, sop_eop, OR, t_b, <<16]
    alu[$5, port_se, OR, len]           // a one-element frame's control word
    alu[nelem, len, -, 1]               // ceil(len / 128)
    alu_shf[nelem, 1, +, nelem, >>ELEMENT_SHIFT]

    // ordered TBUF allocation
    ctx_arb[SIG_TOK_ALLOC]
alloc:
    alu[t_b, nelem, +, *l$index0[0]]    // allocated after this frame
    alu[t_b, t_b, -, *l$index0[1]]      // ... minus transmitted = elements in use
    alu[--, TBUF_PART_ELEMENTS, -, t_b]
    blt[tbuf_full#]
    alu[elem, TBUF_PART_MASK, AND, *l$index0[0]]
    alu[*l$index0[0], nelem, +, *l$index0[0]]
    local_csr_wr[SAME_ME_SIGNAL, tok_alloc_next]
    alu[elem, elem, +, part_first]
    alu_shf[ctl_addr, ctl_base, +, elem, <<2]
    alu_shf[tbuf, --, B, elem, <<ELEMENT_SHIFT]

    // DRAM -> TBUF: full 128-byte elements with one 16-quadword command each, then the
    // rest (1..128 bytes) with one command rounded up to 16 bytes; every command of the
    // frame in flight at once (up to 7 + 1, then the next batch); a frame may wrap at the
    // end of the port's TBUF partition.  Minimum-size frames go straight through.
    alu[--, c64, -, len]
    blt[copy0#]
    dram[tbuf_wr, --, dbuf, tbuf, 8], sig_done[SIG_LAST]
wait0:
    ctx_arb[SIG_LAST]
// every byte is in: one control word per element, in ring order, each after the one before
// it (faster than the line sends an element); len is the last element's bytes (1..128)
valid:
    alu[--, nelem, -, 1]
    beq[ctl_one#]
    immed32[head, TX_EOP]
    alu[head, port_se, XOR, head]       // port << 16 | SOP
ctl_next:
    alu_shf[ctl_addr, ctl_base, +, elem, <<2]
    alu[nelem, nelem, -, 1]
    beq[ctl_last#]
    alu[$5, c128, OR, head]              // a full element
    msf[write, $5, ctl_addr, 0, 1], ctx_swap[SIG_CTL]
    immed32[head, (TX_SOP | TX_EOP)]
    alu[head, port_se, XOR, head]       // later elements: port << 16, no SOP
    alu[elem, elem, +, 1]
    alu_shf[t_a, --, B, elem, <<ELEMENT_SHIFT]
    alu[--, t_a, -, tbuf_end]
    bne[ctl_next#]
    br[ctl_next#], defer[1]
    alu[elem, --, B, part_first]        // past the end of the port's partition
ctl_last:
    immed32[t_a, TX_EOP]
    alu[t_a, t_a, OR, head]
    alu[$5, t_a, OR, len]               // the last element: its bytes, EOP
ctl_one:
    msf[write, $5, ctl_addr, 0, 1], sig_done[SIG_CTL]
    alu[$6, --, B, handle]
    sram[enqueue, $6, qaddr, 0], sig_done[SIG_ENQ]
    br[tx_loop#]

test_ring1:
    br_inp_state[SCR_Ring1_Empty, empty#]
    br[get#]

copy0:
    alu[--, c128, -, len]
    bge[last0#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA0]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap0#]
copy1:
    alu[--, c128, -, len]
    bge[last1#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA1]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap1#]
copy2:
    alu[--, c128, -, len]
    bge[last2#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA2]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap2#]
copy3:
    alu[--, c128, -, len]
    bge[last3#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA3]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap3#]
copy4:
    alu[--, c128, -, len]
    bge[last4#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA4]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap4#]
copy5:
    alu[--, c128, -, len]
    bge[last5#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA5]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap5#]
copy6:
    alu[--, c128, -, len]
    bge[last6#]                       // 128 bytes or fewer left: the exact-size last command
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_DMA6]
    alu[len, len, -, c128]
    alu[dbuf, dbuf, +, c128]
    alu[tbuf, tbuf, +, c128b]
    alu[--, tbuf, -, tbuf_end]
    beq[wrap6#]
next_batch:
    // more than 7 full elements: let this batch land, then copy the next one
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_DMA5, SIG_DMA6]
    br[copy0#]

wrap0:                                // past the end of the port's TBUF partition
    br[copy1#], defer[1]
    alu[tbuf, --, B, tbuf_start]
wrap1:                                // past the end of the port's TBUF partition
    br[copy2#], defer[1]
    alu[tbuf, --, B, tbuf_start]
wrap2:                                // past the end of the port's TBUF partition
    br[copy3#], defer[1]
    alu[tbuf, --, B, tbuf_start]
wrap3:                                // past the end of the port's TBUF partition
    br[copy4#], defer[1]
    alu[tbuf, --, B, tbuf_start]
wrap4:                                // past the end of the port's TBUF partition
    br[copy5#], defer[1]
    alu[tbuf, --, B, tbuf_start]
wrap5:                                // past the end of the port's TBUF partition
    br[copy6#], defer[1]
    alu[tbuf, --, B, tbuf_start]
wrap6:                                // past the end of the port's TBUF partition
    br[next_batch#], defer[1]
    alu[tbuf, --, B, tbuf_start]
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

// the last 1..128 bytes, rounded up to 16 (the DRAM access unit): jump to entry
// ceil(len / 16) - 1 of the table; each entry returns to the wait that matches the number
// of full elements issued before it
last:
    alu[idx, len, +, 15]
    alu_shf[idx, --, B, idx, >>4]
    alu_shf[idx, table_m2, +, idx, <<1]
    jump[idx, last_table#]
last_table:
    dram[tbuf_wr, --, dbuf, tbuf, 2], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 4], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 6], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 8], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 10], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 12], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 14], sig_done[SIG_LAST]
    rtn[ret]
    dram[tbuf_wr, --, dbuf, tbuf, 16], sig_done[SIG_LAST]
    rtn[ret]

wait1:
    ctx_arb[SIG_DMA0, SIG_LAST]
    br[valid#]
wait2:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_LAST]
    br[valid#]
wait3:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_LAST]
    br[valid#]
wait4:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_LAST]
    br[valid#]
wait5:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_LAST]
    br[valid#]
wait6:
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_DMA5, SIG_LAST]
    br[valid#]

// The TBUF has no room for this frame yet: learn how far the port has got and retry,
// keeping the allocation token (later frames must wait behind this one anyway).
tbuf_full:
    msf[read, $4, seq_addr, 0, 1], ctx_swap[SIG_SEQ]
    alu[*l$index0[1], --, B, $4]
    br[alloc#]

// Nothing for me this turn: still take my turn in the allocation order.
raced:
    scratch[incr, --, cnt_race, 0]
    br[skip_alloc#]
empty:
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
skip_alloc:
    ctx_arb[SIG_TOK_ALLOC]
    local_csr_wr[SAME_ME_SIGNAL, tok_alloc_next]
    br[tx_loop#]
