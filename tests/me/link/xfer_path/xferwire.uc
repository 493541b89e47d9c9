// xferwire.uc -- a measured prototype of docs/datapath.md's fast path, hand-written: the
// header never goes to DRAM.  One ME per port, all 8 threads; ME p receives port p and
// transmits on port p ^ 1.  Per frame, each thread:
//   1. gets the MSF receive status (autopushed into $14/$15 + SIG_STATUS);
//   2. reads the frame's first HDR_WORDS longwords RBUF -> SRAM-in transfer registers
//      $0..$13 (msf[read]) and re-registers for the next frame in context order;
//   3. frees the RBUF element and copies the header to the SRAM-out registers $0..$13
//      (where a compiled body would rewrite it);
//   4. in context order claims the next TBUF element of the output port (LM words 0, 1:
//      allocated, TX_SEQUENCE last read; one ME writes each output port) and passes the
//      token at once;
//   5. writes the header into the TBUF (msf[write]) and then the control word.
// Frames longer than the window (HDR_BYTES) would need the DRAM tail path of
// docs/datapath.md: this prototype drops them and counts them (CNT_TOO_LONG).
// Not a product: tests/me/link/test_xfer_path.py runs it to measure DRAM and ME cycles.

.me 0 1

#define ELEMENT_SHIFT 7               // 128-byte RBUF/TBUF elements (chip preset)
#define TBUF_PART_ELEMENTS 32         // 8192 / 2 ports / 128
#define TBUF_PART_MASK 31
#define HDR_WORDS 14                  // $0..$13: the SRAM-in registers not used by status
#define HDR_BYTES 56
#define CNT_TOO_LONG 0x2000           // scratch byte address, + 4 * port

#define SIG_STATUS 1      // autopush: status in $14/$15
#define SIG_TOK_REG 2     // my turn to register on the receive-thread freelist
#define SIG_TOK_ALLOC 3   // my turn to claim a TBUF element
#define SIG_HDR 4         // header in $0..$13 (in)
#define SIG_DATA 5        // header written to the TBUF ($0..$13 out free again)
#define SIG_CTL 6         // control word written ($14 out free again)
#define SIG_SEQ 7         // TX_SEQUENCE in $0 (in)

#define XFER_STATUS 14

// bank A
#define reg_word a0       // (SIG_STATUS << 8) | XFER_STATUS
#define tok_reg_next a1
#define tok_alloc_next a2
#define mask16 a3
#define max_len a4
#define ctl_base a5       // MSF_TBUF_CTL_BASE
#define seq_addr a6       // MSF_TX_SEQUENCE_BASE + 4 * output port
#define tbuf_base a7      // MSF_TBUF_BASE
#define part_first a8     // first TBUF element of the output port's partition
#define cnt_too_long a9
#define out_hi a10        // output port << 16 | SOP | EOP
#define t_a a11
// bank B
#define st0 b0
#define st1 b1
#define len b2
#define rbuf b3
#define fl_csr b4         // MSF_RX_THREAD_FREELIST_BASE + port
#define elem b5
#define ctl_addr b6
#define tbuf b7
#define port b8
#define t_b b9
#define outp b10         // output port

