"""l2wire.h, l2wire.toml, the ISA table and the chip config must agree.

The microcode takes its layout from l2wire.h and the loader takes it from l2wire.toml; a
number changed in one place only would corrupt buffers silently, so each shared number is
checked here against the other side (and the MSF addresses against sim/isa.py).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from npkit.compiler.uc import assemble_file
from npkit.link.manifest import parse_manifest
from npkit.sim.config import ChipConfig

FOLDER = Path(str(resources.files("npkit.examples") / "l2wire"))
DEFINE = re.compile(r"^\s*#define\s+([A-Z_0-9]+)\s+(0x[0-9A-Fa-f]+|\d+)\b", re.MULTILINE)


@pytest.fixture(scope="module")
def header() -> dict[str, int]:
    text = (FOLDER / "l2wire.h").read_text(encoding="utf-8")
    return {name: int(value, 0) for name, value in DEFINE.findall(text)}


@pytest.fixture(scope="module")
def manifest():  # noqa: ANN201 -- npkit.link.manifest.Manifest
    return parse_manifest(FOLDER / "l2wire.toml")


def test_msf_addresses_come_from_the_isa_table(header: dict[str, int]) -> None:
    # the assembler predefines sim/isa.py's MSF_* names: the example must not repeat them
    assert not [name for name in header if name.startswith("MSF_")]


def test_freelists_match_the_buffer_layout(header: dict[str, int], manifest) -> None:
    lists = sorted(manifest.freelists, key=lambda f: f.channel)
    assert [f.channel for f in lists] == [0, 1], "one freelist per receive port, channel = port"
    ratio = header["BUF_BYTES"] // header["DESC_BYTES"]
    assert ratio == 1 << header["BUF_SHIFT"]
    for f in lists:
        assert f.queue == header["FREELIST_QUEUE"]
        assert f.descriptor_bytes == header["DESC_BYTES"]
        assert f.buffer_bytes == header["BUF_BYTES"]
        assert f.count == header["BUFS_PER_PORT"]
        # the microcode's handle -> DRAM mapping must be the manifest's buffer address
        first, last = f.handle(0), f.handle(f.count - 1)
        for i, handle in ((0, first), (f.count - 1, last)):
            offset = handle & ((1 << 26) - 1)
            assert (offset - header["BUF_DESC_BASE"]) * ratio == f.dram_base + i * f.buffer_bytes
    # descriptors of the two channels are back to back, so buffers never overlap
    assert lists[1].descriptor_base == lists[0].descriptor_base + lists[0].count * 32
    assert header["BUF_MAX_FRAME"] == header["BUF_BYTES"] - header["BUF_DATA_OFFSET"]


def test_rings_can_hold_every_buffer(header: dict[str, int], manifest) -> None:
    rings = {r.number: r for r in manifest.rings}
    assert sorted(rings) == [0, 1]
    for ring in rings.values():
        assert ring.size_words == header["RING_WORDS"]
        assert ring.size_words >= header["BUFS_PER_PORT"], "a put could overflow the ring"


def test_geometry_matches_the_chip_config(header: dict[str, int], manifest) -> None:
    cfg = ChipConfig.load(manifest.chip)
    ports = len(manifest.ports)
    assert ports == 2
    msf = cfg.raw["msf"]
    assert msf["element_bytes"] == header["ELEMENT_BYTES"] == 1 << header["ELEMENT_SHIFT"]
    assert msf["tbuf_bytes"] // ports // msf["element_bytes"] == header["TBUF_PART_ELEMENTS"]
    assert header["TBUF_PART_MASK"] == header["TBUF_PART_ELEMENTS"] - 1


@pytest.mark.parametrize("source, mes", [("rx.uc", (0, 1)), ("tx.uc", (2, 3))])
def test_images_assemble_for_their_mes(source: str, mes: tuple[int, int]) -> None:
    image = assemble_file(str(FOLDER / source))
    assert tuple(image.mes) == mes
    assert image.ctx_mode == 8
