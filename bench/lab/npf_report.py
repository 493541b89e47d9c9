"""The NPF sections of the lab's report (``report.write_report`` calls ``npf_sections``; the
parts they are built from are in ``report_parts``):
configuration, our figures beside the published IXP2800 ones (``published.py``), per
traffic type the forwarding rate / throughput / latency / loss tables and charts, the
overload and update tests, and for every place where ours differ from the published
figures what the device's counters say.

Rates: "% of line" is of the input ports' line (OC-192 POS: the 9.58464 Gb/s STS-192c
payload, which carries PPP header + IP packet + flag + FCS-32); Gbps are IP bits.  The
published "20 Gbps at all packet sizes" is 2 x OC-192 at full line rate, so the figure to
compare with it is our throughput in % of line rate (100 % = the published figure).
Forwarding rates are packets received over the sending time, frames that leave during the
settle time included (see ``npf``'s module documentation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npkit.bench.lab import npf_method_report as method
from npkit.bench.lab import published
from npkit.bench.lab.latency_parts import PathDelays
from npkit.bench.lab.npf import NpfCaseResult, NpfResult, UpdateResult
from npkit.bench.lab.report_parts import (
    PS_PER_US,
    Section,
    explain,
    figure,
    image_link,
    microseconds,
    number,
    save_png,
    table,
)

TRAFFIC_TITLES = {"ipv4": "IPv4", "ipv6": "IPv6", "mixed": "Mixed IPv4 + IPv6"}


def _line_percent(case: NpfCaseResult) -> float | None:
    return case.throughput.throughput_percent


def _throughput_gbps(case: NpfCaseResult) -> float | None:
    """IP Gbps at the throughput: the 100 % trial's offered IP rate scaled to the load."""
    load = case.throughput.throughput_percent
    return None if load is None else case.forwarding.offered_ip_gbps * load / 100


def _first_latency(case: NpfCaseResult) -> Any:
    """Latency at 100 % of the throughput (None when not measured)."""
    for point in case.latency:
        if point.percent_of_throughput == 100:
            return point
    return None


# --------------------------------------------------------------------------- sections
def _config_section(result: NpfResult) -> Section:
    c = result.config
    text = (f"NPF IP Forwarding benchmark (FACTS.md §5), preset `{c.preset}`, seed {c.seed}: "
            f"port pairs in full duplex, every input port at the same load; destinations "
            f"over {c.exercised_v4:,} IPv4 / {c.exercised_v6:,} IPv6 routes of the loaded "
            f"table; trials of {c.trial_ps / PS_PER_US:g} µs of simulated time + "
            f"{c.settle_ps / PS_PER_US:g} µs for frames in flight; throughput by binary "
            f"search to {c.resolution_percent:g} % of line rate.\n\n")
    text += method.method_text(result)
    if result.setup:
        routes = result.setup.get("routes", {})
        if routes:
            text += (f"Route tables: {routes.get('v4_routes', 0):,} IPv4 and "
                     f"{routes.get('v6_routes', 0):,} IPv6 routes, "
                     f"{result.setup.get('routes_origin', '')} (seed {routes.get('seed')}, "
                     f"{routes.get('next_hops')} next hops).\n\n")
    rows = [(k, f"`{v}`") for k, v in sorted(dataclasses.asdict(c).items())]
    text += "### Test configuration\n\n" + table(("setting", "value"), rows)
    device = [(k, f"`{v}`") for k, v in sorted(result.device.items())]
    text += "\n### Device under test\n\n" + table(("setting", "value"), device)
    return Section("Configuration", text)


def _latency_summary(cases: Sequence[NpfCaseResult], what: str) -> str:
    """Ours at 100 % of throughput over the sizes: 'a – b µs' of ``what`` (min/avg/max)."""
    values = []
    for case in cases:
        point = _first_latency(case)
        value = None if point is None else getattr(point, f"{what}_ps")
        if value is not None:
            values.append(value)
    if not values:
        return "not measured"
    low, high = min(values), max(values)
    if low == high:
        return f"{microseconds(low)} µs"
    return f"{microseconds(low)} – {microseconds(high)} µs"


def _imix_at_line(cases: Sequence[NpfCaseResult], traffic: str) -> str:
    """Ours beside the published IMIX row: the IMIX average at 100 % of line rate."""
    value = method.imix_line_latency(cases, traffic)
    return "not measured" if value is None else f"{value:.2f} µs"


