"""Machine IR: microcode instructions on virtual registers, between instruction selection
and emission.

An `MInstr` is one instruction (or a short fixed sequence, a *macro*, e.g. a compare that
needs a branch) written as a text template whose `{i}` holes are filled with its operands
once registers are allocated.  Operands are `VReg`s or fixed operand text (`$3`, `$$0`,
`*l$index1[8]`, `--`, an immediate `17`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from npkit.compiler.uc.image import Variable

from ..wir import Loc


@dataclass(eq=False)
class VReg:
    """A virtual register (identity compared)."""

    id: int
    hint: str = ""
    gpr_only: bool = False      # may not live in local memory (used while LM_ADDR_0 moved)

    def __str__(self) -> str:
        return f"v{self.id}" + (f".{self.hint}" if self.hint else "")

    def __repr__(self) -> str:
        return str(self)


MOpnd = VReg | str


@dataclass(frozen=True)
class MBind:
    """A variable binding in machine IR (wir.VarBind with operands as isel chose them: a
    VReg, a fixed operand such as `$$3` or `*l$index1[5]`, or an int constant word);
    args None: optimized out from here."""

    var: Variable
    args: tuple[tuple[VReg | str | int, ...], ...] | None
    expr: tuple[str | int, ...] = ()


def drop_keeping_debug(instrs: list[MInstr], drop: Callable[[MInstr], bool]) -> list[MInstr]:
    """instrs without those `drop` selects; the variable bindings of a dropped instruction
    go to the next one kept (after the last: to the last kept)."""
    keep: list[MInstr] = []
    carry: tuple[MBind, ...] = ()
    for ins in instrs:
        if drop(ins):
            carry += ins.dbg
            continue
        if carry:
            ins.dbg, carry = carry + ins.dbg, ()
        keep.append(ins)
    if carry and keep:
        keep[-1].dbg += carry
    return keep


def remove_keeping_debug(instrs: list[MInstr], ins: MInstr) -> None:
    """instrs.remove(ins), its variable bindings going to the instruction after it."""
    at = next(k for k, i in enumerate(instrs) if i is ins)
    del instrs[at]
    if ins.dbg and instrs:
        target = instrs[min(at, len(instrs) - 1)]
        target.dbg = ins.dbg + target.dbg

# kinds: "op" (ALU-class, falls through), "mem" (issues a unit command), "wait" (ctx_arb),
# "branch" (ends a block: conditional and/or unconditional jumps), "exit"
@dataclass(eq=False)
class MInstr:
    template: str                   # one or more lines; `{i}` = operand i
    ops: list[MOpnd]
    defs: tuple[int, ...] = ()      # operand indices written
    uses: tuple[int, ...] = ()      # operand indices read (merging writes are in both)
    pairs: tuple[tuple[int, int], ...] = ()   # operand pairs under the A/B bank rule
    late_uses: tuple[int, ...] = ()  # read after a def of this instruction is written
    kind: str = "op"
    sets_cc: bool = False
    reads_cc: bool = False          # condition codes or the previous ALU result
    targets: tuple[str, ...] = ()   # labels it may branch to
    signals: tuple[int, ...] = ()   # mem: the signal it raises; wait: those it waits for
    loc: Loc | None = None
    copy: bool = False              # `alu[d, --, B, s]`: a candidate for coalescing
    defer: int = 0                  # branch: defer slots filled after it
    # debug info: variable bindings taking effect just before it (varlocs.py); never a use
    dbg: tuple[MBind, ...] = ()

    @property
    def is_macro(self) -> bool:
        return "\n" in self.template

    def vdefs(self) -> list[VReg]:
        return [o for i in self.defs if isinstance(o := self.ops[i], VReg)]

    def vuses(self) -> list[VReg]:
        return [o for i in self.uses if isinstance(o := self.ops[i], VReg)]

    def render(self, names: dict[VReg, str] | None = None) -> str:
        def show(o: MOpnd) -> str:
            if isinstance(o, VReg):
                return names[o] if names is not None else str(o)
            return o
        return self.template.format(*(show(o) for o in self.ops))


@dataclass
class MBlock:
    label: str                      # the emitted label (b_...)
    instrs: list[MInstr] = field(default_factory=list)
    succs: tuple[str, ...] = ()     # successor block labels
    wir_label: str = ""


@dataclass
class MFunction:
    name: str
    blocks: list[MBlock]
    window_bytes: int
    signals_used: tuple[int, ...] = ()

    def listing(self, names: dict[VReg, str] | None = None) -> str:
        lines = [f"; machine IR of {self.name}"]
        for b in self.blocks:
            lines.append(f"{b.label}:    ; -> {', '.join(b.succs) or 'exit'}")
            for ins in b.instrs:
                for text in ins.render(names).splitlines():
                    lines.append(("    " if not text.endswith(":") else "") + text)
        return "\n".join(lines) + "\n"
