"""Thread-timeline export: Chrome / Perfetto trace-event JSON.

The core records, per ME context, spans of time in one state (executing, ready, sleeping
...).  Here each ME becomes a *process* ("ME 0x01") and each context a *thread* ("ctx 3");
each span is a complete event (``"ph": "X"``) with ``ts`` and ``dur`` in microseconds of
simulated time, as the trace-event format specifies.  Open the file in
https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Span:
    """One context in one state from cycle ``start`` to cycle ``end`` (exclusive)."""

    me: int  # ME index (0..n-1)
    ctx: int
    state: str
    start: int
    end: int


def spans_from_core(raw: Iterable[Sequence[Any]]) -> list[Span]:
    """Spans from the core's ``take_trace()`` tuples ``(me, ctx, state, start, end)``."""
    return [Span(int(me), int(ctx), str(state), int(start), int(end))
            for me, ctx, state, start, end in raw]


def trace_events(spans: Iterable[Span], clock_hz: float,
                 me_name: Callable[[int], str] = lambda me: f"ME {me}") -> list[dict[str, Any]]:
    """Trace-event dicts: metadata naming processes/threads, then one "X" event per span."""
    us_per_cycle = 1e6 / clock_hz
    events: list[dict[str, Any]] = []
    named: set[tuple[int, int]] = set()
    for span in spans:
        if (span.me, -1) not in named:
            named.add((span.me, -1))
            events.append({"name": "process_name", "ph": "M", "pid": span.me, "tid": 0,
                           "args": {"name": me_name(span.me)}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": span.me,
                           "tid": 0, "args": {"sort_index": span.me}})
        if (span.me, span.ctx) not in named:
            named.add((span.me, span.ctx))
            events.append({"name": "thread_name", "ph": "M", "pid": span.me, "tid": span.ctx,
                           "args": {"name": f"ctx {span.ctx}"}})
        events.append({
            "name": span.state, "cat": "ctx", "ph": "X", "pid": span.me, "tid": span.ctx,
            "ts": span.start * us_per_cycle,
            "dur": max(0, span.end - span.start) * us_per_cycle,
            "args": {"start_cycle": span.start, "end_cycle": span.end},
        })
    return events


def write_trace(path: str | Path, spans: Iterable[Span], clock_hz: float,
                me_name: Callable[[int], str] = lambda me: f"ME {me}") -> int:
    """Write the trace JSON object format; returns the number of span events written."""
    events = trace_events(spans, clock_hz, me_name)
    document = {"traceEvents": events, "displayTimeUnit": "ns",
                "otherData": {"clock_hz": clock_hz, "time_unit": "simulated microseconds"}}
    Path(path).write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
    return sum(1 for e in events if e["ph"] == "X")
