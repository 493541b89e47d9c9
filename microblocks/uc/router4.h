// router4.h -- the layout contract of the hand-written IPv4 router (rx_eth.uc,
// ipv4_fwd.uc, tx_eth.uc), its run manifest (examples/router4/router4.toml) and the Python
// side (microblocks/uc/router4.py, which the tests and the control plane import; the
// layout test checks every number below against it).  The design is explained in
// examples/router4/README.md.
//
// Numbers of the chip itself (local CSRs, SCR_Ring*_Empty, MSF_* addresses) come from the
// ISA table through the assembler.  GEOMETRY numbers are the IXP2800 preset with two ports.

#ifndef ROUTER4_H
#define ROUTER4_H

// ---------------------------------------------------------------- ME mapping
// ME 0, 1: rx_eth.uc    receive port p = ME; frames alternate between RX rings 2p (half A)
//                       and 2p + 1 (half B)
// ME 2..5: ipv4_fwd.uc  forward RX ring (ME - 2): port p = (ME - 2) >> 1 has the pair
//                       ME 2 + 2p (role A, even frames) -> ME 3 + 2p (role B, odd frames);
//                       A hands each verdict to B through B's next-neighbour ring, B puts
//                       both halves on the TX rings in arrival order
// ME 6, 7: tx_eth.uc    TX ring of port p = ME - 6 -> transmit port p
// Each ME runs 8 threads; every stage keeps the arrival order of its input port with
// ordered sections (token passing between the 8 threads of the ME).
// (npkit.link overrides the #ifndef numbers for a compiled pipeline on 4 ports;
// MEDIA_PORT_MASK: receive / transmit port = ME number & MEDIA_PORT_MASK)
#ifndef PORTS
#define PORTS 2
#endif
#ifndef FWD_FIRST_ME
#define FWD_FIRST_ME 2
#endif
#ifndef TX_FIRST_ME
#define TX_FIRST_ME 6
#endif
#ifndef MEDIA_PORT_MASK
#define MEDIA_PORT_MASK 1
#endif

// ---------------------------------------------------------------- GEOMETRY (ixp2800, 2 ports)
#define ELEMENT_SHIFT 7               // 128-byte RBUF/TBUF elements
#define ELEMENT_BYTES 128
#ifndef TBUF_PART_ELEMENTS
#define TBUF_PART_ELEMENTS 32         // TBUF elements per port: 8192 / 2 ports / 128
#define TBUF_PART_MASK 31
#define TBUF_PART_SHIFT 5             // log2(TBUF_PART_ELEMENTS)
#endif

// ---------------------------------------------------------------- buffers
// A buffer handle is the SRAM byte address of the buffer's 32-byte descriptor (metadata),
// channel bits 27..26 included.  Three freelists (SRAM Q-array queues) own the buffers:
//   receive port 0: SRAM channel 0, queue 0, descriptors BUF_DESC_BASE + i * 32
//   receive port 1: SRAM channel 1, queue 0, descriptors after port 0's
//   XScale (host): SRAM channel 3, queue 0, descriptors after port 1's
// The descriptor offsets never overlap across channels, so the DRAM buffer follows from
// the handle alone, the same way for all three (the channel bits shift out of the word):
//     dram_buffer = ((handle & 0x03FFFFFF) - BUF_DESC_BASE) * (BUF_BYTES / DESC_BYTES)
//                 = K_BUFFER + (handle << BUF_SHIFT)            (mod 2^32)
// and the frame starts BUF_DATA_OFFSET bytes into it (K_DATA + (handle << BUF_SHIFT)).
// The numbers under #ifndef are the ones the ME backend's linker (npkit.link)
// moves for a compiled pipeline, whose own memories come first; the generated header that
// defines them is included before this one.  RX_FL_CHANNEL: port p's freelist is on SRAM
// channel RX_FL_CHANNEL + p.
#ifndef RX_FL_CHANNEL
#define RX_FL_CHANNEL 0
#endif
#ifndef BUF_DESC_BASE
#define BUF_DESC_BASE 0x10000         // SRAM offset of descriptor 0 of port 0's freelist
#endif
#define DESC_BYTES 32                 // 8 longwords of metadata per buffer
// (npkit.link gives a program larger buffers when a port's MTU needs them: 16 KB for
// jumbo frames, with BUF_SHIFT 9 and BUF_MAX_FRAME 16256; docs/link.md "Buffer size")
#ifndef BUF_BYTES
#define BUF_BYTES 2048                // DRAM bytes per buffer
#define BUF_SHIFT 6                   // log2(BUF_BYTES / DESC_BYTES)
#define BUF_MAX_FRAME 1920            // BUF_BYTES - BUF_DATA_OFFSET: longer frames are dropped
#endif
#define BUFS_PER_PORT 128             // buffers per receive freelist (ring sizes below)
#define XS_BUFS 64                    // buffers of the XScale's freelist
#define XS_CHANNEL 3                  // SRAM channel of the XScale's freelist
#define XS_DESC_BASE 0x12000          // BUF_DESC_BASE + 2 * BUFS_PER_PORT * DESC_BYTES
#define BUF_DATA_OFFSET 128           // headroom: the frame starts 128 bytes into the buffer
#define FREELIST_QUEUE 0              // Q-array queue number of every freelist
#define CHANNEL_MASK 0x0C000000       // SRAM channel bits of a handle / Q-array address
#define K_BUFFER ((0 - (BUF_DESC_BASE << BUF_SHIFT)) & 0xFFFFFFFF)
#define K_DATA ((BUF_DATA_OFFSET - (BUF_DESC_BASE << BUF_SHIFT)) & 0xFFFFFFFF)

