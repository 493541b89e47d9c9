"""Pass: copy propagation, constant folding, branch folding, dead code and CFG cleanup.

WIR is not SSA, but every register written exactly once comes from an LLVM SSA value (or
an expansion's temporary), so its single definition dominates its uses: such a register
may be replaced by what it copies when that is a constant or another single-definition
register.  Registers written more than once (phis, allocas, loop counters) are never
replaced."""

from __future__ import annotations

from .. import wir
from ..fold import compare, fold_bin, funnel_shift, pop_count
from ..wir import Operand, Reg
from . import cfg
from .rewrite import is_pure, keep_debug, map_uses

INVERSE = {"eq": "ne", "ne": "eq", "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt",
           "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt"}


def simplify(fn: wir.Function) -> None:
    for _ in range(20):
        changed = fold(fn)
        changed |= propagate(fn)
        changed |= fold_branches(fn)
        changed |= thread_constant_branches(fn)
        changed |= dead_code(fn)
        changed |= merge_blocks(fn)
        if not changed:
            return


def _fold_instr(i: wir.Instr) -> wir.Instr | None:
    """A simpler instruction with the same effect, or None."""
    value: Operand | None = None
    if isinstance(i, wir.Bin):
        value = fold_bin(i.op, i.a, i.b)
    elif isinstance(i, wir.Fsh):
        if isinstance(i.hi, int) and isinstance(i.lo, int):
            value = funnel_shift(i.hi, i.lo, i.amount)
        elif i.hi == 0:
            return wir.Bin(i.dst, "lshr", i.lo, i.amount, loc=i.loc)
        elif i.lo == 0:
            return wir.Bin(i.dst, "shl", i.hi, 32 - i.amount, loc=i.loc)
    elif isinstance(i, wir.Cmp):
        if isinstance(i.a, int) and isinstance(i.b, int):
            value = int(compare(i.pred, i.a, i.b))
        elif i.a == i.b:
            value = int(i.pred in ("eq", "ule", "uge", "sle", "sge"))
    elif isinstance(i, wir.PopCount):
        if isinstance(i.src, int):
            value = pop_count(i.src)
    elif isinstance(i, wir.Select):
        if isinstance(i.cond, int):
            value = i.a if i.cond else i.b
        elif i.a == i.b:
            value = i.a
    if value is None:
        return None
    return wir.Copy(i.defs()[0], value, loc=i.loc)


def fold(fn: wir.Function) -> bool:
    changed = False
    for b in fn.blocks:
        for k, i in enumerate(b.instrs):
            new = _fold_instr(i)
            if new is not None:
                new.dbg = i.dbg
                b.instrs[k] = new
                changed = True
    return changed


def propagate(fn: wir.Function) -> bool:
    defs = cfg.def_counts(fn)
    single = {d.id: i for b in fn.blocks for i in b.instrs for d in i.defs()
              if defs[d.id] == 1}
    replace: dict[int, Operand] = {}
    for rid, i in single.items():
        if isinstance(i, wir.Copy) and (isinstance(i.src, int) or defs[i.src.id] == 1):
            replace[rid] = i.src

    def resolve(o: Operand) -> Operand:
        seen = 0
        while isinstance(o, Reg) and o.id in replace and seen < 100:
            o, seen = replace[o.id], seen + 1
        return o

    changed = False
    for b in fn.blocks:
        for i in b.instrs:
            changed |= map_uses(i, resolve)
    return changed


def fold_branches(fn: wir.Function) -> bool:
    """Branch on a compare's 0/1 result -> branch on the compare itself; constant
    branches -> jumps."""
    defs = cfg.def_counts(fn)
    cmps = {i.dst.id: i for b in fn.blocks for i in b.instrs
            if isinstance(i, wir.Cmp) and defs[i.dst.id] == 1}
    xors = {i.dst.id: i for b in fn.blocks for i in b.instrs
            if isinstance(i, wir.Bin) and i.op == "xor" and i.b == 1
            and defs[i.dst.id] == 1}

    def stable(o: Operand) -> bool:
        return isinstance(o, int) or defs[o.id] == 1

    changed = False
    for b in fn.blocks:
        t = b.instrs[-1] if b.instrs else None
        if not isinstance(t, wir.Branch):
            continue
        new: wir.Instr | None = None
        if isinstance(t.a, int) and isinstance(t.b, int):
            new = wir.Jump(t.then_ if compare(t.pred, t.a, t.b) else t.else_, loc=t.loc)
        elif t.then_ == t.else_:
            new = wir.Jump(t.then_, loc=t.loc)
        elif t.pred in ("ne", "eq") and t.b == 0 and isinstance(t.a, Reg):
            c = cmps.get(t.a.id)
            x = xors.get(t.a.id)
            if c is not None and stable(c.a) and stable(c.b):
                pred = c.pred if t.pred == "ne" else INVERSE[c.pred]
                new = wir.Branch(pred, c.a, c.b, t.then_, t.else_, loc=t.loc)
            elif x is not None and isinstance(x.a, Reg) and x.a.id in cmps and stable(x.a):
                new = wir.Branch(INVERSE[t.pred], x.a, 0, t.then_, t.else_, loc=t.loc)
        if new is not None:
            b.instrs[-1] = new
            changed = True
    if changed:
        cfg.remove_unreachable(fn)
    return changed


