"""`npkit debug` (the REPL over runtime.debugger) and `npkit run --coverage`, in-process:
a scripted session stops at the planted bad-checksum frame of examples/router/sample.pcap,
shows it with scapy, goes back to a checkpoint; bad commands are one-line errors; the
coverage file is lcov that genhtml renders (when lcov is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cli_invoke import invoke

from npkit.runtime.coverage import parse_lcov

ROOT = Path(__file__).resolve().parents[2]
ROUTER = str(ROOT / "examples" / "router" / "router.mbl")
SAMPLE = "0=" + str(ROOT / "examples" / "router" / "sample.pcap")
ROUTES = str(ROOT / "examples" / "router" / "routes.txt")


def test_a_scripted_session_finds_the_bad_checksum_frame(tmp_path: Path) -> None:
    script = tmp_path / "session.txt"
    script.write_text("break drop bad_checksum\ncontinue\npacket\ndrops\ncheckpoint\n"
                      "steppacket\nreverse\nfrobnicate\nbreak nosuch.mbl:3\nprint q9\n"
                      f"coverage {tmp_path / 'cov.info'}\nquit\n")
    code, out = invoke("debug", ROUTER, "--in", SAMPLE, "--routes", ROUTES, "--coverage",
                       "-x", str(script))
    assert code == 0, out
    assert "(npkit) continue\ndrop [breakpoint 1] at ME" in out
    assert "chksum    = 0x1234" in out          # sample.pcap's bad checksum (make_sample.py)
    assert "bad_checksum 1" in out
    assert "back at checkpoint 1" in out
    assert "error: unknown command 'frobnicate'" in out
    assert "error: nosuch.mbl:3: no loaded image has code from a file named" in out
    assert "error: unknown register 'q9'" in out
    assert "ipv4_fwd.mbl:" in out and (tmp_path / "cov.info").is_file()


def test_run_coverage_writes_lcov(tmp_path: Path) -> None:
    info = tmp_path / "router.info"
    code, out = invoke("run", ROUTER, "--in", SAMPLE, "--routes", ROUTES, "--coverage",
                       str(info))
    assert code == 0, out
    assert "coverage: " in out and info.is_file()   # (rich wraps the long path)
    lines = parse_lcov(info.read_text())
    v4 = next(v for f, v in lines.items() if f.endswith("microblocks/ipv4_fwd.mbl"))
    assert v4[69] > 0                          # every IPv4 frame passes the ethertype check
    if shutil.which("genhtml"):
        done = subprocess.run(["genhtml", str(info), "-o", str(tmp_path / "html")],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "html" / "index.html").is_file()


def test_debug_rejects_other_files(tmp_path: Path) -> None:
    other = tmp_path / "x.pcap"
    other.write_bytes(b"")
    code, out = invoke("debug", str(other))
    assert code == 1 and "takes an MBL program (.mbl) or a manifest" in out


def test_the_documented_ttl_session_finds_the_planted_bug() -> None:
    """docs/debugging.md's walk-through: examples/ttl_bug/session.txt stops at line 43
    with the TTL-1 frame, shows the one-instruction check, and steps past it into the
    route lookup (the destination address made the key, then the Poptrie walk)."""
    bug = ROOT / "examples" / "ttl_bug"
    code, out = invoke("debug", str(bug / "router.mbl"), "--in", SAMPLE, "--routes", ROUTES,
                       "-x", str(bug / "session.txt"))
    assert code == 0, out
    assert out.count("(npkit) continue\nbreakpoint [breakpoint 1] at ME") == 5
    assert "IP.dst = 10.1.2.3, ttl = 1" in out
    assert "=>  1612  br=byte[$$5, 1, 0x0, b_then_10_i_i#]" in out
    assert "$$5 = 0x111" in out                          # TTL 1, protocol 17
    listing = out.split("(npkit) list 4\n")[1].splitlines()
    assert "lpm_poptrie.mbl:94" in listing[3]            # the walk right after the key
    step = out.split("(npkit) step\n")[1]
    assert "pc 1613 (b_else_10_i_i)" in step.splitlines()[1]   # fell through, not taken
    assert "back at checkpoint 1, cycle 3,377" in out


def test_a_conditional_breakpoint_from_the_repl(tmp_path: Path) -> None:
    script = tmp_path / "session.txt"
    script.write_text("break ipv4_fwd.mbl:68 if packet.ttl == 1\ninfo\ncontinue\n"
                      "packet ttl\ncondition 1 ttl is 1\ncondition 1\ninfo\nquit\n")
    code, out = invoke("debug", ROUTER, "--in", SAMPLE, "--routes", ROUTES, "-x", str(script))
    assert code == 0, out
    assert "breakpoint 1: line ipv4_fwd.mbl:68 if packet.ttl == 1 (pc" in out
    assert "(npkit) continue\nbreakpoint [breakpoint 1] at ME" in out
    assert "ttl = 1" in out or "ttl: 1" in out           # sample.pcap's TTL-1 frame
    assert "error: condition 'ttl is 1': expected NAME OP VALUE" in out
    last_info = out.rsplit("(npkit) info\n", 1)[1]
    assert last_info.startswith("1: line ipv4_fwd.mbl:68 (pc")          # condition removed
