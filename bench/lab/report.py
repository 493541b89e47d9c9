"""The lab's reports: results as JSON, and a Markdown (+ HTML) report with matplotlib charts
in the style of a full disclosure report.

    files = write_report(result, Path("out"), command="npkit bench rfc2544 --quick")
    # out/results.json  out/report.md  out/report.html  out/*.png

* ``results.json`` is ``dataclasses.asdict`` of the suite's result (configuration, seed,
  device description, every trial's figures), sorted keys, no wall-clock time: the same run
  gives the same bytes.  ``load_result`` reads it back into the result dataclasses, so a
  report can be redrawn from a JSON file alone.
* ``report.md`` / ``report.html``: the configuration, a table per test, the charts (PNG
  files next to the report, named in the Markdown), the published figures beside ours where
  they exist (``npkit.bench.lab.published``), and, for every size where the device did not
  reach line rate, what its counters say about why.

A suite's report is a list of ``Section``s; the RFC 2544 sections are here, the NPF ones
come from ``npkit.bench.lab.npf_report`` (``npf_sections(result, out_dir) -> list[Section]``).
The parts both are built from (``Section``, tables, number formats, charts, ``explain``) are
in ``npkit.bench.lab.report_parts``; ``Section``, ``table`` and ``explain`` are re-exported
here.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.bench.lab import npf, npf_report, published
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
from npkit.bench.lab.rfc2544 import Rfc2544Result, SizeResult

NPF_SUITES = ("npf", "npf-ip-forwarding")


@dataclass(frozen=True)
class ReportFiles:
    json: Path
    markdown: Path
    html: Path | None
    charts: tuple[Path, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------- JSON
def results_json(result: Any) -> str:
    """The result as deterministic JSON (sorted keys, no wall-clock data)."""
    return json.dumps(dataclasses.asdict(result), sort_keys=True, indent=1,
                      allow_nan=False) + "\n"


def from_plain(kind: Any, data: Any) -> Any:
    """Rebuild a value of type ``kind`` (dataclasses, tuples, dicts, unions of those and
    plain values) from its JSON form."""
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        fields = {f.name: from_plain(hints[f.name], data[f.name])
                  for f in dataclasses.fields(kind) if f.init and f.name in data}
        return kind(**fields)
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        for option in args:
            if option is not type(None):
                try:
                    return from_plain(option, data)
                except (TypeError, ValueError, KeyError):
                    continue
        raise ValueError(f"cannot read {data!r} as {kind}")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_plain(args[0], v) for v in data)
        return tuple(from_plain(a, v) for a, v in zip(args, data, strict=True))
    if origin is dict:
        key_type, value_type = args
        return {from_plain(key_type, k): from_plain(value_type, v) for k, v in data.items()}
    if kind is float and isinstance(data, int | float):
        return data  # counters typed float often hold ints: keep them as written
    if kind is int and isinstance(data, int):
        return data
    if kind in (str, bool) and isinstance(data, kind):
        return data
    if kind is Any:
        return data
    raise ValueError(f"cannot read {data!r} as {kind}")


def load_result(path: Path) -> Any:
    """A results.json back as the suite's result dataclass."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    suite = data.get("suite")
    if suite == "rfc2544":
        return from_plain(Rfc2544Result, data)
    if suite in NPF_SUITES:
        return from_plain(npf.NpfResult, data)
    raise ValueError(f"{path}: not a lab results file (suite {suite!r})")


# --------------------------------------------------------------------------- RFC 2544
def _config_section(result: Rfc2544Result, command: str) -> Section:
    c = result.config
    rows = [(k, f"`{v}`") for k, v in sorted(dataclasses.asdict(c).items())]
    device = [(k, f"`{v}`") for k, v in sorted(result.device.items())]
    text = ""
    if command:
        text += f"Command: `{command}`\n\n"
    text += (f"{c.topology} {c.port_kind} configuration ({', '.join(map(str, c.ports))}; "
             f"flows {', '.join(f'{i}→{o}' for i, o in c.flows())}), IPv{c.family}, "
             f"trials of {c.trial_ps / PS_PER_US:g} µs simulated time + "
             f"{c.settle_ps / PS_PER_US:g} µs settle, seed {c.seed}.\n\n")
    text += "### Test configuration\n\n" + table(("setting", "value"), rows)
    text += "\n### Device under test\n\n" + table(("setting", "value"), device)
    return Section("Configuration", text)


