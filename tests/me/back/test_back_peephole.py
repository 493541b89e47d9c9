"""Zero and sign tests dropped after an ALU instruction that set the flags
(compiler/me/back/peephole.py): values tested right after they are computed or copied out
of a transfer register, run on the chip and compared with the WIR interpreter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body

from . import gen
from .test_back_props import run_checked

R = wir.Reg
TESTS = [("eq", 0), ("ne", 0), ("slt", 0), ("sge", 0), ("sgt", wir.MASK32),
         ("sle", wir.MASK32)]


def sign_tested(make: str, op: str, k: int, test: tuple[str, int]) -> wir.Function:
    v = R(2)
    first: wir.Instr = (wir.MemRead((v,), wir.SRAM, gen.MEM_BASE + 1) if make == "read"
                        else wir.Bin(v, op, R(1), k))
    pred, c = test
    return wir.Function("peep", [
        wir.Block("entry", [wir.HdrRead(R(1), 0), first, wir.Branch(pred, v, c, "y", "n")]),
        wir.Block("y", [wir.MetaWrite(3, v), wir.MetaWrite(4, 1), wir.Ret()]),
        wir.Block("n", [wir.MetaWrite(3, v), wir.MetaWrite(4, 2), wir.Ret()]),
    ], window_bytes=8, next_reg=3, loc=wir.Loc("peep.mbl", 1, 1))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["read", "bin"]), st.sampled_from(["add", "sub", "and", "or", "xor"]),
       st.sampled_from([0, 1, 0x80000000, wir.MASK32, 0x7FFFFFFF]), st.sampled_from(TESTS),
       st.integers(0, 2**31))
def test_tests_after_the_flags_were_set_match_the_interpreter(make: str, op: str, k: int,
                                                              test, seed: int) -> None:
    run_checked(sign_tested(make, op, k, test), seed)


def test_a_copy_out_of_a_transfer_register_is_its_own_sign_test() -> None:
    fn = sign_tested("read", "add", 0, ("slt", 0))
    # (xfer.py would read $0 in place: no copy, the test stays)
    count = [compile_body(fn, skip={"xfer"} | (set() if drop else {"peephole"})
                          ).uc.count("alu[--, --, B,") for drop in (False, True)]
    assert count == [1, 0]
