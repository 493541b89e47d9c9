"""--emit stages, the click commands and the committed parser's freshness."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from npkit.cli import main
from npkit.compiler.mbl import compile_file, emit

PROGRAMS = Path(__file__).parent / "programs"
REPO = Path(__file__).resolve().parents[2]


def test_emit_stages():
    program = compile_file(PROGRAMS / "ipv4_ttl.mbl")
    ast_text = emit(program, "ast")
    assert "Microblock(name='ipv4_ttl')" in ast_text and "PacketView(header='ipv4_t')" in ast_text
    llvm_text = emit(program, "llvm")
    assert 'declare i8 @"npu.pkt.load8"' in llvm_text
    assert 'define void @"mbl.block.ipv4_ttl"' in llvm_text
    opt = emit(program, "llvm-opt")
    assert "define void @mbl.block.ipv4_ttl" in opt
    assert "mbl.fn.is_martian" not in opt  # functions are inlined away
    assert opt.count("alloca") <= 1  # locals became SSA values (a lookup keeps its out-slot)
    assert "<4 x" not in opt and "<2 x" not in opt  # no vectorization


def test_cli_build_and_check(tmp_path):
    runner = CliRunner()
    out = tmp_path / "x.ll"
    r = runner.invoke(main, ["build", str(PROGRAMS / "ipv4_ttl.mbl"), "--emit", "llvm",
                             "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "npu.pkt.load8" in out.read_text()
    bad = tmp_path / "bad.mbl"
    bad.write_text("block b {\n  let x: bit<8> = 300;\n  let y = q;\n}\n")
    r = runner.invoke(main, ["check", str(bad)])
    assert r.exit_code == 1
    assert f"{bad}:2:19: error: 300 does not fit in bit<8>" in r.output
    assert "       ^~~" in r.output  # caret under the literal
    assert f"{bad}:3:11: error: 'q' is not defined" in r.output
    assert "3 errors" in r.output
    assert "Traceback" not in r.output


@pytest.mark.skipif(shutil.which("java") is None, reason="needs java for the ANTLR tool")
def test_committed_parser_is_fresh():
    r = subprocess.run([str(REPO / "scripts" / "gen-parser"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("java") is None, reason="needs java for the ANTLR tool")
def test_gen_parser_check_fails_on_a_stale_parser(tmp_path):
    """A copy of the tree whose grammar gained a rule: --check must say stale and exit 1."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "gen-parser", tmp_path / "scripts")
    shutil.copytree(REPO / "compiler" / "mbl" / "parser", tmp_path / "compiler" / "mbl" / "parser",
                    ignore=shutil.ignore_patterns("__pycache__"))
    grammar = (REPO / "compiler" / "mbl" / "MBL.g4").read_text()
    (tmp_path / "compiler" / "mbl" / "MBL.g4").write_text(grammar + "\nunusedRule : ID ;\n")
    r = subprocess.run([str(tmp_path / "scripts" / "gen-parser"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "parser is stale" in r.stderr


def test_cli_run_native_with_pcaps(tmp_path):
    """`run` reads pcaps, fills a table, writes forwarded packets (checked with scapy)."""
    from scapy.all import IP, UDP, Ether, rdpcap, wrpcap

    eth = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    pkts = [eth / IP(src="1.2.3.4", dst="10.1.2.3", ttl=9) / UDP(),
            eth / IP(src="1.2.3.4", dst="99.0.0.1", ttl=9) / UDP(),
            eth / IP(src="1.2.3.4", dst="10.9.9.9", ttl=1) / UDP()]
    wrpcap(str(tmp_path / "in.pcap"), pkts)
    (tmp_path / "fib.txt").write_text("# prefix value\n10.0.0.0/8 1\n99.0.0.0/8 2\n")
    r = CliRunner().invoke(main, ["run", str(PROGRAMS / "ipv4_ttl.mbl"), "--target", "native",
                                  "--in", f"0={tmp_path}/in.pcap",
                                 "--out", f"1={tmp_path}/out1.pcap",
                                 "--table", f"fib4={tmp_path}/fib.txt"])
    assert r.exit_code == 0, r.output
    assert "forward port 1: 1" in r.output and "forward port 2: 1" in r.output
    assert "exception code 1: 1" in r.output
    out = rdpcap(str(tmp_path / "out1.pcap"))
    assert len(out) == 1 and out[0][IP].ttl == 8 and out[0][IP].dst == "10.1.2.3"
    bad = CliRunner().invoke(main, ["run", str(PROGRAMS / "ipv4_ttl.mbl"), "--target",
                                   "native", "--in", "zero"])
    assert bad.exit_code != 0 and "expected PORT=FILE" in bad.output
    (tmp_path / "junk.pcap").write_bytes(b"not a pcap")
    bad = CliRunner().invoke(main, ["run", str(PROGRAMS / "ipv4_ttl.mbl"), "--target",
                                    "native", "--in", f"0={tmp_path}/junk.pcap"])
    assert bad.exit_code == 1 and f"{tmp_path}/junk.pcap: " in bad.output
    assert "internal error" not in bad.output and "Traceback" not in bad.output


def test_docs_example_compiles_and_runs():
    """The complete example of docs/language.md checks clean and forwards a packet."""
    from scapy.all import IP, UDP, Ether, raw

    from npkit.compiler.mbl import NativeProgram, compile_source

    text = (REPO / "docs" / "language.md").read_text()
    example = text.split("```mbl\n", 1)[1].split("```", 1)[0]
    program = compile_source(example, "example.mbl")
    native = NativeProgram(program, "router")
    native.table_add("fib4", 0x0A000000, 3, 8)
    native.write("nexthops", 3, {"dmac": 0x0200000000AA, "smac": 0x0200000000BB, "port": 2})
    frame = raw(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
                / IP(src="1.2.3.4", dst="10.0.0.9", ttl=7) / UDP())
    (v,) = native.run([frame])
    assert (v.kind, v.port) == ("forward", 2)
    out = Ether(v.data)
    assert out.dst == "02:00:00:00:00:aa" and out[IP].ttl == 6
