"""Perfetto's native protobuf trace format for the per-packet trace (``.pftrace``).

The same trace events the JSON writer makes (``sim/packet_trace.py``) become Perfetto
``TracePacket``s through the ``perfetto`` package's generated protos (PyPI ``perfetto``,
which needs ``protobuf``; a dependency of npkit since the traces landed):

* a process ("M" process_name) is a process track, a thread a thread track under it;
* a complete slice ("X") is a SLICE_BEGIN / SLICE_END pair on its thread's track; the flow
  steps ("s"/"t"/"f") that JSON binds to the enclosing slice become the slice's
  ``flow_ids`` (``terminating_flow_ids`` for the last step);
* an async command slice ("b"/"e") goes on a lane track under its context's thread (lanes
  are allocated so that slices on one lane never overlap, as protobuf tracks require);
* an instant ("i") is an INSTANT, a counter ("C") a COUNTER on a counter track per name;
* ``args`` are debug annotations; the file's metadata (cap, frames written) is an instant
  named ``trace info`` on its own track at time 0, on a sequence of its own.

Size: the events are one packet sequence (``trusted_packet_sequence_id`` 1) with Perfetto's
interning -- event names, annotation names and string annotation values are written once,
in the ``interned_data`` of the first packet that uses them, and referred to by iid after
(``name_iid``, ``string_value_iid``).  The sequence's first packet says
SEQ_INCREMENTAL_STATE_CLEARED and sets ``trace_packet_defaults`` (the delta clock), so every
packet of the sequence says SEQ_NEEDS_INCREMENTAL_STATE (TracePacket's rule for defaults).
A hexadecimal string value (a command's address) is a ``pointer_value``, which the UI shows
in hex.  Each ``encode`` call returns its packets as one part.  Interned entries belong to
the sequence from the packet that carries them on: a caller that drops an encoded part must
not encode more after it (the writer stops at the first frame over its cap).

The parts go into the file through a packer that keeps the cap exactly: by default
(``compress``) they are zlib-compressed into ``compressed_packets`` TracePackets (Perfetto's
own format for compressed traces: each holds Trace-framed packets, deflated with a zlib
header, as the tracing service writes them with ``compression_type: DEFLATE``; the trace
processor inflates them and reads the packets inside in order).  A compressed packet holds
about ``CHUNK_RAW`` bytes of packets (at most ``MAX_COMPRESSED`` compressed: the limit
Perfetto's proto comment gives is 512 KB); the last one that would pass the cap is cut to
the longest run of whole frames that fits.

Timestamps are nanoseconds of simulated time.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (  # type: ignore[import-not-found]
    ClockSnapshot,
    DebugAnnotation,
    InternedData,
    TracePacket,
    TrackDescriptor,
    TrackEvent,
)

SEQUENCE = 1        # the events, with interning
INFO_SEQUENCE = 2   # the trace info instant, written last but placed first, without it
_TRACE_PACKET_TAG = b"\x0a"   # Trace.packet: field 1, length-delimited
_HEX = re.compile(r"^0x[0-9a-f]+$")
_CLEARED = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
_NEEDS = TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
DELTA_CLOCK = 64    # sequence-scoped, incremental: a packet's timestamp is the step from the last
_BOOTTIME = ClockSnapshot.Clock.BOOTTIME
CHUNK_RAW = 1 << 20        # bytes of packets per compressed packet (about 5:1 on these traces)
MAX_COMPRESSED = 500_000   # a compressed packet above this is split (Perfetto: < 512 KB)
ZLIB_LEVEL = 6             # what Perfetto's tracing service uses


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _frame(packet: TracePacket) -> bytes:
    body = packet.SerializeToString()
    return _TRACE_PACKET_TAG + _varint(len(body)) + body


def _set_value(a: DebugAnnotation, value: Any) -> bool:
    """A non-string annotation value; False for a string (the caller interns it)."""
    if isinstance(value, bool):
        a.bool_value = value
    elif isinstance(value, int):
        a.int_value = value
    elif isinstance(value, float):
        a.double_value = value
    else:
        return False
    return True


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ", ".join(map(str, value))


class _Interner:
    """One interning table of the sequence: text -> iid, new entries go into the packet."""

    def __init__(self, field: str, text_field: str) -> None:
        self.field, self.text_field = field, text_field
        self.iids: dict[str, int] = {}

    def iid(self, data: InternedData, text: str) -> int:
        iid = self.iids.get(text)
        if iid is None:
            iid = self.iids[text] = len(self.iids) + 1
            entry = getattr(data, self.field).add()
            entry.iid = iid
            setattr(entry, self.text_field, text if self.text_field == "name"
                    else text.encode("utf-8"))
        return iid


class ProtoEncoder:
    """Trace events -> serialized, Trace-framed packets (concatenated, they are a trace)."""

    def __init__(self, compress: bool = True) -> None:
        self.compress = compress
        self._packer: _Plain | _Deflated = _Plain(0)
        self._next_uuid = 1
        self._process: dict[int, int] = {}                # pid -> track uuid
        self._thread: dict[tuple[int, int], int] = {}     # (pid, tid) -> track uuid
        self._lanes: dict[tuple[int, int], list[tuple[int, int]]] = {}  # -> [(uuid, end ns)]
        self._async: dict[tuple[int, str], tuple[int, int, int]] = {}  # -> lane, begin, ns
        self._counter: dict[tuple[int, str], int] = {}
        self._pending: list[bytes] = []                   # descriptors made on the way
        self._started = False                             # the sequence's first packet made
        self._new = InternedData()                        # entries the part being made adds
        self._timed: list[tuple[int, int, float, TracePacket]] = []  # its events, sort key
        self._order = 0                                   # events made, for the sort key
        self._names = _Interner("event_names", "name")
        self._arg_names = _Interner("debug_annotation_names", "name")
        self._strings = _Interner("debug_annotation_string_values", "str")

    # ---------------------------------------------------------------- tracks
    def _uuid(self) -> int:
        self._next_uuid += 1
        return self._next_uuid

    @staticmethod
    def _emit(packet: TracePacket) -> bytes:
        """A packet of the events' sequence: all of them rely on its defaults (the delta
        clock), so all say SEQ_NEEDS_INCREMENTAL_STATE."""
        packet.trusted_packet_sequence_id = SEQUENCE
        packet.sequence_flags |= _NEEDS
        return _frame(packet)

    def _describe(self, uuid: int, fill: Any) -> None:
        packet = TracePacket()
        d: TrackDescriptor = packet.track_descriptor
        d.uuid = uuid
        fill(d)
        self._pending.append(self._emit(packet))

    def process(self, pid: int, name: str | None = None) -> int:
        uuid = self._process.get(pid)
        if uuid is None or name is not None:
            uuid = uuid or self._uuid()
            self._process[pid] = uuid

            def fill(d: TrackDescriptor) -> None:
                d.process.pid = pid
                if name is not None:
                    d.process.process_name = name
            self._describe(uuid, fill)
        return uuid

    def thread(self, pid: int, tid: int, name: str | None = None) -> int:
        key = (pid, tid)
        uuid = self._thread.get(key)
        if uuid is None or name is not None:
            parent = self.process(pid) if pid not in self._process else self._process[pid]
            uuid = uuid or self._uuid()
            self._thread[key] = uuid

            def fill(d: TrackDescriptor) -> None:
                d.parent_uuid = parent
                # the thread's tid is made unique per process: Perfetto keys threads by tid
                d.thread.pid = pid
                d.thread.tid = pid * 1000 + tid
                if name is not None:
                    d.thread.thread_name = name
            self._describe(uuid, fill)
        return uuid

    def _lane(self, pid: int, tid: int, start: int) -> int:
        lanes = self._lanes.setdefault((pid, tid), [])
        for k, (uuid, end) in enumerate(lanes):
            if end <= start:
                lanes[k] = (uuid, start)
                return uuid
        uuid = self._uuid()
        parent = self.thread(pid, tid)
        lane_name = f"commands {len(lanes)}"

        def fill(d: TrackDescriptor) -> None:
            d.parent_uuid = parent
            d.name = lane_name
        self._describe(uuid, fill)
        lanes.append((uuid, start))
        return uuid

    def _counter_track(self, pid: int, name: str) -> int:
        key = (pid, name)
        uuid = self._counter.get(key)
        if uuid is None:
            uuid = self._counter[key] = self._uuid()
            parent = self.process(pid) if pid not in self._process else self._process[pid]

            def fill(d: TrackDescriptor) -> None:
                d.parent_uuid = parent
                d.name = name
                d.counter.SetInParent()
            self._describe(uuid, fill)
        return uuid

    # ---------------------------------------------------------------- events
    def encode(self, events: list[dict[str, Any]]) -> list[bytes]:
        """The events' packets, as one part (nothing for no events)."""
        flows: dict[tuple[int, int, float], list[tuple[str, int]]] = {}
        for e in events:
            if e["ph"] in ("s", "t", "f"):
                flows.setdefault((e["pid"], e["tid"], e["ts"]), []).append((e["ph"], e["id"]))
        for e in events:
            ph = e["ph"]
            if ph == "M":
                if e["name"] == "process_name":
                    self.process(e["pid"], e["args"]["name"])
                elif e["name"] == "thread_name":
                    self.thread(e["pid"], e["tid"], e["args"]["name"])
            elif ph == "X":
                start = round(e["ts"] * 1000)
                track = self.thread(e["pid"], e["tid"])
                begin = self._event(track, TrackEvent.TYPE_SLICE_BEGIN, e)
                for kind, flow in flows.get((e["pid"], e["tid"], e["ts"]), []):
                    if kind == "f":
                        begin.track_event.terminating_flow_ids.append(flow)
                    else:
                        begin.track_event.flow_ids.append(flow)
                self._end(round((e["ts"] + e["dur"]) * 1000), track, self._add(start, begin),
                          start)
            elif ph == "b":
                start = round(e["ts"] * 1000)
                lane = self._lane(e["pid"], e["tid"], start)
                begun = self._add(start, self._event(lane, TrackEvent.TYPE_SLICE_BEGIN, e))
                self._async[(e["id"], e["cat"])] = (lane, begun, start)
            elif ph == "e":
                lane, begun, start = self._async.pop((e["id"], e["cat"]))
                stop = round(e["ts"] * 1000)
                lanes = self._lanes[(e["pid"], e["tid"])]
                lanes[[u for u, _ in lanes].index(lane)] = (lane, stop)
                self._end(stop, lane, begun, start)
            elif ph == "i":
                track = self.thread(e["pid"], e["tid"])
                self._add(round(e["ts"] * 1000), self._event(track, TrackEvent.TYPE_INSTANT, e))
            elif ph == "C":
                track = self._counter_track(e["pid"], e["name"])
                packet = TracePacket()
                packet.track_event.type = TrackEvent.TYPE_COUNTER
                packet.track_event.track_uuid = track
                value = next(iter(e["args"].values()))
                if isinstance(value, int):
                    packet.track_event.counter_value = value
                else:
                    packet.track_event.double_counter_value = float(value)
                self._add(round(e["ts"] * 1000), packet)
        return self._part()

    def _part(self) -> list[bytes]:
        """The part: a head packet (the sequence's first: state cleared and the delta clock
        as default; the interned entries the part adds; a clock snapshot at its first
        event), the track descriptors it made, then its events in time order, each stamped
        with the step from the one before (``_add``, ``_end``: how events at one time are
        ordered)."""
        timed = sorted(self._timed, key=lambda t: t[:3])
        head = TracePacket()
        if not self._started:
            self._started = True
            head.sequence_flags = _CLEARED
            head.trace_packet_defaults.timestamp_clock_id = DELTA_CLOCK
        if self._new.ByteSize():
            head.interned_data.CopyFrom(self._new)
            head.sequence_flags |= _NEEDS
        if timed:
            base = timed[0][0]
            for clock_id in (DELTA_CLOCK, _BOOTTIME):
                clock = head.clock_snapshot.clocks.add()
                clock.clock_id = clock_id
                clock.timestamp = base
            head.clock_snapshot.clocks[0].is_incremental = True
        out = [self._emit(head)] if head.ByteSize() else []
        out += self._flush()
        last = timed[0][0] if timed else 0
        for ts, _, _, packet in timed:
            packet.timestamp = ts - last
            last = ts
            out.append(self._emit(packet))
        self._new = InternedData()
        self._timed = []
        return [b"".join(out)] if out else []

    def _flush(self) -> list[bytes]:
        pending, self._pending = self._pending, []
        return pending

    def _add(self, ts: int, packet: TracePacket) -> int:
        """An event at ``ts`` ns (a begin, instant or counter), after those made before it
        at the same time; its number."""
        self._order += 1
        self._timed.append((ts, 1, self._order, packet))
        return self._order

    def _end(self, ts: int, track: int, begun: int, start: int) -> None:
        """The end of the slice whose begin ``_add`` numbered ``begun`` (at ``start``).  At
        one time, ends come before begins (a slice closes before the next on its track
        opens), the later-begun first (an inner slice closes before the one around it); a
        slice of no duration ends right after its own begin."""
        packet = TracePacket()
        packet.track_event.type = TrackEvent.TYPE_SLICE_END
        packet.track_event.track_uuid = track
        key = (0, -begun) if ts > start else (1, begun + 0.5)
        self._timed.append((ts, *key, packet))

    def _event(self, track: int, kind: int, e: dict[str, Any]) -> TracePacket:
        packet = TracePacket()
        event = packet.track_event
        event.type = kind
        event.track_uuid = track
        event.name_iid = self._names.iid(self._new, e["name"])
        for key, value in e.get("args", {}).items():
            if value is None:
                continue
            a = event.debug_annotations.add()
            a.name_iid = self._arg_names.iid(self._new, key)
            if not _set_value(a, value):
                text = _text(value)
                if _HEX.match(text):
                    a.pointer_value = int(text, 16)
                else:
                    a.string_value_iid = self._strings.iid(self._new, text)
        return packet

    # ---------------------------------------------------------------- the file
    def start(self, room: int) -> None:
        """Parts offered from now on go into at most ``room`` bytes of file."""
        self._packer = (_Deflated if self.compress else _Plain)(room)

    def offer(self, parts: list[bytes], frame: bool) -> bool:
        """Add a part (one frame's, or the metadata's if not ``frame``); False once the room
        is used up (nothing more is taken then)."""
        return self._packer.offer(b"".join(parts), frame)

    def close(self) -> int:
        """Pack what is pending; the number of frames the file holds (a compressed packet
        over the room gives back the frames it cannot hold)."""
        return self._packer.close()

    def finish(self, other: dict[str, Any]) -> bytes:
        """The trace: the trace info first (its own sequence, names in full), then the
        packed parts (``close`` first)."""
        info = self._uuid()
        descriptor = TracePacket()
        descriptor.trusted_packet_sequence_id = INFO_SEQUENCE
        descriptor.track_descriptor.uuid = info
        descriptor.track_descriptor.name = "trace info"
        packet = TracePacket()
        packet.trusted_packet_sequence_id = INFO_SEQUENCE
        packet.timestamp = 0
        packet.track_event.type = TrackEvent.TYPE_INSTANT
        packet.track_event.track_uuid = info
        packet.track_event.name = "trace info"
        for key, value in other.items():
            if value is None:
                continue
            a = packet.track_event.debug_annotations.add()
            a.name = key
            if not _set_value(a, value):
                a.string_value = _text(value)
        return b"".join([_frame(descriptor), _frame(packet)] + self._packer.out)


