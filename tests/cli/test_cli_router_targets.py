"""`npkit router run CONFIG --target native|chip`: the MBL dual-stack router with its
control plane from one config (issue 16 item 3).

The acceptance check: on the shipped sample capture both targets transmit the same frames
on every port, in the same order, ICMP included; the frames themselves are checked against
scapy (what the sample's generator says each frame becomes).  Then the errors: a missing or
bad pcap, a port the config does not have, values out of range at file:line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_invoke import invoke
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6TimeExceeded, IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Padding
from scapy.utils import rdpcap

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "router" / "control.toml"
SAMPLE = ROOT / "examples" / "router" / "sample.pcap"
PORTS = range(4)


def run_sample(tmp_path: Path, target: str, *extra: str) -> dict[int, list[bytes]]:
    outs = {port: tmp_path / f"{target}-out{port}.pcap" for port in PORTS}
    code, out = invoke("router", "run", str(CONFIG), "--target", target,
                       "--in", f"0={SAMPLE}", *(f"--out={p}={path}" for p, path in outs.items()),
                       *extra)
    assert code == 0, out
    return {port: [bytes(p) for p in rdpcap(str(path))] for port, path in outs.items()}


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, list[bytes]]]:
    tmp = tmp_path_factory.mktemp("router-targets")
    return {target: run_sample(tmp, target) for target in ("native", "chip")}


def test_the_sample_is_what_its_generator_writes(tmp_path: Path) -> None:
    import runpy

    make = runpy.run_path(str(ROOT / "examples" / "router" / "make_sample.py"))
    make["main"](tmp_path / "sample.pcap")
    assert (tmp_path / "sample.pcap").read_bytes() == SAMPLE.read_bytes()


def test_chip_and_native_transmit_the_same_frames_per_port_in_order(both) -> None:
    for port in PORTS:
        assert both["chip"][port] == both["native"][port], f"port {port}"


def test_the_outputs_are_the_frames_the_sample_asks_for(both) -> None:
    out = {port: [Ether(f) for f in frames] for port, frames in both["native"].items()}
    # port 0: the IPv4 answers to 192.0.2.2: echo reply, time exceeded, fragmentation needed
    icmp = [(f[IP].src, f[IP].dst, f[ICMP].type, f[ICMP].code) for f in out[0][:3]]
    assert icmp == [("192.0.2.1", "192.0.2.2", 0, 0), ("192.0.2.1", "192.0.2.2", 11, 0),
                    ("192.0.2.1", "192.0.2.2", 3, 4)]
    assert out[0][2][ICMP].nexthopmtu == 1280
    # then the answer to the ARP request (the chip resolves as natively); the frame for
    # another station's MAC gets nothing
    (arp,) = out[0][3:]
    assert (arp[ARP].op, arp[ARP].psrc, arp[ARP].hwsrc, arp.dst) == (
        2, "192.0.2.1", "02:00:00:00:00:10", "02:00:00:00:10:02")
    # port 1 (the upstream): default route, ::/0, the IPv6 answers, then the TTL-2 packet
    kinds = [f.lastlayer().name if IPv6 not in f else type(f[IPv6].payload).__name__
             for f in out[1]]
    assert [f.dst for f in out[1]] == ["02:00:00:00:11:02"] * 5
    assert out[1][0][IP].dst == "198.18.0.1" and out[1][0][IP].ttl == 63
    assert out[1][1][IPv6].dst == "2001:db8:ffff::1" and out[1][1][IPv6].hlim == 63
    assert ICMPv6EchoReply in out[1][2] and ICMPv6TimeExceeded in out[1][3], kinds
    assert out[1][4][IP].ttl == 1 and TCP in out[1][4]
    assert [(f[IP].dst if IP in f else f[IPv6].dst) for f in out[2]] == \
        ["10.1.2.3", "2001:db8:100::7", "10.1.2.3"]
    assert bytes(out[2][2][IP].payload).endswith(b"trailer") and Padding not in out[2][2]
    assert [f[IP].dst for f in out[3]] == ["172.16.5.5", "192.0.2.130"]
    assert all(UDP in f or TCP in f for f in out[3])
    for frames in out.values():       # every checksum the router wrote, as scapy computes it
        for f in frames:
            for layer, name in ((IP, "chksum"), (ICMP, "chksum"), (ICMPv6EchoReply, "cksum"),
                                (ICMPv6TimeExceeded, "cksum")):
                if layer in f:
                    assert getattr(f[layer], name) == recomputed(f, layer, name), f.summary()


def recomputed(frame: Ether, layer: type, name: str) -> int:
    again = Ether(bytes(frame))
    delattr(again[layer], name)
    return getattr(Ether(bytes(again))[layer], name)


def test_updates_apply_on_both_targets(tmp_path: Path) -> None:
    for target in ("native", "chip"):
        code, out = invoke("router", "run", "--target", target, "--count", "100",
                           "--updates", str(ROOT / "examples" / "router" / "updates.txt"))
        assert code == 0, out
        assert "4 route changes applied" in out, out


# --------------------------------------------------------------------------- errors
def fails(*args: str, naming: str) -> str:
    code, out = invoke("router", "run", *args)
    assert code == 1, out
    assert naming in " ".join(out.split()), out
    return out


def test_a_missing_pcap_is_named(tmp_path: Path) -> None:
    fails("--in", f"0={tmp_path / 'nope.pcap'}", naming="nope.pcap: no such packet file")


def test_a_bad_pcap_is_named_with_what_to_give(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_text("not a capture")
    for target in ("native", "chip"):
        fails("--target", target, "--in", f"0={bad}",
              naming=f"--in 0={bad}: {bad}: truncated pcap file header")


@pytest.mark.parametrize("option", ["--in", "--out"])
def test_a_port_the_config_lacks_is_an_error(tmp_path: Path, option: str) -> None:
    fails("--in", f"0={SAMPLE}", option, f"7={tmp_path / 'x.pcap'}" if option == "--out"
          else f"7={SAMPLE}",
          naming=f"port 7 is not a port of {CONFIG} (its ports: 0, 1, 2, 3)")


def config_with(tmp_path: Path, old: str, new: str) -> Path:
    text = CONFIG.read_text()
    assert text.count(old) >= 1, old
    path = tmp_path / "control.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def lines_of(path: Path, text: str) -> tuple[int, int]:
    """The line of `text` and the line of the [[table]] header it is in."""
    lines = path.read_text().splitlines()
    key = next(n for n, line in enumerate(lines, 1) if text in line)
    header = max(n for n, line in enumerate(lines[:key], 1) if line.startswith("[["))
    return key, header


@pytest.mark.parametrize(("old", "new", "message"), [
    ("mtu = 9000", "mtu = 70000", "MTU 70000 out of range"),
    ("index = 1\n", "index = 1024\n", "next-hop index 1024 is outside the nexthops memory"),
    ("port = 3\n", "port = 9\n", "port 9 out of range 0..3"),
])
def test_values_out_of_range_name_file_and_line(tmp_path: Path, old: str, new: str,
                                                message: str) -> None:
    path = config_with(tmp_path, old, new)
    out = fails(str(path), "--in", f"0={SAMPLE}", naming=message)
    key, header = lines_of(path, new.strip())     # the value's line or its table's
    assert f"Error: {path}:{key}:" in out or f"Error: {path}:{header}:" in out, out
    code, check = invoke("router", "check", str(path))
    assert code == 1 and message in " ".join(check.split()), check


def test_router4_runs_on_the_chip_only() -> None:
    fails("--program", "router4", "--target", "native", naming="router4 is microcode")


def test_cycles_are_for_the_chip() -> None:
    fails("--target", "native", "--cycles", "1000", naming="--cycles: only for --target chip")


def test_a_missing_or_unparsable_config_is_named(tmp_path: Path) -> None:
    fails(str(tmp_path / "none.toml"), naming=f"cannot read router config {tmp_path}")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[port]]\nport = 0\nmac = \n")
    fails(str(bad), naming=f"{bad}:3")


def test_check_defaults_to_the_mbl_router_config() -> None:
    code, out = invoke("router", "check")
    assert code == 0, out
    assert "2001:db8:0:11::1/64" in out and "is ok for router on the chip" in " ".join(
        out.split()), out


def test_inputs_of_several_ports_are_merged_by_capture_time(tmp_path: Path) -> None:
    from scapy.utils import wrpcap

    from npkit.runtime.router_targets import read_inputs

    def capture(name: str, times: list[float]) -> Path:
        packets = []
        for t in times:
            p = Ether() / IP(dst="198.18.0.1") / UDP(sport=round(t * 1e6))
            p.time = 1000 + t
            packets.append(p)
        wrpcap(str(tmp_path / name), packets)
        return tmp_path / name

    frames = read_inputs({0: capture("a.pcap", [0.0, 30e-6, 50e-6]),
                          2: capture("b.pcap", [10e-6, 30e-6])})
    assert [(f.port, round(f.time_s * 1e6)) for f in frames] == \
        [(0, 0), (2, 10), (0, 30), (2, 30), (0, 50)]
    assert [Ether(f.data)[UDP].sport for f in frames] == [0, 10, 30, 30, 50]
