"""The traffic generator: streams -> per port, a time-ordered list of (send time, frame).

Each stream schedules its packets at exact instants (``fractions.Fraction`` ps): packet k+1
is scheduled one interval after packet k, the interval being the packet's wire slot
``(len(frame) + overhead) * 8 / rate`` divided by the load (``load_percent``), or
``1 / pps``.  A port's transmitter then sends the streams' packets in scheduled order, each
starting at its scheduled instant or, when the line is still busy with the previous frame,
at the end of that frame (streams on one port that add up to more than line rate are
delayed, never dropped).  A packet's send time is the start of its first bit, rounded up to
a whole picosecond; nothing is rounded cumulatively, so a run stays exactly on rate.
"""

from __future__ import annotations

import heapq
import ipaddress
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction

from npkit.bench.tester import fast
from npkit.bench.tester.media import (
    ETH_MAX_FRAME,
    POS_MAX_IP,
    PS_PER_S,
    PortModel,
    frame_bytes,
    ip_bytes,
    port_model,
)
from npkit.bench.tester.packet import PacketSpec, build_ip, frame, mac_bytes, smallest_ip
from npkit.bench.tester.stream import Stream


@dataclass(frozen=True, slots=True)
class TxRecord:
    """A frame the tester sent: port, first-bit time (ps), bytes, and its identity."""

    port: int
    time_ps: int
    data: bytes
    stream: int
    seq: int


@dataclass(frozen=True, slots=True)
class _Planned:
    """A packet scheduled by its stream, before the port's transmitter places it."""

    ideal_ps: Fraction
    order: int  # the stream's position on its port (ties: earlier stream first)
    seq: int
    family: int
    ip_len: int
    frame_len: int
    dst: int
    stream: Stream
    headers: _StreamHeaders


@dataclass(frozen=True, slots=True)
class _StreamHeaders:
    """A stream's constant header fields, parsed once."""

    src: dict[int, int]  # family -> source address
    dst_mac: bytes
    src_mac: bytes

    @classmethod
    def of(cls, stream: Stream) -> _StreamHeaders:
        src = {4: int(ipaddress.IPv4Address(stream.src4)),
               6: int(ipaddress.IPv6Address(stream.src6))}
        return cls(src, mac_bytes(stream.dst_mac), mac_bytes(stream.src_mac))


@dataclass(frozen=True)
class Traffic:
    """What the generator produced: per port, the frames in sending order."""

    ports: dict[int, list[TxRecord]]
    models: dict[int, PortModel]

    def records(self) -> list[TxRecord]:
        return [r for port in sorted(self.ports) for r in self.ports[port]]

    def count(self) -> int:
        return sum(len(v) for v in self.ports.values())

    def last_bit_ps(self) -> Fraction:
        """When the last frame's last bit leaves the tester (exact; 0 with no frames): one
        wire time per port and frame length, not a ``Fraction`` per frame."""
        last = Fraction(0)
        for port, records in self.ports.items():
            wire: dict[int, Fraction] = {}
            model = self.models[port]
            for length in {len(r.data) for r in records}:
                wire[length] = model.wire_ps(length)
            latest = max((r.time_ps + wire[len(r.data)] for r in records), default=last)
            last = max(last, latest)
        return last


def _plan(stream: Stream, model: PortModel, order: int) -> Iterator[_Planned]:
    """The stream's packets with their exact scheduled instants."""
    rng = stream.rng()
    unit = stream.sizes.unit_for(stream.framing)
    load = None if stream.load_percent is None else Fraction(str(stream.load_percent)) / 100
    pps_interval = None if stream.pps is None else PS_PER_S / Fraction(str(stream.pps))
    intervals: dict[int, Fraction] = {}  # frame length -> interval (one division per size)
    drawn = {family: 0 for family in stream.families()}
    t = Fraction(stream.start_ps)
    end = None if stream.duration_ps is None else stream.start_ps + stream.duration_ps
    headers = _StreamHeaders.of(stream)
    seq = 0
    while (stream.count is None or seq < stream.count) and (end is None or t < end):
        family = stream.families()[0] if stream.family != "mixed" else \
            (6 if rng.random() < stream.v6_share else 4)
        ip_len = ip_bytes(stream.sizes.pick(seq, rng), unit, stream.framing)
        if stream.sizes.clamp:
            ip_len = max(ip_len, smallest_ip(family, stream.transport))
        _check_size(stream, family, ip_len)
        _, dst = stream.destinations[family].draw(drawn[family], rng)
        drawn[family] += 1
        length = frame_bytes(ip_len, stream.framing)
        yield _Planned(t, order, seq, family, ip_len, length, dst, stream, headers)
        interval = intervals.get(length)
        if interval is None:
            interval = pps_interval if load is None else model.wire_ps(length) / load
            intervals[length] = interval
        t += interval
        seq += 1
        if seq > 0xFFFFFFFF:
            raise ValueError(f"stream {stream.id}: more than 2**32 packets")


