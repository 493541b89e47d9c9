"""A pipeline's `ports a..b;` and `on me(...)` are honoured or rejected by the linker
(npkit.link.served_ports, docs/link.md "What the pipeline declares"): ports 0..b of a
platform that has them are linked, anything else is a CompileError at the MBL line of the
declaration saying what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.compiler.mbl import CompileError, compile_file
from npkit.link import link_body, load_platform

SWAP = Path(__file__).parent / "bodies"
SWAP_UC = (SWAP / "swap.uc").read_text(encoding="utf-8")
ROUTER = Path(__file__).parents[3] / "examples" / "router" / "router.mbl"


def program_with(tmp_path: Path, pipeline: str):
    """swap.mbl's block in a pipeline `p` declared on line 3 of the file."""
    source = tmp_path / "p.mbl"
    block = (SWAP / "swap.mbl").read_text(encoding="utf-8").replace(
        'import "std/headers.mbl";', "")
    source.write_text(f'import "std/headers.mbl";\n\n{pipeline}\n{block}', encoding="utf-8")
    return compile_file(source), source


def link_p(program, platform: str):
    return link_body(program, SWAP_UC, 16, pipeline="p", platform=platform)


def located_error(err: pytest.ExceptionInfo[CompileError], kind: str, source: Path) -> str:
    (diag,) = err.value.diagnostics
    assert diag.kind == kind
    assert diag.location is not None and Path(diag.location.file) == source
    assert diag.location.line == 3
    assert diag.hint
    return diag.message


def test_ports_the_platform_lacks_are_an_error_at_the_pipeline(tmp_path: Path) -> None:
    program, source = program_with(tmp_path, "pipeline p { ports 0..3; stage s = swap; }")
    with pytest.raises(CompileError) as err:
        link_p(program, "ixp2800-2x10gbe")
    message = located_error(err, "link-ports", source)
    assert "ports 0..3" in message and "2 ports" in message
    assert "ixp2800-4x10gbe" in err.value.diagnostics[0].hint
    assert f"{source}:3:" in str(err.value)        # the rendering points at the line


def test_declared_ports_are_the_ones_linked(tmp_path: Path) -> None:
    program, _ = program_with(tmp_path, "pipeline p { ports 0..1; stage s = swap; }")
    manifest = link_p(program, "ixp2800-4x1gbe")
    assert [p.kind for p in manifest.ports] == ["1gbe", "1gbe"]
    assert manifest.program is not None and manifest.program.ports == 2
    program, _ = program_with(tmp_path, "pipeline p { ports 0..3; stage s = swap; }")
    assert len(link_p(program, "ixp2800-4x10gbe").ports) == 4


def test_without_ports_every_platform_port_is_served(tmp_path: Path) -> None:
    program, _ = program_with(tmp_path, "pipeline p { stage s = swap; }")
    for name, count in (("ixp2800-2x10gbe", 2), ("ixp2800-4x10gbe", 4)):
        assert len(link_p(program, name).ports) == count == len(load_platform(name).ports)


@pytest.mark.parametrize("ports, words", [("1..2", "from port 0"), ("0..2", "2 or 4")])
def test_port_ranges_the_media_stages_cannot_map(tmp_path: Path, ports: str,
                                                 words: str) -> None:
    program, source = program_with(tmp_path, f"pipeline p {{ ports {ports}; stage s = swap; }}")
    with pytest.raises(CompileError) as err:
        link_p(program, "ixp2800-4x10gbe")
    assert words in located_error(err, "link-ports", source)


def test_on_me_is_rejected_at_the_stage(tmp_path: Path) -> None:
    program, source = program_with(tmp_path, "pipeline p { stage s = swap on me(2, 3); }")
    with pytest.raises(CompileError) as err:
        link_p(program, "ixp2800-2x10gbe")
    assert "on me(2, 3)" in located_error(err, "link-on-me", source)


def test_the_router_example_declares_what_its_platforms_have() -> None:
    """examples/router/router.mbl links for the default 2-port and the 4-port platform."""
    program = compile_file(ROUTER)
    assert program.pipelines["router"].ports is None
