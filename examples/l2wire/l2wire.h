// l2wire.h -- what the l2wire receive and transmit microcode (rx.uc, tx.uc) and the run
// manifest (l2wire.toml) agree on: the buffer layout, the metadata layout, rings, counters
// and the ME mapping.  The design is explained in README.md next to this file; each image's
// signals and registers are declared in the image (rx.uc, tx.uc).
//
// Numbers of the chip itself (local CSR numbers, SCR_Ring*_Empty states) are NOT repeated
// here: the assembler takes them, and the MSF_* address map, from the ISA table
// (sim/isa.py).  What is here is l2wire's own layout, and the few geometry numbers
// of the IXP2800 preset with two ports that the microcode needs as constants (marked GEOMETRY:
// change them together with sim/chips/*.toml and [ports] in l2wire.toml).

#ifndef L2WIRE_H
#define L2WIRE_H

// ---------------------------------------------------------------- ME mapping (README "MEs")
// ME 0: receive port 0 -> ring 0 -> ME 2: transmit port 1
// ME 1: receive port 1 -> ring 1 -> ME 3: transmit port 0
// Receive ME m serves port (m & 1) and puts on ring (m & 1); transmit ME m takes from ring
// (m & 1) and sends on port (m & 1) ^ 1.

// ---------------------------------------------------------------- GEOMETRY (ixp2800, 2 ports)
#define ELEMENT_SHIFT 7               // 128-byte RBUF/TBUF elements
#define ELEMENT_BYTES 128
#define TBUF_PART_ELEMENTS 32         // TBUF elements per port: 8192 / 2 ports / 128
#define TBUF_PART_MASK 31             // TBUF_PART_ELEMENTS - 1 (a power of two)

// ---------------------------------------------------------------- buffers
// One freelist per receive port: SRAM channel = port, Q-array queue 0 (l2wire.toml
// [[freelist]]).  A buffer handle is the SRAM byte address of the buffer's 32-byte
// descriptor (metadata), channel bits 27..26 included.  The descriptors of both freelists
// sit back to back in the channel offsets BUF_DESC_BASE.. so that the DRAM buffer follows
// from the handle alone, 1:1 and the same way for every port:
//     dram_buffer = ((handle & 0x03FFFFFF) - BUF_DESC_BASE) * (BUF_BYTES / DESC_BYTES)
// Shifting the handle left by BUF_SHIFT drops the channel bits (27..26 -> 33..32), so this
// is one instruction: alu_shf[d, K, +, handle, <<BUF_SHIFT] with K = -(BUF_DESC_BASE << 6).
#define BUF_DESC_BASE 0x10000         // SRAM offset of descriptor 0 of freelist 0
#define DESC_BYTES 32                 // 8 longwords of metadata per buffer
#define BUF_BYTES 2048                // DRAM bytes per buffer
#define BUF_SHIFT 6                   // log2(BUF_BYTES / DESC_BYTES)
#define BUFS_PER_PORT 512             // buffers per freelist (<= ring size: see RING_WORDS)
#define BUF_DATA_OFFSET 128           // headroom: the frame starts 128 bytes into the buffer
#define BUF_MAX_FRAME 1920            // BUF_BYTES - BUF_DATA_OFFSET: longer frames are dropped
#define FREELIST_QUEUE 0              // Q-array queue number of every freelist
#define CHANNEL_MASK 0x0C000000       // SRAM channel bits of a handle / Q-array address
#define K_BUFFER ((0 - (BUF_DESC_BASE << BUF_SHIFT)) & 0xFFFFFFFF)
#define K_DATA ((BUF_DATA_OFFSET - (BUF_DESC_BASE << BUF_SHIFT)) & 0xFFFFFFFF)

// ---------------------------------------------------------------- metadata (8 longwords)
// Receive writes LW0..LW3 with one sram[write]; transmit reads LW1..LW3.  LW4..LW7 are the
// fields of later pipeline stages (IXA layout); l2wire has no such stage and does not spend
// SRAM bandwidth on them (at 2 x 14.88 Mpps every longword written costs ~7 % of a channel).
//  LW0  buffer_next            0 (one buffer per frame); the Q-array link while on a freelist
//  LW1  offset << 16 | buffer_size   bytes of the frame in this buffer, from `offset`
//  LW2  packet_size << 16 | freelist queue   (the freelist channel is the handle's channel)
//  LW3  input_port << 16 | output_port
//  LW4  next_hop / flow id     (not written)
//  LW5  class / color          (not written)
//  LW6  rx status, timestamp   (not written)
//  LW7  packet_next            (not written)
#define META_WORDS 8
#define META_WRITE_WORDS 4
#define META_TX_FIRST_BYTE 4          // transmit reads LW1..LW3 from handle + 4
#define META_TX_WORDS 3

// ---------------------------------------------------------------- scratch
// Rings (l2wire.toml [[ring]]): one word per entry, the buffer handle.  A ring holds at
// least as many words as there are buffers on the freelist that feeds it, so a put can
// never overflow it and receive needs no "ring full" test (a test-then-put would race
// between threads anyway).
#define RING_WORDS 1024
// Drop counters (scratch byte addresses; the test and `npkit run` read them):
#define CNT_BASE 0x2000
#define CNT_RX_NO_BUFFER 0x2000       // + 4 * port: freelist empty, frame dropped
#define CNT_RX_TOO_LONG 0x2008        // + 4 * port: frame longer than BUF_MAX_FRAME
#define CNT_TX_RACE 0x2010            // + 4 * port: ring emptied between test and get (no loss)

// ---------------------------------------------------------------- local memory (transmit)
// Transmit ME, shared by its 8 threads (all use LM_ADDR 0 = 0): the TBUF allocation state,
// touched only inside the ordered allocation section.
//  word 0: elements allocated so far (wraps at 2^32)
//  word 1: TX_SEQUENCE last read (elements transmitted so far)

#endif
