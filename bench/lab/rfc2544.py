"""RFC 2544 section 26 on a device under test: throughput, latency, frame loss rate and
back-to-back frames, per frame size, on port pairs (FACTS.md section 5).

Configurations (as in the x86 reports):

* ``2-port``: a duplex port pair, traffic both ways: port 0 -> 1 and 1 -> 0;
* ``4-port``: four ports in a full mesh: every port sends to each of the three others an
  equal share of its load (so each port offers the trial's load in all).

Loads are % of the input ports' line rate at the frame size (RFC 2544's "maximum frame
rate").  Every test is a sequence of trials of ``trial_ps`` simulated time (bursts for
back-to-back) run from a clean state, with ``settle_ps`` after the last frame for frames in
flight to arrive (a frame that has not arrived by then is lost).

* **Throughput (26.1)**: binary search (``search.search_throughput``) for the highest load
  with no frame lost, to ``resolution_percent``.
* **Latency (26.2)**: at the throughput load, ``latency_repeats`` trials (each with its own
  traffic seed); every frame is timed, so min/avg/max are over all of them.  ``avg_ps`` is
  first bit in to last bit out; ``lifo_avg_ps`` is RFC 1242's store-and-forward latency
  (last bit in to first bit out).
* **Frame loss rate (26.3)**: from 100 % down in ``loss_step_percent`` steps until two
  successive trials lose nothing (``search.loss_rate_sweep``).
* **Back-to-back (26.4)**: bursts at line rate (minimum gap); the longest burst with no
  loss, by binary search on the burst length up to ``b2b_max_frames`` per port, repeated
  ``b2b_repeats`` times with different seeds (the RFC asks for 50; the figure is the mean).

Destinations: a device with a route table (``destinations(family, out_port, count, seed)``:
the chip devices and ``reference_devices.routed_router``) is sent to ``routes_per_stream``
of its routes that leave on the wanted port; any other device gets RFC 2544's test network,
198.19.<port>.0/24 for IPv4 and 2001:2:0:<port>::/64 for IPv6 (``benchmark_network_routes``
builds the matching table).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from npkit.bench.lab.device import Device, DeviceProxy, Trial, TrialResult
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.search import (
    LossCurve,
    Step,
    ThroughputResult,
    loss_rate_sweep,
    search_throughput,
    step_of,
)
from npkit.bench.lab.sweep import Progress, Where, run_tasks
from npkit.bench.tester import FixedDestinations, Latency, Sizes, Stream, standard_sizes
from npkit.bench.tester.stream import Destinations

TOPOLOGIES = ("2-port", "4-port")
TESTS = ("throughput", "latency", "frame_loss", "back_to_back")
DestinationsFor = Callable[[int, int], Destinations]  # (out port, family) -> destinations


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Rfc2544Config:
    """Everything that decides an RFC 2544 run (goes into the results with the seed)."""

    preset: str = "rfc2544-10g"
    port_kind: str = "10gbe"
    topology: str = "2-port"
    family: int = 4
    sizes: tuple[int, ...] = ()  # frame bytes with FCS; () = the standard list
    tests: tuple[str, ...] = TESTS
    trial_ps: int = 1_000_000_000  # 1 ms of simulated time per trial
    settle_ps: int = 200_000_000
    lower_percent: float = 1.0
    resolution_percent: float = 1.0
    latency_repeats: int = 20
    loss_step_percent: float = 10.0
    b2b_max_frames: int = 4096
    b2b_resolution_frames: int = 8
    b2b_repeats: int = 1
    routes_per_stream: int = 100
    latency_bin_ps: int = 100_000
    seed: int = 1

    def __post_init__(self) -> None:
        if self.topology not in TOPOLOGIES:
            raise LabConfigError(f"topology {self.topology!r}: use one of {', '.join(TOPOLOGIES)}")
        if self.family not in (4, 6):
            raise LabConfigError(f"family must be 4 or 6, not {self.family!r}")
        unknown = [t for t in self.tests if t not in TESTS]
        if unknown:
            raise LabConfigError(f"unknown RFC 2544 test(s) {', '.join(unknown)}: use "
                                 f"{', '.join(TESTS)}")
        if self.trial_ps <= 0 or self.settle_ps < 0:
            raise LabConfigError("trial_ps must be > 0 and settle_ps >= 0")
        if self.latency_repeats < 1 or self.b2b_repeats < 1:
            raise LabConfigError("latency_repeats and b2b_repeats must be >= 1")
        if not 1 <= self.b2b_resolution_frames <= self.b2b_max_frames:
            raise LabConfigError("need 1 <= b2b_resolution_frames <= b2b_max_frames")
        least = standard_sizes("ethernet", self.family)[0][0]
        small = [s for s in self.sizes if s < least]
        if small:
            raise LabConfigError(f"{small[0]}-byte frames cannot carry IPv{self.family} and the "
                                 f"tester's signature: the smallest frame is {least} bytes")

    @property
    def ports(self) -> tuple[int, ...]:
        return (0, 1) if self.topology == "2-port" else (0, 1, 2, 3)

    def frame_sizes(self) -> tuple[int, ...]:
        """The sizes to test: the given ones, or the standard list of the family."""
        if self.sizes:
            return self.sizes
        return standard_sizes("ethernet", self.family)[0]

    def flows(self) -> tuple[tuple[int, int], ...]:
        """(input port, output port) of every stream."""
        return tuple((i, o) for i in self.ports for o in self.ports if i != o)


def preset(name: str, quick: bool = False, **changes: Any) -> Rfc2544Config:
    """A named configuration; ``quick`` keeps a whole run to minutes."""
    presets = {
        "rfc2544-10g": Rfc2544Config(preset="rfc2544-10g"),
        "rfc2544-1g": Rfc2544Config(preset="rfc2544-1g", port_kind="1gbe"),
        "rfc2544-10g-4port": Rfc2544Config(preset="rfc2544-10g-4port", topology="4-port"),
    }
    if name not in presets:
        raise LabConfigError(f"unknown RFC 2544 preset {name!r}: use one of {', '.join(presets)}")
    config = presets[name]
    if quick:
        config = replace(config, trial_ps=200_000_000, settle_ps=100_000_000,
                         resolution_percent=4.0, latency_repeats=2, b2b_max_frames=1024,
                         b2b_resolution_frames=32, routes_per_stream=32)
    return replace(config, **changes)


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class LatencyResult:
    """Latency at one load over ``repeats`` trials (ps; None when nothing arrived)."""

    load_percent: float
    repeats: int
    measured: int
    lost: int
    min_ps: int | None
    avg_ps: float | None
    max_ps: int | None
    lifo_min_ps: float | None
    lifo_avg_ps: float | None
    lifo_max_ps: float | None
    per_trial_avg_ps: tuple[float | None, ...]
    bin_ps: int
    histogram: tuple[tuple[int, int], ...]  # (bin index, frames), first in to last out


@dataclass(frozen=True)
class BurstStep:
    frames_per_port: int
    sent: int
    lost: int
    passed: bool


@dataclass(frozen=True)
class BackToBackResult:
    """The longest zero-loss burst per port (mean over repeats); ``capped`` when the longest
    burst tried passed (the device absorbs at least that much)."""

    max_frames: int
    resolution_frames: int
    per_repeat: tuple[int, ...]
    mean_frames: float
    capped: bool
    steps: tuple[BurstStep, ...]


@dataclass(frozen=True)
class SizeResult:
    """All tests at one frame size.  Rates are per input port and, ``total_``, for all
    input ports together; ``counters_at_throughput`` / ``counters_above`` are the device's
    counters in the trial that set the throughput and in the lowest trial that lost."""

    frame_bytes: int
    line_rate_fps: float
    throughput: ThroughputResult | None
    throughput_fps: float | None
    total_throughput_fps: float | None
    total_throughput_gbps: float | None
    latency: LatencyResult | None
    frame_loss: LossCurve | None
    back_to_back: BackToBackResult | None
    counters_at_throughput: dict[str, float] = field(default_factory=dict)
    counters_above: dict[str, float] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Rfc2544Result:
    suite: str
    config: Rfc2544Config
    device: dict[str, Any]
    sizes: tuple[SizeResult, ...]


# --------------------------------------------------------------------------- destinations
def benchmark_network_routes(ports: Sequence[int]) -> dict[int, dict[tuple[int, int], int]]:
    """RFC 2544's test network per port: next hop = the port."""
    v4 = {(int(ipaddress.IPv4Address(f"198.19.{p}.0")), 24): p for p in ports}
    v6 = {(int(ipaddress.IPv6Address(f"2001:2:0:{p:x}::")), 64): p for p in ports}
    return {4: v4, 6: v6}


