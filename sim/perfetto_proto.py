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
  named ``trace info`` on its own track at time 0.

Timestamps are nanoseconds of simulated time.
"""

from __future__ import annotations

from typing import Any

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import (  # type: ignore[import-not-found]
    TracePacket,
    TrackDescriptor,
    TrackEvent,
)

SEQUENCE = 1
_TRACE_PACKET_TAG = b"\x0a"   # Trace.packet: field 1, length-delimited


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


def _annotate(event: TrackEvent, args: dict[str, Any]) -> None:
    for key, value in args.items():
        if value is None:
            continue
        a = event.debug_annotations.add()
        a.name = key
        if isinstance(value, bool):
            a.bool_value = value
        elif isinstance(value, int):
            a.int_value = value
        elif isinstance(value, float):
            a.double_value = value
        else:
            a.string_value = value if isinstance(value, str) else ", ".join(map(str, value))


class ProtoEncoder:
    """Trace events -> serialized, Trace-framed packets (concatenated, they are a trace)."""

    def __init__(self) -> None:
        self._next_uuid = 1
        self._process: dict[int, int] = {}                # pid -> track uuid
        self._thread: dict[tuple[int, int], int] = {}     # (pid, tid) -> track uuid
        self._lanes: dict[tuple[int, int], list[tuple[int, int]]] = {}  # -> [(uuid, end ns)]
        self._async: dict[tuple[int, str], int] = {}      # (id, cat) -> lane uuid
        self._counter: dict[tuple[int, str], int] = {}
        self._pending: list[bytes] = []                   # descriptors made on the way

    # ---------------------------------------------------------------- tracks
    def _uuid(self) -> int:
        self._next_uuid += 1
        return self._next_uuid

    def _emit(self, packet: TracePacket) -> bytes:
        packet.trusted_packet_sequence_id = SEQUENCE
        body = packet.SerializeToString()
        return _TRACE_PACKET_TAG + _varint(len(body)) + body

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
        flows: dict[tuple[int, int, float], list[tuple[str, int]]] = {}
        for e in events:
            if e["ph"] in ("s", "t", "f"):
                flows.setdefault((e["pid"], e["tid"], e["ts"]), []).append((e["ph"], e["id"]))
        out: list[bytes] = []
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
                begin = self._event(start, track, TrackEvent.TYPE_SLICE_BEGIN, e)
                for kind, flow in flows.get((e["pid"], e["tid"], e["ts"]), []):
                    if kind == "f":
                        begin.track_event.terminating_flow_ids.append(flow)
                    else:
                        begin.track_event.flow_ids.append(flow)
                out += self._flush()
                out.append(self._emit(begin))
                end = TracePacket()
                end.timestamp = round((e["ts"] + e["dur"]) * 1000)  # as the next starts
                end.track_event.type = TrackEvent.TYPE_SLICE_END
                end.track_event.track_uuid = track
                out.append(self._emit(end))
            elif ph == "b":
                start = round(e["ts"] * 1000)
                lane = self._lane(e["pid"], e["tid"], start)
                self._async[(e["id"], e["cat"])] = lane
                packet = self._event(start, lane, TrackEvent.TYPE_SLICE_BEGIN, e)
                out += self._flush()
                out.append(self._emit(packet))
            elif ph == "e":
                lane = self._async.pop((e["id"], e["cat"]))
                stop = round(e["ts"] * 1000)
                lanes = self._lanes[(e["pid"], e["tid"])]
                lanes[[u for u, _ in lanes].index(lane)] = (lane, stop)
                packet = TracePacket()
                packet.timestamp = stop
                packet.track_event.type = TrackEvent.TYPE_SLICE_END
                packet.track_event.track_uuid = lane
                out.append(self._emit(packet))
            elif ph == "i":
                track = self.thread(e["pid"], e["tid"])
                packet = self._event(round(e["ts"] * 1000), track, TrackEvent.TYPE_INSTANT, e)
                out += self._flush()
                out.append(self._emit(packet))
            elif ph == "C":
                track = self._counter_track(e["pid"], e["name"])
                packet = TracePacket()
                packet.timestamp = round(e["ts"] * 1000)
                packet.track_event.type = TrackEvent.TYPE_COUNTER
                packet.track_event.track_uuid = track
                value = next(iter(e["args"].values()))
                if isinstance(value, int):
                    packet.track_event.counter_value = value
                else:
                    packet.track_event.double_counter_value = float(value)
                out += self._flush()
                out.append(self._emit(packet))
        return out + self._flush()   # descriptors of tracks no event used yet

    def _flush(self) -> list[bytes]:
        pending, self._pending = self._pending, []
        return pending

    @staticmethod
    def _event(ts: int, track: int, kind: int, e: dict[str, Any]) -> TracePacket:
        packet = TracePacket()
        packet.timestamp = ts
        packet.track_event.type = kind
        packet.track_event.track_uuid = track
        packet.track_event.name = e["name"]
        _annotate(packet.track_event, e.get("args", {}))
        return packet

    def finish(self, parts: list[bytes], other: dict[str, Any]) -> bytes:
        info = self._uuid()

        def fill(d: TrackDescriptor) -> None:
            d.name = "trace info"
        self._describe(info, fill)
        packet = TracePacket()
        packet.timestamp = 0
        packet.track_event.type = TrackEvent.TYPE_INSTANT
        packet.track_event.track_uuid = info
        packet.track_event.name = "trace info"
        _annotate(packet.track_event, other)
        return b"".join(self._flush() + [self._emit(packet)] + parts)
