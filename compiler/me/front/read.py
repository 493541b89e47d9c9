"""Read an optimized LLVM function (llvmlite.binding) into plain Python data: blocks of
instructions whose operands are named values, integer constants or block names.  Facts
that llvmlite does not expose as objects (icmp predicates, switch case values) come from
the instruction text."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from npkit.compiler.mbl.debuginfo import VarValue, instruction_texts

from .. import wir


@dataclass(frozen=True)
class Value:
    """An SSA value (instruction result, argument or alloca), `width` bits (0: a pointer)."""

    name: str
    width: int


@dataclass(frozen=True)
class Const:
    value: int          # unsigned, masked to the width
    width: int


@dataclass(frozen=True)
class Label:
    name: str


@dataclass(frozen=True)
class Global:
    name: str           # a called function


Operand = Value | Const | Label | Global


@dataclass
class Instr:
    opcode: str
    name: str                       # result name ("" for none)
    width: int                      # result width in bits (0: void or pointer)
    operands: list[Operand]
    loc: wir.Loc | None = None
    predicate: str = ""             # icmp
    cases: list[tuple[int, str]] = field(default_factory=list)   # switch: (value, label)
    incoming: list[str] = field(default_factory=list)            # phi: predecessor labels
    text: str = ""
    dbg: list[VarValue] = field(default_factory=list)   # variable records just before it

    @property
    def callee(self) -> str:
        last = self.operands[-1]
        return last.name if isinstance(last, Global) else ""


@dataclass
class BasicBlock:
    name: str
    instrs: list[Instr]


@dataclass
class LFunction:
    name: str
    blocks: list[BasicBlock]


def _width(t: llvm.TypeRef) -> int:
    return 0 if t.is_pointer else t.type_width


_CONST = re.compile(r"^i(\d+) (-?\d+|true|false|poison|undef)$")


def _operand(o: llvm.ValueRef) -> Operand:
    kind = o.value_kind
    if kind == llvm.ValueKind.basic_block:
        return Label(o.name)
    if kind == llvm.ValueKind.function:
        return Global(o.name)
    if kind in (llvm.ValueKind.constant_int, llvm.ValueKind.poison_value,
                llvm.ValueKind.undef_value):
        m = _CONST.match(str(o).strip())
        if m is None:
            raise ValueError(f"unexpected constant {o}")
        width, text = int(m.group(1)), m.group(2)
        # poison/undef may be any value: 0 is as good as any
        value = {"true": 1, "false": 0, "poison": 0, "undef": 0}.get(text)
        value = int(text) if value is None else value
        return Const(value & ((1 << width) - 1), width)
    if kind == llvm.ValueKind.constant_pointer_null:
        return Const(0, 32)
    return Value(o.name, _width(o.type))


_ICMP = re.compile(r"icmp (?:samesign )?(\w+) ")
_CASE = re.compile(r"i\d+ (-?\d+), label %\"?([^\s\"]+)\"?")


def _read_instr(ins: llvm.ValueRef, locate: Callable[[llvm.ValueRef], wir.Loc | None],
                text: str) -> Instr:
    operands = [_operand(o) for o in ins.operands]
    out = Instr(ins.opcode, ins.name, _width(ins.type), operands, loc=locate(ins))
    out.text = text
    if ins.opcode == "icmp":
        m = _ICMP.search(text)
        assert m is not None, text
        out.predicate = m.group(1)
    elif ins.opcode == "switch":
        body = text[text.index("[") + 1:text.rindex("]")]
        width = operands[0].width  # type: ignore[union-attr]
        out.cases = [(int(v) & ((1 << width) - 1), label) for v, label in _CASE.findall(body)]
    elif ins.opcode == "phi":
        out.incoming = [b.name for b in ins.incoming_blocks]
    return out


def read_function(fn: llvm.ValueRef,
                  locate: Callable[[llvm.ValueRef], wir.Loc | None] = lambda _: None,
                  values: Callable[[llvm.ValueRef], list[VarValue]] = lambda _: []
                  ) -> LFunction:
    """The function's blocks in layout order; every value and block must be named (run the
    instruction namer first).  `values`: the variable records before an instruction."""
    texts = dict(instruction_texts(fn))  # the function printed once, not per instruction
    blocks = []
    for b in fn.blocks:
        instrs = []
        for i in b.instructions:
            instrs.append(_read_instr(i, locate, texts[i]))
            instrs[-1].dbg = values(i)
        blocks.append(BasicBlock(b.name, instrs))
    return LFunction(fn.name, blocks)
