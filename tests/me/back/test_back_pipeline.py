"""The pass lists: every named pass prints the IR it leaves (`print_after`), an unknown name
is a user error listing the passes, an optional pass can be dropped and the body still
computes what the WIR interpreter computes."""

from __future__ import annotations

import pytest

from npkit.base.errors import NpkitError
from npkit.compiler.mbl import compile_source
from npkit.compiler.me import (
    BACK_PASSES,
    EMIT_KINDS,
    FRONT_PASSES,
    PASSES,
    UnknownPassError,
    compile_me,
    emit_text,
)
from npkit.compiler.me.back import OPTIONAL, compile_body
from npkit.compiler.me.back.pipeline import PASSES as BACK_PASS_LIST

from . import gen
from .test_back_props import run_checked

SOURCE = """import "std/headers.mbl";
block b {
    let eth = packet<ethernet_t>(0) else drop(runt);
    if eth.ethertype == 0x0800 { forward(1); }
    forward(eth.ethertype & 3);
}"""


@pytest.fixture(scope="module")
def program():
    return compile_source(SOURCE, "t.mbl")


def traced(program, names) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    compile_me(program, print_after=names, trace=lambda name, text: seen.append((name, text)))
    return seen


def test_pass_names_are_the_pipelines_in_order() -> None:
    assert PASSES == FRONT_PASSES + BACK_PASSES
    assert BACK_PASSES == tuple(p.name for p in BACK_PASS_LIST)
    assert FRONT_PASSES[:3] == ("prepare", "read", "legalize") and BACK_PASSES[-1] == "emit"
    assert len(set(PASSES)) == len(PASSES)


def test_every_pass_prints_its_ir_in_order(program) -> None:
    seen = traced(program, PASSES)
    order = list(dict.fromkeys(name for name, _ in seen))
    assert order == list(PASSES)
    text = dict(seen)        # the last run of each
    assert text["prepare"].lstrip().startswith("define")                 # LLVM IR
    for name in (*FRONT_PASSES[2:], *BACK_PASSES[:BACK_PASSES.index("isel")]):
        assert text[name].startswith("function b"), name                 # WIR
    for name in BACK_PASSES[BACK_PASSES.index("isel"):-1]:
        assert text[name].startswith("; machine IR of b"), name          # MIR
    assert "v0" in text["isel"] and "v0" not in text["regalloc"]         # registers named
    assert text["emit"] == compile_me(program).body.uc                   # the body itself


def test_one_name_prints_only_that_pass(program) -> None:
    assert [name for name, _ in traced(program, ["isel"])] == ["isel"]
    assert {name for name, _ in traced(program, ["simplify"])} == {"simplify"}


def test_all_prints_after_every_pass(program) -> None:
    assert {name for name, _ in traced(program, ["all"])} == set(PASSES)


def test_without_a_trace_the_ir_goes_to_stderr(program, capsys) -> None:
    compile_me(program, print_after=["layout"])
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("; *** IR after layout ***\nfunction b")


def test_no_print_after_prints_nothing(program, capsys) -> None:
    compile_me(program)
    assert capsys.readouterr().err == ""


def test_an_unknown_pass_is_a_user_error_listing_the_passes() -> None:
    with pytest.raises(UnknownPassError) as caught:
        compile_me(None, print_after=["isel", "simplfy"])   # type: ignore[arg-type]
    assert isinstance(caught.value, NpkitError)
    message = str(caught.value)
    assert "'simplfy'" in message and "'isel'" not in message
    assert all(name in message for name in PASSES)


@pytest.mark.parametrize("kind", EMIT_KINDS)
def test_every_emit_kind_renders(program, kind: str) -> None:
    text = emit_text(program, kind)
    first = {"ast": "", "llvm": "", "llvm-opt": "", "wir": "function b",
             "mir": "; machine IR of b", "uc": "; body of b"}[kind]
    assert text.strip() and text.startswith(first)


def test_an_unknown_emit_kind_is_a_user_error(program) -> None:
    with pytest.raises(NpkitError, match="wir"):
        emit_text(program, "asm")


def test_only_optional_passes_can_be_skipped() -> None:
    fn = gen.random_function(1)
    with pytest.raises(ValueError, match="isel"):
        compile_body(fn, skip={"isel"})
    with pytest.raises(ValueError, match="nope"):
        compile_body(fn, skip={"nope"})


@pytest.mark.parametrize("seed", range(4))
def test_the_body_is_correct_without_the_optional_passes(seed: int) -> None:
    fn = gen.random_function(seed, control=True, memory=True)
    plain = compile_body(fn, skip=OPTIONAL)
    assert plain.instructions >= compile_body(fn).instructions
    run_checked(fn, seed, skip=OPTIONAL)
