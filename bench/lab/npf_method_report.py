"""The NPF report's methodology sections (``npf_report.npf_sections`` adds them): how the
throughput was found (confirmed trials, trial length) and whether it had stopped changing
with trial length, latency at % of *line rate* beside the published IMIX rows, and per
case the DRAM bytes per forwarded packet and the busiest units (``unit_use``).

Two latency series, labelled apart everywhere: "of throughput" (RFC 2544 style, the loads
are 100/95/90/50 % of the throughput this device found) and "of line rate" (100 % is line
rate whatever the throughput -- the basis of the published rows, whose system forwarded
at line rate; FACTS.md §1a: the published latency rows are Internet-mix rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from npkit.bench.lab import published
from npkit.bench.lab.latency_parts import Published, breakdown_markdown
from npkit.bench.lab.npf import (
    MIN_TRIAL_PS,
    ConvergenceResult,
    NpfCaseResult,
    NpfResult,
)
from npkit.bench.lab.report_parts import (
    PS_PER_US,
    Section,
    figure,
    image_link,
    microseconds,
    number,
    save_png,
    table,
)
from npkit.bench.lab.unit_use import busiest_units, dram_bytes_per_packet

TITLES = {"ipv4": "IPv4", "ipv6": "IPv6", "mixed": "Mixed"}
PUBLISHED_IMIX = {"ipv4": "latency_v4_avg_us", "ipv6": "latency_v6_avg_us"}
TOLERANCE = 0.15  # issue 12: within ±15 % of the published IMIX averages


def _us(ps: int) -> str:
    return f"{ps / PS_PER_US:g}"


def short_trials_warning(result: NpfResult) -> str:
    """A warning paragraph when the trials are shorter than the methodology's 10 ms
    (``--quick``); empty otherwise."""
    c = result.config
    if c.trial_ps >= MIN_TRIAL_PS:
        return ""
    return (f"**These figures are from short trials** ({_us(c.trial_ps)} µs of simulated "
            f"time each, under the methodology's {MIN_TRIAL_PS / 1e9:g} ms): a queue that "
            "absorbs a few microseconds of excess lets a short trial pass above the rate "
            "the device sustains, so the throughputs below may be higher than a full run's"
            + (" (see \"Trial length\")" if result.convergence else "") + ".\n\n")


def method_text(result: NpfResult) -> str:
    """How the throughput was found, for the configuration section."""
    c = result.config
    confirm = ("each candidate load accepted only when "
               f"{c.confirm_trials} trials at it all lose nothing (the search's trial, then "
               f"{c.confirm_trials - 1} with other stream seeds and every stream starting at "
               f"its own phase, up to {_us(c.phase_window_ps)} µs late); a loss in any of "
               "them moves the search down" if c.confirm_trials > 1 else
               "each candidate load judged on one trial (no confirmation trials)")
    return (f"**Throughput** is the highest load with zero loss: binary search to "
            f"{c.resolution_percent:g} % of line rate, {confirm}; trials of "
            f"{_us(c.trial_ps)} µs.\n\n" + short_trials_warning(result))


# --------------------------------------------------------------------------- trial length
def convergence_section(result: NpfResult, out_dir: Path) -> Section | None:
    if not result.convergence:
        return None
    rows = []
    for conv in result.convergence:
        name = f"{TITLES.get(conv.traffic, conv.traffic)} {conv.size}"
        for point in conv.convergence.points:
            search = point.search
            mark = " (the suite's)" if point.trial_ps == conv.trial_ps else ""
            rows.append((name, f"{_us(point.trial_ps)}{mark}",
                         number(search.throughput_percent, 2), len(search.steps)))
    text = ("The confirmed throughput search of a case again at several trial lengths: "
            "short trials can pass a load above the sustained rate while queues absorb the "
            "excess, so the answer falls as trials grow until they are long enough.\n\n")
    text += table(("case", "trial µs", "throughput % of line", "trials run"), rows)
    text += "\n" + "\n".join(_verdict(conv) for conv in result.convergence) + "\n"
    charts = []
    chart = convergence_chart(result.convergence, out_dir / "npf_convergence.png")
    if chart:
        charts.append(chart)
        text += "\n" + image_link(chart, "throughput against trial length")
    return Section("Trial length", text, tuple(charts))


def _verdict(conv: ConvergenceResult) -> str:
    name = f"{TITLES.get(conv.traffic, conv.traffic)} {conv.size}"
    c = conv.convergence
    stable = conv.stable_at_preset
    res = f"{c.resolution_percent:g} %"
    if stable is None:
        return (f"* **{name}**: the suite's trial length ({_us(conv.trial_ps)} µs) is the "
                "shortest searched: no verdict on convergence.")
    if stable:
        since = c.settled_from()
        return (f"* **{name}**: the answer had stopped changing at the suite's trial length "
                f"({_us(conv.trial_ps)} µs): it matches the shorter and longer lengths' to "
                f"{res}" + (f" (the same from {_us(since)} µs trials on)" if since else "")
                + ".")
    return (f"* **{name}**: the answer was **still changing** at the suite's trial length "
            f"({_us(conv.trial_ps)} µs): it differs by more than {res} from a neighbouring "
            "length's, so the suite's throughputs are not yet trial-length independent.")


def convergence_chart(convergences: Sequence[ConvergenceResult], path: Path) -> Path | None:
    if not convergences:
        return None
    fig = figure()
    ax = fig.subplots()
    for conv in convergences:
        points = conv.convergence.points
        ax.plot([p.trial_ps / PS_PER_US for p in points],
                [p.search.throughput_percent or 0 for p in points], "o-",
                label=f"{TITLES.get(conv.traffic, conv.traffic)} {conv.size}")
    ax.axvline(convergences[0].trial_ps / PS_PER_US, color="#888888", linestyle="--",
               label="the suite's trial length")
    ax.set_xscale("log")
    ax.set(xlabel="trial length (µs of simulated time)", ylabel="throughput (% of line rate)",
           ylim=(0, 105), title="Throughput against trial length")
    ax.legend(fontsize="small")
    return save_png(fig, path)


# --------------------------------------------------------------------------- latency
def line_latency_section(result: NpfResult) -> Section | None:
    cases = [c for c in result.cases if c.latency_line]
    if not cases:
        return None
    rows = []
    for c in cases:
        for p in c.latency_line:
            rows.append((TITLES.get(c.traffic, c.traffic), c.size, f"{p.load_percent:g} %",
                         number(p.percent_of_throughput, 0), microseconds(p.min_ps),
                         microseconds(p.avg_ps), microseconds(p.max_ps),
                         microseconds(p.lifo_avg_ps), f"{p.count:,}", f"{p.lost:,}"))
    text = ("Latency at 100/95/90/50 % **of line rate** (100 % = line rate, whatever the "
            "throughput): the basis of the published rows, whose system forwarded at line "
            "rate.  Loads above our throughput lose packets (\"lost\"); their latency is of "
            "the packets that came out, queues full.  The tables under each traffic type "
            "give the other series, at % **of our throughput** (RFC 2544 style).\n\n")
    text += table(("traffic", "size", "of line rate", "% of throughput", "min µs", "avg µs",
                   "max µs", "S&F avg µs", "packets", "lost"), rows)
    text += "\n" + published_imix_comparison(result)
    return Section("Latency at % of line rate", text)


def published_imix_comparison(result: NpfResult) -> str:
    """Our Internet-mix average latency at each % of line rate beside the published IMIX
    average (FACTS.md §3, §1a), with the difference and whether it is within ±15 %."""
    rows = []
    for c in result.cases:
        key = PUBLISHED_IMIX.get(c.traffic)
        if key is None or c.size != "imix":
            continue
        theirs = published.npf_figure(key)
        for p in c.latency_line:
            if p.avg_ps is None or not theirs.value:
                continue
            ours = p.avg_ps / PS_PER_US
            off = ours / theirs.value - 1
            rows.append((TITLES[c.traffic], f"{p.load_percent:g} %", f"{ours:.2f}",
                         theirs.text, f"{100 * off:+.1f} %",
                         "yes" if abs(off) <= TOLERANCE else "no", f"{p.lost:,}"))
    if not rows:
        return ("No Internet-mix case of IPv4 or IPv6 was run at % of line rate: nothing to "
                "set beside the published IMIX rows.\n")
    return ("**Beside the published IMIX rows** (published: one average per family, at 100 % "
            "of line rate, which was the published throughput; FACTS.md §1a: flat from 25 "
            "to 100 % load, IPv4 10.79–10.80 µs, so it stands for 95/90/50 % too):\n\n" +
            table(("family", "of line rate", "ours avg µs", "published", "difference",
                   "within ±15 %", "lost"), rows) + "\n" + latency_breakdown(result))


def latency_breakdown(result: NpfResult) -> str:
    """The IMIX latency at % of line rate by component (``latency_parts``), beside the
    published average."""
    rows = []
    for c in result.cases:
        key = PUBLISHED_IMIX.get(c.traffic)
        if key is None or c.size != "imix":
            continue
        theirs = Published(published.npf_figure(key).value,
                           published.npf_figure(key.replace("_avg_", "_min_")).value)
        rows += [(TITLES[c.traffic], p, theirs) for p in c.latency_line]
    return breakdown_markdown(result.device, rows)


# --------------------------------------------------------------------------- per packet
def per_packet_section(result: NpfResult) -> Section:
    rows = []
    for c in result.cases:
        at = c.counters_at_throughput
        rows.append((TITLES.get(c.traffic, c.traffic), c.size,
                     number(c.throughput.throughput_percent, 2),
                     number(dram_bytes_per_packet(at), 1),
                     number(dram_bytes_per_packet(c.counters_at_full_load), 1),
                     _busiest(at) if at else "–",
                     _busiest(c.counters_at_full_load)))
    text = ("DRAM bytes moved per forwarded packet, from the chip's counters: the bytes of "
            "every DRAM channel (reads and writes, RBUF → DRAM and DRAM → TBUF included) "
            "over the trial, divided by the frames the ports transmitted "
            "(`bench/lab/unit_use.py`; on a system of several chips, per chip, and the "
            "table gives the worst chip).  At the throughput nothing is lost, so it is the "
            "data path's DRAM traffic per packet; at 100 % of line rate the traffic of "
            "dropped packets is spread over those forwarded.  The busiest units: busy "
            "fraction over the offered traffic's span (MEs, SRAM/DRAM channels, scratch).  "
            "\"–\": not measured (no throughput, or a device without DRAM counters).\n\n")
    text += table(("traffic", "size", "throughput %", "DRAM B/packet at throughput",
                   "DRAM B/packet at 100 %", "busiest at throughput", "busiest at 100 %"),
                  rows)
    return Section("DRAM traffic and busiest units per case", text)


def _busiest(counters: dict[str, float]) -> str:
    units = busiest_units(counters, 3)
    return ", ".join(f"{name} {value:.0%}" for name, value in units) if units else "–"


def method_sections(result: NpfResult, out_dir: Path) -> list[Section]:
    """The methodology sections, in report order."""
    sections = []
    for extra in (convergence_section(result, out_dir), line_latency_section(result),
                  per_packet_section(result)):
        if extra is not None:
            sections.append(extra)
    return sections


def imix_line_latency(cases: Sequence[NpfCaseResult], traffic: str, load: float = 100.0
                      ) -> float | None:
    """Our IMIX average latency (µs) of ``traffic`` at ``load`` % of line rate, if run."""
    for c in cases:
        if c.traffic == traffic and c.size == "imix":
            for p in c.latency_line:
                if p.load_percent == load and p.avg_ps is not None:
                    return p.avg_ps / PS_PER_US
    return None


__all__ = ["convergence_chart", "convergence_section",
           "imix_line_latency", "latency_breakdown", "line_latency_section",
           "method_sections", "method_text", "per_packet_section",
           "published_imix_comparison", "short_trials_warning"]
