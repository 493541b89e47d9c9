"""Reference devices: devices under test whose behaviour is simple enough to compute by hand,
used to test the lab's procedures without the simulated chip.

``QueueingRouter`` is a store-and-forward router built from first principles on the
tester's exact send times (integer picoseconds; internal times are exact fractions):

1. A frame is **received** when its last bit is in: ``time_ps + wire(in port, frame)``.
2. It joins its **engine's FIFO** (one engine per input port, or one shared by all).  The
   FIFO holds at most ``queue_packets`` packets, the one in service included; a frame that
   arrives to a full FIFO is dropped (``engine.dropped``).  The engine serves one packet at
   a time for ``per_packet_ps + per_byte_ps * len(frame)``.
3. After service the packet spends ``pipeline_ps`` in a fixed pipeline, then is **ready**
   for its output port: the reference's (``expect``: a ``RouteReference`` or
   ``PassThrough``); a packet the reference does not forward is dropped (``filtered``).
4. Each output port sends its packets in ready order, back to back at line rate, holding at
   most ``output_queue_packets`` (the one on the wire included; None: unbounded).  The
   record's time is the last bit out, rounded up to a whole picosecond.
5. Frames whose last bit would leave after the trial's end (last frame sent +
   ``Trial.settle_ps``) are not received (``in_flight_at_end``).

So with a fixed size, an engine of service time ``S`` keeps up with a load ``L`` (% of line
rate) exactly when ``S <= wire / (L / 100)``; and an idle router's latency (first bit in to
last bit out) is ``wire_in + S + pipeline_ps + wire_out``.

Faults, for testing the analyzer's counts through a procedure: ``drop_fraction``,
``misroute_fraction`` (sent to the next port in number order instead) and
``reorder_fraction`` (held ``reorder_delay_ps`` longer in the pipeline, so later packets
overtake it) pick packets by a hash of (fault seed, stream, sequence): deterministic and
independent of timing.

``routed_router`` builds one on a route table (next hop h leaves on port ``h % ports``, as
on the chip devices) with ``destinations(family, out_port, count)`` for the procedures;
``UpdatingRouter`` adds a control plane with a known update cost (``npf.UpdatableDevice``).

``EdgeLossRouter`` wraps one to make its loss *random near the edge*, as a real device's is
(a burst that one stream phase meets and another misses): above its true lossless load
every forwarded packet is lost with a fixed probability, drawn from a hash of the packet's
bytes and the trial's stream seeds and phases -- so one trial there may lose nothing by
luck, and a search that believes one trial reports a load the device does not sustain.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from npkit.bench.lab.device import Trial, TrialResult
from npkit.bench.lab.devices import RoutedTables
from npkit.bench.tester import (
    Analyzer,
    DestinationSet,
    PortModel,
    RxRecord,
    TxRecord,
    generate,
    port_model,
)
from npkit.bench.tester.media import PS_PER_S
from npkit.bench.tester.packet import Parsed, frame, parse
from npkit.bench.tester.reference import Expected

Expectation = Callable[[TxRecord, Parsed], Expected]


@dataclass(frozen=True)
class _Packet:
    """A received frame on its way through the router."""

    order: int  # position in the tester's records: breaks ties deterministically
    tx: TxRecord
    arrival: Fraction  # last bit in
    out_port: int
    out_frame: bytes


@dataclass
class _Tally:
    """The router's own counters for one trial."""

    forwarded: int = 0
    filtered: int = 0
    engine_dropped: int = 0
    output_dropped: int = 0
    in_flight_at_end: int = 0
    dropped_injected: int = 0
    misrouted_injected: int = 0
    reordered_injected: int = 0
    engine_busy: Fraction = Fraction(0)
    engines: int = 0


def _picked(seed: int, kind: str, tx: TxRecord, fraction: float) -> bool:
    """Whether fault ``kind`` hits packet (stream, seq): a hash below the fraction."""
    if fraction <= 0:
        return False
    key = f"{seed}:{kind}:{tx.stream}:{tx.seq}".encode()
    return zlib.crc32(key) < fraction * 2**32


