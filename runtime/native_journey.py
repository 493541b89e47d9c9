"""The native target's per-packet journey (issue 18, item 1): each frame block by block, with
the MBL line of its verdict, written in the same trace formats as the chip's journeys.

The chip's journey (``npkit.runtime.packet_trace``) follows a frame through MEs, memory
units and rings; the native target has none of those, so its journey is the program's own
path: a line-trace build of the program (``npkit.compiler.mbl.linetrace``, hooks before
every statement) runs the frames one at a time, and the statements a frame executed are
grouped into *visits*: runs of statements in one MBL ``block`` or ``fn`` (named like the
chip trace's ``block`` argument: the declaration above the line, ``block_of_source``).  Its
*verdict statement* is the last ``forward``/``drop``/``exception``/``next`` statement it
executed (a verdict in a ``let ... else drop(...)`` is not a statement of its own: then the
last statement, on the same line).

In the trace file, time is the count of statements executed (one statement = 1 us on the
timeline), frames one after another on a track per input port: a slice per frame, a slice
per visit inside it (``lines``: the statements' ``file:line:col``), and the verdict as an
instant whose ``source`` is its MBL line -- the chip's verdict instant carries the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.compiler.mbl import ast as A
from npkit.compiler.mbl.linetrace import LineTracer
from npkit.compiler.mbl.native import NativeProgram, Verdict
from npkit.compiler.mbl.sema import Program
from npkit.sim.packet_trace import (
    MAX_LINES,
    TraceOptions,
    TraceWriteResult,
    write_trace_events,
)

from .packet_trace import block_of_source

NATIVE_PID = 30_000
_VERDICTS = (A.Forward, A.Drop, A.Exception_, A.Next)


@dataclass
class BlockVisit:
    """A run of statements a frame executed in one block or function."""

    block: str | None                              # None: no block/fn found above the line
    lines: list[str] = field(default_factory=list)  # "file.mbl:line:col" per statement


@dataclass
class NativeJourney:
    """One frame through the native target."""

    frame: int                  # index in the order the frames were given
    port: int
    seq: int                    # the frame's number on its port, from 0
    length: int
    verdict: Verdict
    visits: list[BlockVisit] = field(default_factory=list)
    verdict_source: str | None = None   # "file.mbl:line:col" of the verdict statement
    verdict_block: str | None = None
    statements: int = 0

    @property
    def verdict_line(self) -> tuple[str, int] | None:
        """(file name, line) of the verdict statement."""
        if self.verdict_source is None:
            return None
        name, line, _ = self.verdict_source.rsplit(":", 2)
        return name, int(line)

    @property
    def label(self) -> str:
        """The verdict as the chip trace's verdict instant names it."""
        v = self.verdict
        return f"drop({v.reason})" if v.kind == "drop" else v.kind

    @property
    def outcome(self) -> str:
        v = self.verdict
        if v.kind == "forward":
            return f"forward to port {v.port}"
        if v.kind == "drop":
            return f"dropped: {v.reason}"
        return v.kind


def _short(source: str) -> str:
    return source.rsplit("/", 1)[-1]


def verdict_statements(program: Program) -> set[tuple[str, int, int]]:
    """(file, line, column) of every verdict statement in the program's blocks and
    functions."""
    found: set[tuple[str, int, int]] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list | tuple):
            for item in node:
                walk(item)
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            if isinstance(node, _VERDICTS):
                found.add((node.span.file, node.span.line, node.span.column))
            for f in dataclasses.fields(node):
                if f.name != "span":
                    walk(getattr(node, f.name))

    walk(list(program.blocks.values()) + list(program.functions.values()))
    return found


