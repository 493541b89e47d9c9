"""The per-packet trace in Perfetto's native protobuf format (``.pftrace``), read back with
the perfetto package's own generated protos (an independent decoder): every event's track
is described before it is used, slices nest and close on every track, each frame's flow
ends once, verdicts name their MBL line, and the file keeps to its cap.  Skipped where the
``perfetto`` package (PyPI, with ``protobuf``) is not installed: npkit does not depend on it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

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


def _annotations(event) -> dict:
    out = {}
    for a in event.debug_annotations:
        kind = a.WhichOneof("value")
        out[a.name] = getattr(a, kind) if kind else None
    return out


def test_pftrace_reads_back_as_a_well_formed_trace(tmp_path: Path) -> None:
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), fwd_mes_per_port=2)
    workload = r4l.Workload.make(5, 300, 400, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    trace = trace_program(run.chip, run.program, Selection())
    run.run(workload.frames, load=0.9)
    status = trace.log.status()
    counters = util.counter_events(trace.log.utilisation_raw(), status["units"],
                                   status["bucket_cycles"], run.chip.config.clock_hz)
    path = tmp_path / "packets.pftrace"
    result = write_packet_trace(path, trace.journeys(), run.chip.config.clock_hz,
                                trace.source_of, run.chip.config.me_label,
                                TraceOptions(cap_bytes=5_000_000), status, counters)
    assert path.stat().st_size == result.bytes <= 5_000_000
    assert result.frames == result.frames_total == 800 and not result.truncated
    packets = pb2.Trace.FromString(path.read_bytes()).packet
    described: set[int] = set()
    open_slices: dict[int, list[int]] = {}
    slices: dict[int, list[tuple[int, int]]] = {}
    flows: Counter = Counter()
    ends: Counter = Counter()
    verdicts = 0
    info = None
    for p in packets:
        if p.HasField("track_descriptor"):
            described.add(p.track_descriptor.uuid)
            continue
        e = p.track_event
        assert e.track_uuid in described
        stack = open_slices.setdefault(e.track_uuid, [])
        if e.type == pb2.TrackEvent.TYPE_SLICE_BEGIN:
            stack.append(p.timestamp)
        elif e.type == pb2.TrackEvent.TYPE_SLICE_END:
            assert stack
            slices.setdefault(e.track_uuid, []).append((stack.pop(), p.timestamp))
        elif e.type == pb2.TrackEvent.TYPE_INSTANT:
            args = _annotations(e)
            if e.name == "trace info":
                info = args
            elif "verdict" in args:
                verdicts += 1
                assert re.match(r"^[\w.]+\.mbl:\d+:\d+$", args["source"])
        flows.update(e.flow_ids)
        ends.update(e.terminating_flow_ids)
    assert all(not s for s in open_slices.values())
    for spans in slices.values():       # slices on one track nest or are disjoint
        spans.sort(key=lambda se: (se[0], -se[1]))
        stack: list[int] = []
        for start, end in spans:
            assert end >= start
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], (start, end, stack[-1])
            stack.append(end)
    # each frame's flow starts on its arrival and ends once (the frames that got past it)
    assert verdicts > 0 and set(ends.values()) == {1} and set(ends) <= set(flows)
    assert len(ends) > 700
    assert info is not None and info["frames_written"] == 800 and info["cap_reached"] is False
