"""Block layout before instruction selection: the common path falls through.

Two rewrites of a copy of the WIR function (the caller's function is left alone):

- a `jump` to a block that only returns becomes a `ret` (one branch instead of two);
- blocks are ordered in chains: after each block comes one of its successors not placed
  yet, preferring one that does not end the packet (verdict blocks are short and leave;
  a block that only jumps on to such a block, e.g. setting the code of a shared verdict
  block, ends the packet too), so a branch's common side falls through and `br`
  instructions between blocks disappear.
"""

from __future__ import annotations

import dataclasses

from .. import wir


def layout(fn: wir.Function) -> wir.Function:
    """The function with returns folded into jumps and its blocks in fall-through order."""
    blocks = [_fold_return_jump(b, _return_only(fn)) for b in fn.blocks]
    by_label = {b.label: b for b in blocks}
    order: list[wir.Block] = []
    placed: set[str] = set()
    for start in blocks:
        block: wir.Block | None = start
        while block is not None and block.label not in placed:
            order.append(block)
            placed.add(block.label)
            block = _next_in_chain(block, by_label, placed)
    reached = _reachable(by_label, blocks[0].label)
    return dataclasses.replace(fn, blocks=[b for b in order if b.label in reached])


def _return_only(fn: wir.Function) -> set[str]:
    return {b.label for b in fn.blocks if len(b.instrs) == 1 and isinstance(b.instrs[0], wir.Ret)}


def _fold_return_jump(b: wir.Block, returns: set[str]) -> wir.Block:
    last = b.instrs[-1] if b.instrs else None
    if isinstance(last, wir.Jump) and last.target in returns:
        return dataclasses.replace(b, instrs=[*b.instrs[:-1], wir.Ret(loc=last.loc)])
    return b


def _ends_packet(b: wir.Block) -> bool:
    return bool(b.instrs) and isinstance(b.instrs[-1], wir.Ret)


def _next_in_chain(b: wir.Block, by_label: dict[str, wir.Block],
                   placed: set[str]) -> wir.Block | None:
    free = [by_label[s] for s in dict.fromkeys(b.successors()) if s not in placed]
    if not free:
        return None
    # the else side first (the front end puts the fall-through there), a packet's end last
    free.reverse()
    free.sort(key=lambda s: _leads_to_end(s, by_label))
    return free[0]


def _leads_to_end(b: wir.Block, by_label: dict[str, wir.Block]) -> bool:
    """The block returns, or jumps (through jumps only) to a block that returns."""
    seen: set[str] = set()
    while not _ends_packet(b):
        last = b.instrs[-1] if b.instrs else None
        if not isinstance(last, wir.Jump) or b.label in seen:
            return False
        seen.add(b.label)
        b = by_label[last.target]
    return True


def _reachable(by_label: dict[str, wir.Block], entry: str) -> set[str]:
    seen, todo = {entry}, [entry]
    while todo:
        for s in by_label[todo.pop()].successors():
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return seen
