"""The .loc directive: instructions after it carry a compiler's source position."""

import pytest

from npkit.compiler.uc import AsmError, SourceLocation, assemble_text, disassemble


def test_loc_sets_every_following_instruction_until_reset() -> None:
    source = (
        "nop\n"                          # 1: own line
        '.loc "prog.mbl" 12 5\n'
        "nop\n"
        "alu[a0, a0, +, 1]\n"
        '.loc "prog.mbl" 14\n'
        "nop\n"
        ".loc\n"
        "nop\n"                          # 8
        '.loc "x.mbl" 3 2\n'
        "nop\n"
        ".loc none\n"
        "nop\n"                          # 12
    )
    image = assemble_text(source, "body.uc")
    assert image.lines == [
        SourceLocation("body.uc", 1, 1),
        SourceLocation("prog.mbl", 12, 5), SourceLocation("prog.mbl", 12, 5),
        SourceLocation("prog.mbl", 14, 1),
        SourceLocation("body.uc", 8, 1),
        SourceLocation("x.mbl", 3, 2),
        SourceLocation("body.uc", 12, 1),
    ]
    assert image.source_of(2) == "prog.mbl:12:5"


def test_loc_none_returns_to_line_mapping() -> None:
    image = assemble_text('.line "gen.uc" 100\nnop\n.loc "a.mbl" 1 1\nnop\n.loc\nnop\n')
    assert [str(x) for x in image.lines] == ["gen.uc:100:1", "a.mbl:1:1", "gen.uc:104:1"]


def test_loc_survives_disassembly_round_trip() -> None:
    image = assemble_text('.loc "p.mbl" 7 3\nalu[a1, a1, +, 2]\n.loc\nnop\n', "t.uc")
    again = assemble_text(disassemble(image), "<disassembly>")
    assert again.lines == image.lines


def test_malformed_loc_is_an_error() -> None:
    with pytest.raises(AsmError, match="malformed .loc"):
        assemble_text('.loc "p.mbl"\nnop\n')
