"""The analyzer: transmitted and received frames -> per-stream and total counts and latency.

Definitions (every received frame is classified once; arrivals are taken in order of
last-bit time, then port, then the order they were given in):

* **foreign**: no IP packet of the port's framing, or no signature magic.
* **unknown**: a signature with a correct CRC naming a (stream, sequence) never sent.
* A signature whose CRC fails is **corrupted**; it is attributed to the (stream, sequence)
  it names when that packet was sent, else counted in the totals only (a bit flipped in the
  identity fields themselves may attribute it to the wrong packet).
* **received**: sent packets that arrived at least once (on any port, damaged or not).
  **duplicates**: further arrivals of a packet already received (nothing else is judged on
  them).  **lost**: sent packets the reference forwards (``Expected.port`` not None) that
  never arrived; **filtered**: packets the reference drops that never arrived.
* **reordered** (RFC 4737, §3.3): per stream, a first arrival whose sequence number is below
  the next expected one, NextExp = 1 + the highest sequence number received so far.  Lost
  packets do not make later ones reordered; a late packet counts once.
* **misrouted**: first arrival on a port other than the reference's (or any arrival of a
  packet the reference drops).
* **corrupted**: first arrival whose signature CRC fails, or whose IP packet or link header
  differs from what the reference predicts (e.g. a wrong TTL, a flipped payload bit).
* **latency**: from the first bit's send time (the ``TxRecord``) to the last bit out (the
  ``RxRecord``), first arrivals that are neither corrupted nor misrouted.  RFC 2544's
  store-and-forward latency (last bit in to first bit out) is this minus the input and the
  output frame's wire times; ``Latency`` keeps both (``lifo_*``).  Histogram: counts per
  ``bin_ps`` wide bin of first-in-last-out latency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from npkit.bench.tester.generator import TxRecord
from npkit.bench.tester.media import PortModel, port_model
from npkit.bench.tester.packet import Parsed, parse
from npkit.bench.tester.reference import Expected

Expectation = Callable[[TxRecord, Parsed], Expected]


@dataclass(frozen=True, slots=True)
class RxRecord:
    """A frame the device sent: port, last-bit time (ps), bytes."""

    port: int
    time_ps: int
    data: bytes


@dataclass
class Latency:
    """Latency of the packets measured, in picoseconds."""

    bin_ps: int
    count: int = 0
    total_ps: int = 0
    min_ps: int | None = None
    max_ps: int | None = None
    lifo_min_ps: float | None = None
    lifo_max_ps: float | None = None
    lifo_total_ps: float = 0.0
    histogram: Counter[int] = field(default_factory=Counter)  # bin index -> packets

    def add(self, filo_ps: int, lifo_ps: float) -> None:
        self.count += 1
        self.total_ps += filo_ps
        self.min_ps = filo_ps if self.min_ps is None else min(self.min_ps, filo_ps)
        self.max_ps = filo_ps if self.max_ps is None else max(self.max_ps, filo_ps)
        self.lifo_total_ps += lifo_ps
        self.lifo_min_ps = lifo_ps if self.lifo_min_ps is None else min(self.lifo_min_ps, lifo_ps)
        self.lifo_max_ps = lifo_ps if self.lifo_max_ps is None else max(self.lifo_max_ps, lifo_ps)
        self.histogram[filo_ps // self.bin_ps] += 1

    def merge(self, other: Latency) -> None:
        self.count += other.count
        self.total_ps += other.total_ps
        self.lifo_total_ps += other.lifo_total_ps
        self.histogram.update(other.histogram)
        for name, pick in (("min_ps", min), ("max_ps", max), ("lifo_min_ps", min),
                           ("lifo_max_ps", max)):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs if mine is None else pick(mine, theirs))

    @property
    def avg_ps(self) -> float | None:
        return self.total_ps / self.count if self.count else None

    @property
    def lifo_avg_ps(self) -> float | None:
        return self.lifo_total_ps / self.count if self.count else None


COUNTS = ("sent", "received", "lost", "filtered", "duplicates", "reordered", "misrouted",
          "corrupted")


@dataclass
class StreamStats:
    stream: int
    bin_ps: int
    sent: int = 0
    received: int = 0
    lost: int = 0
    filtered: int = 0
    duplicates: int = 0
    reordered: int = 0
    misrouted: int = 0
    corrupted: int = 0
    latency: Latency = field(init=False)
    _next_expected: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.latency = Latency(self.bin_ps)

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTS}


@dataclass
class Report:
    streams: dict[int, StreamStats]
    total: StreamStats
    foreign: int = 0
    unknown: int = 0
    corrupted_unattributed: int = 0

    @property
    def errors(self) -> int:
        """Everything a perfect device would show as zero."""
        t = self.total
        return (t.lost + t.duplicates + t.reordered + t.misrouted + t.corrupted
                + self.foreign + self.unknown)


@dataclass
class _Sent:
    record: TxRecord
    parsed: Parsed
    expected: Expected
    arrived: bool = False


class Analyzer:
    """Classify received frames against the sent ones and a reference (see module doc)."""

    def __init__(self, ports: Mapping[int, str | PortModel], expect: Expectation,
                 bin_ps: int = 100_000) -> None:
        self.models = {p: port_model(k) for p, k in ports.items()}
        self.expect = expect
        self.bin_ps = bin_ps

    def analyze(self, sent: Iterable[TxRecord], received: Iterable[RxRecord]) -> Report:
        """The report of ``received`` against ``sent``: by the C++ bookkeeping
        (``fast_analysis``) when the expectation is a ``PassThrough`` or a
        ``RouteReference``, else by ``analyze_python``; the reports are the same."""
        from npkit.bench.tester.fast_analysis import FastAnalysis, compiled

        tables = compiled(self.expect, self.models)
        if tables is None:
            return self.analyze_python(sent, received)
        sent, received = list(sent), list(received)
        try:
            analysis = FastAnalysis(self.models, tables, self.bin_ps)
            analysis.sent_records(sent)
            analysis.received_records(received)
        except OverflowError:  # times beyond the C++ side's 128 bits
            return self.analyze_python(sent, received)
        return analysis.report()

    def analyze_python(self, sent: Iterable[TxRecord], received: Iterable[RxRecord]
                       ) -> Report:
        """``analyze`` in pure Python, frame by frame (the reference for the C++ one)."""
        table, streams = self._index(sent)
        report = Report(streams, StreamStats(-1, self.bin_ps))
        arrivals = sorted(enumerate(received), key=lambda x: (x[1].time_ps, x[1].port, x[0]))
        for _, rx in arrivals:
            self._arrival(rx, table, report)
        for s in table.values():
            if not s.arrived:
                stats = streams[s.record.stream]
                if s.expected.port is None:
                    stats.filtered += 1
                else:
                    stats.lost += 1
        for stats in streams.values():
            for name in COUNTS:
                setattr(report.total, name, getattr(report.total, name) + getattr(stats, name))
            report.total.latency.merge(stats.latency)
        report.total.corrupted += report.corrupted_unattributed
        return report

    def _index(self, sent: Iterable[TxRecord]
               ) -> tuple[dict[tuple[int, int], _Sent], dict[int, StreamStats]]:
        table: dict[tuple[int, int], _Sent] = {}
        streams: dict[int, StreamStats] = {}
        for record in sent:
            parsed = parse(self.models[record.port].framing, record.data)
            if parsed is None or parsed.signature is None:
                raise ValueError(f"sent frame of stream {record.stream} seq {record.seq} on "
                                 f"port {record.port} carries no signature")
            key = (record.stream, record.seq)
            if key in table:
                raise ValueError(f"stream {record.stream} seq {record.seq} was sent twice")
            table[key] = _Sent(record, parsed, self.expect(record, parsed))
            stats = streams.setdefault(record.stream, StreamStats(record.stream, self.bin_ps))
            stats.sent += 1
        return table, streams

    def _arrival(self, rx: RxRecord, table: dict[tuple[int, int], _Sent],
                 report: Report) -> None:
        model = self.models.get(rx.port)
        parsed = None if model is None else parse(model.framing, rx.data)
        signature = None if parsed is None else parsed.signature
        if parsed is None or signature is None:
            report.foreign += 1
            return
        sent = table.get((signature.stream, signature.seq))
        if sent is None:
            if signature.crc_ok:
                report.unknown += 1
            else:
                report.corrupted_unattributed += 1
            return
        stats = report.streams[signature.stream]
        if sent.arrived:
            stats.duplicates += 1
            return
        sent.arrived = True
        stats.received += 1
        if signature.seq < stats._next_expected:
            stats.reordered += 1
        else:
            stats._next_expected = signature.seq + 1
        expected = sent.expected
        misrouted = rx.port != expected.port
        corrupted = not signature.crc_ok or _differs(expected, parsed)
        stats.misrouted += misrouted
        stats.corrupted += corrupted
        if not (misrouted or corrupted):
            filo = rx.time_ps - sent.record.time_ps
            in_wire = self.models[sent.record.port].wire_ps(len(sent.record.data))
            out_wire = model.wire_ps(len(rx.data))
            stats.latency.add(filo, float(filo - in_wire - out_wire))


def _differs(expected: Expected, got: Parsed) -> bool:
    if expected.ip is not None and got.ip != expected.ip:
        return True
    return expected.link is not None and got.link != expected.link
