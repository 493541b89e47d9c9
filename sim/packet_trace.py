"""Per-packet traces: the core's per-frame event log as journeys and as a Perfetto trace.

The core (``sim/core/frame_log.hpp``) numbers frames as the host adds them and follows each
one through the chip: wire arrival, RBUF element(s), the contexts that carried it (from an
autopush, an RBUF read or a ring get of words a carrying context put), every command those
contexts issued meanwhile (unit, issue and completion cycle, PC), ring puts and gets, TBUF
writes, the control word and the departure, or a drop at the RBUF.  Trace points (PCs the
host names, e.g. the instructions that set a verdict) add an event when a context carrying a
frame retires them.  How the frame is followed, and where the model cannot follow it, is in
docs/debugging.md, "Per-packet traces".

Here the events become ``Journey`` objects (one per frame, for tests and reports) and a
Chrome/Perfetto trace-event JSON file: one track per port (wire in, wire out), one per ME
context that carried a frame, commands as async slices, verdicts as instants, and a flow
(``"ph": "s"/"t"/"f"``) joining a frame's slices across tracks.  The file has a size cap:
whole frames are written until the next would pass it, and the metadata says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from npkit.base.errors import NpkitError

from . import isa

# Matches struct FrameEvent in frame_log.hpp (40 bytes, little-endian, natural alignment).
EVENT_DTYPE = np.dtype([
    ("cycle", "<u8"), ("end", "<u8"), ("frame", "<u4"), ("a", "<u4"), ("b", "<u4"),
    ("pc", "<u4"), ("me", "i1"), ("ctx", "i1"), ("kind", "u1"), ("unit", "u1"),
    ("op", "u1"), ("sub", "u1"), ("c", "<u2"),
])
assert EVENT_DTYPE.itemsize == 40
# Matches FrameLog::Wait: a sleeping interval's end and the unit it waited on.
WAIT_DTYPE = np.dtype([("end", "<u8"), ("me", "<i2"), ("ctx", "u1"), ("unit", "u1"),
                       ("pad", "<u4")])
assert WAIT_DTYPE.itemsize == 16

ARRIVAL, ELEMENT, RBUF_DROP, AUTOPUSH, ELEMENT_FREE, COMMAND, RING_PUT, RING_GET, \
    TBUF_WRITE, TBUF_VALID, DEPARTURE, TRACE_POINT = range(12)
KIND_NAMES = ("arrival", "element", "rbuf_drop", "autopush", "element_free", "command",
              "ring_put", "ring_get", "tbuf_write", "tbuf_valid", "departure", "trace_point")

ALL_PORTS = (1 << 64) - 1


@dataclass(frozen=True)
class Selection:
    """Which frames the core follows: port sequence numbers ``[first, last)`` (a port's
    frames are numbered from 0 in the order the host adds them), these ports (None: all),
    every ``sample_every``-th frame of the range; at most ``max_events`` events in all."""

    first: int = 0
    last: int | None = None
    ports: tuple[int, ...] | None = None
    sample_every: int = 1
    max_events: int = 1 << 20

    def __post_init__(self) -> None:
        if self.first < 0 or (self.last is not None and self.last < self.first):
            raise ValueError(f"frame range {self.first}:{self.last} is empty or negative")
        if self.sample_every < 1:
            raise ValueError("sample_every must be at least 1")
        if self.max_events < 1:
            raise ValueError("max_events must be at least 1")
        if self.ports is not None and any(not 0 <= p < 64 for p in self.ports):
            raise ValueError(f"ports must be 0..63, got {self.ports}")

    @property
    def port_mask(self) -> int:
        if self.ports is None:
            return ALL_PORTS
        return sum(1 << p for p in set(self.ports))


class FrameLog:
    """The core's frame log on one chip: enable, collect events between runs, read them."""

    def __init__(self, core: Any, selection: Selection | None, bucket_shift: int = 10,
                 waits: bool = False) -> None:
        self._core = core
        self.selection = selection
        sel = selection or Selection()
        core.enable_frame_log(frames=selection is not None, max_events=sel.max_events,
                              first=sel.first,
                              last=0xFFFFFFFF if sel.last is None else sel.last,
                              port_mask=sel.port_mask, sample_every=sel.sample_every,
                              bucket_shift=bucket_shift, waits=waits)
        self._chunks: list[np.ndarray] = []
        self._waits: dict[tuple[int, int, int], int] = {}   # (me, ctx, end) -> unit
        self.baseline = {m["me"]: (m["busy"], m["stalled"], m["idle"])
                         for m in core.utilisation()["mes"]}

    def set_trace_points(self, me: int, pcs: Iterable[int]) -> None:
        self._core.set_trace_points(me, sorted(set(int(pc) for pc in pcs)))

    def collect(self) -> None:
        raw = self._core.take_frame_events()
        if raw:
            self._chunks.append(np.frombuffer(raw, dtype=EVENT_DTYPE))
        waits = np.frombuffer(self._core.take_frame_waits(), dtype=WAIT_DTYPE)
        if len(waits):
            self._waits.update(zip(zip(waits["me"].tolist(), waits["ctx"].tolist(),
                                       waits["end"].tolist(), strict=True),
                                   waits["unit"].tolist(), strict=True))

    def wait_unit(self, me: int, ctx: int, end: int) -> str | None:
        """The unit a context's sleeping interval ending at cycle ``end`` waited on (the
        log must have been made with ``waits``)."""
        unit = self._waits.get((me, ctx, end))
        return None if unit is None else self._units()[unit]

    def _units(self) -> list[str]:
        if not hasattr(self, "_unit_names"):
            self._unit_names: list[str] = list(self.status()["units"])
        return self._unit_names

    def events(self) -> np.ndarray:
        """Every event so far, in time order (stable: same-cycle events keep log order)."""
        self.collect()
        if not self._chunks:
            return np.zeros(0, dtype=EVENT_DTYPE)
        if len(self._chunks) > 1:
            self._chunks = [np.concatenate(self._chunks)]
        events = self._chunks[0]
        return events[np.argsort(events["cycle"], kind="stable")]

    def status(self) -> dict[str, Any]:
        return dict(self._core.frame_log_status())

    def utilisation_raw(self) -> dict[str, Any]:
        return dict(self._core.utilisation())


