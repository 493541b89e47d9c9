"""Early reads across blocks: a memory read is issued as soon as its address is known and
waited for where the program first reads it (docs/me-backend.md, "The back end").

Instruction selection overlaps commands only inside one WIR block.  This pass (on a copy of
the WIR function, before layout) moves a `MemRead` up to the point just after its address
is computed, possibly blocks earlier, as three back-end-private instructions:

- `Prefetch(slot, ...)` issues the read (its own signal and transfer registers, reserved
  for the whole body: `Slot`);
- `Collect(slot, dsts)` replaces the read: wait for it and copy the words out;
- `Drain(slot)` waits without using the words, on every path that leaves the read's
  region without passing its `Collect`: at a return and where such a path meets one on
  which the slot is already waited for (the body may leave no signal pending, and a signal
  must never be waited for twice).

A read moves when it cannot tell the difference:
- its space (SRAM or scratch) is never written by the function (no `MemWrite`/`MemAdd`),
  so no store can come between the early read and the original one;
- its address is a constant or a register set exactly once, in a block that dominates the
  read, and neither that block nor the read's block is on a cycle (one read per slot per
  packet);
- no branch on the way can be a range guard for the address.  On paths that do not reach
  the read it is speculative: MBL masks every index to its memory's size, so the address
  is in range by its own computation, unless the optimizer dropped a mask because a branch
  proved the index small.  Such a branch tests the address's sources or a value one
  constant operation away from them; none may lie between the early and the original read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import wir

MAX_SLOTS = 2           # signals the body keeps for early reads
MAX_WORDS = 8           # transfer registers they keep ($16 - MAX_WORDS .. $15)
XFER_REGS = 16
GUARD_OPS = ("add", "sub", "and", "or", "xor", "shl", "lshr")


@dataclass
class Prefetch(wir.Instr):
    """Issue the read of `count` words at `addr` of `space` into slot `slot`."""

    slot: int
    space: int
    addr: wir.Operand
    count: int

    def uses(self):
        return (self.addr,)

    def __str__(self) -> str:
        return f"prefetch#{self.slot} {self.count} x mem{self.space}[{wir.opnd(self.addr)}]"


@dataclass
class Collect(wir.Instr):
    """dsts = the words slot `slot` read (waits for it)."""

    slot: int
    dsts: tuple[wir.Reg, ...]

    def defs(self):
        return self.dsts

    def __str__(self) -> str:
        return f"{', '.join(map(str, self.dsts))} = collect#{self.slot}"


@dataclass
class Drain(wir.Instr):
    """Wait for slot `slot` without using its words."""

    slot: int

    def __str__(self) -> str:
        return f"drain#{self.slot}"


@dataclass(frozen=True)
class Slot:
    """The resources one early read keeps for the whole body."""

    signal: int
    xfer: range


@dataclass
class Hoisted:
    fn: wir.Function
    slots: dict[int, Slot] = field(default_factory=dict)

    @property
    def reserved_xfer(self) -> int:
        return sum(len(s.xfer) for s in self.slots.values())


@dataclass(frozen=True)
class _Candidate:
    block: str          # the read's block
    index: int
    issue_block: str    # where it is issued, after instruction `issue_after` (-1: at entry)
    issue_after: int


def hoist_reads(fn: wir.Function, signals: tuple[int, ...],
                xfer_regs: int = XFER_REGS) -> Hoisted:
    """The function with early reads; `signals` are the body's, the slots take the last, and
    the transfer registers below `xfer_regs` from the top."""
    cfg = _Cfg(fn)
    written = {i.space for b in fn.blocks for i in b.instrs
               if isinstance(i, wir.MemWrite | wir.MemAdd)}
    chosen: list[_Candidate] = []
    words = 0
    for cand, count in _candidates(fn, cfg, written):
        if len(chosen) < min(MAX_SLOTS, len(signals) - 1) and words + count <= MAX_WORDS:
            chosen.append(cand)
            words += count
    if not chosen:
        return Hoisted(fn)
    blocks = {b.label: dataclasses.replace(b, instrs=list(b.instrs)) for b in fn.blocks}
    slots: dict[int, Slot] = {}
    top = xfer_regs
    # insert from the back of each block so earlier indices stay valid
    for slot, cand in sorted(enumerate(chosen), key=lambda sc: (-sc[1].index,
                                                                 -sc[1].issue_after)):
        read = blocks[cand.block].instrs[cand.index]
        assert isinstance(read, wir.MemRead)
        top -= len(read.dsts)
        slots[slot] = Slot(signals[-1 - slot], range(top, top + len(read.dsts)))
        blocks[cand.block].instrs[cand.index] = Collect(slot, read.dsts, loc=read.loc)
    for slot, cand in sorted(enumerate(chosen), key=lambda sc: -sc[1].issue_after):
        read = fn.block(cand.block).instrs[cand.index]
        assert isinstance(read, wir.MemRead)
        blocks[cand.issue_block].instrs.insert(
            cand.issue_after + 1,
            Prefetch(slot, read.space, read.addr, len(read.dsts), loc=read.loc))
    out = dataclasses.replace(fn, blocks=[blocks[b.label] for b in fn.blocks])
    for slot in slots:
        _place_drains(out, slot)
    if not all(consistent(out, slot) for slot in slots):
        return Hoisted(fn)      # not expected (see _place_drains); never risk a hang
    return Hoisted(out, slots)


# ---------------------------------------------------------------------- the control flow
class _Cfg:
    def __init__(self, fn: wir.Function) -> None:
        self.fn = fn
        self.succs = {b.label: b.successors() for b in fn.blocks}
        self.preds: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
        for b in fn.blocks:
            for s in self.succs[b.label]:
                self.preds[s].append(b.label)
        self.entry = fn.blocks[0].label
        self.reachable = self._reach(self.entry)
        self.dom = self._dominators()
        self.on_cycle = {b for b in self.reachable if b in self._reach_after(b)}

    def _reach(self, start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for s in self.succs[todo.pop()]:
                if s not in seen:
                    seen.add(s)
                    todo.append(s)
        return seen

    def _reach_after(self, start: str) -> set[str]:
        """Blocks reachable from `start` by at least one edge."""
        out: set[str] = set()
        for s in self.succs[start]:
            out |= self._reach(s)
        return out

    def _dominators(self) -> dict[str, set[str]]:
        blocks = [b.label for b in self.fn.blocks if b.label in self.reachable]
        dom = {b: set(blocks) for b in blocks}
        dom[self.entry] = {self.entry}
        changed = True
        while changed:
            changed = False
            for b in blocks:
                if b == self.entry:
                    continue
                preds = [dom[p] for p in self.preds[b] if p in self.reachable]
                new = set.intersection(*preds) | {b} if preds else {b}
                if new != dom[b]:
                    dom[b], changed = new, True
        return dom

    def between(self, start: str, end: str) -> set[str]:
        """Blocks on some path from `start` to `end` (both included)."""
        back: set[str] = {end}
        todo = [end]
        while todo:
            for p in self.preds[todo.pop()]:
                if p not in back:
                    back.add(p)
                    todo.append(p)
        return (self._reach(start) & back) | {start, end}


# ---------------------------------------------------------------------- candidates
def _candidates(fn: wir.Function, cfg: _Cfg, written: set[int]):
    """(candidate, words) for every read that may move, in block order."""
    defs = _definitions(fn)
    for b in fn.blocks:
        if b.label not in cfg.reachable or b.label in cfg.on_cycle:
            continue
        for index, ins in enumerate(b.instrs):
            if not (isinstance(ins, wir.MemRead) and ins.space in (wir.SRAM, wir.SCRATCH)
                    and ins.space not in written):
                continue
            cand = _issue_point(fn, cfg, defs, b.label, index, ins)
            if cand is not None:
                yield cand, len(ins.dsts)


def _definitions(fn: wir.Function) -> dict[int, list[tuple[str, int]]]:
    out: dict[int, list[tuple[str, int]]] = {}
    for b in fn.blocks:
        for i, ins in enumerate(b.instrs):
            for d in ins.defs():
                out.setdefault(d.id, []).append((b.label, i))
    return out


def _issue_point(fn: wir.Function, cfg: _Cfg, defs: dict[int, list[tuple[str, int]]],
                 label: str, index: int, read: wir.MemRead) -> _Candidate | None:
    if isinstance(read.addr, int):
        where = (cfg.entry, -1)
    else:
        sites = defs.get(read.addr.id, [])
        if len(sites) != 1:
            return None
        where = sites[0]
    block, after = where
    if block == label or block in cfg.on_cycle or block not in cfg.dom.get(label, set()):
        return None         # same block: selection overlaps it already
    if _guarded(fn, cfg, defs, read.addr, block, label):
        return None
    return _Candidate(label, index, block, after)


def _guarded(fn: wir.Function, cfg: _Cfg, defs: dict[int, list[tuple[str, int]]],
             addr: wir.Operand, start: str, end: str) -> bool:
    """Could a branch between `start` and `end` bound the address (see the module doc)?"""
    if isinstance(addr, int):
        return False
    sources = _sources(fn, defs, addr)
    near = set(sources)
    for b in fn.blocks:
        for ins in b.instrs:
            regs = [u for u in ins.uses() if isinstance(u, wir.Reg)]
            one_step = (isinstance(ins, wir.Copy)
                        or isinstance(ins, wir.Bin) and ins.op in GUARD_OPS
                        or isinstance(ins, wir.Cmp))
            if one_step and len(regs) == 1 and regs[0].id in sources:
                near |= {d.id for d in ins.defs()}
    for label in cfg.between(start, end) - {end}:
        term = fn.block(label).terminator
        if isinstance(term, wir.Branch) and any(
                isinstance(o, wir.Reg) and o.id in near for o in (term.a, term.b)):
            return True
    return False


def _sources(fn: wir.Function, defs: dict[int, list[tuple[str, int]]],
             reg: wir.Reg) -> set[int]:
    """The registers the address is computed from (through instructions that compute)."""
    seen = {reg.id}
    todo = [reg.id]
    while todo:
        for label, i in defs.get(todo.pop(), []):
            ins = fn.block(label).instrs[i]
            if isinstance(ins, wir.Bin | wir.Fsh | wir.PopCount | wir.Cmp
                                | wir.Select | wir.Copy):
                for u in ins.uses():
                    if isinstance(u, wir.Reg) and u.id not in seen:
                        seen.add(u.id)
                        todo.append(u.id)
    return seen


# ---------------------------------------------------------------------- drains
def _place_drains(fn: wir.Function, slot: int) -> None:
    """Wait for the slot wherever a path with it in flight ends or meets one without."""
    while True:
        out_at_end = _in_flight(fn, slot)
        if not _add_one_drain(fn, slot, out_at_end):
            return


def _reachable_preds(fn: wir.Function) -> dict[str, list[str]]:
    """Predecessors of each block, among the blocks the entry reaches."""
    succs = {b.label: b.successors() for b in fn.blocks}
    seen, todo = {fn.blocks[0].label}, [fn.blocks[0].label]
    while todo:
        for s in succs[todo.pop()]:
            if s not in seen:
                seen.add(s)
                todo.append(s)
    preds: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
    for b in fn.blocks:
        if b.label in seen:
            for s in succs[b.label]:
                preds[s].append(b.label)
    return preds


def _in_flight(fn: wir.Function, slot: int) -> dict[str, bool]:
    """Whether the slot is in flight at the end of each block (on some path)."""
    preds = _reachable_preds(fn)
    end = {b.label: False for b in fn.blocks}
    changed = True
    while changed:
        changed = False
        for b in fn.blocks:
            state = any(end[p] for p in preds[b.label])
            for ins in b.instrs:
                if isinstance(ins, Prefetch) and ins.slot == slot:
                    state = True
                elif isinstance(ins, Collect | Drain) and ins.slot == slot:
                    state = False
            if state != end[b.label]:
                end[b.label], changed = state, True
    return end


def _add_one_drain(fn: wir.Function, slot: int, out_at_end: dict[str, bool]) -> bool:
    """One drain where paths meet disagreeing, else before a return with the slot in flight
    (merges first, so a drain sits on the paths that need it, not on a shared return)."""
    preds = _reachable_preds(fn)
    for b in fn.blocks:
        ps = preds[b.label]
        if any(out_at_end[p] for p in ps) and not all(out_at_end[p] for p in ps):
            p = next(p for p in ps if out_at_end[p])
            _drain_on_edge(fn, fn.block(p), b.label, slot)
            return True
    for b in fn.blocks:
        if out_at_end[b.label] and isinstance(b.terminator, wir.Ret):
            b.instrs.insert(len(b.instrs) - 1, Drain(slot, loc=b.terminator.loc))
            return True
    return False


def _drain_on_edge(fn: wir.Function, src: wir.Block, dst: str, slot: int) -> None:
    term = src.terminator
    if isinstance(term, wir.Jump):
        src.instrs.insert(len(src.instrs) - 1, Drain(slot, loc=term.loc))
        return
    assert isinstance(term, wir.Branch)
    label = f"{src.label}.drain{slot}.{dst}"
    fn.blocks.append(wir.Block(label, [Drain(slot, loc=term.loc), wir.Jump(dst, loc=term.loc)]))
    src.instrs[-1] = dataclasses.replace(
        term, then_=label if term.then_ == dst else term.then_,
        else_=label if term.else_ == dst else term.else_)


def consistent(fn: wir.Function, slot: int) -> bool:
    """Every path agrees whether the slot is in flight at each block: it is issued only when
    idle, collected or drained only when in flight, idle at every return."""
    start: dict[str, bool | None] = {b.label: None for b in fn.blocks}
    start[fn.blocks[0].label] = False
    todo = [fn.blocks[0].label]
    while todo:
        b = fn.block(todo.pop())
        state = start[b.label]
        for ins in b.instrs:
            if isinstance(ins, Prefetch) and ins.slot == slot:
                if state:
                    return False
                state = True
            elif isinstance(ins, Collect | Drain) and ins.slot == slot:
                if not state:
                    return False
                state = False
            elif isinstance(ins, wir.Ret) and state:
                return False
        for s in b.successors():
            if start[s] is None:
                start[s] = state
                todo.append(s)
            elif start[s] != state:
                return False
    return True