def _updates_summary(updates: Sequence[UpdateResult], family: int) -> str:
    for u in updates:
        if u.family == family:
            return f"{u.max_updates_per_s:,.0f}/s" if u.measured else u.note
    return "not run"


def _published_section(result: NpfResult) -> Section:
    """The published IXP2800 figures beside ours."""
    by_traffic: dict[str, list[NpfCaseResult]] = {}
    for case in result.cases:
        by_traffic.setdefault(case.traffic, []).append(case)
    v4, v6 = by_traffic.get("ipv4", []), by_traffic.get("ipv6", [])
    every = list(result.cases)
    rates = [c.throughput.throughput_percent for c in every]
    known = [r for r in rates if r is not None]
    tput = "none passed" if not known else \
        f"{min(known):.1f} – {max(known):.1f} % of line rate" if min(known) != max(known) \
        else f"{known[0]:.1f} % of line rate"
    forwarding = [100 * c.forwarding.received / c.forwarding.sent for c in every
                  if c.forwarding.sent]
    fwd = "–" if not forwarding else f"{min(forwarding):.1f} – {max(forwarding):.1f} % " \
        "of the offered packets at 100 % load"
    lost = sum(c.forwarding.lost for c in every)
    fig = published.npf_figure
    rows = [
        ("forwarding rate", fig("forwarding_gbps").text, fwd),
        ("throughput", fig("throughput_gbps").text + " (100 % of 2 × OC-192)", tput),
        ("loss at 100 % offered load", fig("loss").text, f"{lost:,} packets over all cases"),
        ("IPv4 IMIX latency at 100 % of line rate, avg", fig("latency_v4_avg_us").text,
         _imix_at_line(v4, "ipv4")),
        ("IPv4 latency at 100 % of our throughput, avg (over our sizes)", "–",
         _latency_summary(v4, "avg")),
        ("IPv4 latency, min / max (published: IMIX at line rate; ours: at 100 % of our "
         "throughput, over our sizes)", f"{fig('latency_v4_min_us').text} / "
         f"{fig('latency_v4_max_us').text}",
         f"{_latency_summary(v4, 'min')} / {_latency_summary(v4, 'max')}"),
        ("IPv6 IMIX latency at 100 % of line rate, avg", fig("latency_v6_avg_us").text,
         _imix_at_line(v6, "ipv6")),
        ("IPv6 latency at 100 % of our throughput, avg (over our sizes)", "–",
         _latency_summary(v6, "avg")),
        ("IPv6 latency, min / max (published: IMIX at line rate; ours: at 100 % of our "
         "throughput, over our sizes)", f"{fig('latency_v6_min_us').text} / "
         f"{fig('latency_v6_max_us').text}",
         f"{_latency_summary(v6, 'min')} / {_latency_summary(v6, 'max')}"),
        ("IPv4 route updates", fig("updates_v4_per_s").text, _updates_summary(result.updates, 4)),
        ("IPv6 route updates", fig("updates_v6_per_s").text, _updates_summary(result.updates, 6)),
    ]
    routes = result.setup.get("routes", {}) if result.setup else {}
    if routes:
        rows.append(("route tables", f"{fig('routes_v4').text}; {fig('routes_v6').text}",
                     f"{routes.get('v4_routes', 0):,} IPv4, {routes.get('v6_routes', 0):,} "
                     f"IPv6 ({result.setup.get('routes_origin', '')}); "
                     f"{result.config.exercised_v4:,} / {result.config.exercised_v6:,} "
                     "exercised"))
    text = (f"Published: {published.NPF_SYSTEM} ({published.NPF_SOURCE.split(':')[0]}).  "
            "Ours: the device under test described above.  The published latency is one "
            "figure per family, from the report's Internet-mix rows at line rate (FACTS.md "
            "§1a; its throughput was line rate): ours beside it is our Internet mix at 100 % "
            "of line rate (\"Latency at % of line rate\" has 95/90/50 %); our latency at "
            "100 % of our own throughput is given as the range over our sizes.\n\n")
    text += table(("figure", "published", "ours"), rows)
    text += "\n" + _differences(result)
    return Section("Published figures beside ours", text)


