"""`.dbg_var` / `.dbg_loc` (compiler/uc/debugvars.py): the variables and their locations by
pc in the image, through the file format, and the value a location gives for register
contents (DWARF expressions evaluated against Python arithmetic written out here)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npkit.compiler.uc.assembler import assemble_text
from npkit.compiler.uc.errors import AsmError
from npkit.compiler.uc.image import Image, VarLocation

TEXT = """\
.dbg_var 0 "x" "blk" "a.mbl" 3 5 32 9
.dbg_var 1 "w" "f" "a.mbl" 4 5 64 9 "a.mbl" 7 3
.loc "a.mbl" 3 5
    alu[a0, --, B, 1]
.dbg_loc 0 a0
.dbg_loc 1 a0:b1,0x3 {DW_OP_LLVM_arg 0 DW_OP_LLVM_arg 1 DW_OP_plus DW_OP_stack_value}
.loc "a.mbl" 4 5
    alu[b1, --, B, 2]
    alu[a1, --, B, 3]
.dbg_loc 0 none
    nop
.loc "a.mbl" 12 1
    nop
.loc none
    ctx_arb[kill]
"""


def test_locations_by_pc_and_scope() -> None:
    img = assemble_text(TEXT)
    assert len(img.words) == 6                      # the directives make no code
    seen = {pc: {v.variable.name: v.parts for v in img.variables_at(pc)} for pc in range(6)}
    assert seen[0] == {"x": None}                   # in scope (line 3), no location yet
    assert seen[1] == seen[2] == {"x": ("a0",), "w": ("a0", "b1", "0x3")}
    assert seen[3] == {"x": None, "w": ("a0", "b1", "0x3")}
    assert seen[4] == {} and seen[5] == {}          # line 12 and the .uc's own lines: out of scope
    w = img.variables[1]
    assert (w.scope, w.width, w.inlined_at.line, w.scope_end) == ("f", 64, 7, 9)


def test_file_format_round_trip() -> None:
    img = assemble_text(TEXT)
    back = Image.from_json_text(json.dumps(img.to_json()))
    assert back.variables == img.variables and back.var_ranges == img.var_ranges
    assert "variables" not in assemble_text("nop\n").to_json()   # absent without them


def test_bad_directives_are_located_errors() -> None:
    with pytest.raises(AsmError) as err:
        assemble_text('.dbg_loc 7 a0\nnop\n.dbg_var 0 "x" "b" "a.mbl" 1 1 32 2\n'
                      ".dbg_loc 0 q9\nnop\n")
    messages = [d.message for d in err.value.diagnostics]
    assert any("no .dbg_var" in m for m in messages)
    assert any("'q9'" in m for m in messages)


@given(a0=st.integers(0, 0xFFFFFFFF), b1=st.integers(0, 0xFFFFFFFF),
       k=st.integers(0, 31))
def test_expression_values(a0: int, b1: int, k: int) -> None:
    read = {"a0": a0, "b1": b1}.__getitem__
    plain = VarLocation((("a0", "b1"),))
    assert plain.value(read, 64) == a0 << 32 | b1
    assert plain.value(read, 16) == b1 & 0xFFFF
    bytes_ = VarLocation((("a0",), ("0x0",), ("b1",)), (
        "DW_OP_LLVM_arg", 0, "DW_OP_LLVM_convert", 8, "DW_ATE_unsigned",
        "DW_OP_constu", 24, "DW_OP_shl", "DW_OP_LLVM_arg", 2, "DW_OP_LLVM_convert", 8,
        "DW_ATE_unsigned", "DW_OP_constu", 16, "DW_OP_shl", "DW_OP_or", "DW_OP_LLVM_arg", 1,
        "DW_OP_or", "DW_OP_stack_value"))
    assert bytes_.value(read, 32) == (a0 & 0xFF) << 24 | (b1 & 0xFF) << 16
    minus = VarLocation((("0x4",), ("a0",)), ("DW_OP_LLVM_arg", 0, "DW_OP_LLVM_arg", 1,
                                               "DW_OP_minus", "DW_OP_stack_value"))
    assert minus.value(read, 16) == (4 - a0) % (1 << 16)
    shifted = VarLocation((("b1",),), ("DW_OP_constu", k, "DW_OP_shr", "DW_OP_stack_value"))
    assert shifted.value(read, 32) == b1 >> k