// ---------------------------------------------------------------- metadata (8 longwords)
//  LW0  buffer_next            the Q-array link while on a freelist; not written (one
//                              buffer per frame)
//  LW1  offset << 16 | buffer_size   the frame's bytes in this buffer, from `offset`
//  LW2  packet_size << 16 | freelist queue   (the freelist channel is the handle's)
//  LW3  input_port << 16 | output_port       (receive writes output_port NO_PORT; the
//                              host writes HOST_PORT as input port for injected frames)
//  LW4..LW7                    not written (later pipeline stages)
// Receive writes LW1..LW3 (one sram[write] at handle + 4); transmit reads LW1..LW2; the
// forwarding ME reads no metadata (the RX ring entry carries the length).
#define META_WORDS 8
#define META_FIRST_BYTE 4             // receive writes LW1..LW3 from handle + 4
#define META_WRITE_WORDS 3
#define META_TX_WORDS 2               // transmit reads LW1..LW2
#define NO_PORT 0xFFFF
#define HOST_PORT 0xFFFE

// ---------------------------------------------------------------- scratch rings
// Every ring can hold every buffer that can ever be on it at once, so no put can overflow
// (no "ring full" test, which would race between threads anyway):
//   RX ring 2p+h: entries (handle, frame length), 2 words; only port p's buffers
//                 -> 2 * BUFS_PER_PORT = 256 <= 256 words
//   TX ring p   : entries (handle), 1 word; buffers of both receive ports and the host's
//                 -> 2 * BUFS_PER_PORT + XS_BUFS = 320 <= 512 words
//   exception   : entries (handle, code << 16 | next_hop), 2 words; only received buffers
//                 -> 2 * 2 * BUFS_PER_PORT = 512 <= 512 words
// The NN ring from a role-A ME to its role-B ME carries one word per frame (B's NN ring:
// 127 words; A tests NN_FULL before each put, and only one A thread puts at a time).
#ifndef RX_RING_BASE                  // (npkit.link moves it for more RX rings)
#define RX_RING_BASE 0                // RX ring of port p, half h = RX_RING_BASE + 2p + h
#endif
#ifndef TX_RING_BASE
#define TX_RING_BASE 4                // TX ring of port p = TX_RING_BASE + p
#define EXC_RING 6
#endif
#define RX_RING_WORDS 256
#define TX_RING_WORDS 512
#define EXC_RING_WORDS 512
#define RX_ENTRY_WORDS 2
#define EXC_ENTRY_WORDS 2
#define RX_RING_WORD0 0               // scratch word where RX ring 0 starts (1, 2, 3 follow)
#define TX_RING_WORD0 1024            // TX ring 0 (TX ring 1 follows)
#define EXC_RING_WORD 2048

// ---------------------------------------------------------------- exception codes
// The Exc codes of microblocks/router_common.mbl; next_hop is meta.next_hop of the MBL
// block (the route's next-hop index for frag_needed / fragment, else 0).
#define EXC_TTL_EXPIRED 1
#define EXC_NO_ROUTE 2
#define EXC_OPTIONS 3
#define EXC_FOR_ROUTER 4
#define EXC_FRAG_NEEDED 5
#define EXC_FRAGMENT 6
#define EXC_NOT_IPV4 0x100            // any other EtherType (ARP, IPv6 for now): eth_classify