def _differences(result: NpfResult) -> str:
    """Every place ours differ from the published figures, with what the counters say."""
    notes = []
    for case in result.cases:
        load = case.throughput.throughput_percent
        name = f"{TRAFFIC_TITLES.get(case.traffic, case.traffic)} {case.size}"
        if load is None or load < 100:
            shown = "no load without loss" if load is None else f"{load:.2f} % of line rate"
            notes.append(f"* **{name}**: throughput {shown}, the published figure is 100 % "
                         f"-- {explain(case.counters_at_throughput, case.counters_above)}")
        elif case.forwarding.lost:
            notes.append(f"* **{name}**: {case.forwarding.lost:,} packets lost at 100 % "
                         f"offered load -- {explain({}, case.counters_at_full_load)}")
    notes += _latency_differences(result)
    for u in result.updates:
        if not u.measured:
            notes.append(f"* **IPv{u.family} route updates**: {u.note}; no figure is given")
        elif u.max_updates_per_s is not None:
            theirs = published.npf_figure(f"updates_v{u.family}_per_s").value or 0.0
            notes.append(f"* **IPv{u.family} route updates**: ours {u.max_updates_per_s:,.0f}/s "
                         f"against {theirs:,.0f}/s, in simulated time; the XScale's work per "
                         "update is costed from what the updater counted and the data-cache "
                         "misses of its reads (npkit.runtime.xscale_update; instruction "
                         "costs per event are [U] estimates), then its writes replayed")
        for p in u.concurrent:
            if p.rate.lost or p.rate.errors:
                notes.append(f"* **IPv{u.family} forwarding under updates** at "
                             f"{p.percent_of_max:g} % of the update rate: {p.rate.lost:,} "
                             f"lost, {p.rate.errors:,} errors (misrouted, damaged, ...) of "
                             f"{p.rate.sent:,} at {p.rate.load_percent:.1f} % load")
    if not notes:
        return "Ours match the published figures where both exist.\n"
    path = DATA_PATH_TEXT.get(str(result.device.get("data_path", "rings")),
                              DATA_PATH_TEXT["rings"])
    delays = PathDelays.of(result.device)
    framers = (f"{delays.framer_rx_ps / 1000:g} ns in, {delays.framer_tx_ps / 1000:g} ns out")
    difference = (SYSTEM_DIFFERENCE.format(data_path=path, framers=framers)
                  if result.device.get("system") else DEVICE_DIFFERENCE)
    return ("**Where ours differ** (from the device's counters):\n\n" + difference
            + "\n".join(notes) + "\n")


# The published device is not ours: say so before the per-case notes.
DEVICE_DIFFERENCE = (
    "The published system is two IXP2800s, each with its own SRAM and DRAM (123.9 MB of "
    "packet buffers per chip, FACTS.md §3); ours is one simulated IXP2800 that receives, "
    "forwards and transmits both ports' traffic, so every packet's DRAM accesses (receive "
    "write, header read, header write-back, transmit read) fall on one chip's three DRAM "
    "channels. Where the counters below show DRAM saturated, that is the first reason; "
    "docs/performance.md \"Compiled router on 2 x OC-192 POS\" gives the arithmetic. "
    "For latency the difference runs the other way: in a two-chip system a packet crosses "
    "both chips and the interface between them, ours crosses one chip, so ours is lower "
    "wherever our queues are short (the notes give our time inside the chip).\n\n")

# The same, for a device on a simulated system (bench/lab/system_device.py)
SYSTEM_DIFFERENCE = (
    "Ours is the published arrangement as a simulated system (docs/system.md): two "
    "IXP2800s, each receiving one OC-192 POS line and transmitting the other, each with its "
    "own SRAM and DRAM, so a packet crosses one chip and each chip's DRAM carries one "
    "direction; the framers are a fixed delay each way ({framers}, a guess: U, no "
    "published IXF18101 figure found).  What remains "
    "different is the data path on each chip ({data_path}, not the IXA SDK microblocks); "
    "the counters below name the busiest units per chip (`east.`, `west.`).\n\n")
DATA_PATH_TEXT = {
    "pool": "our compiled router in the compiled IXA-class data path, docs/datapath.md: "
            "every ME receives, forwards and transmits, the header from the receive buffer "
            "to the transmit buffer in registers",
    "pool-mbl": "our compiled router in the compiled IXA-class data path with its receive "
                "and transmit written in MBL (frame_rx / frame_tx), docs/datapath.md",
    "rings": "our compiled router between the hand-written receive and transmit microcode",
}


