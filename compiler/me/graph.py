"""The pipeline graph: a `Mapping` (compiler/me/abi.py) as Graphviz DOT, what `npkit graph`
draws (docs/me-backend.md, "Compile report and graph").

Input ports -> receive MEs -> rings -> forwarding MEs -> rings -> transmit MEs -> output
ports, the exception ring to the XScale.  An ME's ``reads``/``writes`` name its endpoints:

    "port N"             a media port (read: receive from it; written: transmit to it)
    "ring N"             scratch ring N
    "exception ring N"   scratch ring N, which the XScale reads (so is any ring that MEs
                         write and no ME reads)
    "nn N"               the next-neighbour ring of ME N (drawn as an edge writer -> ME N)

The text is plain DOT (the ``graphviz`` Python package is not a dependency); ``render``
runs the ``dot`` program.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from npkit.base.errors import NpkitError

from .abi import Mapping, MEAssignment

ROLE_TITLES = {"rx": "receive", "fwd": "forwarding", "tx": "transmit"}
XSCALE_NODE = "xscale"
_ENDPOINT = re.compile(r"^\s*(port|ring|exception ring|nn)\s+(\d+)\s*$", re.IGNORECASE)


class GraphError(NpkitError, ValueError):
    """A mapping that cannot be drawn, or a `dot` run that failed."""


@dataclass(frozen=True)
class Endpoint:
    kind: str      # "port", "ring", "exception ring", "nn"
    number: int


def parse_endpoint(text: str, me: int) -> Endpoint:
    match = _ENDPOINT.match(text)
    if match is None:
        raise GraphError(f"ME {me}: endpoint {text!r} is not 'port N', 'ring N', "
                         "'exception ring N' or 'nn N'")
    return Endpoint(match.group(1).lower(), int(match.group(2)))


def quote(text: str) -> str:
    """A DOT double-quoted string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def me_node(me: int) -> str:
    return f"me{me}"


def ring_node(ring: int) -> str:
    return f"ring{ring}"


def port_node(port: int, direction: str) -> str:
    """``direction`` "in" (received from) or "out" (transmitted to)."""
    return f"port{port}_{direction}"


def _me_label(a: MEAssignment) -> str:
    lines = [f"ME {a.me}", f"{a.role} · {a.threads} threads"]
    if a.stages:
        lines.append("stages: " + ", ".join(a.stages))
    if a.image:
        lines.append(a.image)
    return "\n".join(lines)


@dataclass
class _Graph:
    """Nodes (id -> attributes) and edges (tail, head, attributes) in insertion order."""

    nodes: dict[str, str]
    edges: dict[tuple[str, str], str]

    def node(self, node_id: str, attrs: str) -> None:
        self.nodes.setdefault(node_id, attrs)

    def edge(self, tail: str, head: str, attrs: str = "") -> None:
        self.edges.setdefault((tail, head), attrs)


def _connect(graph: _Graph, me: str, node: str, written: bool) -> None:
    if written:
        graph.edge(me, node)
    else:
        graph.edge(node, me)


def _endpoint_edges(graph: _Graph, a: MEAssignment, text: str, written: bool) -> None:
    end = parse_endpoint(text, a.me)
    me = me_node(a.me)
    if end.kind == "port":
        node = port_node(end.number, "out" if written else "in")
        graph.node(node, f"label={quote(f'port {end.number}')}, shape=cds")
        _connect(graph, me, node, written)
    elif end.kind == "nn":
        if written:   # the reader's "nn N" names the same ring: one edge, from the writer
            graph.node(me_node(end.number), f"label={quote(f'ME {end.number}')}")
            graph.edge(me, me_node(end.number), 'label="NN ring", style=dashed')
    else:
        node = ring_node(end.number)
        if end.kind == "exception ring":
            graph.nodes[node] = f"label={quote(f'exception ring {end.number}')}, shape=box"
            graph.edge(node, XSCALE_NODE)
        graph.node(node, f"label={quote(f'ring {end.number}')}, shape=box")
        _connect(graph, me, node, written)


def _build(mapping: Mapping) -> _Graph:
    graph = _Graph({}, {})
    for a in mapping.mes:
        graph.nodes[me_node(a.me)] = f"label={quote(_me_label(a))}"
    for a in mapping.mes:
        for text in a.reads:
            _endpoint_edges(graph, a, text, written=False)
        for text in a.writes:
            _endpoint_edges(graph, a, text, written=True)
    _unread_rings_to_xscale(graph)
    if any(head == XSCALE_NODE for _, head in graph.edges):
        graph.node(XSCALE_NODE, 'label="XScale", shape=box3d')
    return graph


def _unread_rings_to_xscale(graph: _Graph) -> None:
    """A ring MEs write but no ME reads is the control plane's (the exception ring)."""
    read = {tail for tail, head in graph.edges if head != XSCALE_NODE}
    for _tail, head in list(graph.edges):
        if head.startswith("ring") and head not in read:
            graph.edge(head, XSCALE_NODE)


def to_dot(mapping: Mapping) -> str:
    """The mapping as a DOT digraph: ME clusters by role, rings, ports, the XScale."""
    graph = _build(mapping)
    out = [f"digraph {quote(mapping.pipeline)} {{", "  rankdir=LR;",
           '  graph [fontname="Helvetica"];', '  node [shape=ellipse, fontname="Helvetica"];',
           f"  label={quote(f'{mapping.pipeline} on MEs')};"]
    clustered: set[str] = set()
    for role, title in ROLE_TITLES.items():
        members = [me_node(a.me) for a in mapping.mes if a.role == role]
        if not members:
            continue
        out.append(f"  subgraph cluster_{role} {{ label={quote(title)}; style=rounded;")
        out.extend(f"    {m} [{graph.nodes[m]}];" for m in members)
        out.append("  }")
        clustered.update(members)
    out.extend(f"  {n} [{attrs}];" for n, attrs in graph.nodes.items() if n not in clustered)
    for direction, rank in (("in", "source"), ("out", "sink")):
        ports = [n for n in graph.nodes if n.startswith("port") and n.endswith(f"_{direction}")]
        if ports:
            out.append(f"  {{ rank={rank}; {'; '.join(ports)}; }}")
    out.extend(f"  {tail} -> {head}" + (f" [{attrs}]" if attrs else "") + ";"
               for (tail, head), attrs in graph.edges.items())
    out.append("}")
    return "\n".join(out) + "\n"


def render(mapping: Mapping, path: str | Path, format: str = "svg") -> Path:
    """Draw the mapping into ``path`` with Graphviz's ``dot`` (GraphError when it fails)."""
    dot = shutil.which("dot")
    if dot is None:
        raise GraphError("the 'dot' program of Graphviz is not installed "
                         "(apt install graphviz); `npkit graph --dot` prints the DOT text")
    target = Path(path)
    result = subprocess.run([dot, f"-T{format}", "-o", str(target)], input=to_dot(mapping),
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise GraphError(f"dot -T{format} failed: {result.stderr.strip()}")
    return target


def graph_command_text(mapping: Mapping) -> str:
    """What ``npkit graph FILE.mbl`` prints without an output file: the DOT text."""
    return to_dot(mapping)
