"""Emitting WIR: a current block, fresh registers and labels, and the MBL location that
every emitted instruction takes."""

from __future__ import annotations

import re

from .. import wir
from ..wir import Operand, Reg


class Builder:
    def __init__(self, fn: wir.Function) -> None:
        self.fn = fn
        self.cur: wir.Block | None = None
        self.loc: wir.Loc | None = None
        self._labels: set[str] = {b.label for b in fn.blocks}

    # ---- blocks ----
    def label(self, hint: str) -> str:
        """A fresh label made of [A-Za-z0-9_] (the back end prefixes it for microcode)."""
        base = re.sub(r"\W", "_", hint) or "b"
        label, k = base, 1
        while label in self._labels:
            label, k = f"{base}_{k}", k + 1
        self._labels.add(label)
        return label

    def new_block(self, hint: str) -> wir.Block:
        block = wir.Block(self.label(hint))
        self.fn.blocks.append(block)
        return block

    def at(self, block: wir.Block) -> None:
        self.cur = block

    def emit(self, instr: wir.Instr) -> wir.Instr:
        assert self.cur is not None
        instr.loc = self.loc
        self.cur.instrs.append(instr)
        return instr

    def reg(self, hint: str = "") -> Reg:
        return self.fn.new_reg(hint)

    # ---- instructions that give a value ----
    def bin(self, op: str, a: Operand, b: Operand, hint: str = "") -> Operand:
        folded = fold_bin(op, a, b)
        if folded is not None:
            return folded
        r = self.reg(hint)
        self.emit(wir.Bin(r, op, a, b))
        return r

    def fsh(self, hi: Operand, lo: Operand, amount: int) -> Operand:
        if amount == 0:
            return lo
        r = self.reg()
        self.emit(wir.Fsh(r, hi, lo, amount))
        return r

    def cmp(self, pred: str, a: Operand, b: Operand) -> Operand:
        if isinstance(a, int) and isinstance(b, int):
            return int(compare(pred, a, b))
        r = self.reg()
        self.emit(wir.Cmp(r, pred, a, b))
        return r

    def select(self, cond: Operand, a: Operand, b: Operand) -> Operand:
        if isinstance(cond, int):
            return a if cond else b
        if a == b:
            return a
        r = self.reg()
        self.emit(wir.Select(r, cond, a, b))
        return r

    def copy(self, dst: Reg, src: Operand) -> None:
        if dst != src:
            self.emit(wir.Copy(dst, src))

    def jump(self, target: str) -> None:
        self.emit(wir.Jump(target))

    def branch(self, pred: str, a: Operand, b: Operand, then_: str, else_: str) -> None:
        self.emit(wir.Branch(pred, a, b, then_, else_))


def _signed(v: int) -> int:
    return v - (1 << 32) if v & 0x8000_0000 else v


def compare(pred: str, a: int, b: int) -> bool:
    if pred.startswith("s"):
        a, b = _signed(a), _signed(b)
        pred = pred[1:]
    elif pred.startswith("u"):
        pred = pred[1:]
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
            "ge": a >= b}[pred]


def eval_bin(op: str, a: int, b: int) -> int:
    """The WIR meaning of a binary op on two constant words."""
    m = wir.MASK32
    if op == "add":
        return (a + b) & m
    if op == "sub":
        return (a - b) & m
    if op == "mul":
        return (a * b) & m
    if op == "and":
        return a & b
    if op == "or":
        return a | b
    if op == "xor":
        return a ^ b
    if op == "shl":
        return (a << b) & m if b < 32 else 0
    if op == "lshr":
        return a >> b if b < 32 else 0
    raise ValueError(op)


def fold_bin(op: str, a: Operand, b: Operand) -> Operand | None:
    """The result when it needs no instruction (constants, identities), else None."""
    if isinstance(a, int) and isinstance(b, int):
        return eval_bin(op, a, b)
    if isinstance(b, int):
        if b == 0 and op in ("add", "sub", "or", "xor", "shl", "lshr"):
            return a
        if (b == 0 and op in ("and", "mul")) or (b >= 32 and op in ("shl", "lshr")):
            return 0
        if (op == "and" and b == wir.MASK32) or (op == "mul" and b == 1):
            return a
    if isinstance(a, int):
        if a == 0 and op in ("add", "or", "xor"):
            return b
        if a == 0 and op in ("and", "mul", "shl", "lshr"):
            return 0
        if (op == "and" and a == wir.MASK32) or (op == "mul" and a == 1):
            return b
    if a == b and op in ("and", "or"):
        return a
    if a == b and op in ("xor", "sub"):
        return 0
    return None
