"""Pass: coalesce memory reads.  A MemRead joins an earlier read of the same space in the
same block or a dominating one when their addresses are a known number of words apart, the
two together span at most 8 words and no write to the space lies on any path between them:
the earlier read grows (one memory command for the 4-word next-hop record instead of four)
and the later one becomes copies.  Two keys say "a known number of words apart":

* structural: `base + k` / `base | k` (k a small constant, or the base's known-zero bits)
  and the same base register, or two constants; such a join may read words no one uses
  (a gap, or a later read in a block only some paths reach: a hash bucket's key words come
  with its first word);
* exact value (affine.Lin, with a select's range and masks that keep every possible bit):
  `(n + k) & (size - 1) | base` once a clamp bounds n, as a Poptrie node's words.  Such a
  join reads no word for nothing (`adds_no_waste`): the SRAM channel is busy per byte, and
  the IPv6 route table's channel is what limits IPv6 at 60 bytes (docs/lpm.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir
from ..wir import MASK32, Operand, Reg
from . import cfg
from .affine import FACT_RANGES, INVERSE, MIRROR, Affine, Lin, _add
from .cse import _CSE

MAX_WORDS = 8


Key = tuple[object, ...]


@dataclass
class _Group:
    block: wir.Block
    read: wir.MemRead
    lows: dict[Key, int]    # per address key: read.dsts[0]'s offset from the key's base
    base: Operand | None    # the structural key's base register (or 0), if it has one


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


class _AddressAffine(Affine):
    """`Affine` with more exact facts that addresses need: a select's range (the clamp
    `x < C ? x : C` lies in [0, C]), an `and` whose mask keeps every bit the value may have
    (MBL masks each index to its memory's size; once a clamp bounds the index, the mask of
    `index + k` changes nothing and `index + k` is k words after `index`), and an `or` of
    values whose ranges share no bit (a memory's base in its space) as their sum."""

    def _rule(self, i: wir.Instr, label: str, depth: int) -> Lin | None:
        if isinstance(i, wir.Select):
            lo, hi = self._select_range(i, label, depth)
            return Lin(tuple((i.dst.id, j) for j in range(32)), 0, lo, hi)
        if isinstance(i, wir.Bin) and i.op == "and":
            x, mask = (i.a, i.b) if isinstance(i.b, int) else (i.b, i.a)
            if isinstance(mask, int) and isinstance(x, Reg):
                lin = self.of(x, label, depth - 1)
                if lin is not None and _possible_ones(lin) & ~mask & MASK32 == 0:
                    return lin
        if isinstance(i, wir.Bin) and i.op == "or":
            x, y = self.of(i.a, label, depth - 1), self.of(i.b, label, depth - 1)
            if x is not None and y is not None and _possible_ones(x) & _possible_ones(y) == 0:
                return _add(x, y)
        return super()._rule(i, label, depth)

    def _select_range(self, i: wir.Select, label: str, depth: int) -> tuple[int, int]:
        cmp = self.single.get(i.cond.id) if isinstance(i.cond, Reg) else None
        lo, hi = MASK32, 0
        for arm, chosen_when in ((i.a, True), (i.b, False)):
            lin = self.of(arm, label, depth - 1)
            arm_lo, arm_hi = (lin.lo, lin.hi) if lin is not None else (0, MASK32)
            holds = _compare_range(cmp, arm, chosen_when)
            if holds is not None:
                arm_lo, arm_hi = max(arm_lo, holds[0]), min(arm_hi, holds[1])
            lo, hi = min(lo, arm_lo), max(hi, arm_hi)
        return (lo, hi) if lo <= hi else (0, MASK32)


def _possible_ones(lin: Lin) -> int:
    """The bits lin's value may have set (also bounded by its range)."""
    return lin.possible_ones() & ((1 << lin.hi.bit_length()) - 1)


def _compare_range(cmp: wir.Instr | None, arm: Operand, holds: bool) -> tuple[int, int] | None:
    """The range `arm` lies in when compare `cmp` (of arm with a constant) is `holds`."""
    if not isinstance(cmp, wir.Cmp) or not isinstance(arm, Reg):
        return None
    pred, a, b = cmp.pred, cmp.a, cmp.b
    if b == arm and isinstance(a, int):
        a, b, pred = b, a, MIRROR.get(pred, "")
    if a != arm or not isinstance(b, int):
        return None
    pred = pred if holds else INVERSE.get(pred, "")
    return FACT_RANGES[pred](b) if pred in FACT_RANGES else None


class _Coalesce:
    def __init__(self, fn: wir.Function) -> None:
        self.fn = fn
        self.defs = cfg.def_counts(fn)
        self.def_of = {d.id: (b.label, k, i) for b in fn.blocks
                       for k, i in enumerate(b.instrs) for d in i.defs()}
        self.affine = _AddressAffine(fn, {rid: i for rid, (_, _, i) in self.def_of.items()
                                          if self.defs[rid] == 1})
        self.idom = cfg.dominators(fn)
        self.postdom = _postdominators(fn)
        self.paths = _CSE(fn)        # its kill-on-path check
        self.groups: list[_Group] = []

    def split(self, addr: Operand) -> tuple[Operand, int] | None:
        """The structural key: (base, k) for an address `base + k` or `base | k` (k a
        small constant, the base's known-zero bits) or a constant; adjacency mod 2**32."""
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

    def keys(self, block: wir.Block, addr: Operand) -> tuple[dict[Key, int], Operand | None]:
        """An address's keys (two reads with a key in common are that key's offsets apart):
        the structural one, and the exact affine value's variable bits."""
        lows: dict[Key, int] = {}
        base = None
        parts = self.split(addr)
        if parts is not None:
            base = parts[0]
            lows[("base", base)] = parts[1]
        lin = self.affine.of(addr, block.label)
        if lin is not None:
            lows[("affine", lin.bits)] = lin.const
        return lows, base

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

    def always_after(self, group: wir.Block, block: wir.Block) -> bool:
        """Does every path from `group` reach `block` (block post-dominates group)?"""
        return group.label == block.label or block.label in self.postdom.get(group.label, ())

    def adds_no_waste(self, g: _Group, g_low: int, k: int, n: int, block: wir.Block) -> bool:
        """May a read of words [k, k + n) join group g (words from g_low) by exact value?
        Only if the union has no gap (no word nobody reads) and, when it widens the group's
        read, the reading block follows the group's on every path: the SRAM channel is busy
        per byte, so a word read for nothing costs on every path."""
        g_high = g_low + len(g.read.dsts)
        if k > g_high or k + n < g_low:
            return False
        return (g_low <= k and k + n <= g_high) or self.always_after(g.block, block)

    def try_join(self, block: wir.Block, read: wir.MemRead) -> bool:
        lows, base = self.keys(block, read.addr)
        for g in reversed(self.groups):
            key = next((key for key in lows if key in g.lows), None)
            if key is None or g.read.space != read.space:
                continue
            k, g_low = lows[key], g.lows[key]
            low = min(g_low, k)
            high = max(g_low + len(g.read.dsts), k + len(read.dsts))
            if high - low > MAX_WORDS or not self.dominates(g.block.label, block.label):
                continue
            structural = key[0] == "base"
            # joins by exact value read no word for nothing (adds_no_waste); structural
            # ones keep the first rule, any gap and any dominated block (a hash bucket's
            # key words come with its first word): every compiled program kept its code
            if not structural and not self.adds_no_waste(g, g_low, k, len(read.dsts), block):
                continue
            start = self.position(g.block, g.read)
            self.paths.killers.clear()     # positions move as reads grow
            if self.paths.killed_between(("mem", read.space, None, 0), start,
                                         self.position(block, read)):
                continue
            if structural and low != g_low and not self.base_ready(g.base, g.block, start[1]):
                continue
            self.grow(g, key, low, high, start[1])
            copies = [wir.Copy(d, g.read.dsts[k - low + n], loc=read.loc,
                               dbg=read.dbg if n == 0 else ())
                      for n, d in enumerate(read.dsts)]
            at = block.instrs.index(read)
            block.instrs[at:at + 1] = copies
            return True
        self.groups.append(_Group(block, read, lows, base))
        return False

    def grow(self, g: _Group, key: Key, low: int, high: int, at: int) -> None:
        old, g_low = g.read, g.lows[key]
        dsts = [self.fn.new_reg() for _ in range(high - low)]
        dsts[g_low - low:g_low - low + len(old.dsts)] = old.dsts
        addr: Operand = old.addr
        if low != g_low:
            if key[0] == "base":               # base + low, from the base register
                assert g.base is not None
                addr = self._add(g.base, low, g, at)
            else:                              # the group's own address, moved down
                addr = self._add(old.addr, low - g_low, g, at)
        new = wir.MemRead(tuple(dsts), old.space, addr, loc=old.loc, dbg=old.dbg)
        g.block.instrs[g.block.instrs.index(old)] = new
        g.read = new
        g.lows = {k: v + low - g_low for k, v in g.lows.items()}

    def _add(self, base: Operand, offset: int, g: _Group, at: int) -> Operand:
        if isinstance(base, int):
            return (base + offset) & MASK32
        addr = self.fn.new_reg()
        g.block.instrs.insert(at, wir.Bin(addr, "add", base, offset & MASK32, loc=g.read.loc))
        return addr

    def run(self) -> None:
        for label in cfg.reverse_postorder(self.fn):
            block = self.fn.block(label)
            for i in list(block.instrs):
                if isinstance(i, wir.MemRead):
                    self.try_join(block, i)


def _postdominators(fn: wir.Function) -> dict[str, frozenset[str]]:
    """Each block's post-dominators (itself included): the blocks every path from it to an
    exit passes.  Iterative data flow; a block with no successor is an exit."""
    succs = {b.label: b.successors() for b in fn.blocks}
    every = frozenset(succs)
    out = {label: every for label in succs}
    changed = True
    while changed:
        changed = False
        for label in reversed(cfg.reverse_postorder(fn)):
            nxt = [out[s] for s in succs[label] if s in out]
            new = frozenset({label}) | (frozenset.intersection(*nxt) if nxt else frozenset())
            if new != out[label]:
                out[label], changed = new, True
    return out


def coalesce(fn: wir.Function) -> None:
    _Coalesce(fn).run()
