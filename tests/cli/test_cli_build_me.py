"""`npkit build --emit wir|uc`, `--report`, `--images` and `npkit graph`: the ME backend from
the command line, checked with the assembler, the image loader, Graphviz and the MBL
source it came from."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from cli_invoke import invoke

from npkit.compiler.me.report import wrap_body
from npkit.compiler.uc import Image, assemble_text

ROOT = Path(__file__).resolve().parents[2]
IPV4 = str(ROOT / "microblocks" / "ipv4_fwd.mbl")
L2 = str(ROOT / "microblocks" / "l2_bridge.mbl")
ROUTER = str(ROOT / "examples" / "router" / "router.mbl")


def test_emit_uc_assembles_and_points_at_mbl_lines() -> None:
    code, out = invoke("build", IPV4, "--emit", "uc")
    assert code == 0
    image = assemble_text(wrap_body(out), filename="body.uc")
    source = Path(IPV4).read_text().splitlines()
    lines = {loc.line for loc in image.lines if loc and loc.file.endswith("ipv4_fwd.mbl")}
    # the TTL decrement and the forward statement both own instructions
    assert source.index("    ip.ttl -= 1;") + 1 in lines
    assert source.index("    forward(nh.port);") + 1 in lines


def test_emit_wir_prints_the_word_ir() -> None:
    code, out = invoke("build", L2, "--emit", "wir")
    assert code == 0
    assert out.startswith("function l2_bridge")
    assert re.search(r"mem0\[", out)          # the MAC table lookup reads SRAM


def test_report_json_has_every_stage_of_the_pipeline() -> None:
    code, out = invoke("build", ROUTER, "--report", "--json")
    assert code == 0
    stats = json.loads(out)
    assert set(stats) == {"router", "eth_classify", "ipv4_fwd", "ipv6_fwd"}
    for s in stats.values():
        assert s["instructions"] > 0 and s["path_cycles"] > 0 and s["pps_per_me"] > 0
    # the whole pipeline contains the classifier and both forwarding blocks
    assert stats["router"]["instructions"] > stats["ipv6_fwd"]["instructions"]
    assert stats["ipv4_fwd"]["memory_commands"].get("sram", 0) >= 2   # trie + next hop


def test_images_are_written_and_load(tmp_path: Path) -> None:
    code, out = invoke("build", L2, "--images", str(tmp_path))
    assert code == 0, out
    images = sorted(tmp_path.glob("*.img"))
    assert images, out
    for path in images:
        assert Image.load(path).words
        assert " " not in path.name and "+" not in path.name
    manifest = tomllib.loads((tmp_path / "manifest.toml").read_text())
    assert {i["image"] for i in manifest["image"]} == {p.name for p in images}


def test_graph_draws_the_mapping(tmp_path: Path) -> None:
    code, out = invoke("graph", ROUTER)
    assert code == 0
    assert out.lstrip().startswith("digraph")
    assert "stages: rx, v4, v6" in out          # the router's stages on a forwarding ME
    if shutil.which("dot") is None:
        pytest.skip("Graphviz `dot` is not installed")
    svg = tmp_path / "router.svg"
    code, out = invoke("graph", ROUTER, "-o", str(svg))
    assert code == 0 and svg.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_unsupported_construct_is_reported_at_its_line(tmp_path: Path) -> None:
    src = tmp_path / "push.mbl"
    src.write_text('import "std/headers.mbl";\nblock encap {\n'
                   '    let eth = packet<ethernet_t>(0) else drop(runt);\n'
                   '    packet.push(4) else drop(no_headroom);\n    forward(1);\n}\n')
    code, out = invoke("build", str(src), "--emit", "uc")
    assert code == 1
    assert f"{src}:4:5: error:" in out and "push/pull" in out


def test_control_store_overflow_names_the_block(tmp_path: Path) -> None:
    body = "".join(f"    x = (x * 0x9E3779B1) ^ t[(x + {i}) & 1023];\n" for i in range(900))
    src = tmp_path / "huge.mbl"
    src.write_text('import "std/headers.mbl";\narray t : bit<32> [1024] in sram;\n'
                   'block huge {\n    let eth = packet<ethernet_t>(0) else drop(runt);\n'
                   '    var x: bit<32> = eth.ethertype as bit<32>;\n' + body
                   + '    forward(x[0:0] as bit<16>);\n}\n')
    code, out = invoke("build", str(src), "--images", str(tmp_path / "img"))
    assert code == 1
    assert f"{src}:3:1: error: huge does not fit in the control store" in out
    assert "[me-control-store]" in out


def test_built_folder_forwards_what_the_program_forwards(tmp_path: Path) -> None:
    """`npkit build X.mbl --images DIR` + `npkit run DIR/manifest.toml` forwards the same
    frames, byte for byte and port by port, as `npkit run X.mbl --target chip`, and the
    frames are the ones a router must send (checked with scapy)."""
    from scapy.all import IP, UDP, Ether, IPv6, wrpcap

    from npkit.base.packetfile import read_packets

    routes = ROOT / "examples" / "router" / "routes.txt"
    eth = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    frames = [eth / IP(src="198.18.0.1", dst=f"10.{i % 3}.0.{i}", ttl=9) / UDP() / bytes(20)
              for i in range(1, 13)]
    frames += [eth / IPv6(src="2001:db8:9::1", dst="2001:db8:5::7", hlim=5) / UDP()]
    wrpcap(str(tmp_path / "in.pcap"), frames)
    inputs = ["--in", f"0={tmp_path / 'in.pcap'}"]
    code, out = invoke("run", ROUTER, "--target", "chip", "--routes", str(routes), *inputs,
                       "--out", f"1={tmp_path / 'direct.pcap'}")
    assert code == 0, out
    code, out = invoke("build", ROUTER, "--images", str(tmp_path / "built"),
                       "--routes", str(routes))
    assert code == 0, out
    code, out = invoke("run", str(tmp_path / "built" / "manifest.toml"), *inputs,
                       "--out", f"1={tmp_path / 'built.pcap'}")
    assert code == 0, out
    direct = [data for _, data in read_packets(tmp_path / "direct.pcap")]
    built = [data for _, data in read_packets(tmp_path / "built.pcap")]
    assert built == direct
    # routes.txt: 10.0/8 and 2001:db8::/32 via next hop 1, 10.1/16 via 2 -> port 1 of 2
    # carries 10.0.x.x, 10.2.x.x and the IPv6 packet (2001:db8:5::/48 is next hop 3 -> port 1)
    sent = sorted((str(f[IP].dst), f[IP].ttl - 1) for f in frames if IP in f
                  and not f[IP].dst.startswith("10.1."))
    got = sorted((str(Ether(d)[IP].dst), Ether(d)[IP].ttl) for d in direct if IP in Ether(d))
    assert got == sent
    assert sum(IPv6 in Ether(d) for d in direct) == 1


def test_print_after_dumps_the_ir_of_that_pass(tmp_path: Path) -> None:
    code, out = invoke("build", ROUTER, "--entry", "ipv4_fwd", "--print-after", "regalloc",
                       "--emit", "uc", "-o", str(tmp_path / "body.uc"))
    assert code == 0, out
    assert out.count("; *** IR after regalloc ***") == 1
    assert "IR after isel" not in out
    assert assemble_text(wrap_body((tmp_path / "body.uc").read_text()), filename="b.uc").words
    code, out = invoke("build", ROUTER, "--print-after", "regalloc", "--print-after", "nope")
    assert code == 1 and "unknown pass 'nope'" in out and "regalloc" in out, out


@pytest.mark.parametrize("kind", ["ast", "llvm", "llvm-opt", "wir", "mir", "uc"])
def test_every_ir_can_be_emitted(kind: str) -> None:
    code, out = invoke("build", IPV4, "--emit", kind)
    assert code == 0 and out.strip(), out


@pytest.mark.parametrize(("args", "message"), [
    (["--emit", "uc", "--routes", "r.txt"], "--routes: only with --images"),
    (["--platform", "ixp2800-4x10gbe"], "--platform: only with --images or --report"),
    (["--json"], "--json: only with --report"),
])
def test_build_options_it_would_not_use_are_errors(args: list[str], message: str) -> None:
    code, out = invoke("build", ROUTER, *args)
    assert code == 1 and message in out, out
