"""compiler/me/fold.py, the semantics of WIR operations on words, against an independent
model: numpy's uint32/int32/uint64 arithmetic (wrap-around in hardware integer types, not
Python's masking), and, for the identities of `fold_bin`, against evaluation itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npkit.compiler.me import fold, wir
from npkit.compiler.me.wir import Reg

words = st.integers(0, 2**32 - 1)
# the corner words where wrap-around and sign bugs live, mixed with any word
edgy = st.one_of(words, st.sampled_from([0, 1, 2, 31, 32, 33, 0x7FFF_FFFF, 0x8000_0000,
                                         0x8000_0001, 0xFFFF_FFFE, 0xFFFF_FFFF]))
U32 = np.uint32


def model_bin(op: str, a: int, b: int) -> int:
    x, y = U32(a), U32(b)
    with np.errstate(over="ignore"):
        if op in ("shl", "lshr"):
            # numpy shifts by >= the width are undefined; WIR says 0 (a register amount)
            if b >= 32:
                return 0
            return int(x << U32(b)) if op == "shl" else int(x >> U32(b))
        return int({"add": np.add, "sub": np.subtract, "mul": np.multiply,
                    "and": np.bitwise_and, "or": np.bitwise_or,
                    "xor": np.bitwise_xor}[op](x, y))


def model_compare(pred: str, a: int, b: int) -> bool:
    if pred.startswith("s"):
        x, y = (np.array([v], dtype=np.uint32).view(np.int32)[0] for v in (a, b))
        pred = pred[1:]
    else:
        x, y = U32(a), U32(b)
        pred = pred.removeprefix("u")
    return bool({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
                 "ge": x >= y}[pred])


@pytest.mark.parametrize("op", wir.BIN_OPS)
@given(a=edgy, b=edgy)
def test_bin_matches_uint32(op: str, a: int, b: int) -> None:
    assert fold.evaluate_bin(op, a, b) == model_bin(op, a, b)


@pytest.mark.parametrize("pred", wir.PREDICATES)
@given(a=edgy, b=edgy)
def test_compare_matches_numpy(pred: str, a: int, b: int) -> None:
    assert fold.compare(pred, a, b) == model_compare(pred, a, b)


def test_signed_examples() -> None:
    assert fold.compare("slt", 0xFFFF_FFFF, 1) and not fold.compare("ult", 0xFFFF_FFFF, 1)
    assert fold.compare("sgt", 0x7FFF_FFFF, 0x8000_0000)
    assert fold.signed(0x8000_0000) == -2**31


@given(hi=words, lo=words, amount=st.integers(1, 31))
def test_funnel_shift_matches_uint64(hi: int, lo: int, amount: int) -> None:
    joined = (np.uint64(hi) << np.uint64(32)) | np.uint64(lo)
    assert fold.funnel_shift(hi, lo, amount) == int((joined >> np.uint64(amount))
                                                    & np.uint64(0xFFFF_FFFF))


@given(st.lists(edgy, min_size=2, max_size=16))
def test_ones_sum_is_the_end_around_carry_sum(values: list[int]) -> None:
    """RFC 1071 arithmetic on 32-bit words: a word, congruent to the sum modulo 2**32 - 1,
    0 only when every value is 0 (all-ones stands for the other zero)."""
    total = fold.ones_sum(values)
    assert 0 <= total <= 0xFFFF_FFFF
    assert total % 0xFFFF_FFFF == sum(values) % 0xFFFF_FFFF
    assert (total == 0) == all(v == 0 for v in values)


def test_ones_sum_examples() -> None:
    assert fold.ones_sum([0xFFFF_FFFF, 1]) == 1
    assert fold.ones_sum([0xFFFF_FFFF, 0xFFFF_FFFF]) == 0xFFFF_FFFF
    assert fold.ones_sum([0x8000_0000, 0x8000_0000]) == 1


@given(cond=edgy, a=words, b=words)
def test_select(cond: int, a: int, b: int) -> None:
    assert fold.select(cond, a, b) == (b if cond == 0 else a)


X = Reg(7, "x")


@pytest.mark.parametrize("op", wir.BIN_OPS)
@given(x=edgy, c=edgy, const_first=st.booleans(), same=st.booleans())
def test_fold_bin_identities_hold_for_every_value(op: str, x: int, c: int, const_first: bool,
                                                  same: bool) -> None:
    """Whatever fold_bin decides with one operand unknown holds for every value of it."""
    a, b = (X, X) if same else (c, X) if const_first else (X, c)
    folded = fold.fold_bin(op, a, b)
    if folded is None:
        return
    value = x if folded == X else folded
    assert isinstance(value, int)
    concrete = [x if o == X else o for o in (a, b)]
    assert value == model_bin(op, *concrete)


def test_fold_bin_leaves_what_needs_an_instruction() -> None:
    assert fold.fold_bin("add", X, 5) is None
    assert fold.fold_bin("and", X, 0xFF) is None
    assert fold.fold_bin("shl", X, 31) is None
    assert fold.fold_bin("add", 3, 4) == 7
