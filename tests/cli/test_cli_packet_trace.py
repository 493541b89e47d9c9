"""`npkit run X.mbl --packet-trace/--trace-*/--utilisation` end to end (docs/cli.md,
docs/debugging.md "Per-packet traces"), the frames built and checked with scapy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_invoke import invoke
from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "router"
ROUTER, ROUTES = EXAMPLES / "router.mbl", EXAMPLES / "routes.txt"


def _frames(path: Path) -> list[Ether]:
    """10.0.0.x (routed to port 1) with every 4th frame's TTL 0 on arrival (an ICMP
    exception), UDP ports 100+i."""
    frames = [Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b")
              / IP(src="198.18.0.1", dst=f"10.0.0.{i}", ttl=1 if i % 4 == 0 else 30)
              / UDP(sport=100 + i, dport=9) / Raw(bytes(22)) for i in range(1, 13)]
    wrpcap(str(path), frames)
    return frames


def test_packet_trace_and_utilisation(tmp_path: Path) -> None:
    frames = _frames(tmp_path / "in.pcap")
    trace, chart = tmp_path / "packets.json", tmp_path / "util.png"
    code, out = invoke("run", str(ROUTER), "--routes", str(ROUTES),
                       "--in", f"0={tmp_path / 'in.pcap'}", "--out", f"1={tmp_path / 'o.pcap'}",
                       "--packet-trace", str(trace), "--utilisation", str(chart))
    assert code == 0, out
    sent = rdpcap(str(tmp_path / "o.pcap"))
    assert len(sent) == 9 and chart.stat().st_size > 1000
    assert "executing" in out and "idle" in out
    doc = json.loads(trace.read_text())
    assert doc["otherData"]["frames_written"] == len(frames)
    assert not doc["otherData"]["cap_reached"]
    events = doc["traceEvents"]
    departures = [e for e in events if e["ph"] == "X" and e["pid"] == 10_000
                  and e["tid"] == 3]        # port 1 out
    assert len(departures) == len(sent)
    verdicts = [e["args"] for e in events if e["ph"] == "i" and "verdict" in e["args"]]
    assert sorted(v["verdict"] for v in verdicts) == ["exception"] * 3 + ["forward"] * 9
    assert all(v["source"].startswith("ipv4_fwd.mbl:") for v in verdicts)
    assert {v["block"] for v in verdicts} == {"ipv4_fwd"}
    assert any(e["ph"] == "C" for e in events)


@pytest.mark.parametrize(("args", "written"), [
    (["--trace-verdict", "exception"], 3),
    (["--trace-flow", "proto=udp,sport=101"], 1),
    (["--trace-frames", "2:6"], 4),
    (["--trace-frames", "0:12", "--trace-sample", "4"], 3),
    (["--trace-ports", "1"], 0),
    (["--no-trace-commands"], 12),
])
def test_packet_trace_selection(tmp_path: Path, args: list[str], written: int) -> None:
    _frames(tmp_path / "in.pcap")
    trace = tmp_path / "packets.json"
    code, out = invoke("run", str(ROUTER), "--routes", str(ROUTES),
                       "--in", f"0={tmp_path / 'in.pcap'}", "--packet-trace", str(trace), *args)
    assert code == 0, out
    doc = json.loads(trace.read_text())
    assert doc["otherData"]["frames_written"] == written
    commands = [e for e in doc["traceEvents"] if e["ph"] == "b"]
    assert (not commands) == ("--no-trace-commands" in args or written == 0)


def test_packet_trace_cap_and_bad_options(tmp_path: Path) -> None:
    _frames(tmp_path / "in.pcap")
    trace = tmp_path / "packets.json"
    code, out = invoke("run", str(ROUTER), "--routes", str(ROUTES),
                       "--in", f"0={tmp_path / 'in.pcap'}", "--packet-trace", str(trace),
                       "--trace-cap", "12k")
    assert code == 0, out
    assert trace.stat().st_size <= 12_000
    assert json.loads(trace.read_text())["otherData"]["cap_reached"]
    assert "size cap was reached" in out
    for bad, message in ((["--trace-frames", "5:2"], "the range is empty"),
                         (["--trace-cap", "lots"], "expected a size"),
                         (["--trace-flow", "port=3"], "keys are")):
        code, out = invoke("run", str(ROUTER), "--routes", str(ROUTES),
                           "--in", f"0={tmp_path / 'in.pcap'}", "--packet-trace", str(trace),
                           *bad)
        assert code != 0 and message in out, out
    code, out = invoke("run", str(ROUTER), "--target", "native", "--packet-trace", str(trace),
                       "--utilisation", str(tmp_path / "u.png"))
    assert code == 1 and "--utilisation: only for the simulated chip" in out


def test_native_packet_trace(tmp_path: Path) -> None:
    """--target native --packet-trace: the selected frames' journeys block by block, with
    the verdict's MBL line (docs/debugging.md, "The native target's journey")."""
    frames = _frames(tmp_path / "in.pcap")
    trace = tmp_path / "native.json"
    code, out = invoke("run", str(ROUTER), "--target", "native", "--routes", str(ROUTES),
                       "--in", f"0={tmp_path / 'in.pcap'}", "--packet-trace", str(trace),
                       "--trace-frames", "2:", "--trace-verdict", "exception")
    assert code == 0, out
    doc = json.loads(trace.read_text())
    # TTL 1 on arrival: frames 4, 8 and 12 (port sequence numbers 3, 7, 11) go to the
    # control plane, at ipv4_fwd's TTL check
    expected = [i - 1 for i in range(1, len(frames) + 1) if i % 4 == 0]
    assert doc["otherData"]["frames_written"] == len(expected) and "3 exception" in out
    verdicts = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert [e["args"]["verdict"] for e in verdicts] == ["exception"] * len(expected)
    assert {e["args"]["block"] for e in verdicts} == {"ipv4_fwd"}
    lines = {e["args"]["source"] for e in verdicts}
    assert len(lines) == 1 and lines.pop().startswith("ipv4_fwd.mbl:")
    seqs = [e["args"]["seq"] for e in doc["traceEvents"]
            if e["ph"] == "X" and e["name"].startswith("frame")]
    assert seqs == expected


def test_pftrace_is_written_with_the_perfetto_package_and_refused_without(
        tmp_path: Path) -> None:
    _frames(tmp_path / "in.pcap")
    trace = tmp_path / "packets.pftrace"
    try:
        import perfetto.protos.perfetto.trace.perfetto_trace_pb2  # noqa: F401
        have = True
    except ImportError:
        have = False
    code, out = invoke("run", str(ROUTER), "--routes", str(ROUTES),
                       "--in", f"0={tmp_path / 'in.pcap'}", "--packet-trace", str(trace))
    if have:
        assert code == 0 and trace.stat().st_size > 1000, out
    else:
        assert code == 1 and "needs the perfetto package" in out and not trace.exists()
        assert "stopped:" not in out      # refused before the run
