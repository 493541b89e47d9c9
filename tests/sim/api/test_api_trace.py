"""Trace-event JSON: loads as JSON and follows the Chrome trace-event format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npkit.sim import Span, write_trace
from npkit.sim.trace import spans_from_core

CLOCK = 1.4e9


def _spans() -> list[Span]:
    return spans_from_core([
        (0, 0, "executing", 0, 1400),
        (0, 1, "sleep", 0, 2800),
        (0, 0, "sleep", 1400, 4200),
        (8, 3, "ready", 700, 1400),
    ])


def test_trace_file_follows_the_trace_event_format(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    count = write_trace(path, _spans(), CLOCK, lambda me: f"ME {me:#04x}")
    assert count == 4
    doc = json.loads(path.read_text())
    assert isinstance(doc["traceEvents"], list)
    for event in doc["traceEvents"]:
        assert event["ph"] in ("X", "M")
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["name"], str)
        if event["ph"] == "X":  # complete events carry ts and dur in microseconds
            assert isinstance(event["ts"], int | float) and event["dur"] >= 0
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    first = complete[0]
    # 1400 cycles at 1.4 GHz = 1 microsecond
    assert (first["pid"], first["tid"], first["name"]) == (0, 0, "executing")
    assert first["ts"] == pytest.approx(0.0) and first["dur"] == pytest.approx(1.0)
    last = complete[-1]
    assert last["ts"] == pytest.approx(0.5) and last["dur"] == pytest.approx(0.5)


def test_one_process_per_me_one_thread_per_context(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    write_trace(path, _spans(), CLOCK, lambda me: f"ME {me}")
    events = json.loads(path.read_text())["traceEvents"]
    processes = {e["pid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    assert processes == {0: "ME 0", 8: "ME 8"}
    assert threads == {(0, 0): "ctx 0", (0, 1): "ctx 1", (8, 3): "ctx 3"}


def test_empty_trace_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    assert write_trace(path, [], CLOCK) == 0
    assert json.loads(path.read_text())["traceEvents"] == []
