"""bench/native_workers.py: the CPU-time figures from worker timings, and a short run."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.bench import native_workers
from npkit.bench.native_workers import Trial, cpu_figures
from npkit.compiler.mbl.workers import WorkerTiming

REPO = Path(__file__).resolve().parents[2]


def _trial(*workers: tuple[float, float]) -> Trial:
    """Workers as (start, cpu) in seconds, 100 packets each."""
    return Trial(1.0, [WorkerTiming(100, start, start + cpu, cpu) for start, cpu in workers])


def test_cpu_figures_by_hand():
    one = [_trial((0.0, 1.0)), _trial((0.0, 1.2)), _trial((0.0, 1.1))]  # median 1.1
    many = [_trial((0.0, 0.6), (0.001, 0.5)), _trial((0.0, 0.55), (0.002, 0.55)),
            _trial((0.0, 0.5), (0.003, 0.7))]
    inflation, speedup, imbalance, skew = cpu_figures(one, many)
    assert inflation == pytest.approx(1.1 / 1.1)  # totals 1.1, 1.1, 1.2: median 1.1
    assert speedup == pytest.approx(1.1 / 0.6)  # busiest 0.6, 0.55, 0.7: median 0.6
    assert imbalance == pytest.approx(0.6 * 2 / 1.1)  # 1.0909, 1.0, 1.1667: median 1.0909
    assert skew == pytest.approx(0.002)


def test_a_short_run_prints_the_verdict(capsys):
    table = REPO / "examples" / "router" / "routes.txt"
    assert native_workers.main(["--packets", "3000", "--runs", "1", "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert "same verdicts on 1 and 2 workers: True" in out
    assert "spaces shared by the 2 workers: local, sram" in out
    assert "VERDICT:" in out and "work inflation" in out and "alternating between two" in out
    assert "SCHED_FIFO" not in out  # only with --realtime