class _Plain:
    """Parts written as they are, while they fit."""

    def __init__(self, room: int) -> None:
        self.room, self.size, self.frames = room, 0, 0
        self.out: list[bytes] = []
        self.full = False

    def offer(self, part: bytes, frame: bool) -> bool:
        if self.full or self.size + len(part) > self.room:
            if not frame:
                raise ValueError("the cap leaves no room for the trace's metadata")
            self.full = True
            return False
        self.out.append(part)
        self.size += len(part)
        self.frames += frame
        return True

    def close(self) -> int:
        return self.frames


class _Deflated:
    """Parts gathered into chunks of about ``CHUNK_RAW`` bytes, each chunk one
    ``compressed_packets`` packet; a chunk that would pass the room is cut to the longest
    run of whole parts that fits (its size is known only once it is compressed)."""

    def __init__(self, room: int) -> None:
        self.room, self.size, self.frames = room, 0, 0
        self.out: list[bytes] = []
        self.full = False
        self._pending: list[tuple[bytes, bool]] = []
        self._raw = 0

    def offer(self, part: bytes, frame: bool) -> bool:
        if self.full:
            return False
        self._pending.append((part, frame))
        self._raw += len(part)
        if self._raw >= CHUNK_RAW:
            self._pack()
        return not self.full

    def close(self) -> int:
        if self._pending:
            self._pack()
        return self.frames

    def _pack(self) -> None:
        pending, self._pending, self._raw = self._pending, [], 0
        packed = _compressed([part for part, _ in pending])
        if self.size + sum(map(len, packed)) > self.room:
            self.full = True
            # the longest prefix that fits: the parts that are not frames come first and
            # must fit; compressed sizes grow with the prefix, so bisect
            need = next((k for k, (_, frame) in enumerate(pending) if frame), len(pending))

            def fits(k: int) -> list[bytes] | None:
                out = _compressed([part for part, _ in pending[:k]]) if k else []
                return out if self.size + sum(map(len, out)) <= self.room else None

            if need and fits(need) is None:
                raise ValueError("the cap leaves no room for the trace's metadata")
            lo, hi = need, len(pending) - 1       # fits(lo), not fits(hi + 1)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if fits(mid) is None:
                    hi = mid - 1
                else:
                    lo = mid
            pending = pending[:lo]
            packed = fits(lo) or []
        self.out += packed
        self.size += sum(map(len, packed))
        self.frames += sum(frame for _, frame in pending)


def _compressed(parts: list[bytes]) -> list[bytes]:
    """The parts as framed ``compressed_packets`` packets, split where one would pass
    ``MAX_COMPRESSED``."""
    if not parts:
        return []
    packet = TracePacket()
    packet.compressed_packets = zlib.compress(b"".join(parts), ZLIB_LEVEL)
    if len(packet.compressed_packets) > MAX_COMPRESSED and len(parts) > 1:
        half = len(parts) // 2
        return _compressed(parts[:half]) + _compressed(parts[half:])
    return [_frame(packet)]
