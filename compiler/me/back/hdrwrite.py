"""Where header writes can go straight to the `$$` out registers, and which words each
return writes back.

A written header word k is *direct* when no read of k can follow a write of k (reads see
`$$k` in, which the body never changes) and every return reached by a write of k is reached
only by paths that wrote it (so at that return `$$k` out surely holds the new value).  Other
written words live in a register from entry (the general scheme) and are copied out at the
return.  A return that no header write reaches writes nothing back.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir


@dataclass(frozen=True)
class HeaderPlan:
    direct: frozenset[int]                 # words written straight to $$k out
    written_at_ret: dict[str, frozenset[int]]  # Ret block -> words some path to it wrote


def plan_header_writes(fn: wir.Function, in_place: bool = False) -> HeaderPlan:
    """`in_place`: the window is in local memory, where a read sees the last write, so every
    written word is direct and no return writes anything back."""
    words = frozenset(i.word for b in fn.blocks for i in b.instrs if isinstance(i, wir.HdrWrite))
    if in_place:
        return HeaderPlan(words, {})
    maybe, must = _written_on_entry(fn, words)
    direct = set(words)
    at_ret: dict[str, frozenset[int]] = {}
    for b in fn.blocks:
        may, sure = set(maybe[b.label]), set(must[b.label])
        for i in b.instrs:
            if isinstance(i, wir.HdrRead) and i.word in may:
                direct.discard(i.word)          # read back after a write
            elif isinstance(i, wir.HdrWrite):
                may.add(i.word)
                sure.add(i.word)
            elif isinstance(i, wir.Ret):
                at_ret[b.label] = frozenset(may)
                direct -= may - sure            # written on some paths here only
    return HeaderPlan(frozenset(direct), at_ret)


def _written_on_entry(fn: wir.Function, words: frozenset[int]
                      ) -> tuple[dict[str, frozenset[int]], dict[str, frozenset[int]]]:
    """Words written on some / on every path from the entry to each block's entry."""
    writes = {b.label: frozenset(i.word for i in b.instrs if isinstance(i, wir.HdrWrite))
              for b in fn.blocks}
    preds: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
    for b in fn.blocks:
        for s in b.successors():
            preds[s].append(b.label)
    entry = fn.blocks[0].label
    maybe = {b.label: frozenset[int]() for b in fn.blocks}
    must = {b.label: (frozenset[int]() if b.label == entry else words) for b in fn.blocks}
    changed = True
    while changed:
        changed = False
        for b in fn.blocks:
            ps = preds[b.label]
            new_maybe = frozenset().union(*(maybe[p] | writes[p] for p in ps))
            new_must = (frozenset.intersection(*(must[p] | writes[p] for p in ps))
                        if ps and b.label != entry else frozenset())
            if new_maybe != maybe[b.label] or new_must != must[b.label]:
                maybe[b.label], must[b.label] = new_maybe, new_must
                changed = True
    return maybe, must
