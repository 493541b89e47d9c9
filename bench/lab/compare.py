"""The x86-vs-NPU comparison (issue 15, item 4): ``npkit bench compare``.

For l2fwd (examples/l2fwd) and the IPv4 router (examples/router/router.mbl), by Ethernet
frame size (64..1518 bytes with FCS):

* **on the simulated IXP2800** with four 10GbE ports: RFC 2544 throughput (26.1, the
  binary search of ``search.search_throughput``: the highest load with no frame lost, to
  ``resolution_percent``) on l2fwd's port pairs, 0 <-> 1 and 2 <-> 3, both ways at once:
  each port offers the load to its pair, as in the x86 reports' port-pair tests (FACTS.md
  §5).  The router's traffic goes to routes of its table that leave on the pair port
  (``devices.RoutedTables.destinations``), l2fwd's to RFC 2544's test network;
* **natively** (``native_rates``): the same programs JIT-compiled on this host, frames laid
  out in memory, on one worker (one core) and on every host core with RSS; the rate the
  program forwards, not a NIC's (no wire, no driver), as % of the same four 10GbE ports;
* **published** (``published_rows``): the seed documents' figures as FACTS.md §3 gives
  them, each with its document and the place in it (table, figure) as far as they were
  found (``published.X86_FIGURES``: quoted, or "not found" figure by figure); a figure
  FACTS.md does not give is not shown;
* **flow affinity** (``affinity``): RSS alone vs Flow Director (EP programmed, ATR learned)
  with many flows, natively and on the chip for a sample.

The host is recorded at the start and the end (CPU model, cores, load average, the thread
control of bench/native_workers.py): native figures depend on it, and on a shared box the
multi-core ones are noisy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from npkit.bench.lab import affinity, native_rates
from npkit.bench.lab.device import Device, Trial
from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.l2fwd_device import L2fwdChipDevice, l2fwd_out_port
from npkit.bench.lab.published import X86_FIGURES
from npkit.bench.lab.rfc2544 import BenchmarkNetwork
from npkit.bench.lab.search import ThroughputResult, search_throughput
from npkit.bench.tester import Sizes, Stream, port_model
from npkit.bench.tester.stream import Destinations

APPS = ("l2fwd", "router")
SIZES = (64, 128, 256, 512, 1024, 1280, 1518)
PORTS = (0, 1, 2, 3)
PORT_KIND = "10gbe"
Progress = Callable[[str], None]


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class CompareConfig:
    """Everything that decides a comparison run (in the results with the seed)."""

    apps: tuple[str, ...] = APPS
    sizes: tuple[int, ...] = SIZES
    trial_ps: int = 1_000_000_000  # 1 ms of simulated time per chip trial
    settle_ps: int = 200_000_000
    resolution_percent: float = 1.0
    routes_per_stream: int = 100
    v4_routes: int = 2_000
    native_packets: int = 200_000
    native_runs: int = 9
    workers: int = 0  # native workers on all cores: 0 = the host's CPU count
    flows: tuple[int, ...] = (10_000, 100_000)
    affinity_cores: int = 4
    packets_per_flow: int = 4
    moved_fraction: float = 0.25
    chip_sample: int = 2_000  # received packets of the affinity run also run on the chip
    parts: tuple[str, ...] = ("chip", "native", "affinity")
    seed: int = 1
    quick: bool = False

    def __post_init__(self) -> None:
        unknown = [a for a in self.apps if a not in APPS]
        if unknown or not self.apps:
            raise LabConfigError(f"apps {', '.join(unknown) or '(none)'}: use "
                                 f"{', '.join(APPS)}")
        if any(s < 64 or s > 1518 for s in self.sizes) or not self.sizes:
            raise LabConfigError("frame sizes are 64..1518 bytes (FCS included)")
        if self.trial_ps <= 0 or self.native_packets < 1 or self.native_runs < 1:
            raise LabConfigError("trial, native packets and runs must be positive")
        if self.affinity_cores < 1 or any(f < 1 for f in self.flows):
            raise LabConfigError("flows and cores must be at least 1")
        bad = [p for p in self.parts if p not in ("chip", "native", "affinity")]
        if bad:
            raise LabConfigError(f"parts {', '.join(bad)}: use chip, native, affinity")

    def host_workers(self) -> int:
        return self.workers or os.cpu_count() or 1


def preset(quick: bool = False, **changes: Any) -> CompareConfig:
    """The default comparison; ``quick``: 200 µs chip trials to 4 %, fewer native packets
    and runs, 10k flows only -- a few minutes on two cores."""
    config = CompareConfig()
    if quick:
        config = replace(config, trial_ps=200_000_000, settle_ps=100_000_000,
                         resolution_percent=4.0, routes_per_stream=32, native_packets=50_000,
                         native_runs=5, flows=(10_000,), chip_sample=500, quick=True)
    return replace(config, **changes)


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ChipPoint:
    """RFC 2544 throughput of one program at one frame size on the simulated chip."""

    app: str
    frame_bytes: int
    line_rate_fps: float  # per port
    throughput_percent: float | None
    total_mpps: float | None  # all four input ports
    total_gbps: float | None  # frame bytes with FCS
    trials: int
    why_not_line: str = ""


@dataclass(frozen=True)
class PublishedRow:
    """A published figure beside ours: as FACTS.md writes it, with its document, the place
    in it (``table``: a table, figure or other place, or why it is not known) and the words
    found that carry it (``quote``)."""

    app: str
    what: str
    value: str
    frame_bytes: int | None
    document: str
    table: str
    quote: str = ""


@dataclass(frozen=True)
class CompareResult:
    suite: str
    config: CompareConfig
    host_start: native_rates.HostInfo | None
    host_end: native_rates.HostInfo | None
    chip: tuple[ChipPoint, ...]
    chip_devices: dict[str, dict[str, Any]]
    native: tuple[native_rates.HostRate, ...]
    affinity: tuple[affinity.AffinityPoint, ...]
    published: tuple[PublishedRow, ...]
    commit: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


def published_rows() -> tuple[PublishedRow, ...]:
    """FACTS.md §3's x86 and DPDK figures with their sources (nothing derived; a ratio stays
    a ratio)."""
    return tuple(PublishedRow(f.app, f.what, f.value, f.frame_bytes,
                              f"{f.facts}; document: {f.source.document}", f.source.location,
                              f.source.quote)
                 for f in X86_FIGURES)


# --------------------------------------------------------------------------- the chip
@dataclass(frozen=True)
class PairTrials:
    """Trials of one frame size on l2fwd's port pairs: port p offers ``load`` % of its line
    rate to p ^ 1, every port at once."""

    config: CompareConfig
    frame_bytes: int
    dests: dict[int, Destinations]  # output port -> its destinations

    def at(self, load_percent: float) -> Trial:
        c = self.config
        streams = tuple(Stream(
            id=i * 16 + o + 1, port=i, destinations={4: self.dests[o]}, family=4,
            sizes=Sizes.fixed(self.frame_bytes, "frame"), load_percent=load_percent,
            duration_ps=c.trial_ps, seed=c.seed)
            for i in PORTS for o in (l2fwd_out_port(i),))
        return Trial(streams, f"{self.frame_bytes} B {load_percent:g} %", c.settle_ps)


def chip_device(app: str, config: CompareConfig) -> Any:
    """The app on the simulated IXP2800 with four 10GbE ports (2 forwarding MEs a port)."""
    from npkit.bench.lab.devices import RouteConfig

    options = ChipOptions(port_kinds=(PORT_KIND,) * len(PORTS),
                          routes=RouteConfig(config.v4_routes, 0))
    if app == "l2fwd":
        return L2fwdChipDevice(options)
    return CompiledChipDevice(options, fwd_mes_per_port=2)


def _destinations(device: Any, config: CompareConfig) -> dict[int, Destinations]:
    if isinstance(device, L2fwdChipDevice):
        return {o: BenchmarkNetwork()(o, 4) for o in PORTS}
    return {o: device.destinations(4, o, config.routes_per_stream, config.seed)
            for o in PORTS}


@dataclass
class _Counting:
    """Runs trials on a device and keeps each load's counters (for ``explain``)."""

    device: Device
    counters: dict[float, dict[str, float]] = field(default_factory=dict)
    trials: int = 0
    show: Progress | None = None

    @property
    def ports(self) -> Any:
        return self.device.ports

    @property
    def name(self) -> str:
        return getattr(self.device, "name", "device")

    def describe(self) -> dict[str, Any]:
        return self.device.describe()

    def run(self, trial: Trial) -> Any:
        self.trials += 1
        if self.show is not None:
            self.show(f"chip {self.name}: {trial.label}")
        result = self.device.run(trial)
        load = max(float(s.load_percent or 0) for s in trial.streams)
        self.counters[load] = dict(result.counters)
        return result


