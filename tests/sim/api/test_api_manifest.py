"""Run manifests: parsing, defaults and clear errors naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.link.manifest import ManifestError, parse_manifest
from npkit.sim import Port
from npkit.sim.loader import build_from_manifest

GOOD = """
chip = "ixp2800"
seed = 7
[ports]
0 = "10gbe"
1 = "oc192pos"
2 = {rate_bps = 2.5e9, overhead_bytes = 12, rx_freelist = 0}
[[image]]
source = "rx.uc"
mes = [0, 1]
[[image]]
image = "tx.img"
[[ring]]
number = 3
base_word = 0
size_words = 512
[[freelist]]
channel = 1
queue = 2
descriptor_base = 0x1000
descriptor_bytes = 32
count = 16
dram_base = 0x100000
buffer_bytes = 2048
[[memory]]
unit = "scratch"
address = 0x800
words = [1, 2, 0xffffffff]
"""


def _write(tmp_path: Path, text: str, files: tuple[str, ...] = ("rx.uc", "tx.img")) -> Path:
    for name in files:
        (tmp_path / name).write_text("")
    path = tmp_path / "run.toml"
    path.write_text(text)
    return path


def test_good_manifest(tmp_path: Path) -> None:
    m = parse_manifest(_write(tmp_path, GOOD))
    assert m.chip == "ixp2800" and m.seed == 7
    assert m.ports == [Port.ethernet_10g(), Port.oc192_pos(), Port.custom(2.5e9, 12, 0)]
    assert [(i.path.name, i.mes, i.is_source) for i in m.images] == [
        ("rx.uc", (0, 1), True), ("tx.img", None, False)]
    assert m.images[0].path == tmp_path / "rx.uc"  # relative to the manifest
    assert (m.rings[0].number, m.rings[0].size_words) == (3, 512)
    fl = m.freelists[0]
    assert (fl.channel, fl.queue, fl.count) == (1, 2, 16)
    # handle = SRAM byte address of the descriptor with the channel in bits 27..26
    assert fl.handle(0) == (1 << 26) | 0x1000
    assert fl.handle(3) == (1 << 26) | (0x1000 + 3 * 32)
    assert m.memory[0].words == (1, 2, 0xFFFFFFFF)


def test_defaults(tmp_path: Path) -> None:
    m = parse_manifest(_write(tmp_path, '[[image]]\nsource = "rx.uc"\n'))
    assert m.chip == "ixp2800" and m.seed == 1
    assert m.ports == [Port.ethernet_10g(), Port.ethernet_10g()]
    assert m.rings == [] and m.freelists == [] and m.memory == []


def test_chip_path_is_relative_to_manifest(tmp_path: Path) -> None:
    m = parse_manifest(_write(tmp_path, 'chip = "chips/mine.toml"\n'))
    assert m.chip == str(tmp_path / "chips" / "mine.toml")


@pytest.mark.parametrize(("edit", "message"), [
    (("seed = 7", "seed = \"x\""), r"key 'seed': expected an integer"),
    (("chip = \"ixp2800\"", "chip = \"ixp2800\"\nspeed = 1"), r"unknown key 'speed'"),
    (("1 = \"oc192pos\"", "1 = \"fddi\""), r"\[ports\] 1: unknown port kind 'fddi'"),
    (("2 = {", "5 = {"), r"\[ports\] must number ports 0..2 without gaps"),
    (("source = \"rx.uc\"", "source = \"missing.uc\""),
     r"\[\[image\]\] #1: file 'missing.uc' not found"),
    (("mes = [0, 1]", "mes = [\"a\"]"), r"\[\[image\]\] #1: key 'mes'"),
    (("image = \"tx.img\"", "image = \"tx.img\"\nsource = \"rx.uc\""),
     r"\[\[image\]\] #2: give exactly one of 'source'"),
    (("size_words = 512", ""), r"\[\[ring\]\] #1: missing key 'size_words'"),
    (("descriptor_base = 0x1000", "descriptor_base = 0"), r"\[\[freelist\]\] #1: key "
     "'descriptor_base': must not be 0"),
    (("descriptor_bytes = 32", "descriptor_bytes = 30"), r"multiples of 4"),
    (("unit = \"scratch\"", "unit = \"sram9\""), r"\[\[memory\]\] #1: key 'unit'"),
    (("address = 0x800", "address = 0x802"), r"key 'address': 0x802 is not longword"),
    (("words = [1, 2, 0xffffffff]", "words = [1, -2]"), r"key 'words'"),
])
def test_errors_name_file_and_key(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    old, new = edit
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ManifestError, match=message) as err:
        parse_manifest(path)
    assert str(err.value).startswith(str(path))


def test_not_toml_and_missing(tmp_path: Path) -> None:
    path = _write(tmp_path, "[ports\n")
    with pytest.raises(ManifestError, match="not valid TOML"):
        parse_manifest(path)
    with pytest.raises(ManifestError, match="no such manifest file"):
        parse_manifest(tmp_path / "none.toml")


# checks that need the chip's sizes happen in the loader, before the core is touched
@pytest.mark.parametrize(("edit", "message"), [
    (("size_words = 512", "size_words = 2048"), r"\[\[ring\]\] #1: key 'size_words': 2048 "
     r"is outside 128..1024"),
    (("number = 3", "number = 16"), r"ring 16 does not exist"),
    (("base_word = 0", "base_word = 3900"), r"exceed the 4096-word scratchpad"),
    (("channel = 1", "channel = 2\n"), r"SRAM channel 2 does not exist on ixp2400"),
    (("queue = 2", "queue = 64"), r"key 'queue': 64 is outside 0..63"),
    (("count = 16", "count = 300000"), r"past the 0x800000-byte SRAM channel"),
    (("chip = \"ixp2800\"", "chip = \"ixp2800x\""), r"key 'chip': chip config 'ixp2800x'"),
])
def test_loader_checks_against_chip(tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    text = GOOD.replace("chip = \"ixp2800\"", "chip = \"ixp2400\"") \
        if "ixp2400" in message else GOOD
    old, new = edit
    path = _write(tmp_path, text.replace(old, new, 1))
    with pytest.raises(ManifestError, match=message):
        build_from_manifest(parse_manifest(path))


def test_overlapping_rings_and_duplicate_freelists(tmp_path: Path) -> None:
    two_rings = GOOD + "[[ring]]\nnumber = 4\nbase_word = 256\nsize_words = 128\n"
    with pytest.raises(ManifestError, match=r"\[\[ring\]\] #2: ring overlaps \[\[ring\]\] #1"):
        build_from_manifest(parse_manifest(_write(tmp_path, two_rings)))
    fl = GOOD[GOOD.index("[[freelist]]"):GOOD.index("[[memory]]")]
    with pytest.raises(ManifestError, match=r"#2: channel 1 queue 2 is already the freelist"):
        build_from_manifest(parse_manifest(_write(tmp_path, GOOD + fl)))
