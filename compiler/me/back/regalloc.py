"""Register allocation: virtual registers -> GPRs of bank A/B, or spill words.

The interference graph comes from liveness (a copy's destination does not interfere with
its source, so the two can share a register: coalescing by preference).  The A/B bank rule
adds "pair" edges (the two GPR sources of one instruction must be in different banks); a
breadth-first 2-colouring of the pair graph gives each register its preferred bank, so
even cycles never conflict and an odd cycle leaves one member in local memory.  Registers
are then coloured greedily, most used first: a GPR of the preferred bank, else of the other
bank when the pair rule allows, else a spill word `*l$index0[k]` (local memory is a valid
operand anywhere, including the "other side" of a pair, so a spill needs no reload code).
When nothing is left the function does not fit: CompileError at a value live at the worst
point.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ...mbl.diagnostics import CompileError
from ..abi import BodyABI
from ..wir import Loc
from .errors import compile_error
from .liveness import liveness
from .mir import MFunction, MInstr, VReg, drop_keeping_debug

HUB_PAIRS = 6


@dataclass
class Allocation:
    names: dict[VReg, str]          # "a3", "b7" or "*l$index0[k]"
    gprs_used: tuple[str, ...]
    spill_words: int


class Graph:
    def __init__(self) -> None:
        self.interfere: dict[VReg, set[VReg]] = {}
        self.pairs: dict[VReg, set[VReg]] = {}
        self.copies: dict[VReg, set[VReg]] = {}
        self.weight: dict[VReg, int] = {}

    def node(self, v: VReg) -> None:
        self.interfere.setdefault(v, set())
        self.pairs.setdefault(v, set())
        self.copies.setdefault(v, set())
        self.weight.setdefault(v, 0)

    def edge(self, table: dict[VReg, set[VReg]], a: VReg, b: VReg) -> None:
        if a is not b:
            self.node(a)
            self.node(b)
            table[a].add(b)
            table[b].add(a)


def build_graph(fn: MFunction) -> tuple[Graph, int, str, set[VReg]]:
    """The graph, plus the largest number of values live at once, the block where that
    happens and those values (for the error when they do not fit)."""
    g = Graph()
    live_info = liveness(fn)
    worst, worst_block, worst_set = -1, "", set()
    for b in fn.blocks:
        live = set(live_info.live_out[b.label])
        for v in live:
            g.node(v)
        for ins in reversed(b.instrs):
            _instr_edges(g, ins, live)
            live -= set(ins.vdefs())
            live |= set(ins.vuses())
            if len(live) > worst:
                worst, worst_block, worst_set = len(live), b.label, set(live)
    return g, worst, worst_block, worst_set


def _instr_edges(g: Graph, ins: MInstr, live: set[VReg]) -> None:
    defs = ins.vdefs()
    copy_src = ins.ops[ins.uses[0]] if ins.copy else None
    for v in (*defs, *ins.vuses()):
        g.node(v)
        g.weight[v] += 1
    for d in defs:
        for v in live:
            if v is not copy_src:
                g.edge(g.interfere, d, v)
        for other in defs:
            g.edge(g.interfere, d, other)
        for i in ins.late_uses:
            if isinstance(u := ins.ops[i], VReg):
                g.edge(g.interfere, d, u)
    if isinstance(copy_src, VReg) and defs:
        g.edge(g.copies, defs[0], copy_src)
    for i, j in ins.pairs:
        a, b = ins.ops[i], ins.ops[j]
        if isinstance(a, VReg) and isinstance(b, VReg):
            g.edge(g.pairs, a, b)


def first_definitions(fn: MFunction) -> dict[VReg, int]:
    first: dict[VReg, int] = {}
    n = 0
    for b in fn.blocks:
        for ins in b.instrs:
            for v in ins.vdefs():
                first.setdefault(v, n)
            n += 1
    return first


def preferred_banks(g: Graph) -> dict[VReg, str]:
    """A BFS 2-colouring of the pair graph (an odd cycle just gets a clash, resolved later)."""
    bank: dict[VReg, str] = {}
    balance = {"a": 0, "b": 0}
    for start in sorted(g.pairs, key=lambda v: v.id):
        if start in bank:
            continue
        first = "a" if balance["a"] <= balance["b"] else "b"
        bank[start] = first
        balance[first] += 1
        queue = deque([start])
        while queue:
            v = queue.popleft()
            # sets of VRegs iterate in identity-hash order: sort, so every process compiles
            # the same program to the same microcode
            for w in sorted(g.pairs[v], key=lambda r: r.id):
                if w not in bank:
                    bank[w] = "b" if bank[v] == "a" else "a"
                    balance[bank[w]] += 1
                    queue.append(w)
    return bank


def allocate(fn: MFunction, abi: BodyABI, def_loc: dict[VReg, Loc | None]) -> Allocation:
    g, worst, worst_block, worst_set = build_graph(fn)
    prefer = preferred_banks(g)
    names: dict[VReg, str] = {}
    # values that must be GPRs first, then in program order (optimal for straight code,
    # where the interference graph is an interval graph)
    first = first_definitions(fn)
    order = sorted(g.interfere, key=lambda v: (not v.gpr_only, first.get(v, -1), v.id))
    regs = {"a": [f"a{n}" for n in abi.gprs_a], "b": [f"b{n}" for n in abi.gprs_b]}
    spills = [f"*l$index0[{k}]" for k in range(abi.spill_words)]
    for v in order:
        taken = {names[w] for w in g.interfere[v] if w in names}
        banned = {names[w][0] for w in g.pairs[v] if w in names and names[w][0] in "ab"}
        choice = _choose(v, g, names, taken, banned, prefer.get(v), regs, spills)
        if choice is None:
            raise _too_many(fn, v, worst, worst_block, worst_set, def_loc, abi)
        names[v] = choice
    used = tuple(sorted({n for n in names.values() if n[0] in "ab"},
                        key=lambda r: (r[0], int(r[1:]))))
    spilled = {n for n in names.values() if n.startswith("*l")}
    return Allocation(names, used, len(spilled))


def _choose(v: VReg, g: Graph, names: dict[VReg, str], taken: set[str], banned: set[str],
            bank: str | None, regs: dict[str, list[str]], spills: list[str]) -> str | None:
    # a copy partner's location first (coalescing), when legal
    for w in sorted(g.copies[v], key=lambda r: r.id):
        loc = names.get(w)
        if loc and loc not in taken and (loc[0] not in "ab" or loc[0] not in banned) and \
                not (v.gpr_only and loc.startswith("*l")):
            return loc
    if len(g.pairs[v]) >= HUB_PAIRS and not v.gpr_only:
        # a value paired with many others (an accumulator, a base address) would force
        # all of them into the other bank: local memory pairs with anything, at no cost
        free = [s for s in spills if s not in taken]
        if free:
            return free[0]
    banks = [bank or "a", "b" if (bank or "a") == "a" else "a"]
    if bank is None:
        banks.sort(key=lambda k: -sum(r not in taken for r in regs[k]))
    for k in banks:
        if k in banned:
            continue
        for r in regs[k]:
            if r not in taken:
                return r
    if v.gpr_only:
        return None
    for s in spills:
        if s not in taken:
            return s
    return None


def _too_many(fn: MFunction, v: VReg, worst: int, block: str, live: set[VReg],
              def_loc: dict[VReg, Loc | None], abi: BodyABI) -> CompileError:
    located = sorted((w for w in live if def_loc.get(w)), key=lambda w: w.id)
    loc = def_loc.get(located[0]) if located else def_loc.get(v)
    capacity = len(abi.gprs_a) + len(abi.gprs_b) + abi.spill_words
    wir_block = next((b.wir_label or b.label for b in fn.blocks if b.label == block), block)
    return compile_error(
        "me-registers",
        f"{fn.name}: too many values live at once in block {wir_block}: {worst} values, "
        f"{capacity} places ({len(abi.gprs_a)} + {len(abi.gprs_b)} registers and "
        f"{abi.spill_words} spill words)",
        loc, "this value is live at the worst point; keep fewer values alive across it "
        "(split the computation, re-read it from memory)")


def drop_coalesced_copies(fn: MFunction, names: dict[VReg, str]) -> None:
    """Remove the copies whose source and destination got the same place."""
    def same(ins: MInstr) -> bool:
        d, s = ins.ops[ins.defs[0]], ins.ops[ins.uses[0]]
        place = names.get(d, d) if isinstance(d, VReg) else d
        # a transfer register read is the *in* register, written the *out* one
        return not place.startswith("$") and place == (
            names.get(s, s) if isinstance(s, VReg) else s)
    for b in fn.blocks:
        b.instrs = drop_keeping_debug(b.instrs, lambda i: i.copy and same(i))
