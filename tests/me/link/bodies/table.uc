// A hand-written body fragment doing what table.mbl does on ports 0 and 1 (the in_port
// 7 branch is never taken): count the frame in seen[in_port] (scratch), read
// out_of[dst & 0xFF] (SRAM) and bias[in_port & 1] (local memory, through LM_ADDR_0, which
// is restored), forward to their XOR.  Addresses are the checker's word offsets x 4:
// out_of = SRAM word 128, seen = scratch word 4, bias = local word 4.
// Header window: 8 bytes; the destination MAC's last byte is bits 23..16 of $$1.
body_entry:
    alu[a0, --, B, *l$index1[1]]        // len
    alu[--, a0, -, 14]
    blt[b_runt#]
    alu[b0, --, B, *l$index1[0]]        // in_port
    alu_shf[a1, --, B, b0, <<2]
    scratch[incr, --, a1, 0x10]         // seen[in_port]
    immed[a2, 0xFF]
    alu_shf[b1, --, B, $$1, >>16]
    alu[b1, a2, AND, b1]
    alu_shf[b1, --, B, b1, <<2]
    immed[a3, 0x200]                    // out_of
    sram[read, $0, a3, b1, 1], ctx_swap[1]
    local_csr_rd[ACTIVE_LM_ADDR_0]
    immed[a4, 0]                        // the spill area's address, restored below
    alu[b2, b0, AND, 1]
    alu[b2, b2, +, 4]                   // bias
    alu_shf[b2, --, B, b2, <<2]
    local_csr_wr[ACTIVE_LM_ADDR_0, b2]
    nop
    nop
    nop
    alu[a5, --, B, *l$index0[0]]
    local_csr_wr[ACTIVE_LM_ADDR_0, a4]
    immed[b3, 0xFFFF]
    alu[a6, $0, XOR, a5]
    alu[a6, a6, AND, b3]
    alu[*l$index1[2], --, B, a6]        // out_port
    immed[*l$index1[8], 1]              // forward
    br[body_exit#]
b_runt:
    immed[*l$index1[9], 1]
    immed[*l$index1[8], 2]
    br[body_exit#]