def _throughput_section(result: Rfc2544Result, out_dir: Path) -> Section:
    rows = []
    for s in result.sizes:
        t = s.throughput
        pct = None if t is None else t.throughput_percent
        rows.append((s.frame_bytes, number(s.line_rate_fps / 1e6, 3), number(pct, 2),
                     number(None if s.throughput_fps is None else s.throughput_fps / 1e6, 3),
                     number(None if s.total_throughput_fps is None
                          else s.total_throughput_fps / 1e6, 3),
                     number(s.total_throughput_gbps, 2),
                     "–" if t is None else len(t.steps)))
    text = ("Highest offered load with no frame lost (RFC 2544 26.1, binary search to "
            f"{result.config.resolution_percent:g} % of line rate).  Mpps per input port and "
            "for all input ports; Gbps of frame bytes (FCS included, no preamble/gap).\n\n")
    text += table(("frame B", "line rate Mpps/port", "throughput %", "Mpps/port",
                   "Mpps total", "Gbps total", "trials"), rows)
    chart = throughput_chart(result, out_dir / "rfc2544_throughput.png")
    charts = (chart,) if chart else ()
    if chart:
        text += "\n" + image_link(chart, "throughput per frame size")
    notes = [f"* **{s.frame_bytes} B**: {explain(s.counters_at_throughput, s.counters_above)}"
             for s in result.sizes if s.throughput is not None
             and (s.throughput.throughput_percent or 0) < 100]
    if notes:
        text += "\n**Why not line rate** (from the device's counters):\n\n" + \
            "\n".join(notes) + "\n"
    return Section("Throughput", text, charts)


def _latency_section(result: Rfc2544Result, out_dir: Path) -> Section | None:
    measured = [s for s in result.sizes if s.latency is not None]
    if not measured and not any(s.note for s in result.sizes):
        return None
    rows = []
    for s in result.sizes:
        lat = s.latency
        if lat is None:
            rows.append((s.frame_bytes, "–", "–", "–", "–", "–", "–", s.note or "–"))
            continue
        rows.append((s.frame_bytes, number(lat.load_percent, 2), microseconds(lat.min_ps),
                     microseconds(lat.avg_ps), microseconds(lat.max_ps),
                     microseconds(lat.lifo_avg_ps),
                     f"{lat.measured:,}", lat.lost))
    text = ("At the throughput load (RFC 2544 26.2), every frame of "
            f"{result.config.latency_repeats} trial(s) timed: first bit in to last bit out "
            "(min/avg/max, µs) and RFC 1242 store-and-forward (last bit in to first bit "
            "out, avg).\n\n")
    text += table(("frame B", "load %", "min µs", "avg µs", "max µs", "S&F avg µs",
                   "frames", "lost"), rows)
    chart = latency_chart(result, out_dir / "rfc2544_latency.png")
    charts = (chart,) if chart else ()
    if chart:
        text += "\n" + image_link(chart, "latency per frame size")
    return Section("Latency", text, charts)


def _loss_section(result: Rfc2544Result, out_dir: Path) -> Section | None:
    curves = [s for s in result.sizes if s.frame_loss is not None]
    if not curves:
        return None
    loads = sorted({st.load_percent for s in curves for st in s.frame_loss.steps},
                   reverse=True)
    rows = []
    for s in curves:
        by_load = {st.load_percent: st.loss_percent for st in s.frame_loss.steps}
        rows.append((s.frame_bytes, *(number(by_load.get(load), 2) for load in loads)))
    text = ("Frame loss rate (RFC 2544 26.3): % of frames lost, from 100 % of line rate down "
            f"in {result.config.loss_step_percent:g} % steps until two trials in a row lose "
            "nothing.\n\n")
    text += table(("frame B", *(f"{load:g} %" for load in loads)), rows)
    chart = loss_chart(result, out_dir / "rfc2544_loss.png")
    charts = (chart,) if chart else ()
    if chart:
        text += "\n" + image_link(chart, "frame loss rate per offered load")
    return Section("Frame loss rate", text, charts)


