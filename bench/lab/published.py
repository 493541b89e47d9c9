"""Published figures the lab's results are shown beside, each with where it comes from.

Everything here is copied from /work/shared/FACTS.md (the project's reference facts); the
``source`` of each figure names the FACTS.md section and the system it describes.  Nothing
is derived or rounded here: a figure FACTS.md does not give is absent, never estimated.
"""

from __future__ import annotations

from dataclasses import dataclass

NPF_SYSTEM = ("2 x IXP2800, IXA SDK 3.1 microblocks, 2 x OC-192 POS full duplex, "
              "NPF IP Forwarding benchmark full disclosure report (2003)")
NPF_SOURCE = f"FACTS.md §3: {NPF_SYSTEM}"
IMIX_AT_LINE = "Internet mix, at 100 % of line rate (= its throughput)"
NPF_LATENCY_SOURCE = (f"FACTS.md §3 and §1a (the latency rows are Internet-mix rows, taken "
                      f"at line rate, which was the throughput): {NPF_SYSTEM}")
X86_SOURCE = "FACTS.md §3: x86, Sandy Bridge i7-2600 + 82599, RFC 2544 (2011)"


@dataclass(frozen=True)
class Figure:
    """One published figure: ``key`` identifies it for the report, ``value`` is as
    published in ``unit`` (None when the figure is not a number, e.g. "zero loss")."""

    key: str
    what: str
    value: float | None
    unit: str
    text: str  # as FACTS.md writes it
    source: str


NPF_FIGURES: tuple[Figure, ...] = (
    Figure("forwarding_gbps", "forwarding rate, all packet sizes", 20.0, "Gbps",
           "20 Gbps at all packet sizes", NPF_SOURCE),
    Figure("throughput_gbps", "throughput, all packet sizes", 20.0, "Gbps",
           "20 Gbps at all packet sizes", NPF_SOURCE),
    Figure("loss", "packet loss at the throughput", 0.0, "packets", "zero loss", NPF_SOURCE),
    Figure("latency_v4_avg_us", f"IPv4 latency, {IMIX_AT_LINE}, average", 10.80, "µs",
           "avg 10.80 µs", NPF_LATENCY_SOURCE),
    Figure("latency_v4_min_us", f"IPv4 latency, {IMIX_AT_LINE}, minimum", 8.85, "µs",
           "min 8.85 µs", NPF_LATENCY_SOURCE),
    Figure("latency_v4_max_us", f"IPv4 latency, {IMIX_AT_LINE}, maximum", 13.85, "µs",
           "max 13.85 µs", NPF_LATENCY_SOURCE),
    Figure("latency_v6_avg_us", f"IPv6 latency, {IMIX_AT_LINE}, average", 12.15, "µs",
           "avg 12.15 µs", NPF_LATENCY_SOURCE),
    Figure("latency_v6_min_us", f"IPv6 latency, {IMIX_AT_LINE}, minimum", 9.22, "µs",
           "min 9.22 µs", NPF_LATENCY_SOURCE),
    Figure("latency_v6_max_us", f"IPv6 latency, {IMIX_AT_LINE}, maximum", 16.18, "µs",
           "max 16.18 µs", NPF_LATENCY_SOURCE),
    Figure("latency_v4_imix_flat_us", "IPv4 latency, Internet mix, average from 25 % to "
           "100 % of line rate", None, "µs", "10.79–10.80 µs (flat)", NPF_LATENCY_SOURCE),
    Figure("updates_v4_per_s", "IPv4 forwarding-table updates (one update per call)",
           58_883.0, "updates/s", "58,883/s", NPF_SOURCE),
    Figure("updates_v6_per_s", "IPv6 forwarding-table updates (one update per call)",
           24_000.0, "updates/s", "24,000/s", NPF_SOURCE),
    Figure("routes_v4", "IPv4 routes loaded (2,000 exercised)", 135_432.0, "routes",
           "135,432 IPv4 routes (2,000 exercised)", NPF_SOURCE),
    Figure("routes_v6", "IPv6 routes loaded (400 exercised)", 1_200.0, "routes",
           "1,200 IPv6 routes (400 exercised)", NPF_SOURCE),
    Figure("sram_mb", "SRAM of FIB, next hops and metadata per chip", 7.3, "MB", "7.3 MB",
           NPF_SOURCE),
    Figure("dram_mb", "DRAM packet buffers per chip", 123.9, "MB", "123.9 MB", NPF_SOURCE),
    Figure("power_w", "typical power per chip", 25.5, "W", "25.5 W", NPF_SOURCE),
)


def npf_figure(key: str) -> Figure:
    for figure in NPF_FIGURES:
        if figure.key == key:
            return figure
    raise KeyError(f"no published NPF figure {key!r}")


@dataclass(frozen=True)
class Rfc2544Row:
    """A published RFC 2544 figure for a frame size (what ``report.py`` shows beside the
    RFC 2544 throughput, in Mpps over all input ports)."""

    what: str
    value: str
    frame_bytes: int
    source: str


def rfc2544_rows() -> list[Rfc2544Row]:
    """FACTS.md §3's x86 RFC 2544 figures (whole box, 64-byte frames)."""
    return [
        Rfc2544Row("64-byte frames, whole box (i7-2600 + 82599)", "22.3–32.5 Mpps", 64,
                   X86_SOURCE),
        Rfc2544Row("64-byte frames, whole box (earlier Xeon X5690)", "10.24 Mpps", 64,
                   X86_SOURCE),
        Rfc2544Row("line rate on 4 x 10GbE from this frame size", "line rate", 256,
                   X86_SOURCE),
    ]
