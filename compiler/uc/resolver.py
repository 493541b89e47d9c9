"""Operand resolution: operand text -> field values, using the assembler's symbol tables."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from npkit.sim import isa

from . import banks
from .expr import ExprError, evaluate
from .operands import (
    CLASS,
    IDENT,
    OperandSyntaxError,
    Opnd,
    gpr_bank,
    limit_problem,
    parse_operand,
    per_context,
)
from .source import Arg, LineError, Stmt

SIGNAL_MAX = 15
EXPR_HINT = ("expressions use numbers (12, 0x1f, 0b101), .const/#define names and "
             "+ - * / % << >> & | ^ ~ ( )")


@dataclass
class SymbolTable:
    """Names known to the assembler; register numbers are filled in by placement."""

    control_store_words: int
    ctx_mode: int = 8
    consts: dict[str, int] = field(default_factory=dict)
    labels: dict[str, int] = field(default_factory=dict)
    decl_kinds: dict[str, str] = field(default_factory=dict)  # name -> gpr | $ | $$ | sig
    gpr_codes: dict[str, int] = field(default_factory=dict)
    xfer_index: dict[str, int] = field(default_factory=dict)
    signal_numbers: dict[str, int] = field(default_factory=dict)

    def const_in(self, arg: Arg, lo: int, hi: int, what: str, hint: str = "") -> int:
        try:
            value = evaluate(arg.text, self.consts.get)
        except ExprError as e:
            raise LineError(str(e), arg.col + e.offset, e.hint or EXPR_HINT) from None
        if not lo <= value <= hi:
            raise LineError(f"{what} {value} is out of range {lo}..{hi}", arg.col,
                            hint or f"write a value from {lo} to {hi}")
        return value


@dataclass
class Usage:
    """What the placement pass learned about one instruction's operands."""

    pair: tuple[str, str] | None = None  # GPR nodes of the two sources
    pair_col: int = 0  # column of the second source
    raw_gprs: set[int] = field(default_factory=set)
    raw_xfers: dict[str, set[int]] = field(default_factory=lambda: {"$": set(), "$$": set()})
    raw_signals: set[int] = field(default_factory=set)


