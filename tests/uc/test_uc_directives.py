"""Declarations, preprocessor, constants, placement and listings."""

from pathlib import Path

from npkit.compiler.uc import SourceLocation, assemble_file, assemble_text, listing
from npkit.sim import isa


def fields_of(word: int) -> dict[str, int]:
    return isa.decode(word)[1]


def test_paired_names_get_different_banks() -> None:
    image = assemble_text(".reg p q r\nalu[p, q, +, r]\nalu[q, p, -, r]\n")
    regs = image.registers
    # q-r and p-r are source pairs: r is in the other bank from both p and q
    assert regs["q"][0] != regs["r"][0]
    assert regs["p"][0] != regs["r"][0]


def test_forced_banks_and_bindings_are_kept() -> None:
    image = assemble_text(".areg x\n.breg y\n.reg z=b7 $in=$5 $$out=$$3\nalu[x, x, +, y]")
    assert image.registers == {"x": "a0", "y": "b0", "z": "b7", "$in": "$5", "$$out": "$$3"}


def test_named_registers_avoid_registers_used_by_number() -> None:
    image = assemble_text(".areg x\n.reg $t\nalu[a0, a0, +, b0]\nsram[read, $0, a0, b0]")
    assert image.registers == {"x": "a1", "$t": "$1"}


def test_xfer_order_is_consecutive() -> None:
    image = assemble_text(".reg $a $b $c $d\n.xfer_order $d $b $e\n")
    assert image.registers["$a"] == "$0"
    d, b, e = (int(image.registers[n][1:]) for n in ("$d", "$b", "$e"))
    assert (b, e) == (d + 1, d + 2)
    assert len(set(image.registers.values())) == 5


def test_signals_numbered_from_one_skipping_used_numbers() -> None:
    image = assemble_text(".sig a b c=2\nctx_arb[1]\n")
    assert image.signals == {"a": 3, "b": 4, "c": 2}


def test_const_and_define_expressions() -> None:
    source = """
#define BASE 0x10
#define TMP a3
.const N ((BASE << 2) | 0b11) - 1 + 100 / 10 * 2 % 7
.const M ~0 & 0xff
    immed[TMP, N]
    alu[TMP, TMP, +, M - 250]
"""
    image = assemble_text(source)
    assert fields_of(image.words[0])["value"] == ((0x10 << 2) | 3) - 1 + (100 // 10 * 2) % 7
    assert fields_of(image.words[0])["dest"] == 3
    assert fields_of(image.words[1])["b"] == 0xC0 + 5


def test_ifdef_else_endif() -> None:
    source = "#define FAST\n#ifdef FAST\nnop\n#else\nbogus\n#endif\n#ifndef FAST\nbogus\n#endif\n"
    assert len(assemble_text(source).words) == 1


def test_comments_and_labels(tmp_path: Path) -> None:
    source = "a#: ; comment\nb#: nop // another ; still comment\nc#:\n"
    image = assemble_text(source)
    assert image.symbols == {"a": 0, "b": 0, "c": 1}


def test_include_relative_then_include_dirs(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "src" / "main.uc").write_text('#include "local.uc"\n#include "shared.uc"\nnop\n')
    (tmp_path / "src" / "local.uc").write_text(".const K 7\n")
    (tmp_path / "lib" / "shared.uc").write_text("alu[a0, a1, +, K]\n")
    image = assemble_file(tmp_path / "src" / "main.uc", include_dirs=(str(tmp_path / "lib"),))
    assert fields_of(image.words[0])["b"] == 0xC7
    assert image.lines[0] == SourceLocation(str(tmp_path / "lib" / "shared.uc"), 1, 1)
    assert image.lines[1] == SourceLocation(str(tmp_path / "src" / "main.uc"), 3, 1)


def test_include_guard_stops_repeat(tmp_path: Path) -> None:
    (tmp_path / "g.uc").write_text("#ifndef G\n#define G\nnop\n#endif\n")
    (tmp_path / "m.uc").write_text('#include "g.uc"\n#include "g.uc"\n')
    assert len(assemble_file(tmp_path / "m.uc").words) == 1


def test_line_directive_maps_locations() -> None:
    source = '.line "orig.mbl" 40 9\n  nop\n  nop\n'
    image = assemble_text(source, "gen.uc")
    assert image.lines == [SourceLocation("orig.mbl", 40, 9), SourceLocation("orig.mbl", 41, 3)]


def test_ctx_mode_4_allows_32_registers() -> None:
    image = assemble_text(".ctx_mode 4\nalu[a31, a16, +, b31]\nsram[read, $31, a0, b0]")
    assert image.ctx_mode == 4
    assert fields_of(image.words[0])["dest"] == 31


def test_me_list_and_default() -> None:
    assert assemble_text("nop").mes == (0,)
    assert assemble_text(".me 4 0 15\nnop").mes == (4, 0, 15)


def test_raw_word_directive() -> None:
    word = isa.encode(7, {"cond": 0, "target": 0})
    assert assemble_text(f".word {word:#x}").words == [word]


def test_listing_shows_address_word_text_and_source() -> None:
    source = "start#:\n    immed[a0, 0x1234]   ; load\n    br[start#]\n"
    image = assemble_text(source, "l.uc")
    text = listing(image, source)
    lines = text.splitlines()
    assert "start#:" in lines[1]
    assert lines[2].startswith(f"0000  {image.words[0]:010x}  immed[a0, 0x1234]")
    assert lines[2].endswith("; l.uc:2: immed[a0, 0x1234]   ; load")
    assert lines[3].startswith(f"0001  {image.words[1]:010x}  br[start#]")


def test_listing_reads_source_files_itself(tmp_path: Path) -> None:
    path = tmp_path / "f.uc"
    path.write_text("nop ; the only one\n")
    text = listing(assemble_file(path))
    assert "nop ; the only one" in text


def test_msf_address_map_is_predefined_from_the_isa_table() -> None:
    # immed loads the 16-bit value shifted by 16: MSF_TX_SEQUENCE_BASE is 3 << 16
    img = assemble_text("immed[a0, MSF_RBUF_ELEMENT_DONE]\n"
                        "immed[a1, (MSF_TX_SEQUENCE_BASE >> 16), <<16]\n")
    first = isa.decode(img.words[0])[1]
    second = isa.decode(img.words[1])[1]
    assert first["value"] == isa.MSF_RBUF_ELEMENT_DONE == 0x20
    assert second["value"] << 16 == isa.MSF_TX_SEQUENCE_BASE == 0x30000
