"""Throughput search and loss-rate sweeps: the rate-finding procedures shared by the NPF and
RFC 2544 suites.

* **Throughput** (RFC 2544 §26.1, NPF IP Forwarding): the highest offered load, in % of line
  rate, at which the device loses no packet.  ``search_throughput`` first tries the upper
  bound (a device that keeps up needs one trial), then bisects between the highest load
  seen to pass and the lowest seen to fail until they are within ``resolution``.  The
  answer is always a load that was *tried and passed*; if even the lower bound loses, the
  throughput is None (not "the lower bound").
* **Confirmation**: with ``repeats`` N > 1 a load passes only when N trials at it -- the
  first, then ``repeat_at(load, k)`` for k = 1 .. N-1 (other seeds, other stream phases)
  -- all lose nothing; the first loss stops the confirmation and moves the search down.
  A device whose loss near its edge is a matter of luck (a burst that one phase meets and
  another misses) then needs N lucky trials in a row to be reported above its edge.
* **Convergence against trial length** (``throughput_by_length``): the same search at
  several trial lengths; a queue that absorbs a few microseconds of excess passes short
  trials above the sustained rate, so the answer falls as trials grow until they are long
  enough.  ``Convergence.settled`` says whether the last two lengths agree to within the
  search's resolution.
* **Loss rate** (RFC 2544 §26.3): the loss at 100 % of line rate, then at loads decreasing
  by ``step`` (at most 10 %), until ``stop_after`` consecutive trials lose nothing.

Every trial taken is returned (load, sent, received, lost, ...), so a report can show how the
answer was reached.  Each trial is built by the caller (``load -> Trial``) and run on a
``Device``; the procedures never look inside the device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from npkit.bench.lab.device import Device, Trial, TrialResult

TrialAt = Callable[[float], Trial]  # offered load (% of line rate) -> the trial to run
RepeatAt = Callable[[float, int], Trial]  # (load, k >= 1) -> the k-th confirmation trial


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
    repeat: int = 0  # 0: the search's trial at this load; k > 0: its k-th confirmation

    @property
    def loss_percent(self) -> float:
        return 100.0 * self.lost / self.sent if self.sent else 0.0


@dataclass(frozen=True)
class ThroughputResult:
    """The search and its answer: ``throughput_percent`` is the highest load that passed
    all ``repeats`` trials (None when none did), ``steps`` every trial in the order run,
    confirmations included (``Step.repeat`` > 0)."""

    throughput_percent: float | None
    lower_percent: float
    upper_percent: float
    resolution_percent: float
    allowed_loss: int
    steps: tuple[Step, ...]
    repeats: int = 1

    def passing_step(self) -> Step | None:
        """The first trial at the throughput load (its confirmations follow it)."""
        for step in self.steps:
            if step.passed and step.load_percent == self.throughput_percent:
                return step
        return None

    def trials_at(self, load_percent: float) -> tuple[Step, ...]:
        """Every trial run at ``load_percent``: the search's and its confirmations."""
        return tuple(s for s in self.steps if s.load_percent == load_percent)

    def candidates(self) -> tuple[float, ...]:
        """The loads the search tried, in order (a load's confirmations not repeated)."""
        return tuple(s.load_percent for s in self.steps if s.repeat == 0)


@dataclass(frozen=True)
class LossCurve:
    """A loss-rate sweep: one step per load, from the highest load down."""

    step_percent: float
    stop_after: int
    steps: tuple[Step, ...]


