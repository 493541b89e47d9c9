"""Where each MBL variable is at each instruction of the final machine IR (issue 18: the
debugger prints MBL variables).

The variable bindings come from LLVM's `#dbg_value` records: the front end turns them into
`wir.VarBind`s on the WIR instruction they precede, isel into `MBind`s on the first machine
instruction of that WIR instruction; passes that delete or move an instruction hand its
bindings to the next one (`mir.drop_keeping_debug`), passes that put a value somewhere else
say so (`substitute`).  A binding names virtual registers, so after register allocation a
dataflow over the final code decides where it can be read:

- the variable's binding at an instruction is the last one on every path to it (bindings
  that differ between paths: optimized out there);
- a virtual register's value is in its register where the register was last written by it
  (or by a copy coalesced with it, `coalesced`) on every path: after its register is reused,
  or before the value is computed (scheduled down), the variable is optimized out; the
  register written again by the same virtual register (WIR is not SSA: a phi's copies, a
  loop) is a new value, so the binding holds for the value there at the binding, or for
  the first one written after it;
- a fixed place (`$$3` of a header word, `*l$index1[5]` of a metadata word, `$2` of a read)
  holds it until an instruction writes that place (for `$k`: a command naming it); a `$k`
  a command is still filling (issued, its signal not yet waited for: the scheduler may put
  other instructions, and so the binding, between a read and its `ctx_arb`) holds nothing
  readable yet.

The result is, per instruction, each variable's `VarLocation` or None; `emit` writes it as
`.dbg_var` / `.dbg_loc` lines (compiler/uc/debugvars.py) where it changes.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from npkit.compiler.uc.image import Variable, VarLocation

from .mir import MBind, MFunction, MInstr, VReg

_READ_XFER = re.compile(r"(?<![$\w])\$\d+\b")
_LM0_MOVE = re.compile(r"local_csr_wr\[\s*(?:active_)?lm_addr_0", re.IGNORECASE)
_CONFLICT = object()        # bindings that differ between the paths to a point
# a binding's virtual registers: their value in place, not computed yet, or overwritten
HELD, PENDING, STALE = "held", "pending", "stale"


@dataclass(frozen=True)
class _Bound:
    bind: MBind
    fixed_ok: bool = True           # no fixed place of it written since
    status: tuple[str, ...] = ()    # per VReg part (in order): HELD, PENDING or STALE

    def vregs(self) -> list[VReg]:
        return [o for a in self.bind.args or () for o in a if isinstance(o, VReg)]


def substitute(fn: MFunction, v: VReg, place: str) -> None:
    """v's value now lives in the fixed place (a pass removed v): bindings say so."""
    for b in fn.blocks:
        for ins in b.instrs:
            if ins.dbg:
                ins.dbg = tuple(
                    x if x.args is None else dataclasses.replace(x, args=tuple(
                        tuple(place if o is v else o for o in a) for a in x.args))
                    for x in ins.dbg)


def coalesced(fn: MFunction, names: dict[VReg, str]) -> dict[VReg, VReg]:
    """VReg -> a representative of the copies register allocation gave one place (their
    copies are about to be dropped: one write of the place then holds all of them)."""
    parent: dict[VReg, VReg] = {}

    def find(v: VReg) -> VReg:
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    for b in fn.blocks:
        for ins in b.instrs:
            if not ins.copy:
                continue
            d, s = ins.ops[ins.defs[0]], ins.ops[ins.uses[0]]
            if isinstance(d, VReg) and isinstance(s, VReg) and d in names and \
                    names[d] == names.get(s):
                parent[find(d)] = find(s)
    return {v: find(v) for v in parent}


@dataclass
class _State:
    held: dict[str, VReg | None]                     # place -> the value it holds
    binds: dict[Variable, _Bound | object]           # variable -> binding or _CONFLICT
    # `$k` -> the signal of the command filling it, until a wait for that signal
    filling: dict[str, int | None] = dataclasses.field(default_factory=dict)

    def copy(self) -> _State:
        return _State(dict(self.held), dict(self.binds), dict(self.filling))


def _merge(a: _State | None, b: _State) -> _State:
    if a is None:
        return b.copy()
    held = {k: v for k, v in a.held.items() if k in b.held and b.held[k] is v}
    binds: dict[Variable, _Bound | object] = {}
    for var in a.binds.keys() | b.binds.keys():
        x, y = a.binds.get(var, _CONFLICT), b.binds.get(var, _CONFLICT)
        if not isinstance(x, _Bound) or not isinstance(y, _Bound) or x.bind is not y.bind:
            binds[var] = _CONFLICT
        else:       # a value in place on one path, not computed on another: not known
            binds[var] = _Bound(x.bind, x.fixed_ok and y.fixed_ok, tuple(
                p if p == q else STALE for p, q in zip(x.status, y.status, strict=True)))
    return _State(held, binds, {**a.filling, **b.filling})   # filling on either path


def _same_state(a: _State | None, b: _State) -> bool:
    return a is not None and a.held == b.held and a.binds == b.binds \
        and a.filling == b.filling


