"""Constant expressions: integers (decimal, 0x hex, 0b binary), names, C operators.

Bounded whatever the text: a literal of more than 64 bits, a value of more than
``VALUE_BITS`` bits on the way, or parentheses and unary operators nested deeper than
``MAX_DEPTH`` are an ExprError at their column, never a Python limit."""

from __future__ import annotations

import re
from collections.abc import Callable

from npkit.base.numbers import IntLiteralError
from npkit.base.numbers import parse_int as parse_literal

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d+)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op><<|>>|[-+*/%&|^~()]))")
_SPACE = re.compile(r"\s*")
_PLAIN_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[bB][01]+|[1-9][0-9]*|0")
MASK32 = 0xFFFF_FFFF
LITERAL_BITS = 64   # a literal: .const takes -2^63 .. 2^64
VALUE_BITS = 128    # any value on the way (a product of two literals fits)
MAX_DEPTH = 32      # parentheses and unary operators nested (~10 Python frames each)
# binary operators by precedence level, loosest first (as in C)
_LEVELS: tuple[tuple[str, ...], ...] = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"),
                                        ("*", "/", "%"))


class ExprError(ValueError):
    """A malformed or unevaluable expression; ``offset`` is the character position."""

    def __init__(self, message: str, offset: int = 0, hint: str = "") -> None:
        super().__init__(message)
        self.offset = offset
        self.hint = hint


def _tokenize(text: str) -> list[tuple[str, str, int]]:
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        start = _SPACE.match(text, pos).end()
        if start == len(text):
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExprError(f"unexpected character {text[start]!r} in expression", start)
        kind = m.lastgroup or "op"
        tokens.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return tokens


def parse_int(text: str, offset: int = 0) -> int:
    """A literal's value (at most LITERAL_BITS bits), or ExprError at ``offset``."""
    try:
        return parse_literal(text, LITERAL_BITS)
    except IntLiteralError as e:
        raise ExprError(f"number {e}", offset) from None


def evaluate(text: str, lookup: Callable[[str], int | None]) -> int:
    """Evaluate ``text``; ``lookup`` maps a name to its value or None when undefined."""
    if _PLAIN_NUMBER.fullmatch(text):  # fast path: most operands are literals
        return parse_int(text)
    tokens = _tokenize(text)
    if not tokens:
        raise ExprError("missing value", 0)
    parser = _Parser(tokens, lookup, len(text))
    value = parser.expression(0)
    if parser.pos < len(tokens):
        _, tok, off = tokens[parser.pos]
        raise ExprError(f"unexpected {tok!r} in expression", off)
    return value


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]],
                 lookup: Callable[[str], int | None], end: int) -> None:
        self.tokens = tokens
        self.lookup = lookup
        self.pos = 0
        self.end = end
        self.depth = 0

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expression(self, level: int) -> int:
        if level == len(_LEVELS):
            return self.unary()
        value = self.expression(level + 1)
        while (tok := self._peek()) and tok[0] == "op" and tok[1] in _LEVELS[level]:
            self.pos += 1
            rhs = self.expression(level + 1)
            value = _apply(tok[1], value, rhs, tok[2])
        return value

    def unary(self) -> int:
        tok = self._peek()
        if tok is None:
            raise ExprError("expression ends too early", self.end)
        kind, text, off = tok
        self.pos += 1
        if kind == "num":
            return parse_int(text, off)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise ExprError(f"expression nests more than {MAX_DEPTH} deep", off,
                                "split it with .const names")
            return self._nested(kind, text, off)
        finally:
            self.depth -= 1

    def _nested(self, kind: str, text: str, off: int) -> int:
        if kind == "name":
            value = self.lookup(text)
            if value is None:
                raise ExprError(f"undefined name {text!r}", off,
                                "define it with .const or #define before use")
            return value
        if text == "(":
            value = self.expression(0)
            close = self._peek()
            if close is None or close[1] != ")":
                raise ExprError("missing ')'", close[2] if close else self.end)
            self.pos += 1
            return value
        if text == "-":
            return -self.unary()
        if text == "+":
            return self.unary()
        if text == "~":
            return ~self.unary() & MASK32
        raise ExprError(f"unexpected {text!r} in expression", off)


def _apply(op: str, a: int, b: int, off: int) -> int:
    if op in ("/", "%") and b == 0:
        raise ExprError("division by zero", off)
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise ExprError(f"shift by {b} is out of range 0..63", off)
    result = {
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
        "*": lambda: a * b, "/": lambda: a // b, "%": lambda: a % b,
    }[op]()
    if result.bit_length() > VALUE_BITS:
        raise ExprError(f"the value of {op!r} here has more than {VALUE_BITS} bits", off,
                        "constants are at most 64 bits")
    return result
