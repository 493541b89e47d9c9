"""The back end's cost optimizations (block layout, compare normalization, br=byte, header
words written straight to $$ out), each on WIR built to exercise it, run on the chip and
compared with the WIR interpreter (the independent model)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.back.hdrwrite import plan_header_writes

from .test_back_props import run_checked

R = wir.Reg
OPT = settings(max_examples=30, deadline=None)


def verdict(label: str, code: int, then: wir.Instr | None = None) -> wir.Block:
    return wir.Block(label, [wir.MetaWrite(8, 1), wir.MetaWrite(9, code),
                             then or wir.Jump("done")])


def compare_fn(pred: str, x: int, c: int, masked: int | None) -> wir.Function:
    """`x pred c` (or `(x & masked) pred c`) decides meta word 9."""
    value = [wir.Copy(R(1), x)]
    if masked is not None:
        value.append(wir.Bin(R(2), "and", R(1), masked))
    a = R(2) if masked is not None else R(1)
    return wir.Function("cmp", [
        wir.Block("entry", [*value, wir.Branch(pred, a, c, "yes", "no")]),
        verdict("yes", 1), verdict("no", 2), wir.Block("done", [wir.Ret()])],
        window_bytes=8, next_reg=3)


def near(c: int) -> st.SearchStrategy[int]:
    return st.sampled_from([(c + d) & wir.MASK32 for d in (-2, -1, 0, 1, 2)]) | \
        st.integers(0, wir.MASK32)


@st.composite
def bound_cases(draw: st.DrawFn) -> tuple[str, int, int]:
    """An unsigned compare with a bound the ALU takes after a shift (k << s, k <= 63)."""
    k, s = draw(st.integers(1, 63)), draw(st.integers(1, 26))
    c = (k << s) - draw(st.sampled_from([0, 1]))
    return draw(st.sampled_from(["ult", "ule", "ugt", "uge"])), draw(near(c)), c


@OPT
@given(bound_cases(), st.integers(0, 2**31))
def test_shifted_bounds_compare_like_the_interpreter(case, seed: int) -> None:
    pred, x, c = case
    run_checked(compare_fn(pred, x, c, None), seed)


@OPT
@given(st.integers(1, 63), st.integers(1, 26), st.integers(0, wir.MASK32),
       st.sampled_from(["eq", "ne"]), st.integers(0, 2**31))
def test_masked_equality_compares_like_the_interpreter(k: int, s: int, x: int, pred: str,
                                                       seed: int) -> None:
    mask = k << s
    c = x & mask if seed % 2 else (seed & k) << s      # equal, or some value under the mask
    run_checked(compare_fn(pred, x, c, mask), seed)


@OPT
@given(st.integers(0, 255), st.integers(0, wir.MASK32), st.sampled_from(["eq", "ne"]),
       st.sampled_from([(8, "and", 0xFF), (24, "lshr", 24), (0, "and", 0x7F)]),
       st.integers(0, 2**31))
def test_byte_compares_like_the_interpreter(c: int, x: int, pred: str, field, seed: int
                                            ) -> None:
    shift, op, k = field
    if seed % 2:
        x = (x & ~(0xFF << shift) | c << shift) & wir.MASK32   # the byte equals c
    fn = wir.Function("byte", [
        wir.Block("entry", [wir.Copy(R(1), x), wir.Bin(R(3), "lshr", R(1), shift),
                            wir.Bin(R(2), op, R(3) if op == "and" else R(1), k),
                            wir.Branch(pred, R(2), c, "yes", "no")]),
        verdict("yes", 1), verdict("no", 2), wir.Block("done", [wir.Ret()])],
        window_bytes=8, next_reg=4)
    body = compile_body(fn)
    assert "br=byte" in body.uc or "br!=byte" in body.uc
    run_checked(fn, seed)


def header_fn(first: int) -> wir.Function:
    """Word 1 written on both paths (direct), word 2 on one path only (kept in a register),
    word 3 written and read back (kept in a register), word 5 written on one path that
    returns on its own; one return reached by no write."""
    return wir.Function("hdr", [
        wir.Block("entry", [wir.HdrRead(R(1), 0), wir.Bin(R(2), "and", R(1), 3),
                            wir.Branch("eq", R(2), first, "clean", "split")]),
        wir.Block("clean", [wir.MetaWrite(9, 7), wir.Ret()]),
        wir.Block("split", [wir.HdrRead(R(3), 1), wir.Bin(R(4), "add", R(3), 0x1234567),
                            wir.HdrWrite(1, R(4)), wir.HdrWrite(3, 99),
                            wir.HdrRead(R(5), 3), wir.MetaWrite(3, R(5)),
                            wir.Branch("eq", R(2), 1, "one", "two")]),
        wir.Block("one", [wir.HdrWrite(2, 0xABCDEF01), wir.HdrWrite(1, R(1)),
                          wir.Jump("join")]),
        wir.Block("two", [wir.HdrWrite(1, 5), wir.Branch("eq", R(2), 2, "join", "far")]),
        wir.Block("far", [wir.HdrWrite(5, R(3)), wir.MetaWrite(8, 2), wir.Ret()]),
        wir.Block("join", [wir.MetaWrite(8, 1), wir.Jump("done")]),
        wir.Block("done", [wir.Ret()])], window_bytes=24, next_reg=6)


def test_header_plan_writes_direct_only_what_every_path_wrote() -> None:
    plan = plan_header_writes(header_fn(0))
    assert plan.direct == {1, 5}
    assert plan.written_at_ret["clean"] == frozenset()
    assert plan.written_at_ret["far"] == {1, 3, 5}


@OPT
@given(st.integers(0, 3), st.integers(0, 2**31))
def test_header_write_back_matches_the_interpreter_on_every_path(first: int, seed: int
                                                                 ) -> None:
    run_checked(header_fn(first), seed)


def test_a_return_no_header_write_reaches_writes_nothing_back() -> None:
    fn = wir.Function("drop", [
        wir.Block("entry", [wir.HdrRead(R(1), 0), wir.Branch("eq", R(1), 0, "w", "d")]),
        wir.Block("w", [wir.HdrWrite(0, 1), wir.Ret()]),
        wir.Block("d", [wir.MetaWrite(8, 2), wir.Ret()])], window_bytes=8, next_reg=2)
    uc = compile_body(fn).uc
    assert uc.count("dram[write") == 1
    run_checked(fn, 3)
