"""npkit.base.numbers: the one bounded conversion of user text to an integer."""

from __future__ import annotations

import pytest

from npkit.base.numbers import IntLiteralError, clip, parse_int, show_int


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("1_000", 1000), ("0x_ff", 255), ("0b1_0", 2), ("007", 7),
    ("0x" + "f" * 32, 2**128 - 1), (str(2**128 - 1), 2**128 - 1), ("0" * 5000 + "1", 1),
])
def test_literals_in_range(text, value):
    assert parse_int(text) == value


@pytest.mark.parametrize(("text", "message"), [
    ("0x", "has no digits"), ("0x_", "has no digits"), ("0b__", "has no digits"),
    ("9" * 5000, "is larger than 2^128-1"), ("0x1" + "0" * 32, "is larger than 2^128-1"),
    (str(2**128), "is larger than 2^128-1"), ("12a", "is not an integer literal"),
])
def test_bad_literals_are_short_errors(text, message):
    with pytest.raises(IntLiteralError, match=message.replace("^", r"\^")) as info:
        parse_int(text)
    assert len(str(info.value)) < 120


def test_max_bits_is_the_bound():
    assert parse_int("0xffff", 16) == 0xFFFF
    with pytest.raises(IntLiteralError):
        parse_int("65536", 16)


def test_clip_and_show_int_are_bounded():
    assert clip("short") == "short"
    assert clip("x" * 10_000).endswith("(10000 characters)") and len(clip("x" * 10_000)) < 80
    assert show_int(12345) == "12345"
    big = show_int(10**5000)  # str() of this raises past Python's 4,300-digit limit
    assert "bit number" in big and len(big) < 100
