"""Exact values: bit provenance plus a constant, with a range (for `checksums`).

`Lin(bits, const, lo, hi)` says a register's word, as an unsigned integer, equals
`value(bits) + const` exactly (no wrap-around mod 2**32) and lies in lo..hi.  `bits` gives
each of the 32 bit positions as 0 or (register id, bit) of a register written once; the
constant part may be negative.  Ranges come from the bits and from the compares of
dominating branches (`ttl >= 2` on the path past `if ttl <= 1 { exception }`), which make
`((ttl + 0xFF) & 0xFF) << 8 | protocol` exactly `(ttl << 8 | protocol) - 0x100`.

Two checksum terms `x ^ (2**k - 1)` (= 2**k - 1 - x when x < 2**k) and y whose bits are
x's have the exact sum `2**k - 1 + (y.const - x.const)`: RFC 1624's `~m + m'` is a
constant when m' - m is."""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir
from ..wir import MASK32, Operand, Reg
from . import cfg

Bit = int | tuple[int, int]          # 0 or (register id, bit)
ZERO: tuple[Bit, ...] = (0,) * 32
DEPTH = 12


@dataclass(frozen=True)
class Lin:
    bits: tuple[Bit, ...]            # bit 0 first
    const: int
    lo: int
    hi: int

    @property
    def bits_max(self) -> int:
        return sum(1 << j for j, b in enumerate(self.bits) if b != 0)

    def zero_below(self) -> int:
        """How many low bits of the value are surely 0."""
        t = next((j for j, b in enumerate(self.bits) if b != 0), 32)
        c = self.const
        return min(t, (c & -c).bit_length() - 1 if c else 32)

    def possible_ones(self) -> int:
        """A mask of the bits the value may have set."""
        if self.const == 0:
            return self.bits_max
        top = (1 << self.hi.bit_length()) - 1
        return top & ~((1 << self.zero_below()) - 1)


def _const(c: int) -> Lin:
    return Lin(ZERO, c, c, c)


def _leaf(r: Reg) -> Lin:
    return Lin(tuple((r.id, j) for j in range(32)), 0, 0, MASK32)


def _from_bits(bits: tuple[Bit, ...], const: int = 0) -> Lin:
    top = sum(1 << j for j, b in enumerate(bits) if b != 0)
    return Lin(bits, const, const, top + const)


def _disjoint(a: tuple[Bit, ...], b: tuple[Bit, ...]) -> bool:
    return all(x == 0 or y == 0 for x, y in zip(a, b, strict=True))


def _merge(a: tuple[Bit, ...], b: tuple[Bit, ...]) -> tuple[Bit, ...]:
    return tuple(x if x != 0 else y for x, y in zip(a, b, strict=True))


def _add(x: Lin, y: Lin) -> Lin | None:
    if not _disjoint(x.bits, y.bits) or x.hi + y.hi > MASK32:
        return None
    return Lin(_merge(x.bits, y.bits), x.const + y.const, x.lo + y.lo, x.hi + y.hi)


def _and(x: Lin, mask: int) -> Lin | None:
    k = mask.bit_length()
    low_mask = mask == (1 << k) - 1
    if x.const == 0 or (low_mask and x.const % (1 << k) == 0):
        # adding a multiple of 2**k leaves the low k bits alone
        return _from_bits(tuple(b if mask >> j & 1 else 0 for j, b in enumerate(x.bits)))
    if not low_mask or x.bits_max >> k:
        return None
    q = x.lo >> k                   # the whole range in one block of 2**k: a subtraction
    if x.hi >> k != q:
        return None
    return Lin(x.bits, x.const - (q << k), x.lo - (q << k), x.hi - (q << k))


def _shl(x: Lin, k: int) -> Lin | None:
    if x.hi << k > MASK32:              # the bits shifted out may be a known constant
        low = _and(x, MASK32 >> k)
        if low is None or low.hi << k > MASK32:
            return None
        x = low
    if any(b != 0 for b in x.bits[32 - k:]):
        return None
    return Lin(ZERO[:k] + x.bits[:32 - k], x.const << k, x.lo << k, x.hi << k)


def _lshr(x: Lin, k: int) -> Lin | None:
    if x.const % (1 << k):
        return None
    # (b + c) >> k = (b >> k) + c / 2**k when 2**k divides c
    return Lin(x.bits[k:] + ZERO[:k], x.const >> k, x.lo >> k, x.hi >> k)


