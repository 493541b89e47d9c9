"""Throughput search and loss-rate sweeps: the rate-finding procedures shared by the NPF and
RFC 2544 suites.

* **Throughput** (RFC 2544 §26.1, NPF IP Forwarding): the highest offered load, in % of line
  rate, at which the device loses no packet.  ``search_throughput`` first tries the upper
  bound (a device that keeps up needs one trial), then bisects between the highest load
  seen to pass and the lowest seen to fail until they are within ``resolution``.  The
  answer is always a load that was *tried and passed*; if even the lower bound loses, the
  throughput is None (not "the lower bound").
* **Loss rate** (RFC 2544 §26.3): the loss at 100 % of line rate, then at loads decreasing
  by ``step`` (at most 10 %), until ``stop_after`` consecutive trials lose nothing.

Every trial taken is returned (load, sent, received, lost, ...), so a report can show how the
answer was reached.  Each trial is built by the caller (``load -> Trial``) and run on a
``Device``; the procedures never look inside the device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from npkit.bench.lab.device import Device, Trial, TrialResult

TrialAt = Callable[[float], Trial]  # offered load (% of line rate) -> the trial to run


@dataclass(frozen=True)
class Step:
    """One trial of a search or sweep, in the order it was run.  ``lost`` counts packets the
    device should have forwarded and did not; ``errors`` everything else a perfect device
    shows as zero (duplicates, reordered, misrouted, corrupted, foreign, unknown)."""

    load_percent: float
    sent: int
    received: int
    lost: int
    errors: int
    passed: bool

    @property
    def loss_percent(self) -> float:
        return 100.0 * self.lost / self.sent if self.sent else 0.0


@dataclass(frozen=True)
class ThroughputResult:
    """The search and its answer: ``throughput_percent`` is the highest load that passed
    (None when none did), ``steps`` every trial in the order run."""

    throughput_percent: float | None
    lower_percent: float
    upper_percent: float
    resolution_percent: float
    allowed_loss: int
    steps: tuple[Step, ...]

    def passing_step(self) -> Step | None:
        """The trial that established the throughput."""
        for step in self.steps:
            if step.passed and step.load_percent == self.throughput_percent:
                return step
        return None


@dataclass(frozen=True)
class LossCurve:
    """A loss-rate sweep: one step per load, from the highest load down."""

    step_percent: float
    stop_after: int
    steps: tuple[Step, ...]


def step_of(load_percent: float, result: TrialResult, allowed_loss: int = 0) -> Step:
    """A trial's result reduced to what the searches judge and report."""
    total = result.report.total
    errors = result.report.errors - total.lost
    return Step(float(load_percent), total.sent, total.received, total.lost, errors,
                total.lost <= allowed_loss)


def run_step(device: Device, trial_at: TrialAt, load_percent: float,
             allowed_loss: int = 0) -> Step:
    return step_of(load_percent, device.run(trial_at(load_percent)), allowed_loss)


def _check_bounds(lower: float, upper: float, resolution: float) -> None:
    if not 0 < lower <= upper <= 100:
        raise ValueError(f"search bounds must satisfy 0 < lower <= upper <= 100 (% of line "
                         f"rate), got lower={lower}, upper={upper}")
    if resolution <= 0:
        raise ValueError(f"resolution must be > 0 (% of line rate), got {resolution}")


def search_throughput(device: Device, trial_at: TrialAt, lower: float = 1.0,
                      upper: float = 100.0, resolution: float = 0.5,
                      allowed_loss: int = 0) -> ThroughputResult:
    """Binary search for the highest zero-loss load in [lower, upper] (% of line rate).

    Invariant: ``passed`` is a load that was run and passed (or None), ``failed`` one that
    was run and failed (or None); the search stops when they are within ``resolution``.
    A device that passes below X % and fails above it gives a throughput in
    [X - resolution, X]."""
    _check_bounds(lower, upper, resolution)
    steps: list[Step] = []

    def trial(load: float) -> bool:
        steps.append(run_step(device, trial_at, load, allowed_loss))
        return steps[-1].passed

    passed: float | None = None
    failed: float | None = None
    if trial(upper):
        passed = upper
    else:
        failed = upper
        if lower == upper or not trial(lower):
            failed = lower
        else:
            passed = lower
    while passed is not None and failed is not None and failed - passed > resolution:
        middle = (passed + failed) / 2
        if trial(middle):
            passed = middle
        else:
            failed = middle
    return ThroughputResult(passed, float(lower), float(upper), float(resolution),
                            allowed_loss, tuple(steps))


def loss_loads(start: float = 100.0, step: float = 10.0, floor: float = 0.0) -> list[float]:
    """The loads of a loss-rate sweep, ``start`` then down by ``step`` while above ``floor``
    (computed from the start each time, so there is no accumulated rounding)."""
    if step <= 0:
        raise ValueError(f"the loss-rate step must be > 0 (% of line rate), got {step}")
    loads, k = [], 0
    while (load := start - k * step) > floor + 1e-9:
        loads.append(round(load, 9))
        k += 1
    return loads


def loss_rate_sweep(device: Device, trial_at: TrialAt, step: float = 10.0,
                    stop_after: int = 2, start: float = 100.0,
                    floor: float = 0.0) -> LossCurve:
    """RFC 2544 §26.3: loss from ``start`` down by ``step`` until ``stop_after`` consecutive
    zero-loss trials (or the loads run out above ``floor``)."""
    if stop_after < 1:
        raise ValueError(f"stop_after must be >= 1, got {stop_after}")
    steps: list[Step] = []
    clean = 0
    for load in loss_loads(start, step, floor):
        steps.append(run_step(device, trial_at, load))
        clean = clean + 1 if steps[-1].lost == 0 else 0
        if clean >= stop_after:
            break
    return LossCurve(float(step), stop_after, tuple(steps))
