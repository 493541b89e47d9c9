"""`npkit run` with no arguments: the showcase's printed figures agree with the pcaps it
writes, read back with scapy (PPP in HDLC framing), and its files are what it says."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cli_invoke import invoke


def _ip(frame):  # scapy packet -> IP or IPv6 layer under PPP
    from scapy.all import IP, PPP, IPv6

    ppp = frame[PPP]
    return ppp[IP] if IP in ppp else ppp[IPv6]


def test_showcase_figures_match_its_pcaps(tmp_path: Path) -> None:
    from scapy.all import IP, rdpcap

    out_dir = tmp_path / "show"
    code, out = invoke("run", "--out-dir", str(out_dir))
    assert code == 0, out
    sent = re.search(r"([\d,]+) sent, ([\d,]+) forwarded, ([\d,]+) lost", out)
    assert sent, out
    n_sent, n_fwd, n_lost = (int(g.replace(",", "")) for g in sent.groups())
    assert n_sent == n_fwd + n_lost and n_lost <= n_sent // 100  # 90 % load: (nearly) all
    assert re.search(r"busiest units: \S+ \d+ %", out) and "latency" in out
    ins = {p: rdpcap(str(out_dir / f"in-port{p}.pcap")) for p in (0, 1)}
    outs = {p: rdpcap(str(out_dir / f"out-port{p}.pcap")) for p in (0, 1)}
    assert sum(map(len, ins.values())) == n_sent
    assert sum(map(len, outs.values())) == n_fwd
    # full duplex: what came in on port p left by port 1 - p, hop limit one lower
    for port in (0, 1):
        offered = {(str(_ip(f).src), str(_ip(f).dst), bytes(_ip(f).payload)):
                   (_ip(f).ttl if IP in f else _ip(f).hlim) for f in ins[port]}
        for f in outs[1 - port]:
            ip = _ip(f)
            key = (str(ip.src), str(ip.dst), bytes(ip.payload))
            assert key in offered
            assert (ip.ttl if IP in f else ip.hlim) == offered[key] - 1
    trace = json.loads((out_dir / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert any(e.get("ph") == "X" for e in events)
    assert (out_dir / "pipeline.dot").read_text().startswith("digraph")


def test_showcase_rejects_options_it_does_not_take(tmp_path: Path) -> None:
    code, out = invoke("run", "--cycles", "10", "--out-dir", str(tmp_path))
    assert code == 1 and "--cycles" in out and "give a program" in out, out


def test_receive_drops_are_named_with_their_port() -> None:
    from npkit.cli.showcase import _drop_label

    assert _drop_label("rx.rx_dropped_rbuf_full1") == "rx_dropped_rbuf_full (port 1)"
    assert _drop_label("rx.rx_dropped_too_long12") == "rx_dropped_too_long (port 12)"
    assert _drop_label("drop.ttl_exceeded") == "drop.ttl_exceeded"