def _latency_differences(result: NpfResult) -> list[str]:
    """Ours against the published average latency, split into wire time and time inside."""
    keys = {"ipv4": "latency_v4_avg_us", "ipv6": "latency_v6_avg_us"}
    # the published rows are IMIX at line rate: compare those when the run measured them
    at_line = any(c.latency_line for c in result.cases)
    notes = []
    for case in result.cases:
        key = keys.get(case.traffic)
        point = _first_latency(case)
        if at_line:
            point = next((p for p in case.latency_line if p.load_percent == 100), None) \
                if case.size == "imix" else None
        if key is None or point is None or point.avg_ps is None:
            continue
        ours = point.avg_ps / PS_PER_US
        theirs = published.npf_figure(key).value or 0.0
        wire = (point.avg_ps - (point.lifo_avg_ps or 0.0)) / PS_PER_US
        counters = case.counters_at_full_load if at_line else case.counters_at_throughput
        inside = [f"{k} {v:.0%}" for k, v in sorted(counters.items())
                  if k.startswith(("fwd.busy", "fwd.stall")) and isinstance(v, float)]
        per_frame = counters.get("fwd.instructions_per_frame")
        if per_frame:
            inside.append(f"{per_frame:.0f} forwarding-ME instructions per frame")
        basis = " at 100 % of line rate" if at_line else ""
        notes.append(
            f"* **{TRAFFIC_TITLES[case.traffic]} {case.size} latency{basis}**: ours {ours:.2f} µs "
            f"avg against {theirs:.2f} µs ({ours - theirs:+.2f} µs); of ours, {wire:.2f} µs "
            f"is the frame's own time on the input and output lines and "
            f"{(point.lifo_avg_ps or 0) / PS_PER_US:.2f} µs from last bit in to first bit "
            f"out" + (f" ({', '.join(inside)})" if inside else ""))
    return notes


def _traffic_section(result: NpfResult, traffic: str, out_dir: Path) -> Section:
    cases = [c for c in result.cases if c.traffic == traffic]
    title = TRAFFIC_TITLES.get(traffic, traffic)
    rows = []
    for c in cases:
        f = c.forwarding
        rows.append((c.size, number(f.sent * 1e6 / f.duration_ps, 3),  # per us = Mpps
                     number(f.forwarded_pps / 1e6, 3), number(f.forwarded_ip_gbps, 2),
                     _by_end(f), number(_line_percent(c), 2), number(_throughput_gbps(c), 2),
                     len(c.throughput.steps)))
    text = ("Forwarding rate at 100 % offered load on every input port, and throughput (the "
            "highest load with zero loss).  Mpps and IP Gbps over all input ports.  The "
            "forwarding rate is the packets received divided by the sending time: frames "
            "that leave during the settle time after the tester stopped count too, so above "
            "the throughput it includes the backlog the device drained; \"out by end\" is "
            "the share of received frames out by the end of the sending time (it misses "
            "those in flight then), and the rate the device sustains lies between the two.")
    if traffic != "ipv4":
        text += ("  IPv6 packets start at 60 bytes, the smallest that carries the IPv6 header "
                 "and the tester's 20-byte signature (smaller sizes are sent at 60).")
    text += "\n\n"
    text += table(("size", "offered Mpps", "forwarded Mpps", "forwarded Gbps", "out by end",
                   "throughput % of line", "throughput Gbps", "search trials"), rows)
    charts = []
    chart = rate_chart(cases, out_dir / f"npf_{traffic}_rates.png", title)
    if chart:
        charts.append(chart)
        text += "\n" + image_link(chart, f"{title} forwarding rate and throughput")
    text += "\n### Latency\n\n" + _latency_table(cases)
    chart = latency_chart(cases, out_dir / f"npf_{traffic}_latency.png", title)
    if chart:
        charts.append(chart)
        text += "\n" + image_link(chart, f"{title} latency per load")
    text += "\n### Loss rate\n\n" + _loss_table(cases)
    chart = loss_chart(cases, out_dir / f"npf_{traffic}_loss.png", title)
    if chart:
        charts.append(chart)
        text += "\n" + image_link(chart, f"{title} loss rate")
    overload = _overload_table(cases)
    if overload:
        text += "\n### Overload\n\n" + overload
    return Section(title, text, tuple(charts))


