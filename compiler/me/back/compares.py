"""Compare normalization before instruction selection: constants the ALU takes inline.

A constant above 63 costs an `immed` before every use.  Two rewrites shift it under 64:

- `x <u c` (and `<=`, `>`, `>=`) where the bound is `k << s`, k <= 63: `(x >> s) <u k`;
  the shift then folds into the compare's B operand (`alu_shf[--, k, -, x, >>s]`);
- `(x & m) == c` where m = `k << s`, k <= 63, and the `and` has no other use:
  `((x >> s) & k) == c >> s` (one `alu_shf` for the mask).

And one more for sums only read through a low mask (`(x + 0xFFF2) & 0xFFFF`): the constant
counts modulo the mask's 2^k, so `x + c` may become `x - (2^k - c)` with a constant under 64.

Works on a copy of the blocks it changes (the caller's function is left alone).
"""

from __future__ import annotations

import dataclasses

from .. import wir

IMM_MAX = 63
MIRRORED = {"ult": "ugt", "uge": "ule"}


def normalize_compares(fn: wir.Function, keep: frozenset[int] = frozenset()) -> wir.Function:
    """`keep`: registers whose tests stay as they are (bytetests.py tests them in place)."""
    uses = _use_counts(fn)
    defs = def_counts(fn)
    fn = dataclasses.replace(fn, blocks=list(fn.blocks))
    for index, block in enumerate(fn.blocks):
        instrs = list(block.instrs)
        last = instrs[-1] if instrs else None
        if not isinstance(last, wir.Branch) or not isinstance(last.b, int) or \
                isinstance(last.a, wir.Reg) and last.a.id in keep:
            continue
        if last.pred in ("ult", "uge", "ule", "ugt") and isinstance(last.a, wir.Reg):
            instrs = _shift_bound(fn, instrs, last)
        elif last.pred in ("eq", "ne") and isinstance(last.a, wir.Reg):
            instrs = _shift_mask(fn, instrs, last, uses, defs)
        fn.blocks[index] = dataclasses.replace(block, instrs=instrs)
    _narrow_masked_sums(fn, defs)
    return fn


def _narrow_masked_sums(fn: wir.Function, defs: dict[int, int]) -> None:
    low_masks: dict[int, int] = {}      # reg id -> widest low mask its readers apply
    for b in fn.blocks:
        for i in b.instrs:
            for u in i.uses():
                if not isinstance(u, wir.Reg):
                    continue
                mask = i.b if isinstance(i, wir.Bin) and i.op == "and" and i.a == u and \
                    isinstance(i.b, int) and i.b & (i.b + 1) == 0 and i.b else None
                low_masks[u.id] = max(low_masks.get(u.id, 0), mask) if mask and \
                    low_masks.get(u.id, 0) != -1 else -1
    for index, block in enumerate(fn.blocks):
        instrs = [_narrowed(i, low_masks, defs) for i in block.instrs]
        if instrs != block.instrs:
            fn.blocks[index] = dataclasses.replace(block, instrs=instrs)


def _narrowed(i: wir.Instr, low_masks: dict[int, int], defs: dict[int, int]) -> wir.Instr:
    if not (isinstance(i, wir.Bin) and i.op in ("add", "sub") and isinstance(i.b, int)
            and i.b > IMM_MAX and defs.get(i.dst.id) == 1
            and low_masks.get(i.dst.id, -1) > 0):
        return i
    modulus = low_masks[i.dst.id] + 1
    c = i.b % modulus
    if c <= IMM_MAX:
        return dataclasses.replace(i, b=c)
    if modulus - c <= IMM_MAX:
        return dataclasses.replace(i, op="sub" if i.op == "add" else "add", b=modulus - c)
    return i


def _split(c: int) -> tuple[int, int] | None:
    """(k, s) with c == k << s, 0 < k <= 63, s > 0; None when c is not of that form."""
    if c <= IMM_MAX or c > wir.MASK32:
        return None
    s = (c & -c).bit_length() - 1
    return (c >> s, s) if c >> s <= IMM_MAX else None


def _shift_bound(fn: wir.Function, instrs: list[wir.Instr],
                 br: wir.Branch) -> list[wir.Instr]:
    pred, bound = br.pred, int(br.b)
    if pred in ("ule", "ugt"):                  # x <= c  <=>  x < c + 1
        pred, bound = ("ult" if pred == "ule" else "uge"), bound + 1
    split = _split(bound)
    if split is None:
        return instrs
    k, s = split
    t = fn.new_reg("cmp")
    shift = wir.Bin(t, "lshr", br.a, s, loc=br.loc)
    # the shifted value goes to B (where the shifter is): k pred' t
    new = dataclasses.replace(br, pred=MIRRORED[pred], a=k, b=t)
    return [*instrs[:-1], shift, new]


def _shift_mask(fn: wir.Function, instrs: list[wir.Instr], br: wir.Branch,
                uses: dict[int, int], defs: dict[int, int]) -> list[wir.Instr]:
    reg = br.a
    assert isinstance(reg, wir.Reg)
    if uses.get(reg.id) != 1 or defs.get(reg.id) != 1:
        return instrs
    at = next((j for j, i in enumerate(instrs[:-1])
               if isinstance(i, wir.Bin) and i.dst == reg), None)
    if at is None:
        return instrs
    mask_and = instrs[at]
    assert isinstance(mask_and, wir.Bin)
    if mask_and.op != "and" or not isinstance(mask_and.b, int) or \
            not isinstance(mask_and.a, wir.Reg) or mask_and.a == reg:
        return instrs
    split = _split(mask_and.b)
    c = int(br.b)
    if split is None or c & ~mask_and.b:
        return instrs
    k, s = split
    t = fn.new_reg("fld")
    shift = wir.Bin(t, "lshr", mask_and.a, s, loc=mask_and.loc)
    field = dataclasses.replace(mask_and, a=t, b=k)
    return [*instrs[:at], shift, field, *instrs[at + 1:-1], dataclasses.replace(br, b=c >> s)]


def _use_counts(fn: wir.Function) -> dict[int, int]:
    counts: dict[int, int] = {}
    for b in fn.blocks:
        for i in b.instrs:
            for u in i.uses():
                if isinstance(u, wir.Reg):
                    counts[u.id] = counts.get(u.id, 0) + 1
    return counts


def def_counts(fn: wir.Function) -> dict[int, int]:
    counts: dict[int, int] = {}
    for b in fn.blocks:
        for i in b.instrs:
            for d in i.defs():
                counts[d.id] = counts.get(d.id, 0) + 1
    return counts