# --------------------------------------------------------------------------- journeys
@dataclass(frozen=True)
class TracePointInfo:
    """What a trace point means: ``kind`` ("verdict", "reason", ...) and its value."""

    kind: str
    value: int | None = None
    label: str = ""


@dataclass
class Hop:
    """One event of a frame's journey."""

    kind: str
    cycle: int
    end: int
    me: int = -1
    ctx: int = -1
    pc: int = -1
    unit: str = ""
    op: str = ""
    a: int = 0
    b: int = 0
    c: int = 0


@dataclass
class Journey:
    """A frame from the wire to the wire (or to its drop)."""

    frame: int
    port: int = -1
    seq: int = -1
    length: int = 0
    first_bit: int = 0
    last_bit: int = 0
    hops: list[Hop] = field(default_factory=list)
    out_port: int | None = None
    departed: tuple[int, int] | None = None   # first, last bit cycle
    rbuf_drop: bool = False
    verdict: TracePointInfo | None = None     # the last verdict trace point it passed
    verdict_at: Hop | None = None
    reason: TracePointInfo | None = None
    drop_reason: str | None = None            # set by the program's view (runtime)

    @property
    def contexts(self) -> list[tuple[int, int]]:
        """(me, ctx) pairs that carried the frame, in order."""
        out: list[tuple[int, int]] = []
        for h in self.hops:
            if h.me >= 0 and (h.me, h.ctx) not in out:
                out.append((h.me, h.ctx))
        return out

    @property
    def outcome(self) -> str:
        if self.rbuf_drop:
            return "dropped: rbuf_full"
        if self.departed is not None:
            return f"sent on port {self.out_port}"
        if self.drop_reason is not None:
            return f"dropped: {self.drop_reason}"
        if self.verdict is not None:
            return self.verdict.label or self.verdict.kind
        return "not seen to leave"


