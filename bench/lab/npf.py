"""The NPF IP Forwarding benchmark on a device under test (FACTS.md §3 and §5; the Network
Processing Forum's IP Forwarding Benchmark Implementation Agreement, as run in the 2003
IXP2800 full disclosure report).

Configuration: port pairs in full duplex (0 <-> 1, 2 <-> 3, ...): every input port sends
to destinations whose route leaves on its partner port.  Destinations exercise
``exercised_v4`` / ``exercised_v6`` routes of the loaded table (2,000 / 400 as in the
report), split evenly over the directions.  Loads are % of the input ports' line rate
(all input ports at the same load); each trial lasts ``trial_ps`` of simulated time plus
``settle_ps`` for frames in flight.  Per traffic type (IPv4, IPv6, mixed) and size (the
POS IPv4 list from 40 bytes, IPv6 from the smallest packet that carries the tester's
signature, optionally the Internet mix):

* **forwarding rate**: what comes out at 100 % offered load (pps, IP Gb/s);
* **throughput**: the highest load with zero loss (``search.search_throughput``),
  confirmed: a load passes only when ``confirm_trials`` trials at it all lose nothing (the
  search's trial, then ``confirm_trials - 1`` with other stream seeds and every stream
  starting at its own seeded phase, up to ``phase_window_ps`` late; ``TrialMaker.repeat``);
  every stream starts ``ready_ps`` (20 us) after the device's start, as a tester starts a
  trial on a device that is up (RFC 2544 23);
* **latency** at 100/95/90/50 % of the throughput (RFC 2544 style, ``latency``) and at
  100/95/90/50 % of *line rate* (``latency_line``, where "100 %" is line rate whatever the
  throughput: the published IMIX rows' basis): min/avg/max, first bit in to last bit out
  (and RFC 1242's last in / first out); a line-rate point above the throughput loses
  packets and says how many;
* **loss-rate curve**: from 100 % down by ``loss_step_percent`` until two clean trials;
* **overload forwarding rate**: more input than output capacity -- every input port at
  100 % towards one output port -- and what that port still forwards.

The **forwarding-table update rate** tests need a control plane changing the device's
table while it forwards; a device offers that with the ``UpdatableDevice`` methods (the
compiled router on the chip does, through ``runtime.compiled_router``: every update is
replayed by the XScale model in simulated time).  One without them gets a result that
says "not measured" and carries no figure.  Per family:

* **update rate**: ``updates_per_measurement`` updates (one per call) back to back with no
  traffic, in updates per second;
* **forwarding under updates**: at the throughput load of the family's smallest size (100 %
  when that case was not run or found no throughput), one trial per 25/50/75/100 % of the
  update rate, updates arriving evenly while the frames are sent.  The updates change
  routes the traffic does not use (bench/lab/updates.py: no exercised prefix nor a prefix
  inside one is touched), so the analyzer's reference stays exact and every misrouted or
  damaged frame counts as an error.

**Forwarding rates** are packets received over the sending time (``trial_ps``), and
frames that leave during the settle time count as received: at overload this includes the
backlog the device drains after the tester stopped.  ``RatePoint.received_by_end`` counts
only the frames out by the end of the sending time (which misses the frames still in
flight when it ends); the true rate is between the two.

**Convergence against trial length** (``convergence_case``): for the cases named in
``convergence_cases`` ("ipv4:40"), the confirmed throughput search again at each trial
length of ``convergence_trial_ps`` (the preset's own length included), so the report can
show whether the answer stopped changing by the preset's trial length
(``search.Convergence``).

Each (traffic, size) case is one task of ``sweep.run_tasks`` (serial or dask) and carries
its configuration; every result is a frozen dataclass of plain values.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from npkit.bench.lab.device import Device, DeviceProxy, Trial, TrialResult
from npkit.bench.lab.devices import (
    MTU,
    example_path,
)
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.search import (
    Convergence,
    LossCurve,
    ThroughputResult,
    loss_rate_sweep,
    search_throughput,
    throughput_by_length,
)
from npkit.bench.lab.sweep import Progress, Where, run_tasks
from npkit.bench.lab.system_device import DEFAULT_SYSTEM, system_device
from npkit.bench.tester import (
    IMIX_SIZES,
    IMIX_WEIGHTS,
    POS_IPV4_SIZES,
    PortModel,
    RxRecord,
    Sizes,
    Stream,
    standard_sizes,
)
from npkit.bench.tester.media import PS_PER_S
from npkit.bench.tester.packet import split_link
from npkit.bench.tester.stream import Destinations
from npkit.bench.tester.tally import TrialTally
from npkit.runtime.routes import REAL_TABLE, RouteSet, generate_routes, read_routes

FAMILIES = {"ipv4": 4, "ipv6": 6, "mixed": "mixed"}
LATENCY_PERCENTS = (100.0, 95.0, 90.0, 50.0)  # of the throughput, and of line rate
UPDATE_PERCENTS = (25.0, 50.0, 75.0, 100.0)
NOT_MEASURED = ("not measured: the device has no control plane to change its forwarding "
                "table while it runs")


# --------------------------------------------------------------------------- route tables
@dataclass(frozen=True)
class SampledRoutes:
    """Route tables sampled from the real Internet table (``source``; next hops by the
    documented rule of ``npkit.runtime.routes.assign_next_hop``), or generated with its
    prefix-length distribution when the file is absent.  Same fields as the chip devices'
    ``RouteConfig`` (``v4_routes``, ``v6_routes``, ``seed``, ``next_hops``, ``tables()``)
    so it can be given to them in its place."""

    v4_routes: int = 135_432
    v6_routes: int = 1_200
    seed: int = 2024
    next_hops: int = 16
    source: str = "full-table-2024.txt.gz"

    def path(self) -> Path | None:
        """The table file, or None (``source`` empty or not found: generated tables)."""
        if not self.source:
            return None
        candidate = Path(self.source)
        if not candidate.is_absolute():
            candidate = REAL_TABLE.parent / candidate
        return candidate if candidate.is_file() else None

    def origin(self) -> str:
        """Where the tables come from, for the results."""
        path = self.path()
        if path:
            return f"sampled from {path.name}"
        return f"generated ({self.source} not found)" if self.source else "generated"

    def full(self) -> RouteSet | None:
        """Every route of the table file (None: generated tables), read once per process:
        the sample (``tables``) and the update tests' spare routes both come from it."""
        path = self.path()
        if path is None:
            return None
        return _read_table(path, path.stat().st_mtime_ns, self.seed, self.next_hops)

    def tables(self) -> dict[int, dict[tuple[int, int], int]]:
        full = self.full()
        if full is None:
            return {4: generate_routes(4, self.v4_routes, self.seed, next_hops=self.next_hops),
                    6: generate_routes(6, self.v6_routes, self.seed, next_hops=self.next_hops)}
        path = self.path()
        assert path is not None
        rng = random.Random(f"npkit-npf-routes:{self.seed}")
        out = {}
        for family, table, count in ((4, full.v4, self.v4_routes), (6, full.v6, self.v6_routes)):
            if count > len(table):
                raise LabConfigError(f"{path.name} has {len(table):,} IPv{family} routes; "
                                     f"asked for {count:,}")
            keys = rng.sample(sorted(table), count)
            out[family] = {k: table[k] for k in sorted(keys)}
        return out