// ---------------------------------------------------------------- scratch counters
// One 32-bit counter per drop reason (scratch byte addresses, after the rings); the names
// are the MBL block's drop reasons (not_ipv4 stays 0: other EtherTypes are exceptions).
#define CNT_BASE 0x3000
#define CNT_RUNT 0x3000
#define CNT_NOT_IPV4 0x3004
#define CNT_IP_TOO_SHORT 0x3008
#define CNT_BAD_VERSION 0x300C
#define CNT_BAD_IHL 0x3010
#define CNT_BAD_LENGTH 0x3014
#define CNT_BAD_CHECKSUM 0x3018
#define CNT_MARTIAN_SOURCE 0x301C
#define CNT_MARTIAN_DESTINATION 0x3020
#define CNT_IP_FORWARDED 0x3024       // ip_forwarded[0] of the MBL block
#define CNT_BAD_PORT 0x3028           // next hop names a port the chip does not have
#ifndef CNT_RX_NO_BUFFER
#define CNT_RX_NO_BUFFER 0x3030       // + 4 * port: freelist empty, frame dropped
#endif
#ifndef CNT_RX_TOO_LONG
#define CNT_RX_TOO_LONG 0x3038        // + 4 * port: frame longer than BUF_MAX_FRAME
#endif
#ifndef CNT_TX_RACE
#define CNT_TX_RACE 0x3040            // + 4 * port: TX ring emptied between test and get
#endif
#define CNT_WORDS 18

// ---------------------------------------------------------------- SRAM tables
// The MBL program's structures, word for word (router_common.mbl, lpm.mbl):
//  fib4_trie  SRAM channel 2 from TRIE_OFFSET: runtime/lpm.py's 16-8-8 trie; CHILD
//             pointers are word offsets relative to the trie base.  TRIE_WORDS words.
//  local4     SRAM channel 2 at LOCAL4_OFFSET: LOCAL4_SIZE entries [VALID | 0, value, key]
//             (3 words), open addressing from slot exact_hash(key) & (LOCAL4_SIZE - 1).
//  nexthops   SRAM channel 3 at NH_OFFSET: NH_SIZE records of 4 words, MSB first:
//             dmac 48 | smac 48 | port 16 | mtu 16; the index is masked to NH_SIZE.
// Channels 0 and 1 carry the receive ports' metadata and freelists, so the forwarding
// lookups do not queue behind them.
#define TABLE_CHANNEL 2
#define LOCAL4_OFFSET 0x1000
#define LOCAL4_SIZE 16
#define LOCAL4_ENTRY_BYTES 12
#define TRIE_OFFSET 0x10000
#define TRIE_WORDS 2080768            // (8 MB - TRIE_OFFSET) / 4: the rest of the channel
#define NH_CHANNEL 3
#define NH_OFFSET 0x20000
#define NH_SIZE 1024
#define NH_ENTRY_BYTES 16
#define LOCAL4_ADDR 0x08001000        // TABLE_CHANNEL << 26 | LOCAL4_OFFSET
#define TRIE_ADDR 0x08010000          // TABLE_CHANNEL << 26 | TRIE_OFFSET
#define NH_ADDR 0x0C020000            // NH_CHANNEL << 26 | NH_OFFSET
#define EXACT_HASH_MULTIPLIER 0x9E3779B1
#define LPM_CHILD_BIT 31
#define LPM_ROUTE_BIT 30
#define VALID_BIT 31

// ---------------------------------------------------------------- local memory
// Shared by the 8 threads of an ME (LM_ADDR 0 = 0), touched only inside an ordered section:
//  receive:        word 0: the RX ring half (0 = A, 1 = B) of the next frame put
//  forwarding (B): word 0: frames of role A whose verdicts B has applied (a_done)
//                  word 1: B's own frames applied (b_done)
//  transmit:       word 0: TBUF elements allocated so far;  word 1: TX_SEQUENCE seen
// The NN record from A to B: 0 = nothing to transmit (dropped, or an exception A has put
// on the exception ring itself), else handle | output port (handles are 32-byte aligned).

#endif