def _latency_table(cases: Sequence[NpfCaseResult]) -> str:
    rows = []
    for c in cases:
        if not c.latency:
            rows.append((c.size, "–", "–", "–", "–", "–", "–", c.note or "–"))
        for p in c.latency:
            rows.append((c.size, f"{p.percent_of_throughput:g} %", number(p.load_percent, 2),
                         microseconds(p.min_ps), microseconds(p.avg_ps),
                         microseconds(p.max_ps), microseconds(p.lifo_avg_ps),
                         f"{p.count:,}"))
    return ("At 100/95/90/50 % of the throughput: first bit in to last bit out (min / avg / "
            "max, µs) and last bit in to first bit out (S&F avg).\n\n" +
            table(("size", "of throughput", "load %", "min µs", "avg µs", "max µs",
                   "S&F avg µs", "packets"), rows))


def _loss_table(cases: Sequence[NpfCaseResult]) -> str:
    loads = sorted({s.load_percent for c in cases for s in c.loss.steps}, reverse=True)
    rows = []
    for c in cases:
        by_load = {s.load_percent: s.loss_percent for s in c.loss.steps}
        rows.append((c.size, *(number(by_load.get(load), 2) for load in loads)))
    return ("% of packets lost, from 100 % of line rate down until two trials in a row lose "
            "nothing.\n\n" + table(("size", *(f"{load:g} %" for load in loads)), rows))


def _overload_table(cases: Sequence[NpfCaseResult]) -> str:
    rows = []
    for c in cases:
        o = c.overload
        if o is None:
            continue
        rows.append((c.size, " + ".join(map(str, o.inputs)) + f" → {o.output}",
                     number(o.offered_percent_of_output, 0), number(o.output_pps / 1e6, 3),
                     number(100 * o.output_utilization, 1), f"{o.rate.lost:,}"))
    if not rows:
        return ""
    notes = [f"* **{c.size}**: the output was busy {100 * c.overload.output_utilization:.1f} "
             f"% of its span -- {explain({}, c.overload.counters)}"
             for c in cases if c.overload is not None and c.overload.output_utilization < 0.99]
    text = ("Every input port at 100 % towards one output port (more input than output "
            "capacity): the output's forwarding rate over its busy span.\n\n" +
            table(("size", "ports", "offered % of output", "output Mpps", "output busy %",
                   "lost"), rows))
    if notes:
        text += "\n**Output below line rate** (from the device's counters):\n\n" + \
            "\n".join(notes) + "\n"
    return text


def _by_end(rate: Any) -> str:
    """The share of received frames out by the end of the sending time."""
    by_end = getattr(rate, "received_by_end", None)
    if by_end is None or not rate.received:
        return "–"
    return f"{100 * by_end / rate.received:.1f} %"


UPDATE_METHOD = (
    "Forwarding-table updates, one per call: the update rate is a stream of updates applied "
    "back to back with no traffic, in updates per second (on the chip: the XScale model "
    "runs the route manager and replays every word it writes into the chip's memory, in "
    "simulated time, from the first update's start to the last word visible).  A stream "
    "is pairs that leave the table as it was: delete a loaded prefix and add it back, add "
    "a prefix of the real table the device did not load (generated tables: a generated "
    "one) and delete it, change a prefix's next hop and restore it.  Then the forwarding "
    "rate at the throughput load of the family's smallest size while updates arrive "
    "evenly at 25/50/75/100 % of that rate.  The updates change routes the traffic does "
    "not use: no exercised prefix nor any prefix inside one, so every destination's route "
    "is the same before, during and after, and a frame on a wrong port or with a wrong "
    "header counts as an error (\"errors\": misrouted, damaged, duplicated, reordered) -- "
    "no old-or-new allowance is needed or made.  \"landed\": updates whose writes were "
    "all visible before the trial ended.\n\n")


def _updates_section(result: NpfResult) -> Section:
    rows = []
    for u in result.updates:
        if not u.measured:
            rows.append((f"IPv{u.family}", "–", "–", "–", "–", "–", "–", "–", u.note))
            continue
        for p in u.concurrent:
            r = p.rate
            rows.append((f"IPv{u.family}", f"{p.percent_of_max:g} %",
                         number(p.updates_per_s, 0),
                         "–" if p.updates_landed is None else f"{p.updates_landed:,}",
                         number(r.load_percent, 1), number(r.forwarded_pps / 1e6, 3),
                         f"{r.lost:,}", f"{r.errors:,}",
                         f"max {u.max_updates_per_s:,.0f}/s ({u.updates} updates), "
                         f"{u.traffic_size} B"))
    text = UPDATE_METHOD
    text += table(("family", "of max rate", "updates/s", "landed", "load %",
                   "forwarded Mpps", "lost", "errors", "note"), rows) if rows else "Not run.\n"
    return Section("Forwarding-table updates", text)