class _Fifo:
    """A single server with a FIFO of bounded size: who is in the system, and when it is
    free.  ``offer`` returns the departure time, or None when the FIFO is full."""

    def __init__(self, capacity: int | None) -> None:
        self.capacity = capacity
        self.departures: deque[Fraction] = deque()
        self.free = Fraction(0)

    def offer(self, at: Fraction, service: Fraction) -> Fraction | None:
        while self.departures and self.departures[0] <= at:
            self.departures.popleft()
        if self.capacity is not None and len(self.departures) >= self.capacity:
            return None
        self.free = max(at, self.free) + service
        self.departures.append(self.free)
        return self.free

    def hold(self, at: Fraction, duration: Fraction | int) -> None:
        """Keep the server busy for ``duration`` from ``at`` or when it is next free (work
        that is not a packet: it takes no place in the FIFO and is never dropped)."""
        self.free = max(at, self.free) + duration


@dataclass(frozen=True)
class QueueingRouter:
    """A store-and-forward router with known behaviour (see the module doc)."""

    port_kinds: Mapping[int, str | PortModel]
    expect: Expectation
    per_packet_ps: Fraction | int = 0
    per_byte_ps: Fraction | int = 0
    queue_packets: int = 64
    pipeline_ps: int = 1_000_000
    output_queue_packets: int | None = None
    shared_engine: bool = False
    drop_fraction: float = 0.0
    misroute_fraction: float = 0.0
    reorder_fraction: float = 0.0
    reorder_delay_ps: int = 10_000_000
    fault_seed: int = 1
    name: str = "queueing-router"
    tables: RoutedTables | None = None  # for ``destinations`` (``routed_router``)
    _models: dict[int, PortModel] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.queue_packets < 1:
            raise ValueError(f"queue_packets must be >= 1, got {self.queue_packets}")
        if self.output_queue_packets is not None and self.output_queue_packets < 1:
            raise ValueError("output_queue_packets must be >= 1 or None (unbounded)")
        if self.per_packet_ps < 0 or self.per_byte_ps < 0 or self.pipeline_ps < 0:
            raise ValueError("service and pipeline times must be >= 0")
        models = {p: port_model(k) for p, k in self.port_kinds.items()}
        object.__setattr__(self, "_models", models)

    @property
    def ports(self) -> Mapping[int, PortModel]:
        return self._models

    def describe(self) -> dict[str, Any]:
        return {
            "device": self.name, "kind": "QueueingRouter",
            "ports": {str(p): m.kind for p, m in sorted(self._models.items())},
            "reference": type(self.expect).__name__,
            "per_packet_ps": str(Fraction(self.per_packet_ps)),
            "per_byte_ps": str(Fraction(self.per_byte_ps)),
            "queue_packets": self.queue_packets, "pipeline_ps": self.pipeline_ps,
            "output_queue_packets": self.output_queue_packets,
            "shared_engine": self.shared_engine, "drop_fraction": self.drop_fraction,
            "misroute_fraction": self.misroute_fraction,
            "reorder_fraction": self.reorder_fraction,
            "reorder_delay_ps": self.reorder_delay_ps, "fault_seed": self.fault_seed,
            "routes": None if self.tables is None else
            {str(f): len(r) for f, r in sorted(self.tables.routes.items())},
        }

    def destinations(self, family: int, out_port: int, count: int,
                     seed: int = 1) -> DestinationSet:
        """``count`` prefixes of the loaded table that leave on ``out_port`` (as the chip
        devices do); only for a router made by ``routed_router``."""
        if self.tables is None:
            raise ValueError(f"{self.name} has no route table: make it with routed_router")
        return self.tables.destinations(family, out_port, count, seed)

    def service_ps(self, frame_bytes: int) -> Fraction:
        return Fraction(self.per_packet_ps) + Fraction(self.per_byte_ps) * frame_bytes

    # ------------------------------------------------------------------ a trial
    def run(self, trial: Trial) -> TrialResult:
        return self._run(trial, ())

    def _run(self, trial: Trial, holds: tuple[tuple[Fraction, int], ...]) -> TrialResult:
        """The trial, with ``holds`` (instant, duration) occupying every engine."""
        traffic = generate(trial.streams, self._models)
        sent = traffic.records()
        end = self._end_of_trial(sent, trial.settle_ps)
        tally = _Tally()
        ready = self._through_engines(self._arrivals(sent, tally), holds, tally)
        received = self._transmit(ready, end, tally)
        report = Analyzer(self._models, self.expect).analyze(sent, received)
        counters = self._counters(tally, end - trial.settle_ps)
        return TrialResult(report, traffic, received, counters, math.ceil(end))

    def _end_of_trial(self, sent: list[TxRecord], settle_ps: int) -> Fraction:
        last = max((r.time_ps + self._models[r.port].wire_ps(len(r.data)) for r in sent),
                   default=Fraction(0))
        return last + settle_ps

    def _arrivals(self, sent: list[TxRecord], tally: _Tally) -> list[_Packet]:
        """The frames the router will forward, with their output port and bytes."""
        ports = sorted(self._models)
        packets = []
        for order, tx in enumerate(sent):
            in_model = self._models[tx.port]
            parsed = parse(in_model.framing, tx.data)
            expected = self.expect(tx, parsed) if parsed is not None else Expected(None)
            if expected.port is None or expected.port not in self._models:
                tally.filtered += 1
                continue
            if _picked(self.fault_seed, "drop", tx, self.drop_fraction):
                tally.dropped_injected += 1
                continue
            out_port = expected.port
            if len(ports) > 1 and _picked(self.fault_seed, "misroute", tx,
                                          self.misroute_fraction):
                out_port = ports[(ports.index(out_port) + 1) % len(ports)]
                tally.misrouted_injected += 1
            out_frame = self._out_frame(out_port, expected, parsed)
            arrival = tx.time_ps + in_model.wire_ps(len(tx.data))
            packets.append(_Packet(order, tx, arrival, out_port, out_frame))
        return packets

    def _out_frame(self, port: int, expected: Expected, parsed: Parsed) -> bytes:
        ip = expected.ip if expected.ip is not None else parsed.ip
        framing = self._models[port].framing
        link = expected.link or b""
        if framing == "ethernet" and len(link) >= 12:
            dst, src = link[:6], link[6:12]
        else:
            dst, src = bytes([2, 0, 0, 1, 0, port & 0xFF]), bytes([2, 0, 0, 0, 0, port & 0xFF])
        return frame(framing, ip, parsed.family, dst, src)

    def _through_engines(self, packets: list[_Packet], holds: tuple[tuple[Fraction, int], ...],
                         tally: _Tally) -> list[tuple[Fraction, int, _Packet]]:
        """Serve the packets in arrival order, the holds at their instants (before a packet
        arriving at the same instant); (ready time, order, packet) of those kept."""
        keys = {0} if self.shared_engine else {p.tx.port for p in packets}
        engines = {key: _Fifo(self.queue_packets) for key in sorted(keys)}
        ready = []
        pending = deque(sorted(holds))
        for p in sorted(packets, key=lambda p: (p.arrival, p.order)):
            while pending and pending[0][0] <= p.arrival:
                at, duration = pending.popleft()
                for fifo in engines.values():
                    fifo.hold(at, duration)
            fifo = engines[0 if self.shared_engine else p.tx.port]
            service = self.service_ps(len(p.tx.data))
            done = fifo.offer(p.arrival, service)
            if done is None:
                tally.engine_dropped += 1
                continue
            tally.engine_busy += service
            at = done + self.pipeline_ps
            if _picked(self.fault_seed, "reorder", p.tx, self.reorder_fraction):
                at += self.reorder_delay_ps
                tally.reordered_injected += 1
            ready.append((at, p.order, p))
        tally.engines = len(engines)
        return ready

    def _transmit(self, ready: Iterable[tuple[Fraction, int, _Packet]], end: Fraction,
                  tally: _Tally) -> list[RxRecord]:
        """Each output port sends its packets in ready order at line rate."""
        outputs: dict[int, _Fifo] = {}
        received = []
        for at, _, p in sorted(ready, key=lambda r: (r[0], r[1])):
            model = self._models[p.out_port]
            fifo = outputs.setdefault(p.out_port, _Fifo(self.output_queue_packets))
            last_bit = fifo.offer(at, model.wire_ps(len(p.out_frame)))
            if last_bit is None:
                tally.output_dropped += 1
            elif last_bit > end:
                tally.in_flight_at_end += 1
            else:
                tally.forwarded += 1
                received.append(RxRecord(p.out_port, math.ceil(last_bit), p.out_frame))
        return received

    def _counters(self, tally: _Tally, sending_ps: Fraction) -> dict[str, float]:
        """Counts, and the engines' busy fraction over the sending time (as the chip
        devices measure theirs over the offered traffic's span)."""
        capacity = sending_ps * tally.engines
        busy = float(min(1, tally.engine_busy / capacity)) if capacity else 0.0
        return {
            "forwarded": tally.forwarded, "filtered": tally.filtered,
            "engine.dropped": tally.engine_dropped, "output.dropped": tally.output_dropped,
            "in_flight_at_end": tally.in_flight_at_end,
            "fault.dropped": tally.dropped_injected,
            "fault.misrouted": tally.misrouted_injected,
            "fault.reordered": tally.reordered_injected,
            "engine.busy_fraction": busy,
        }


