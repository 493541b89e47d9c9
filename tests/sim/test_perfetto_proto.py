"""The per-packet trace in Perfetto's native protobuf format (``.pftrace``), read back with
the perfetto package's own generated protos (an independent decoder) and this file's own
resolution of Perfetto's incremental state (per sequence: a SEQ_INCREMENTAL_STATE_CLEARED
packet empties the tables, ``interned_data`` fills them, ``name_iid`` / ``string_value_iid``
refer to them; a clock snapshot sets the sequence's delta clock, each packet's timestamp on
it is the step from the one before): every event's track is described before it is used,
every iid is defined before use on a packet that says SEQ_NEEDS_INCREMENTAL_STATE, slices
nest and close on every track, each frame's flow ends once, verdicts name their MBL line,
and the file keeps to its cap.  The packets come zlib-compressed in ``compressed_packets``
(Perfetto's own compressed form, which its trace processor inflates); the reader inflates
them with Python's zlib and reads the packets inside in order.
Skipped where the ``perfetto`` package (PyPI, with ``protobuf``) is not installed.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

from npkit.bench import router4_load as r4l  # noqa: E402
from npkit.bench.compiled_load import ROUTER, tables  # noqa: E402
from npkit.compiler.mbl import compile_file  # noqa: E402
from npkit.compiler.me import compile_me  # noqa: E402
from npkit.link import link  # noqa: E402
from npkit.runtime.compiled import CompiledRun  # noqa: E402
from npkit.runtime.packet_trace import trace_program  # noqa: E402
from npkit.sim import utilisation as util  # noqa: E402
from npkit.sim.packet_trace import Selection, TraceOptions, write_packet_trace  # noqa: E402
from npkit.sim.perfetto_proto import MAX_COMPRESSED  # noqa: E402

SOURCE = re.compile(r"^[\w.]+\.mbl:\d+:\d+$")
CLEARED = pb2.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb2.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


@dataclass
class Interned:
    """One sequence's interning tables, as Perfetto's trace processor keeps them."""
    names: dict[int, str] = field(default_factory=dict)
    arg_names: dict[int, str] = field(default_factory=dict)
    strings: dict[int, str] = field(default_factory=dict)
    clock: int = 0                      # the sequence's default timestamp clock (0: boot time)
    incremental: dict[int, int] = field(default_factory=dict)  # delta clock -> its last value

    def time(self, p: Any) -> int:
        """The packet's timestamp in boot-time ns: a delta clock's is the step from its last
        value (a clock snapshot's, then each packet's on it)."""
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else self.clock
        if clock not in self.incremental:
            assert clock in (0, 6)
            return p.timestamp
        self.incremental[clock] += p.timestamp
        return self.incremental[clock]

    def snapshot(self, snap: Any) -> None:
        clocks = {c.clock_id: c for c in snap.clocks}
        for c in clocks.values():
            if c.is_incremental:
                assert 64 <= c.clock_id < 128 and clocks[6].timestamp == c.timestamp
                self.incremental[c.clock_id] = c.timestamp

    def add(self, data: Any) -> None:
        for table, entries, text in ((self.names, data.event_names, "name"),
                                     (self.arg_names, data.debug_annotation_names, "name"),
                                     (self.strings, data.debug_annotation_string_values, "str")):
            for entry in entries:
                value = getattr(entry, text)
                table[entry.iid] = value.decode() if isinstance(value, bytes) else value


@dataclass
class Event:
    ts: int
    track: int
    type: int
    name: str | None
    args: dict[str, Any]
    flows: list[int]
    ends: list[int]


def _packets(data: bytes) -> Iterator[Any]:
    """The file's packets in order, the compressed ones inflated in place (a compressed
    packet belongs to no sequence and holds Trace-framed packets, zlib format)."""
    for p in pb2.Trace.FromString(data).packet:
        if p.HasField("compressed_packets"):
            assert not p.HasField("trusted_packet_sequence_id")
            assert len(p.compressed_packets) <= MAX_COMPRESSED < 512 * 1024
            yield from _packets(zlib.decompress(p.compressed_packets))
        else:
            yield p


def _raw(data: bytes) -> bytes:
    """The file with its compressed packets inflated (to count what is written where)."""
    return b"".join(p.SerializeToString() for p in _packets(data))


def _read(data: bytes) -> tuple[set[int], list[Event]]:
    """The described track uuids and the track events, interning resolved; asserts each
    iid is defined before use, on a packet that needs incremental state, and that after a
    sequence's defaults every packet on it needs incremental state (TracePacket's rule)."""
    state: dict[int, Interned] = {}
    defaults: set[int] = set()
    described: set[int] = set()
    events: list[Event] = []
    for p in _packets(data):
        seq = p.trusted_packet_sequence_id
        assert seq > 0
        if seq not in state:
            assert p.sequence_flags & CLEARED or not (p.HasField("interned_data")
                                                      or p.HasField("trace_packet_defaults"))
            state[seq] = Interned()
        if p.sequence_flags & CLEARED:
            state[seq] = Interned()
        if p.HasField("trace_packet_defaults"):
            defaults.add(seq)
        assert seq not in defaults or p.sequence_flags & NEEDS
        tables = state[seq]
        tables.add(p.interned_data)
        if p.HasField("trace_packet_defaults"):
            tables.clock = p.trace_packet_defaults.timestamp_clock_id
        if p.HasField("clock_snapshot"):
            tables.snapshot(p.clock_snapshot)
            continue
        if p.HasField("track_descriptor"):
            described.add(p.track_descriptor.uuid)
            continue
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        assert e.track_uuid in described
        uses = e.HasField("name_iid") or any(a.HasField("name_iid") or
                                             a.HasField("string_value_iid")
                                             for a in e.debug_annotations)
        assert not uses or p.sequence_flags & NEEDS
        name = tables.names[e.name_iid] if e.HasField("name_iid") else (e.name or None)
        args: dict[str, Any] = {}
        for a in e.debug_annotations:
            key = tables.arg_names[a.name_iid] if a.HasField("name_iid") else a.name
            kind = a.WhichOneof("value")
            if kind == "string_value_iid":
                args[key] = tables.strings[a.string_value_iid]
            else:
                args[key] = getattr(a, kind) if kind else None
        events.append(Event(tables.time(p), e.track_uuid, e.type, name, args,
                            list(e.flow_ids), list(e.terminating_flow_ids)))
    return described, events


def _check(events: list[Event]) -> tuple[dict[int, tuple[str, int]], dict[str, Any] | None,
                                          Counter]:
    """Slices close and nest per track, flows end once; the verdicts' sources and times by
    frame, the trace info and the flows' ends."""
    open_slices: dict[int, list[int]] = {}
    slices: dict[int, list[tuple[int, int]]] = {}
    flows: Counter = Counter()
    ends: Counter = Counter()
    verdicts: dict[int, tuple[str, int]] = {}
    info = None
    for e in events:
        stack = open_slices.setdefault(e.track, [])
        if e.type == pb2.TrackEvent.TYPE_SLICE_BEGIN:
            assert e.name
            stack.append(e.ts)
        elif e.type == pb2.TrackEvent.TYPE_SLICE_END:
            assert stack
            slices.setdefault(e.track, []).append((stack.pop(), e.ts))
        elif e.type == pb2.TrackEvent.TYPE_INSTANT:
            if e.name == "trace info":
                info = e.args
            elif "verdict" in e.args:
                assert e.args["frame"] not in verdicts
                assert e.name == e.args["verdict"]
                verdicts[e.args["frame"]] = (e.args["source"], e.ts)
        flows.update(e.flows)
        ends.update(e.ends)
    assert all(not s for s in open_slices.values())
    for spans in slices.values():       # slices on one track nest or are disjoint
        spans.sort(key=lambda se: (se[0], -se[1]))
        nest: list[int] = []
        for start, end in spans:
            assert end >= start
            while nest and nest[-1] <= start:
                nest.pop()
            assert not nest or end <= nest[-1], (start, end, nest[-1])
            nest.append(end)
    # each frame's flow starts on its arrival and ends once (the frames that got past it)
    assert set(ends.values()) == {1} and set(ends) <= set(flows)
    return verdicts, info, ends


