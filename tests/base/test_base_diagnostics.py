"""npkit.base.diagnostics: one location type and one diagnostic, rendered the same way for
the assembler and MBL (the exact text users see)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npkit.base.diagnostics import Diagnostic, DiagnosticError, SourceLocation
from npkit.base.errors import NpkitError
from npkit.compiler.mbl import compile_source
from npkit.compiler.mbl.diagnostics import CompileError
from npkit.compiler.me import wir
from npkit.compiler.uc import AsmError, assemble_text

SOURCE = "block b {\n\tlet x: bit<8> = 300;\n}\n"


def test_location_prints_like_a_compiler():
    assert str(SourceLocation("a.mbl", 3, 7)) == "a.mbl:3:7"
    assert str(SourceLocation("a.mbl", 0, 0)) == "a.mbl"  # the file as a whole


def test_render_with_source_caret_underline_kind_and_hint():
    d = Diagnostic("300 does not fit in bit<8>", SourceLocation("t.mbl", 2, 18, 3),
                   "use a smaller value", kind="literal-range")
    assert d.render({"t.mbl": SOURCE}) == (
        "t.mbl:2:18: error: 300 does not fit in bit<8> [literal-range]\n"
        "     let x: bit<8> = 300;\n"          # the tab expands to one column
        "                     ^~~\n"
        "  hint: use a smaller value")


def test_render_without_source_or_location():
    d = Diagnostic("cannot read", SourceLocation("gone.uc", 0, 0), "check the path")
    assert d.render() == "gone.uc: error: cannot read\n  hint: check the path"
    assert Diagnostic("no place", severity="warning").render() == "warning: no place"
    beyond = Diagnostic("m", SourceLocation("t.mbl", 99, 1))
    assert beyond.render({"t.mbl": SOURCE}) == "t.mbl:99:1: error: m"


@given(st.integers(1, 30), st.integers(1, 40))
def test_underline_stays_on_the_line(column, length):
    text = "x" * 20
    d = Diagnostic("m", SourceLocation("f", 1, column, length))
    caret = d.render({"f": text}).splitlines()[2]
    assert caret.index("^") == 4 + column - 1
    assert len(caret) - 4 <= max(len(text), column)  # never past the end of the line


def test_error_carries_all_diagnostics_and_is_a_user_error():
    ds = [Diagnostic("first", SourceLocation("f", 1, 1)),
          Diagnostic("careful", SourceLocation("f", 1, 2), severity="warning")]
    err = DiagnosticError(ds, {"f": "ab"})
    assert isinstance(err, NpkitError)
    assert err.errors == ds[:1]
    assert str(err) == ("f:1:1: error: first\n    ab\n    ^\n"
                        "f:1:2: warning: careful\n    ab\n     ^")


def test_the_tools_share_the_types():
    """The assembler's and the checker's errors carry the same Diagnostic, the back end's
    WIR location is the same SourceLocation."""
    with pytest.raises(AsmError) as asm:
        assemble_text("    frob[a0]\n", "x.uc")
    with pytest.raises(CompileError) as mbl:
        compile_source(SOURCE, "t.mbl")
    for err in (asm.value, mbl.value):
        assert isinstance(err, DiagnosticError)
        assert all(type(d) is Diagnostic for d in err.diagnostics)
        assert all(type(d.location) is SourceLocation for d in err.diagnostics)
    assert wir.Loc is SourceLocation
    assert str(asm.value).startswith("x.uc:1:5: error: unknown mnemonic 'frob'")
    assert str(mbl.value).startswith("t.mbl:2:18: error: 300 does not fit in bit<8>")