def _op_name(op: int, sub: int) -> str:
    ins = isa.BY_OPCODE.get(op)
    if ins is None:
        return f"op{op}.{sub}"
    subs = COMMAND_SUBS.get(ins.name)
    return f"{ins.name}[{subs.get(sub, sub)}]" if subs else ins.name


COMMAND_SUBS: dict[str, dict[int, str]] = {
    name: {v: k for k, v in table.items()}
    for name, table in (("sram", isa.SRAM_CMDS), ("scratch", isa.SCRATCH_CMDS),
                        ("dram", isa.DRAM_CMDS), ("msf", isa.MSF_CMDS))
}


def journeys(events: np.ndarray, units: list[str],
             points: dict[tuple[int, int], TracePointInfo] | None = None) -> dict[int, Journey]:
    """One ``Journey`` per frame in ``events`` (``FrameLog.events()``), keyed by frame id.
    ``points`` says what the trace points are ((me, pc) -> info)."""
    points = points or {}
    out: dict[int, Journey] = {}
    columns = [events[name].tolist() for name in
               ("frame", "kind", "cycle", "end", "me", "ctx", "pc", "unit", "op", "sub",
                "a", "b", "c")]
    op_names: dict[tuple[int, int], str] = {}
    for frame, kind, cycle, end, me, ctx, pc, unit, op, sub, a, b, c in zip(*columns,
                                                                           strict=True):
        j = out.get(frame)
        if j is None:
            j = out[frame] = Journey(frame)
        if kind == COMMAND:
            name = op_names.get((op, sub))
            if name is None:
                name = op_names[(op, sub)] = _op_name(op, sub)
            hop = Hop("command", cycle, end, me, ctx, pc, units[unit], name, a, b, c)
        else:
            hop = Hop(KIND_NAMES[kind], cycle, end, me, ctx,
                      pc if kind == TRACE_POINT else -1, "", "", a, b, c)
        j.hops.append(hop)
        if kind == ARRIVAL:
            j.port, j.seq, j.length = a, b, c
            j.first_bit, j.last_bit = cycle, end
        elif kind == RBUF_DROP:
            j.rbuf_drop = True
        elif kind == DEPARTURE:
            j.out_port, j.departed = a, (cycle, end)
        elif kind == TRACE_POINT:
            info = points.get((me, pc))
            if info is not None and info.kind == "verdict":
                j.verdict, j.verdict_at = info, hop
            elif info is not None and info.kind == "reason":
                j.reason = info
    return out


# --------------------------------------------------------------------------- trace file
SourceOf = Callable[[int, int], "str | None"]   # (me, pc) -> "file:line:col"
MAX_LINES = 24             # source lines listed on a slice (the rest are counted)
MEDIA_PID = 10_000
UNITS_PID = 10_001
PACKET_PID_BASE = 20_000   # + ME index: the ME's contexts as packet carriers


@dataclass(frozen=True)
class TraceOptions:
    """What goes into the trace file."""

    cap_bytes: int = 10_000_000
    commands: bool = True          # the commands a carrying context issued (async slices)
    keep: Callable[[Journey], bool] | None = None   # frame filter (flow, verdict ...)
    block_of: SourceOf | None = None   # (me, pc) -> the MBL block (or fn) of the line
    compress: bool = True          # .pftrace: zlib-compressed packets (Perfetto reads them)


@dataclass
class TraceWriteResult:
    path: Path
    frames: int              # frames written
    frames_total: int        # frames in the log that passed the filter
    bytes: int
    truncated: bool


class _Writer:
    """Cycle -> microsecond conversion and the async-slice ids of one file."""

    def __init__(self, clock_hz: float) -> None:
        self.us = 1e6 / clock_hz
        self.async_id = 0

    def ts(self, cycle: int) -> float:
        return round(cycle * self.us, 6)


def _short_sources(source_of: SourceOf) -> SourceOf:
    """``source_of`` with the file's folders left out ("ipv4_fwd.mbl:101:5"), memoised."""
    memo: dict[tuple[int, int], str | None] = {}

    def short(me: int, pc: int) -> str | None:
        key = (me, pc)
        if key not in memo:
            text = source_of(me, pc)
            memo[key] = None if text is None else text.rsplit("/", 1)[-1]
        return memo[key]

    return short


