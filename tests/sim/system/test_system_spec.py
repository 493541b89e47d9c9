"""System files (sim/systems/*.toml, npkit.sim.system.SystemSpec): the shipped systems, the
arrangement the published one derives, and errors that name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.base.errors import NpkitError
from npkit.sim.system import Endpoint, SystemConfigError, SystemSpec

OC192_BPS = 9.58464e9

INGRESS_EGRESS = """
name = "t"
[[chip]]
name = "a"
config = "ixp2800"
platform = "ixp2800-2xoc192pos"
ports = 2
[[chip]]
name = "b"
config = "ixp2800"
platform = "ixp2800-2xoc192pos"
ports = 2
[[link]]
name = "ab"
kind = "csix"
from = "a:1"
to = "b:0"
bits = 16
clock_hz = 400e6
ddr = true
overhead_bytes = 8
latency_ns = 100
[link.flow_control]
threshold = 0.75
queue_bytes = 4096
[[port]]
name = "pos0"
kind = "oc192pos"
rx = "a:0"
tx = "b:1"
[port.framer]
kind = "ixf18101"
rx_delay_ns = 500
tx_delay_ns = 500
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "system.toml"
    path.write_text(text)
    return path


def test_shipped_systems_load() -> None:
    assert {"single-ixp2800", "dual-ixp2800-npf", "ixp2800-ingress-egress"} <= \
        set(SystemSpec.presets())
    for name in SystemSpec.presets():
        spec = SystemSpec.load(name)
        assert spec.name == name
        for chip in spec.chips:
            cfg = spec.chip_config(chip.name)
            assert len(cfg.ports) == chip.ports


def test_published_system_each_chip_receives_one_port_and_transmits_the_other() -> None:
    spec = SystemSpec.load("dual-ixp2800-npf")
    assert [c.name for c in spec.chips] == ["east", "west"]
    assert not spec.links, "every MSF interface goes to a framer: no data link between chips"
    pos0, pos1 = spec.ports
    assert (pos0.rx, pos0.tx) == (Endpoint("east", 0), Endpoint("west", 1))
    assert (pos1.rx, pos1.tx) == (Endpoint("west", 0), Endpoint("east", 1))
    for load in spec.interface_loads():
        assert load.offered_bps == pytest.approx(OC192_BPS), load
        assert not load.over


def test_one_chip_for_both_ports_oversubscribes_one_msf_interface() -> None:
    """The derivation in docs/system.md: 2 x 9.58 Gb/s do not fit one 16-bit interface,
    even at 500 MHz DDR (16 Gb/s)."""
    spec = SystemSpec.load("single-ixp2800")
    loads = spec.interface_loads()
    assert all(load.over for load in loads)
    assert all(load.offered_bps == pytest.approx(2 * OC192_BPS) for load in loads)
    assert 2 * OC192_BPS > 16 * 500e6 * 2


def test_ingress_egress_link_ports() -> None:
    spec = SystemSpec.load("ixp2800-ingress-egress")
    (link,) = spec.links
    assert link.rate_bps == 16 * 400e6 * 2
    ingress = spec.chip_config("ingress").ports
    egress = spec.chip_config("egress").ports
    assert (ingress[1].rate_bps, ingress[1].overhead_bytes) == (link.rate_bps, 8)
    assert ingress[0].kind == egress[1].kind == "oc192pos"


def test_overrides_reach_the_chip_config(tmp_path: Path) -> None:
    text = INGRESS_EGRESS.replace('name = "b"\n',
                                  'name = "b"\noverrides = { dram = { latency = 999 } }\n')
    spec = SystemSpec.load(write(tmp_path, text))
    assert spec.chip_config("b").raw["dram"]["latency"] == 999
    assert spec.chip_config("a").raw["dram"]["latency"] != 999


ERRORS = [  # (text, replacement, what the message says)
    ('kind = "csix"', 'kind = "pci"',
     "[[link]] #0 (ab): key 'kind': 'pci' is not one of spi4, csix"),
    ('from = "a:1"', 'from = "c:1"', "[[link]] #0 (ab): key 'from': no chip named 'c'"),
    ('to = "b:0"', 'to = "b:7"', "[[link]] #0 (ab): key 'to': chip 'b' has ports 0..1, got '7'"),
    ('to = "b:0"', 'to = "a:0"', "[[link]] #0 (ab): a link joins two chips"),
    ("clock_hz = 400e6", "clock_hz = -1",
     "[[link]] #0 (ab): key 'clock_hz': expected a positive number"),
    ("threshold = 0.75", "threshold = 0.6", "[[link]] #0 (ab) [flow_control]: key 'threshold'"),
    ("queue_bytes = 4096\n", "queue_bytes = 4096\nxon = 1\n", "[flow_control]: unknown key 'xon'"),
    ('platform = "ixp2800-2xoc192pos"\nports = 2\n[[link]]',
     'platform = "nowhere"\nports = 2\n[[link]]',
     "[[chip]] #1 (b): key 'platform': no link platform 'nowhere'"),
    ('rx = "a:0"', 'rx = "a:1"', "chip port a:1 transmits link 'ab' and also receives 'pos0'"),
    ('tx = "b:1"', 'tx = "b:0"', "chip port b:0 receives link 'ab' and also transmits to 'pos0'"),
    ("rx_delay_ns = 500", "rx_delay_ns = -5", "[[port]] #0 (pos0) [framer]: key 'rx_delay_ns'"),
    ('kind = "oc192pos"', 'kind = "oc48"', "[[port]] #0 (pos0): key 'kind': unknown port kind"),
    ('name = "ab"', 'name = "a"', "[[link]] #0: key 'name': 'a' is used twice"),
]


@pytest.mark.parametrize(("old", "new", "message"), ERRORS)
def test_errors_name_the_file_and_the_key(tmp_path: Path, old: str, new: str,
                                          message: str) -> None:
    assert old in INGRESS_EGRESS
    path = write(tmp_path, INGRESS_EGRESS.replace(old, new, 1))
    with pytest.raises(SystemConfigError) as err:
        SystemSpec.load(path)
    assert str(err.value).startswith(str(path) + ": "), err.value
    assert message in str(err.value)
    assert isinstance(err.value, NpkitError)


def test_two_users_of_one_port_direction(tmp_path: Path) -> None:
    text = INGRESS_EGRESS + """
[[port]]
name = "pos1"
kind = "oc192pos"
rx = "a:0"
[port.framer]
kind = "none"
rx_delay_ns = 0
tx_delay_ns = 0
"""
    with pytest.raises(SystemConfigError, match=r"\[\[port\]\] #1 \(pos1\): key 'rx': chip "
                       r"port a:0 already receives from pos0"):
        SystemSpec.load(write(tmp_path, text))


def test_unknown_system_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(SystemConfigError, match="no such preset or file"):
        SystemSpec.load("triple-ixp2800")
    with pytest.raises(SystemConfigError, match="not valid TOML"):
        SystemSpec.load(write(tmp_path, "name = "))
    with pytest.raises(SystemConfigError, match="no \\[\\[chip\\]\\]"):
        SystemSpec.load(write(tmp_path, 'name = "x"'))