def _check_size(stream: Stream, family: int, ip_len: int) -> None:
    least = smallest_ip(family, stream.transport)
    most = POS_MAX_IP if stream.framing == "pos" else ETH_MAX_FRAME - 18
    if not least <= ip_len <= most:
        raise ValueError(f"stream {stream.id}: IPv{family} packet of {ip_len} IP bytes on "
                         f"{stream.framing} is outside {least}..{most} (the signature needs "
                         f"{least}; Sizes(clamp=True) sends smaller sizes at {least})")


def _build(p: _Planned, port: int, time_ps: int) -> TxRecord:
    s, h = p.stream, p.headers
    ip = build_ip(PacketSpec(p.family, p.ip_len, h.src[p.family], p.dst, s.id, p.seq, time_ps,
                             s.transport, s.sport, s.dport))
    data = frame(s.framing, ip, p.family, h.dst_mac, h.src_mac)
    return TxRecord(port, time_ps, data, s.id, p.seq)


def _transmit(port: int, model: PortModel, plans: Iterable[_Planned]) -> list[TxRecord]:
    """Place the packets on the line in scheduled order, back to back when it is busy."""
    free = Fraction(0)
    wire: dict[int, Fraction] = {}  # frame length -> wire time
    out = []
    for p in plans:
        start = p.ideal_ps if p.ideal_ps >= free else free
        slot = wire.get(p.frame_len)
        if slot is None:
            slot = wire[p.frame_len] = model.wire_ps(p.frame_len)
        free = start + slot
        out.append(_build(p, port, math.ceil(start)))
    return out


def check_streams(streams: Iterable[Stream], ports: Mapping[int, str | PortModel]
                  ) -> tuple[dict[int, PortModel], dict[int, list[Stream]]]:
    """The ports' models and, per port, its streams in order; ValueError for a stream id
    used twice, a port not given, or a framing the port does not have."""
    models = {p: port_model(kind) for p, kind in ports.items()}
    by_port: dict[int, list[Stream]] = {}
    ids: set[int] = set()
    for s in streams:
        if s.id in ids:
            raise ValueError(f"stream id {s.id} is used twice")
        ids.add(s.id)
        if s.port not in models:
            raise ValueError(f"stream {s.id}: port {s.port} is not one of the ports given")
        if models[s.port].framing != s.framing:
            raise ValueError(f"stream {s.id}: {s.framing} framing on port {s.port}, a "
                             f"{models[s.port].kind} port ({models[s.port].framing})")
        by_port.setdefault(s.port, []).append(s)
    return models, by_port


def generate(streams: Iterable[Stream], ports: Mapping[int, str | PortModel]) -> Traffic:
    """The frames of ``streams`` on ``ports`` (port -> kind "10gbe"/"1gbe"/"oc192pos" or a
    PortModel), per port in sending order.  Made by the C++ generator (``fast``) when every
    stream of a port allows it, else by ``generate_python``; the frames are the same."""
    models, by_port = check_streams(streams, ports)
    out = {}
    for port, port_streams in by_port.items():
        made = None
        if all(fast.eligible(s) for s in port_streams):
            made = fast.port_generator(models[port], port_streams)
        if made is None:
            out[port] = _python_port(port, models[port], port_streams)
            continue
        records: list[TxRecord] = []
        for batch in fast.port_batches(port, made):
            records.extend(map(TxRecord, [port] * len(batch), batch.times_ps.tolist(),
                               batch.datas, batch.streams.tolist(), batch.seqs.tolist()))
        out[port] = records
    return Traffic(out, models)


def generate_python(streams: Iterable[Stream], ports: Mapping[int, str | PortModel]
                    ) -> Traffic:
    """``generate`` in pure Python, frame by frame (the reference the C++ generator is
    tested against, and the path for streams it cannot make)."""
    models, by_port = check_streams(streams, ports)
    return Traffic({port: _python_port(port, models[port], port_streams)
                    for port, port_streams in by_port.items()}, models)


def _python_port(port: int, model: PortModel, port_streams: list[Stream]) -> list[TxRecord]:
    plans = [_plan(s, model, i) for i, s in enumerate(port_streams)]
    merged = heapq.merge(*plans, key=lambda p: (p.ideal_ps, p.order))
    return _transmit(port, model, merged)
