"""Published figures the lab's results are shown beside, each with where it comes from.

The figures are copied from /work/shared/FACTS.md (the project's reference facts); the
``source`` of each figure names the FACTS.md section and the system it describes.  Nothing
is derived or rounded here: a figure FACTS.md does not give is absent, never estimated.

The x86 figures of issue 15's comparison (``X86_FIGURES``) also carry the document each
comes from and the place in it (``Source``), as found with the project's search tool (page
and documentation corpora, 27 Nov 2026) and quoted from the text found.  Where the document
or the table was not found, ``Source`` says so, figure by figure; nothing is guessed.
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
DPDK_SOURCE = "FACTS.md §3: DPDK"


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


# --------------------------------------------------------------------------- x86 sources
@dataclass(frozen=True)
class Source:
    """Where a published figure comes from: ``document`` (title, publisher, year, URL, as
    found), ``location`` (its table or figure, or why none is given) and ``quote`` (the
    words found that carry the figure; empty when the document was not found)."""

    document: str
    location: str
    quote: str = ""
    found: bool = False  # the document itself was found (not only FACTS.md's mention)


SANDY_BRIDGE_NOT_FOUND = Source(
    document="not found: FACTS.md §3 names it only as \"x86, Sandy Bridge i7-2600 + 82599, "
             "RFC 2544 (2011)\"; searches for the i7-2600 + 82599 RFC 2544 report, "
             "\"22.3\"/\"32.5 Mpps\" and \"Xeon X5690 10.24 Mpps\" found no such document",
    location="not known: the document was not found")
INTEL_80_MPPS = Source(
    document="Intel, Solution Brief \"Packet Processing on Intel® Architecture: Impressive "
             "Packet Processing Performance Enables Greater Workload Consolidation\" (year not "
             "shown in the text found; its Figure 1 roadmap runs 2011-2013), "
             "http://www.intel.com/content/dam/www/public/us/en/documents/solution-briefs/"
             "communications-packet-processing-brief.pdf (copy: https://docslib.org/doc/"
             "2325856/)",
    location="the brief's title block (its subtitle, with footnote 1), not a table or "
             "figure; the text found names neither L3 forwarding nor 64-byte frames, which "
             "FACTS.md adds, and footnote 1's text was not found",
    # as docslib's text gives it: it drops "Xeon", which its page address and a gist
    # citing the brief ("Single Intel Xeon processor platform achieves over 80 Mpps
    # throughput") have
    quote="Single Intel® ® processor platform achieves Over 80 Mpps throughput1",
    found=True)
ACCTON_BRIDGE = Source(
    document="Accton, Technology Brief \"Intel® DPDK Performance on the SAU5081I Server\" "
             "(year not shown in the text found), https://www.accton.com/Technology-Brief/"
             "intel-dpdk-performance-on-the-sau5081i-server/ -- the likely document: it "
             "compares DPDK with Linux bridging on a server with dual or quad 10 Gbps ports",
    location="not found: the text found is the brief's opening; the test cases' results, "
             "l2fwd by name and the \"up to 10x\" figure were not in it",
    quote="Four test cases were used to measure the DPDK throughput enhancement as compared "
          "to normal Linux bridging performance.",
    found=True)


@dataclass(frozen=True)
class X86Figure:
    """A published x86 figure of issue 15's comparison, with its source."""

    app: str  # our program it is set beside: router | l2fwd
    what: str
    value: str  # as FACTS.md writes it
    frame_bytes: int | None
    facts: str  # the FACTS.md entry it is copied from
    source: Source


X86_FIGURES: tuple[X86Figure, ...] = (
    X86Figure("router", "RFC 2544, 64-byte frames, whole box (Sandy Bridge i7-2600 + 82599)",
              "22.3–32.5 Mpps", 64, X86_SOURCE, SANDY_BRIDGE_NOT_FOUND),
    X86Figure("router", "RFC 2544, 64-byte frames, whole box (earlier Xeon X5690)",
              "10.24 Mpps", 64, X86_SOURCE, SANDY_BRIDGE_NOT_FOUND),
    X86Figure("router", "RFC 2544 line rate on 4 x 10GbE from this frame size "
              "(i7-2600 + 82599)", "line rate from 256 B", 256, X86_SOURCE,
              SANDY_BRIDGE_NOT_FOUND),
    X86Figure("router", "DPDK L3 forwarding, 64 B, high-end Xeons", "over 80 Mpps", 64,
              DPDK_SOURCE, INTEL_80_MPPS),
    X86Figure("l2fwd", "DPDK l2fwd vs Linux bridge, small packets", "up to 10x the bridge",
              None, DPDK_SOURCE, ACCTON_BRIDGE),
)
