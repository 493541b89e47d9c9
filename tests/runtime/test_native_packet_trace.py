"""The native target's per-packet journey (issue 18, item 1: "the same journey for the native
target, block by block, with verdicts"), checked against the chip's journeys of the same
frames: the compiled examples/router on the simulated chip with a frame log, and the same
frames, tables and routes through a line-trace build of the program on the native target.
Every frame the chip's body gave a verdict has the same verdict natively (kind, drop reason,
output port) named at the same MBL line and block; the native visits run through the
pipeline's blocks in order; the trace file (JSON and Perfetto protobuf) holds the verdicts
with their lines and keeps to its cap.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pytest

from npkit.bench import router4_load as r4l
from npkit.bench.compiled_load import ROUTER, tables
from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.native_journey import (
    NativeJourney,
    NativeJourneys,
    verdict_statements,
    write_native_trace,
)
from npkit.runtime.packet_trace import trace_program
from npkit.sim.packet_trace import Journey, Selection, TraceOptions

FRAMES_PER_PORT = 400
SOURCE = re.compile(r"^(?P<file>[\w.]+\.mbl):(?P<line>\d+):\d+$")


def _ipv4_checksum(header: bytes) -> int:
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _plant(frames: list[bytes], port: int) -> list[bytes]:
    """Every 31st frame a bad IPv4 checksum, every 29th TTL 1 (an exception), every 23rd a
    foreign ethertype (an exception), every 37th IP version 5 (a drop)."""
    out = []
    for i, f in enumerate(frames):
        b = bytearray(f)
        k = i + 5 * port
        if k % 31 == 0:
            b[24] ^= 0xFF
        elif k % 29 == 0 or k % 37 == 0:
            if k % 29 == 0:
                b[22] = 1
            else:
                b[14] = 0x55
            b[24:26] = b"\x00\x00"
            b[24:26] = _ipv4_checksum(bytes(b[14:34])).to_bytes(2, "big")
        elif k % 23 == 0:
            b[12:14] = b"\x88\xb5"
        out.append(bytes(b))
    return out


class Both:
    def __init__(self) -> None:
        program = compile_file(ROUTER)
        self.program = program
        linked = link(program, compile_me(program, "router"), fwd_mes_per_port=2)
        workload = r4l.Workload.make(5, 300, FRAMES_PER_PORT, 64)
        self.frames = {p: _plant(f, p) for p, f in workload.frames.items()}
        native = tables(program, workload)
        run = CompiledRun(linked)
        run.load_memories(native)
        self.trace = trace_program(run.chip, run.program, Selection(max_events=1_000_000))
        run.run(self.frames, load=0.5)
        self.chip: dict[tuple[int, int], Journey] = {
            (j.port, j.seq): j for j in self.trace.journeys().values()}
        self.native = NativeJourneys(native).follow(self.frames)


@pytest.fixture(scope="module")
def both() -> Both:
    return Both()


def _file_line(source: str | None) -> tuple[str, int]:
    m = SOURCE.match((source or "").rsplit("/", 1)[-1])
    assert m, source
    return m["file"], int(m["line"])


def test_native_verdicts_and_lines_match_the_chip(both: Both) -> None:
    assert len(both.native) == sum(map(len, both.frames.values())) == 2 * FRAMES_PER_PORT
    kinds: dict[str, int] = {}
    for n in both.native:
        c = both.chip[(n.port, n.seq)]
        if c.verdict is None or c.verdict_at is None:     # dropped before the body ran
            assert c.drop_reason in ("rx_no_buffer", "rbuf_full")
            continue
        kinds[n.label] = kinds.get(n.label, 0) + 1
        assert n.verdict.kind == c.verdict.label, (n.frame, n.outcome, c.outcome)
        if n.verdict.kind == "drop":
            assert n.verdict.reason == c.drop_reason
        if n.verdict.kind == "forward" and c.departed is not None:
            assert n.verdict.port == c.out_port
        chip_source = both.trace.source_of(c.verdict_at.me, c.verdict_at.pc)
        assert n.verdict_line == _file_line(chip_source), (n.outcome, n.verdict_source,
                                                           chip_source)
        assert n.verdict_block == both.trace.block_of(c.verdict_at.me, c.verdict_at.pc)
    # the planted frames give every kind of verdict
    assert kinds.get("forward", 0) > 600 and kinds.get("exception", 0) > 20
    assert kinds.get("drop(bad_checksum)", 0) > 10 and kinds.get("drop(bad_version)", 0) > 10


def _source_text(source: str) -> str:
    """The line's text (the stages' files are in microblocks/, the pipeline's is the
    example's)."""
    name, line = _file_line(source)
    path = ROUTER.parents[2] / "microblocks" / name
    return (path if path.exists() else ROUTER.parent / name).read_text().splitlines()[line - 1]


def test_native_journeys_go_block_by_block(both: Both) -> None:
    verdicts = verdict_statements(both.program)
    assert len(verdicts) > 20
    for n in both.native:
        blocks = [v.block for v in n.visits]
        assert blocks[0] == "eth_classify"
        assert sum(len(v.lines) for v in n.visits) == n.statements
        assert all(a != b for a, b in zip(blocks, blocks[1:], strict=False))  # runs merged
        assert n.verdict_source is not None
        word = {"forward": "forward(", "drop": f"drop({n.verdict.reason})",
                "exception": "exception("}[n.verdict.kind]
        assert word in _source_text(n.verdict_source), (n.outcome, n.verdict_source)
        if n.verdict.kind == "forward":
            assert "ipv4_fwd" in blocks and blocks[-1] in ("ipv4_fwd", "ipv4_leave")


def _check_json(doc: dict, journeys: list[NativeJourney]) -> None:
    assert doc["otherData"]["target"] == "native"
    verdicts = {}
    slices: dict[int, list[tuple[float, float]]] = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "i":
            verdicts[e["args"]["frame"]] = e["args"]["source"]
        elif e["ph"] == "X":
            slices.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in slices.values():       # visits nest in their frame, frames are disjoint
        spans.sort(key=lambda se: (se[0], -se[1]))
        stack: list[float] = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1]
            stack.append(end)
    assert verdicts == {j.frame: j.verdict_source for j in journeys}


def test_native_trace_files(both: Both, tmp_path: Path) -> None:
    pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    result = write_native_trace(tmp_path / "native.json", both.native)
    assert result.frames == len(both.native) and not result.truncated
    _check_json(json.loads((tmp_path / "native.json").read_text()), both.native)
    capped = write_native_trace(tmp_path / "capped.json", both.native,
                                TraceOptions(cap_bytes=200_000))
    assert capped.truncated and 0 < capped.frames < len(both.native)
    assert capped.bytes <= 200_000
    _check_json(json.loads((tmp_path / "capped.json").read_text()),
                both.native[:capped.frames])
    proto = write_native_trace(tmp_path / "native.pftrace", both.native)
    assert proto.frames == len(both.native) and proto.bytes < result.bytes
    # the verdict instants inside the compressed packets name the same lines
    outer = pb2.Trace.FromString((tmp_path / "native.pftrace").read_bytes())
    inner = b"".join(zlib.decompress(p.compressed_packets) for p in outer.packet
                     if p.HasField("compressed_packets"))
    strings = {e.str.decode() for p in pb2.Trace.FromString(inner).packet
               for e in p.interned_data.debug_annotation_string_values}
    assert {j.verdict_source for j in both.native} <= strings
