"""Structural checks on the ISA table (sim/isa.py), independent of every tool built on it."""

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from npkit.sim import isa

DOCS = Path(__file__).resolve().parents[2] / "docs" / "isa.md"


def test_opcodes_fit_and_are_unique() -> None:
    opcodes = [i.opcode for i in isa.INSTRUCTIONS]
    assert len(opcodes) == len(set(opcodes))
    assert all(0 <= o < (1 << isa.OPCODE_BITS) for o in opcodes)


def test_mnemonics_are_unique() -> None:
    mnemonics = [m for i in isa.INSTRUCTIONS for m in i.mnemonics]
    assert len(mnemonics) == len(set(mnemonics))


def test_every_format_fits_the_payload() -> None:
    for fmt in isa.FORMATS.values():
        assert sum(f.width for f in fmt.fields) <= isa.PAYLOAD_BITS, fmt.name


def test_operand_classes_are_disjoint_and_cover_8_bits() -> None:
    owner: dict[int, str] = {}
    for cls in isa.OPERAND_CLASSES:
        for code in range(cls.first, cls.first + cls.count):
            assert code not in owner, (cls.name, owner.get(code))
            assert 0 <= code < 256
            owner[code] = cls.name
    assert isa.operand_class(isa.OPERAND_NONE).name == "none"
    assert isa.operand_class(0xB6) is None  # reserved


def test_enum_fields_have_tables_and_values_fit() -> None:
    for fmt in isa.FORMATS.values():
        for f in fmt.fields:
            if f.kind.startswith("enum:") and f.kind != "enum:CMD":
                table = isa.ENUMS[f.kind.split(":", 1)[1]]
                assert max(table.values()) < (1 << f.width), (fmt.name, f.name)
    for ins in isa.INSTRUCTIONS:
        if ins.format == "mem":
            assert ins.cmds and max(ins.cmds.values()) < 16


@st.composite
def instruction_fields(draw: st.DrawFn) -> tuple[int, dict[str, int]]:
    ins = draw(st.sampled_from(isa.INSTRUCTIONS))
    fields = {f.name: draw(st.integers(0, (1 << f.width) - 1))
              for f in isa.FORMATS[ins.format].fields}
    return ins.opcode, fields


@given(instruction_fields())
def test_encode_decode_round_trip(case: tuple[int, dict[str, int]]) -> None:
    opcode, fields = case
    word = isa.encode(opcode, fields)
    assert word < (1 << isa.WORD_BITS)
    ins, decoded = isa.decode(word)
    assert ins.opcode == opcode and decoded == fields


def test_reserved_bits_and_opcodes_are_illegal() -> None:
    nop = isa.encode(isa.BY_MNEMONIC["nop"].opcode, {})
    for bad in (nop | 1, 31 << isa.PAYLOAD_BITS, 1 << isa.WORD_BITS):
        try:
            isa.decode(bad)
        except ValueError:
            continue
        raise AssertionError(f"{bad:#x} decoded")


def test_docs_list_every_mnemonic() -> None:
    text = DOCS.read_text()
    missing = [m for i in isa.INSTRUCTIONS for m in i.mnemonics if f"`{m}`" not in text]
    assert not missing
