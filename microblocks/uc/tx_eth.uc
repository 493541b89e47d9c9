// tx_eth.uc -- router4 transmit: one ME per port, all 8 threads
// (examples/router4/README.md, "Transmit"; adapted from examples/l2wire/tx.uc).
// The TX ring has several producers (both forwarding MEs and the XScale); every handle on
// it names its frame through metadata LW1 (offset, size) and LW2 (freelist queue).
//
// Per frame, each thread:
//   1. in context order (token SIG_TOK_GET) takes a handle off its TX ring
//      (scratch[get]; the ring is tested first so idle threads cost no scratch bandwidth);
//   2. reads metadata LW1..LW2 (size, offset, freelist queue) from SRAM;
//   3. in context order (token SIG_TOK_ALLOC) allocates TBUF elements: the allocation
//      counter lives in local memory, and the free space is checked against the port's
//      TX_SEQUENCE (elements transmitted so far), re-read only when the TBUF looks full;
//   4. copies the frame DRAM -> TBUF (dram[tbuf_wr]: all its elements in flight at once,
//      up to 7 + the last one, wrapping in the port's TBUF partition);
//   5. validates the frame element by element (msf[write] of one TBUF control word per
//      element, SOP on the first, EOP on the last: docs/media.md, "Transmit") and returns
//      the buffer to its freelist (sram[enqueue]) -- the frame is in the TBUF, the DRAM copy
//      is not needed any more.
// Both ordered sections visit the threads round robin, so frames leave in ring order.
// A frame longer than the port's TBUF partition (jumbo buffers) streams through it: in its
// ALLOC turn the thread claims all its elements' sequence numbers at once, then copies the
// frame in batches of 7 elements, each as soon as TX_SEQUENCE shows its elements free, and
// makes each batch valid when it is in; the MSF frees each element when its bytes have
// left, as the HRM's TBUF does.

#include "router4.h"

// the TX rings' "empty?" states (router4: rings 4, 5; a linked pipeline may move them)
#ifndef TX_RING_EMPTY_0
#define TX_RING_EMPTY_0 SCR_Ring4_Empty
#define TX_RING_EMPTY_1 SCR_Ring5_Empty
#endif

.me 6 7

// ---------------------------------------------------------------- signals
#define SIG_TOK_GET 1     // my turn to take from the ring
#define SIG_TOK_ALLOC 2   // my turn to allocate TBUF elements
#define SIG_GET 3         // handle in $0
#define SIG_META 4        // metadata LW1..LW2 in $1..$2
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
// $0 in: handle   $1..$2 in: metadata LW1..LW2   $4 in: TX_SEQUENCE
// $5 out: TBUF control word   $6 out: handle to enqueue

// ---------------------------------------------------------------- registers
// bank A: per-thread constants (+ tbuf and t_a, which meet bank-B values)
#define tok_get_next a0   // SAME_ME_SIGNAL value: SIG_TOK_GET to context + 1
#define tok_alloc_next a1 // SAME_ME_SIGNAL value: SIG_TOK_ALLOC to context + 1
#define k_buffer a2       // buffer address = k_buffer + (handle << BUF_SHIFT)
#define mask16 a3         // 0xFFFF
#define chan_mask a4      // CHANNEL_MASK
#define c127 a5
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
#define seq b7            // a streamed frame: sequence number of its next element to copy
#define ring b8           // scratch ring = TX_RING_BASE + (ME & 1)
#define tbuf_end b9       // TBUF byte address just past the port's partition
#define tbuf_start b10    // TBUF byte address of the port's partition
#define c128b b11
#define port b12
#define ret b13           // where the last command returns to
#define idx b14           // jump-table entry
#define port_se a15       // port << 16 | SOP | EOP: a one-element frame's control word
                          // without its length
#define head b15          // the next control word without its length: port << 16 (| SOP)

// TBUF control word flags (docs/media.md, "Transmit"; the layout of receive status word 0)
#define TX_SOP 0x1000000
#define TX_EOP 0x2000000