@lru_cache(maxsize=1)
def _read_table(path: Path, mtime_ns: int, seed: int, next_hops: int) -> RouteSet:
    """A route file, read once per process while it is unchanged (``mtime_ns``); the
    callers only read the sets they get."""
    return read_routes(path, seed, next_hops)


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class NpfConfig:
    """Everything that decides an NPF run (goes into the results, with the seed)."""

    preset: str = "custom"
    traffic: tuple[str, ...] = ("ipv4", "ipv6", "mixed")
    sizes_v4: tuple[int, ...] = POS_IPV4_SIZES  # IP bytes on POS, frame bytes on Ethernet
    sizes_v6: tuple[int, ...] = ()  # () = the v4 list from the smallest valid IPv6 size
    imix: bool = True  # also the Internet mix, per traffic type
    imix_sizes: tuple[int, ...] = IMIX_SIZES
    imix_weights: tuple[float, ...] = IMIX_WEIGHTS
    v6_share: float = 0.5  # mixed traffic: the IPv6 share of packets
    exercised_v4: int = 2_000
    exercised_v6: int = 400
    trial_ps: int = 1_000_000_000  # 1 ms
    settle_ps: int = 200_000_000
    lower_percent: float = 1.0
    resolution_percent: float = 0.5
    confirm_trials: int = 1  # trials that must all lose nothing for a load to pass
    phase_window_ps: int = 1_000_000  # confirmation trials: streams start up to 1 us late
    # The device is up before the tester sends (RFC 2544 23: the trial follows the set-up
    # and a wait): every stream starts this late, so a data path that registers its threads
    # at start-up (docs/datapath.md, the pool: ~3 us) does not count its boot as loss.
    ready_ps: int = 20_000_000  # 20 us
    convergence_trial_ps: tuple[int, ...] = ()  # trial lengths of the convergence search
    convergence_cases: tuple[str, ...] = ()  # "traffic:size" cases it runs on
    latency_percents: tuple[float, ...] = LATENCY_PERCENTS
    latency_line_percents: tuple[float, ...] = LATENCY_PERCENTS
    loss_step_percent: float = 10.0
    overload: bool = True
    update_tests: bool = True
    updates_per_measurement: int = 1_000
    update_percents: tuple[float, ...] = UPDATE_PERCENTS
    latency_bin_ps: int = 100_000
    seed: int = 1

    def __post_init__(self) -> None:
        unknown = [t for t in self.traffic if t not in FAMILIES]
        if unknown:
            raise LabConfigError(f"unknown NPF traffic {', '.join(unknown)}: use "
                                 f"{', '.join(FAMILIES)}")
        if self.trial_ps <= 0 or self.settle_ps < 0:
            raise LabConfigError("trial_ps must be > 0 and settle_ps >= 0")
        if not 0 <= self.v6_share <= 1:
            raise LabConfigError(f"v6_share must be in [0, 1], got {self.v6_share}")
        if self.exercised_v4 < 1 or self.exercised_v6 < 1:
            raise LabConfigError("exercised_v4 and exercised_v6 must be >= 1")
        if any(not 0 < p <= 100 for p in self.latency_percents + self.latency_line_percents):
            raise LabConfigError("latency_percents and latency_line_percents must be in "
                                 "(0, 100]")
        if self.confirm_trials < 1:
            raise LabConfigError(f"confirm_trials must be >= 1, got {self.confirm_trials}")
        if self.phase_window_ps < 0 or any(t <= 0 for t in self.convergence_trial_ps):
            raise LabConfigError("phase_window_ps must be >= 0 and convergence trial "
                                 "lengths > 0")
        if self.ready_ps < 0:
            raise LabConfigError(f"ready_ps must be >= 0, got {self.ready_ps}")
        for name in self.convergence_cases:
            traffic, _, size = name.partition(":")
            if traffic not in FAMILIES or not size:
                raise LabConfigError(f"convergence case {name!r}: write traffic:size, e.g. "
                                     "ipv4:40 or mixed:imix")

    @property
    def short_trials(self) -> bool:
        """Trials shorter than the methodology's minimum (``MIN_TRIAL_PS``, 10 ms): the
        figures are then from short trials, and the report says so."""
        return self.trial_ps < MIN_TRIAL_PS

    def exercised(self, family: int) -> int:
        return self.exercised_v4 if family == 4 else self.exercised_v6

    def sizes(self, traffic: str, framing: str) -> tuple[tuple[str, Sizes], ...]:
        """(label, sizes) of every case of one traffic type on ``framing``."""
        family = FAMILIES[traffic]
        unit = "ip" if framing == "pos" else "frame"
        if family == 6:
            values = self.sizes_v6 or _from_smallest(self.sizes_v4, framing, 6)
        else:
            values = self.sizes_v4
        cases = [(str(v), Sizes((v,), None, unit, clamp=family == "mixed")) for v in values]
        if self.imix:
            cases.append(("imix", Sizes.imix(self.imix_sizes, self.imix_weights,
                                             clamp=family != 4)))
        return tuple(cases)


