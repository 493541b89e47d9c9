"""Emitting WIR: a current block, fresh registers and labels, and the MBL location that
every emitted instruction takes."""

from __future__ import annotations

import re

from .. import fold, wir
from ..fold import fold_bin
from ..wir import Operand, Reg


class Builder:
    def __init__(self, fn: wir.Function) -> None:
        self.fn = fn
        self.cur: wir.Block | None = None
        self.loc: wir.Loc | None = None
        self.pending_dbg: tuple[wir.VarBind, ...] = ()     # for the next instruction
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
        if self.pending_dbg:
            instr.dbg, self.pending_dbg = self.pending_dbg + instr.dbg, ()
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

    def pop_count(self, src: Operand) -> Operand:
        if isinstance(src, int):
            return fold.pop_count(src)
        r = self.reg()
        self.emit(wir.PopCount(r, src))
        return r

    def cmp(self, pred: str, a: Operand, b: Operand) -> Operand:
        if isinstance(a, int) and isinstance(b, int):
            return int(fold.compare(pred, a, b))
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