def _b2b_section(result: Rfc2544Result) -> Section | None:
    rows = []
    for s in result.sizes:
        b = s.back_to_back
        if b is None:
            continue
        shown = f"≥ {b.max_frames:,}" if b.capped else number(b.mean_frames, 1)
        rows.append((s.frame_bytes, shown, ", ".join(map(str, b.per_repeat)), len(b.steps)))
    if not rows:
        return None
    text = ("Back-to-back frames (RFC 2544 26.4): the longest burst per input port at line "
            f"rate (minimum gap) with no loss, to {result.config.b2b_resolution_frames} "
            "frames; mean over the repeats.\n\n")
    text += table(("frame B", "burst frames/port", "per repeat", "trials"), rows)
    return Section("Back-to-back frames", text)


def _published_section(result: Rfc2544Result) -> Section | None:
    """Published RFC 2544 figures (x86 reports, FACTS.md section 3) beside ours, when the
    published data has them."""
    ours = {s.frame_bytes: s for s in result.sizes}
    rows = []
    for row in published.rfc2544_rows():
        rows.append((row.what, row.value, _ours_at(ours.get(row.frame_bytes)), row.source))
    if not rows:
        return None
    ports = len(result.config.ports)
    text = (f"Published RFC 2544 figures of other systems beside ours (the simulated IXP2800, "
            f"{ports} × {result.config.port_kind}, all input ports together).  The x86 "
            "figures are whole-box rates of their own port counts, so compare the shape "
            "(where line rate is reached), not only the numbers.\n\n")
    text += table(("figure", "published", "ours", "source"), rows)
    return Section("Published figures", text)


def _ours_at(size: SizeResult | None) -> str:
    if size is None:
        return "not measured at this size"
    if size.total_throughput_fps is None or size.throughput is None:
        return "–"
    return (f"{size.total_throughput_fps / 1e6:.2f} Mpps "
            f"({size.throughput.throughput_percent:g} % of line rate)")


def rfc2544_sections(result: Rfc2544Result, out_dir: Path, command: str = "") -> list[Section]:
    sections = [_config_section(result, command), _throughput_section(result, out_dir)]
    for extra in (_latency_section(result, out_dir), _loss_section(result, out_dir),
                  _b2b_section(result), _published_section(result)):
        if extra is not None:
            sections.append(extra)
    return sections


# --------------------------------------------------------------------------- charts
def throughput_chart(result: Rfc2544Result, path: Path) -> Path | None:
    """Mpps and Gbps per frame size, with the line rate."""
    sizes = [s for s in result.sizes if s.throughput is not None]
    if not sizes:
        return None
    fig = figure(9, 4)
    pps, gbps = fig.subplots(1, 2)
    x = [str(s.frame_bytes) for s in sizes]
    ports = len(result.config.ports)
    line_mpps = [s.line_rate_fps * ports / 1e6 for s in sizes]
    ours = [(s.total_throughput_fps or 0) / 1e6 for s in sizes]
    pps.bar(x, line_mpps, color="#dddddd", label="line rate")
    pps.bar(x, ours, color="#1f77b4", width=0.5, label="throughput")
    pps.set(xlabel="frame bytes", ylabel="Mpps (all input ports)", title="Frames per second")
    pps.legend()
    line_gbps = [v * s.frame_bytes * 8 / 1e3 for v, s in zip(line_mpps, sizes, strict=True)]
    gbps.bar(x, line_gbps, color="#dddddd", label="line rate")
    gbps.bar(x, [s.total_throughput_gbps or 0 for s in sizes], color="#ff7f0e", width=0.5,
             label="throughput")
    gbps.set(xlabel="frame bytes", ylabel="Gbps (all input ports)", title="Bits per second")
    gbps.legend()
    return save_png(fig, path)