def chip_point(app: str, device: Any, config: CompareConfig, frame_bytes: int,
               show: Progress | None = None) -> ChipPoint:
    """The RFC 2544 throughput of ``device`` at one frame size on the port pairs."""
    trials = PairTrials(config, frame_bytes, _destinations(device, config))
    counting = _Counting(device, show=show)
    found: ThroughputResult = search_throughput(counting, trials.at, 1.0, 100.0,
                                                config.resolution_percent)
    line = float(port_model(PORT_KIND).line_rate_fps(frame_bytes))
    load = found.throughput_percent
    total = None if load is None else line * load / 100 * len(PORTS)
    why = ""
    if load is None or load < 100:
        failed = [s.load_percent for s in found.steps if not s.passed]
        above = counting.counters.get(min(failed), {}) if failed else {}
        why = why_not_line(counting.counters.get(load or -1.0, {}), above)
    return ChipPoint(app, frame_bytes, line, load, None if total is None else total / 1e6,
                     None if total is None else total * frame_bytes * 8 / 1e9,
                     len(found.steps), why)


def why_not_line(at: dict[str, float], above: dict[str, float]) -> str:
    """In a line: the loss counters of the lowest losing trial summed over ports (e.g.
    ``rx_dropped_rbuf_full 20``), the three busiest units and the forwarding MEs at the
    throughput load (``report_parts.explain`` says the same at length, per port)."""
    lost: dict[str, float] = {}
    for name, value in above.items():
        if name.startswith(("rx.", "drop.", "exception.")) and value:
            key = name.rstrip("0123456789")
            lost[key] = lost.get(key, 0) + value
    parts = []
    if lost:
        parts.append("frames lost above it as " + ", ".join(
            f"{k} {v:,.0f}" for k, v in sorted(lost.items(), key=lambda kv: -kv[1])))
    busy = sorted(((v, k.removesuffix(".busy_fraction")) for k, v in at.items()
                   if k.endswith(".busy_fraction") and not k.startswith("fwd.")),
                  reverse=True)[:3]
    if busy:
        parts.append("busiest at the throughput: " + ", ".join(
            f"{unit} {100 * v:.0f} %" for v, unit in busy))
    if "fwd.busy_fraction" in at:
        parts.append(f"forwarding MEs {100 * at['fwd.busy_fraction']:.0f} % busy, "
                     f"{at.get('fwd.instructions_per_frame', 0):.0f} instructions a frame")
    return "; ".join(parts)


