"""`npkit graph` (compiler/me/graph.py): router4's mapping as DOT, read back by Graphviz's
own parser (`dot -Tjson0`) and checked against the README's picture; rendering to SVG."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from npkit.compiler.me.abi import Mapping, MEAssignment
from npkit.compiler.me.graph import GraphError, render, to_dot
from npkit.microblocks.uc.router4 import mapping as router4_mapping

pytestmark = pytest.mark.skipif(shutil.which("dot") is None,
                                reason="Graphviz's dot is not installed (CI: apt graphviz)")

# examples/router4/README.md: port p -> rx ME p -> RX rings 2p, 2p+1 -> fwd ME 2+2p (A),
# 3+2p (B); A -> B on the NN ring; B -> TX rings 4, 5; A and B -> exception ring 6 ->
# XScale; TX ring 4+q -> tx ME 6+q -> port q.
ROUTER4_NODES = {"port0_in", "port1_in", "me0", "me1", "ring0", "ring1", "ring2", "ring3",
                 "me2", "me3", "me4", "me5", "ring4", "ring5", "ring6", "xscale",
                 "me6", "me7", "port0_out", "port1_out"}
ROUTER4_EDGES = {
    ("port0_in", "me0"), ("port1_in", "me1"),
    ("me0", "ring0"), ("me0", "ring1"), ("me1", "ring2"), ("me1", "ring3"),
    ("ring0", "me2"), ("ring1", "me3"), ("ring2", "me4"), ("ring3", "me5"),
    ("me2", "me3"), ("me4", "me5"),
    ("me3", "ring4"), ("me3", "ring5"), ("me5", "ring4"), ("me5", "ring5"),
    ("me2", "ring6"), ("me3", "ring6"), ("me4", "ring6"), ("me5", "ring6"),
    ("ring6", "xscale"),
    ("ring4", "me6"), ("ring5", "me7"), ("me6", "port0_out"), ("me7", "port1_out"),
}


def parse_with_dot(dot_text: str) -> tuple[dict[str, str], set[tuple[str, str]], list[dict]]:
    """(node -> label, edges as (tail, head), edge records) as Graphviz reads the text."""
    result = subprocess.run(["dot", "-Tjson0"], input=dot_text, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0 and not result.stderr, result.stderr
    graph = json.loads(result.stdout)
    by_id = {o["_gvid"]: o for o in graph["objects"] if "nodes" not in o}  # not subgraphs
    labels = {o["name"]: o["label"] for o in by_id.values()}
    records = graph.get("edges", [])
    edges = {(by_id[e["tail"]]["name"], by_id[e["head"]]["name"]) for e in records}
    return labels, edges, records


def test_router4_graph_has_every_node_and_edge() -> None:
    labels, edges, records = parse_with_dot(to_dot(router4_mapping()))
    assert set(labels) == ROUTER4_NODES
    assert edges == ROUTER4_EDGES
    assert len(records) == len(ROUTER4_EDGES)       # no edge drawn twice
    assert labels["ring6"] == "exception ring 6"
    assert labels["port0_in"] == labels["port0_out"] == "port 0"
    for me in (2, 3, 4, 5):
        assert "stages: eth_classify, ipv4_fwd" in labels[f"me{me}"]
        assert "fwd · 8 threads" in labels[f"me{me}"]
    nn = [e for e in records if e.get("label") == "NN ring"]
    assert len(nn) == 2


def test_a_ring_no_me_reads_goes_to_the_xscale() -> None:
    """The linker's spelling: the exception ring as a plain "ring 6"."""
    plain = Mapping(pipeline="router4", ports=(0, 1), mes=tuple(
        MEAssignment(a.me, a.role, a.stages, a.reads,
                     tuple(w.replace("exception ring", "ring") for w in a.writes), a.threads,
                     a.image)
        for a in router4_mapping().mes))
    labels, edges, _ = parse_with_dot(to_dot(plain))
    assert edges == ROUTER4_EDGES
    assert labels["ring6"] == "ring 6"


def test_router4_mapping_matches_the_header() -> None:
    """ME roles as router4.h's "ME mapping" comment states them."""
    roles = {a.me: a.role for a in router4_mapping().mes}
    assert roles == {0: "rx", 1: "rx", 2: "fwd", 3: "fwd", 4: "fwd", 5: "fwd",
                     6: "tx", 7: "tx"}


def test_render_svg(tmp_path: Path) -> None:
    out = render(router4_mapping(), tmp_path / "router4.svg")
    text = out.read_text(encoding="utf-8")
    assert "<svg" in text and "exception ring 6" in text and "XScale" in text


def test_names_are_quoted_and_no_xscale_without_exceptions() -> None:
    mapping = Mapping(pipeline='my "pipe"', ports=(0,), mes=(
        MEAssignment(me=0, role="rx", reads=("port 0",), writes=("ring 1",)),
        MEAssignment(me=1, role="fwd", stages=("a\\b",), reads=("ring 1",),
                     writes=("port 0",)),
    ))
    labels, edges, _ = parse_with_dot(to_dot(mapping))
    assert set(labels) == {"port0_in", "me0", "ring1", "me1", "port0_out"}
    assert edges == {("port0_in", "me0"), ("me0", "ring1"), ("ring1", "me1"),
                     ("me1", "port0_out")}
    svg = subprocess.run(["dot", "-Tsvg"], input=to_dot(mapping), capture_output=True,
                         text=True, check=True).stdout
    assert "stages: a\\b" in svg and "my &quot;pipe&quot; on MEs" in svg


def test_bad_endpoint_is_a_clear_error() -> None:
    mapping = Mapping(pipeline="p", ports=(0,), mes=(
        MEAssignment(me=3, role="fwd", reads=("queue 4",)),))
    with pytest.raises(GraphError, match="ME 3: endpoint 'queue 4' is not 'port N'"):
        to_dot(mapping)


def test_render_reports_dot_failures(tmp_path: Path) -> None:
    with pytest.raises(GraphError, match="dot -Tnosuchformat failed"):
        render(router4_mapping(), tmp_path / "x", format="nosuchformat")