def npf_sections(result: NpfResult, out_dir: Path) -> list[Section]:
    """The NPF report's sections (charts written to ``out_dir``)."""
    out_dir = Path(out_dir)
    sections = [_config_section(result), _published_section(result)]
    for traffic in dict.fromkeys(c.traffic for c in result.cases):
        sections.append(_traffic_section(result, traffic, out_dir))
    sections += method.method_sections(result, out_dir)
    sections.append(_updates_section(result))
    return sections


# --------------------------------------------------------------------------- charts
def _sizes_axis(cases: Sequence[NpfCaseResult]) -> list[str]:
    return [c.size for c in cases]


def rate_chart(cases: Sequence[NpfCaseResult], path: Path, title: str) -> Path | None:
    """Per size: forwarded and throughput Gbps against the offered line rate, and the
    throughput in % of line rate against the published 100 %."""
    if not cases:
        return None
    fig = figure(9, 4)
    gbps, percent = fig.subplots(1, 2)
    x = _sizes_axis(cases)
    gbps.bar(x, [c.forwarding.offered_ip_gbps for c in cases], color="#dddddd",
             label="line rate (IP Gbps)")
    gbps.bar(x, [c.forwarding.forwarded_ip_gbps for c in cases], color="#1f77b4", width=0.6,
             label="forwarded at 100 %")
    gbps.plot(x, [_throughput_gbps(c) or 0 for c in cases], "o", color="#ff7f0e",
              label="throughput")
    gbps.set(xlabel="packet size (IP bytes)", ylabel="Gbps (all input ports)",
             title=f"{title}: IP bits per second")
    gbps.legend(fontsize="small")
    percent.bar(x, [_line_percent(c) or 0 for c in cases], color="#ff7f0e",
                label="ours (throughput)")
    percent.axhline(100, color="#2ca02c", linestyle="--",
                    label="published (20 Gbps = 100 %)")
    percent.set(xlabel="packet size (IP bytes)", ylabel="% of line rate", ylim=(0, 110),
                title="Throughput")
    percent.legend(fontsize="small", loc="lower right")
    return save_png(fig, path)


def latency_chart(cases: Sequence[NpfCaseResult], path: Path, title: str) -> Path | None:
    """Average latency (min/max bars) per % of throughput, one line per size, with the
    published average at 100 %."""
    measured = [c for c in cases if any(p.avg_ps is not None for p in c.latency)]
    if not measured:
        return None
    fig = figure()
    ax = fig.subplots()
    for c in measured:
        points = [p for p in c.latency if p.avg_ps is not None]
        x = [p.percent_of_throughput for p in points]
        avg = [p.avg_ps / PS_PER_US for p in points]
        low = [a - p.min_ps / PS_PER_US for a, p in zip(avg, points, strict=True)]
        high = [p.max_ps / PS_PER_US - a for a, p in zip(avg, points, strict=True)]
        ax.errorbar(x, avg, yerr=[low, high], fmt="o-", capsize=3, label=f"{c.size}")
    key = {"IPv4": "latency_v4_avg_us", "IPv6": "latency_v6_avg_us"}.get(title)
    if key:
        ax.axhline(published.npf_figure(key).value or 0, color="#2ca02c", linestyle="--",
                   label="published avg")
    ax.set(xlabel="load (% of throughput)", ylabel="µs (first bit in, last bit out)",
           title=f"{title}: latency (min / avg / max)")
    ax.legend(fontsize="small", ncol=2)
    return save_png(fig, path)


def loss_chart(cases: Sequence[NpfCaseResult], path: Path, title: str) -> Path | None:
    if not cases:
        return None
    fig = figure()
    ax = fig.subplots()
    for c in cases:
        steps = sorted(c.loss.steps, key=lambda s: s.load_percent)
        ax.plot([s.load_percent for s in steps], [s.loss_percent for s in steps], "o-",
                label=c.size)
    ax.set(xlabel="offered load (% of line rate)", ylabel="packets lost (%)",
           title=f"{title}: loss rate")
    ax.legend(fontsize="small", ncol=2)
    return save_png(fig, path)