class Resolver:
    """Turns operand text into field values for the forms in ``forms.py``.

    Before placement (``final=False``) register names resolve to placeholders and the
    resolver only records which names/registers each field uses.
    """

    def __init__(self, table: SymbolTable, stmt: Stmt, usage: Usage,
                 final: bool = False) -> None:
        self.table = table
        self.stmt = stmt
        self.usage = usage
        self.final = final
        self.gpr_nodes: dict[str, str] = {}  # field -> name or bank sentinel
        self.cols: dict[str, int] = {}

    def ctx_mode(self) -> int:
        return self.table.ctx_mode

    def _parse(self, arg: Arg) -> Opnd:
        if not arg.text:
            raise LineError("missing operand", arg.col, f"syntax: {self._syntax()}")
        try:
            return parse_operand(arg.text)
        except OperandSyntaxError as e:
            raise LineError(str(e), arg.col, self._limit_hint()) from None

    def _syntax(self) -> str:
        ins = isa.BY_MNEMONIC.get(self.stmt.name)
        return ins.syntax if ins else "immed32[dest, value32]"

    def _limit_hint(self) -> str:
        return f"in {self.table.ctx_mode}-context mode each context has " \
               f"{per_context(self.table.ctx_mode)} registers per bank and transfer kind"

    def operand(self, arg: Arg, field: str) -> int:
        op = self._parse(arg)
        self.cols[field] = arg.col
        if op.kind == "code":
            code = op.code
            if gpr_bank(code):
                self.gpr_nodes[field] = banks.bank_node(gpr_bank(code))
                self.usage.raw_gprs.add(code)
            cls = isa.operand_class(code)
            if cls is not None and cls.name in ("xfer_s", "xfer_d"):
                self.usage.raw_xfers["$" if cls.name == "xfer_s" else "$$"].add(code - cls.first)
        elif op.kind == "lm":
            code = op.code + self.const(Arg(op.text, arg.col), 0, 15, "local memory index")
        elif op.kind == "name":
            code = self._xfer_code(op, arg)
        elif op.kind == "ident" and self._decl_kind(op.name) == "gpr":
            self.gpr_nodes[field] = op.name
            code = self.table.gpr_codes.get(op.name, 0)
        elif op.kind == "label":
            raise LineError(f"a label ({arg.text}) is not a value here", arg.col,
                            "use load_addr[reg, label#] to load a label's address")
        else:
            value = self.const(arg, -(1 << 63), 1 << 64, "value")
            if not 0 <= value <= isa.IMM_OPERAND_MAX:
                raise LineError(f"immediate out of range: {value} does not fit an operand "
                                f"(0..{isa.IMM_OPERAND_MAX})", arg.col,
                                f"load it into a register first: immed[reg, {value}]")
            code = CLASS["imm"].first + value
        if self.final:
            problem = limit_problem(code, self.table.ctx_mode)
            if problem:
                raise LineError(problem, arg.col, "use .ctx_mode 4 for 32 registers per "
                                "context, or a lower register number")
        return code

    def _decl_kind(self, name: str) -> str | None:
        return self.table.decl_kinds.get(name)

    def _xfer_code(self, op: Opnd, arg: Arg) -> int:
        kind = "$$" if op.name.startswith("$$") else "$"
        if self._decl_kind(op.name) != kind:
            raise LineError(f"undeclared transfer register {op.name}", arg.col,
                            f"declare it with .reg {op.name}")
        first = CLASS["xfer_d" if kind == "$$" else "xfer_s"].first
        return first + self.table.xfer_index.get(op.name, 0)

    def src(self, arg: Arg, field: str) -> int:
        return self.operand(arg, field)

    def dst(self, arg: Arg, field: str) -> int:
        code = self.operand(arg, field)
        cls = isa.operand_class(code)
        if cls is not None and not cls.writable:
            raise LineError(f"{arg.text} cannot be a destination", arg.col,
                            "write to a register, a transfer register or -- (discard)")
        return code

    def const(self, arg: Arg, lo: int, hi: int, what: str, hint: str = "") -> int:
        return self.table.const_in(arg, lo, hi, what, hint)

    def target(self, arg: Arg) -> int:
        op = self._parse(arg)
        if op.kind in ("label", "ident") and op.name in self.table.labels:
            return self.table.labels[op.name]
        if op.kind == "label" or (op.kind == "ident" and op.name not in self.table.consts):
            close = difflib.get_close_matches(op.name, list(self.table.labels), 1)
            hint = f"did you mean {close[0]}#?" if close else "define it with 'name#:'"
            raise LineError(f"undefined label {op.name!r}", arg.col, hint)
        return self.const(arg, 0, self.table.control_store_words - 1, "branch target",
                          "branch targets are addresses inside the control store")

    def signal(self, arg: Arg) -> int:
        op = self._parse(arg)
        if op.kind == "ident" and self._decl_kind(op.name) == "sig":
            return self.table.signal_numbers.get(op.name, 1)
        if op.kind == "ident" and op.name not in self.table.consts:
            raise LineError(f"undefined signal {op.name!r}", arg.col,
                            f"declare it with .sig {op.name}")
        number = self.const(arg, -(1 << 63), 1 << 64, "signal")
        if not 1 <= number <= SIGNAL_MAX:
            raise LineError(f"signal out of range: {number} (signals are 1..{SIGNAL_MAX})",
                            arg.col, "declare names with .sig and let the assembler number "
                            "them")
        self.usage.raw_signals.add(number)
        return number

    def xfer(self, arg: Arg, prefix: str, nregs: int) -> int:
        op = self._parse(arg)
        if op.kind == "code" and op.code == isa.OPERAND_NONE:
            return isa.XFER_NONE
        cls = isa.operand_class(op.code) if op.kind == "code" else None
        want = "xfer_d" if prefix == "$$" else "xfer_s"
        if op.kind == "name" and op.name.startswith("$$") == (prefix == "$$"):
            index = self._xfer_code(op, arg) - CLASS[want].first
            name = op.name
        elif cls is not None and cls.name == want:
            index = op.code - cls.first
            self.usage.raw_xfers[prefix].add(index)
            name = arg.text
        else:
            unit = "DRAM" if prefix == "$$" else "SRAM"
            raise LineError(f"{self.stmt.name} needs {prefix} ({unit}) transfer registers, "
                            f"not {arg.text}", arg.col,
                            f"write {prefix}name or {prefix}<n>, or -- for none")
        limit = per_context(self.table.ctx_mode)
        if self.final and index + nregs > limit:
            raise LineError(f"{name} + {nregs} transfer registers runs past the "
                            f"{limit} registers of a context", arg.col,
                            "use a lower transfer register or a smaller count")
        return index

    def enum(self, arg: Arg, table: dict[str, int], what: str) -> int:
        if arg.text in table:
            return table[arg.text]
        folded = {k.lower(): v for k, v in table.items()}
        if arg.text.lower() in folded:
            return folded[arg.text.lower()]
        if table is isa.LOCAL_CSRS and (not re.fullmatch(IDENT, arg.text)
                                        or arg.text in self.table.consts):
            number = self.const(arg, 0, 127, "CSR number")
            if number not in table.values():
                raise LineError(f"there is no local CSR number {number:#x}", arg.col,
                                f"local CSRs: {', '.join(table)}")
            return number
        close = difflib.get_close_matches(arg.text, list(table), 3)
        hint = f"did you mean {' or '.join(close)}?" if close else \
            f"one of: {', '.join(list(table)[:20])}"
        raise LineError(f"unknown {what} {arg.text!r}", arg.col, hint)

    def shift(self, arg: Arg, allowed: tuple[str, ...]) -> tuple[str, int]:
        m = re.fullmatch(r"(<<|>>)\s*(rot)?\s*(.*)", arg.text)
        if not m:
            raise LineError(f"expected a shift like <<4 or >>rot8, got {arg.text!r}", arg.col,
                            f"shifts: {', '.join(allowed)}")
        kind = m.group(1) + (m.group(2) or "")
        if kind not in allowed:
            raise LineError(f"{kind} is not allowed here", arg.col,
                            f"shifts: {', '.join(allowed)}")
        amount_col = arg.col + m.start(3)
        return kind, self.const(Arg(m.group(3), amount_col), 0, 31, "shift amount")
