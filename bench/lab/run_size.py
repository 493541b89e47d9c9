"""How many trials an NPF run ran and how many frames they sent, from its results.json.

    python -m npkit.bench.lab.run_size DIR/results.json

prints, per part (the cases, the update tests, the convergence searches), the trials and
the frames sent: what a run's host time is spent on (docs/performance.md).  The count
follows ``npf.run_case``'s reuse of trials: the 100 % trial of a case runs once (the
forwarding rate; the search's, the line-rate latency's and the loss curve's first step
reuse it); the latency points at % of the throughput, the overload trial, every other
search and loss step, every update trial and every convergence step run on their own.  A
latency point's frames sent are its frames timed plus those lost."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PartSize:
    """Trials run and frames sent by one part of a run."""

    trials: int = 0
    frames: int = 0

    def __add__(self, other: PartSize) -> PartSize:
        return PartSize(self.trials + other.trials, self.frames + other.frames)


def _steps(steps: list[dict[str, Any]], reused_load: float | None = None) -> PartSize:
    """Search or loss steps; the own (repeat 0) step at ``reused_load`` was run before."""
    run = [s for s in steps if not (s["load_percent"] == reused_load and s["repeat"] == 0)]
    return PartSize(len(run), sum(s["sent"] for s in run))


def _latency(points: list[dict[str, Any]], reused_load: float | None = None) -> PartSize:
    run = [p for p in points if p["load_percent"] != reused_load]
    return PartSize(len(run), sum(p["count"] + p["lost"] for p in run))


def case_size(case: dict[str, Any]) -> PartSize:
    """The trials of one case (``npf.run_case``)."""
    full = case["forwarding"]
    size = PartSize(1, full["sent"])
    size += _steps(case["throughput"]["steps"], 100.0)
    size += _latency(list(case["latency"]))
    size += _latency(list(case["latency_line"]), 100.0)
    size += _steps(case["loss"]["steps"], 100.0)
    if case.get("overload"):
        size += PartSize(1, case["overload"]["rate"]["sent"])
    return size


def run_size(results: dict[str, Any]) -> dict[str, PartSize]:
    """Per part ("cases", "updates", "convergence") and "all": trials and frames sent."""
    cases = sum((case_size(c) for c in results["cases"]), PartSize())
    updates = PartSize()
    for family in results["updates"]:
        for point in family.get("concurrent", ()):
            updates += PartSize(1, point["rate"]["sent"])
    convergence = PartSize()
    for found in results.get("convergence", ()):
        for point in found["convergence"]["points"]:
            convergence += _steps(point["search"]["steps"])
    return {"cases": cases, "updates": updates, "convergence": convergence,
            "all": cases + updates + convergence}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="an NPF run's results.json")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    print(f"trial length {results['config']['trial_ps'] / 1e9:g} ms")
    for part, size in run_size(results).items():
        print(f"{part:<12} {size.trials:6,} trials {size.frames:12,} frames sent")


if __name__ == "__main__":
    main()