@cache
def _router() -> tuple[Any, Any]:
    """examples/router compiled and linked once for the module (each run loads the
    manifest on a fresh chip; nothing writes to it)."""
    program = compile_file(ROUTER)
    return program, link(program, compile_me(program, "router"), fwd_mes_per_port=2)


def _traced(frames_per_port: int) -> Any:
    program, linked = _router()
    workload = r4l.Workload.make(5, 300, frames_per_port, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    trace = trace_program(run.chip, run.program, Selection(max_events=4_000_000))
    run.run(workload.frames, load=0.9)
    status = trace.log.status()
    counters = util.counter_events(trace.log.utilisation_raw(), status["units"],
                                   status["bucket_cycles"], run.chip.config.clock_hz)
    return run, trace, status, counters


def _write(path: Path, traced: Any, cap: int) -> Any:
    run, trace, status, counters = traced
    return write_packet_trace(path, trace.journeys(), run.chip.config.clock_hz,
                              trace.source_of, run.chip.config.me_label,
                              TraceOptions(cap_bytes=cap), status, counters)


def test_pftrace_reads_back_as_a_well_formed_trace(tmp_path: Path) -> None:
    path = tmp_path / "packets.pftrace"
    result = _write(path, _traced(400), 5_000_000)
    assert path.stat().st_size == result.bytes <= 5_000_000
    assert result.frames == result.frames_total == 800 and not result.truncated
    described, events = _read(path.read_bytes())
    verdicts, info, ends = _check(events)
    assert verdicts and all(SOURCE.match(s) for s, _ in verdicts.values())
    assert len(ends) > 700
    assert info is not None and info["frames_written"] == 800 and info["cap_reached"] is False
    # interning: each name is written once however often it is used
    commands = Counter(e.name for e in events if e.type == pb2.TrackEvent.TYPE_SLICE_BEGIN)
    assert max(commands.values()) > 100
    data = _raw(path.read_bytes())
    assert max(data.count(n.encode()) for n in commands if n) == 1


def test_ten_thousand_frames_under_the_cap_every_verdict_names_its_line(
        tmp_path: Path) -> None:
    """Issue 18, acceptance 3: the trace of a 10,000-frame router run with memory commands,
    at the default 10 MB cap, holds every frame, and every frame that has a verdict names
    its MBL line (7,487 frames fitted before compression; docs/debugging.md)."""
    traced = _traced(5000)
    journeys = traced[1].journeys()
    path = tmp_path / "capped.pftrace"
    capped = _write(path, traced, 10_000_000)
    assert path.stat().st_size == capped.bytes <= 10_000_000
    assert capped.frames == capped.frames_total == 10_000 and not capped.truncated
    described, events = _read(path.read_bytes())
    verdicts, info, ends = _check(events)
    assert info is not None and info["frames_written"] == 10_000
    assert info["cap_reached"] is False and "compression" in info
    expected = {j.frame for j in journeys.values()
                if j.verdict_at is not None and j.verdict is not None}
    assert len(expected) > 5000 and set(verdicts) == expected
    assert all(SOURCE.match(s) for s, _ in verdicts.values())
    # every memory command of every frame is there, with its pc, source and address
    commands = [e for e in events if e.type == pb2.TrackEvent.TYPE_SLICE_BEGIN
                and "addr" in e.args]
    assert len(commands) == sum(h.kind == "command" for j in journeys.values()
                                for h in j.hops)
    assert all(isinstance(e.args["pc"], int) and "addr" in e.args for e in commands)
    # the delta timestamps add up to each verdict's cycle, in ns
    us = 1e6 / traced[0].chip.config.clock_hz
    for j in journeys.values():
        if j.frame in expected:
            assert verdicts[j.frame][1] == round(round(j.verdict_at.cycle * us, 6) * 1000)
    # a cap the frames do not fit in: whole frames in id order, as many as fit (one more
    # frame, written without a cap, passes it), and the trace info says so
    small = _write(tmp_path / "small.pftrace", traced, 1_000_000)
    assert small.bytes <= 1_000_000 and small.truncated and 1000 < small.frames < 10_000
    _, info = _check(_read((tmp_path / "small.pftrace").read_bytes())[1])[:2]
    assert info is not None and info["frames_written"] == small.frames and info["cap_reached"]
    ids = set(sorted(journeys)[:small.frames + 1])
    run, trace, status, counters = traced
    more = write_packet_trace(tmp_path / "more.pftrace", journeys, run.chip.config.clock_hz,
                              trace.source_of, run.chip.config.me_label,
                              TraceOptions(cap_bytes=1 << 40,
                                           keep=lambda j: j.frame in ids),
                              status, counters)
    assert more.frames == small.frames + 1 and more.bytes > 1_000_000 - 2048
