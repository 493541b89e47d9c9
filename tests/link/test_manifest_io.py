"""The manifest's additions for linked programs (docs/link.md): memory from .bin files,
`local` memory, [overrides], the [program] table; writing a manifest back to TOML; and
platforms as data.  Each error names the file and the key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npkit.base.errors import NpkitError
from npkit.link import (
    LinkError,
    ManifestError,
    PlatformError,
    for_ports,
    load_platform,
    parse_manifest,
    platform_names,
    write_manifest,
)
from npkit.sim.loader import build_from_manifest, chip_config_for

L2WIRE = Path(__file__).resolve().parents[2] / "examples" / "l2wire" / "l2wire.toml"

BASE = """
chip = "ixp2800"
[ports]
0 = "10gbe"
1 = "1gbe"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.toml"
    path.write_text(BASE + text, encoding="utf-8")
    return path


def test_memory_from_a_file_is_big_endian_words(tmp_path: Path) -> None:
    words = np.array([0x01020304, 0xA0B0C0D0, 7], dtype=np.uint32)
    words.astype(">u4").tofile(tmp_path / "table.bin")
    path = write(tmp_path, '[[memory]]\nunit = "sram1"\naddress = 0x40\nfile = "table.bin"\n'
                 '[[memory]]\nunit = "dram"\naddress = 0x10\nfile = "table.bin"\n'
                 '[[memory]]\nunit = "local"\nmes = [2, 5]\naddress = 8\nwords = [9, 10]\n')
    manifest = parse_manifest(path)
    assert list(manifest.memory[0].words) == list(words)
    chip = build_from_manifest(manifest).chip
    assert list(chip.sram(1)[0x10:0x13]) == list(words)
    assert bytes(chip.dram()[0x10:0x14]) == b"\x01\x02\x03\x04"   # the chip's byte order
    for me in (2, 5):
        assert list(chip.local_memory(me)[2:4]) == [9, 10]
    assert list(chip.local_memory(3)[2:4]) == [0, 0]


@pytest.mark.parametrize("entry, message", [
    ('unit = "sram0"\naddress = 0\nfile = "nope.bin"', "key 'file': 'nope.bin' not found"),
    ('unit = "sram0"\naddress = 0\nfile = "odd.bin"', "not a whole number of 32-bit words"),
    ('unit = "sram0"\naddress = 0\nfile = "odd.bin"\nwords = [1]', "exactly one of 'words'"),
    ('unit = "local"\naddress = 0\nwords = [1]', "key 'mes'"),
    ('unit = "scratch"\nmes = [1]\naddress = 0\nwords = [1]', "key 'mes'"),
])
def test_memory_errors_name_the_key(tmp_path: Path, entry: str, message: str) -> None:
    (tmp_path / "odd.bin").write_bytes(b"\x00" * 6)
    with pytest.raises(ManifestError, match=message) as err:
        parse_manifest(write(tmp_path, f"[[memory]]\n{entry}\n"))
    assert "run.toml: [[memory]] #1" in str(err.value)
    assert isinstance(err.value, NpkitError)


def test_overrides_change_the_chip(tmp_path: Path) -> None:
    manifest = parse_manifest(write(tmp_path, "[overrides.sram]\nchannel_bytes = 0x4000000\n"))
    assert chip_config_for(manifest).sram_channel_bytes == 0x4000000
    assert [p.kind for p in chip_config_for(manifest).ports] == ["10gbe", "1gbe"]


def test_a_bad_program_table_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"\[program\]: key 'fwd_mes_per_port'"):
        parse_manifest(write(tmp_path, '[program]\nwindow_bytes = 8\nrx_mes = [0]\n'
                             'fwd_mes = [1]\ntx_mes = [2]\ndrop_counter_base = 0\n'))
    with pytest.raises(ManifestError, match="unknown media number"):
        parse_manifest(write(tmp_path, "[program]\nmedia = {no_such = 1}\n"))


def test_a_hand_written_manifest_survives_writing(tmp_path: Path) -> None:
    """l2wire's manifest (sources, rings, freelists) written elsewhere reads back equal
    and still loads: sources outside the folder are named by absolute path."""
    original = parse_manifest(L2WIRE)
    again = parse_manifest(write_manifest(original, tmp_path / "copy"))
    assert (again.chip, again.seed, again.ports, again.rings, again.freelists) == \
        (original.chip, original.seed, original.ports, original.rings, original.freelists)
    assert [(s.path.resolve(), s.mes) for s in again.images] == \
        [(s.path.resolve(), s.mes) for s in original.images]
    assert build_from_manifest(again).chip is not None


def test_platforms_are_data() -> None:
    assert {"ixp2800-2x10gbe", "ixp2800-4x10gbe", "ixp2800-2xoc192pos"} <= \
        set(platform_names())
    for name in platform_names():
        platform = load_platform(name)
        assert platform.name == name and len(platform.ports) in (2, 4)
        assert platform.media.rx.is_file() and platform.media.tx.is_file()
        assert 1 <= platform.fwd_mes_per_port <= platform.max_fwd_mes_per_port
    assert for_ports(("1gbe", "oc192pos")).ports == ("1gbe", "oc192pos")


def test_platform_errors(tmp_path: Path) -> None:
    with pytest.raises(PlatformError, match="unknown platform 'nope'"):
        load_platform("nope")
    good = (load_platform().path or Path()).read_text(encoding="utf-8")
    bad = tmp_path / "platform.toml"
    bad.write_text(good.replace('mes = 16', 'mes = 16\ncolour = "blue"'), encoding="utf-8")
    with pytest.raises(LinkError, match="unknown key 'colour'"):
        load_platform(bad)
    bad.write_text(good.replace('"10gbe", "10gbe"', '"10gbe", "token-ring"'),
                   encoding="utf-8")
    with pytest.raises(LinkError, match="unknown port kind"):
        load_platform(bad)
