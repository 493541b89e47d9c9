"""Byte fields of fixed header/metadata words tested in place (bytetests.py): compiled and
run on the chip, compared with the WIR interpreter (the independent model), with the byte
drawn near each test's constant."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import interp, wir
from npkit.compiler.me.back import compile_body

from . import harness

R = wir.Reg
OPT = settings(max_examples=40, deadline=None)
PREDS = ["eq", "ne", "ult", "ule", "ugt", "uge"]
# constants with a special form (2^j, 256 - 2^j, 0, 1, 2) and some without
CONSTS = [0, 1, 2, 3, 4, 8, 16, 32, 64, 127, 128, 192, 224, 239, 240, 248, 252, 254, 255,
          100, 200, 256]


def verdict(label: str, code: int) -> wir.Block:
    return wir.Block(label, [wir.MetaWrite(8, 1), wir.MetaWrite(9, code), wir.Jump("done")])


def byte_fn(pred: str, c: int, byte: int, source: str, then_first: bool,
            extra_use: bool) -> wir.Function:
    """Byte `byte` of header word 0 (or metadata word 3) tested `pred c`; header word 0
    is written afterwards on one path (a direct write: `$$0` in keeps the old word).
    `extra_use`: the byte is also stored, so it must be computed."""
    read = wir.HdrRead(R(1), 0) if source == "hdr" else wir.MetaRead(R(1), 3)
    if byte == 3:
        field = [wir.Bin(R(2), "lshr", R(1), 24)]
    elif byte == 0:
        field = [wir.Bin(R(2), "and", R(1), 0xFF)]
    else:
        field = [wir.Bin(R(3), "lshr", R(1), 8 * byte), wir.Bin(R(2), "and", R(3), 0xFF)]
    entry = [read, *field, *([wir.MetaWrite(4, R(2))] if extra_use else []),
             wir.Branch(pred, R(2), c, "yes", "no")]
    yes = wir.Block("yes", [wir.HdrWrite(0, 0x12345678), wir.MetaWrite(8, 1),
                            wir.MetaWrite(9, 1), wir.Jump("done")])
    no = verdict("no", 2)
    arms = [yes, no] if then_first else [no, yes]
    return wir.Function("bytes", [wir.Block("entry", entry), *arms,
                                  wir.Block("done", [wir.Ret()])],
                        window_bytes=8, next_reg=4)


def run_both(fn: wir.Function, word: int) -> None:
    """The chip's packet and metadata against the interpreter's."""
    packet = bytes(8) + word.to_bytes(4, "big") + bytes(20)
    meta = [3, len(packet), 0, word] + [0] * 12
    body = compile_body(fn)
    image = harness.build(body.uc, fn.window_bytes)
    result = harness.run(image, fn.window_bytes, [harness.Context(packet, list(meta))],
                         {}, {}, {})
    result.check_clean()
    want = interp.run(fn, interp.Machine(bytearray(packet), list(meta)))
    assert result.packets[0] == bytes(want.packet), f"packet differs\n{fn}\n{body.uc}"
    assert result.metas[0][:12] == want.meta[:12], f"metadata differs\n{fn}\n{body.uc}"


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, int, int, int]:
    pred, c = draw(st.sampled_from(PREDS)), draw(st.sampled_from(CONSTS))
    byte = draw(st.integers(0, 3))
    value = draw(st.sampled_from([max(c + d, 0) & 0xFF for d in (-1, 0, 1)])
                 | st.integers(0, 255))
    rest = draw(st.integers(0, wir.MASK32))
    word = rest & ~(0xFF << 8 * byte) | value << 8 * byte
    return pred, c, byte, word


@OPT
@given(cases(), st.sampled_from(["hdr", "meta"]), st.booleans(), st.booleans())
def test_byte_tests_in_place_match_the_interpreter(case, source: str, then_first: bool,
                                                  extra_use: bool) -> None:
    pred, c, byte, word = case
    run_both(byte_fn(pred, c, byte, source, then_first, extra_use), word)


def test_folded_tests_read_the_word_and_never_extract_the_byte() -> None:
    for pred, c, test in (("uge", 240, "AND~"), ("ugt", 239, "AND~"), ("ult", 2, "br=byte"),
                          ("eq", 127, "br=byte"), ("ne", 0, "br!=byte"),
                          ("ult", 16, "AND,"), ("ule", 1, "br=byte")):
        uc = compile_body(byte_fn(pred, c, 1, "hdr", True, False)).uc
        assert "$$0, 1," in uc or "$$0, >>" in uc, uc
        assert test in uc and "ld_field_w_clr" not in uc, (pred, c, uc)


def test_switched_off_the_byte_is_extracted() -> None:
    uc = compile_body(byte_fn("uge", 240, 1, "hdr", True, False),
                      skip={"bytetests"}).uc
    assert "ld_field_w_clr" in uc


def test_a_byte_with_another_use_is_computed() -> None:
    uc = compile_body(byte_fn("eq", 7, 2, "hdr", True, True)).uc
    assert "ld_field_w_clr" in uc
