"""`npkit run` / `npkit demo` end to end on the l2wire example, checked with scapy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap

from npkit.cli import main

MANIFEST = Path(__file__).resolve().parents[2] / "examples" / "l2wire" / "l2wire.toml"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result.exit_code, result.output


def _scapy_input(path: Path, count: int, gap_s: float) -> list[bytes]:
    packets = []
    for i in range(count):
        pkt = (Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b")
               / IP(src="198.18.0.1", dst="198.19.0.2") / UDP(sport=i, dport=9)
               / Raw(bytes([i]) * (18 + 50 * i)))
        pkt.time = 100 + i * gap_s
        packets.append(pkt)
    wrpcap(str(path), packets)
    return [bytes(p) for p in packets]


def test_run_manifest_pcap_in_pcap_out(tmp_path: Path) -> None:
    sent = _scapy_input(tmp_path / "in.pcap", 10, 3e-6)
    trace = tmp_path / "trace.json"
    counters = tmp_path / "counters.json"
    code, out = _invoke("run", str(MANIFEST), "--in", f"0={tmp_path / 'in.pcap'}",
                        "--out", f"1={tmp_path / 'out.pcap'}", "--pace", "timestamps",
                        "--trace", str(trace), "--counters-json", str(counters),
                        "--quiet-cycles", "20000")
    assert code == 0, out
    received = rdpcap(str(tmp_path / "out.pcap"))
    assert [bytes(p) for p in received] == sent  # l2wire forwards 0 -> 1 unchanged
    times = [float(p.time) for p in received]
    assert times == sorted(times) and times[0] > 0
    assert "ports" in out and "leak check" in out and "stopped:" in out
    doc = json.loads(trace.read_text())
    assert any(e["ph"] == "X" for e in doc["traceEvents"])
    data = json.loads(counters.read_text())
    assert data["ports"][0]["rx_frames"] == 10 and data["ports"][1]["tx_frames"] == 10
    assert all(r["initial"] == r["now"] for r in data["leak_check"])


def test_run_cycles_limit(tmp_path: Path) -> None:
    _scapy_input(tmp_path / "in.pcap", 10, 3e-6)
    code, out = _invoke("run", str(MANIFEST), "--in", f"0={tmp_path / 'in.pcap'}",
                        "--pace", "timestamps", "--cycles", "5000")
    assert code == 0, out
    assert "stopped: cycles after 5,000 cycles" in out


def test_run_port_out_of_range(tmp_path: Path) -> None:
    _scapy_input(tmp_path / "in.pcap", 1, 1e-6)
    code, out = _invoke("run", str(MANIFEST), "--in", f"5={tmp_path / 'in.pcap'}")
    assert code == 1
    assert "port 5 does not exist: the chip has ports 0..1" in out


def test_run_truncated_pcap_is_a_clean_error(tmp_path: Path) -> None:
    _scapy_input(tmp_path / "in.pcap", 4, 1e-6)
    data = (tmp_path / "in.pcap").read_bytes()
    (tmp_path / "in.pcap").write_bytes(data[:-3])
    code, out = _invoke("run", str(MANIFEST), "--in", f"0={tmp_path / 'in.pcap'}")
    assert code == 1
    assert "in.pcap: record 4: truncated packet data" in out


def test_run_asm_error_in_manifest_image(tmp_path: Path) -> None:
    (tmp_path / "bad.uc").write_text(".me 0\n    alu[a0, a1, frob, b2]\n")
    (tmp_path / "m.toml").write_text('[[image]]\nsource = "bad.uc"\n')
    code, out = _invoke("run", str(tmp_path / "m.toml"))
    assert code == 1
    assert f"{tmp_path / 'bad.uc'}:2:" in out and "^" in out


def test_run_fault_names_source_line(tmp_path: Path) -> None:
    (tmp_path / "f.uc").write_text(".me 2\n.reg $x\n.sig s\n    immed[a0, 0x8000]\n"
                                   "    scratch[read, $x, a0, 0, 1], ctx_swap[s]\n")
    code, out = _invoke("run", str(tmp_path / "f.uc"))
    assert code == 1
    assert "ME 0x02 ctx" in out and "f.uc:5:5" in out and "bad_address" in out


def test_run_image_on_chosen_mes(tmp_path: Path) -> None:
    (tmp_path / "spin.uc").write_text(".me 0\nloop#:\n    alu[a0, a0, +, 1]\n    br[loop#]\n")
    counters = tmp_path / "c.json"
    code, out = _invoke("run", str(tmp_path / "spin.uc"), "--me", "spin.uc=3,9",
                        "--cycles", "2000", "--counters-json", str(counters))
    assert code == 0, out
    mes = json.loads(counters.read_text())["mes"]
    ran = [i for i, me in enumerate(mes) if me["instructions"]]
    assert ran == [3, 9]
    assert "0x11" in out  # ME index 9 is hardware ME 0x11


def test_demo_accounts_for_every_packet(tmp_path: Path) -> None:
    code, out = _invoke("demo", "--out-dir", str(tmp_path), "--count", "40")
    ins = [rdpcap(str(tmp_path / f"in-port{p}.pcap")) for p in (0, 1)]
    outs = [rdpcap(str(tmp_path / f"out-port{p}.pcap")) for p in (0, 1)]
    assert [len(x) for x in ins] == [40, 40]
    sent = {bytes(p) for x in ins for p in x}
    got = [bytes(p) for x in outs for p in x]
    assert set(got) <= sent and len(got) == len(set(got))
    if len(got) == 80:
        assert code == 0 and "all 80 packets arrived" in out
    else:  # frames the chip dropped must be named by its drop counters
        assert code == 1 and f"{80 - len(got)} of 80 packets missing" in out
        assert "ports dropped:" in out


ROUTER = MANIFEST.parents[1] / "router" / "router.mbl"
ROUTES = MANIFEST.parents[1] / "router" / "routes.txt"


def test_mbl_program_reads_pcapng_on_both_targets(tmp_path: Path) -> None:
    """pcap and pcapng are read by one reader everywhere: an .mbl run takes pcapng like a
    manifest run, natively and on the chip, and both targets forward the same frames."""
    from scapy.all import wrpcapng

    frames = [Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b")
              / IP(src="198.18.0.1", dst=f"10.0.0.{i}", ttl=30) / UDP(sport=i, dport=9)
              / Raw(bytes(22)) for i in range(1, 9)]
    wrpcapng(str(tmp_path / "in.pcapng"), frames)
    outputs = {}
    for target in ("native", "chip"):
        code, out = _invoke("run", str(ROUTER), "--target", target, "--routes", str(ROUTES),
                            "--in", f"0={tmp_path / 'in.pcapng'}",
                            "--out", f"1={tmp_path / target}.pcap")
        assert code == 0, out
        outputs[target] = [bytes(p) for p in rdpcap(str(tmp_path / f"{target}.pcap"))]
    assert len(outputs["native"]) == len(frames)  # 10.0.0.0/8: next hop 1, port 1
    assert sorted(outputs["chip"]) == sorted(outputs["native"])
    assert all(Ether(p)[IP].ttl == 29 for p in outputs["chip"])


def test_native_target_needs_a_program(tmp_path: Path) -> None:
    code, out = _invoke("run", str(MANIFEST), "--target", "native")
    assert code == 1 and "--target native runs an MBL program" in out


@pytest.mark.parametrize(("args", "message"), [
    ([str(MANIFEST), "--routes", "r.txt", "--table", "t=f"],
     "--routes, --table: only for an MBL program (.mbl)"),
    ([str(ROUTER), "--target", "native", "--cycles", "5"],
     "--cycles: only for the simulated chip (--target chip)"),
    ([str(ROUTER), "--out-dir", "x"], "--out-dir: only for `npkit run` without a program"),
])
def test_options_a_run_would_not_use_are_errors(args: list[str], message: str) -> None:
    code, out = _invoke("run", *args)
    assert code == 1 and message in out, out
