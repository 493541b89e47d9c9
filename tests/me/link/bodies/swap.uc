// A hand-written body fragment (docs/me-backend.md, "The body fragment") doing what
// swap.mbl does: frames shorter than 14 bytes are dropped as reason 1 (runt); the others
// get source MAC 02:4e:50:00:00:<in_port> and leave by port in_port ^ 1.
// Header window: 16 bytes, $$0..$$3 = packet bytes 0..15.
body_entry:
    alu[a0, --, B, *l$index1[1]]        // len
    alu[--, a0, -, 14]
    blt[b_runt#]
    alu[b0, --, B, *l$index1[0]]        // in_port
    alu_shf[a1, --, B, $$1, >>16]       // word 1: dst[15:0] | src[47:32]
    alu_shf[a1, --, B, a1, <<16]
    immed[b1, 0x024E]
    alu[$$1, a1, OR, b1]
    immed[a2, 0x5000, <<16]             // word 2: src[31:0]
    alu[$$2, a2, OR, b0]
    alu[$$0, --, B, $$0]                // the rest of quadwords 0..1, unchanged
    alu[$$3, --, B, $$3]
    alu[a3, --, B, *l$index1[12]]
    dram[write, $$0, a3, 0, 2], ctx_swap[1]
    alu[b2, b0, XOR, 1]
    alu[*l$index1[2], --, B, b2]        // out_port
    immed[*l$index1[8], 1]              // forward
    br[body_exit#]
b_runt:
    immed[*l$index1[9], 1]              // runt
    immed[*l$index1[8], 2]              // drop
    br[body_exit#]
