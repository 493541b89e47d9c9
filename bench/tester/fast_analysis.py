"""The analyzer's per-frame bookkeeping in C++ (``npkit.bench.tester._fast.Analysis``).

The rules are ``analyzer.py``'s, and so are the reports (``tests/bench/test_tester_fast.py``
compares the two on loss, duplicates, reordering, corruption, misrouting and foreign
frames).  What is kept per sent frame is 24 bytes -- send time, port, length, the expected
output port and a 64-bit hash of the expected link header and IP packet -- not the frame:
a received frame "differs from what the reference predicts" when the same hash of its link
header and IP packet differs (a damaged frame would have to hit 1 of 2**64 values to pass).

It works for the expectations it can turn into tables: ``PassThrough`` and
``RouteReference`` (its routes, next hop -> port, next hop -> link header, the POS ports;
``compiled`` builds the tables once per reference object and keeps them on it, so the
reference's routes must not change after its first analysis -- the lab's do not).  Any
other expectation goes through the Python analyzer.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from npkit.bench.tester import _fast
from npkit.bench.tester.generator import TxRecord
from npkit.bench.tester.media import PS_PER_S, PortModel
from npkit.bench.tester.reference import PassThrough, RouteReference
from npkit.bench.tester.results import COUNTS, Report, RxRecord, StreamStats

_CACHE = "_fast_tables"  # where a RouteReference keeps its tables (see the module doc)


def compiled(expect: Any, ports: Mapping[int, PortModel]) -> Any | None:
    """The C++ tables of ``expect``, or None when it is not one the C++ side knows."""
    if type(expect) is PassThrough:
        top = max([*ports, *expect.port_map, 0]) + 1
        port_map = [expect.port_map.get(p) for p in range(top)]
        if any(p is not None and not 0 <= p < 32768 for p in port_map):
            return None
        return _fast.Reference({"kind": "pass",
                                "port_map": [-1 if p is None else p for p in port_map]})
    if type(expect) is not RouteReference:
        return None
    cached = expect.__dict__.get(_CACHE)
    if cached is None:
        cached = _route_tables(expect)
        expect.__dict__[_CACHE] = cached
    return cached if cached is not False else None


def _route_tables(ref: RouteReference) -> Any:
    hops = sorted({h for routes in ref.routes.values() for h in routes.values()})
    index = {h: i for i, h in enumerate(hops)}
    try:
        hop_port = [ref.next_hop_port(h) for h in hops]
        links = [[None if ref.next_hop_link is None else ref.next_hop_link(h, f) for h in hops]
                 for f in (4, 6)]
    except Exception:  # noqa: BLE001 -- a callable that fails on a hop no packet uses
        return False
    if any(not isinstance(p, int) or not 0 <= p < 32768 for p in hop_port):
        return False
    tables = []
    for family in (4, 6):
        routes = ref.routes.get(family, {})
        by_length: dict[int, list[tuple[int, int]]] = {}
        for (network, length), hop in routes.items():
            by_length.setdefault(length, []).append((network, index[hop]))
        tables.append([(n, by_length[n]) for n in sorted(by_length, reverse=True)])
    top = max([*hop_port, *(ref.out_framing or {}), 0]) + 1
    framing = ref.out_framing or {}
    return _fast.Reference({"kind": "route", "tables": tables, "links": links,
                            "hop_port": hop_port,
                            "pos_port": [framing.get(p) == "pos" for p in range(top)]})


class FastAnalysis:
    """One analysis fed in batches: ``sent`` (in sending order), then ``received`` (each
    batch analysed in order of last-bit time, then port), then ``report``."""

    def __init__(self, models: Mapping[int, PortModel], tables: Any, bin_ps: int) -> None:
        per_byte = {p: Fraction(8 * PS_PER_S) / Fraction(m.rate_bps) for p, m in models.items()}
        denominator = math.lcm(*(f.denominator for f in per_byte.values())) if per_byte else 1
        top = max([*models, -1]) + 1
        pos = [-1] * top
        units, fixed = [0] * top, [0] * top
        for p, model in models.items():
            pos[p] = int(model.framing == "pos")
            units[p] = int(per_byte[p] * denominator)
            fixed[p] = units[p] * model.overhead_bytes
        self.bin_ps = bin_ps
        self._analysis = _fast.Analysis(pos, units, fixed, denominator, bin_ps, tables)
        # streams fed a port at a time (streaming): each stream's place in the order
        # ``Traffic.records()`` gives (port, then position on the port), for the report
        self._first: dict[int, tuple[int, int]] = {}
        self._taken: dict[int, int] = {}  # port -> frames registered so far

    def sent_batch(self, port: int, times_ps: Any, datas: list[bytes], streams: Any,
                   seqs: Any) -> None:
        """One port's frames in sending order (a ``fast.Batch``'s columns), registered
        with their place in the port's sequence so the report lists the streams as the
        held records would."""
        import numpy as np

        streams = np.asarray(streams)
        offset = self._taken.get(port, 0)
        if len(streams) and (streams == streams[0]).all():  # one stream (the usual batch)
            self._first.setdefault(int(streams[0]), (port, offset))
        else:  # each stream's first frame in the batch
            ids, first = np.unique(streams, return_index=True)
            for stream, index in zip(ids.tolist(), first.tolist(), strict=True):
                self._first.setdefault(stream, (port, offset + index))
        self._taken[port] = offset + len(datas)
        # the columns as they are (no list per column): the same frames in the same order
        self._analysis.add_sent_batch(port, times_ps, datas, streams, seqs)

    def sent(self, ports: list[int], times_ps: list[int], datas: list[bytes],
             streams: list[int], seqs: list[int]) -> None:
        self._analysis.add_sent(ports, times_ps, datas, streams, seqs)

    def sent_records(self, records: Iterable[TxRecord]) -> None:
        records = list(records)
        self.sent([r.port for r in records], [r.time_ps for r in records],
                  [r.data for r in records], [r.stream for r in records],
                  [r.seq for r in records])

    def received(self, ports: list[int], times_ps: list[int], datas: list[bytes]) -> None:
        self._analysis.add_received(ports, times_ps, datas)

    def received_arrays(self, ports: Any, times_ps: Any, datas: list[bytes]) -> None:
        """``received`` with numpy columns (ports int32, times int64): no conversion of a
        list element by element."""
        self._analysis.add_received_arrays(ports, times_ps, datas)

    def received_records(self, records: Iterable[RxRecord]) -> None:
        records = list(records)
        self.received([r.port for r in records], [r.time_ps for r in records],
                      [r.data for r in records])

    def report(self) -> Report:
        summary = self._analysis.summary()
        streams = {}
        for row in summary["streams"]:
            stats = StreamStats(row["stream"], self.bin_ps)
            for name in COUNTS:
                setattr(stats, name, row[name])
            stats._next_expected = row["next_expected"]
            latency = stats.latency
            for name in ("count", "total_ps", "min_ps", "max_ps", "lifo_min_ps",
                         "lifo_max_ps", "lifo_total_ps"):
                setattr(latency, name, row[name])
            latency.histogram = Counter(row["histogram"])
            streams[stats.stream] = stats
        if self._first:
            streams = dict(sorted(streams.items(), key=lambda kv: self._first[kv[0]]))
        report = Report(streams, StreamStats(-1, self.bin_ps), summary["foreign"],
                        summary["unknown"], summary["corrupted_unattributed"])
        _totals(report)
        return report


def _totals(report: Report) -> None:
    """The totals over the streams, as ``Analyzer.analyze`` adds them."""
    for stats in report.streams.values():
        for name in COUNTS:
            setattr(report.total, name, getattr(report.total, name) + getattr(stats, name))
        report.total.latency.merge(stats.latency)
    report.total.corrupted += report.corrupted_unattributed


__all__ = ["FastAnalysis", "compiled"]
