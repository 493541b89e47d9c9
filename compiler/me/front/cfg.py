"""Control-flow and def-use facts about a WIR function, shared by the passes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .. import wir


def predecessors(fn: wir.Function) -> dict[str, list[str]]:
    preds: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
    for b in fn.blocks:
        for s in b.successors():
            preds[s].append(b.label)
    return preds


def reverse_postorder(fn: wir.Function) -> list[str]:
    """Labels reachable from the entry, each after all its dominators."""
    seen: set[str] = set()
    order: list[str] = []
    by_label = {b.label: b for b in fn.blocks}
    stack: list[tuple[str, Iterator[str]]] = [(fn.blocks[0].label,
                                                iter(fn.blocks[0].successors()))]
    seen.add(fn.blocks[0].label)
    while stack:
        label, succs = stack[-1]
        nxt = next(succs, None)
        if nxt is None:
            stack.pop()
            order.append(label)
        elif nxt not in seen:
            seen.add(nxt)
            stack.append((nxt, iter(by_label[nxt].successors())))
    return order[::-1]


def dominators(fn: wir.Function) -> dict[str, str | None]:
    """Immediate dominator of every reachable block (Cooper, Harvey, Kennedy)."""
    rpo = reverse_postorder(fn)
    index = {label: i for i, label in enumerate(rpo)}
    preds = predecessors(fn)
    idom: dict[str, str | None] = {rpo[0]: rpo[0]}

    def intersect(a: str, b: str) -> str:
        while a != b:
            while index[a] > index[b]:
                a = idom[a]  # type: ignore[assignment]
            while index[b] > index[a]:
                b = idom[b]  # type: ignore[assignment]
        return a

    changed = True
    while changed:
        changed = False
        for label in rpo[1:]:
            done = [p for p in preds[label] if p in idom]
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom.get(label) != new:
                idom[label] = new
                changed = True
    idom[rpo[0]] = None
    return idom


def dominator_children(fn: wir.Function) -> dict[str, list[str]]:
    children: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
    for label, parent in dominators(fn).items():
        if parent is not None:
            children[parent].append(label)
    return children


def reachable_from(fn: wir.Function) -> dict[str, set[str]]:
    """For each block, the blocks reachable from its end (through one or more edges)."""
    by_label = {b.label: b for b in fn.blocks}
    out: dict[str, set[str]] = {}
    for b in fn.blocks:
        seen: set[str] = set()
        work = list(b.successors())
        while work:
            x = work.pop()
            if x not in seen:
                seen.add(x)
                work.extend(by_label[x].successors())
        out[b.label] = seen
    return out


def def_counts(fn: wir.Function) -> Counter[int]:
    """How many instructions write each register (1: an SSA value from the LLVM IR)."""
    counts: Counter[int] = Counter()
    for b in fn.blocks:
        for i in b.instrs:
            for d in i.defs():
                counts[d.id] += 1
    return counts


def use_counts(fn: wir.Function) -> Counter[int]:
    counts: Counter[int] = Counter()
    for b in fn.blocks:
        for i in b.instrs:
            for u in i.uses():
                if isinstance(u, wir.Reg):
                    counts[u.id] += 1
    return counts


def remove_unreachable(fn: wir.Function) -> None:
    live = set(reverse_postorder(fn))
    fn.blocks = [b for b in fn.blocks if b.label in live]


def instruction_count(fn: wir.Function) -> int:
    return sum(len(b.instrs) for b in fn.blocks)
