"""The stall/utilisation view: where each ME's cycles went and how busy each unit was.

From the core's utilisation probe (``sim/core/frame_log.hpp``; on with any frame log):

* per ME, its cycles since the probe was attached split into **executing** (an instruction
  issued), **stalled** (command FIFO full, taken-branch penalty) and **idle** (no context
  ready), idle split by the unit whose completion ended it: when an idle ME wakes, the
  context that woke names the signal it got, and the signal names the unit of the command
  that raised it (``media`` for a receive autopush, ``signal`` for a signal from another
  thread or ME).  Idle cycles no wake-up has ended yet (the run stopped first) are
  ``idle (not yet woken)``;
* per unit, per bucket of ``bucket_cycles``, the commands issued and the largest backlog a
  command found (cycles until the unit is free, the command's own occupancy included).

``counter_events`` makes Perfetto counter tracks of the unit series; ``table`` and ``chart``
the summary (docs/debugging.md, "The stall/utilisation view").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNITS_PID = 10_001


@dataclass
class MeShare:
    """One ME's cycles since the probe was attached."""

    me: int
    label: str
    executing: int
    stalled: int
    idle_waiting: dict[str, int] = field(default_factory=dict)  # unit -> idle cycles
    idle_open: int = 0

    @property
    def cycles(self) -> int:
        return self.executing + self.stalled + sum(self.idle_waiting.values()) + self.idle_open

    def shares(self) -> dict[str, float]:
        total = self.cycles or 1
        out = {"executing": self.executing / total, "stalled": self.stalled / total}
        for unit, cycles in self.idle_waiting.items():
            out[f"idle: {unit}"] = cycles / total
        out["idle (not yet woken)"] = self.idle_open / total
        return out


def me_shares(raw: dict[str, Any], baseline: dict[int, tuple[int, int, int]],
              units: list[str], me_label: Callable[[int], str] = lambda m: f"ME {m}",
              ) -> list[MeShare]:
    """Per loaded ME, from ``FrameLog.utilisation_raw()`` and the counters at attach time."""
    out = []
    for m in raw["mes"]:
        me = int(m["me"])
        busy0, stalled0, idle0 = baseline.get(me, (0, 0, 0))
        idle = int(m["idle"]) - idle0
        waiting = {units[u]: int(c) for u, c in enumerate(m["idle_waiting"]) if c}
        out.append(MeShare(me, me_label(me), int(m["busy"]) - busy0,
                           int(m["stalled"]) - stalled0, waiting,
                           max(0, idle - sum(waiting.values()))))
    return out


def table(shares: list[MeShare]) -> str:
    """A plain-text table: one row per ME, columns in % of its cycles (a column no ME
    uses is left out)."""
    columns = ["executing", "stalled"]
    for s in shares:
        for unit in s.idle_waiting:
            if f"idle: {unit}" not in columns:
                columns.append(f"idle: {unit}")
    columns.append("idle (not yet woken)")
    columns = [c for c in columns if any(s.shares().get(c, 0.0) for s in shares)]
    head = ["ME", "cycles", *(c.replace("idle: ", "idle ").replace(" (not yet woken)", " open")
                              for c in columns)]
    rows = [head]
    for s in shares:
        pct = s.shares()
        rows.append([s.label, f"{s.cycles:,}",
                     *(f"{100 * pct.get(c, 0.0):.1f}" for c in columns)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n(% of each ME's cycles; idle X: idle until a completion " \
        "from unit X woke it, open: idle when the run stopped)"


def unit_summary(raw: dict[str, Any], units: list[str]) -> dict[str, dict[str, int]]:
    """Per unit with commands: commands issued and the largest backlog seen (cycles)."""
    out = {}
    for u, (commands, backlog) in enumerate(raw["units"]):
        total = int(commands.sum())
        if total:
            out[units[u]] = {"commands": total, "max_backlog_cycles": int(backlog.max())}
    return out


def counter_events(raw: dict[str, Any], units: list[str], bucket_cycles: int,
                   clock_hz: float) -> list[dict[str, Any]]:
    """Perfetto counter tracks (trace-event ``"ph": "C"``): per unit with commands, the
    commands per bucket and the largest backlog per bucket; a point where a value changes."""
    us = 1e6 / clock_hz
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": UNITS_PID, "tid": 0,
         "args": {"name": f"units (per {bucket_cycles} cycles)"}},
        {"name": "process_sort_index", "ph": "M", "pid": UNITS_PID, "tid": 0,
         "args": {"sort_index": -1}},
    ]
    for u, (commands, backlog) in enumerate(raw["units"]):
        if not int(commands.sum()):
            continue
        for name, series in ((f"{units[u]} commands", commands),
                             (f"{units[u]} backlog (cycles)", backlog)):
            last = None
            for k, value in enumerate(series.tolist()):
                if value != last:
                    events.append({"name": name, "ph": "C", "pid": UNITS_PID,
                                   "ts": round(k * bucket_cycles * us, 6),
                                   "args": {"value": value}})
                    last = value
    return events


def chart(shares: list[MeShare], path: str | Path, title: str = "ME cycles") -> Path:
    """A stacked horizontal bar per ME (matplotlib, Agg backend) written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns: list[str] = ["executing", "stalled"]
    for s in shares:
        columns += [f"idle: {u}" for u in s.idle_waiting if f"idle: {u}" not in columns]
    columns.append("idle (not yet woken)")
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(shares) + 1.5))
    left = [0.0] * len(shares)
    labels = [s.label for s in shares]
    fixed = {"executing": "tab:green", "stalled": "tab:red", "idle (not yet woken)": "0.85"}
    palette = plt.get_cmap("tab20").colors
    units = [c for c in columns if c not in fixed]
    for column in columns:
        values = [100 * s.shares().get(column, 0.0) for s in shares]
        if not any(values):
            continue
        color = fixed.get(column) or palette[(2 * units.index(column)) % len(palette)]
        ax.barh(labels, values, left=left, label=column, color=color)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_xlabel("% of the ME's cycles")
    ax.set_xlim(0, 100)
    ax.invert_yaxis()
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=3, fontsize="small")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
