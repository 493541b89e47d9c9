"""Every assembler error kind: its message, location, caret and hint."""

from pathlib import Path

import pytest

from npkit.base.errors import NpkitError
from npkit.compiler.uc import (
    AsmError,
    Diagnostic,
    SourceLocation,
    assemble_file,
    assemble_text,
)


def diagnostics(source: str, **kwargs: object) -> list[Diagnostic]:
    with pytest.raises(AsmError) as info:
        assemble_text(source, "err.uc", **kwargs)  # type: ignore[arg-type]
    return info.value.diagnostics


def only(source: str, **kwargs: object) -> Diagnostic:
    found = diagnostics(source, **kwargs)
    assert len(found) == 1, [d.message for d in found]
    return found[0]


@pytest.mark.parametrize(("source", "line", "col", "message"), [
    # unknown mnemonic, with a suggestion
    ("nop\n  alu_shift[a0, a1, +, b1, <<1]", 2, 3, "unknown mnemonic 'alu_shift'"),
    # bad operands
    ("alu[a0, a1, PLUS, b1]", 1, 13, "unknown ALU operation 'PLUS'"),
    ("alu[a0, a40, +, b1]", 1, 9, "there is no register a40"),
    ("alu[a0, a1, +]", 1, 1, "alu takes 4 operands, got 3"),
    ("alu[a0, a1, +, b1, b2]", 1, 20, "alu takes 4 operands, got 5"),
    ("alu[5, a1, +, b1]", 1, 5, "5 cannot be a destination"),
    ("alu[a0, a1, +, start#]\nstart#: nop", 1, 16, "a label (start#) is not a value here"),
    ("alu[a0, a1, +, undefined_thing]", 1, 16, "undefined name 'undefined_thing'"),
    ("alu_shf[a0, a1, +, b1, <<32]", 1, 26, "shift amount 32 is out of range 0..31"),
    ("dbl_shf[a0, a1, b1, <<3]", 1, 21, "<< is not allowed here"),
    ("sram[read, $$0, a0, b0]", 1, 12, "sram needs $ (SRAM) transfer registers, not $$0"),
    ("dram[read, $x, a0, b0]\n.reg $x", 1, 12, "dram needs $$ (DRAM) transfer registers"),
    ("sram[read, $nope, a0, b0]", 1, 12, "undeclared transfer register $nope"),
    ("sram[fetch, $0, a0, b0]", 1, 6, "unknown sram command 'fetch'"),
    ("sram[read, $15, a0, b0, 2]", 1, 12, "$15 + 2 transfer registers runs past the 16"),
    ("local_csr_wr[0x7f, a0]", 1, 14, "there is no local CSR number 0x7f"),
    ("sram[incr, --, a0, b0, 2]", 1, 24, "sram incr takes a count of 1, not 2"),
    ("br[8192]", 1, 4, "branch target 8192 is out of range 0..8191"),
    ("sram[read, --, a0, b0]", 1, 12, "sram read moves data: it needs $ transfer registers"),
    ("nop, defer[1]", 1, 6, "unexpected option 'defer' for nop"),
    ("mul_step[a0, b0]", 1, 1, "mul_step needs a step option"),
    ("br_inp_state[SCR_RING99_FULL, x#]\nx#: nop", 1, 14, "unknown input state"),
    # registers that do not exist in 8-context mode
    ("alu[a16, a1, +, b1]", 1, 5, "register a16 does not exist in 8-context mode"),
    # undefined / duplicate labels
    ("br[nowhere#]", 1, 4, "undefined label 'nowhere'"),
    ("x#: nop\n  x#: nop", 2, 3, "duplicate label 'x'"),
    # immediates out of range
    ("alu[a0, a1, +, 64]", 1, 16, "immediate out of range: 64 does not fit an operand"),
    ("immed[a0, 0x12345678]", 1, 11, "0x12345678 cannot be loaded by one immed"),
    ("immed_b2[a0, 256]", 1, 14, "immed_b2 value 256 is out of range 0..255"),
    ("immed[a0, 0x10000, <<8]", 1, 11, "out of range 0..65535"),
    ("br_bset[a0, 32, x#]\nx#: nop", 1, 13, "bit number 32 is out of range 0..31"),
    # A/B bank rule
    ("alu[a0, a1, +, a2]", 1, 16, "A/B bank conflict: a1 and a2 are both in bank A"),
    ("sram[read, $0, b1, b2]", 1, 20, "A/B bank conflict: b1 and b2 are both in bank B"),
    (".areg x y\nalu[a0, x, +, y]", 2, 15, "'x' is forced into bank A"),
    (".reg x y z\nalu[a0, x, +, y]\nalu[a0, y, +, z]\nalu[a0, x, +, z]", 4, 15,
     "A/B bank conflict: 'x' and 'z'"),
    (".reg x\nalu[a0, x, +, x]", 2, 15, "'x' is used as both sources"),
    (".reg x\nalu[x, x, +, a1]\nalu[x, x, +, b1]", 3, 14, "earlier instructions put 'x' in bank B"),
    # defer
    ("x#: br[x#], defer[2]\nnop", 1, 13, "bad defer: defer[2] needs 2 instructions"),
    ("x#: br[x#], defer[1]\nbr[x#]", 1, 13, "the instruction at address 1 in the defer shadow "
     "is a br"),
    ("x#: br[x#], defer[1]\nctx_arb[voluntary]", 1, 13, "defer shadow is a ctx_arb"),
    ("x#: br[x#], defer[4]\nnop\nnop\nnop\nnop", 1, 19, "defer count 4 is out of range 0..3"),
    # directives
    (".regs x", 1, 1, "unknown directive .regs"),
    (".ctx_mode 6", 1, 11, ".ctx_mode is 4 or 8"),
    (".me 0 16", 1, 7, "ME number 16 is out of range 0..15"),
    (".me 1 1", 1, 7, "ME 1 is listed twice"),
    (".reg a3", 1, 6, "'a3' is a register name and cannot be declared"),
    (".reg x\n.sig x", 2, 6, "'x' is already declared"),
    (".areg $x", 1, 7, ".areg places GPRs"),
    (".reg x=$3", 1, 6, "cannot bind x to $3"),
    (".const N", 1, 1, "malformed .const"),
    (".const N 1 +", 1, 13, "expression ends too early"),
    ("#pragma once", 1, 1, "unknown preprocessor directive #pragma"),
    ('.line "x.uc"', 1, 1, "malformed .line directive"),
    (".word 0xff00000000", 1, 7, "illegal instruction word"),
    # signals
    ("ctx_arb[16]", 1, 9, "signal out of range: 16 (signals are 1..15)"),
    ("ctx_arb[0]", 1, 9, "signal out of range: 0"),
    ("br_signal[nosig, x#]\nx#: nop", 1, 11, "undefined signal 'nosig'"),
    (".sig s=16", 1, 8, "signal number 16 is out of range 1..15"),
])
def test_error_kind(source: str, line: int, col: int, message: str) -> None:
    d = only(source)
    assert d.location == SourceLocation("err.uc", line, col), d
    assert message in d.message, d.message
    assert d.hint, "every error carries a hint"