@dataclass(frozen=True)
class UpdatingRouter(QueueingRouter):
    """A ``QueueingRouter`` with a control plane (``npf.UpdatableDevice``): one forwarding
    table update takes ``update_ps`` of the control processor, so the maximum update rate
    is exactly 10**12 / ``update_ps`` per second; while the router forwards, each update
    also holds every engine for ``update_stall_ps`` (the table write blocks lookups).  At
    a fraction f of the maximum rate the engines lose ``f * update_stall_ps / update_ps``
    of their time.  Updates are periodic from one period after the first frame is sent;
    the routes themselves do not change (the exercised routes are never updated)."""

    update_ps: int = 17_000_000  # ~58,823 updates/s
    update_stall_ps: int = 0
    name: str = "updating-router"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.update_ps <= 0 or self.update_stall_ps < 0:
            raise ValueError("update_ps must be > 0 and update_stall_ps >= 0")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "kind": "UpdatingRouter", "update_ps": self.update_ps,
                "update_stall_ps": self.update_stall_ps}

    def measure_update_rate(self, family: int, updates: int, seed: int) -> float:
        if updates < 1:
            raise ValueError(f"updates must be >= 1, got {updates}")
        return updates * PS_PER_S / (updates * self.update_ps)

    def run_with_updates(self, trial: Trial, family: int, updates_per_s: float,
                         seed: int) -> TrialResult:
        if updates_per_s <= 0:
            return self.run(trial)
        period = PS_PER_S / Fraction(str(updates_per_s))
        first = min((s.start_ps for s in trial.streams), default=0)
        last = max((s.start_ps + (s.duration_ps or 0) for s in trial.streams), default=0)
        count = math.ceil((last - first) / period)
        holds = tuple((first + k * period, self.update_stall_ps) for k in range(1, count))
        return self._run(trial, holds)


