"""The parts every lab report is built from: a ``Section``, Markdown tables and chart links,
number formats, matplotlib figures saved as PNG, and ``explain`` (what a device's counters
say about a load it did not carry).

The suites' reports are made of these: the RFC 2544 sections (``report.py``) and the NPF
sections (``npf_report.py``).  ``report.write_report`` assembles either into a document.
This module imports no suite, so both report modules can share it without importing each
other.

    text = table(("frame B", "Mpps"), [(64, number(14.88, 3))])
    fig = figure(9, 4)  # ... draw on fig.subplots() ...
    text += image_link(save_png(fig, out_dir / "chart.png"), "what the chart shows")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PS_PER_US = 1_000_000
MISSING = "–"  # a figure that was not measured


@dataclass(frozen=True)
class Section:
    """A part of a report: a heading, Markdown text, and the chart files it shows."""

    title: str
    markdown: str
    charts: tuple[Path, ...] = ()


# --------------------------------------------------------------------------- Markdown
def number(value: float | None, digits: int = 2) -> str:
    """``value`` with thousands separators and ``digits`` decimals; "–" for None."""
    return MISSING if value is None else f"{value:,.{digits}f}"


def microseconds(ps: float | None) -> str:
    """Picoseconds as µs with two decimals; "–" for None."""
    return MISSING if ps is None else f"{ps / PS_PER_US:.2f}"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (cells are shown with ``str``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def image_link(path: Path, alt: str) -> str:
    """A Markdown image line for a chart written next to the report (linked by file name)."""
    return f"![{alt}]({path.name})\n"


# --------------------------------------------------------------------------- charts
def figure(width: float = 7.0, height: float = 4.0) -> Any:
    """A matplotlib ``Figure`` of ``width`` x ``height`` inches at 100 dpi."""
    # No pyplot: no global state, no display.  Imported here, not at the top, because
    # matplotlib takes a second to import and only drawing a chart needs it.
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100)


def save_png(fig: Any, path: Path) -> Path:
    """Lay out ``fig`` and write it to ``path`` as PNG (no timestamp: same run, same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


# --------------------------------------------------------------------------- explanations
# what a loss counter means, by name prefix (the chip devices' and reference devices')
LOSS_MEANINGS: tuple[tuple[str, str], ...] = (
    ("rx.rx_dropped_rbuf_full", "the port's receive buffer (RBUF) was full: receive did not "
     "move frames to DRAM as fast as they arrived"),
    ("rx.rx_no_buffer", "receive found no free packet buffer: buffers were not handed back "
     "(forwarded and transmitted) as fast as frames arrived"),
    ("rx.rx_too_long", "frames longer than a buffer"),
    ("drop.", "dropped by the program"),
    ("exception.", "sent to the slow path"),
    ("engine.dropped", "the forwarding engine's queue was full"),
    ("output.dropped", "an output queue was full"),
    ("in_flight_at_end", "still inside the device when the trial ended"),
    ("loss.unconnected", "a chip of the system sent it to a port whose transmit side leads "
     "to no line"),
)
LOSS_PREFIXES = ("drop", "rx", "exception", "engine", "output", "in_flight_at_end", "fault",
                 "loss")
SATURATED = 0.9


def _meaning(counter: str) -> str:
    for prefix, meaning in LOSS_MEANINGS:
        if counter.startswith(prefix):
            return f" ({meaning})"
    return ""


def explain(at: dict[str, float], above: dict[str, float]) -> str:
    """What the counters say about a size that did not reach line rate: where the frames
    of the lowest losing trial went, and the busiest units in the trial that passed."""
    parts = []
    losses = {k: v for k, v in above.items()
              if v and k.split(".")[0] in LOSS_PREFIXES and not k.endswith("busy_fraction")}
    if losses:
        named = ", ".join(f"{k} = {v:,.0f}{_meaning(k)}" for k, v in sorted(losses.items()))
        parts.append(f"in the lowest trial that lost frames: {named}")
    busy = sorted(((v, k) for k, v in at.items() if k.endswith("busy_fraction")
                   and ".fwd." not in f".{k}"), reverse=True)
    if busy:
        top = ", ".join(f"{k.removesuffix('.busy_fraction')} {v:.0%}" for v, k in busy[:4])
        parts.append(f"busiest at the throughput load: {top}")
        saturated = [k.removesuffix(".busy_fraction") for v, k in busy if v >= SATURATED]
        if saturated:
            parts.append(f"saturated (≥ {SATURATED:.0%} busy): {', '.join(saturated)}")
    if "fwd.busy_fraction" in at:
        parts.append(f"forwarding MEs {at['fwd.busy_fraction']:.0%} busy, "
                     f"{at.get('fwd.stall_fraction', 0.0):.0%} stalled")
    per_frame = at.get("fwd.instructions_per_frame")
    if per_frame:
        parts.append(f"{per_frame:.0f} forwarding-ME instructions per frame")
    return "; ".join(parts) if parts else "no device counters recorded"


__all__ = ["LOSS_MEANINGS", "LOSS_PREFIXES", "MISSING", "PS_PER_US", "SATURATED", "Section",
           "explain", "figure", "image_link", "microseconds", "number", "save_png", "table"]