def _context_limits(journeys: list[Journey]) -> dict[tuple[int, int, int], int]:
    """(frame, me, ctx) -> the cycle the context's next frame starts: a frame's slice on a
    context ends there at the latest, so slices on one track never overlap (a context may
    put a handle for a frame after it took up the next one)."""
    starts: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for j in journeys:
        first: dict[tuple[int, int], int] = {}
        for h in j.hops:
            if h.me >= 0 and (h.me, h.ctx) not in first:
                first[(h.me, h.ctx)] = h.cycle
        for key, cycle in first.items():
            starts.setdefault(key, []).append((cycle, j.frame))
    limits = {}
    for (me, ctx), items in starts.items():
        items.sort()
        for (_, frame), (later, _) in zip(items, items[1:], strict=False):
            limits[(frame, me, ctx)] = later
    return limits


def _frame_events(j: Journey, w: _Writer, source_of: SourceOf, options: TraceOptions,
                  limits: dict[tuple[int, int, int], int] | None = None,
                  ) -> list[dict[str, Any]]:
    """The trace events of one journey (``limits``: ``_context_limits``)."""
    out: list[dict[str, Any]] = []
    title = f"frame {j.frame} (port {j.port} #{j.seq})"
    flow_steps: list[tuple[int, int, int]] = []   # (ts cycle, pid, tid) of each slice
    if j.port >= 0:
        out.append({"name": title, "ph": "X", "pid": MEDIA_PID, "tid": 2 * j.port,
                    "ts": w.ts(j.first_bit), "dur": round(w.ts(j.last_bit) - w.ts(j.first_bit), 6),
                    "args": {"frame": j.frame, "port": j.port, "seq": j.seq,
                             "length": j.length, "outcome": j.outcome}})
        flow_steps.append((j.first_bit, MEDIA_PID, 2 * j.port))
    # one slice per context that carried it: from its first to its last event there
    spans: dict[tuple[int, int], list[Hop]] = {}
    for h in j.hops:
        if h.me >= 0:
            spans.setdefault((h.me, h.ctx), []).append(h)
    for (me, ctx), hops in spans.items():
        start = min(h.cycle for h in hops)
        stop = min(max(h.cycle for h in hops) + 1,
                   (limits or {}).get((j.frame, me, ctx), 1 << 62))
        lines = sorted({s for h in hops if h.pc >= 0
                        for s in [source_of(me, h.pc)] if s is not None})
        args: dict[str, Any] = {"frame": j.frame, "outcome": j.outcome,
                                "lines": lines[:MAX_LINES]}
        if len(lines) > MAX_LINES:      # said, not dropped silently (each command has its line)
            args["lines_left_out"] = len(lines) - MAX_LINES
        if options.block_of is not None:
            args["blocks"] = sorted({b for h in hops if h.pc >= 0
                                     for b in [options.block_of(me, h.pc)] if b is not None})
        out.append({"name": title, "ph": "X", "pid": PACKET_PID_BASE + me, "tid": ctx,
                    "ts": w.ts(start), "dur": round(max(w.ts(stop) - w.ts(start), 0.0), 6),
                    "args": args})
        flow_steps.append((start, PACKET_PID_BASE + me, ctx))
        for h in hops:
            if h.kind == "command" and options.commands:
                w.async_id += 1
                name = f"{h.unit} {h.op}"
                common = {"name": name, "cat": "c", "id": w.async_id,
                          "pid": PACKET_PID_BASE + me, "tid": ctx}
                out.append({**common, "ph": "b", "ts": w.ts(h.cycle),
                            "args": {"pc": h.pc, "source": source_of(me, h.pc),
                                     "addr": hex(h.a)}})
                out.append({**common, "ph": "e", "ts": w.ts(max(h.end, h.cycle))})
            elif h is j.verdict_at and j.verdict is not None:
                label = j.verdict.label
                if j.reason is not None and j.verdict.value == 2:
                    label = f"{label}({j.reason.label})"
                out.append({"name": label, "ph": "i", "s": "t", "pid": PACKET_PID_BASE + me,
                            "tid": ctx, "ts": w.ts(h.cycle),
                            "args": {"frame": j.frame, "verdict": label, "pc": h.pc,
                                     "source": source_of(me, h.pc),
                                     "block": options.block_of(me, h.pc)
                                     if options.block_of is not None else None}})
    if j.rbuf_drop:
        out.append({"name": "drop: rbuf_full", "ph": "i", "s": "t", "pid": MEDIA_PID,
                    "tid": 2 * j.port, "ts": w.ts(j.last_bit), "args": {"frame": j.frame}})
    if j.departed is not None and j.out_port is not None:
        first, last = j.departed
        out.append({"name": title, "ph": "X", "pid": MEDIA_PID, "tid": 2 * j.out_port + 1,
                    "ts": w.ts(first), "dur": round(w.ts(last) - w.ts(first), 6),
                    "args": {"frame": j.frame, "port": j.out_port}})
        flow_steps.append((first, MEDIA_PID, 2 * j.out_port + 1))
    flow_steps.sort()
    for k, (cycle, pid, tid) in enumerate(flow_steps if len(flow_steps) > 1 else []):
        ph = "s" if k == 0 else ("f" if k == len(flow_steps) - 1 else "t")
        step: dict[str, Any] = {"name": "frame", "cat": "frame", "ph": ph, "id": j.frame,
                                "pid": pid, "tid": tid, "ts": w.ts(cycle)}
        if ph != "s":
            step["bp"] = "e"
        out.append(step)
    return out