@dataclass(frozen=True)
class BenchmarkNetwork:
    """Destinations inside the test network of the output port (``benchmark_network_routes``)."""

    hosts: int = 32

    def __call__(self, out_port: int, family: int) -> Destinations:
        if family == 4:
            return FixedDestinations.of(*(f"198.19.{out_port}.{h + 2}"
                                          for h in range(self.hosts)))
        return FixedDestinations.of(*(f"2001:2:0:{out_port:x}::{h + 2:x}"
                                      for h in range(self.hosts)))


@dataclass(frozen=True)
class DeviceRoutes:
    """Destinations from the device's own route table (chip devices)."""

    device: Any
    count: int
    seed: int

    def __call__(self, out_port: int, family: int) -> Destinations:
        return self.device.destinations(family, out_port, self.count, self.seed)


def destinations_for(device: Device, config: Rfc2544Config) -> DestinationsFor:
    """The device's routes when it has a route table (a ``tables`` of None says it has
    not, as on an unrouted reference router), else the benchmark network."""
    if callable(getattr(device, "destinations", None)) and \
            getattr(device, "tables", True) is not None:
        return DeviceRoutes(device, config.routes_per_stream, config.seed)
    return BenchmarkNetwork()


# --------------------------------------------------------------------------- trials
@dataclass
class _Recorder(DeviceProxy):
    """Runs trials on the device and keeps each one's counters by load, so a result can
    show the counters behind a figure (the search itself returns only steps)."""

    device: Device
    counters: dict[float, dict[str, float]] = field(default_factory=dict)

    def run(self, trial: Trial) -> TrialResult:
        result = self.device.run(trial)
        self.counters[_trial_load(trial)] = dict(result.counters)
        return result