def routed_router(port_kinds: Mapping[int, str | PortModel],
                  routes: Mapping[int, Mapping[tuple[int, int], int]],
                  **behaviour: Any) -> QueueingRouter:
    """A ``QueueingRouter`` forwarding by ``routes`` (family -> (network, length) -> next
    hop) with the chip devices' rule (next hop h leaves on port ``h % ports``), so procedures
    that pick destinations per output port run on it as on the chip."""
    models = {p: port_model(k) for p, k in port_kinds.items()}
    tables = RoutedTables({f: dict(r) for f, r in routes.items()}, len(models))
    kind = UpdatingRouter if "update_ps" in behaviour else QueueingRouter
    return kind(models, tables.reference(models), tables=tables, **behaviour)


def ideal_router(port_kinds: Mapping[int, str | PortModel], expect: Expectation,
                 pipeline_ps: int = 1_000_000) -> QueueingRouter:
    """A router that keeps up with anything its output ports can carry."""
    return QueueingRouter(port_kinds, expect, pipeline_ps=pipeline_ps, name="ideal-router")


def service_for_load(model: PortModel, frame_bytes: int, load_percent: float | Fraction
                     ) -> Fraction:
    """The per-packet service time that keeps up with exactly ``load_percent`` of ``model``'s
    line rate for frames of ``frame_bytes`` (a convenience for building test devices)."""
    return model.wire_ps(frame_bytes) * 100 / Fraction(str(load_percent))