def _or(x: Lin, y: Lin) -> Lin | None:
    """An or of values with no common bit is their sum."""
    return _add(x, y) if x.possible_ones() & y.possible_ones() == 0 else None


def _restrict(x: Lin, lo: int, hi: int) -> Lin:
    return Lin(x.bits, x.const, max(x.lo, lo), min(x.hi, hi))


FACT_RANGES = {"ult": lambda c: (0, c - 1), "ule": lambda c: (0, c),
               "ugt": lambda c: (c + 1, MASK32), "uge": lambda c: (c, MASK32),
               "eq": lambda c: (c, c),
               "ne": lambda c: (1, MASK32) if c == 0 else (0, MASK32 - 1) if c == MASK32
               else (0, MASK32)}
INVERSE = {"eq": "ne", "ne": "eq", "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt"}
MIRROR = {"ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule", "eq": "eq", "ne": "ne"}


class Affine:
    """`Lin` of operands at a block, for a function whose registers written once it is
    given (`single`: register id -> its definition)."""

    def __init__(self, fn: wir.Function, single: dict[int, wir.Instr]) -> None:
        self.single = single
        self.idom = cfg.dominators(fn)
        self.preds = cfg.predecessors(fn)
        self.by_label = {b.label: b for b in fn.blocks}
        self._facts: dict[str, dict[int, tuple[int, int]]] = {}
        self._known: dict[str, dict[tuple[int, int], int]] = {}

    def facts(self, label: str) -> dict[int, tuple[int, int]]:
        """Ranges of single-definition registers that the branches into `label`'s
        dominators decide (an edge P -> D decides for all D dominates when P is D's only
        predecessor)."""
        if label not in self._facts:
            out: dict[int, tuple[int, int]] = {}
            d: str | None = label
            while d is not None:
                for reg, lo, hi in self._edge_facts(d):
                    old = out.get(reg, (0, MASK32))
                    out[reg] = (max(old[0], lo), min(old[1], hi))
                d = self.idom.get(d)
            self._facts[label] = out
        return self._facts[label]

    def _edge_facts(self, label: str) -> list[tuple[int, int, int]]:
        preds = self.preds.get(label, [])
        if len(preds) != 1 or preds[0] == label:
            return []
        t = self.by_label[preds[0]].instrs[-1]
        if not isinstance(t, wir.Branch) or t.then_ == t.else_:
            return []
        pred, a, b = t.pred if t.then_ == label else INVERSE.get(t.pred), t.a, t.b
        if isinstance(a, int) and isinstance(b, Reg):
            a, b, pred = b, a, MIRROR.get(pred or "")
        if not (isinstance(a, Reg) and isinstance(b, int) and pred in FACT_RANGES
                and a.id in self.single):
            return []
        lo, hi = FACT_RANGES[pred](b)
        return [(a.id, lo, hi)] if lo <= hi else []

    def reg(self, rid: int) -> Reg | None:
        d = self.single.get(rid)
        return next((r for r in d.defs() if r.id == rid), None) if d else None

    def known_bits(self, label: str) -> dict[tuple[int, int], int]:
        """Bits of registers that `if x == c` branches into `label`'s dominators decide
        (`version == 4` and `ihl == 5` fix the byte 0x45)."""
        if label not in self._known:
            out: dict[tuple[int, int], int] = {}
            d: str | None = label
            while d is not None:
                for reg, value in self._edge_equalities(d):
                    lin = self.of(reg, label)
                    if lin is not None and lin.const == 0 and not value >> 32:
                        out.update({b: value >> j & 1 for j, b in enumerate(lin.bits)
                                    if b != 0})
                d = self.idom.get(d)
            self._known[label] = out
        return self._known[label]

    def _edge_equalities(self, label: str) -> list[tuple[Reg, int]]:
        preds = self.preds.get(label, [])
        if len(preds) != 1 or preds[0] == label:
            return []
        t = self.by_label[preds[0]].instrs[-1]
        if not isinstance(t, wir.Branch) or t.then_ == t.else_:
            return []
        holds = (t.pred == "eq" and t.then_ == label) or (t.pred == "ne" and t.else_ == label)
        a, b = (t.a, t.b) if isinstance(t.b, int) else (t.b, t.a)
        if holds and isinstance(a, Reg) and isinstance(b, int) and a.id in self.single:
            return [(a, b)]
        return []

    def half(self, o: Operand, label: str) -> tuple[str, Reg] | None:
        """("lo", w) when o equals w & 0xFFFF in `label`, ("hi", w) when it equals w >> 16
        (bits o takes from elsewhere may be constants the branches decided)."""
        lin = self.of(o, label)
        if lin is None or not 0 <= lin.const <= 0xFFFF:
            return None
        sources = {b[0] for b in lin.bits if isinstance(b, tuple)}
        if len(sources) != 1 or any(b != 0 for b in lin.bits[16:]):
            return None
        (src,) = sources
        known = self.known_bits(label)
        for kind, shift in (("lo", 0), ("hi", 16)):
            if all(_bit_is(lin, j, (src, j + shift), known) for j in range(16)):
                w = self.reg(src)
                return (kind, w) if w is not None else None
        return None

    def of(self, o: Operand, label: str, depth: int = DEPTH) -> Lin | None:
        if isinstance(o, int):
            return _const(o)
        i = self.single.get(o.id)
        if i is None:
            return None
        x = self._rule(i, label, depth) if depth else None
        x = x or _leaf(o)
        fact = self.facts(label).get(o.id)
        return _restrict(x, *fact) if fact else x

    def _rule(self, i: wir.Instr, label: str, depth: int) -> Lin | None:
        if isinstance(i, wir.Copy):
            return self.of(i.src, label, depth - 1)
        if not isinstance(i, wir.Bin):
            return None
        a, b = i.a, i.b
        if isinstance(a, int) and i.op in ("and", "or", "add"):
            a, b = b, a
        x = self.of(a, label, depth - 1)
        if x is None:
            return None
        if isinstance(b, int) and i.op in ("and", "shl", "lshr"):
            if i.op == "and":
                return _and(x, b)
            return _shl(x, b) if i.op == "shl" else _lshr(x, b)
        y = self.of(b, label, depth - 1)
        if y is None:
            return None
        if i.op == "add":
            return _add(x, y)
        if i.op == "or":
            return _or(x, y)
        return None

    def complement(self, o: Operand, label: str) -> tuple[Lin, int] | None:
        """(x, 2**k - 1) when o = x ^ (2**k - 1) with x < 2**k."""
        i = self.single.get(o.id) if isinstance(o, Reg) else None
        if not isinstance(i, wir.Bin) or i.op != "xor":
            return None
        x, mask = (i.a, i.b) if isinstance(i.b, int) else (i.b, i.a)
        if not isinstance(mask, int) or mask & (mask + 1):
            return None
        lin = self.of(x, label)
        return (lin, mask) if lin is not None and lin.hi <= mask else None


