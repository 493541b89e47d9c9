"""Rewriting an instruction's operands (the fields that are uses, never the defs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .. import wir
from ..wir import Operand

USE_FIELDS = ("a", "b", "src", "hi", "lo", "cond", "offset", "addr", "value", "srcs",
              "handle", "at", "start", "length")

SIDE_EFFECTS = (wir.HdrWrite, wir.PktStore8, wir.MetaWrite, wir.MemWrite, wir.MemAdd,
                wir.Jump, wir.Branch, wir.Ret, *wir.BUFFER_OPS, wir.RxTurnDone,
                wir.RxTurnTake)


def map_uses(instr: wir.Instr, f: Callable[[Operand], Operand]) -> bool:
    """Replace every use operand o by f(o) in place; True if anything changed."""
    changed = False
    for field in dataclasses.fields(instr):
        if field.name not in USE_FIELDS:
            continue
        old = getattr(instr, field.name)
        new = tuple(f(o) for o in old) if isinstance(old, tuple) else f(old)
        if new != old or _differs(new, old):
            setattr(instr, field.name, new)
            changed = True
    if instr.dbg:   # variables follow their values (no change to report: not a use)
        instr.dbg = tuple(b if b.args is None else dataclasses.replace(
            b, args=tuple(tuple(f(o) for o in a) for a in b.args)) for b in instr.dbg)
    return changed


def keep_debug(instrs: list[wir.Instr], removed: set[int]) -> None:
    """Before instructions are removed (positions `removed` in instrs), their variable
    bindings move to the next instruction that stays (a block's last always stays)."""
    carry: tuple[wir.VarBind, ...] = ()
    for k, i in enumerate(instrs):
        if k in removed:
            carry += i.dbg
        elif carry:
            i.dbg, carry = carry + i.dbg, ()


def _differs(new, old) -> bool:
    """Reg(1) == Reg(1, 'x') is False already; an int and a Reg never compare equal; this
    only guards tuples of mixed kinds."""
    if isinstance(new, tuple):
        return any(type(a) is not type(b) for a, b in zip(new, old, strict=True))
    return type(new) is not type(old)


def is_pure(instr: wir.Instr) -> bool:
    return not isinstance(instr, SIDE_EFFECTS)
