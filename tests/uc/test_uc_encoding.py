"""Every mnemonic of the ISA table assembles to the word sim.isa.encode gives for
hand-derived fields (operand codes from docs/isa.md: A 0x00, B 0x20, $ 0x40, $$ 0x60,
n$ 0x80, *l$index0[k] 0x90, *l$index1[k] 0xA0, ++/-- 0xB0.., *n$index++ 0xB4, -- 0xB5,
immediates 0xC0 + n)."""

import pytest

from npkit.compiler.uc import assemble_text
from npkit.sim import isa

NONE = 0xB5


def imm(n: int) -> int:
    return 0xC0 + n


# mnemonic -> (source, address of the word under test, expected fields)
# programs put label L# at address 0 (a nop) so branch targets are 0 unless stated.
L0 = "L#: nop\n"
EXAMPLES: dict[str, tuple[str, int, dict[str, int]]] = {
    "alu": ("alu[a1, a2, AND~, b3]", 0,
            {"op": 4, "dest": 0x01, "a": 0x02, "b": 0x23, "shift": 0, "shamt": 0}),
    "alu_shf": ("alu_shf[b1, a2, +, b3, >>rot7]", 0,
                {"op": 7, "dest": 0x21, "a": 0x02, "b": 0x23, "shift": 3, "shamt": 7}),
    "dbl_shf": ("dbl_shf[a0, a1, b1, >>9]", 0,
                {"dest": 0, "a": 1, "b": 0x21, "shamt": 9, "indirect": 0}),
    "immed": ("immed[a1, 0xffff0000]", 0,
              {"variant": 0, "dest": 1, "value": 0xFFFF, "shift": 2, "invert": 0}),
    "immed_w0": ("immed_w0[b2, 0xbeef]", 0, {"variant": 1, "dest": 0x22, "value": 0xBEEF}),
    "immed_w1": ("immed_w1[b2, 0x1234]", 0, {"variant": 2, "dest": 0x22, "value": 0x1234}),
    "immed_b0": ("immed_b0[a3, 0x11]", 0, {"variant": 3, "dest": 3, "value": 0x11}),
    "immed_b1": ("immed_b1[a3, 0x22]", 0, {"variant": 4, "dest": 3, "value": 0x22}),
    "immed_b2": ("immed_b2[a3, 0x33]", 0, {"variant": 5, "dest": 3, "value": 0x33}),
    "immed_b3": ("immed_b3[a3, 255]", 0, {"variant": 6, "dest": 3, "value": 0xFF}),
    "load_addr": ("nop\nnop\nhere#: load_addr[a0, here#]", 2,
                  {"variant": 7, "dest": 0, "value": 2}),
    "ld_field": ("ld_field[a3, 0110, b1, <<8]", 0,
                 {"dest": 3, "mask": 6, "src": 0x21, "shift": 0, "shamt": 8, "clr": 0,
                  "load_cc": 0}),
    "ld_field_w_clr": ("ld_field_w_clr[a3, 0b1000, $2, >>4], load_cc", 0,
                       {"dest": 3, "mask": 8, "src": 0x42, "shift": 1, "shamt": 4, "clr": 1,
                        "load_cc": 1}),
    "byte_align_be": ("byte_align_be[a0, a1, b1]", 0, {"le": 0, "dest": 0, "a": 1, "b": 0x21}),
    "byte_align_le": ("byte_align_le[b0, n$2, b1]", 0,
                      {"le": 1, "dest": 0x20, "a": 0x82, "b": 0x21}),
    "ffs": ("ffs[a0, b5]", 0, {"op": 0, "dest": 0, "src": 0x25}),
    "pop_count": ("pop_count[$$1, *l$index1[3]]", 0, {"op": 1, "dest": 0x61, "src": 0xA3}),
    "mul_step": ("mul_step[a1, b1], 32x32_start", 0,
                 {"step": 7, "dest": NONE, "a": 1, "b": 0x21}),
    "br=ctx": (L0 + "br=ctx[3, L#]", 1, {"ctx": 3, "ne": 0, "target": 0}),
    "br!=ctx": (L0 + "br!=ctx[7, L#], defer[1]\nnop", 1,
                {"ctx": 7, "ne": 1, "target": 0, "defer": 1}),
    "br_bset": (L0 + "br_bset[b3, 31, L#]", 1, {"reg": 0x23, "bit": 31, "clr": 0}),
    "br_bclr": (L0 + "br_bclr[a3, 0, L#]", 1, {"reg": 0x03, "bit": 0, "clr": 1}),
    "br=byte": (L0 + "br=byte[a2, 3, 0x7f, L#]", 1,
                {"reg": 2, "byte": 3, "value": 0x7F, "ne": 0}),
    "br!=byte": (L0 + "br!=byte[b2, 1, 200, L#]", 1,
                 {"reg": 0x22, "byte": 1, "value": 200, "ne": 1}),
    "br_signal": (L0 + "br_signal[5, L#]", 1, {"sig": 5, "not": 0}),
    "br_!signal": (L0 + "br_!signal[15, L#]", 1, {"sig": 15, "not": 1}),
    "br_inp_state": (L0 + "br_inp_state[SCR_Ring3_Empty, L#]", 1, {"state": 19, "not": 0}),
    "br_!inp_state": (L0 + "br_!inp_state[NN_FULL, L#]", 1, {"state": 33, "not": 1}),
    "jump": ("nop\nL#: jump[a4, L#]", 1, {"reg": 4, "rtn": 0, "target": 1}),
    "rtn": ("rtn[b4]", 0, {"reg": 0x24, "rtn": 1, "target": 0}),
    "ctx_arb": ("ctx_arb[1, 3], any", 0, {"mode": 1, "sigs": 0b1010}),
    "local_csr_rd": ("local_csr_rd[MAILBOX2]", 0, {"write": 0, "csr": 0x12, "src": NONE}),
    "local_csr_wr": ("local_csr_wr[BYTE_INDEX, 3]", 0, {"write": 1, "csr": 4, "src": imm(3)}),
    "cam_lookup": ("cam_lookup[a0, b0]", 0, {"op": 0, "dest": 0, "src": 0x20, "state": 0}),
    "cam_write": ("cam_write[a1, b1, 9]", 0, {"op": 1, "dest": 1, "src": 0x21, "state": 9}),
    "cam_clear": ("cam_clear", 0, {"op": 2, "dest": NONE, "src": NONE, "state": 0}),
    "cam_read_tag": ("cam_read_tag[a2, 7]", 0, {"op": 3, "dest": 2, "src": imm(7)}),
    "cam_read_state": ("cam_read_state[b2, a7]", 0, {"op": 4, "dest": 0x22, "src": 7}),
    "cam_write_state": ("cam_write_state[a3, 15]", 0,
                        {"op": 5, "dest": 3, "src": NONE, "state": 15}),
    "crc_be": ("crc_be[crc_32, a1, b1]", 0, {"kind": 1, "le": 0, "dest": 1, "src": 0x21}),
    "crc_le": ("crc_le[crc_ccitt, b1, $0]", 0, {"kind": 0, "le": 1, "dest": 0x21, "src": 0x40}),
    "hash_48": ("hash_48[$2, 3], ctx_swap[4]", 0,
                {"size": 0, "xfer": 2, "count": 2, "sig": 4, "swap": 1}),
    "hash_64": ("hash_64[$0, 1], sig_done[1]", 0,
                {"size": 1, "xfer": 0, "count": 0, "sig": 1, "swap": 0}),
    "hash_128": ("hash_128[$4, 3]", 0, {"size": 2, "xfer": 4, "count": 2}),
    "sram": ("sram[test_and_add, $1, a1, b2, 1], sig_done[3]", 0,
             {"cmd": 10, "xfer": 1, "a": 1, "b": 0x22, "count": 0, "sig": 3, "swap": 0}),
    "scratch": ("scratch[get, $5, 8, 0, 4], ctx_swap[2]", 0,
                {"cmd": 13, "xfer": 5, "a": imm(8), "b": imm(0), "count": 3, "sig": 2,
                 "swap": 1}),
    "dram": ("dram[rbuf_rd, --, a1, b1, 8]", 0,
             {"cmd": 2, "xfer": 0x20, "a": 1, "b": 0x21, "count": 7}),
    "msf": ("msf[fast_wr, --, a1, b1]", 0, {"cmd": 2, "xfer": 0x20, "a": 1, "b": 0x21}),
    "nop": ("nop", 0, {}),
}
# the 15 conditional branches: cond codes as documented in sim/isa.py
for _cond, _code in isa.CONDITIONS.items():
    EXAMPLES[_cond] = (L0 + f"{_cond}[L#], defer[2]\nnop\nnop", 1,
                       {"cond": _code, "target": 0, "defer": 2})