# --------------------------------------------------------------------------- the whole run
def run_compare(config: CompareConfig, show: Progress | None = None,
                commit: str = "") -> CompareResult:
    """Every part of the comparison the configuration asks for (see the module doc)."""
    workers = config.host_workers()
    start = native_rates.host_info() if "native" in config.parts else None
    chips: list[ChipPoint] = []
    natives: list[native_rates.HostRate] = []
    described: dict[str, dict[str, Any]] = {}
    for app in config.apps:
        device = chip_device(app, config)
        if "native" in config.parts:
            routes = {} if app == "l2fwd" else device.tables.routes[4]
            natives += native_rates.measure_sizes(
                app, device.native, routes, config.sizes, config.native_packets, workers,
                config.native_runs, config.seed, show)
        if "chip" in config.parts:
            described[app] = device.describe()
            chips += [chip_point(app, device, config, size, show) for size in config.sizes]
    end = native_rates.host_info() if "native" in config.parts else None
    points: list[affinity.AffinityPoint] = []
    if "affinity" in config.parts:
        probe = affinity.ChipProbe() if config.chip_sample else None
        for flows in config.flows:
            if show is not None:
                show(f"flow affinity, {flows:,} flows")
            setup = affinity.AffinityConfig(flows, config.affinity_cores,
                                            config.packets_per_flow, config.moved_fraction,
                                            config.seed, config.chip_sample)
            points += affinity.run_affinity(setup, chip=probe)
    return CompareResult("compare", config, start, end, tuple(chips), described,
                         tuple(natives), tuple(points), published_rows(), commit)


def rows_by_app(points: Sequence[Any], app: str) -> list[Any]:
    return [p for p in points if p.app == app]
