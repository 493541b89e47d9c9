"""Returns (isel, defer.py, layout.py): the header write-back is waited for together with
the commands still in flight, metadata writes fill the final branch's defer slots across
that wait, and a verdict block reached through a jump is laid out off the common path.
WIR built to exercise them, run on the chip and compared with the WIR interpreter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body

from . import gen
from .test_back_props import run_checked

R = wir.Reg


def returning(command: str, header: bool, metas: int, from_read: bool) -> wir.Function:
    """A counter/store/read in flight at the return, maybe a header write, `metas` meta
    writes (of a computed value, or of a word read before)."""
    instrs: list[wir.Instr] = [wir.HdrRead(R(1), 0), wir.HdrRead(R(2), 1),
                               wir.MemRead((R(5),), wir.SRAM, gen.MEM_BASE + 2)]
    if command == "incr":
        instrs.append(wir.MemAdd(None, wir.SCRATCH, gen.MEM_BASE + 1, 1))
    elif command == "write":
        instrs.append(wir.MemWrite(wir.SRAM, gen.MEM_BASE + 7, (R(1), R(2))))
    else:
        instrs.append(wir.MemRead((R(4),), wir.SCRATCH, gen.MEM_BASE + 4))
        instrs.append(wir.HdrWrite(3, R(4)))
    if header:
        instrs.append(wir.HdrWrite(0, R(2)))
    instrs.append(wir.Bin(R(3), "xor", R(1), R(2)))
    for k in range(metas):
        instrs.append(wir.MetaWrite(2 + k, R(5) if from_read and k == 0 else R(3)))
    instrs.append(wir.Ret())
    return wir.Function("ret", [wir.Block("entry", instrs)], window_bytes=16, next_reg=6,
                        loc=wir.Loc("ret.mbl", 1, 1))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["incr", "write", "read"]), st.booleans(), st.integers(0, 4),
       st.booleans(), st.integers(0, 2**31))
def test_returns_match_the_interpreter(command: str, header: bool, metas: int,
                                       from_read: bool, seed: int) -> None:
    run_checked(returning(command, header, metas, from_read), seed)


def test_one_wait_at_the_return_and_the_metadata_in_its_defer_slots() -> None:
    lines = [x.strip() for x in compile_body(returning("incr", True, 3, False)).uc.splitlines()
             if not x.startswith(".loc")]
    waits = [x for x in lines if x.startswith("ctx_arb") or "ctx_swap" in x]
    assert waits == ["ctx_arb[1, 2, 3]"]       # the unused read, incr and write-back
    assert lines[lines.index(waits[0]) - 1].startswith("dram[write")
    exit_at = next(k for k, x in enumerate(lines) if x.startswith("br[body_exit#]"))
    assert lines[exit_at].endswith("defer[3]")
    assert all(x.startswith(("alu[*l$index1[", "alu_shf[*l$index1["))
               for x in lines[exit_at + 1:exit_at + 4])


def test_a_verdict_reached_through_a_jump_is_off_the_common_path() -> None:
    """entry: `if x == 5 goto go else set`; `set` jumps to a shared verdict block, `go`
    (the common path) goes on testing: `go` falls through."""
    fn = wir.Function("lay", [
        wir.Block("entry", [wir.HdrRead(R(1), 0), wir.Bin(R(2), "and", R(1), 0xFF),
                            wir.Branch("eq", R(2), 5, "go", "set")]),
        wir.Block("set", [wir.Copy(R(3), 7), wir.Jump("verdict")]),
        wir.Block("verdict", [wir.MetaWrite(8, 2), wir.MetaWrite(9, R(3)), wir.Ret()]),
        wir.Block("go", [wir.MetaWrite(8, 1), wir.Branch("ult", R(1), 0x10000, "a", "b")]),
        wir.Block("a", [wir.MetaWrite(9, 1), wir.Ret()]),
        wir.Block("b", [wir.MetaWrite(9, 2), wir.Ret()]),
    ], window_bytes=8, next_reg=4, loc=wir.Loc("lay.mbl", 1, 1))
    lines = [x.strip() for x in compile_body(fn).uc.splitlines() if not x.startswith(".loc")]
    assert lines.index("b_go#:    ; go") < lines.index("b_set#:    ; set")
    assert any(x.startswith("br!=byte") for x in lines)
    for seed in range(3):
        run_checked(fn, seed)