def test_every_table_mnemonic_has_an_example() -> None:
    assert set(EXAMPLES) == set(isa.BY_MNEMONIC)


@pytest.mark.parametrize("mnemonic", sorted(isa.BY_MNEMONIC))
def test_mnemonic_encodes_like_the_table(mnemonic: str) -> None:
    source, pc, fields = EXAMPLES[mnemonic]
    image = assemble_text(source, "enc.uc")
    opcode = isa.BY_MNEMONIC[mnemonic].opcode
    assert image.words[pc] == isa.encode(opcode, fields), mnemonic


OPERANDS = [
    ("a15", 0x0F), ("b0", 0x20), ("$7", 0x47), ("$$15", 0x6F), ("n$15", 0x8F),
    ("*l$index0[0]", 0x90), ("*l$index0[15]", 0x9F), ("*l$index1[2]", 0xA2),
    ("*l$index0++", 0xB0), ("*l$index0--", 0xB1), ("*l$index1++", 0xB2),
    ("*l$index1--", 0xB3), ("*n$index++", 0xB4), ("--", 0xB5), ("0", 0xC0), ("63", 0xFF),
    ("(1 << 5) | 3", 0xE3),
]


@pytest.mark.parametrize(("text", "code"), OPERANDS)
def test_operand_codes(text: str, code: int) -> None:
    image = assemble_text(f"alu[--, --, B, {text}]")
    assert image.words[0] == isa.encode(0, {"op": 0, "dest": 0xB5, "a": 0xB5, "b": code})