init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu_shf[port, 1, AND, t_b, >>3]           // port = ME & 1
    alu[fl_csr, port, +, MSF_RX_THREAD_FREELIST_BASE]
    alu[outp, port, XOR, 1]
    immed32[out_hi, 0x3000000]                // SOP | EOP: every frame is one TBUF element
    alu_shf[out_hi, out_hi, OR, outp, <<16]   // (one control word per element, docs/media.md)
    alu_shf[part_first, --, B, outp, <<5]     // output port * TBUF_PART_ELEMENTS
    immed32[seq_addr, MSF_TX_SEQUENCE_BASE]
    alu_shf[seq_addr, seq_addr, +, outp, <<2]
    immed32[ctl_base, MSF_TBUF_CTL_BASE]
    immed32[tbuf_base, MSF_TBUF_BASE]
    immed[cnt_too_long, CNT_TOO_LONG]
    alu_shf[cnt_too_long, cnt_too_long, +, port, <<2]
    alu[t_b, t_b, +, 1]
    alu[t_b, t_b, AND, 7]
    alu[tok_reg_next, t_b, OR, (SIG_TOK_REG << 3)]
    alu[tok_alloc_next, t_b, OR, (SIG_TOK_ALLOC << 3)]
    immed[reg_word, ((SIG_STATUS << 8) | XFER_STATUS)]
    immed[mask16, 0xFFFF]
    immed[max_len, HDR_BYTES]
    immed[t_b, 0]
    local_csr_wr[ACTIVE_LM_ADDR_0, t_b]
    nop
    nop
    nop
    // a header write and a control-word write are owed at every frame: owe the first ones
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_a, t_b, OR, (SIG_DATA << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    alu[t_a, t_b, OR, (SIG_CTL << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    br!=ctx[0, first_register#]
    immed[*l$index0[0], 0]
    immed[*l$index0[1], 0]
    immed[t_b, (SIG_TOK_REG << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    immed[t_b, (SIG_TOK_ALLOC << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
first_register:
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]

rx_loop:
    ctx_arb[SIG_STATUS]
    alu[st0, --, B, $14]
    alu[st1, --, B, $15]
    alu[len, mask16, AND, st0]
    alu[rbuf, mask16, AND, st1]
    alu_shf[rbuf, --, B, rbuf, <<ELEMENT_SHIFT]   // MSF_RBUF_BASE is 0
    alu[--, max_len, -, len]
    blt[too_long#]
    msf[read, $0, rbuf, 0, HDR_WORDS], sig_done[SIG_HDR]
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]
    ctx_arb[SIG_HDR, SIG_DATA, SIG_CTL]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    // SRAM-in -> SRAM-out: the header a compiled body would rewrite in place
    alu[$0, --, B, $0]
    alu[$1, --, B, $1]
    alu[$2, --, B, $2]
    alu[$3, --, B, $3]
    alu[$4, --, B, $4]
    alu[$5, --, B, $5]
    alu[$6, --, B, $6]
    alu[$7, --, B, $7]
    alu[$8, --, B, $8]
    alu[$9, --, B, $9]
    alu[$10, --, B, $10]
    alu[$11, --, B, $11]
    alu[$12, --, B, $12]
    alu[$13, --, B, $13]
    alu[$14, out_hi, OR, len]                 // control word: length | port << 16 | SOP | EOP
    ctx_arb[SIG_TOK_ALLOC]
alloc:
    alu[t_b, 1, +, *l$index0[0]]              // allocated after this frame
    alu[t_b, t_b, -, *l$index0[1]]            // ... minus transmitted = in use
    alu[--, TBUF_PART_ELEMENTS, -, t_b]
    blt[tbuf_full#]
    alu[elem, TBUF_PART_MASK, AND, *l$index0[0]]
    alu[*l$index0[0], 1, +, *l$index0[0]]
    local_csr_wr[SAME_ME_SIGNAL, tok_alloc_next]
    alu[elem, elem, +, part_first]
    alu_shf[tbuf, tbuf_base, +, elem, <<ELEMENT_SHIFT]
    alu_shf[ctl_addr, ctl_base, +, elem, <<2]
    msf[write, $0, tbuf, 0, HDR_WORDS], sig_done[SIG_DATA]
    ctx_arb[SIG_DATA]
    msf[write, $14, ctl_addr, 0, 1], sig_done[SIG_CTL]
    // SIG_DATA is owed again for the next frame's ctx_arb
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_b, t_b, OR, (SIG_DATA << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    br[rx_loop#]
tbuf_full:
    msf[read, $0, seq_addr, 0, 1], sig_done[SIG_SEQ]
    ctx_arb[SIG_SEQ]
    alu[*l$index0[1], --, B, $0]
    br[alloc#]
too_long:
    ctx_arb[SIG_TOK_REG]
    msf[fast_wr, --, fl_csr, reg_word]
    local_csr_wr[SAME_ME_SIGNAL, tok_reg_next]
    scratch[incr, --, cnt_too_long, 0]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
    ctx_arb[SIG_TOK_ALLOC]
    local_csr_wr[SAME_ME_SIGNAL, tok_alloc_next]
    br[rx_loop#]
