"""Pass: ones-complement checksums as 32-bit end-around-carry sums.

The lowering computes `csum` and `csum_update` (RFC 1071 / 1624) as a plain 32-bit sum of
16-bit pieces folded twice: `u = (s & 0xFFFF) + (s >> 16); (u + (u >> 16)) & 0xFFFF`.
That value depends only on the sum T of the pieces (when T < 2**32, which bounds on the
pieces prove): 0 when T = 0, else the number in 1..0xFFFF congruent to T mod 0xFFFF.  So
any other set of terms with a sum congruent mod 0xFFFF, and 0 exactly when T is, gives the
same fold.  This pass

* replaces the two halves `w >> 16` and `w & 0xFFFF` of one word by `w` itself (w = hi *
  0x10000 + lo, and 0x10000 = 1 mod 0xFFFF): a header is summed a word at a time; the low
  half of a and the high half of b become `fsh a:b >> 16` (halves as `affine` sees them,
  bits the dominating checks fixed included);
* replaces terms whose exact sum is a constant by that constant (`~m + m'` of an RFC 1624
  update where m' = m - 0x100: the TTL decrement, see `affine`);
* sums the terms with `wir.OnesSum` (32-bit end-around carry keeps the sum mod 2**32 - 1,
  a multiple of 0xFFFF, and 0 only for all-zero terms), or plain adds when they cannot
  carry, and folds once with a rotation: the high half of `x + rot16(x)` is hi + lo with
  the end-around carry.

Besides: a value exactly another register plus a constant becomes that add (`ttl -= 1`
on its word), `(t >> 16) ^ 0xFFFF` becomes `~t >> 16` and `(t >> 16) == 0xFFFF` becomes
`t >= 0xFFFF0000`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir
from ..wir import MASK32, Operand, Reg
from . import cfg
from .affine import Affine, cancel_pairs, identity_offset

MAX_TERMS = 16


@dataclass
class Defs:
    """The single definition of every register written once."""

    single: dict[int, wir.Instr]

    @classmethod
    def of(cls, fn: wir.Function) -> Defs:
        counts = cfg.def_counts(fn)
        return cls({d.id: i for b in fn.blocks for i in b.instrs for d in i.defs()
                    if counts[d.id] == 1})

    def bin(self, o: Operand, op: str) -> wir.Bin | None:
        i = self.single.get(o.id) if isinstance(o, Reg) else None
        return i if isinstance(i, wir.Bin) and i.op == op else None

    def with_const(self, o: Operand, op: str, const: int) -> Operand | None:
        """x when o is `op x, const` (either operand order for and/add)."""
        i = self.bin(o, op)
        if i is None:
            return None
        if i.b == const:
            return i.a
        if i.a == const and op != "lshr":
            return i.b
        return None


def fold_source(defs: Defs, r: wir.Instr) -> Operand | None:
    """s when r is `and (u + (u >> 16)), 0xFFFF` with u = (s & 0xFFFF) + (s >> 16)."""
    if not isinstance(r, wir.Bin) or r.op != "and":
        return None
    v = r.a if r.b == 0xFFFF else r.b if r.a == 0xFFFF else None
    add_v = defs.bin(v, "add") if v is not None else None
    if add_v is None:
        return None
    for u, hi in ((add_v.a, add_v.b), (add_v.b, add_v.a)):
        if defs.with_const(hi, "lshr", 16) == u and isinstance(u, Reg):
            add_u = defs.bin(u, "add")
            if add_u is None:
                continue
            for lo, high in ((add_u.a, add_u.b), (add_u.b, add_u.a)):
                s = defs.with_const(high, "lshr", 16)
                if s is not None and defs.with_const(lo, "and", 0xFFFF) == s \
                        and _stable(defs, s):
                    return s
    return None


def _stable(defs: Defs, o: Operand) -> bool:
    return isinstance(o, int) or o.id in defs.single


def upper_bound(defs: Defs, o: Operand, depth: int = 8) -> int:
    """A bound on the value of o (any value when nothing better is known)."""
    if isinstance(o, int):
        return o
    i = defs.single.get(o.id)
    if depth == 0 or not isinstance(i, wir.Bin):
        return MASK32
    a = upper_bound(defs, i.a, depth - 1)
    b = upper_bound(defs, i.b, depth - 1)
    if i.op == "and":
        return min(a, b)
    if i.op in ("or", "xor"):
        return (1 << max(a.bit_length(), b.bit_length())) - 1
    if i.op == "lshr" and isinstance(i.b, int):
        return a >> i.b
    if i.op == "shl" and isinstance(i.b, int):
        return min(a << i.b, MASK32)
    if i.op == "add":
        return min(a + b, MASK32)
    return MASK32


def sum_terms(defs: Defs, s: Operand) -> list[Operand] | None:
    """The leaves of the tree of single-definition adds that computes s, when their
    bounds prove the adds never wrap (so s is their exact sum)."""
    terms: list[Operand] = []
    work = [s]
    while work:
        o = work.pop()
        add = defs.bin(o, "add")
        if add is not None and len(terms) + len(work) < MAX_TERMS:
            work += [add.b, add.a]
        elif _stable(defs, o):
            terms.append(o)
        else:
            return None
    if sum(upper_bound(defs, t) for t in terms) > MASK32:
        return None
    return terms


def whole_words(fn: wir.Function, affine: Affine, label: str, terms: list[Operand],
                loc: wir.Loc | None) -> tuple[list[Operand], list[wir.Instr]]:
    """Two 16-bit halves become one 32-bit term: `w >> 16` and `w & 0xFFFF` become w;
    the low half of a and the high half of b become `fsh a:b >> 16` (a header not
    aligned to 4 bytes).  Returns the terms and the funnel shifts to emit first."""
    halves = [affine.half(t, label) for t in terms]
    lows = {k: h[1] for k, h in enumerate(halves) if h and h[0] == "lo"}
    highs = {k: h[1] for k, h in enumerate(halves) if h and h[0] == "hi"}
    out: list[Operand] = []
    shifts: list[wir.Instr] = []
    for k, w in list(lows.items()):          # the same word first
        j = next((j for j, v in highs.items() if v.id == w.id), None)
        if j is not None:
            out.append(w)
            del lows[k], highs[j]
    for (k, a), (j, b) in zip(list(lows.items()), list(highs.items()), strict=False):
        pair = fn.new_reg("pair")
        shifts.append(wir.Fsh(pair, a, b, 16, loc=loc))
        out.append(pair)
        del lows[k], highs[j]
    return out + [t for k, t in enumerate(terms)
                  if halves[k] is None or k in lows or k in highs], shifts


def merge_constants(terms: list[Operand]) -> list[Operand]:
    """One constant term (the exact sum of the constant terms, which is below 2**32)."""
    const = sum(t for t in terms if isinstance(t, int))
    regs = [t for t in terms if isinstance(t, Reg)]
    return regs + ([const] if const else [])


def emit_fold(fn: wir.Function, terms: list[Operand], dst: Reg, loc: wir.Loc | None,
              exact: bool = False) -> list[wir.Instr]:
    """dst = the 16-bit end-around-carry fold of the ones-complement sum of terms
    (`exact`: their plain sum is below 2**32)."""
    if not terms:
        return [wir.Copy(dst, 0, loc=loc)]
    out: list[wir.Instr] = []
    x = terms[0]
    if len(terms) > 1 and exact:            # no carry out of bit 31: plain adds
        for t in terms[1:]:
            total = fn.new_reg("sum")
            out.append(wir.Bin(total, "add", x, t, loc=loc))
            x = total
    elif len(terms) > 1:
        x = fn.new_reg("osum")
        out.append(wir.OnesSum(x, tuple(terms), loc=loc))
    if isinstance(x, int):
        return [wir.Copy(dst, _fold16(x), loc=loc)]
    rot, total = fn.new_reg("rot"), fn.new_reg("fold")
    out += [wir.Fsh(rot, x, x, 16, loc=loc), wir.Bin(total, "add", x, rot, loc=loc),
            wir.Bin(dst, "lshr", total, 16, loc=loc)]
    return out


def _fold16(x: int) -> int:
    return (x + ((x & 0xFFFF) << 16 | x >> 16)) >> 16 & 0xFFFF


def combine(fn: wir.Function) -> None:
    """Rewrite every recognised fold in place (the old pieces die in `simplify`)."""
    defs = Defs.of(fn)
    affine = Affine(fn, defs.single)
    for b in fn.blocks:
        out: list[wir.Instr] = []
        for i in b.instrs:
            out += _rewrite(fn, defs, affine, b.label, i) or _offset(affine, b.label, i) \
                or [i]
        b.instrs = out
    defs = Defs.of(fn)                      # with the folds just made
    for b in fn.blocks:
        b.instrs = [n for i in b.instrs for n in (
            _complement(fn, defs, i) or _all_ones_test(defs, i) or [i])]


def _complement(fn: wir.Function, defs: Defs, i: wir.Instr) -> list[wir.Instr] | None:
    """`(t >> 16) ^ 0xFFFF` (a folded checksum complemented) as `~t >> 16`: the same
    value, and `bitfields` then sees its bits as t's, to place it in its word."""
    if not isinstance(i, wir.Bin) or i.op != "xor" or i.b != 0xFFFF:
        return None
    t = defs.with_const(i.a, "lshr", 16)
    if not isinstance(t, Reg) or t.id not in defs.single:
        return None
    inverted = fn.new_reg("not")
    return [wir.Bin(inverted, "xor", t, MASK32, loc=i.loc),
            wir.Bin(i.dst, "lshr", inverted, 16, loc=i.loc)]


