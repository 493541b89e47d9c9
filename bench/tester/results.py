"""What the analyzer reports: received records, per-stream counts and latency, the report
(the definitions are in ``analyzer.py``'s docstring; both the Python and the C++ analysis
fill these)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


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