@pytest.mark.parametrize(("value", "fields"), [
    (0x1234, (0x1234, 0, 0)),
    (0x123400, (0x1234, 1, 0)),
    (0xFF000000, (0xFF00, 2, 0)),  # smallest shift wins
    (0xFFFFFFFE, (0x0001, 0, 1)),     # ~0x1
    (0xFFEDCBFF, (0x1234, 1, 1)),     # ~(0x1234 << 8)
    (-1, (0, 0, 1)),
])
def test_immed_picks_plain_then_inverted(value: int, fields: tuple[int, int, int]) -> None:
    image = assemble_text(f"immed[a0, {value}]")
    v16, shift, invert = fields
    assert image.words == [isa.encode(2, {"variant": 0, "dest": 0, "value": v16,
                                          "shift": shift, "invert": invert})]


def test_immed_explicit_shift() -> None:
    image = assemble_text("immed[b1, 0x12, <<8]")
    assert image.words == [isa.encode(2, {"dest": 0x21, "value": 0x12, "shift": 1})]


def test_immed32_is_one_or_two_words() -> None:
    one = assemble_text("immed32[a2, 0xFFFF0000]")
    assert one.words == [isa.encode(2, {"dest": 2, "value": 0xFFFF, "shift": 2})]
    two = assemble_text("immed32[a2, 0x12345678]\nL#: nop")
    assert two.words[:2] == [isa.encode(2, {"variant": 1, "dest": 2, "value": 0x5678}),
                             isa.encode(2, {"variant": 2, "dest": 2, "value": 0x1234})]
    assert two.symbols == {"L": 2}
    assert two.lines[0] == two.lines[1]


def test_ctx_arb_modes() -> None:
    image = assemble_text(".sig s t\nctx_arb[s, t]\nctx_arb[voluntary]\nctx_arb[kill]")
    assert image.words == [isa.encode(14, {"mode": 0, "sigs": 0b110}),
                           isa.encode(14, {"mode": 2}), isa.encode(14, {"mode": 3})]


def test_mul_step_last_writes_dest() -> None:
    image = assemble_text("mul_step[b3, --], 32x32_last2")
    assert image.words == [isa.encode(6, {"step": 13, "dest": 0x23, "a": NONE, "b": NONE})]


def test_memory_count_defaults_to_one_and_dbl_shf_indirect() -> None:
    image = assemble_text("sram[write, $3, a0, b0]\ndbl_shf[a1, a2, b2, >>indirect]")
    assert image.words == [
        isa.encode(19, {"cmd": 1, "xfer": 3, "a": 0, "b": 0x20, "count": 0}),
        isa.encode(1, {"dest": 1, "a": 2, "b": 0x22, "indirect": 1})]


def test_local_csr_by_number_and_case_insensitive_names() -> None:
    image = assemble_text("local_csr_wr[0x13, a0]\nlocal_csr_rd[ctx_enables]")
    assert image.words == [isa.encode(15, {"write": 1, "csr": 0x13, "src": 0}),
                           isa.encode(15, {"write": 0, "csr": 0, "src": NONE})]