def _all_ones_test(defs: Defs, i: wir.Instr) -> list[wir.Instr] | None:
    """`if (t >> 16) == 0xFFFF` (a header checksum check) as `if t >= 0xFFFF0000`."""
    if not isinstance(i, wir.Branch) or i.pred not in ("eq", "ne") or i.b != 0xFFFF:
        return None
    t = defs.with_const(i.a, "lshr", 16)
    if not isinstance(t, Reg) or t.id not in defs.single:
        return None
    pred = "uge" if i.pred == "eq" else "ult"
    return [wir.Branch(pred, t, 0xFFFF0000, i.then_, i.else_, loc=i.loc)]


def _offset(affine: Affine, label: str, i: wir.Instr) -> list[wir.Instr] | None:
    """A value that is exactly another register plus a constant, as that add."""
    found = identity_offset(affine, i, label)
    if found is None:
        return None
    src, c = found
    assert isinstance(i, wir.Bin)
    return [wir.Bin(i.dst, "add", src, c & MASK32, loc=i.loc)]


def _rewrite(fn: wir.Function, defs: Defs, affine: Affine, label: str,
             i: wir.Instr) -> list[wir.Instr] | None:
    s = fold_source(defs, i)
    if s is None:
        return None
    terms = sum_terms(defs, s)
    if terms is None:
        return None
    assert isinstance(i, wir.Bin)
    terms, shifts = whole_words(fn, affine, label, terms, i.loc)
    terms = merge_constants(cancel_pairs(affine, label, terms))
    exact = sum(upper_bound(defs, t) for t in terms) <= MASK32
    return shifts + emit_fold(fn, terms, i.dst, i.loc, exact)
