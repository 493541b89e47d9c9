"""Bounded integers from user text: the one conversion every tool uses where a literal, a
width, a size or a count in a source file becomes an ``int``, and the one way to show a
long literal or number in a message.

``parse_int`` never hands Python's ``int()`` a string it would refuse (Python stops at
4,300 decimal digits) or one that makes a huge number: it counts the digits first and
raises :class:`IntLiteralError` (a ``ValueError``) when the value needs more than
``max_bits`` bits.  ``clip`` shortens text for a message, and ``show_int`` prints a number
of any size in bounded space.
"""

from __future__ import annotations

import re

# digits a value of `bits` bits can have at most, per base (decimal: bits * log10(2), up)
_DIGITS_PER_BIT = {16: 1 / 4, 2: 1.0, 10: 0.30103}
_LITERAL = re.compile(r"(0[xX](?P<hex>[0-9a-fA-F_]*)|0[bB](?P<bin>[01_]*)|(?P<dec>[0-9][0-9_]*))")
CLIP_CHARS = 40


class IntLiteralError(ValueError):
    """Text that is not an integer literal, or one too large for its place."""


def parse_int(text: str, max_bits: int = 128) -> int:
    """The value of a literal: decimal, ``0x`` hex or ``0b`` binary, ``_`` between digits.
    Raises IntLiteralError for a literal without digits or with a value of more than
    ``max_bits`` bits -- before converting, so the cost is bounded by ``max_bits``."""
    m = _LITERAL.fullmatch(text)
    if m is None:
        raise IntLiteralError(f"{clip(text)!s} is not an integer literal")
    base, digits = next((b, m.group(g)) for b, g in ((16, "hex"), (2, "bin"), (10, "dec"))
                        if m.group(g) is not None)
    digits = digits.replace("_", "")
    if not digits:
        raise IntLiteralError(f"{text} has no digits")
    significant = digits.lstrip("0")
    if len(significant) > int(max_bits * _DIGITS_PER_BIT[base]) + 1:
        raise IntLiteralError(f"{clip(text)} is larger than 2^{max_bits}-1")
    value = int(significant or "0", base)
    if value >> max_bits:
        raise IntLiteralError(f"{clip(text)} is larger than 2^{max_bits}-1")
    return value


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` when short, else its start, an ellipsis and how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…({len(text)} characters)"


def show_int(value: int, limit: int = CLIP_CHARS) -> str:
    """A number in decimal when it is short, else in hex with its size in bits (converting a
    power-of-two base costs linear time and has no digit limit)."""
    if abs(value).bit_length() <= limit * 3:  # at most ~limit decimal digits
        return str(value)
    sign = "-" if value < 0 else ""
    return f"{sign}{clip(hex(abs(value)), limit)} (a {abs(value).bit_length()}-bit number)"