class NativeJourneys:
    """A line-trace build of a program with the memories of a ``NativeProgram`` (copied
    now: tables, routes, next hops), following frames one at a time."""

    def __init__(self, native: NativeProgram) -> None:
        self.tracer = LineTracer(native.program, native.block)
        self.tracer.memory = {space: words.copy() for space, words in native.memory.items()}
        self.verdicts = verdict_statements(native.program)
        self._texts: dict[str, list[str] | None] = {}
        self._blocks: dict[str, str | None] = {}

    def _block(self, source: str) -> str | None:
        if source not in self._blocks:
            self._blocks[source] = block_of_source(source, self._texts)
        return self._blocks[source]

    def follow(self, frames: dict[int, list[bytes]]) -> list[NativeJourney]:
        """The journeys of each port's frames (ports in order, frames in port order)."""
        return self.follow_items((port, seq, data) for port in sorted(frames)
                                 for seq, data in enumerate(frames[port]))

    def follow_items(self, items: Iterable[tuple[int, int, bytes]]) -> list[NativeJourney]:
        """The journeys of (port, port sequence number, frame) items, numbered in order."""
        out: list[NativeJourney] = []
        for port, seq, data in items:
            out.append(self.one(len(out), port, seq, data))
        return out

    def one(self, frame: int, port: int, seq: int, data: bytes) -> NativeJourney:
        run = self.tracer.trace(data, port)
        j = NativeJourney(frame, port, seq, len(data), run.verdict, statements=len(run.states))
        verdict_loc = None
        for state in run.states:
            loc = state.loc
            source = f"{loc.file}:{loc.line}:{loc.column}"
            block = self._block(source)
            if not j.visits or j.visits[-1].block != block:
                j.visits.append(BlockVisit(block))
            j.visits[-1].lines.append(_short(source))
            if (loc.file, loc.line, loc.column) in self.verdicts:
                verdict_loc = source
        if verdict_loc is None and run.states:      # `let ... else drop(...)`: its line
            last = run.states[-1].loc
            verdict_loc = f"{last.file}:{last.line}:{last.column}"
        if verdict_loc is not None:
            j.verdict_source = _short(verdict_loc)
            j.verdict_block = self._block(verdict_loc)
        return j


# --------------------------------------------------------------------------- trace file
def _events(j: NativeJourney, start: int) -> list[dict[str, Any]]:
    """A journey's trace events, from statement ``start`` of the timeline (us)."""
    title = f"frame {j.frame} (port {j.port} #{j.seq})"
    out: list[dict[str, Any]] = [
        {"name": title, "ph": "X", "pid": NATIVE_PID, "tid": j.port, "ts": start,
         "dur": max(j.statements, 1),
         "args": {"frame": j.frame, "port": j.port, "seq": j.seq, "length": j.length,
                  "outcome": j.outcome}}]
    at = start
    verdict_at = None
    for visit in j.visits:
        # the statements are counted; past MAX_LINES their lines are not listed
        out.append({"name": visit.block or "?", "ph": "X", "pid": NATIVE_PID, "tid": j.port,
                    "ts": at, "dur": len(visit.lines),
                    "args": {"frame": j.frame, "lines": visit.lines[:MAX_LINES],
                             "statements": len(visit.lines)}})
        for k, line in enumerate(visit.lines):
            if line == j.verdict_source:
                verdict_at = at + k
        at += len(visit.lines)
    if j.verdict_source is not None:
        out.append({"name": j.label, "ph": "i", "s": "t", "pid": NATIVE_PID, "tid": j.port,
                    "ts": verdict_at if verdict_at is not None else at,
                    "args": {"frame": j.frame, "verdict": j.label, "source": j.verdict_source,
                             "block": j.verdict_block}})
    return out


def _metadata(ports: Iterable[int]) -> list[dict[str, Any]]:
    meta: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": NATIVE_PID,
                                   "tid": 0, "args": {"name": "native target (MBL)"}}]
    for p in sorted(set(ports)):
        meta.append({"name": "thread_name", "ph": "M", "pid": NATIVE_PID, "tid": p,
                     "args": {"name": f"port {p} in"}})
    return meta


def write_native_trace(path: str | Path, journeys: list[NativeJourney],
                       options: TraceOptions | None = None) -> TraceWriteResult:
    """The journeys as a trace file (JSON or Perfetto protobuf by the name, as
    ``write_packet_trace``), whole frames in order within ``options.cap_bytes``;
    ``options.keep`` is not used (choose the journeys)."""
    options = options or TraceOptions()

    def frames() -> Iterator[list[dict[str, Any]]]:
        at = 0
        for j in journeys:
            yield _events(j, at)
            at += max(j.statements, 1)

    other = {"target": "native", "time_unit": "MBL statements executed (1 per us)"}
    return write_trace_events(path, _metadata(j.port for j in journeys), frames(),
                              len(journeys), options, other)


def outcome_words(j: NativeJourney) -> set[str]:
    """What ``--trace-verdict WORD`` matches for a native journey: its outcome, the verdict
    kind and label, a drop's reason."""
    words = {j.outcome, j.verdict.kind, j.label}
    if j.verdict.kind == "drop":
        words.add(j.verdict.reason)
    return words
