"""Liveness of virtual registers over the machine IR (backward data flow)."""

from __future__ import annotations

from dataclasses import dataclass

from .mir import MFunction, VReg, drop_keeping_debug


@dataclass
class Liveness:
    live_in: dict[str, set[VReg]]
    live_out: dict[str, set[VReg]]


def liveness(fn: MFunction) -> Liveness:
    """live_in/live_out per block label, iterated to the fixed point."""
    by_label = {b.label: b for b in fn.blocks}
    gen: dict[str, set[VReg]] = {}
    kill: dict[str, set[VReg]] = {}
    for b in fn.blocks:
        g: set[VReg] = set()
        k: set[VReg] = set()
        for ins in b.instrs:
            g |= {u for u in ins.vuses() if u not in k}
            k |= set(ins.vdefs())
        gen[b.label], kill[b.label] = g, k
    live_in = {b.label: set(gen[b.label]) for b in fn.blocks}
    live_out: dict[str, set[VReg]] = {b.label: set() for b in fn.blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(fn.blocks):
            out: set[VReg] = set()
            for s in b.succs:
                if s in by_label:
                    out |= live_in[s]
            new_in = gen[b.label] | (out - kill[b.label])
            if out != live_out[b.label] or new_in != live_in[b.label]:
                live_out[b.label], live_in[b.label] = out, new_in
                changed = True
    return Liveness(live_in, live_out)


def remove_dead_code(fn: MFunction) -> int:
    """Delete single ALU-class instructions whose results (virtual registers only) are never
    read, e.g. a header word copied at entry and overwritten before any read.  Returns how
    many were removed."""
    removed = 0
    while True:
        info = liveness(fn)
        count = 0
        for b in fn.blocks:
            live = set(info.live_out[b.label])
            dead: set[int] = set()
            for ins in reversed(b.instrs):
                defs = ins.vdefs()
                if (ins.kind == "op" and not ins.is_macro and defs
                        and len(defs) == len(ins.defs) and not set(defs) & live
                        and "local_csr" not in ins.template):
                    count += 1
                    dead.add(id(ins))
                    continue
                live -= set(defs)
                live |= set(ins.vuses())
            if dead:
                b.instrs = drop_keeping_debug(b.instrs, lambda i, dead=dead: id(i) in dead)
        removed += count
        if not count:
            return removed
