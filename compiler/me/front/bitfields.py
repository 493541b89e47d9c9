"""Pass: combine bit fields by bit provenance.

The LLVM IR builds 16- and 32-bit fields byte by byte from packet bytes
(`or(shl(zext(b12), 8), zext(b13))`) and takes stored fields apart byte by byte.  For each
register written once we compute, per bit, where it comes from: a constant 0 or 1, or bit
j of a source register (a register written once whose bits are not known in terms of
others: a header word, a memory word, an arithmetic result).  A value whose bits all come
from one source at a fixed shift (or from two sources forming a 64-bit pair, a funnel
shift), with constant bits elsewhere, is recomputed with one to three instructions; the
byte-by-byte chain becomes dead."""

from __future__ import annotations

from .. import wir
from ..wir import MASK32, Operand, Reg
from . import cfg

Bit = int | tuple[int, int]          # 0, 1 or (source register id, bit)
Prov = tuple[Bit, ...]               # 32 entries, bit 0 (least significant) first
COMBINING = ("or", "add", "xor")


def _base(r: Reg) -> Prov:
    return tuple((r.id, i) for i in range(32))


def _const(v: int) -> Prov:
    return tuple((v >> i) & 1 for i in range(32))


class _Provenance:
    def __init__(self, fn: wir.Function) -> None:
        self.defs = cfg.def_counts(fn)
        self.prov: dict[int, Prov] = {}
        self.regs: dict[int, Reg] = {}

    def of(self, o: Operand) -> Prov | None:
        if isinstance(o, int):
            return _const(o)
        return self.prov.get(o.id) if self.defs[o.id] == 1 else None

    def compute(self, i: wir.Instr) -> Prov | None:
        """The provenance of i's single destination, None if it is its own source."""
        if isinstance(i, wir.Copy):
            return self.of(i.src)
        if isinstance(i, wir.Fsh):
            hi, lo = self.of(i.hi), self.of(i.lo)
            if hi is None or lo is None:
                return None
            both = lo + hi
            return tuple(both[k + i.amount] for k in range(32))
        if not isinstance(i, wir.Bin):
            return None
        a = self.of(i.a)
        if i.op in ("shl", "lshr") and isinstance(i.b, int) and a is not None:
            k = i.b
            if i.op == "shl":
                return tuple(a[j - k] if j >= k else 0 for j in range(32))
            return tuple(a[j + k] if j + k < 32 else 0 for j in range(32))
        b = self.of(i.b)
        if a is None or b is None:
            return None
        out = []
        for x, y in zip(a, b, strict=True):
            bit = _combine(i.op, x, y)
            if bit is None:
                return None
            out.append(bit)
        return tuple(out)


def _combine(op: str, x: Bit, y: Bit) -> Bit | None:
    if op == "and":
        if x == 0 or y == 0:
            return 0
        if x == 1 or x == y:
            return y
        return x if y == 1 else None
    if op in ("or", "add", "xor"):          # add: only where no carry can arise
        if x == 0:
            return y
        if y == 0:
            return x
        if op == "or" and (x == 1 or y == 1):
            return 1
        if op == "or" and x == y:
            return x
        if op == "xor" and isinstance(x, int) and isinstance(y, int):
            return x ^ y
        return None
    return None


def _plan(p: Prov) -> tuple | None:
    """How to compute a value of provenance p: ("const", v), ("shift", src, k, mask, ones)
    with bit i = src bit i+k, or ("fsh", hi, lo, amount, mask, ones); None if neither."""
    ones = sum(1 << i for i, b in enumerate(p) if b == 1)
    sources = {b[0] for b in p if isinstance(b, tuple)}
    mask = sum(1 << i for i, b in enumerate(p) if isinstance(b, tuple))
    if not sources:
        return ("const", ones)
    offsets = {}
    for i, b in enumerate(p):
        if isinstance(b, tuple):
            offsets.setdefault(b[0], set()).add(b[1] - i)
    if any(len(v) != 1 for v in offsets.values()):
        return None
    if len(sources) == 1:
        (src,) = sources
        (k,) = offsets[src]
        return ("shift", src, k, mask, ones)
    if len(sources) == 2:
        (s1, k1), (s2, k2) = ((s, next(iter(v))) for s, v in offsets.items())
        if k1 - k2 == 32:
            s1, k1, s2, k2 = s2, k2, s1, k1
        if k2 - k1 == 32 and 0 < k2 < 32:    # s1 the high word, s2 the low word
            return ("fsh", s1, s2, k2, mask, ones)
        # two fields side by side (a checksum written into its word): shift, mask, or
        parts = tuple((src, k, sum(1 << i for i, b in enumerate(p)
                                   if isinstance(b, tuple) and b[0] == src))
                      for src, k in ((s1, k1), (s2, k2)))
        return ("merge", parts, ones)
    return None


def _natural(k: int) -> int:
    return (MASK32 >> k) if k >= 0 else (MASK32 << -k) & MASK32


