"""Values moved to the one block that reads them (sink.py): compiled and run on the chip,
compared with the WIR interpreter; and where they may not go (into a loop)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.back.sink import sink_to_uses

from .test_back_props import run_checked

R = wir.Reg
OPT = settings(max_examples=30, deadline=None)


def branchy(k: int, loop: bool) -> wir.Function:
    """x = (hdr1 >> 16) & 0xFF + k in entry, read only in `far` (reached when hdr0's low bit
    is set), which is a loop of three trips when `loop`."""
    far = [wir.Bin(R(6), "add", R(5), R(4)), wir.MetaWrite(3, R(6))]
    if loop:
        far += [wir.Bin(R(5), "add", R(5), 1), wir.Branch("ult", R(5), 3, "far", "out")]
    else:
        far += [wir.Jump("out")]
    return wir.Function("sink", [
        wir.Block("entry", [wir.HdrRead(R(1), 0), wir.HdrRead(R(2), 1),
                            wir.Bin(R(3), "lshr", R(2), 16), wir.Bin(R(7), "and", R(3), 0xFF),
                            wir.Bin(R(4), "add", R(7), k), wir.Copy(R(5), 0),
                            wir.Bin(R(8), "and", R(1), 1),
                            wir.Branch("ne", R(8), 0, "far", "out")]),
        wir.Block("far", far),
        wir.Block("out", [wir.MetaWrite(8, 1), wir.Ret()]),
    ], window_bytes=8, next_reg=9)


@OPT
@given(st.integers(0, wir.MASK32), st.booleans(), st.integers(0, 2**31))
def test_sunk_values_match_the_interpreter(k: int, loop: bool, seed: int) -> None:
    run_checked(branchy(k, loop), seed)


def test_the_value_moves_to_its_reader_but_not_into_a_loop() -> None:
    moved = {b.label: b for b in sink_to_uses(branchy(5, False)).blocks}
    assert not any(isinstance(i, wir.Bin) and i.dst.id in (3, 4, 7)
                   for i in moved["entry"].instrs)
    assert [i.dst.id for i in moved["far"].instrs[:3]] == [3, 7, 4]
    kept = {b.label: b for b in sink_to_uses(branchy(5, True)).blocks}
    assert sum(isinstance(i, wir.Bin) and i.dst.id in (3, 4, 7)
               for i in kept["entry"].instrs) == 3


def test_switched_off_nothing_moves() -> None:
    fn = branchy(5, False)
    on = compile_body(fn).uc
    off = compile_body(fn, skip={"sink"}).uc
    entry_on, entry_off = (re.split(r"\nb_(?!entry)\w+#:", uc)[0] for uc in (on, off))
    assert "$$1" not in entry_on and "$$1" in entry_off
