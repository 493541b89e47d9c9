"""Loop-invariant constants: an `immed` (or `immed_w0`/`immed_w1` pair) inside a loop moves
to the loop's preheader, so each trip saves one or two instructions (e.g. the hash probe's
slot base: docs/me-backend.md, "The back end").

Machine IR before register allocation.  A load moves when the register it sets is set
nowhere else (instruction selection gives every constant a fresh register, read only in
its block), and the loop has exactly one way in from outside (its preheader), which then
dominates every read of the register.  The load goes to the start of the preheader, before
any compare, so no condition code is disturbed.  Repeated until nothing moves, so a
constant of an inner loop leaves the outer loop too.
"""

from __future__ import annotations

from .mir import MFunction, MInstr, VReg


def hoist_loop_constants(fn: MFunction) -> int:
    """Move loop-invariant constant loads to preheaders; returns how many moved."""
    moved = 0
    while True:
        step = _hoist_once(fn)
        if not step:
            return moved
        moved += step


def _is_constant_load(ins: MInstr, def_counts: dict[VReg, int]) -> bool:
    lines = ins.template.splitlines()
    return (ins.kind == "op" and ins.defs == (0,) and not ins.uses and not ins.sets_cc
            and all(line.startswith("immed") for line in lines)
            and isinstance(ins.ops[0], VReg) and def_counts.get(ins.ops[0]) == 1)


def _hoist_once(fn: MFunction) -> int:
    by_label = {b.label: b for b in fn.blocks}
    preds: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
    for b in fn.blocks:
        for s in b.succs:
            if s in preds:
                preds[s].append(b.label)
    dom = _dominators(fn, preds)
    def_counts: dict[VReg, int] = {}
    for b in fn.blocks:
        for ins in b.instrs:
            for v in ins.vdefs():
                def_counts[v] = def_counts.get(v, 0) + 1
    moved = 0
    for head, body in _loops(fn, preds, dom).items():
        outside = [p for p in preds[head] if p not in body]
        if len(outside) != 1:
            continue
        pre = by_label[outside[0]]
        loads = [(b, ins) for label in body for b in [by_label[label]] for ins in b.instrs
                 if _is_constant_load(ins, def_counts)]
        for b, ins in loads:
            b.instrs.remove(ins)
            pre.instrs.insert(0, ins)
            moved += 1
    return moved


def _dominators(fn: MFunction, preds: dict[str, list[str]]) -> dict[str, set[str]]:
    labels = [b.label for b in fn.blocks]
    entry = labels[0]
    dom = {b: set(labels) for b in labels}
    dom[entry] = {entry}
    changed = True
    while changed:
        changed = False
        for b in labels[1:]:
            ps = [dom[p] for p in preds[b]]
            new = (set.intersection(*ps) if ps else set()) | {b}
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


def _loops(fn: MFunction, preds: dict[str, list[str]],
           dom: dict[str, set[str]]) -> dict[str, set[str]]:
    """Natural loops: header -> its blocks (back edges tail -> header, header dominating)."""
    loops: dict[str, set[str]] = {}
    for b in fn.blocks:
        for head in b.succs:
            if head in dom.get(b.label, set()):
                body = loops.setdefault(head, {head})
                todo = [b.label]
                while todo:
                    n = todo.pop()
                    if n not in body:
                        body.add(n)
                        todo.extend(preds[n])
    return loops