def _trial_load(trial: Trial) -> float:
    per_port: dict[int, Fraction] = {}
    for s in trial.streams:
        per_port[s.port] = per_port.get(s.port, Fraction(0)) + Fraction(str(s.load_percent))
    return float(max(per_port.values(), default=Fraction(0)))


@dataclass(frozen=True)
class TrialMaker:
    """Builds the trials of one frame size: every flow of the topology at a load."""

    config: Rfc2544Config
    frame_bytes: int
    dests: Mapping[tuple[int, int], Mapping[int, Destinations]]  # (in, out) -> family map

    def streams(self, load_percent: float, seed: int, count: int | None = None
                ) -> tuple[Stream, ...]:
        c = self.config
        flows = c.flows()
        outs = len(c.ports) - 1
        share = Fraction(str(load_percent)) / outs
        streams = []
        for index, (i, o) in enumerate(flows):
            k = index % outs  # this flow's place among its port's flows
            frames = None if count is None else count // outs + (k < count % outs)
            if frames == 0:
                continue
            streams.append(Stream(
                id=i * 16 + o + 1, port=i, destinations=self.dests[(i, o)], family=c.family,
                sizes=Sizes.fixed(self.frame_bytes, "frame"), load_percent=share,
                count=frames, duration_ps=None if count is not None else c.trial_ps,
                seed=seed))
        return tuple(streams)

    def at(self, load_percent: float, seed: int | None = None) -> Trial:
        seed = self.config.seed if seed is None else seed
        return Trial(self.streams(load_percent, seed), f"{self.frame_bytes} B "
                     f"{load_percent:g} %", self.config.settle_ps)

    def burst(self, frames_per_port: int, seed: int) -> Trial:
        return Trial(self.streams(100.0, seed, frames_per_port),
                     f"{self.frame_bytes} B burst {frames_per_port}", self.config.settle_ps)


def check_ports(device: Device, config: Rfc2544Config) -> None:
    """A clear error when the device lacks a port of the topology or its kind differs."""
    ports = device.ports
    missing = [p for p in config.ports if p not in ports]
    if missing:
        raise LabConfigError(f"the {config.topology} configuration needs ports "
                             f"{', '.join(map(str, config.ports))}; device "
                             f"{getattr(device, 'name', '?')} has "
                             f"{', '.join(map(str, sorted(ports)))}")
    wrong = [p for p in config.ports if ports[p].kind != config.port_kind]
    if wrong:
        raise LabConfigError(f"{config.preset} runs on {config.port_kind} ports; device port(s) "
                             f"{', '.join(map(str, wrong))} are {ports[wrong[0]].kind}")


def _make_trials(device: Device, config: Rfc2544Config, frame_bytes: int) -> TrialMaker:
    check_ports(device, config)
    pick = destinations_for(device, config)
    dests = {(i, o): {config.family: pick(o, config.family)} for i, o in config.flows()}
    return TrialMaker(config, frame_bytes, dests)


