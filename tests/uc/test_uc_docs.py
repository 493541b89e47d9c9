"""The example in docs/assembler.md assembles and round-trips."""

import re
from pathlib import Path

from npkit.compiler.uc import assemble_file, assemble_text, disassemble

DOC = Path(__file__).resolve().parents[2] / "docs" / "assembler.md"


def test_doc_example_assembles(tmp_path: Path) -> None:
    text = DOC.read_text()
    example = re.search(r"## Example\n\n```\n(.*?)```", text, re.S)
    assert example
    (tmp_path / "constants.uc").write_text(".const RING 4\n")
    (tmp_path / "fwd.uc").write_text(example.group(1))
    image = assemble_file(tmp_path / "fwd.uc")
    assert image.mes == (0, 1)
    w0, w1 = int(image.registers["$w0"][1:]), int(image.registers["$w1"][1:])
    assert w1 == w0 + 1
    assert assemble_text(disassemble(image)) == image


def test_every_directive_is_documented() -> None:
    from npkit.compiler.uc.assembler import DIRECTIVES
    text = DOC.read_text()
    for directive in DIRECTIVES:
        assert f"`{directive}" in text, directive
