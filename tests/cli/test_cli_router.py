"""`npkit router check` and `npkit router run --program router4`: the router4 microcode (the
baseline) with its control plane, driven from the command line; output pcaps checked with
scapy.  The MBL router on both targets: test_cli_router_targets.py."""

from __future__ import annotations

from cli_invoke import invoke
from scapy.layers.inet import ICMP, IP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap

from npkit.cli.router import CONFIGS

ROUTER4_CONFIG = CONFIGS["router4"]
RUN4 = ("router", "run", "--program", "router4")


def test_check_lists_the_ports():
    code, out = invoke("router", "check", "--program", "router4", str(ROUTER4_CONFIG))
    assert code == 0, out
    assert "198.51.100.1/24" in out and "is ok" in out


def test_run_answers_exceptions_and_applies_updates(tmp_path):
    updates = tmp_path / "updates.txt"
    updates.write_text("# a /16 moves to port 1, then back\n"
                       "5 add 10.1.0.0/16 via 198.51.100.2\n"
                       "20 delete 10.1.0.0/16\n")
    out0 = tmp_path / "out0.pcap"
    code, out = invoke(*RUN4, "--updates", str(updates), "--count", "200",
                        "--out", f"0={out0}")
    assert code == 0, out
    assert "2 route changes applied" in out
    assert "sent.icmp4.time_exceeded 8" in out and "sent.icmp4.echo_reply 8" in out
    frames = [Ether(bytes(p)) for p in rdpcap(str(out0))]
    replies = [f for f in frames if ICMP in f and f[IP].src == "192.0.2.1"]
    kinds = sorted(f[ICMP].type for f in replies)
    assert kinds == [0] * 4 + [11] * 4                    # port 0's own pings and TTL-1s
    assert all(f.dst == "02:00:00:00:10:02" for f in replies)


def test_bad_update_lines_name_file_and_line(tmp_path):
    updates = tmp_path / "updates.txt"
    updates.write_text("5 add 10.1.0.0/16 via 198.51.100.2\n7 replace 10.1.0.0/16\n")
    code, out = invoke(*RUN4, "--updates", str(updates))
    assert code == 1 and f"{updates}:2: expected" in out
    updates.write_text("5 add 10.1.0.1/16 via 198.51.100.2\n")
    code, out = invoke(*RUN4, "--updates", str(updates))
    assert code == 1 and f"{updates}:1:" in out and "host bits" in out


def test_an_update_the_control_plane_refuses_is_reported(tmp_path):
    updates = tmp_path / "updates.txt"
    updates.write_text("5 delete 10.99.0.0/16\n")
    code, out = invoke(*RUN4, "--updates", str(updates), "--count", "50")
    assert code == 1 and f"{updates}:1: " in " ".join(out.split()), out


def test_generated_traffic_options_with_input_files_are_errors(tmp_path) -> None:
    from scapy.all import UDP, wrpcap

    wrpcap(str(tmp_path / "in.pcap"), [Ether() / IP(dst="10.0.0.1") / UDP()])
    code, out = invoke(*RUN4, "--in", f"0={tmp_path / 'in.pcap'}", "--count", "5")
    assert code == 1 and "--count: only for the generated traffic" in out, out