# --------------------------------------------------------------------------- the tests
def measure_latency(device: Device, trials: TrialMaker, load_percent: float
                    ) -> LatencyResult:
    """RFC 2544 26.2 at ``load_percent``: ``latency_repeats`` trials, seeds seed, seed+1..."""
    c = trials.config
    total = Latency(c.latency_bin_ps)
    averages: list[float | None] = []
    lost = 0
    for k in range(c.latency_repeats):
        report = device.run(trials.at(load_percent, c.seed + k)).report
        total.merge(report.total.latency)
        averages.append(report.total.latency.avg_ps)
        lost += report.total.lost
    return LatencyResult(
        float(load_percent), c.latency_repeats, total.count, lost, total.min_ps, total.avg_ps,
        total.max_ps, total.lifo_min_ps, total.lifo_avg_ps, total.lifo_max_ps,
        tuple(averages), c.latency_bin_ps, tuple(sorted(total.histogram.items())))


def back_to_back(device: Device, trials: TrialMaker) -> BackToBackResult:
    """RFC 2544 26.4: per repeat, the longest burst (frames per port, line rate) without
    loss, found by bisection to ``b2b_resolution_frames`` between 0 and ``b2b_max_frames``."""
    c = trials.config
    steps: list[BurstStep] = []
    longest: list[int] = []
    capped = False

    def passes(frames: int, seed: int) -> bool:
        report = device.run(trials.burst(frames, seed)).report
        ok = report.total.lost == 0
        steps.append(BurstStep(frames, report.total.sent, report.total.lost, ok))
        return ok

    for k in range(c.b2b_repeats):
        seed = c.seed + k
        if passes(c.b2b_max_frames, seed):
            longest.append(c.b2b_max_frames)
            capped = True
            continue
        good, bad = 0, c.b2b_max_frames
        while bad - good > c.b2b_resolution_frames:
            middle = (good + bad) // 2
            if passes(middle, seed):
                good = middle
            else:
                bad = middle
        longest.append(good)
    return BackToBackResult(c.b2b_max_frames, c.b2b_resolution_frames, tuple(longest),
                            sum(longest) / len(longest), capped, tuple(steps))


def run_size(device: Device, config: Rfc2544Config, frame_bytes: int) -> SizeResult:
    """Every configured test at one frame size."""
    recorder = _Recorder(device)
    trials = _make_trials(device, config, frame_bytes)
    model = device.ports[config.ports[0]]
    line_fps = float(model.line_rate_fps(frame_bytes))
    tests = set(config.tests)
    throughput = None
    if tests & {"throughput", "latency"}:
        throughput = search_throughput(recorder, trials.at, config.lower_percent, 100.0,
                                       config.resolution_percent)
    load = None if throughput is None else throughput.throughput_percent
    fps = None if load is None else line_fps * load / 100
    total_fps = None if fps is None else fps * len(config.ports)
    gbps = None if total_fps is None else total_fps * frame_bytes * 8 / 1e9
    latency = None
    note = ""
    if "latency" in tests:
        if load is None:
            note = "no load passed: latency not measured"
        else:
            latency = measure_latency(device, trials, load)
    loss = loss_rate_sweep(recorder, trials.at, config.loss_step_percent) \
        if "frame_loss" in tests else None
    b2b = back_to_back(device, trials) if "back_to_back" in tests else None
    at, above = _explaining_counters(recorder, throughput)
    return SizeResult(frame_bytes, line_fps, throughput if "throughput" in tests else None,
                      fps, total_fps, gbps, latency, loss, b2b, at, above, note)


def _explaining_counters(recorder: _Recorder, throughput: ThroughputResult | None
                         ) -> tuple[dict[str, float], dict[str, float]]:
    if throughput is None:
        return {}, {}
    at = recorder.counters.get(throughput.throughput_percent or -1.0, {})
    failed = [s.load_percent for s in throughput.steps if not s.passed]
    above = recorder.counters.get(min(failed), {}) if failed else {}
    return at, above


@dataclass(frozen=True)
class SizeTask:
    """One frame size of a suite, self-contained for a dask worker."""

    device: Any
    config: Rfc2544Config
    frame_bytes: int


def run_size_task(task: SizeTask) -> SizeResult:
    return run_size(task.device, task.config, task.frame_bytes)


def run_rfc2544(device: Device, config: Rfc2544Config, where: Where | None = None,
                progress: Progress | None = None) -> Rfc2544Result:
    """The whole suite, one task per frame size (serial or on dask)."""
    check_ports(device, config)
    tasks = [SizeTask(device, config, size) for size in config.frame_sizes()]
    sizes = run_tasks(run_size_task, tasks, where or Where(), progress)
    return Rfc2544Result("rfc2544", config, device.describe(), tuple(sizes))


__all__ = [
    "BackToBackResult", "BurstStep", "LatencyResult", "Rfc2544Config", "Rfc2544Result",
    "SizeResult", "Step", "BenchmarkNetwork", "back_to_back", "measure_latency", "preset",
    "run_rfc2544", "run_size", "step_of", "benchmark_network_routes",
]