def step_of(load_percent: float, result: TrialResult, allowed_loss: int = 0,
            repeat: int = 0) -> Step:
    """A trial's result reduced to what the searches judge and report."""
    total = result.report.total
    errors = result.report.errors - total.lost
    return Step(float(load_percent), total.sent, total.received, total.lost, errors,
                total.lost <= allowed_loss, repeat)


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
                      allowed_loss: int = 0, repeats: int = 1,
                      repeat_at: RepeatAt | None = None) -> ThroughputResult:
    """Binary search for the highest zero-loss load in [lower, upper] (% of line rate),
    each candidate confirmed by ``repeats`` trials (``repeat_at(load, k)`` builds the k-th
    confirmation, k >= 1; needed when ``repeats`` > 1).

    Invariant: ``passed`` is a load whose every trial was run and passed (or None),
    ``failed`` one where a trial failed (or None); the search stops when they are within
    ``resolution``.  A device that passes below X % and fails above it gives a throughput
    in [X - resolution, X]."""
    _check_bounds(lower, upper, resolution)
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if repeats > 1 and repeat_at is None:
        raise ValueError("confirming a load needs repeat_at(load, k) to build its trials")
    steps: list[Step] = []

    def trial(load: float) -> bool:
        steps.append(run_step(device, trial_at, load, allowed_loss))
        for k in range(1, repeats):
            if not steps[-1].passed:
                return False
            result = device.run(repeat_at(load, k))  # type: ignore[misc]
            steps.append(step_of(load, result, allowed_loss, k))
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
                            allowed_loss, tuple(steps), repeats)


@dataclass(frozen=True)
class LengthPoint:
    """The throughput search at one trial length."""

    trial_ps: int
    search: ThroughputResult


@dataclass(frozen=True)
class Convergence:
    """Throughput against trial length (shortest first).  ``settled``: the last two lengths
    found throughputs within ``resolution_percent`` of each other (both None counts as
    agreeing) -- the answer stopped changing by the longest length."""

    points: tuple[LengthPoint, ...]
    resolution_percent: float

    @property
    def settled(self) -> bool:
        if len(self.points) < 2:
            return False
        a, b = (p.search.throughput_percent for p in self.points[-2:])
        return self._same(a, b)

    def throughput_at(self, trial_ps: int) -> float | None:
        for point in self.points:
            if point.trial_ps == trial_ps:
                return point.search.throughput_percent
        raise KeyError(f"no search with {trial_ps} ps trials")

    def stable_at(self, trial_ps: int) -> bool | None:
        """Whether the throughput at ``trial_ps`` matches (within the resolution) the next
        shorter length's and every longer length's: the answer had stopped changing by
        then.  None when ``trial_ps`` is not among the lengths or is the shortest."""
        lengths = [p.trial_ps for p in self.points]
        if trial_ps not in lengths or lengths.index(trial_ps) == 0:
            return None
        index = lengths.index(trial_ps)
        here = self.points[index].search.throughput_percent
        others = [p.search.throughput_percent for p in self.points[index - 1:]
                  if p.trial_ps != trial_ps]
        return all(self._same(here, value) for value in others)

    def _same(self, a: float | None, b: float | None) -> bool:
        if a is None or b is None:
            return a is None and b is None
        return abs(a - b) <= self.resolution_percent

    def settled_from(self) -> int | None:
        """The shortest trial length from which every longer one found the same throughput
        (within the resolution), or None when even the last two differ."""
        if not self.settled:
            return None
        last = self.points[-1].search.throughput_percent
        start = self.points[-1].trial_ps
        for point in reversed(self.points[:-1]):
            if not self._same(point.search.throughput_percent, last):
                break
            start = point.trial_ps
        return start


def throughput_by_length(device: Device, trials_for: Callable[[int], tuple[TrialAt, RepeatAt]],
                         lengths_ps: Sequence[int], lower: float = 1.0, upper: float = 100.0,
                         resolution: float = 0.5, repeats: int = 1) -> Convergence:
    """The confirmed throughput search at each trial length of ``lengths_ps`` (sorted
    shortest first); ``trials_for(length_ps)`` gives the search's trial builders for that
    length."""
    if not lengths_ps or any(length <= 0 for length in lengths_ps):
        raise ValueError(f"trial lengths must be > 0 ps, got {list(lengths_ps)}")
    points = []
    for length in sorted(set(lengths_ps)):
        trial_at, repeat_at = trials_for(length)
        points.append(LengthPoint(int(length), search_throughput(
            device, trial_at, lower, upper, resolution, 0, repeats, repeat_at)))
    return Convergence(tuple(points), float(resolution))


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
