"""Jump threading on constants, before layout: a block that sets a register to a constant
and jumps to a block that only tests that register jumps straight to the side the test
takes (e.g. a loop's first trip: `i = 0; jump head` where `head: if i < 16 ...`).

Works on a copy of the blocks it changes (the caller's function is left alone).  The test
block stays for its other predecessors (the loop's back edge).  When the test is a loop
header, the loop is now entered at the side taken: that block gets the header's
`max_trips` too (it is entered no more often than the header was), so the compile report
still bounds the loop (`Body.loop_trips`).
"""

from __future__ import annotations

import dataclasses

from .. import wir
from ..fold import compare


def thread_constant_jumps(fn: wir.Function) -> wir.Function:
    by_label = {b.label: b for b in fn.blocks}
    entered: dict[str, int] = {}        # loop entry -> the header's max_trips
    blocks = []
    for b in fn.blocks:
        target = _threaded_target(b, by_label)
        if target is not None:
            term = b.terminator
            header = by_label[term.target]      # type: ignore[attr-defined]
            if header.max_trips:
                entered[target] = max(entered.get(target, 0), header.max_trips)
            b = dataclasses.replace(b, instrs=[*b.instrs[:-1],
                                               wir.Jump(target, loc=term.loc)])
        blocks.append(b)
    blocks = [dataclasses.replace(b, max_trips=max(b.max_trips or 0, entered[b.label]))
              if b.label in entered else b for b in blocks]
    return dataclasses.replace(fn, blocks=blocks)


def _threaded_target(b: wir.Block, by_label: dict[str, wir.Block]) -> str | None:
    term = b.instrs[-1] if b.instrs else None
    if not isinstance(term, wir.Jump):
        return None
    test = by_label[term.target]
    if len(test.instrs) != 1 or not isinstance(test.instrs[0], wir.Branch):
        return None
    branch = test.instrs[0]
    a, c = _known(b, branch.a), _known(b, branch.b)
    if a is None or c is None:
        return None
    return branch.then_ if compare(branch.pred, a, c) else branch.else_


def _known(b: wir.Block, o: wir.Operand) -> int | None:
    """The operand's value at the end of `b` when a constant copy there decides it."""
    if isinstance(o, int):
        return o
    for ins in reversed(b.instrs[:-1]):
        if o in ins.defs():
            return ins.src if isinstance(ins, wir.Copy) and isinstance(ins.src, int) else None
    return None
