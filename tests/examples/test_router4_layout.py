"""router4.h, router4.toml, router4.py (the Python side), the ISA table and the chip
config must agree: a number changed in one place only would corrupt buffers or tables
silently, so each shared number is checked here against every other side."""

from __future__ import annotations

import dataclasses
import re

import pytest

from npkit.compiler.uc import assemble_file
from npkit.link.manifest import parse_manifest
from npkit.microblocks.uc import router4 as r4
from npkit.sim.config import ChipConfig

HEADER = r4.FOLDER / "router4.h"
DEFINE = re.compile(r"^\s*#define\s+([A-Z_0-9]+)\s+(0x[0-9A-Fa-f]+|\d+)\b", re.MULTILINE)
L = r4.LAYOUT


@pytest.fixture(scope="module")
def header() -> dict[str, int]:
    return {name: int(value, 0) for name, value in
            DEFINE.findall(HEADER.read_text(encoding="utf-8"))}


@pytest.fixture(scope="module")
def manifest():  # noqa: ANN201 -- npkit.link.manifest.Manifest
    return parse_manifest(r4.MANIFEST)


def test_every_layout_field_is_the_header_number(header: dict[str, int]) -> None:
    for f in dataclasses.fields(L):
        name = f.name.upper()
        assert name in header, f"router4.h lacks #define {name}"
        assert getattr(L, f.name) == header[name], name
    assert not [name for name in header if name.startswith("MSF_")]


def test_derived_addresses(header: dict[str, int]) -> None:
    assert header["LOCAL4_ADDR"] == L.table_channel << 26 | L.local4_offset
    assert header["TRIE_ADDR"] == L.table_channel << 26 | L.trie_offset
    assert header["NH_ADDR"] == L.nh_channel << 26 | L.nh_offset
    assert header["XS_DESC_BASE"] == L.buf_desc_base + 2 * L.bufs_per_port * L.desc_bytes
    assert header["BUF_MAX_FRAME"] == L.buf_bytes - L.buf_data_offset
    assert 1 << L.buf_shift == L.buf_bytes // L.desc_bytes
    cfg = ChipConfig.load("ixp2800")
    assert L.trie_offset + 4 * L.trie_words == cfg.sram_channel_bytes
    assert L.local4_offset + L.local4_size * L.local4_entry_bytes <= L.trie_offset
    xs_end = L.xs_desc_base + L.xs_bufs * L.desc_bytes
    assert xs_end <= L.nh_offset, "the XScale's descriptors and nexthops share channel 3"
    # counters sit after the rings in scratch, one word per name
    ring_end = 4 * (L.exc_ring_word + L.exc_ring_words)
    assert ring_end <= L.cnt_base and L.cnt_base + 4 * L.cnt_words <= cfg.scratch_bytes
    assert L.drop_counter("martian_destination") < L.cnt_ip_forwarded


def test_exception_codes_are_router_common_mbl(header: dict[str, int]) -> None:
    text = (r4.FOLDER.parents[0] / "router_common.mbl").read_text(encoding="utf-8")
    for name, code in r4.EXCEPTIONS.items():
        if name != "not_ipv4":
            assert re.search(rf"\b{name} = {code},", text), name
        assert header[f"EXC_{name.upper()}"] == code


def test_freelists_match_the_buffer_layout(manifest) -> None:
    lists = sorted(manifest.freelists, key=lambda f: f.descriptor_base)
    assert [(f.channel, f.count) for f in lists] == \
        [(0, L.bufs_per_port), (1, L.bufs_per_port), (L.xs_channel, L.xs_bufs)]
    assert lists[2].descriptor_base == L.xs_desc_base
    end = 0
    for f in lists:
        assert f.queue == L.freelist_queue
        assert (f.descriptor_bytes, f.buffer_bytes) == (L.desc_bytes, L.buf_bytes)
        assert f.descriptor_base == (end or L.buf_desc_base), "descriptors back to back"
        end = f.descriptor_base + f.count * f.descriptor_bytes
        for i in (0, f.count - 1):  # the microcode's handle -> DRAM formula
            assert L.buffer_address(f.handle(i)) == f.dram_base + i * f.buffer_bytes


def test_rings_can_hold_every_buffer_that_can_be_on_them(manifest) -> None:
    rings = {r.number: r for r in manifest.rings}
    for p in (0, 1):
        for half in (0, 1):
            ring = rings[L.rx_ring(p, half)]
            assert ring.size_words == L.rx_ring_words
            assert ring.size_words >= L.rx_entry_words * L.bufs_per_port
        assert rings[L.tx_ring(p)].size_words == L.tx_ring_words
        assert L.tx_ring_words >= 2 * L.bufs_per_port + L.xs_bufs
    assert rings[L.exc_ring].size_words == L.exc_ring_words
    assert L.exc_ring_words >= L.exc_entry_words * 2 * L.bufs_per_port
    assert rings[0].base_word == L.rx_ring_word0
    assert rings[L.tx_ring(0)].base_word == L.tx_ring_word0
    assert rings[L.exc_ring].base_word == L.exc_ring_word


def test_geometry_matches_the_chip_config(header: dict[str, int], manifest) -> None:
    cfg = ChipConfig.load(manifest.chip)
    assert len(manifest.ports) == L.ports
    msf = cfg.raw["msf"]
    assert msf["element_bytes"] == header["ELEMENT_BYTES"] == 1 << header["ELEMENT_SHIFT"]
    assert msf["tbuf_bytes"] // L.ports // msf["element_bytes"] == header["TBUF_PART_ELEMENTS"]


@pytest.mark.parametrize("source, mes", [("rx_eth.uc", (0, 1)), ("ipv4_fwd.uc", (2, 3, 4, 5)),
                                         ("tx_eth.uc", (6, 7))])
def test_images_assemble_for_their_mes(source: str, mes: tuple[int, ...], manifest) -> None:
    image = assemble_file(str(r4.FOLDER / source))
    assert tuple(image.mes) == mes
    assert image.ctx_mode == 8
    spec = next(s for s in manifest.images if s.path.name == source)
    assert spec.mes == mes
    assert mes[0] in (0, L.fwd_first_me, L.tx_first_me)