def latency_chart(result: Rfc2544Result, path: Path) -> Path | None:
    sizes = [s for s in result.sizes if s.latency is not None and s.latency.avg_ps is not None]
    if not sizes:
        return None
    fig = figure()
    ax = fig.subplots()
    x = [s.frame_bytes for s in sizes]
    avg = [s.latency.avg_ps / PS_PER_US for s in sizes]
    low = [a - s.latency.min_ps / PS_PER_US for a, s in zip(avg, sizes, strict=True)]
    high = [s.latency.max_ps / PS_PER_US - a for a, s in zip(avg, sizes, strict=True)]
    ax.errorbar(x, avg, yerr=[low, high], fmt="o-", capsize=4, label="first in, last out")
    lifo = [s.latency.lifo_avg_ps / PS_PER_US for s in sizes]
    ax.plot(x, lifo, "s--", label="store and forward (avg)")
    ax.set(xlabel="frame bytes", ylabel="µs", title="Latency at the throughput load "
           "(min / avg / max)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(v) for v in x])
    ax.legend()
    return save_png(fig, path)


def loss_chart(result: Rfc2544Result, path: Path) -> Path | None:
    curves = [s for s in result.sizes if s.frame_loss is not None]
    if not curves:
        return None
    fig = figure()
    ax = fig.subplots()
    for s in curves:
        steps = sorted(s.frame_loss.steps, key=lambda st: st.load_percent)
        ax.plot([st.load_percent for st in steps], [st.loss_percent for st in steps], "o-",
                label=f"{s.frame_bytes} B")
    ax.set(xlabel="offered load (% of line rate)", ylabel="frames lost (%)",
           title="Frame loss rate")
    ax.legend()
    return save_png(fig, path)


# --------------------------------------------------------------------------- documents
def _sections(result: Any, out_dir: Path, command: str) -> tuple[str, list[Section]]:
    suite = getattr(result, "suite", None)
    if suite == "rfc2544":
        return "RFC 2544 benchmark", rfc2544_sections(result, out_dir, command)
    if suite in NPF_SUITES:
        return "NPF IP Forwarding benchmark", npf_report.npf_sections(result, out_dir)
    raise ValueError(f"no report for results of suite {suite!r}")


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    body = "\n".join(f"## {s.title}\n\n{s.markdown}" for s in sections)
    return f"# {title}\n\n{body}"


def render_html(title: str, markdown_text: str) -> str | None:
    """HTML from the Markdown (the ``markdown`` package); None when it is not installed."""
    try:
        import markdown
    except ImportError:
        return None
    body = markdown.markdown(markdown_text, extensions=["tables"])
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;}"
             "table{border-collapse:collapse;}td,th{border:1px solid #bbb;padding:2px 6px;"
             "text-align:right;}img{max-width:100%;}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{style}</style></head><body>\n{body}\n</body></html>\n")


def write_report(result: Any, out_dir: Path, command: str = "") -> ReportFiles:
    """results.json, report.md, report.html and the charts in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "results.json"
    json_path.write_text(results_json(result), encoding="utf-8")
    title, sections = _sections(result, out_dir, command)
    if command and getattr(result, "suite", None) != "rfc2544":
        sections = [Section("Command", f"`{command}`\n"), *sections]
    text = render_markdown(title, sections)
    md_path = out_dir / "report.md"
    md_path.write_text(text, encoding="utf-8")
    html = render_html(title, text)
    html_path = None
    if html is not None:
        html_path = out_dir / "report.html"
        html_path.write_text(html, encoding="utf-8")
    charts = tuple(c for s in sections for c in s.charts)
    return ReportFiles(json_path, md_path, html_path, charts)


__all__ = ["ReportFiles", "Section", "explain", "from_plain", "load_result", "render_html",
           "render_markdown", "results_json", "rfc2544_sections", "table", "write_report"]

