// xferpool.uc -- docs/datapath.md's order across MEs, hand-written: a pool of TWO MEs per
// port shares the port's frames.  ME 0, 1 receive port 0 and transmit on port 1; ME 2, 3
// receive port 1 and transmit on port 0.  The 16 threads of a pool have a cyclic order
// (ME-major, context-minor).  Two tokens travel in it: REG (register on the receive-thread
// freelist: the MSF deals frames in registration order) and ALLOC (claim the next TBUF
// element of the output port).  A token goes to the next context by SAME_ME_SIGNAL, from
// context 7 of the pool's first ME to context 0 of its second by NEXT_NEIGHBOR_SIGNAL, and
// from context 7 of the second back to context 0 of the first through a scratch word
// (written 1; taken by swapping in 0, polled with ctx_arb[voluntary]).  The claim is a
// scratch[test_and_add] on the output port's counter, issued in the turn and awaited after
// it: the scratch unit takes the claims in the order the turns issue them (here one pool
// writes each output port; several pools of one output would interleave whole frames).
// Per frame: status -> msf[read] of the 52-byte window into $0..$12 -> REG turn -> element
// freed, window copied in -> out -> ALLOC turn (claim) -> wait for TBUF space (TX_SEQUENCE)
// -> msf[write] window -> control word.  Frames longer than the window are not handled
// (the test offers none).  Not a product: tests/me/link/test_xfer_path.py measures it.

.me 0 1 2 3

#define ELEMENT_SHIFT 7
#define TBUF_PART_ELEMENTS 32
#define TBUF_PART_MASK 31
#define HDR_WORDS 13                  // $0..$12; $13 carries tokens and the claim
#define TOK_BASE 0x2100               // scratch: + 8 * port + 4 * kind (0 REG, 1 ALLOC)
#define CLAIM_BASE 0x2200             // scratch: + 4 * output port: elements claimed

#define SIG_STATUS 1
#define SIG_TOK_REG 2
#define SIG_TOK_ALLOC 3
#define SIG_HDR 4
#define SIG_DATA 5
#define SIG_CTL 6
#define SIG_SEQ 7
#define SIG_CLAIM 8
#define SIG_TOKW 9                    // scratch token word swapped

#define XFER_STATUS 14

// bank A
#define reg_word a0
#define same_reg a1       // SAME_ME_SIGNAL / NEXT_NEIGHBOR_SIGNAL value for REG
#define same_alloc a2     // ... for ALLOC
#define mask16 a3
#define ctl_base a4
#define seq_addr a5
#define tbuf_base a6
#define part_first a7
#define out_hi a8
#define tok_reg_w a9      // scratch address of the REG wrap word
#define tok_alloc_w a10   // scratch address of the ALLOC wrap word
#define claim_addr a11
#define t_a a12
#define ret a13
// bank B
#define st0 b0
#define st1 b1
#define len b2
#define rbuf b3
#define fl_csr b4
#define elem b5
#define ctl_addr b6
#define tbuf b7
#define port b8
#define t_b b9
#define outp b10
#define flags b11         // bit 0: I take both tokens from the wrap word; bit 1: I pass
                          // by NEXT_NEIGHBOR_SIGNAL; bit 2: I pass through the wrap word
#define seq b12