// ================================================================ init
init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]                       // ME number << 3 | context
    alu_shf[port, MEDIA_PORT_MASK, AND, t_b, >>3]   // transmit port = ME & MEDIA_PORT_MASK
    alu[ring, port, +, TX_RING_BASE]
    immed32[port_se, (TX_SOP | TX_EOP)]
    alu_shf[port_se, port_se, OR, port, <<16]
    alu_shf[part_first, --, B, port, <<TBUF_PART_SHIFT]     // port * TBUF_PART_ELEMENTS
    alu_shf[tbuf_start, --, B, port, <<(TBUF_PART_SHIFT + ELEMENT_SHIFT)]
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
    immed[c127, 127]
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
#ifdef TX_RING_EMPTY_2
    br_bset[port, 1, test_ring23#]      // 4 ports (npkit.link): rings 2, 3
#endif
    br_bset[port, 0, test_ring1#]
    br_inp_state[TX_RING_EMPTY_0, empty#]
get:
    scratch[get, $0, ring, 0, 1], sig_done[SIG_GET]
    local_csr_wr[SAME_ME_SIGNAL, tok_get_next]
    ctx_arb[SIG_GET]
    alu[handle, --, B, $0]
    beq[raced#]
    sram[read, $1, handle, META_FIRST_BYTE, META_TX_WORDS], sig_done[SIG_META]
    alu_shf[dbuf, k_buffer, +, handle, <<BUF_SHIFT]
    alu[qaddr, chan_mask, AND, handle]
    // metadata here, and the previous frame's control word and enqueue done ($5, $6)
    ctx_arb[SIG_META, SIG_CTL, SIG_ENQ]
    alu[len, mask16, AND, $1]           // LW1 buffer_size
    alu_shf[t_a, --, B, $1, >>16]       // LW1 offset
    alu[dbuf, dbuf, +, t_a]
    alu[t_a, mask16, AND, $2]           // LW2 freelist queue
    alu[qaddr, qaddr, OR, t_a]
    alu[$5, len, OR, port_se]           // a one-element frame's control word
    alu[nelem, len, +, c127]
    alu_shf[nelem, --, B, nelem, >>ELEMENT_SHIFT]

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
    alu_shf[tbuf, --, B, elem, <<ELEMENT_SHIFT]

    // DRAM -> TBUF: full 128-byte elements with one 16-quadword command each, then the
    // rest (1..128 bytes) with one command rounded up to 16 bytes; every command of the
    // frame in flight at once (up to 7 + 1, then the next batch); a frame may wrap at the
    // end of the port's TBUF partition.  Minimum-size frames go straight through.
    // elem: the next element whose control word is due; nelem: control words still due;
    // t_a: elements free for the next batch (all of them here: the frame fits)
    alu[--, c64, -, len]
    blt[copy_first#]
    dram[tbuf_wr, --, dbuf, tbuf, 8], sig_done[SIG_LAST]
wait0:
    ctx_arb[SIG_LAST]
// every byte is in: the control words still due, one per element in ring order, each
// after the one before it (faster than the line sends an element); len is the last
// element's bytes (1..128).  A one-element frame's word is $5 from the top.
valid:
    alu[--, nelem, -, 1]
    beq[ctl_one#]
    alu[idx, nelem, -, 1]               // the full elements before the last
    load_addr[ret, ctl_last#]
    br[ctl_words#]
ctl_last:
    immed32[t_a, TX_EOP]
    alu[t_a, t_a, OR, head]
    alu[$5, t_a, OR, len]               // the last element: its bytes, EOP
ctl_one:
    alu_shf[t_b, ctl_base, +, elem, <<2]
    msf[write, $5, t_b, 0, 1], sig_done[SIG_CTL]
tx_done:
    alu[$6, --, B, handle]
    sram[enqueue, $6, qaddr, 0], sig_done[SIG_ENQ]
    br[tx_loop#]

test_ring1:
    br_inp_state[TX_RING_EMPTY_1, empty#]
    br[get#]
#ifdef TX_RING_EMPTY_2
test_ring23:
    br_bset[port, 0, test_ring3#]
    br_inp_state[TX_RING_EMPTY_2, empty#]
    br[get#]
test_ring3:
    br_inp_state[TX_RING_EMPTY_3, empty#]
    br[get#]
#endif

copy_first:
    immed32[t_a, 0x7FFF]                // the frame fits: no space check between batches
    immed32[head, TX_EOP]
    alu[head, port_se, XOR, head]       // the first control word: port << 16 | SOP
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
    // more than 7 full elements: let this batch land, make its elements valid (all but
    // one when only one more element follows, so that valid always has the last two),
    // then copy the next batch when its elements are free
    ctx_arb[SIG_DMA0, SIG_DMA1, SIG_DMA2, SIG_DMA3, SIG_DMA4, SIG_DMA5, SIG_DMA6]
    alu[idx, nelem, -, 2]
    alu[--, idx, -, 7]
    ble[batch_words#]
    immed[idx, 7]
batch_words:
    load_addr[ret, batch_done#]
    br[ctl_words#]
batch_done:
    alu[seq, seq, +, 7]
    alu[t_a, t_a, -, 7]
// a streamed frame: wait until the next 7 elements are free (t_a: free elements from seq
// on, TX_SEQUENCE + TBUF_PART_ELEMENTS - seq when last read); the last batch waits for 7
// as well, which needs TBUF_PART_ELEMENTS >= 8 (at most 8 ports)
space_check:
    alu[--, t_a, -, 7]
    bge[copy0#]
    msf[read, $4, seq_addr, 0, 1], ctx_swap[SIG_SEQ]
    alu[t_a, $4, -, seq]
    br[space_check#], defer[1]
    alu[t_a, t_a, +, TBUF_PART_ELEMENTS]

// idx full-element control words from element elem (wrapping in the partition), the
// first with head (SOP on the frame's first element), then back to ret
ctl_words:
    alu[$5, c128, OR, head]
    alu_shf[t_b, ctl_base, +, elem, <<2]
    msf[write, $5, t_b, 0, 1], ctx_swap[SIG_CTL]
    immed32[head, (TX_SOP | TX_EOP)]
    alu[head, port_se, XOR, head]       // later elements: port << 16, no SOP
    alu[nelem, nelem, -, 1]
    alu[elem, elem, +, 1]
    alu[t_b, elem, -, part_first]
    alu[--, TBUF_PART_ELEMENTS, -, t_b]
    bne[ctl_in_partition#]
    alu[elem, --, B, part_first]        // past the end of the port's partition
ctl_in_partition:
    alu[idx, idx, -, 1]
    bne[ctl_words#]
    rtn[ret]

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
// keeping the allocation token (later frames must wait behind this one anyway).  A frame
// that never fits streams through the partition instead.
tbuf_full:
    alu[--, TBUF_PART_ELEMENTS, -, nelem]
    blt[stream#]
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

// A frame longer than the port's TBUF partition: claim the sequence numbers of all its
// elements in the ALLOC turn, then copy it as any frame, in batches of 7 elements, each
// batch when TX_SEQUENCE shows its elements free, each batch's elements made valid when
// its copies are in (next_batch): the frame streams through the partition.
stream:
    alu[seq, --, B, *l$index0[0]]
    alu[*l$index0[0], nelem, +, *l$index0[0]]
    local_csr_wr[SAME_ME_SIGNAL, tok_alloc_next]
    alu[elem, TBUF_PART_MASK, AND, seq]
    alu[elem, elem, +, part_first]
    alu_shf[tbuf, --, B, elem, <<ELEMENT_SHIFT]
    immed32[head, TX_EOP]
    alu[head, port_se, XOR, head]       // the first control word: port << 16 | SOP
    br[space_check#], defer[1]
    immed[t_a, 0]
