"""Devices on the simulated chip: a compiled MBL pipeline (``CompiledChipDevice``) and
router4, the hand-written IPv4 router (``Router4Device``).

Both build their program once, load it with the tables on one chip and snapshot that chip
(``Chip.snapshot``) before its first trial; every later trial restores the snapshot
(``Chip.restore``: the chip exactly as loaded, ~1.4 ms instead of a ~15 ms fresh load), then
feeds the tester's frames at their exact send times (``npkit.bench.tester.chip``),
run until every frame is accounted for (transmitted, dropped, an exception, a receive drop)
or ``trial.settle_ps`` after the last frame was sent, and analyze the output against a
``RouteReference`` of the loaded table.  A frame still inside the chip at the deadline is
lost, as on a real tester.

Set-up is paid once per device (``prepare``, on the first trial): the route tables are
read or generated, the program compiled and linked, the tables packed into the loader's
memory words (``CompiledChipDevice.loadable``: a trial's chip is built from that manifest,
so a trial copies only the tables' words, never rebuilds them) and the route reference
built; then (for the first device of a process) the garbage collector is told those
objects live for good (``gc.freeze``), so its full collections no longer walk them.

The route table: ``RouteConfig`` generates IPv4 and IPv6 tables with the real table's
prefix-length distribution (``npkit.runtime.routes.generate_routes``); next hop *h* (1..16)
leaves on port ``h % ports`` with MAC addresses derived from *h* (``next_hop_macs``).
``destinations(family, out_port, count, seed)`` picks destinations whose route leaves on a
given port, which is how a procedure builds port-pair traffic.

``CompiledChipDevice`` is also an ``npf.UpdatableDevice``: ``measure_update_rate`` and
``run_with_updates`` run the program as a ``runtime.compiled_router.CompiledRouter``, the
XScale model replaying every route update into the chip's memory in simulated time, with
the streams of ``bench/lab/updates.py``.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from npkit.bench.lab.device import Trial, TrialResult
from npkit.bench.tester import (
    Analyzer,
    DestinationSet,
    PortModel,
    RouteReference,
    RxRecord,
    Traffic,
    generate,
    pick_destinations,
    port_model,
)
from npkit.bench.tester.chip import AnalysisSink, BatchFeed, attach, received, stream_trial
from npkit.bench.tester.fast import BATCH_FRAMES, batches
from npkit.bench.tester.generator import check_streams
from npkit.bench.tester.media import ETHERTYPE, PS_PER_S
from npkit.bench.tester.tally import TrialTally

STEP_CYCLES = 20_000  # how often a run checks whether every frame is accounted for
NEXT_HOPS = 16
MTU = 1500
SPARE_ROUTES = 4096  # per family: routes not loaded, for the update streams' adds
ROUTER4_ADDRESS = 0x0A000001  # router4's own address (10.0.0.1): never a destination
_FROZEN = False  # a device's set-up was gc.freeze()d in this process (``prepare``)


def example_path(*parts: str) -> Path:
    return Path(str(resources.files("npkit.examples").joinpath(*parts)))


def next_hop_macs(hop: int) -> tuple[int, int]:
    """(destination, source) MAC of next hop ``hop`` (the router4 benchmarks' rule)."""
    return 0x02AA00000000 | hop, 0x02BB00000000 | hop


# --------------------------------------------------------------------------- routes
@dataclass(frozen=True)
class RouteConfig:
    """The route tables a device is loaded with: generated, seeded, with the prefix-length
    distribution of the real table (the histogram committed with npkit)."""

    v4_routes: int = 2_000
    v6_routes: int = 400
    seed: int = 2024
    next_hops: int = NEXT_HOPS

    def tables(self) -> dict[int, dict[tuple[int, int], int]]:
        from npkit.runtime.routes import committed_histogram, generate_routes

        out: dict[int, dict[tuple[int, int], int]] = {}
        for family, count in ((4, self.v4_routes), (6, self.v6_routes)):
            # the committed histogram: the same table whether or not the real one is here
            histogram = committed_histogram(family)  # type: ignore[arg-type]
            out[family] = generate_routes(family, count, self.seed, histogram,  # type: ignore
                                          self.next_hops) if count else {}
        return out


@dataclass
class RoutedTables:
    """Loaded tables and the next hop -> port rule, with destination picking per port."""

    routes: dict[int, dict[tuple[int, int], int]]
    ports: int
    exclude: tuple[tuple[int, int], ...] = ()
    _picked: dict[tuple[int, int, int], DestinationSet] = field(default_factory=dict, repr=False)

    def port_of(self, hop: int) -> int:
        return hop % self.ports

    def destinations(self, family: int, out_port: int, count: int,
                     seed: int = 1) -> DestinationSet:
        """``count`` prefixes of the table whose next hop leaves on ``out_port``: the first
        of a seeded pick of the table's prefixes, the pick grown until enough leave there."""
        routes = self.routes.get(family) or {}
        if not routes:
            raise ValueError(f"the device has no IPv{family} routes")
        ask = min(len(routes), count * self.ports * 2 + 16)
        while True:
            every = self._pick(family, seed, ask)
            keep = [i for i, p in enumerate(every.prefixes)
                    if self.port_of(routes[(p.network, p.length)]) == out_port]
            if len(keep) >= count:
                break
            if len(every) < ask or ask == len(routes):
                raise ValueError(f"only {len(keep)} IPv{family} routes leave on port "
                                 f"{out_port}; asked for {count}")
            ask = min(len(routes), ask * 4)
        keep = keep[:count]
        return DestinationSet(family, tuple(every.prefixes[i] for i in keep),
                              tuple(every.free[i] for i in keep), every.routes, every.lengths)

    def _pick(self, family: int, seed: int, ask: int) -> DestinationSet:
        """``ask`` prefixes with addresses of their own (fewer when the table has fewer)."""
        key = (family, seed, ask)
        if key not in self._picked:
            routes = self.routes[family]
            try:
                picked = pick_destinations(routes, family, ask, seed, self.exclude)
            except ValueError as err:  # "the table has only N IPv4 prefixes ..."
                found = re.search(r"only (\d+)", str(err))
                if found is None or int(found.group(1)) == 0:
                    raise
                picked = pick_destinations(routes, family, int(found.group(1)), seed,
                                           self.exclude)
            self._picked[key] = picked
        return self._picked[key]

    def reference(self, models: Mapping[int, PortModel]) -> RouteReference:
        def link(hop: int, family: int) -> bytes:
            dmac, smac = next_hop_macs(hop)
            return dmac.to_bytes(6, "big") + smac.to_bytes(6, "big") + \
                ETHERTYPE[family].to_bytes(2, "big")

        return RouteReference(self.routes, self.port_of, link,
                              {p: m.framing for p, m in models.items()})


# --------------------------------------------------------------------------- counters
def chip_counters(counters: dict[str, Any], cycles: int) -> dict[str, float]:
    """Flat counters of ``chip.counters()``: busy/stall fractions of every ME that ran,
    memory channel busy fractions, port counters (over ``cycles``)."""
    out: dict[str, float] = {}
    span = max(1, cycles)
    for me in counters["mes"]:
        if me["instructions"]:
            n = me["number"]
            out[f"me{n}.busy_fraction"] = me["busy_cycles"] / span
            out[f"me{n}.stall_fraction"] = me["stalled_cycles"] / span
            out[f"me{n}.instructions"] = me["instructions"]
    channels = counters["channels"]
    for kind in ("sram", "dram"):
        for i, ch in enumerate(channels[kind]):
            out[f"{kind}{i}.busy_fraction"] = ch["busy_cycles"] / span
            out[f"{kind}{i}.commands"] = ch["commands"]
            out[f"{kind}{i}.bytes"] = ch["bytes"]
    out["scratch.busy_fraction"] = channels["scratch"]["busy_cycles"] / span
    for p, port in enumerate(counters["ports"]):
        for key in ("rx_frames", "tx_frames", "rx_dropped_rbuf_full", "rx_dropped_too_long",
                    "rbuf_high_water_elements"):
            if key in port:
                out[f"port{p}.{key}"] = port[key]
    return out


def _mean_of(counters: Mapping[str, float], mes: tuple[int, ...], what: str,
             raw: Mapping[str, Any]) -> float:
    """The mean of ``me<number>.<what>`` over ``mes``, ME indices (0..15, as a link's
    ``fwd_mes``) turned into the numbers the flat counters are keyed by (0..7, 16..23 on
    the IXP2800) through ``raw``, the chip's ``counters()``."""
    values = [counters.get(f"me{raw['mes'][m]['number']}.{what}", 0.0) for m in mes]
    return sum(values) / len(values) if values else 0.0


# --------------------------------------------------------------------------- chip runs
@dataclass
class _Loaded:
    """One trial's chip and how to count what it did with the frames."""

    chip: Any
    settled: Callable[[], int]  # frames dropped, excepted or receive-dropped so far
    drain: Callable[[], None]  # the slow path: take exceptions off their ring, free buffers
    finish: Callable[[], dict[str, float]]  # counters by reason
    fwd_mes: tuple[int, ...]
    # how the trial moves time on: the chip alone, or the chip with the XScale model beside
    # it (route updates landing while the frames flow); None: chip.run
    advance: Callable[[int], Any] | None = None
    # the same chip seen afresh (counts taken so far back to zero), for the next trial on
    # it after ``chip.restore``; None: the chip is not reused
    again: Callable[[], _Loaded] | None = None

    def step(self, cycles: int) -> None:
        if self.advance is None:
            self.chip.run(cycles=cycles)
        else:
            self.advance(cycles)


def _run_trial(loaded: _Loaded, traffic: Traffic, settle_ps: int,
               models: Mapping[int, PortModel]) -> tuple[list[RxRecord], dict[str, float], int]:
    """Feed the traffic, run to the end, return (records, counters, simulated ps).
    ``models`` are the tester's ports (``traffic.models``: ``last_bit_ps`` uses those)."""
    chip = loaded.chip
    sinks = attach(chip, traffic)
    last_ps = traffic.last_bit_ps()  # one Fraction per port and frame length, not per frame
    during = _run_until_done(loaded, sinks, traffic.count(), last_ps, settle_ps)
    counters = _counters(loaded, during)
    clock = chip.config.clock_hz
    frames = [f for port in sorted(sinks) for f in sinks[port].frames]
    return received(frames, clock), counters, round(chip.now * PS_PER_S / clock)


def _run_until_done(loaded: _Loaded, sinks: Mapping[int, Any], offered: int,
                    last_ps: Fraction, settle_ps: int) -> dict[str, Any]:
    """Run to the end of the traffic, then until every frame is accounted for or
    ``settle_ps`` has passed; the chip's counters at the end of the traffic."""
    chip = loaded.chip
    clock = chip.config.clock_hz
    traffic_end, deadline = _cycle(last_ps, clock), _cycle(last_ps + settle_ps, clock)
    while chip.now < traffic_end:
        loaded.step(min(STEP_CYCLES, traffic_end - chip.now))
        loaded.drain()
    during = chip.counters()  # busy fractions over the offered traffic's span
    while chip.now < deadline:
        out = sum(len(s.frames) for s in sinks.values())
        if out + loaded.settled() >= offered:
            break
        loaded.step(min(STEP_CYCLES, deadline - chip.now))
        loaded.drain()
    chip.close_sinks()
    return during


def stream_until_done(now: Callable[[], int], step: Callable[[int], None],
                      counters: Callable[[], dict[str, Any]], settled: Callable[[], int],
                      feeds: Sequence[tuple[BatchFeed, Any]], sink: AnalysisSink,
                      settle_ps: int, clock_hz: float,
                      run_steps: Callable[[list[int]], None] | None = None,
                      steps_ahead: int = 1) -> dict[str, Any]:
    """``_run_until_done`` for a streamed trial: each port's frames offered to its chip
    (``feeds``: the feed and the chip it offers to) before every ``step`` and the frames
    out analysed after it (``sink.flush``).  The steps are the held run's: ``STEP_CYCLES``
    until the traffic's last bit, then to it, then on until every frame is accounted for
    (out, or ``settled()``) or ``settle_ps`` has passed; ``counters()`` at the end of the
    traffic is returned.  The last bit is known once every port's generator is done;
    until then each port is generated ahead until a frame is known to be sent after the
    coming step (``BatchFeed.look_ahead``), so a full step never passes the traffic's end.

    ``run_steps(steps)``: until the traffic's end, up to ``steps_ahead`` of these steps at a
    time, each offering its own frames before it (e.g. ``System.run_steps``: each chip's
    steps on its own thread); the steps and flushes are the same."""
    traffic_end = deadline = None

    def run(cycles: int) -> None:
        for feed, chip in feeds:
            feed.offer_until(chip, now() + cycles)
        step(cycles)
        sink.flush(now())

    ahead = steps_ahead if run_steps is not None else 1
    while True:
        if traffic_end is None:
            for feed, _ in feeds:
                feed.look_ahead(now() + ahead * STEP_CYCLES)
            if all(feed.generated for feed, _ in feeds):
                last_ps = max((feed.last_bit_ps for feed, _ in feeds), default=Fraction(0))
                traffic_end = _cycle(last_ps, clock_hz)
                deadline = _cycle(last_ps + settle_ps, clock_hz)
        if traffic_end is not None and now() >= traffic_end:
            break
        if run_steps is None:
            run(STEP_CYCLES if traffic_end is None else min(STEP_CYCLES, traffic_end - now()))
            continue
        # the next ``ahead`` steps as one at a time would take them: a frame is known to be
        # sent after them (look_ahead), or the traffic's end is known
        steps, cycle = [], now()
        while len(steps) < ahead and (traffic_end is None or cycle < traffic_end):
            steps.append(STEP_CYCLES if traffic_end is None
                         else min(STEP_CYCLES, traffic_end - cycle))
            cycle += steps[-1]
        run_steps(steps)
        cycle = now() - sum(steps)
        for cycles in steps:  # the flushes one step at a time would have asked for
            cycle += cycles
            sink.flush(cycle)
    assert deadline is not None
    during = counters()
    offered = sum(feed.sent for feed, _ in feeds)
    while now() < deadline:
        if sink.written + settled() >= offered:
            break
        run(min(STEP_CYCLES, deadline - now()))
    return during


def _counters(loaded: _Loaded, during: dict[str, Any]) -> dict[str, float]:
    """Busy fractions over the traffic's span, counts over the whole run, drops by reason."""
    chip = loaded.chip
    counters = chip_counters(during, during["cycles"])
    counters["fwd.busy_fraction"] = _mean_of(counters, loaded.fwd_mes, "busy_fraction", during)
    counters["fwd.stall_fraction"] = _mean_of(counters, loaded.fwd_mes, "stall_fraction",
                                              during)
    counters.update(loaded.finish())
    final = chip.counters()
    counters.update({k: v for k, v in chip_counters(final, chip.now).items()
                     if k.startswith("port") or k.endswith((".commands", ".bytes",
                                                          ".instructions"))})
    fwd_instructions = sum(final["mes"][m]["instructions"] for m in loaded.fwd_mes)
    tx = sum(p["tx_frames"] for p in final["ports"])
    counters["fwd.instructions_per_frame"] = fwd_instructions / tx if tx else 0.0
    counters["sim.cycles"] = chip.now
    counters["sim.instructions"] = final["run"]["instructions_retired"]
    return counters


def _cycle(ps: Fraction | int, clock_hz: float) -> int:
    """The first whole cycle at or after ``ps``."""
    return int(-(-ps * Fraction(clock_hz) // PS_PER_S))


def trial_tally(trial: Trial, models: Mapping[int, PortModel]) -> TrialTally | None:
    """The tally of a streamed trial (None when the ports mix framings): the sending time
    is the streams' longest duration."""
    framings = {m.framing for m in models.values()}
    window = max((s.duration_ps for s in trial.streams if s.duration_ps is not None),
                 default=None)
    return TrialTally(framings.pop(), window) if len(framings) == 1 else None


def send_span(streams: Sequence[Any], ports: Mapping[int, PortModel]
              ) -> tuple[int, int] | None:
    """(first, last) send time of the streams' frames (None: no frame), from the C++
    generator's batches: their time columns only, nothing kept."""
    models, by_port = check_streams(streams, ports)
    ordered = [s for p in sorted(by_port) for s in by_port[p]]
    first = last = None
    for port_batches in batches(ordered, models).values():
        for batch in port_batches:
            if len(batch):  # a port's frames are in sending order
                low, high = int(batch.times_ps[0]), int(batch.times_ps[-1])
                first = low if first is None else min(first, low)
                last = high if last is None else max(last, high)
    return None if first is None or last is None else (first, last)


def held_span(traffic: Traffic) -> tuple[int, int] | None:
    sends = [r.time_ps for recs in traffic.ports.values() for r in recs]
    return (min(sends), max(sends)) if sends else None


@dataclass(frozen=True)
class ChipOptions:
    """Options shared by the chip devices."""

    port_kinds: tuple[str, ...] = ("10gbe", "10gbe")
    routes: RouteConfig = field(default_factory=RouteConfig)
    chip_seed: int = 1
    latency_bin_ps: int = 100_000
    next_hop_mtu: int = MTU  # POS links carry 1518-byte IP packets: give e.g. 4470


class _ChipDevice:
    """What both chip devices share: ports, tables, the trial loop."""

    name = "chip"

    def __init__(self, options: ChipOptions, streamed: bool = False) -> None:
        for kind in options.port_kinds:
            port_model(kind)  # a clear error for an unknown kind
        self.options = options
        # trials streamed (``run_streamed``: nothing held per frame; the NPF lab's) or
        # held (the Traffic and every received frame in the result: pcaps, showcases)
        self.streamed = streamed

    @property
    def ports(self) -> Mapping[int, PortModel]:
        return {p: port_model(k) for p, k in enumerate(self.options.port_kinds)}

    @cached_property
    def tables(self) -> RoutedTables:
        return RoutedTables(self.options.routes.tables(), len(self.options.port_kinds),
                            self._excluded())

    def _excluded(self) -> tuple[tuple[int, int], ...]:
        return ()

    def destinations(self, family: int, out_port: int, count: int,
                     seed: int = 1) -> DestinationSet:
        return self.tables.destinations(family, out_port, count, seed)

    @cached_property
    def reference(self) -> RouteReference:
        """The analyzer's reference of the loaded table (built once: its lookups are
        cached across trials, and a trial never changes the loaded table)."""
        return self.tables.reference(self.ports)

    def prepare(self) -> None:
        """Everything every trial shares, built now (tables, program, reference), then,
        for the first device a process prepares, frozen out of the garbage collector's
        sight (``gc.freeze``: they live as long as the run, and a full collection no
        longer walks them; once a process, so a frozen device that dies in a cycle leaks at
        most once).  The first trial calls it."""
        global _FROZEN
        if self.__dict__.get("_prepared"):
            return
        self._set_up()
        if not _FROZEN:
            gc.collect()
            gc.freeze()
            _FROZEN = True
        self.__dict__["_prepared"] = True

    def _set_up(self) -> None:
        self.reference  # noqa: B018 (builds the tables too)

    def _load(self) -> _Loaded:
        """A fresh chip with the program and the tables loaded."""
        raise NotImplementedError

    def _trial_chip(self) -> _Loaded:
        """The chip a trial runs on: the device loads one chip once and snapshots it
        (``Chip.snapshot``) before any frame; every later trial restores that snapshot
        (~1.4 ms on the NPF chip instead of a ~15 ms fresh load, docs/sim-core.md) and
        gets the chip exactly as loaded, so a trial's result is the fresh chip's."""
        base = self.__dict__.get("_base")
        if base is None:
            loaded = self._load()
            self.__dict__["_base"] = (loaded, loaded.chip.snapshot())
            return loaded
        loaded, snap = base
        if loaded.again is None:  # a view that cannot be seen afresh: a fresh chip
            return self._load()
        loaded.chip.restore(snap)
        return loaded.again()

    def run(self, trial: Trial) -> TrialResult:
        self.prepare()
        if self.streamed:
            return self.run_streamed(trial, self._trial_chip())
        traffic = generate(trial.streams, self.ports)
        return self._trial_on(self._trial_chip(), trial, traffic)

    def run_streamed(self, trial: Trial, loaded: _Loaded,
                     batch_frames: int = BATCH_FRAMES) -> TrialResult:
        """``_trial_on``'s trial with nothing held per frame (``stream_trial``: the C++
        generator's batches offered to the chip, the frames out analysed and tallied as
        they leave), run in the same steps to the same ends: the same report, counters and
        rates (tests/bench/lab/test_devices.py); ``traffic`` None, ``tally`` the per-port
        counts."""
        chip = loaded.chip
        models = self.ports
        tally = trial_tally(trial, models)
        streaming = stream_trial(chip, trial.streams, models, self.reference,
                                 self.options.latency_bin_ps, batch_frames=batch_frames,
                                 offer=True, tally=tally)
        feeds = [(feed, chip) for _, feed in sorted(streaming.feeds.items())]
        self.coverage_watch([chip])
        during = stream_until_done(lambda: chip.now, loaded.step, chip.counters,
                                   loaded.settled, feeds, streaming.sink, trial.settle_ps,
                                   chip.config.clock_hz)
        chip.close_sinks()
        self.coverage_take([chip])
        counters = _counters(loaded, during)
        report = streaming.report()
        clock = chip.config.clock_hz
        return TrialResult(report, None, list(streaming.sink.kept), counters,
                           round(chip.now * PS_PER_S / clock), tally)

    def _trial_on(self, loaded: _Loaded, trial: Trial, traffic: Traffic) -> TrialResult:
        """Run ``traffic`` on a loaded chip and analyze it against the loaded table."""
        models = self.ports
        self.coverage_watch([loaded.chip])
        rx, counters, sim_ps = _run_trial(loaded, traffic, trial.settle_ps, models)
        self.coverage_take([loaded.chip])
        analyzer = Analyzer(models, self.reference, self.options.latency_bin_ps)
        report = analyzer.analyze(traffic.records(), rx)
        return TrialResult(report, traffic, rx, counters, sim_ps)

    # ---- line coverage (npkit bench --coverage, docs/debugging.md)
    def record_coverage(self, folder: str | Path | None) -> None:
        """Count the line coverage of every chip a trial runs on, one lcov file per trial
        into ``folder`` (``runtime.coverage.CoverageSpool``; ``merge_lcov`` adds them up);
        None: off.  The folder goes with the device to dask workers (a shared file system
        for a remote scheduler).  Coverage changes no simulated result (docs/sim-core.md)."""
        self.__dict__["_coverage_dir"] = None if folder is None else str(folder)
        self.__dict__.pop("_coverage_sink", None)

    def _coverage_spool(self) -> Any:
        folder = self.__dict__.get("_coverage_dir")
        if folder is None:
            return None
        from npkit.runtime.coverage import CoverageSpool

        return self.__dict__.setdefault("_coverage_sink", CoverageSpool(folder))

    def coverage_watch(self, chips: Sequence[Any]) -> None:
        """Before a trial: its chips count coverage when the device records it."""
        spool = self._coverage_spool()
        if spool is not None:
            spool.watch(chips)

    def coverage_take(self, chips: Sequence[Any]) -> None:
        """After a trial: what its chips ran written to the coverage folder."""
        spool = self._coverage_spool()
        if spool is not None:
            spool.take(chips)

    def __getstate__(self) -> dict[str, Any]:
        # dask ships devices to workers: send the configuration, rebuild there (the set-up
        # is rebuilt too: the cached tables, program and images are not sent)
        state = {"options": self.options, "streamed": self.streamed, **self._config_state()}
        if self.__dict__.get("_coverage_dir") is not None:
            state["_coverage_dir"] = self.__dict__["_coverage_dir"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        folder = state.pop("_coverage_dir", None)
        self.__init__(**state)  # type: ignore[misc]
        self.record_coverage(folder)

    def _config_state(self) -> dict[str, Any]:
        return {}


class CompiledChipDevice(_ChipDevice):
    """An MBL pipeline compiled by the ME backend, on the simulated IXP2800."""

    def __init__(self, options: ChipOptions | None = None, *,
                 source: str | Path | None = None, entry: str = "router",
                 fwd_mes_per_port: int = 4, streamed: bool = False) -> None:
        super().__init__(options or ChipOptions(), streamed)
        self.source = Path(source) if source is not None else example_path("router",
                                                                           "router.mbl")
        self.entry = entry
        # 4 ports fit the chip's 16 MEs with 2 forwarding MEs a port (npkit.link)
        four_ports = len(self.options.port_kinds) == 4
        self.fwd_mes_per_port = min(fwd_mes_per_port, 2) if four_ports else fwd_mes_per_port
        self.name = f"compiled:{self.source.stem}:{entry}"

    def _config_state(self) -> dict[str, Any]:
        return {"source": self.source, "entry": self.entry,
                "fwd_mes_per_port": self.fwd_mes_per_port}

    def __getstate__(self) -> dict[str, Any]:
        # ship the linked program too: every worker then runs the very images this process
        # built (the compiler's output is not promised to be the same in another process)
        return {**super().__getstate__(), "linked": self.linked}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        linked = state.pop("linked", None)
        super().__setstate__(state)
        if linked is not None:
            self.__dict__["linked"] = linked

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {"device": "compiled", "source": self.source.name, "entry": self.entry,
                "fwd_mes_per_port": self.fwd_mes_per_port, "port_kinds": list(o.port_kinds),
                "chip": "ixp2800", "chip_seed": o.chip_seed, "v4_routes": o.routes.v4_routes,
                "v6_routes": o.routes.v6_routes, "route_seed": o.routes.seed,
                "next_hops": o.routes.next_hops, "next_hop_port": "next hop % ports",
                "next_hop_mtu": o.next_hop_mtu, "route_source": _route_source(o.routes)}

    @cached_property
    def linked(self) -> Any:
        """The Manifest (npkit.link) of the entry linked for the options' ports: the
        program compiled once for the MEs and linked once, whatever the trials."""
        from npkit.compiler.me import compile_me
        from npkit.link import for_ports, link

        program = self.program
        return link(program, compile_me(program, self.entry),
                    for_ports(tuple(self.options.port_kinds)),
                    fwd_mes_per_port=self.fwd_mes_per_port)

    @cached_property
    def program(self) -> Any:
        """The checked MBL program, compiled in this process (``linked`` comes from it,
        and so do the native shadows); never pickled: a program unpickled on a worker
        cannot be lowered again (the checker's types are keyed by node identity), so a
        worker that got ``linked`` compiles its own."""
        from npkit.compiler.mbl import compile_file

        return compile_file(self.source)

    @cached_property
    def native(self) -> Any:
        """A NativeProgram of the program holding the device's tables (next hops, both
        tries) in the native packing, which is the chip's."""
        from npkit.compiler.mbl import NativeProgram
        from npkit.runtime.lpm import RouteTables

        native = NativeProgram(self.program)
        for hop in range(self.options.routes.next_hops):
            dmac, smac = next_hop_macs(hop)
            native.write("nexthops", hop, {"dmac": dmac, "smac": smac,
                                           "port": self.tables.port_of(hop),
                                           "mtu": self.options.next_hop_mtu})
        RouteTables.of(native).load(self.tables.routes[4], self.tables.routes[6])
        return native

    @cached_property
    def loadable(self) -> Any:
        """The linked manifest with the tables' memory words in it (``link.build``'s
        ``memory_specs``: every memory of ``native``, trailing zero words left out, as
        ``npkit build --images`` writes them): what a trial's chip is built from.  Built
        once; the NativeProgram it came from is then dropped."""
        from npkit.link.build import memory_specs

        linked = self.linked
        tables = memory_specs(linked.program, self.native)
        self.__dict__.pop("native", None)  # 100+ MB of table words, no longer needed
        return replace(linked, memory=[*linked.memory, *tables])

    def _set_up(self) -> None:
        super()._set_up()
        self.loadable  # noqa: B018

    def _load(self) -> _Loaded:
        from npkit.runtime.compiled import CompiledRun

        return self._loaded(CompiledRun(self.loadable, seed=self.options.chip_seed))

    def _loaded(self, run: Any, advance: Callable[[int], Any] | None = None,
                linked: Any = None) -> _Loaded:
        """A trial's view of a CompiledRun (also a CompiledRouter's): drops, exceptions,
        the forwarding MEs of ``linked`` (the manifest the run was built from; default
        ``self.linked``)."""
        program = (linked if linked is not None else self.linked).program
        names = program.exceptions
        taken: dict[str, float] = {}

        def drain() -> None:
            for exc in run.take_exceptions():
                key = f"exception.{names.get(exc.code, exc.code)}"
                taken[key] = taken.get(key, 0) + 1

        def settled() -> int:
            return int(sum(taken.values())) + sum(run.drop_counts().values()) + \
                sum(run.receive_drops().values())

        def finish() -> dict[str, float]:
            drain()
            out: dict[str, float] = {f"drop.{k}": v for k, v in run.drop_counts().items()}
            out.update({f"rx.{k}": v for k, v in run.receive_drops().items()})
            return {**out, **taken}

        return _Loaded(run.chip, settled, drain, finish, tuple(program.fwd_mes),
                       advance, lambda: self._loaded(run, advance, linked))

    # ---- the control plane (npf.UpdatableDevice) ----
    @cached_property
    def spare_routes(self) -> dict[int, dict[tuple[int, int], int]]:
        """Routes the device did not load, for the update streams' adds."""
        from npkit.bench.lab.updates import spare_routes

        return spare_routes(self.options.routes, self.tables.routes, SPARE_ROUTES)

    def updatable_router(self) -> Any:
        """The device's program and tables on a fresh chip with the XScale control plane
        beside it (``runtime.compiled_router.CompiledRouter``): next hops and routes set
        through the control plane, copied in at load time."""

        from npkit.runtime.compiled_router import CompiledRouter
        from npkit.runtime.neighbours import NextHop

        # the router's shadow is a NativeProgram of the program (compiled once per device,
        # its memories cleared for each router: the control plane fills them again)
        shadow = self._shadow
        for words in shadow.memory.values():
            words.fill(0)
        router = CompiledRouter(linked=self.linked, shadow=shadow,
                                seed=self.options.chip_seed, exception_path=False)
        for hop in range(self.options.routes.next_hops):
            dmac, smac = next_hop_macs(hop)
            router.control.nexthops.set(hop, NextHop(dmac, smac, self.tables.port_of(hop),
                                                     self.options.next_hop_mtu))
        families = router.families
        router.control.routes.reload(self.tables.routes[4] if 4 in families else None,
                                     self.tables.routes[6] if 6 in families else None)
        router.load_tables()
        return router

    @cached_property
    def _shadow(self) -> Any:
        from npkit.compiler.mbl import NativeProgram

        return NativeProgram(self.program)

    def update_stream(self, family: int, count: int, seed: int,
                      protected: tuple[tuple[int, int], ...] = ()) -> list[Any]:
        """``bench.lab.updates.update_stream`` on the device's table (at least ``count``)."""
        from npkit.bench.lab.updates import update_stream

        return update_stream(self.tables.routes[family], self.spare_routes[family], family,
                             -(-count // 6) * 6, seed, protected,
                             self.options.routes.next_hops)

    def measure_update_rate(self, family: int, updates: int, seed: int) -> float:
        """Updates per second of simulated time, ``updates`` of the device's stream back to
        back on the XScale model, no traffic (``compiled_router.update_rate``)."""
        from npkit.runtime.compiled_router import update_rate

        if updates < 1:
            raise ValueError(f"updates must be >= 1, got {updates}")
        stream = self.update_stream(family, updates, seed)[:updates]
        return update_rate(self.updatable_router(), stream).per_second

    def run_with_updates(self, trial: Trial, family: int, updates_per_s: float,
                         seed: int, stream: Sequence[Any] | None = None) -> TrialResult:
        """``trial`` while updates of ``family`` arrive every 1 / ``updates_per_s`` s from
        the first frame's send time until the last's.  The updates (``update_stream``)
        never touch the trial's exercised prefixes nor prefixes inside them, so the
        analyzer's reference of the loaded table stays exact; ``stream`` replaces them
        (the analyzer still judges by the loaded table: a given stream that changes the
        traffic's routes shows as misrouted frames).  Counters add
        ``updates.scheduled``, ``updates.landed`` (last word visible before the run
        ended) and ``updates.words``."""
        from npkit.runtime.compiled_router import at_rate

        if updates_per_s <= 0:
            return self.run(trial)
        traffic = None if self.streamed else generate(trial.streams, self.ports)
        span = send_span(trial.streams, self.ports) if traffic is None else \
            held_span(traffic)
        if span is None:
            return self.run(trial)
        first, last = span
        count = 1 + int((last - first) * Fraction(str(updates_per_s)) // PS_PER_S)
        if stream is None:
            stream = self.update_stream(family, count, seed, _exercised(trial, family))
        stream = list(stream)[:count]
        router = self.updatable_router()
        at_rate(router, stream, updates_per_s, _cycle(first, router.chip.config.clock_hz))
        loaded = self._loaded(router.compiled, lambda cycles: router.cp.run(cycles=cycles))
        result = self.run_streamed(trial, loaded) if traffic is None else \
            self._trial_on(loaded, trial, traffic)
        landed = [r for r in router.records if r.end <= router.chip.now]
        result.counters.update({"updates.scheduled": len(stream),
                                "updates.landed": len(landed),
                                "updates.words": sum(r.words for r in landed)})
        return result


def _exercised(trial: Trial, family: int) -> tuple[tuple[int, int], ...]:
    """The prefixes ``trial``'s streams send to, of ``family``."""
    out: set[tuple[int, int]] = set()
    for stream in trial.streams:
        prefixes = getattr(stream.destinations.get(family), "prefixes", ())
        out.update((p.network, p.length) for p in prefixes)
    return tuple(sorted(out))


def _route_source(routes: Any) -> str:
    """Where the tables come from (a sampled table says which file)."""
    origin = getattr(routes, "origin", None)
    return origin() if callable(origin) else "generated, committed prefix-length histogram"


class Router4Device(_ChipDevice):
    """examples/router4: the hand-written IPv4 router (router4.toml), the baseline.  It
    forwards IPv4 only (IPv6 frames are dropped as not_ipv4, so the reference has no IPv6
    routes) on its two 10GbE ports."""

    name = "router4"

    def __init__(self, options: ChipOptions | None = None, streamed: bool = False) -> None:
        options = options or ChipOptions()
        if options.port_kinds != ("10gbe", "10gbe"):
            raise ValueError("router4 has exactly two 10GbE ports")
        super().__init__(options, streamed)

    def _excluded(self) -> tuple[tuple[int, int], ...]:
        return ((ROUTER4_ADDRESS, 32),)

    @cached_property
    def tables(self) -> RoutedTables:
        routes = self.options.routes.tables()
        routes[6] = {}
        return RoutedTables(routes, 2, self._excluded())

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {"device": "router4", "manifest": "examples/router4/router4.toml",
                "port_kinds": list(o.port_kinds), "chip": "ixp2800",
                "v4_routes": o.routes.v4_routes, "route_seed": o.routes.seed,
                "next_hops": o.routes.next_hops, "next_hop_port": "next hop % ports",
                "next_hop_mtu": o.next_hop_mtu}

    def _load(self) -> _Loaded:
        from npkit.microblocks.uc import router4 as r4
        from npkit.runtime.loader import load_manifest
        from npkit.runtime.lpm import IPV4, MultibitTrie

        chip = load_manifest(r4.MANIFEST).chip
        MultibitTrie(IPV4, r4.trie_view(chip)).build(self.tables.routes[4])
        for hop in range(self.options.routes.next_hops):
            dmac, smac = next_hop_macs(hop)
            r4.write_next_hop(chip, hop, dmac, smac, self.tables.port_of(hop),
                              self.options.next_hop_mtu)
        r4.local4_add(chip, ROUTER4_ADDRESS)
        return self._view(chip)

    def _view(self, chip: Any) -> _Loaded:
        """A trial's view of a loaded router4 chip: drops and exceptions from zero."""
        from npkit.microblocks.uc import router4 as r4

        taken: dict[str, float] = {}

        def drops() -> dict[str, int]:
            counts = r4.counters(chip)
            for p, port in enumerate(chip.counters()["ports"]):
                counts[f"rx_dropped_rbuf_full{p}"] = port["rx_dropped_rbuf_full"]
            return {k: v for k, v in counts.items()
                    if v and k not in ("ip_forwarded", "tx_race0", "tx_race1")}

        def drain() -> None:
            while (exc := r4.take_exception(chip)) is not None:
                key = f"exception.{exc.code}"
                taken[key] = taken.get(key, 0) + 1

        def settled() -> int:
            return int(sum(taken.values())) + sum(drops().values())

        def finish() -> dict[str, float]:
            drain()
            return {**{f"drop.{k}": v for k, v in drops().items()}, **taken}

        return _Loaded(chip, settled, drain, finish, (2, 3, 4, 5),
                       again=lambda: self._view(chip))