init:
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]                             // ME << 3 | ctx
    alu_shf[port, 1, AND, t_b, >>4]           // ME 0, 1 -> port 0; ME 2, 3 -> port 1
    alu[outp, port, XOR, 1]
    alu[fl_csr, port, +, MSF_RX_THREAD_FREELIST_BASE]
    immed32[out_hi, 0x3000000]                // SOP | EOP: every frame is one TBUF element
    alu_shf[out_hi, out_hi, OR, outp, <<16]   // (one control word per element, docs/media.md)
    alu_shf[part_first, --, B, outp, <<5]
    immed32[seq_addr, MSF_TX_SEQUENCE_BASE]
    alu_shf[seq_addr, seq_addr, +, outp, <<2]
    immed32[ctl_base, MSF_TBUF_CTL_BASE]
    immed32[tbuf_base, MSF_TBUF_BASE]
    immed[tok_reg_w, TOK_BASE]
    alu_shf[tok_reg_w, tok_reg_w, +, port, <<3]
    alu[tok_alloc_w, tok_reg_w, +, 4]
    immed[claim_addr, CLAIM_BASE]
    alu_shf[claim_addr, claim_addr, +, outp, <<2]
    immed[reg_word, ((SIG_STATUS << 8) | XFER_STATUS)]
    immed[mask16, 0xFFFF]
    // roles in the cyclic order: ctx < 7 signals ctx + 1; ctx 7 of the first ME (ME even)
    // signals context 0 of the next ME; ctx 7 of the second writes the wrap word
    alu[t_a, t_b, AND, 7]                     // ctx (bank A copy)
    alu[t_b, t_b, AND, 0xF]                   // (ME & 1) << 3 | ctx
    immed[flags, 0]
    alu[--, t_b, -, 0]
    bne[not_first#]
    immed[flags, 1]
not_first:
    alu[--, t_b, -, 7]
    bne[not_nn#]
    immed[flags, 2]
not_nn:
    alu[--, t_b, -, 15]
    bne[not_wrap#]
    immed[flags, 4]
not_wrap:
    alu[t_b, t_a, +, 1]
    alu[t_b, t_b, AND, 7]                     // next context (0 after 7)
    alu[same_reg, t_b, OR, (SIG_TOK_REG << 3)]
    alu[same_alloc, t_b, OR, (SIG_TOK_ALLOC << 3)]
    // owed: one header write and one control word per frame
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_a, t_b, OR, (SIG_DATA << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    alu[t_a, t_b, OR, (SIG_CTL << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_a]
    // the first thread of the pool holds both tokens: they start in the wrap words
    br_bclr[flags, 0, first_register#]
    immed[$13, 1]
    scratch[write, $13, tok_reg_w, 0, 1], sig_done[SIG_TOKW]
    ctx_arb[SIG_TOKW]
    scratch[write, $13, tok_alloc_w, 0, 1], sig_done[SIG_TOKW]
    ctx_arb[SIG_TOKW]
first_register:
    load_addr[ret, first_reg_taken#]
    br[take_reg#]
first_reg_taken:
    msf[fast_wr, --, fl_csr, reg_word]
    load_addr[ret, rx_loop#]
    br[pass_reg#]

rx_loop:
    ctx_arb[SIG_STATUS]
    alu[st0, --, B, $14]
    alu[st1, --, B, $15]
    alu[len, mask16, AND, st0]
    alu[rbuf, mask16, AND, st1]
    alu_shf[rbuf, --, B, rbuf, <<ELEMENT_SHIFT]
    msf[read, $0, rbuf, 0, HDR_WORDS], sig_done[SIG_HDR]
    load_addr[ret, reg_taken#]
    br[take_reg#]
reg_taken:
    msf[fast_wr, --, fl_csr, reg_word]
    load_addr[ret, reg_passed#]
    br[pass_reg#]
reg_passed:
    ctx_arb[SIG_HDR, SIG_DATA, SIG_CTL]
    msf[fast_wr, --, MSF_RBUF_ELEMENT_DONE, st1]
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
    alu[$14, out_hi, OR, len]                 // control word
    load_addr[ret, alloc_taken#]
    br[take_alloc#]
alloc_taken:
    immed[$13, 1]                             // one element a frame
    scratch[test_and_add, $13, claim_addr, 0], sig_done[SIG_CLAIM]
    load_addr[ret, alloc_passed#]
    br[pass_alloc#]
alloc_passed:
    ctx_arb[SIG_CLAIM]
    alu[seq, --, B, $13]                      // my element's sequence number
space:
    msf[read, $13, seq_addr, 0, 1], sig_done[SIG_SEQ]
    ctx_arb[SIG_SEQ]
    alu[t_b, seq, -, $13]                     // claimed before me and not yet sent
    alu[--, (TBUF_PART_ELEMENTS - 1), -, t_b]
    blt[space#]
    alu[elem, TBUF_PART_MASK, AND, seq]
    alu[elem, elem, +, part_first]
    alu_shf[tbuf, tbuf_base, +, elem, <<ELEMENT_SHIFT]
    alu_shf[ctl_addr, ctl_base, +, elem, <<2]
    msf[write, $0, tbuf, 0, HDR_WORDS], sig_done[SIG_DATA]
    ctx_arb[SIG_DATA]
    msf[write, $14, ctl_addr, 0, 1], sig_done[SIG_CTL]
    local_csr_rd[ACTIVE_CTX_STS]
    immed[t_b, 0]
    alu[t_b, t_b, AND, 7]
    alu[t_b, t_b, OR, (SIG_DATA << 3)]
    local_csr_wr[SAME_ME_SIGNAL, t_b]
    br[rx_loop#]

// ---------------------------------------------------------------- tokens (return to ret)
take_reg:
    br_bset[flags, 0, take_reg_w#]
    ctx_arb[SIG_TOK_REG]
    rtn[ret]
take_reg_w:
    immed[$13, 0]
    scratch[swap, $13, tok_reg_w, 0, 1], sig_done[SIG_TOKW]
    ctx_arb[SIG_TOKW]
    alu[--, --, B, $13]
    bne[took_reg_w#]
    ctx_arb[voluntary]
    br[take_reg_w#]
took_reg_w:
    rtn[ret]
pass_reg:
    br_bset[flags, 1, pass_reg_nn#]
    br_bset[flags, 2, pass_reg_w#]
    local_csr_wr[SAME_ME_SIGNAL, same_reg]
    rtn[ret]
pass_reg_nn:
    local_csr_wr[NEXT_NEIGHBOR_SIGNAL, same_reg]
    rtn[ret]
pass_reg_w:
    immed[$13, 1]
    scratch[write, $13, tok_reg_w, 0, 1], sig_done[SIG_TOKW]
    ctx_arb[SIG_TOKW]
    rtn[ret]
take_alloc:
    br_bset[flags, 0, take_alloc_w#]
    ctx_arb[SIG_TOK_ALLOC]
    rtn[ret]
take_alloc_w:
    immed[$13, 0]
    scratch[swap, $13, tok_alloc_w, 0, 1], sig_done[SIG_TOKW]
    ctx_arb[SIG_TOKW]
    alu[--, --, B, $13]
    bne[took_alloc_w#]
    ctx_arb[voluntary]
    br[take_alloc_w#]
took_alloc_w:
    rtn[ret]
pass_alloc:
    br_bset[flags, 1, pass_alloc_nn#]
    br_bset[flags, 2, pass_alloc_w#]
    local_csr_wr[SAME_ME_SIGNAL, same_alloc]
    rtn[ret]
pass_alloc_nn:
    local_csr_wr[NEXT_NEIGHBOR_SIGNAL, same_alloc]
    rtn[ret]
pass_alloc_w:
    immed[$13, 1]
    scratch[write, $13, tok_alloc_w, 0, 1], sig_done[SIG_TOKW]
    ctx_arb[SIG_TOKW]
    rtn[ret]
