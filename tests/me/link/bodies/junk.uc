// A hand-written body fragment that breaks the rules the dispatch must survive: first
// byte 0xFF -> forward to port 9 (no such port: the dispatch drops it as bad_port);
// 0xFE -> no verdict at all; 0xFD -> drop with reason 200 (not a reason of the program:
// counted as no_verdict); anything else -> forward to port 1 - in_port.  It also clobbers
// every register the ABI lends it (a0..a11, b0..b11).
// Header window: 8 bytes.
body_entry:
    immed[a0, 0x5A5A]
    immed[a1, 0x5A5A]
    immed[a2, 0x5A5A]
    immed[a3, 0x5A5A]
    immed[a4, 0x5A5A]
    immed[a5, 0x5A5A]
    immed[a6, 0x5A5A]
    immed[a7, 0x5A5A]
    immed[a8, 0x5A5A]
    immed[a9, 0x5A5A]
    immed[a10, 0x5A5A]
    immed[a11, 0x5A5A]
    immed[b0, 0x5A5A]
    immed[b1, 0x5A5A]
    immed[b2, 0x5A5A]
    immed[b3, 0x5A5A]
    immed[b4, 0x5A5A]
    immed[b5, 0x5A5A]
    immed[b6, 0x5A5A]
    immed[b7, 0x5A5A]
    immed[b8, 0x5A5A]
    immed[b9, 0x5A5A]
    immed[b10, 0x5A5A]
    immed[b11, 0x5A5A]
    br=byte[$$0, 3, 0xFF, b_bad_port#]
    br=byte[$$0, 3, 0xFE, b_none#]
    br=byte[$$0, 3, 0xFD, b_bad_reason#]
    alu[b0, --, B, *l$index1[0]]
    alu[b0, b0, XOR, 1]
    alu[*l$index1[2], --, B, b0]
    immed[*l$index1[8], 1]
    br[body_exit#]
b_bad_port:
    immed[*l$index1[2], 9]
    immed[*l$index1[8], 1]
    br[body_exit#]
b_none:
    br[body_exit#]
b_bad_reason:
    immed[*l$index1[9], 200]
    immed[*l$index1[8], 2]
    br[body_exit#]
