"""The report of ``npkit bench compare`` (``compare.CompareResult``): results.json, report.md
and matplotlib charts, from the lab's report parts (``report_parts``, ``report``).

    files = write_compare(result, Path("docs/lab/compare"), command="npkit bench compare")

Sections: the run (command, commit, host at start and end), throughput by frame size (the
chip, the host on one core and on all cores, line rate, published), why the chip is below
line rate, the published figures with their documents, the flow-affinity experiment, and
what the figures do not show.  ``results.json`` holds wall-clock-dependent figures (the
native rates, the host's load): unlike the simulated suites, a rerun gives other bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from npkit.bench.lab.affinity import MODES, AffinityPoint
from npkit.bench.lab.compare import PORTS, ChipPoint, CompareResult, PublishedRow
from npkit.bench.lab.native_rates import HostInfo, HostRate
from npkit.bench.lab.report import render_html, render_markdown, results_json
from npkit.bench.lab.report_parts import MISSING, Section, figure, image_link, number, save_png
from npkit.bench.lab.report_parts import table as md_table

TITLE = "x86 vs NPU: l2fwd and the IPv4 router, natively and on the simulated IXP2800"
LABELS = {"rss": "RSS alone", "fd-ep": "Flow Director, EP (programmed)",
          "fd-atr": "Flow Director, ATR (learned)"}


@dataclass(frozen=True)
class CompareFiles:
    json: Path
    markdown: Path
    html: Path | None
    charts: tuple[Path, ...]


def _host(info: HostInfo | None) -> str:
    if info is None:
        return MISSING
    load = " ".join(f"{v:.2f}" for v in info.load_average)
    return (f"{info.cpu_model}, {info.cpus} CPUs; load average {load}; two GIL-free threads "
            f"ran {info.thread_control:.2f} x one")


def _run_section(result: CompareResult, command: str) -> Section:
    c = result.config
    lines = [
        f"Command: `{command or 'npkit bench compare'}`" + (f" at commit `{result.commit}`"
                                                             if result.commit else ""),
        "",
        f"* host at the start: {_host(result.host_start)}",
        f"* host at the end: {_host(result.host_end)}",
        "",
        "The thread control is bench/native_workers.py's: the speed-up of two threads of "
        "GIL-free C work (sha256) over one, measured now; about 2 when the box gives two free "
        "cores, about 1 when other work holds one.  Native rates on all cores are only as "
        "good as that figure; they are not a claim of the issue's 1.8 x (that is "
        "bench/native_workers.py on an idle box).",
        "",
        f"Chip: the simulated IXP2800 with 4 x 10GbE (2 forwarding MEs a port), RFC 2544 "
        f"throughput on l2fwd's port pairs 0 <-> 1, 2 <-> 3 (every port offers the load to "
        f"its pair), trials of {c.trial_ps / 1e6:g} µs simulated time + "
        f"{c.settle_ps / 1e6:g} µs settle, binary search to {c.resolution_percent:g} % of "
        f"line rate, one trial per load (not confirmed by repeats), seed {c.seed}; the router "
        f"with {c.v4_routes:,} generated IPv4 routes, {c.routes_per_stream} destinations per "
        f"stream." + (" **Quick run: short trials and a coarse search; upper bounds.**"
                      if c.quick else ""),
        "",
        f"Native: the same MBL programs JIT-compiled on this host, {c.native_packets:,} "
        f"frames (fewer for large frames, bench/lab/native_rates.py) laid out in memory, "
        f"median of {c.native_runs} runs on 1 worker and on {c.host_workers()} workers "
        f"(RSS over {c.host_workers()} queues).  What is timed is the program only: no NIC, "
        "no PCIe, no driver, no wire.  A native figure is an upper bound for a DPDK-style "
        "core running this code, not a measured NIC forwarding rate.",
    ]
    return Section("The run", "\n".join(lines) + "\n")


def _native(result: CompareResult, app: str, size: int) -> HostRate | None:
    for r in result.native:
        if r.app == app and r.frame_bytes == size:
            return r
    return None


def _chip(result: CompareResult, app: str, size: int) -> ChipPoint | None:
    for p in result.chip:
        if p.app == app and p.frame_bytes == size:
            return p
    return None


def _line_mpps(size: int) -> float:
    from npkit.bench.tester import port_model

    return float(port_model("10gbe").line_rate_fps(size)) * len(PORTS) / 1e6


def _throughput_section(result: CompareResult, out_dir: Path) -> Section:
    workers = result.config.host_workers()
    text = ["Mpps over all four input ports (chip) or forwarded by the host (native: the "
            "median run, with the slowest and fastest in brackets); % of the 4 x 10GbE line "
            "rate at the frame size (native: capped at 100).", ""]
    charts = []
    for app in result.config.apps:
        rows = []
        for size in result.config.sizes:
            line = _line_mpps(size)
            chip = _chip(result, app, size)
            host = _native(result, app, size)
            chip_cells = [MISSING, MISSING] if chip is None or chip.total_mpps is None else \
                [number(chip.total_mpps), number(chip.throughput_percent, 1)]
            host_cells = [MISSING] * 5 if host is None else [
                _with_range(host.mpps_one, host.range_one),
                number(min(100.0, 100 * host.mpps_one / line), 1),
                _with_range(host.mpps_all, host.range_all),
                number(min(100.0, 100 * host.mpps_all / line), 1),
                f"{host.ratio_median:.2f}"]
            rows.append([size, number(line), *chip_cells, *host_cells])
        text.append(f"**{app}**\n")
        text.append(md_table(("frame B", "line Mpps", "chip Mpps", "chip %",
                              "host 1 core Mpps", "%", f"host {workers} cores Mpps", "%",
                              f"{workers} / 1 (paired median)"), rows))
        chart = _throughput_chart(result, app, out_dir / f"compare_{app}.png")
        if chart is not None:
            charts.append(chart)
            text.append(image_link(chart, f"{app}: Mpps by frame size"))
    return Section("Throughput by frame size", "\n".join(text) + "\n", tuple(charts))


def _with_range(median: float, spread: tuple[float, float]) -> str:
    """"12.34 (10.1–13.0)": the median and the slowest and fastest run."""
    low, high = spread
    return f"{number(median)} ({number(low, 1)}–{number(high, 1)})" if high else number(median)


def _throughput_chart(result: CompareResult, app: str, path: Path) -> Path | None:
    sizes = list(result.config.sizes)
    if not sizes:
        return None
    fig = figure(8, 4.5)
    ax = fig.subplots()
    x = range(len(sizes))
    ax.plot(x, [_line_mpps(s) for s in sizes], "k--", label="4 x 10GbE line rate")
    chip = [_chip(result, app, s) for s in sizes]
    if any(c is not None and c.total_mpps is not None for c in chip):
        ax.plot(x, [c.total_mpps if c is not None else None for c in chip], "o-",
                label="simulated IXP2800 (RFC 2544)")
    host = [_native(result, app, s) for s in sizes]
    if any(h is not None for h in host):
        ax.plot(x, [h.mpps_one if h else None for h in host], "s-", label="host, 1 core")
        ax.plot(x, [h.mpps_all if h else None for h in host], "^-",
                label=f"host, {result.config.host_workers()} cores (RSS)")
    for row in result.published:
        if row.app != app or row.frame_bytes not in sizes or "Mpps" not in row.value:
            continue
        values = _mpps_values(row.value)
        if not values:
            continue
        where = sizes.index(row.frame_bytes)
        ax.errorbar([where], [sum(values) / len(values)],
                    yerr=[[(max(values) - min(values)) / 2]] * 2 if len(values) > 1 else None,
                    fmt="D", capsize=5, label=f"published: {row.what} ({row.value})")
    ax.set_xticks(list(x), [str(s) for s in sizes])
    ax.set(xlabel="frame bytes (with FCS)", ylabel="Mpps (log scale)", yscale="log",
           title=f"{app}: frames per second")
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.legend(fontsize=7)
    return save_png(fig, path)


def _mpps_values(text: str) -> list[float]:
    """The numbers of a published "22.3–32.5 Mpps" / "over 80 Mpps" / "10.24 Mpps"."""
    words = text.replace("–", " ").replace("-", " ").split()
    out = []
    for w in words:
        try:
            out.append(float(w))
        except ValueError:
            continue
    return out


def _why_section(result: CompareResult) -> Section | None:
    rows = [(p.app, p.frame_bytes, number(p.throughput_percent, 1), p.why_not_line)
            for p in result.chip if p.why_not_line]
    if not rows:
        return None
    return Section("Why the chip is below line rate",
                   "From the chip's counters: what the lost frames became in the lowest "
                   "trial that lost (summed over the ports; rx_dropped_rbuf_full: the "
                   "receive buffer was full, receive did not move frames to DRAM in time; "
                   "rx_no_buffer: no free packet buffer), and the busiest units in the trial "
                   "that set the throughput.\n\n"
                   + md_table(("app", "frame B", "chip %", "what the counters say"), rows))


def _published_section(rows: Sequence[PublishedRow]) -> Section:
    body = md_table(("app", "figure", "published", "frame B", "document", "table / figure",
                     "text found"),
                    [(r.app, r.what, r.value, r.frame_bytes or MISSING, r.document, r.table,
                      f"\"{r.quote}\"" if r.quote else MISSING) for r in rows])
    note = ("\nEvery figure is copied from /work/shared/FACTS.md §3; the document and the "
            "place in it come from bench/lab/published.py (X86_FIGURES), found with the "
            "project's search tool and quoted from the text found.  Where the document or "
            "its table was not found, the row says so; nothing is guessed.  The x86 figures "
            "are whole boxes with their own NICs, drivers and port counts: compare where "
            "each reaches line rate, not only the numbers.  There is no Linux bridge in this "
            "run; bench/linux_bridge.py measures one on this box (veth pairs in network "
            "namespaces, not NICs) beside l2fwd natively: docs/lab/compare/linux_bridge.md.  "
            "Figures "
            "FACTS.md does not give (per-core rates of those boxes, l2fwd Mpps by size, the "
            "NPF system on 10GbE) are not shown.\n")
    return Section("Published figures", body + note)


def _affinity_section(points: Sequence[AffinityPoint], out_dir: Path) -> Section | None:
    if not points:
        return None
    rows = []
    for p in points:
        chip = MISSING if not p.chip_packets else \
            f"{100 * p.chip_on_owner / p.chip_packets:.1f} % of {p.chip_packets:,} " \
            f"({'same' if p.chip_same_as_native else 'DIFFERENT'} queues as native)"
        rows.append((f"{p.flows:,}", p.cores, LABELS.get(p.mode, p.mode), p.phase,
                     f"{p.packets:,}", f"{100 * p.share:.2f} %", f"{p.filters:,}",
                     f"{p.refused:,}", f"{p.fd_hits:,} / {p.fd_misses:,}", chip))
    text = (
        "**Owner**: the core whose application thread consumes the flow (opened or "
        "accepted the connection and transmits its packets), chosen by the application at "
        "random, not by any hash.  A packet received on another core's queue has to be "
        "handed over between cores.  One queue per core.  **Share** = received packets that "
        "reached the owner's queue.  Phase *open*: each flow's owner sends one packet, then "
        "its packets arrive; phase *moved*: a share of the flows changes owner, the new "
        "owner sends one packet, then every flow's packets arrive again.  EP filters are "
        "programmed once when the flow opens; ATR learns (or updates in place) the receive "
        "filter from every transmitted packet.  A filter whose bucket is full (4 slots; "
        "8,192 filters at most) is refused and its flow stays on RSS.  The steering program "
        "is microblocks/flow_director.mbl in every mode (RSS = no filters); *chip* runs the "
        "first received packets of phase *open* on the simulated IXP2800 with the same "
        "tables (bench/lab/affinity.py).\n\n"
        + md_table(("flows", "cores", "mode", "phase", "packets", "share on owner",
                    "filters", "refused", "FD hits / misses", "chip"), rows))
    chart = _affinity_chart(points, out_dir / "compare_affinity.png")
    charts = (chart,) if chart is not None else ()
    if chart is not None:
        text += "\n" + image_link(chart, "share of packets on the owner's queue")
    return Section("Flow affinity: RSS alone vs Flow Director", text, charts)


def _affinity_chart(points: Sequence[AffinityPoint], path: Path) -> Path | None:
    groups = sorted({(p.flows, p.phase) for p in points},
                    key=lambda g: (g[0], g[1] != "open"))
    if not groups:
        return None
    fig = figure(8, 4)
    ax = fig.subplots()
    width = 0.8 / len(MODES)
    for k, mode in enumerate(MODES):
        shares = []
        for flows, phase in groups:
            found = [p for p in points if (p.flows, p.phase, p.mode) == (flows, phase, mode)]
            shares.append(100 * found[0].share if found else 0)
        ax.bar([g + k * width for g in range(len(groups))], shares, width,
               label=LABELS[mode])
    ax.set_xticks([g + width for g in range(len(groups))],
                  [f"{flows:,} flows\n{phase}" for flows, phase in groups])
    ax.set(ylabel="% of packets on the owner's queue", ylim=(0, 105),
           title="Flow affinity (native; the chip gives the same queues)")
    ax.legend(fontsize=8)
    return save_png(fig, path)


def _limits_section() -> Section:
    return Section("What these figures do not show", (
        "* Native rates are the program's, memory to memory: a real x86 box adds the NIC, "
        "PCIe and the driver's descriptor work, which DPDK's figures include.\n"
        "* The chip's figures are simulated time on a model (docs/sim-core.md); its 4 x "
        "10GbE platform gives 2 forwarding MEs a port, and at large frames its DRAM "
        "channels are the limit (see the section above).\n"
        "* One chip trial per load, no confirmation by repeated trials (the NPF suite's "
        "method); a lucky trial near the edge can pass slightly above the sustained rate.\n"
        "* Native multi-core figures on a shared box follow the thread control, not the "
        "program: read them with the host lines of \"The run\".\n"))


def compare_sections(result: CompareResult, out_dir: Path, command: str = "") -> list[Section]:
    sections = [_run_section(result, command)]
    if result.chip or result.native:
        sections.append(_throughput_section(result, out_dir))
    why = _why_section(result)
    if why is not None:
        sections.append(why)
    sections.append(_published_section(result.published))
    flows = _affinity_section(result.affinity, out_dir)
    if flows is not None:
        sections.append(flows)
    sections.append(_limits_section())
    return sections


def write_compare(result: CompareResult, out_dir: Path, command: str = "") -> CompareFiles:
    """results.json, report.md, report.html (when markdown is installed) and the charts."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "results.json"
    json_path.write_text(results_json(result), encoding="utf-8")
    sections = compare_sections(result, out_dir, command)
    text = render_markdown(TITLE, sections)
    md_path = out_dir / "report.md"
    md_path.write_text(text, encoding="utf-8")
    html = render_html(TITLE, text)
    html_path = None
    if html is not None:
        html_path = out_dir / "report.html"
        html_path.write_text(html, encoding="utf-8")
    return CompareFiles(json_path, md_path, html_path,
                        tuple(c for s in sections for c in s.charts))