def _from_smallest(sizes: tuple[int, ...], framing: str, family: int) -> tuple[int, ...]:
    """``sizes`` with those below the family's smallest valid size replaced by it."""
    least = standard_sizes(framing, family)[0][0]  # type: ignore[arg-type]
    return tuple(sorted({max(least, s) for s in sizes}))


@dataclass(frozen=True)
class NpfPreset:
    """A named setup: the ports and tables the device needs, and the run's configuration."""

    name: str
    port_kinds: tuple[str, ...]
    routes: SampledRoutes
    config: NpfConfig
    system: str = DEFAULT_SYSTEM  # sim/systems name or path; SINGLE_SYSTEM: one chip
    threads: int = 1  # host threads for the chips of a system (System(threads=...))
    data_path: str | None = None  # rings | pool | pool-mbl (docs/datapath.md); None: the
    # system's own (system_device.default_data_path on chips receiving one port)


MIN_TRIAL_PS = 10_000_000_000  # 10 ms: the methodology's shortest trial (issue 12)


def preset(name: str = "ixp2800-npf", quick: bool = False, *, system: str | None = None,
           threads: int = 1, data_path: str | None = None, **changes: Any) -> NpfPreset:
    """``ixp2800-npf``: 2 x OC-192 POS full duplex, 135,432 IPv4 routes sampled from the real
    table and 1,200 IPv6, 2,000 / 400 exercised, as in the 2003 report; trials of 10 ms,
    every throughput confirmed by 3 trials, and the IPv4 40-byte and IPv4 IMIX throughput
    also searched with 0.1, 1, 3 and 10 ms trials (convergence against trial length).
    ``quick`` keeps a run to minutes: three sizes, 0.1 ms trials confirmed by 2, a 2 %
    search resolution, convergence of IPv4 40 B over 25, 50 and 100 us -- figures from
    short trials, which the report says.  ``system``: the simulated system
    (``sim/systems`` name or a path; default the published two-chip ``dual-ixp2800-npf``,
    ``single-ixp2800`` the single chip the lab ran before); ``threads``: host threads for
    its chips; ``data_path``: ``pool-mbl`` (the compiled IXA-class path, docs/datapath.md,
    with its receive and transmit compiled from MBL: the default on chips receiving one
    port), ``pool`` (the same with pool.uc's hand-written receive and transmit, the
    baseline) or ``rings`` (receive ME, forwarding chains, transmit ME; the single
    chip's)."""
    if name != "ixp2800-npf":
        raise LabConfigError(f"unknown NPF preset {name!r}: use ixp2800-npf")
    config = NpfConfig(preset=name, trial_ps=MIN_TRIAL_PS, confirm_trials=3,
                       convergence_trial_ps=(100_000_000, 1_000_000_000, 3_000_000_000,
                                             MIN_TRIAL_PS),
                       convergence_cases=("ipv4:40", "ipv4:imix"))
    if quick:
        config = replace(config, preset=f"{name} --quick", sizes_v4=(40, 256, 1518),
                         trial_ps=100_000_000, settle_ps=100_000_000,
                         resolution_percent=2.0, loss_step_percent=20.0,
                         updates_per_measurement=200, confirm_trials=2,
                         convergence_trial_ps=(25_000_000, 50_000_000, 100_000_000),
                         convergence_cases=("ipv4:40",))
    return NpfPreset(name, ("oc192pos", "oc192pos"), SampledRoutes(), replace(config, **changes),
                     system or DEFAULT_SYSTEM, threads, data_path)


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class RatePoint:
    """One trial's forwarding: counts, and rates over the trial's sending time."""

    load_percent: float
    sent: int
    received: int
    lost: int
    errors: int
    duration_ps: int
    forwarded_pps: float
    forwarded_ip_gbps: float
    offered_ip_gbps: float
    received_by_end: int | None = None  # of ``received``, out by the end of the sending time


