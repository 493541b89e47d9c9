"""Hostile inputs to the assembler (issue 20): deep parentheses, huge constants and numbers
give file:line:col errors, never a Python limit (recursion depth, 4,300-digit conversion)."""

from __future__ import annotations

import time

import pytest

from npkit.compiler.uc import AsmError, assemble_text
from npkit.compiler.uc.expr import MAX_DEPTH

HUGE = "9" * 5000


def asm_error(text: str) -> tuple[str, AsmError]:
    start = time.monotonic()
    with pytest.raises(AsmError) as info:
        assemble_text(text, "t.uc")
    assert time.monotonic() - start < 5
    rendered = str(info.value)
    for python_message in ("recursion", "Exceeds the limit", "int_max_str_digits", "Traceback"):
        assert python_message not in rendered
    assert len(rendered) < 3000
    return rendered, info.value


@pytest.mark.parametrize(("text", "where", "message"), [
    (".const X " + "(" * 200 + "1" + ")" * 200 + "\n", f"t.uc:1:{10 + MAX_DEPTH}",
     f"expression nests more than {MAX_DEPTH} deep"),
    (".const X " + "-" * 5000 + "1\n", f"t.uc:1:{10 + MAX_DEPTH}", "nests more than"),
    (f".const X {HUGE}\n", "t.uc:1:10", "is larger than 2^64-1"),
    (f"alu[a0, a1, +, {HUGE}]\n", "t.uc:1:16", "is larger than 2^64-1"),
    (f"immed32[a0, {HUGE}]\n", "t.uc:1:13", "is larger than 2^64-1"),
    (f".word {HUGE}\n", "t.uc:1:7", "is larger than 2^64-1"),
    (f".me {HUGE}\n", "t.uc:1:5", "is larger than 2^64-1"),
    (f".sig s={HUGE}\n", "t.uc:1:8", "is larger than 2^64-1"),
    (f"br[{HUGE}]\n", "t.uc:1:4", "is larger than 2^64-1"),
    (f"#define BIG {HUGE}\nimmed[a0, BIG]\n", "t.uc:2:11", "is larger than 2^64-1"),
    (".const X 0x_\n", "t.uc:1:10", "0x_ has no digits"),
    (".const X " + "*".join(["0xffffffffffffffff"] * 300) + "\n", "t.uc:1:47",
     "has more than 128 bits"),
    (f"alu[a{HUGE}, a1, +, 1]\n", "t.uc:1:5", "there is no register a9999"),
    (f'.line "f.uc" {HUGE}\nnop\n', "t.uc:1:1", "malformed .line directive"),
    (f'.loc "f.uc" {HUGE}\nnop\n', "t.uc:1:1", "malformed .loc directive"),
])
def test_hostile_constants_are_located_errors(text, where, message):
    rendered, error = asm_error(text)
    assert rendered.startswith(f"{where}: error: "), rendered
    assert message in rendered.splitlines()[0]


def test_nesting_within_the_limit_assembles():
    depth = MAX_DEPTH - 1
    image = assemble_text(".const X " + "(" * depth + "3" + ")" * depth + "\nimmed[a0, X]\n")
    assert len(image.words) == 1


def test_a_long_flat_expression_is_fast():
    start = time.monotonic()
    image = assemble_text(".const X " + "+".join(["1"] * 50000) + "\nimmed[a0, X]\n")
    assert len(image.words) == 1 and time.monotonic() - start < 5
