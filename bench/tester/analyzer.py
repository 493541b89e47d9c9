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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from npkit.bench.tester.fast_analysis import FastAnalysis, compiled
from npkit.bench.tester.generator import TxRecord
from npkit.bench.tester.media import PortModel, port_model
from npkit.bench.tester.packet import Parsed, parse
from npkit.bench.tester.reference import Expected
from npkit.bench.tester.results import COUNTS, Latency, Report, RxRecord, StreamStats

Expectation = Callable[[TxRecord, Parsed], Expected]


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
        tables = compiled(self.expect, self.models)
        plain = self.bin_ps > 0 and all(0 <= p < 1024 for p in self.models)
        if tables is None or not plain:  # (odd bins or port numbers: the Python analyzer)
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


__all__ = ["COUNTS", "Analyzer", "Expectation", "Latency", "Report", "RxRecord",
           "StreamStats"]


def _differs(expected: Expected, got: Parsed) -> bool:
    if expected.ip is not None and got.ip != expected.ip:
        return True
    return expected.link is not None and got.link != expected.link