@dataclass(frozen=True)
class LatencyPoint:
    """Latency at a load (ps; None when nothing arrived).  ``load_percent`` is % of line
    rate; ``percent_of_throughput`` the same load as % of the throughput (None when there
    is none).  A point of ``latency`` is set by its % of throughput, one of
    ``latency_line`` by its % of line rate."""

    percent_of_throughput: float | None
    load_percent: float
    count: int
    lost: int
    min_ps: int | None
    avg_ps: float | None
    max_ps: int | None
    lifo_min_ps: float | None
    lifo_avg_ps: float | None
    lifo_max_ps: float | None
    histogram: tuple[tuple[int, int], ...]  # (bin index, packets), bins of latency_bin_ps


@dataclass(frozen=True)
class OverloadResult:
    """Every input port at 100 % towards one output port."""

    inputs: tuple[int, ...]
    output: int
    offered_percent_of_output: float  # input line capacity / output line capacity
    rate: RatePoint
    output_pps: float  # frames out per second over the output's busy span
    output_utilization: float  # the output line's busy fraction over that span
    counters: dict[str, float]


@dataclass(frozen=True)
class NpfCaseResult:
    """Every data-plane test of one traffic type and size."""

    traffic: str
    size: str
    forwarding: RatePoint
    throughput: ThroughputResult
    throughput_rate: RatePoint | None  # the trial at the throughput load
    latency: tuple[LatencyPoint, ...]
    loss: LossCurve
    overload: OverloadResult | None
    counters_at_full_load: dict[str, float]
    counters_at_throughput: dict[str, float]
    counters_above: dict[str, float]  # the lowest load the search saw lose packets
    note: str = ""
    latency_line: tuple[LatencyPoint, ...] = ()  # at % of line rate (100 % = line rate)


@dataclass(frozen=True)
class UpdatePoint:
    """Forwarding while updates arrive at ``percent_of_max`` of the maximum rate;
    ``updates_landed`` (None: the device does not say) are those whose writes were all
    visible before the trial ended."""

    percent_of_max: float
    updates_per_s: float
    rate: RatePoint
    updates_landed: int | None = None


@dataclass(frozen=True)
class UpdateResult:
    """Forwarding-table updates of one family: the maximum rate (one update per call) and
    forwarding at fractions of it.  ``measured`` False: the device cannot be updated while
    running; ``note`` says why and there is no figure."""

    family: int
    measured: bool
    note: str
    updates: int = 0
    max_updates_per_s: float | None = None
    traffic_size: str = ""
    concurrent: tuple[UpdatePoint, ...] = ()
    load_percent: float = 100.0  # the offered load of the concurrent trials


@dataclass(frozen=True)
class ConvergenceResult:
    """The throughput of one case at several trial lengths; ``trial_ps`` is the length the
    suite's other trials used (the preset's)."""

    traffic: str
    size: str
    trial_ps: int
    convergence: Convergence

    @property
    def stable_at_preset(self) -> bool | None:
        """Whether the throughput at the preset's trial length matches the next shorter
        length's and every longer one's (within the resolution); None when the preset's
        length is not among the lengths or is the shortest."""
        return self.convergence.stable_at(self.trial_ps)