class _Locator:
    def __init__(self, fn: MFunction, names: dict[VReg, str],
                 same: dict[VReg, VReg]) -> None:
        self.fn = fn
        self.names = names
        self.same = same

    def rep(self, v: VReg) -> VReg:
        return self.same.get(v, v)

    def place(self, o: VReg | str | int) -> str | None:
        if isinstance(o, int):
            return f"{o:#x}"
        if isinstance(o, VReg):
            return self.names.get(o)
        return o

    def location(self, state: _State, bound: _Bound | object) -> VarLocation | None:
        if not isinstance(bound, _Bound) or bound.bind.args is None:
            return None
        status = iter(bound.status)
        args = []
        for arg in bound.bind.args:
            parts = []
            for o in arg:
                place = self.place(o)
                if place is None:
                    return None
                if isinstance(o, VReg) and (next(status) != HELD or
                                            state.held.get(place) is not self.rep(o)):
                    return None
                if isinstance(o, str) and (not bound.fixed_ok or o in state.filling):
                    return None
                parts.append(place)
            args.append(tuple(parts))
        return VarLocation(tuple(args), bound.bind.expr)

    def step(self, state: _State, ins: MInstr) -> None:
        """Apply ins's bindings (they hold at ins, before it runs)."""
        for b in ins.dbg:
            vregs = _Bound(b).vregs()
            state.binds[b.var] = _Bound(b, True, tuple(
                HELD if state.held.get(self.names.get(v, "")) is self.rep(v) else PENDING
                for v in vregs))

    def after(self, state: _State, ins: MInstr) -> None:
        """Apply what ins writes."""
        written: set[str] = set()
        for i in ins.defs:
            o = ins.ops[i]
            if isinstance(o, VReg) and o in self.names:
                state.held[self.names[o]] = self.rep(o)
                self.redefined(state, self.rep(o))
            elif isinstance(o, str):
                written.add(o)
                state.held.pop(o, None)
        text = ins.render(self.names) if ins.kind == "mem" or ins.is_macro else ""
        if ins.kind == "mem":
            filled = set(_READ_XFER.findall(text))     # a read fills its `$k`
            written |= filled
            signal = ins.signals[0] if ins.signals else None
            state.filling.update(dict.fromkeys(filled, signal))
        elif ins.kind == "wait":    # the commands it waits for have filled their `$k`
            state.filling = {k: sig for k, sig in state.filling.items()
                             if sig is not None and sig not in ins.signals}
        if len(_LM0_MOVE.findall(ins.template)) % 2:       # moved, not put back: spills
            for k in [k for k in state.held if k.startswith("*l$index0")]:   # unreadable
                del state.held[k]
        if not written:
            return
        for var, bound in state.binds.items():
            if isinstance(bound, _Bound) and bound.fixed_ok and bound.bind.args and any(
                    o in written for a in bound.bind.args for o in a if isinstance(o, str)):
                state.binds[var] = dataclasses.replace(bound, fixed_ok=False)

    def redefined(self, state: _State, rep: VReg) -> None:
        """rep was written: a binding waiting for it has its value now, one that had it
        has lost it."""
        for var, bound in state.binds.items():
            if not isinstance(bound, _Bound) or not bound.status:
                continue
            status = tuple(
                s if self.rep(v) is not rep else {PENDING: HELD, HELD: STALE}.get(s, s)
                for v, s in zip(bound.vregs(), bound.status, strict=True))
            if status != bound.status:
                state.binds[var] = dataclasses.replace(bound, status=status)

    def run(self) -> dict[int, dict[Variable, VarLocation | None]]:
        blocks = {b.label: b for b in self.fn.blocks}
        entry: dict[str, _State | None] = {b.label: None for b in self.fn.blocks}
        first = self.fn.blocks[0].label
        entry[first] = _State({}, {})
        work = [first]
        while work:
            label = work.pop(0)
            state = entry[label].copy()  # type: ignore[union-attr]
            for ins in blocks[label].instrs:
                self.step(state, ins)
                self.after(state, ins)
            for s in blocks[label].succs:
                if s not in entry:
                    continue
                merged = _merge(entry[s], state)
                if not _same_state(entry[s], merged):
                    entry[s] = merged
                    if s not in work:
                        work.append(s)
        views: dict[int, dict[Variable, VarLocation | None]] = {}
        for b in self.fn.blocks:
            state = (entry[b.label] or _State({}, {})).copy()
            for ins in b.instrs:
                self.step(state, ins)
                view = {var: self.location(state, bound) for var, bound in state.binds.items()}
                if _LM0_MOVE.search(ins.template):  # inside it LM_ADDR_0 points elsewhere
                    view = {var: None if loc is not None and any(
                        p.startswith("*l$index0") for p in loc.parts) else loc
                        for var, loc in view.items()}
                if ins.is_macro:        # its later words may see what its first ones wrote
                    written = {self.place(ins.ops[i]) for i in ins.defs}
                    view = {var: None if loc is not None and written & set(loc.parts) else loc
                            for var, loc in view.items()}
                views[id(ins)] = view
                self.after(state, ins)
        return views


def locate(fn: MFunction, names: dict[VReg, str], same: dict[VReg, VReg]
           ) -> dict[int, dict[Variable, VarLocation | None]]:
    """id(instruction) -> each variable bound there -> where it is (None: optimized out)."""
    return _Locator(fn, names, same).run()
