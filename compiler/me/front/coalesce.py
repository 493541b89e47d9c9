"""Pass: coalesce memory reads.  A MemRead of words `base + k` (same base register or a
constant base, constant k) joins an earlier read of the same space and base in the same
block or a dominating one, when the two together span at most 8 words and no write to the
space lies on any path between them: the earlier read grows (one memory command for the
4-word next-hop record instead of four) and the later one becomes copies."""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir
from ..wir import MASK32, Operand, Reg
from . import cfg
from .cse import _CSE

MAX_WORDS = 8


@dataclass
class _Group:
    block: wir.Block
    read: wir.MemRead
    base: Operand           # a single-definition register, or 0 for constant addresses
    low: int                # the offset of read.dsts[0] from base


def _known_zero(i: wir.Instr | None) -> int:
    """Bits known to be zero in the value i defines."""
    if isinstance(i, wir.Bin) and isinstance(i.b, int):
        if i.op == "and":
            return ~i.b & MASK32
        if i.op == "shl":
            return (1 << i.b) - 1
        if i.op == "lshr":
            return ~(MASK32 >> i.b) & MASK32
    return 0


class _Coalesce:
    def __init__(self, fn: wir.Function) -> None:
        self.fn = fn
        self.defs = cfg.def_counts(fn)
        self.def_of = {d.id: (b.label, k, i) for b in fn.blocks
                       for k, i in enumerate(b.instrs) for d in i.defs()}
        self.idom = cfg.dominators(fn)
        self.paths = _CSE(fn)        # its kill-on-path check
        self.groups: list[_Group] = []

    def split(self, addr: Operand) -> tuple[Operand, int] | None:
        if isinstance(addr, int):
            return 0, addr
        if self.defs[addr.id] != 1:
            return None
        _, _, i = self.def_of[addr.id]
        if isinstance(i, wir.Bin) and isinstance(i.b, int) and isinstance(i.a, Reg) \
                and self.defs[i.a.id] == 1:
            if i.op == "add" and i.b < 256:
                return i.a, i.b
            if i.op == "or" and i.b & ~_known_zero(self.def_of[i.a.id][2]) == 0:
                return i.a, i.b
        return addr, 0

    def dominates(self, a: str, b: str) -> bool:
        while b is not None:
            if a == b:
                return True
            b = self.idom.get(b)  # type: ignore[assignment]
        return False

    def position(self, block: wir.Block, instr: wir.Instr) -> tuple[str, int]:
        return block.label, next(k for k, i in enumerate(block.instrs) if i is instr)

    def base_ready(self, base: Operand, block: wir.Block, at: int) -> bool:
        """Is base computed before position `at` of block (so the grown read may use it)?"""
        if isinstance(base, int):
            return True
        label, k, _ = self.def_of[base.id]
        return (label == block.label and k < at) or \
            (label != block.label and self.dominates(label, block.label))

    def try_join(self, block: wir.Block, read: wir.MemRead) -> bool:
        parts = self.split(read.addr)
        if parts is None:
            return False
        base, k = parts
        for g in reversed(self.groups):
            if g.base != base or g.read.space != read.space:
                continue
            low = min(g.low, k)
            high = max(g.low + len(g.read.dsts), k + len(read.dsts))
            if high - low > MAX_WORDS or not self.dominates(g.block.label, block.label):
                continue
            start = self.position(g.block, g.read)
            key = ("mem", read.space, None, 0)
            self.paths.killers.clear()     # positions move as reads grow
            if self.paths.killed_between(key, start, self.position(block, read)):
                continue
            if not self.base_ready(base, g.block, start[1]):
                continue
            self.grow(g, low, high, start[1])
            copies = [wir.Copy(d, g.read.dsts[k - low + n], loc=read.loc,
                               dbg=read.dbg if n == 0 else ())
                      for n, d in enumerate(read.dsts)]
            at = block.instrs.index(read)
            block.instrs[at:at + 1] = copies
            return True
        self.groups.append(_Group(block, read, base, k))
        return False

    def grow(self, g: _Group, low: int, high: int, at: int) -> None:
        old = g.read
        dsts = [self.fn.new_reg() for _ in range(high - low)]
        dsts[g.low - low:g.low - low + len(old.dsts)] = old.dsts
        addr: Operand = old.addr
        if low != g.low:
            if isinstance(g.base, int):
                addr = (g.base + low) & MASK32
            else:
                addr = self.fn.new_reg()
                g.block.instrs.insert(at, wir.Bin(addr, "add", g.base, low, loc=old.loc))
        new = wir.MemRead(tuple(dsts), old.space, addr, loc=old.loc, dbg=old.dbg)
        g.block.instrs[g.block.instrs.index(old)] = new
        g.read, g.low = new, low

    def run(self) -> None:
        for label in cfg.reverse_postorder(self.fn):
            block = self.fn.block(label)
            for i in list(block.instrs):
                if isinstance(i, wir.MemRead):
                    self.try_join(block, i)


def coalesce(fn: wir.Function) -> None:
    _Coalesce(fn).run()