def _bit_is(lin: Lin, j: int, want: tuple[int, int], known: dict[tuple[int, int], int]) -> bool:
    """Bit j of lin's value is bit `want` (lin.const has no bit where lin.bits has one,
    so the value's bit j is lin.bits[j] or the constant's)."""
    cbit = lin.const >> j & 1
    if lin.bits[j] != 0:
        return lin.bits[j] == want and not cbit
    return known.get(want) == cbit


def cancel_pairs(affine: Affine, label: str, terms: list[Operand]) -> list[Operand]:
    """Replace each pair (x ^ (2**k - 1), y) with y - x a known constant by their exact
    sum; the terms are summed at block `label`."""
    out = list(terms)
    done: set[int] = set()
    for k, t in enumerate(terms):
        comp = affine.complement(t, label)
        if comp is None or k in done:
            continue
        x, mask = comp
        for j, u in enumerate(terms):
            if j == k or j in done:
                continue
            y = affine.of(u, label)
            if y is not None and y.bits == x.bits and any(b != 0 for b in x.bits):
                out[k], out[j] = mask - x.const + y.const, 0
                done |= {k, j}
                break
    return out


def identity_offset(affine: Affine, i: wir.Instr, label: str) -> tuple[Reg, int] | None:
    """(s, c) when i's result is exactly s + c for a register s written once, i itself
    being more than that add (a field rewritten by `x - 1` in place: `ttl -= 1`)."""
    if not isinstance(i, wir.Bin) or i.op not in ("or", "add", "and") or \
            (i.op == "add" and (isinstance(i.a, int) or isinstance(i.b, int))):
        return None
    lin = affine.of(i.dst, label)
    if lin is None or not isinstance(lin.bits[0], tuple):
        return None
    src = lin.bits[0][0]
    if lin.bits != tuple((src, j) for j in range(32)) or src == i.dst.id:
        return None
    reg = affine.reg(src)
    return (reg, lin.const) if reg is not None else None
