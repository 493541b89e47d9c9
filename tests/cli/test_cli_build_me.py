"""`npkit build --emit wir|uc`, `--report`, `--images` and `npkit graph`: the ME backend from
the command line, checked with the assembler, the image loader, Graphviz and the MBL
source it came from."""

from __future__ import annotations

import json
import re
import shutil
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
    memory = json.loads((tmp_path / "memory_map.json").read_text())
    assert {m["name"] for m in memory} >= {"mac_table", "port_pair", "rx_frames"}
    assert "#define" in (tmp_path / "layout.h").read_text()


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
