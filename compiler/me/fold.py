"""The meaning of each WIR operation on constant words: the one place that says it.

The interpreter (`interp.py`) runs WIR with these functions; the front end's simplifier and
builder fold constants with them, and the back end's instruction selection and jump
threading decide constant compares with them.  Every operand and result is a word,
0 .. 2**32 - 1 (wir.py has the contract in prose).

`fold_bin` goes one step further than evaluation: the result of a `Bin` with one known
operand when an identity decides it (`x + 0`, `x & 0`, `x ^ x`), for the builder and the
simplifier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .wir import BIN_OPS, MASK32, PREDICATES, Operand

SIGN_BIT = 0x8000_0000


def signed(v: int) -> int:
    """A word read as two's complement."""
    return v - (1 << 32) if v & SIGN_BIT else v


def _shl(a: int, b: int) -> int:
    return (a << b) & MASK32 if b < 32 else 0      # by a register, 32 or more gives 0


def _lshr(a: int, b: int) -> int:
    return a >> b if b < 32 else 0


BIN_FNS: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: (a + b) & MASK32,
    "sub": lambda a, b: (a - b) & MASK32,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "shl": _shl,
    "lshr": _lshr,
    "mul": lambda a, b: (a * b) & MASK32,      # the low 32 bits
}

PREDICATE_FNS: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
    "slt": lambda a, b: signed(a) < signed(b),
    "sle": lambda a, b: signed(a) <= signed(b),
    "sgt": lambda a, b: signed(a) > signed(b),
    "sge": lambda a, b: signed(a) >= signed(b),
}
assert tuple(BIN_FNS) == BIN_OPS and tuple(PREDICATE_FNS) == PREDICATES


def evaluate_bin(op: str, a: int, b: int) -> int:
    """`wir.Bin`: a op b modulo 2**32.  KeyError for an unknown op."""
    return BIN_FNS[op](a, b)


def compare(pred: str, a: int, b: int) -> bool:
    """`wir.Cmp` / `wir.Branch`: `a pred b`, s* predicates as two's complement."""
    return PREDICATE_FNS[pred](a, b)


def funnel_shift(hi: int, lo: int, amount: int) -> int:
    """`wir.Fsh`: the low word of (hi:lo) >> amount."""
    return ((hi << 32 | lo) >> amount) & MASK32


def pop_count(value: int) -> int:
    """`wir.PopCount`: the number of set bits of a 32-bit word."""
    return (value & MASK32).bit_count()


def ones_sum(values: Sequence[int]) -> int:
    """`wir.OnesSum`: the 32-bit ones-complement sum, every carry out of bit 31 added back
    in at bit 0 (0 only when every value is 0)."""
    total = sum(values)
    while total > MASK32:
        total = (total & MASK32) + (total >> 32)
    return total


def select(cond: int, a: int, b: int) -> int:
    """`wir.Select`: a when cond is not 0, else b."""
    return a if cond else b


def fold_bin(op: str, a: Operand, b: Operand) -> Operand | None:
    """The result of `a op b` when it needs no instruction: both operands constant, or an
    identity decides it (the other operand, or a constant); else None."""
    if isinstance(a, int) and isinstance(b, int):
        return evaluate_bin(op, a, b)
    if isinstance(b, int):
        if b == 0 and op in ("add", "sub", "or", "xor", "shl", "lshr"):
            return a
        if (b == 0 and op in ("and", "mul")) or (b >= 32 and op in ("shl", "lshr")):
            return 0
        if (op == "and" and b == MASK32) or (op == "mul" and b == 1):
            return a
    if isinstance(a, int):
        if a == 0 and op in ("add", "or", "xor"):
            return b
        if a == 0 and op in ("and", "mul", "shl", "lshr"):
            return 0
        if (op == "and" and a == MASK32) or (op == "mul" and a == 1):
            return b
    if a == b and op in ("and", "or"):
        return a
    if a == b and op in ("xor", "sub"):
        return 0
    return None
