"""ChipConfig and Port: loading, validation messages, line-rate arithmetic (FACTS.md)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from npkit.sim import ChipConfig, ConfigError, Port

CHIPS = Path(__file__).resolve().parents[3] / "sim" / "chips"


def test_presets_are_listed() -> None:
    assert {"ixp2800", "ixp2400"} <= set(ChipConfig.presets())


@pytest.mark.parametrize("name", ["ixp2800", "ixp2400"])
def test_preset_values_match_the_toml(name: str) -> None:
    raw = tomllib.loads((CHIPS / f"{name}.toml").read_text())
    cfg = ChipConfig.load(name)
    assert cfg.name == name
    assert cfg.me_numbers == raw["me"]["numbers"]
    assert cfg.clock_hz == raw["me"]["clock_hz"]
    assert cfg.sram_channels == raw["sram"]["channels"]
    assert cfg.control_store_words == raw["me"]["control_store_words"]


def test_ixp2800_facts() -> None:
    cfg = ChipConfig.load("ixp2800")
    assert cfg.me_count == 16
    assert cfg.me_numbers[8] == 0x10
    assert cfg.clock_hz == 1.4e9
    assert cfg.control_store_words == 8192


def test_load_by_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text((CHIPS / "ixp2400.toml").read_text())
    cfg = ChipConfig.load(path)
    assert cfg.source == str(path)
    assert cfg.me_count == 8


def test_unknown_name_lists_presets() -> None:
    with pytest.raises(ConfigError, match="ixp9999.*presets: ixp2400, ixp2800"):
        ChipConfig.load("ixp9999")


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = (CHIPS / "ixp2800.toml").read_text()
    assert old in text
    path = tmp_path / "chip.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(("old", "new", "message"), [
    ("channels = 4 ", "channels = \"four\" ", r"\[sram\] channels: expected a positive integer"),
    ("latency = 150", "", r"\[sram\] missing key 'latency'"),
    ("element_bytes = 128", "element_bytes = 100", r"\[msf\] element_bytes: must be 64, 128"),
    ("contexts = 8", "contexts = 6", r"\[me\] contexts: must be 4 or 8"),
    ("clock_hz = 1.4e9", "clock_hz = -1.0", r"\[me\] clock_hz: expected a positive number"),
    ("[hash]", "[hashes]", r"missing section \[hash\]"),
    ("0x10, 0x11", "0x10, 0x10", r"duplicate ME numbers"),
    ("exception_cycles = 2000", "exception_cycles = 2000\nroute_update_cycles = 4000",
     r"\[xscale\] route_update_cycles is no longer read: .* counts"),
])
def test_bad_values_name_file_section_and_key(tmp_path: Path, old: str, new: str,
                                              message: str) -> None:
    path = _variant(tmp_path, old, new)
    with pytest.raises(ConfigError, match=message) as err:
        ChipConfig.load(path)
    assert str(path) in str(err.value)


def test_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("name = \n")
    with pytest.raises(ConfigError, match=f"{path}: not valid TOML"):
        ChipConfig.load(path)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="no such preset or file"):
        ChipConfig.load("/nonexistent/chip.toml")


# ---------------------------------------------------------------- ports
def test_ten_gbe_line_rate_matches_facts() -> None:
    # FACTS.md section 2: 64 B -> 14,880,952 pps; 1518 B -> 812,744 pps on 10GbE
    port = Port.ethernet_10g()
    for size, pps in ((64, 14_880_952), (1518, 812_744), (256, 4_528_986)):
        seconds = port.frame_cycles(size, 1.0)  # with a 1 Hz clock, cycles are seconds
        assert round(1 / seconds) == pps


def test_one_gbe_is_a_tenth() -> None:
    assert Port.ethernet_1g().frame_cycles(64, 1.4e9) == pytest.approx(
        10 * Port.ethernet_10g().frame_cycles(64, 1.4e9))


def test_oc192_pos_matches_facts() -> None:
    # FACTS.md: OC-192 POS, FCS-32, 40-byte IP packets -> 24.451 Mpps, 1500 -> 0.794; the
    # frame is the IP packet behind the 4-byte PPP header (RFC 1662 address, control, protocol)
    port = Port.oc192_pos()
    assert 1 / port.frame_cycles(4 + 40, 1.0) / 1e6 == pytest.approx(24.451, abs=5e-4)
    assert 1 / port.frame_cycles(4 + 1500, 1.0) / 1e6 == pytest.approx(0.794, abs=5e-4)


def test_port_kinds_and_custom() -> None:
    assert Port.from_kind("10GbE") == Port.ethernet_10g()
    assert Port.from_kind("oc192pos").overhead_bytes == 5
    custom = Port.custom(2.5e9, 12, rx_freelist=3)
    assert custom.to_core_dict(0) == {"rate_bps": 2.5e9, "overhead_bytes": 12,
                                      "rx_freelist": 3}
    with pytest.raises(ConfigError, match="unknown port kind 'fddi'"):
        Port.from_kind("fddi")
    with pytest.raises(ConfigError, match="rate_bps must be > 0"):
        Port.custom(0, 20)


def test_to_core_dict_adds_ports_with_default_freelists() -> None:
    cfg = ChipConfig.load("ixp2800")
    cfg.ports = [Port.ethernet_10g(), Port.oc192_pos(), Port.ethernet_1g(rx_freelist=0)]
    core = cfg.to_core_dict()
    assert [p["rx_freelist"] for p in core["ports"]] == [0, 1, 0]
    assert core["ports"][1]["rate_bps"] == 9.58464e9
    assert core["sram"] == cfg.raw["sram"]
    core["sram"]["channels"] = 1  # a copy: the config is not changed
    assert cfg.sram_channels == 4


def test_me_checks_and_labels() -> None:
    cfg = ChipConfig.load("ixp2800")
    assert cfg.check_me(15) == 15
    with pytest.raises(ConfigError, match="ME 16 does not exist on ixp2800"):
        cfg.check_me(16)
    assert cfg.me_label(1) == "ME 0x01"
    assert cfg.me_label(8) == "ME 0x10 (index 8)"
    small = ChipConfig.load("ixp2400")
    with pytest.raises(ConfigError, match="MEs are numbered 0..7"):
        small.check_me(8)
