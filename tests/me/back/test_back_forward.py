"""Destination forwarding (compiler/me/back/forward.py): values computed straight into the
transfer register or metadata word they are copied to, also one block early for transfer
registers; on WIR built so the other paths write back (or leave) the same words, run on
the chip and compared with the WIR interpreter (the independent model)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body

from . import gen
from .test_back_props import run_checked

R = wir.Reg
FORWARD = settings(max_examples=40, deadline=None)


def two_paths(kind: str, pred: str, c: int, word: int) -> wir.Function:
    """entry computes v (a sum, or a word read from SRAM) and branches; `a` stores v
    (header word `word`, or meta word 3), `b` stores another value (the same header word,
    or meta word 4)."""
    v = R(3)
    make: list[wir.Instr] = ([wir.MemRead((v,), wir.SRAM, gen.MEM_BASE + 3)] if kind == "read"
                             else [wir.Bin(v, "add", R(1), R(2))])
    store = (wir.MetaWrite(3, v) if kind == "meta" else wir.HdrWrite(word, v))
    other = (wir.MetaWrite(4, R(2)) if kind == "meta" else wir.HdrWrite(word, R(2)))
    return wir.Function("fwd", [
        wir.Block("entry", [wir.HdrRead(R(1), 0), wir.HdrRead(R(2), 1), *make,
                            wir.Branch(pred, R(1), c, "a", "b")]),
        wir.Block("a", [store, wir.MetaWrite(8, 1), wir.Ret()]),
        wir.Block("b", [other, wir.MetaWrite(8, 2), wir.Ret()]),
    ], window_bytes=16, next_reg=4, loc=wir.Loc("fwd.mbl", 1, 1))


@FORWARD
@given(st.sampled_from(["sum", "read", "meta"]), st.sampled_from(["ult", "uge", "eq"]),
       st.integers(0, wir.MASK32), st.integers(0, 3), st.integers(0, 2**31))
def test_forwarded_results_match_the_interpreter_on_both_paths(kind: str, pred: str, c: int,
                                                               word: int, seed: int) -> None:
    run_checked(two_paths(kind, pred, c, word), seed)


def test_a_copy_into_a_transfer_register_goes_a_block_early_a_metadata_one_does_not() -> None:
    fwd = compile_body(two_paths("read", "ult", 5, 0)).uc
    plain = compile_body(two_paths("read", "ult", 5, 0),
                         skip={"forward", "xfer"}).uc
    assert "alu[$$0, --, B, $0]" in fwd and "alu[$$0, --, B, $0]" not in plain
    meta = compile_body(two_paths("meta", "ult", 5, 0)).uc
    lines = [s.strip() for s in meta.splitlines()]
    branch = next(k for k, s in enumerate(lines) if s.startswith("bcc") or s.startswith("bcs"))
    assert not any("*l$index1[3]" in s for s in lines[:branch])
    assert sum("*l$index1[3]" in s for s in lines) == 1
