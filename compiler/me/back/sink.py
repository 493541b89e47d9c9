"""Values computed on paths that may not need them move to the block that reads them (the
trie walk's level-2 and level-3 index bytes, which the front end computes with the header
checks: a route that ends at the root needs neither, one of /17../24 only the first).

A `Bin` moves from block D to the start of block U when its register is set once, every
reader is in U, D strictly dominates U, U is on no cycle (it runs at most once per entry
of D's region, never more often than D), and each register it reads is set once (so holds
the same value in U) and is either set outside D, by something that is not a `Bin`, or by
a `Bin` that follows it to U (so no fold of D's selection is split: a shift folded into a
mask stays with its mask).  Works on a copy of the blocks it changes.
"""

from __future__ import annotations

import dataclasses

from .. import wir
from ..front import cfg


def sink_to_uses(fn: wir.Function) -> wir.Function:
    fn = dataclasses.replace(fn, blocks=[dataclasses.replace(b, instrs=list(b.instrs))
                                         for b in fn.blocks])
    idom = cfg.dominators(fn)
    after = cfg.reachable_from(fn)
    on_cycle = {b.label for b in fn.blocks if b.label in after[b.label]}
    while _sink_once(fn, idom, on_cycle):
        pass
    return fn


def _sink_once(fn: wir.Function, idom: dict[str, str | None], on_cycle: set[str]) -> bool:
    defs = cfg.def_counts(fn)
    home: dict[int, tuple[wir.Block, wir.Instr]] = {}
    readers: dict[int, set[str]] = {}
    reader_instrs: dict[int, list[wir.Instr]] = {}
    for b in fn.blocks:
        for i in b.instrs:
            for d in i.defs():
                home[d.id] = (b, i)
            for u in i.uses():
                if isinstance(u, wir.Reg):
                    readers.setdefault(u.id, set()).add(b.label)
                    reader_instrs.setdefault(u.id, []).append(i)
    by_label = {b.label: b for b in fn.blocks}
    for b in fn.blocks:
        for i in reversed(b.instrs):
            target = _target(i, b, defs, readers, idom, on_cycle)
            if target is None or not _operands_follow(i, b, defs, home, reader_instrs):
                continue
            b.instrs.remove(i)
            by_label[target].instrs.insert(0, i)
            return True
    return False


def _target(i: wir.Instr, b: wir.Block, defs: dict[int, int], readers: dict[int, set[str]],
            idom: dict[str, str | None], on_cycle: set[str]) -> str | None:
    """The one block reading i's result, when i may move there."""
    if not isinstance(i, wir.Bin) or defs[i.dst.id] != 1:
        return None
    blocks = readers.get(i.dst.id, set())
    if len(blocks) != 1:
        return None
    (u,) = blocks
    if u == b.label or u in on_cycle or u not in idom or b.label not in idom:
        return None
    return u if _strictly_dominates(b.label, u, idom) else None


def _strictly_dominates(d: str, u: str, idom: dict[str, str | None]) -> bool:
    node = idom[u]
    while node is not None:
        if node == d:
            return True
        node = idom[node]
    return False


def _operands_follow(i: wir.Instr, b: wir.Block, defs: dict[int, int],
                     home: dict[int, tuple[wir.Block, wir.Instr]],
                     reader_instrs: dict[int, list[wir.Instr]]) -> bool:
    for r in i.uses():
        if not isinstance(r, wir.Reg):
            continue
        if defs.get(r.id) != 1:
            return False
        where, producer = home[r.id]
        if where is b and isinstance(producer, wir.Bin) and (
                any(x is not i for x in reader_instrs[r.id])
                or not _operands_follow(producer, b, defs, home, reader_instrs)):
            return False        # it stays here: sinking would split its fold with i
    return True