def _cost(plan: tuple) -> int:
    if plan[0] == "const":
        return 0
    if plan[0] == "merge":
        return 1 + (plan[2] != 0) + sum((k != 0) + (m != _natural(k)) for _, k, m in plan[1])
    mask, ones = plan[-2], plan[-1]
    if plan[0] == "shift":
        k = plan[2]
        natural = (MASK32 >> k) if k >= 0 else (MASK32 << -k) & MASK32
        return (k != 0) + (mask != natural) + (ones != 0)
    return 1 + (mask != MASK32) + (ones != 0)


def _emit(fn: wir.Function, dst: Reg, plan: tuple, regs: dict[int, Reg],
          loc: wir.Loc | None) -> list[wir.Instr]:
    if plan[0] == "const":
        return [wir.Copy(dst, plan[1], loc=loc)]
    if plan[0] == "merge":
        return _emit_merge(fn, dst, plan, regs, loc)
    out: list[wir.Instr] = []
    steps: list[tuple[str, int]] = []
    if plan[0] == "shift":
        _, src, k, mask, ones = plan
        value: Operand = regs[src]
        if k > 0:
            steps.append(("lshr", k))
        elif k < 0:
            steps.append(("shl", -k))
        natural = (MASK32 >> k) if k >= 0 else (MASK32 << -k) & MASK32
    else:
        _, hi, lo, amount, mask, ones = plan
        natural = MASK32
        t = fn.new_reg()
        out.append(wir.Fsh(t, regs[hi], regs[lo], amount, loc=loc))
        value = t
    if mask != natural:
        steps.append(("and", mask))
    if ones:
        steps.append(("or", ones))
    if not steps:
        out.append(wir.Copy(dst, value, loc=loc))
    for n, (op, c) in enumerate(steps):
        t = dst if n == len(steps) - 1 else fn.new_reg()
        out.append(wir.Bin(t, op, value, c, loc=loc))
        value = t
    if out and out[-1].defs()[0] != dst:
        out[-1] = _retarget(out[-1], dst)
    return out


def _emit_merge(fn: wir.Function, dst: Reg, plan: tuple, regs: dict[int, Reg],
                loc: wir.Loc | None) -> list[wir.Instr]:
    out: list[wir.Instr] = []
    values: list[Operand] = []
    for src, k, mask in plan[1]:
        value: Operand = regs[src]
        steps = [("lshr", k)] if k > 0 else [("shl", -k)] if k < 0 else []
        if mask != _natural(k):
            steps.append(("and", mask))
        for op, c in steps:
            t = fn.new_reg()
            out.append(wir.Bin(t, op, value, c, loc=loc))
            value = t
        values.append(value)
    ones = plan[2]
    merged = fn.new_reg() if ones else dst
    out.append(wir.Bin(merged, "or", values[0], values[1], loc=loc))
    if ones:
        out.append(wir.Bin(dst, "or", merged, ones, loc=loc))
    return out


def _retarget(i: wir.Instr, dst: Reg) -> wir.Instr:
    if isinstance(i, wir.Fsh):
        return wir.Fsh(dst, i.hi, i.lo, i.amount, loc=i.loc)
    assert isinstance(i, wir.Copy)
    return wir.Copy(dst, i.src, loc=i.loc)


def _same(i: wir.Instr, new: list[wir.Instr]) -> bool:
    return len(new) == 1 and str(new[0]) == str(i)


def _worth(i: wir.Instr, plan: tuple) -> bool:
    """Rewrite when the new code is no longer than the instruction, or (for an or/add/xor
    that merges parts) at most two instructions: the parts' own code then dies."""
    cost = _cost(plan)
    if cost == 0:
        return True
    if isinstance(i, wir.Bin) and i.op in COMBINING:
        return cost <= (3 if plan[0] == "merge" else 2)
    return cost <= 1


def combine(fn: wir.Function) -> None:
    state = _Provenance(fn)
    for label in cfg.reverse_postorder(fn):
        block = fn.block(label)
        out: list[wir.Instr] = []
        for i in block.instrs:
            dsts = i.defs()
            if len(dsts) != 1 or state.defs[dsts[0].id] != 1:
                for d in dsts:
                    if state.defs[d.id] == 1:
                        state.regs[d.id], state.prov[d.id] = d, _base(d)
                out.append(i)
                continue
            dst = dsts[0]
            state.regs[dst.id] = dst
            p = state.compute(i)
            if p is None:
                state.prov[dst.id] = _base(dst)
                out.append(i)
                continue
            state.prov[dst.id] = p
            plan = _plan(p)
            same_as = next((u for u in i.uses() if isinstance(u, Reg)
                            and state.of(u) == p), None)
            if same_as is not None and not isinstance(i, wir.Copy):
                out.append(wir.Copy(dst, same_as, loc=i.loc, dbg=i.dbg))
                continue
            if plan is None or not _worth(i, plan):
                out.append(i)
                continue
            new = _emit(fn, dst, plan, state.regs, i.loc)
            if new and not _same(i, new):
                new[0].dbg = i.dbg + new[0].dbg     # variables before i: before its code
            out.extend([i] if _same(i, new) else new)
        block.instrs = out
