"""LLVM integer operations on values split into 32-bit words.

A value of `w` bits is a tuple of nwords(w) operands, most significant first, kept
*canonical*: the bits of the top word above `w` are zero.  Every function here takes
canonical inputs and returns a canonical result."""

from __future__ import annotations

from collections.abc import Sequence

from ..wir import MASK32, Operand
from .builder import Builder

Words = tuple[Operand, ...]


def nwords(width: int) -> int:
    return max(1, (width + 31) // 32)


def top_mask(width: int) -> int:
    r = width % 32
    return MASK32 if r == 0 else (1 << r) - 1


def const_words(value: int, width: int) -> Words:
    n = nwords(width)
    value &= (1 << width) - 1
    return tuple((value >> (32 * (n - 1 - k))) & MASK32 for k in range(n))


def canonical(b: Builder, words: Sequence[Operand], width: int) -> Words:
    """Clear the bits of the top word above the width."""
    m = top_mask(width)
    if m == MASK32:
        return tuple(words)
    return (b.bin("and", words[0], m), *words[1:])


def _lsw(words: Sequence[Operand]) -> list[Operand]:
    return list(reversed(words))


def _msw(words: Sequence[Operand]) -> Words:
    return tuple(reversed(words))


def bitwise(b: Builder, op: str, x: Words, y: Words) -> Words:
    return tuple(b.bin(op, p, q) for p, q in zip(x, y, strict=True))


def add(b: Builder, x: Words, y: Words, width: int) -> Words:
    out: list[Operand] = []
    carry: Operand = 0
    xs, ys = _lsw(x), _lsw(y)
    for k, (p, q) in enumerate(zip(xs, ys, strict=True)):
        last = k == len(xs) - 1
        t = b.bin("add", p, q)
        s = b.bin("add", t, carry)
        if not last:
            c1 = b.cmp("ult", t, p)
            c2 = b.cmp("ult", s, t) if carry != 0 else 0
            carry = b.bin("or", c1, c2)
        out.append(s)
    return canonical(b, _msw(out), width)


def sub(b: Builder, x: Words, y: Words, width: int) -> Words:
    out: list[Operand] = []
    borrow: Operand = 0
    xs, ys = _lsw(x), _lsw(y)
    for k, (p, q) in enumerate(zip(xs, ys, strict=True)):
        last = k == len(xs) - 1
        t = b.bin("sub", p, q)
        s = b.bin("sub", t, borrow)
        if not last:
            b1 = b.cmp("ult", p, q)
            b2 = b.cmp("ult", t, borrow) if borrow != 0 else 0
            borrow = b.bin("or", b1, b2)
        out.append(s)
    return canonical(b, _msw(out), width)


def shl_const(b: Builder, x: Words, amount: int, width: int) -> Words:
    xs = _lsw(x)
    q, r = divmod(amount, 32)

    def word(i: int) -> Operand:
        return xs[i] if 0 <= i < len(xs) else 0

    out = []
    for i in range(len(xs)):
        hi, lo = word(i - q), word(i - q - 1)
        out.append(b.fsh(hi, lo, 32 - r) if r else hi)
    return canonical(b, _msw(out), width)


def lshr_const(b: Builder, x: Words, amount: int) -> Words:
    xs = _lsw(x)
    q, r = divmod(amount, 32)

    def word(i: int) -> Operand:
        return xs[i] if 0 <= i < len(xs) else 0

    out = [b.fsh(word(i + q + 1), word(i + q), r) if r else word(i + q)
           for i in range(len(xs))]
    return _msw(out)


def sign_fill(b: Builder, x: Words, width: int) -> Operand:
    """All ones if the value is negative (as a `width`-bit number), else 0."""
    sign = b.bin("and", b.bin("lshr", x[0], (width - 1) % 32), 1)
    return b.bin("sub", 0, sign)


def ashr_const(b: Builder, x: Words, amount: int, width: int) -> Words:
    # (x ^ f) >> s ^ f, f the sign fill: shifts the complement of a negative number
    fill = tuple(b.bin("and", sign_fill(b, x, width), m)
                 for m in const_words((1 << width) - 1, width))
    flipped = bitwise(b, "xor", x, fill)
    return bitwise(b, "xor", lshr_const(b, flipped, amount), fill)


def shift_reg(b: Builder, op: str, x: Words, amount: Operand, width: int) -> Words:
    """shl/lshr by a register amount (< width; larger is poison in LLVM)."""
    if len(x) == 1:
        r = b.bin(op, x[0], amount)
        return canonical(b, (r,), width) if op == "shl" else (r,)
    xs = _lsw(x)
    n = len(xs)
    bits = b.bin("and", amount, 31)
    rest = b.bin("sub", 32, bits)             # a register shift by 32 gives 0
    quot = b.bin("lshr", amount, 5)
    shifted = []
    for i in range(n):
        if op == "lshr":
            nxt = xs[i + 1] if i + 1 < n else 0
            shifted.append(b.bin("or", b.bin("lshr", xs[i], bits), b.bin("shl", nxt, rest)))
        else:
            prv = xs[i - 1] if i > 0 else 0
            shifted.append(b.bin("or", b.bin("shl", xs[i], bits), b.bin("lshr", prv, rest)))
    out = []
    for i in range(n):
        acc: Operand = 0
        for q in range(n):
            src = i + q if op == "lshr" else i - q
            if 0 <= src < n:
                acc = b.select(b.cmp("eq", quot, q), shifted[src], acc)
        out.append(acc)
    result = _msw(out)
    return canonical(b, result, width) if op == "shl" else result


def ashr_reg(b: Builder, x: Words, amount: Operand, width: int) -> Words:
    fill = tuple(b.bin("and", sign_fill(b, x, width), m)
                 for m in const_words((1 << width) - 1, width))
    flipped = bitwise(b, "xor", x, fill)
    return bitwise(b, "xor", shift_reg(b, "lshr", flipped, amount, width), fill)


def zext(x: Words, width: int) -> Words:
    return (0,) * (nwords(width) - len(x)) + tuple(x)


def trunc(b: Builder, x: Words, width: int) -> Words:
    return canonical(b, x[len(x) - nwords(width):], width)


def sext(b: Builder, x: Words, src: int, width: int) -> Words:
    fill = sign_fill(b, x, src)
    high = const_words(((1 << width) - 1) ^ ((1 << src) - 1), width)
    wide = zext(x, width)
    return tuple(b.bin("or", w, b.bin("and", fill, m)) if m else w
                 for w, m in zip(wide, high, strict=True))


def equal(b: Builder, x: Words, y: Words) -> Operand:
    """1 if x == y."""
    if len(x) == 1:
        return b.cmp("eq", x[0], y[0])
    diff: Operand = 0
    for p, q in zip(x, y, strict=True):
        diff = b.bin("or", diff, b.bin("xor", p, q))
    return b.cmp("eq", diff, 0)


def _flip_sign(b: Builder, x: Words, width: int) -> Words:
    return (b.bin("xor", x[0], 1 << ((width - 1) % 32)), *x[1:])


def compare(b: Builder, pred: str, x: Words, y: Words, width: int) -> Operand:
    """LLVM icmp (eq ne ugt uge ult ule sgt sge slt sle) on canonical words."""
    if pred in ("eq", "ne"):
        e = equal(b, x, y)
        return e if pred == "eq" else b.bin("xor", e, 1)
    if pred.startswith("s"):
        if len(x) == 1 and width == 32:
            return b.cmp(pred, x[0], y[0])
        x, y = _flip_sign(b, x, width), _flip_sign(b, y, width)
        pred = "u" + pred[1:]
    strict = pred[:3] if pred in ("ule", "uge") else pred
    strict = {"ule": "ult", "uge": "ugt"}.get(strict, strict)
    xs, ys = _lsw(x), _lsw(y)
    result = b.cmp(pred, xs[0], ys[0])
    for p, q in zip(xs[1:], ys[1:], strict=True):
        result = b.select(b.cmp("eq", p, q), result, b.cmp(strict, p, q))
    return result