def _metadata(ports: Iterable[int], mes: Iterable[int],
              me_name: Callable[[int], str]) -> list[dict[str, Any]]:
    meta: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": MEDIA_PID, "tid": 0,
         "args": {"name": "ports (wire)"}},
        {"name": "process_sort_index", "ph": "M", "pid": MEDIA_PID, "tid": 0,
         "args": {"sort_index": -2}},
    ]
    for p in sorted(set(ports)):
        for tid, what in ((2 * p, "in"), (2 * p + 1, "out")):
            meta.append({"name": "thread_name", "ph": "M", "pid": MEDIA_PID, "tid": tid,
                         "args": {"name": f"port {p} {what}"}})
    for me in sorted(set(mes)):
        meta.append({"name": "process_name", "ph": "M", "pid": PACKET_PID_BASE + me,
                     "tid": 0, "args": {"name": f"{me_name(me)} packets"}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": PACKET_PID_BASE + me,
                     "tid": 0, "args": {"sort_index": me}})
    return meta


def write_packet_trace(path: str | Path, frames: dict[int, Journey], clock_hz: float,
                       source_of: SourceOf, me_name: Callable[[int], str] = lambda m: f"ME {m}",
                       options: TraceOptions | None = None,
                       log_status: dict[str, Any] | None = None,
                       extra_events: list[dict[str, Any]] | None = None) -> TraceWriteResult:
    """Write the journeys as trace-event JSON (or, for a ``PROTO_SUFFIXES`` name, Perfetto's
    protobuf: ``perfetto_proto``), whole frames in id order while the file stays within
    ``options.cap_bytes``; ``otherData`` (the protobuf's ``trace info``) records the cap,
    whether it was reached, and whether the core's event cap was (``log_status``)."""
    options = options or TraceOptions()
    source_of = _short_sources(source_of)
    w = _Writer(clock_hz)
    kept = [j for _, j in sorted(frames.items())
            if options.keep is None or options.keep(j)]
    ports = {j.port for j in kept if j.port >= 0} | {j.out_port for j in kept
                                                       if j.out_port is not None}
    mes = {h.me for j in kept for h in j.hops if h.me >= 0}
    limits = _context_limits(kept)
    status = log_status or {}
    other = {
        "clock_hz": clock_hz, "time_unit": "simulated microseconds",
        "core_events_recorded": status.get("recorded"),
        "core_events_lost": status.get("lost"),
        "core_event_cap_reached_at_cycle": status.get("full_at") if status.get("lost") else None,
    }
    return write_trace_events(path, _metadata(ports, mes, me_name) + (extra_events or []),
                              (_frame_events(j, w, source_of, options, limits) for j in kept),
                              len(kept), options, other)