def dead_code(fn: wir.Function) -> bool:
    changed = False
    while True:
        uses = cfg.use_counts(fn)
        removed = False
        for b in fn.blocks:
            keep = []
            dropped: set[int] = set()
            for k, i in enumerate(b.instrs):
                if isinstance(i, wir.MemAdd) and i.dst is not None and uses[i.dst.id] == 0:
                    i.dst = None
                    removed = True
                if is_pure(i) and all(uses[d.id] == 0 for d in i.defs()) or \
                        isinstance(i, wir.Copy) and i.dst == i.src:
                    removed = True
                    dropped.add(k)
                    continue
                keep.append(i)
            if dropped:
                keep_debug(b.instrs, dropped)
            b.instrs = keep
        if not removed:
            return changed
        changed = True


def merge_blocks(fn: wir.Function) -> bool:
    """Skip blocks that only jump on; append a block to its only predecessor when that
    predecessor jumps to it."""
    changed = False
    by_label = {b.label: b for b in fn.blocks}
    entry = fn.blocks[0].label

    def through(label: str) -> str:
        seen = set()
        while label not in seen:
            seen.add(label)
            blk = by_label[label]
            if blk.max_trips is None and len(blk.instrs) == 1 \
                    and isinstance(blk.instrs[0], wir.Jump) and label != entry:
                label = blk.instrs[0].target
            else:
                break
        return label

    for b in fn.blocks:
        t = b.instrs[-1]
        if isinstance(t, wir.Jump):
            new = through(t.target)
            if new != t.target:
                t.target, changed = new, True
        elif isinstance(t, wir.Branch):
            then_, else_ = through(t.then_), through(t.else_)
            if (then_, else_) != (t.then_, t.else_):
                t.then_, t.else_, changed = then_, else_, True
    preds = cfg.predecessors(fn)
    merged: set[str] = set()
    for b in fn.blocks:
        if b.label in merged:
            continue
        while True:
            t = b.instrs[-1]
            if not isinstance(t, wir.Jump) or t.target == entry:
                break
            nxt = by_label[t.target]
            if len(preds[nxt.label]) != 1 or nxt.max_trips is not None or nxt is b:
                break
            b.instrs = b.instrs[:-1] + nxt.instrs
            merged.add(nxt.label)
            for s in nxt.successors():
                preds[s] = [b.label if p == nxt.label else p for p in preds[s]]
            changed = True
    if changed:
        fn.blocks = [b for b in fn.blocks if b.label not in merged]
        cfg.remove_unreachable(fn)
    return changed


def thread_constant_branches(fn: wir.Function) -> bool:
    """`r = const; jump B` where B only branches on r against a constant: jump straight to
    the branch's decided target (the copy stays for any other reader of r)."""
    by_label = {b.label: b for b in fn.blocks}
    changed = False
    for b in fn.blocks:
        if len(b.instrs) < 2 or not isinstance(b.instrs[-1], wir.Jump):
            continue
        last, jump = b.instrs[-2], b.instrs[-1]
        target = by_label[jump.target]
        if not isinstance(last, wir.Copy) or not isinstance(last.src, int) \
                or len(target.instrs) != 1 or target.max_trips is not None:
            continue
        br = target.instrs[0]
        if isinstance(br, wir.Branch) and br.a == last.dst and isinstance(br.b, int):
            jump.target = br.then_ if compare(br.pred, last.src, br.b) else br.else_
            changed = True
    return changed