def test_too_many_registers_in_a_bank() -> None:
    names = " ".join(f"r{i}" for i in range(17))
    d = only(f".areg {names}")
    assert "too many registers: GPRs in bank A are limited to 16 per context" in d.message
    assert "r16" in d.message and ".ctx_mode 4" in d.hint
    # 4-context mode doubles the bank
    assert assemble_text(f".ctx_mode 4\n.areg {names}").registers["r16"] == "a16"


def test_too_many_transfer_registers_and_signals() -> None:
    xfers = " ".join(f"$x{i}" for i in range(17))
    assert "SRAM ($) transfer registers are limited to 16" in only(f".reg {xfers}").message
    sigs = " ".join(f"s{i}" for i in range(16))
    d = only(f".sig {sigs}")
    assert d.message.startswith("signal out of range") and "s15" in d.message


def test_unplaced_names_spread_over_both_banks() -> None:
    names = " ".join(f"r{i}" for i in range(32))  # 32 free names fit 16 A + 16 B
    image = assemble_text(f".reg {names}")
    banks = [spelling[0] for spelling in image.registers.values()]
    assert banks.count("a") == 16 and banks.count("b") == 16


def test_control_store_overflow() -> None:
    d = only("nop\nnop\nnop\nnop\nnop", control_store_words=4)
    assert d.location is not None and d.location.line == 5
    assert "control store overflow: the image needs 5 words but the control store holds 4" \
        in d.message


def test_missing_include(tmp_path: Path) -> None:
    main = tmp_path / "main.uc"
    main.write_text('nop\n#include "nothere.uc"\n')
    with pytest.raises(AsmError) as info:
        assemble_file(main, include_dirs=(str(tmp_path / "inc"),))
    (d,) = info.value.diagnostics
    assert d.location is not None
    assert (d.location.line, d.location.column) == (2, 1)
    assert "cannot find include file 'nothere.uc'" in d.message
    assert str(tmp_path / "inc") in d.hint


def test_include_cycle(tmp_path: Path) -> None:
    (tmp_path / "a.uc").write_text('#include "b.uc"\nnop\n')
    (tmp_path / "b.uc").write_text('nop\n#include "a.uc"\n')
    with pytest.raises(AsmError) as info:
        assemble_file(tmp_path / "a.uc")
    (d,) = info.value.diagnostics
    assert d.location is not None
    assert d.location.file.endswith("b.uc") and d.location.line == 2
    assert "include cycle" in d.message and "a.uc" in d.message


def test_unreadable_source_file(tmp_path: Path) -> None:
    with pytest.raises(AsmError) as info:
        assemble_file(tmp_path / "nope.uc")
    assert str(info.value).startswith(f"{tmp_path / 'nope.uc'}: error: cannot read source file")
    assert isinstance(info.value, NpkitError)  # the CLI reports it as a user error


def test_all_errors_of_a_file_in_one_run_and_rendering() -> None:
    source = "\n".join([
        ".reg x",
        "    alu[x, a1, +, 99]",
        "    frob[x]",
        "    br[missing#]",
        "    immed_w0[x, 0x10000]",
    ])
    with pytest.raises(AsmError) as info:
        assemble_text(source, "many.uc")
    err = info.value
    assert [d.location.line for d in err.diagnostics if d.location] == [2, 3, 4, 5]
    text = str(err)
    assert "many.uc:2:19: error: immediate out of range" in text
    # the source line and a caret under column 20
    assert "\n        alu[x, a1, +, 99]\n" + " " * 22 + "^\n" in text
    assert "  hint: load it into a register first: immed[reg, 99]" in text
    assert "many.uc:3:5: error: unknown mnemonic 'frob'" in text
    assert text.rstrip().endswith("4 errors")