def write_trace_events(path: str | Path, head: list[dict[str, Any]],
                       frames: Iterable[list[dict[str, Any]]], frames_total: int,
                       options: TraceOptions, other: dict[str, Any]) -> TraceWriteResult:
    """Write trace events -- ``head`` (metadata, counters), then each frame's events, taken
    from ``frames`` until the next would take the file past ``options.cap_bytes`` -- as
    trace-event JSON or, for a ``PROTO_SUFFIXES`` name, Perfetto's protobuf
    (``perfetto_proto``); ``other`` goes into the file's metadata with the frame counts,
    the cap and whether it was reached."""
    proto = Path(path).suffix in PROTO_SUFFIXES
    if proto:
        try:
            from .perfetto_proto import ProtoEncoder  # needs the perfetto package
        except ImportError as err:
            raise NpkitError(f"{path}: Perfetto's protobuf format needs the perfetto package "
                             f"(pip install perfetto): {err}; or write a .json trace") from None
        encoder: _JsonEncoder | ProtoEncoder = ProtoEncoder(compress=options.compress)
    else:
        encoder = _JsonEncoder()
    no_room = ValueError(f"a cap of {options.cap_bytes} bytes leaves no room for any frame")
    room = options.cap_bytes - _INFO_RESERVE     # the trace info and the closing bytes
    if room <= 0:
        raise no_room
    encoder.start(room)
    try:
        encoder.offer(encoder.encode(head), frame=False)
        for events in frames:
            if not encoder.offer(encoder.encode(events), frame=True):
                break
        written = encoder.close()
    except ValueError:
        raise no_room from None
    truncated = written < frames_total
    other = {**other, "frames_written": written, "frames_selected": frames_total,
             "cap_bytes": options.cap_bytes, "cap_reached": truncated}
    if truncated:
        other["note"] = (f"size cap reached: {written} of {frames_total} selected frames "
                         "written; narrow the selection (frame range, ports, sampling) to see "
                         "the rest")
    if proto and options.compress:
        other["compression"] = ("zlib (deflate) in TracePacket.compressed_packets, as "
                                "Perfetto's tracing service writes it")
    data = encoder.finish(other)
    Path(path).write_bytes(data)
    return TraceWriteResult(Path(path), written, frames_total, len(data), truncated)


PROTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb")
_INFO_RESERVE = 2048   # bytes of the cap kept for the trace info and the file's closing


class _JsonEncoder:
    """Trace-event JSON: one text per event, joined into the object format at the end;
    parts are taken while they fit (a comma between events)."""

    def __init__(self) -> None:
        self.room = self.size = self.frames = 0
        self.parts: list[str] = []
        self.full = False

    def encode(self, events: list[dict[str, Any]]) -> list[str]:
        return [json.dumps(e, separators=(",", ":")) for e in events]

    def start(self, room: int) -> None:
        self.room = room

    def offer(self, parts: list[str], frame: bool) -> bool:
        more = sum(len(t) + 1 for t in parts)
        if self.full or self.size + more > self.room:
            if not frame:
                raise ValueError("the cap leaves no room for the trace's metadata")
            self.full = True
            return False
        self.parts += parts
        self.size += more
        self.frames += frame
        return True

    def close(self) -> int:
        return self.frames

    def finish(self, other: dict[str, Any]) -> bytes:
        return ('{"displayTimeUnit":"ns","otherData":' + json.dumps(other, separators=(",", ":"))
                + ',"traceEvents":[' + ",".join(self.parts) + "]}").encode("utf-8")


def iter_verdicts(frames: dict[int, Journey]) -> Iterator[tuple[Journey, TracePointInfo]]:
    for j in frames.values():
        if j.verdict is not None:
            yield j, j.verdict
