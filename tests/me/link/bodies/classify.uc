// A hand-written body fragment doing what classify.mbl does: len < 64 dropped as reason 1
// (short), EtherType 0x0806 an exception 7 with next_hop 0x1234, 0x86DD dropped as
// reason 3 (ipv6), everything else back out of its input port unchanged.
// Header window: 16 bytes; the EtherType is the high half of $$3.
body_entry:
    alu[a0, --, B, *l$index1[1]]        // len
    immed[b1, 64]
    alu[--, a0, -, b1]
    blt[b_short#]
    alu_shf[a1, --, B, $$3, >>16]
    immed[b0, 0x0806]
    alu[--, a1, -, b0]
    beq[b_arp#]
    immed[b0, 0x86DD]
    alu[--, a1, -, b0]
    beq[b_ipv6#]
    alu[b1, --, B, *l$index1[0]]
    alu[*l$index1[2], --, B, b1]        // out_port = in_port
    immed[*l$index1[8], 1]
    br[body_exit#]
b_arp:
    immed[*l$index1[5], 0x1234]         // next_hop
    immed[*l$index1[9], 7]
    immed[*l$index1[8], 3]              // exception
    br[body_exit#]
b_short:
    immed[*l$index1[9], 1]
    immed[*l$index1[8], 2]
    br[body_exit#]
b_ipv6:
    immed[*l$index1[9], 3]
    immed[*l$index1[8], 2]
    br[body_exit#]