@dataclass(frozen=True)
class NpfResult:
    """The suite: ``suite`` is "npf"; ``setup`` the preset, ports and route tables the
    device was built with (when run from a preset)."""

    suite: str
    config: NpfConfig
    device: dict[str, Any]
    cases: tuple[NpfCaseResult, ...]
    updates: tuple[UpdateResult, ...]
    setup: dict[str, Any] = field(default_factory=dict)
    convergence: tuple[ConvergenceResult, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- updates
@runtime_checkable
class UpdatableDevice(Protocol):
    """A device whose forwarding table a control plane can change (the NPF control-plane
    and concurrent tests).  Updates are adds, deletes and next-hop changes, one update per
    call, in a seeded order; those of ``run_with_updates`` leave the routes of the trial's
    destinations alone, so the analyzer's reference of the loaded table stays exact."""

    def measure_update_rate(self, family: int, updates: int, seed: int) -> float:
        """Updates per second, back to back, with no traffic."""
        ...

    def run_with_updates(self, trial: Trial, family: int, updates_per_s: float,
                         seed: int) -> TrialResult:
        """``trial`` while updates of ``family`` arrive at ``updates_per_s``."""
        ...


# --------------------------------------------------------------------------- trials
@dataclass(frozen=True)
class TrialMaker:
    """Builds the trials of one case: every flow at a load."""

    config: NpfConfig
    traffic: str
    sizes: Sizes
    framing: str
    flows: tuple[tuple[int, int], ...]  # (input port, output port)
    dests: Mapping[tuple[int, int], Mapping[int, Destinations]]
    label: str

    def at(self, load_percent: float) -> Trial:
        c = self.config
        streams = tuple(
            Stream(id=index + 1, port=i, destinations=self.dests[(i, o)],
                   framing=self.framing,  # type: ignore[arg-type]
                   family=FAMILIES[self.traffic],  # type: ignore[arg-type]
                   sizes=self.sizes, load_percent=load_percent, duration_ps=c.trial_ps,
                   seed=c.seed, v6_share=c.v6_share, start_ps=c.ready_ps)
            for index, (i, o) in enumerate(self.flows))
        return Trial(streams, f"{self.traffic} {self.label} {load_percent:g} %", c.settle_ps)

    def repeat(self, load_percent: float, k: int) -> Trial:
        """The k-th confirmation trial at ``load_percent`` (k >= 1): the streams of ``at``
        with stream seed ``seed + k`` (other sizes in a mix, other destinations' order) and
        each stream starting at its own phase, uniform in [0, ``phase_window_ps``) from a
        generator seeded by (seed, k, stream)."""
        c = self.config
        base = self.at(load_percent)
        streams = []
        for stream in base.streams:
            rng = random.Random(f"npkit-npf-phase:{c.seed}:{k}:{stream.id}")
            phase = rng.randrange(c.phase_window_ps) if c.phase_window_ps else 0
            streams.append(replace(stream, seed=c.seed + k, start_ps=c.ready_ps + phase))
        return Trial(tuple(streams), f"{base.label} (confirmation {k})", base.settle_ps)

    def with_length(self, trial_ps: int) -> TrialMaker:
        """The same case with trials of ``trial_ps``."""
        return replace(self, config=replace(self.config, trial_ps=int(trial_ps)))


def duplex_flows(ports: Mapping[int, PortModel]) -> tuple[tuple[int, int], ...]:
    """Port pairs in full duplex: (0, 1), (1, 0), (2, 3), (3, 2), ..."""
    numbers = sorted(ports)
    if len(numbers) < 2 or len(numbers) % 2:
        raise LabConfigError(f"NPF port pairs need an even number of ports; the device has "
                             f"{len(numbers)}")
    return tuple((numbers[k], numbers[k ^ 1]) for k in range(len(numbers)))


def _framing(device: Device) -> str:
    framings = {m.framing for m in device.ports.values()}
    if len(framings) != 1:
        raise LabConfigError("NPF runs on ports of one framing; the device mixes "
                             f"{', '.join(sorted(framings))}")
    return framings.pop()


def _destinations(device: Device, config: NpfConfig, traffic: str,
                  flows: tuple[tuple[int, int], ...]
                  ) -> dict[tuple[int, int], dict[int, Destinations]]:
    """Per output port, its share of the exercised routes of each family (the exercised
    routes split evenly over the device's ports, in every configuration)."""
    if not hasattr(device, "destinations"):
        raise LabConfigError(f"device {getattr(device, 'name', '?')} has no route table to pick "
                             "NPF destinations from (it needs destinations(family, port, n))")
    family = FAMILIES[traffic]
    families = (4, 6) if family == "mixed" else (family,)
    outs = sorted({o for _, o in flows})
    picked: dict[tuple[int, int], Destinations] = {}
    for f in families:
        share = max(1, config.exercised(f) // len(device.ports))
        for o in outs:
            picked[(f, o)] = device.destinations(f, o, share, config.seed)  # type: ignore
    return {(i, o): {f: picked[(f, o)] for f in families} for i, o in flows}


def make_trials(device: Device, config: NpfConfig, traffic: str, label: str,
                sizes: Sizes, flows: tuple[tuple[int, int], ...] | None = None
                ) -> TrialMaker:
    flows = flows or duplex_flows(device.ports)
    dests = _destinations(device, config, traffic, flows)
    return TrialMaker(config, traffic, sizes, _framing(device), flows, dests, label)


# --------------------------------------------------------------------------- measures
def _ip_bits(framing: str, frames: Iterable[bytes]) -> int:
    """IP bits carried by ``frames`` (the IP length field, so padding is not counted)."""
    bits = 0
    for data in frames:
        split = split_link(framing, data)  # type: ignore[arg-type]
        if split is not None:
            family, _, rest = split
            ip_len = int.from_bytes(rest[2:4], "big") if family == 4 else \
                40 + int.from_bytes(rest[4:6], "big")
            bits += 8 * ip_len
    return bits


def rate_point(load_percent: float, result: TrialResult, duration_ps: int,
               framing: str) -> RatePoint:
    """Rates over the sending time ``duration_ps`` (frames still arriving in the settle
    time count: they were forwarded).  From the held records, or from a streamed trial's
    ``tally`` (the same figures: ``bench/tester/tally.py``)."""
    total = result.report.total
    seconds = Fraction(duration_ps, PS_PER_S)
    if result.traffic is None:
        tally = _tally_of(result, framing)
        sent_bits, got_bits = tally.sent_ip_bits(), tally.received_ip_bits()
        by_end = tally.received_by_end() if tally.window_ps == duration_ps else None
        if by_end is None and tally.sent:
            raise LabConfigError(f"a streamed trial of {tally.window_ps} ps cannot give "
                                 f"the frames out by the end of {duration_ps} ps")
        by_end = by_end or 0
    else:
        sent = result.traffic.records()
        sent_bits = _ip_bits(framing, (r.data for r in sent))
        got_bits = _ip_bits(framing, (r.data for r in result.received))
        end = min((r.time_ps for r in sent), default=0) + duration_ps
        by_end = sum(1 for r in result.received if r.time_ps <= end)
    return RatePoint(float(load_percent), total.sent, total.received, total.lost,
                     result.report.errors - total.lost, duration_ps,
                     float(total.received / seconds), float(got_bits / seconds) / 1e9,
                     float(sent_bits / seconds) / 1e9, by_end)


def _tally_of(result: TrialResult, framing: str) -> TrialTally:
    """A streamed trial's tally, checked to be of ``framing``."""
    tally = result.tally
    if tally is None or tally.framing != framing:
        raise LabConfigError("a streamed trial without a tally of its "
                             f"{framing} frames: run the device with streamed=False")
    return tally


def latency_point(percent: float | None, load_percent: float, result: TrialResult
                  ) -> LatencyPoint:
    lat = result.report.total.latency
    return LatencyPoint(None if percent is None else float(percent), float(load_percent),
                        lat.count,
                        result.report.total.lost, lat.min_ps, lat.avg_ps, lat.max_ps,
                        lat.lifo_min_ps, lat.lifo_avg_ps, lat.lifo_max_ps,
                        tuple(sorted(lat.histogram.items())))


@dataclass
class _Recorder(DeviceProxy):
    """Runs trials on the device, keeping per load the rates and counters of the search's
    own trial there (``seen``; not of its confirmations) and the counters of the last trial
    there that lost packets (``lost_at``, confirmations included): the search returns only
    steps, the report wants what is behind a figure.  The 100 % trial is run once: the
    forwarding rate, the search, the latency at line rate and the loss curve all start with
    it, and a trial is deterministic."""

    device: Device
    trials: TrialMaker
    seen: dict[float, tuple[RatePoint, dict[str, float]]] = field(default_factory=dict)
    lost_at: dict[float, dict[str, float]] = field(default_factory=dict)
    full_load: TrialResult | None = None

    def run(self, trial: Trial) -> TrialResult:
        load = float(trial.streams[0].load_percent or 0)
        own = trial == self.trials.at(load)  # not a confirmation trial
        if load == 100.0 and own and self.full_load is not None:
            return self.full_load
        result = self.device.run(trial)
        if load == 100.0 and own:
            self.full_load = result
        if own:
            rate = rate_point(load, result, self.trials.config.trial_ps, self.trials.framing)
            self.seen[load] = (rate, dict(result.counters))
        if result.report.total.lost:
            self.lost_at[load] = dict(result.counters)
        return result


# --------------------------------------------------------------------------- the tests
def forwarding_rate(device: Device, trials: TrialMaker, load_percent: float = 100.0
                    ) -> tuple[RatePoint, TrialResult]:
    result = device.run(trials.at(load_percent))
    return rate_point(load_percent, result, trials.config.trial_ps, trials.framing), result


def latency_at(device: Device, trials: TrialMaker, throughput_percent: float,
               percents: tuple[float, ...]) -> tuple[LatencyPoint, ...]:
    points = []
    for percent in percents:
        load = throughput_percent * percent / 100
        points.append(latency_point(percent, load, device.run(trials.at(load))))
    return tuple(points)


def latency_at_line(device: Device, trials: TrialMaker, throughput_percent: float | None,
                    percents: tuple[float, ...]) -> tuple[LatencyPoint, ...]:
    """Latency at ``percents`` of line rate (100 % = line rate, whatever the throughput):
    the basis of the published IMIX rows.  Loads above the throughput lose packets; the
    point counts them (``lost``) and times those that came out."""
    points = []
    for load in percents:
        of_tput = None if not throughput_percent else 100 * load / throughput_percent
        points.append(latency_point(of_tput, load, device.run(trials.at(load))))  # type: ignore
    return tuple(points)


def overload(device: Device, config: NpfConfig, traffic: str, label: str, sizes: Sizes
             ) -> OverloadResult:
    """Every input port at 100 % to the last port: more input than output capacity."""
    ports = device.ports
    output = max(ports)
    flows = tuple((i, output) for i in sorted(ports))
    trials = make_trials(device, config, traffic, f"{label} overload", sizes, flows)
    result = device.run(trials.at(100.0))
    rate = rate_point(100.0, result, config.trial_ps, trials.framing)
    if result.traffic is None:
        line = _tally_of(result, trials.framing).received.get(output)
        pps, utilization = line.line_use(ports[output]) if line else (0.0, 0.0)
    else:
        pps, utilization = _output_use(ports[output], [r for r in result.received
                                                       if r.port == output])
    capacity = sum(ports[i].rate_bps for i in ports) / ports[output].rate_bps
    return OverloadResult(tuple(sorted(ports)), output, float(100 * capacity), rate, pps,
                          utilization, dict(result.counters))


def _output_use(model: PortModel, frames: list[RxRecord]) -> tuple[float, float]:
    """(frames per second, busy fraction) of an output line from the first bit of its first
    frame to the last bit of its last: its steady rate, whatever the device's latency."""
    if not frames:
        return 0.0, 0.0
    wires = [model.wire_ps(len(r.data)) for r in frames]
    start = min(r.time_ps - w for r, w in zip(frames, wires, strict=True))
    span = max(r.time_ps for r in frames) - start
    if span <= 0:
        return 0.0, 0.0
    return float(len(frames) * PS_PER_S / span), float(sum(wires) / span)


def run_case(device: Device, config: NpfConfig, traffic: str, label: str,
             sizes: Sizes) -> NpfCaseResult:
    """Every data-plane test of one traffic type and size."""
    trials = make_trials(device, config, traffic, label, sizes)
    recorder = _Recorder(device, trials)
    forwarding, full = forwarding_rate(recorder, trials)
    search = search_throughput(recorder, trials.at, config.lower_percent, 100.0,
                               config.resolution_percent, repeats=config.confirm_trials,
                               repeat_at=trials.repeat)
    load = search.throughput_percent
    throughput_rate, counters = recorder.seen.get(load, (None, {})) if load is not None \
        else (None, {})
    failed = [step.load_percent for step in search.steps if not step.passed]
    above = recorder.lost_at.get(min(failed), {}) if failed else {}
    note = ""
    latency: tuple[LatencyPoint, ...] = ()
    if load is None:
        note = "no load passed without loss: no throughput, latency not measured"
    else:
        latency = latency_at(device, trials, load, config.latency_percents)
    line = latency_at_line(recorder, trials, load, config.latency_line_percents)
    loss = loss_rate_sweep(recorder, trials.at, config.loss_step_percent)
    over = overload(device, config, traffic, label, sizes) if config.overload else None
    return NpfCaseResult(traffic, label, forwarding, search, throughput_rate, latency, loss,
                         over, dict(full.counters), counters, above, note, line)


def convergence_case(device: Device, config: NpfConfig, traffic: str, label: str,
                     sizes: Sizes, lengths_ps: Iterable[int] | None = None
                     ) -> ConvergenceResult:
    """The confirmed throughput search of one case at each trial length of ``lengths_ps``
    (default ``config.convergence_trial_ps``; the config's own ``trial_ps`` is always
    among them)."""
    lengths = sorted({*(lengths_ps if lengths_ps is not None
                        else config.convergence_trial_ps), config.trial_ps})
    trials = make_trials(device, config, traffic, label, sizes)

    def trials_for(length: int) -> tuple[Any, Any]:
        maker = trials.with_length(length)
        return maker.at, maker.repeat

    found = throughput_by_length(device, trials_for, lengths, config.lower_percent, 100.0,
                                 config.resolution_percent, config.confirm_trials)
    return ConvergenceResult(traffic, label, config.trial_ps, found)


def update_tests(device: Device, config: NpfConfig, family: int,
                 load_percent: float | None = None) -> UpdateResult:
    """The forwarding-table update rate and forwarding under concurrent updates at the
    smallest size of the family and ``load_percent`` (None: 100 %) offered load."""
    if not isinstance(device, UpdatableDevice):
        return UpdateResult(family, False, NOT_MEASURED)
    traffic = "ipv4" if family == 4 else "ipv6"
    label, sizes = config.sizes(traffic, _framing(device))[0]
    load = 100.0 if load_percent is None else float(load_percent)
    updates = config.updates_per_measurement
    best = device.measure_update_rate(family, updates, config.seed)
    trials = make_trials(device, config, traffic, label, sizes)
    points = []
    for percent in config.update_percents:
        rate = best * percent / 100
        result = device.run_with_updates(trials.at(load), family, rate, config.seed)
        landed = result.counters.get("updates.landed")
        points.append(UpdatePoint(float(percent), float(rate),
                                  rate_point(load, result, config.trial_ps, trials.framing),
                                  None if landed is None else int(landed)))
    return UpdateResult(family, True, "", updates, float(best), label, tuple(points), load)


def throughput_of(results: Iterable[NpfCaseResult], config: NpfConfig, family: int,
                  framing: str) -> float | None:
    """The throughput load found for the family's smallest size (the update tests' load),
    None when that case was not run or no load passed."""
    traffic = "ipv4" if family == 4 else "ipv6"
    label = config.sizes(traffic, framing)[0][0]
    for case in results:
        if (case.traffic, case.size) == (traffic, label):
            return case.throughput.throughput_percent
    return None


# --------------------------------------------------------------------------- the suite
@dataclass(frozen=True)
class CaseTask:
    """One case of a suite, self-contained for a dask worker."""

    device: Any
    config: NpfConfig
    traffic: str
    label: str
    sizes: Sizes


def run_case_task(task: CaseTask) -> NpfCaseResult:
    return run_case(task.device, task.config, task.traffic, task.label, task.sizes)


@dataclass(frozen=True)
class UpdateTask:
    device: Any
    config: NpfConfig
    family: int
    load_percent: float | None = None


def run_update_task(task: UpdateTask) -> UpdateResult:
    return update_tests(task.device, task.config, task.family, task.load_percent)


def run_convergence_task(task: CaseTask) -> ConvergenceResult:
    return convergence_case(task.device, task.config, task.traffic, task.label, task.sizes)


def convergence_tasks(device: Device, config: NpfConfig) -> list[CaseTask]:
    """One task per ``config.convergence_cases`` entry ("traffic:size"); a size the
    configuration does not have is an error."""
    framing = _framing(device)
    out = []
    for name in config.convergence_cases:
        traffic, _, size = name.partition(":")
        by_label = dict(config.sizes(traffic, framing))
        if size not in by_label:
            raise LabConfigError(f"convergence case {name!r}: {traffic} has no size {size!r} "
                                 f"(sizes: {', '.join(by_label)})")
        out.append(CaseTask(device, config, traffic, size, by_label[size]))
    return out


def cases(device: Device, config: NpfConfig) -> list[CaseTask]:
    framing = _framing(device)
    return [CaseTask(device, config, traffic, label, sizes)
            for traffic in config.traffic for label, sizes in config.sizes(traffic, framing)]


def run_npf(device: Device, config: NpfConfig, where: Where | None = None,
            progress: Progress | None = None, setup: dict[str, Any] | None = None
            ) -> NpfResult:
    """The whole suite: one task per (traffic, size), then the update tests per family."""
    duplex_flows(device.ports)  # a clear error before any task runs
    tasks = cases(device, config)
    lengths = convergence_tasks(device, config) if config.convergence_trial_ps else []
    results = run_tasks(run_case_task, tasks, where or Where(), progress)
    families = sorted({4 if t == "ipv4" else 6 for t in config.traffic if t != "mixed"})
    updates: list[UpdateResult] = []
    if config.update_tests:
        framing = _framing(device)
        updates = run_tasks(run_update_task,
                            [UpdateTask(device, config, f,
                                        throughput_of(results, config, f, framing))
                             for f in families], where or Where())
    convergence = run_tasks(run_convergence_task, lengths, where or Where())
    return NpfResult("npf", config, device.describe(), tuple(results), tuple(updates),
                     dict(setup or {}), tuple(convergence))


def run_preset(name: str = "ixp2800-npf", quick: bool = False, seed: int = 1,
               where: Where | None = None, progress: Progress | None = None,
               device: Device | None = None, system: str | None = None, threads: int = 1,
               data_path: str | None = None, coverage_dir: str | None = None,
               **changes: Any) -> NpfResult:
    """A preset's suite on the compiled router on the simulated system (or ``device``);
    ``coverage_dir``: every trial's line coverage written there (``record_coverage``)."""
    chosen = preset(name, quick, seed=seed, system=system, threads=threads,
                    data_path=data_path, **changes)
    setup: dict[str, Any] = {"preset": chosen.name, "quick": quick}
    if device is None:
        device = chip_device(chosen)
        setup |= {"port_kinds": list(chosen.port_kinds), "routes": asdict(chosen.routes),
                  "routes_origin": chosen.routes.origin(), "system": chosen.system,
                  "data_path": getattr(device, "data_path", chosen.data_path)}
    if coverage_dir is not None:
        device.record_coverage(coverage_dir)  # type: ignore[attr-defined]
    dut = device
    return run_npf(dut, chosen.config, where, progress, setup)


POS_MTU = 4470  # the usual POS interface MTU: the NPF sizes reach 1518 IP bytes


def chip_device(npf: NpfPreset, mtu: int | None = None, **options: Any) -> Device:
    """The compiled router on the preset's simulated system with its ports and tables (the
    sampled tables stand in for the chip devices' generated ``RouteConfig``): a
    ``SystemChipDevice`` (every chip of the system runs the router), or for
    ``single-ixp2800`` the single chip the lab ran before (``CompiledChipDevice``).  POS
    ports run examples/pos_router with next-hop MTU ``POS_MTU`` (POS links carry
    1518-byte IP packets, which the Ethernet MTU of 1500 would send to the slow path)
    unless ``source`` / ``mtu`` say otherwise.  The device is an ``UpdatableDevice``."""
    pos = all(k == "oc192pos" for k in npf.port_kinds)
    if pos:
        options = {"source": example_path("pos_router", "pos_router.mbl"),
                   "entry": "pos_router", **options}
    return system_device(npf.port_kinds, npf.routes, mtu or (POS_MTU if pos else MTU),
                         npf.system, npf.threads, npf.data_path, **options)


__all__ = [
    "MIN_TRIAL_PS", "ConvergenceResult", "LatencyPoint", "NpfCaseResult", "NpfConfig",
    "NpfPreset", "NpfResult", "OverloadResult", "RatePoint", "SampledRoutes",
    "UpdatableDevice", "UpdatePoint", "UpdateResult", "chip_device", "convergence_case",
    "duplex_flows", "forwarding_rate", "latency_at", "latency_at_line", "make_trials",
    "overload", "preset", "run_case", "run_npf", "run_preset", "throughput_of",
    "update_tests",
]