@dataclass(frozen=True)
class EdgeLossRouter:
    """A device whose loss is random between its true lossless load and its capacity.

    ``router`` forwards as usual (give it an engine that keeps up to ``band_top_percent``
    and loses above it, e.g. ``service_for_load`` with a queue of one).  At an offered load
    (the streams' ``load_percent``) in (``lossless_percent``, ``band_top_percent``], every
    packet ``router`` forwarded is then lost with probability ``edge_loss``, independently,
    by a hash of (``seed``, every stream's seed and start, the frame's bytes -- which carry
    its stream and sequence number).  So the true lossless load is ``lossless_percent``: at
    any load above it a trial of n packets passes only with probability
    (1 - ``edge_loss``) ** n, and trials with other stream seeds or phases draw again."""

    router: QueueingRouter
    lossless_percent: float
    band_top_percent: float
    edge_loss: float
    seed: int = 1
    name: str = "edge-loss-router"

    def __post_init__(self) -> None:
        if not 0 < self.lossless_percent <= self.band_top_percent <= 100:
            raise ValueError("need 0 < lossless_percent <= band_top_percent <= 100")
        if not 0 <= self.edge_loss <= 1:
            raise ValueError(f"edge_loss must be in [0, 1], got {self.edge_loss}")

    @property
    def ports(self) -> Mapping[int, PortModel]:
        return self.router.ports

    def describe(self) -> dict[str, Any]:
        return {**self.router.describe(), "device": self.name, "kind": "EdgeLossRouter",
                "lossless_percent": self.lossless_percent,
                "band_top_percent": self.band_top_percent, "edge_loss": self.edge_loss,
                "edge_seed": self.seed}

    def destinations(self, family: int, out_port: int, count: int,
                     seed: int = 1) -> DestinationSet:
        return self.router.destinations(family, out_port, count, seed)

    def _lost(self, trial: Trial, frame_bytes: bytes) -> bool:
        phases = ";".join(f"{s.id}:{s.seed}:{s.start_ps}" for s in trial.streams)
        key = f"{self.seed}|{phases}|".encode() + frame_bytes
        draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
        return draw < self.edge_loss * 2**64

    def run(self, trial: Trial) -> TrialResult:
        result = self.router.run(trial)
        load = max(float(s.load_percent or 0) for s in trial.streams)
        if not self.lossless_percent < load <= self.band_top_percent:
            return result
        kept = [rx for rx in result.received if not self._lost(trial, rx.data)]
        report = Analyzer(self.ports, self.router.expect).analyze(result.traffic.records(),
                                                                  kept)
        counters = {**result.counters, "edge.dropped": len(result.received) - len(kept)}
        return TrialResult(report, result.traffic, kept, counters, result.sim_ps)
