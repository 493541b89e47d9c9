"""The compiled router on a simulated *system* (``npkit.runtime.system``): several chips,
the tester's ports being the system's external ports (docs/system.md, docs/lab.md).

``SystemChipDevice`` is a ``CompiledChipDevice`` whose trials run on a ``System`` built from
a system file (``dual-ixp2800-npf``: two IXP2800s, chip ``east`` receives pos0 and transmits
pos1, ``west`` receives pos1 and transmits pos0).  Every chip runs the same compiled router
with the same route tables; only the next-hop table's port field differs per chip: next
hop *h* leaves on external port ``h % ports``, and each chip's table names the chip port
that stands for that line on it (``SystemSpec.chip_port_of``: the port that transmits it,
else the one that receives it).  A frame a chip sends to a port whose transmit side leads
nowhere (east's chip port 0 in the dual system: pos0 is transmitted by west) is counted as
a named loss, ``loss.unconnected (<chip> port <p>)``, never silently dropped.

Per trial the counters carry, per chip, the same flat counters a single chip gives
(``devices.chip_counters``) prefixed with the chip's name (``east.me4.busy_fraction``,
``west.dram1.bytes``, ``east.port1.tx_frames``), the chip's drops by reason with the chip
named (``drop.no_route (east)``, ``rx.rx_dropped_rbuf_full0 (west)``),
and unprefixed summaries: ``fwd.busy_fraction`` of the chip whose forwarding MEs are the
busiest, ``fwd.instructions_per_frame`` over the whole system, ``sim.cycles`` and
``sim.instructions``.  ``unit_use.dram_bytes_per_packet`` reports the worst chip.

Every chip is loaded once and snapshotted; a trial restores the snapshots and builds a new
``System`` over the chips (as ``CompiledChipDevice``: the fresh system's results).  The
``fwd.*`` counters of a chip average that chip's own forwarding MEs (its link's).

``threads`` > 1 runs the chips of a system with no chip-to-chip link on that many host
threads (``System(threads=...)``): the same frames and counters as the serial run, bit for
bit (tests/bench/lab/test_system_device.py).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from fractions import Fraction
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import numpy as np

from npkit.bench.lab.device import Trial, TrialResult
from npkit.bench.lab.devices import (
    STEP_CYCLES,
    ChipOptions,
    CompiledChipDevice,
    _cycle,
    _Loaded,
    _mean_of,
    chip_counters,
    held_span,
    next_hop_macs,
    send_span,
    stream_until_done,
    trial_tally,
)
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.tester import Analyzer, Traffic, generate
from npkit.bench.tester.chip import BatchFeed, received, sources, streaming
from npkit.bench.tester.fast import Batch
from npkit.bench.tester.media import PS_PER_S
from npkit.runtime.system import System, SystemConfigError, SystemSpec
from npkit.sim.packets import ListSink

DEFAULT_SYSTEM = "dual-ixp2800-npf"
ONE_RX_FWD_MES = 8  # forwarding MEs of a one-receive-port chip: measured, docs/link.md
# The data paths a chip that receives one port can run (docs/datapath.md): "rings" =
# rx_eth.uc, a forwarding chain per ring, tx_eth.uc; "pool" = the compiled IXA-class path,
# every ME receives, forwards and transmits (npkit.link.pool), POOL_MES of them, with
# pool.uc's own receive and transmit (the hand baseline); "pool-mbl" = the pool with the
# receive and transmit written in MBL (frame_rx / frame_tx: the program's MBL_MEDIA
# variant): the default where the program has that variant (default_data_path; line rate
# at every size of the NPF preset, as pool; "rings" tops out at 72 % at 40 B, docs/lab.md).
DATA_PATHS = ("rings", "pool", "pool-mbl")
# program file -> its variant with MBL receive and transmit stages, and that entry
MBL_MEDIA = {"pos_router.mbl": ("media_pos_router.mbl", "media_pos_router")}
POOL_MES = 16
# A streamed system trial's generator batches (frames per port): small enough that the
# frames are generated a few steps ahead beside the chips, not all before the first step
SYSTEM_BATCH_FRAMES = 4_096
GENERATE_AHEAD = 2 * STEP_CYCLES  # cycles past a step generated during it
# with threads, the lab steps the chips run between two meetings of their threads until
# the traffic's end (System.run_steps; the steps themselves are the lab's)
STEPS_PER_MEETING = 8
SINGLE_SYSTEM = "single-ixp2800"  # the lab's single chip (CompiledChipDevice, no framers)


class _OnlyMemory:
    """A NativeProgram seen through one memory: ``link.build.memory_specs`` of it gives
    that memory's manifest entries only."""

    def __init__(self, native: Any, name: str) -> None:
        self.native = native
        self.name = name

    def region(self, name: str) -> Any:
        if name == self.name:  # a copy: the next chip's table is written over the region
            return np.array(self.native.region(name), dtype=np.uint32)
        return np.zeros(0, dtype=np.uint32)


def default_data_path(source: str | Path | None) -> str:
    """The data path of a chip that receives one port when none is asked for: ``pool-mbl``
    (receive and transmit compiled from MBL) for a program with such a variant
    (``MBL_MEDIA``), else ``pool``."""
    name = Path(source).name if source is not None else "router.mbl"
    return "pool-mbl" if name in MBL_MEDIA or name in dict(MBL_MEDIA.values()) else "pool"


def _mbl_media(source: str | Path | None) -> dict[str, Any]:
    """The source and entry of the program's variant with MBL receive and transmit."""
    name = Path(source).name if source is not None else "router.mbl"
    variants = dict(MBL_MEDIA.values())
    if name in variants:  # already the variant: a device rebuilt from its state (pickle)
        return {"source": source, "entry": variants[name]}
    if name not in MBL_MEDIA:
        raise LabConfigError(f"data path pool-mbl: {name} has no variant with MBL receive "
                             f"and transmit (known: {', '.join(MBL_MEDIA)})")
    file, entry = MBL_MEDIA[name]
    return {"source": Path(source).with_name(file) if source is not None else file,
            "entry": entry}


class SystemChipDevice(CompiledChipDevice):
    """The compiled router on every chip of a system (``system``: a shipped name or a
    path), the tester on the system's external ports."""

    name = "system"

    def __init__(self, options: ChipOptions | None = None, *,
                 system: str | Path = DEFAULT_SYSTEM, threads: int = 1,
                 chip_fwd_mes: int | None = None, data_path: str | None = None,
                 streamed: bool = True, **compiled: Any) -> None:
        # trials streamed (run_streamed: nothing held per frame) or held (run_traffic: the
        # Traffic and every received frame kept in the result, e.g. to write pcaps)
        data_path = data_path or default_data_path(compiled.get("source"))
        if data_path not in DATA_PATHS:
            raise LabConfigError(f"data path {data_path!r}: use one of {', '.join(DATA_PATHS)}")
        if data_path == "pool-mbl":
            compiled = {**compiled, **_mbl_media(compiled.get("source"))}
        super().__init__(options, streamed=streamed, **compiled)
        self.system = str(system)
        self.threads = threads
        self.data_path = data_path
        # forwarding MEs of a chip that receives one port (plan.py, "one receive port");
        # a chip that receives every port keeps fwd_mes_per_port
        self.chip_fwd_mes = ONE_RX_FWD_MES if chip_fwd_mes is None else chip_fwd_mes
        try:
            spec = SystemSpec.load(self.system)
        except SystemConfigError as err:
            raise LabConfigError(str(err)) from None
        kinds = tuple(p.kind for p in spec.ports)
        if kinds != tuple(self.options.port_kinds):
            raise LabConfigError(f"system {spec.name}: external ports "
                                 f"{', '.join(kinds)}; the device was given "
                                 f"{', '.join(self.options.port_kinds)}")
        missing = [p.name for p in spec.ports if p.rx is None or p.tx is None]
        if missing:
            raise LabConfigError(f"system {spec.name}: external port {missing[0]} does not "
                                 "both receive and transmit; the lab's ports are full duplex")
        self.spec = spec
        self.name = f"{self.name}:{spec.name}"

    def _config_state(self) -> dict[str, Any]:
        return {**super()._config_state(), "system": self.system, "threads": self.threads,
                "chip_fwd_mes": self.chip_fwd_mes, "data_path": self.data_path}

    def __getstate__(self) -> dict[str, Any]:
        # a worker runs the very images this process linked for the chips (as ``linked``)
        self.chip_loadables  # noqa: B018 (links every chip's program)
        return {**super().__getstate__(), "chip_links": self.__dict__["_chip_links"]}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        links = state.pop("chip_links", None)
        super().__setstate__(state)
        if links is not None:
            self.__dict__["_chip_links"] = links

    def describe(self) -> dict[str, Any]:
        spec = self.spec
        return {**super().describe(), "device": "compiled-system", "system": spec.name,
                "chips": [c.name for c in spec.chips],
                "wiring": {p.name: {"rx": str(p.rx), "tx": str(p.tx),
                                    "framer": p.framer.kind,
                                    "rx_delay_ns": p.framer.rx_delay_ns,
                                    "tx_delay_ns": p.framer.tx_delay_ns}
                           for p in spec.ports},
                "threads": self.threads, "data_path": self.data_path,
                "chip_mapping": {c.name: self.chip_mapping(c.name) for c in spec.chips}}

    def receives_one_port(self, chip: str) -> bool:
        """Whether ``chip`` receives on its port 0 alone (a chip of the dual system)."""
        ports = {p.rx.port for p in self.spec.ports if p.rx is not None and p.rx.chip == chip}
        ports |= {lk.dst.port for lk in self.spec.links if lk.dst.chip == chip}
        return ports == {0} and self.spec.chip(chip).ports == 2

    def chip_mapping(self, chip: str) -> dict[str, Any]:
        """How ``chip``'s program is linked: its platform, receive ports, forwarding MEs."""
        one = self.receives_one_port(chip)
        pool = one and self.data_path in ("pool", "pool-mbl")
        return {"platform": self.spec.chip(chip).platform, "rx_ports": 1 if one else None,
                "fwd_mes_per_port": self.chip_fwd_mes if one else self.fwd_mes_per_port,
                "pool_mes_per_port": POOL_MES if pool else None}

    @cached_property
    def me_build(self) -> Any:
        """The entry compiled for the MEs, once for every chip's link."""
        from npkit.compiler.me import compile_me
        from npkit.compiler.me.abi import LM_WINDOW_ABI

        # a receive stage compiles only for the pool's body (the window in local memory)
        return compile_me(self.program, self.entry,
                          LM_WINDOW_ABI if self.data_path == "pool-mbl" else None)

    @cached_property
    def linked(self) -> Any:
        """As ``CompiledChipDevice.linked``, from ``me_build`` (for ``pool-mbl`` a receive
        stage's body, which the platform links as the pool: docs/link.md)."""
        from npkit.link import for_ports, link

        return link(self.program, self.me_build, for_ports(tuple(self.options.port_kinds)),
                    fwd_mes_per_port=self.fwd_mes_per_port)

    def chip_linked(self, chip: str) -> Any:
        """The program linked for ``chip`` (one link per distinct mapping)."""
        from npkit.link import link, load_platform

        how = self.chip_mapping(chip)
        key = tuple(sorted(how.items()))
        cache = self.__dict__.setdefault("_chip_links", {})
        if key not in cache:
            cache[key] = link(self.program, self.me_build, load_platform(how["platform"]),
                              fwd_mes_per_port=how["fwd_mes_per_port"],
                              rx_ports=how["rx_ports"],
                              pool_mes_per_port=how["pool_mes_per_port"])
        return cache[key]

    # ---- set-up, once per device
    def chip_port_map(self, chip: str) -> dict[int, int]:
        """External port index -> the chip port its next hops name on ``chip``; a line
        the chip does not touch goes to a port whose transmit side leads nowhere."""
        nowhere = self.spec.unconnected(chip)
        out = {}
        for index, ext in enumerate(self.spec.ports):
            port = self.spec.chip_port_of(chip, ext.name)
            if port is None:
                if not nowhere:
                    raise LabConfigError(f"system {self.spec.name}: chip {chip} has no port "
                                         f"for {ext.name} and none that leads nowhere")
                port = nowhere[0]
            out[index] = port
        return out

    @cached_property
    def chip_loadables(self) -> dict[str, Any]:
        """Per chip, the linked manifest with the tables' words (as ``loadable``) and that
        chip's next-hop table, placed on the system's chip (``SystemSpec.place_manifest``).
        Built once; the NativeProgram is then dropped."""
        from npkit.link.build import memory_specs

        native = self.native
        out = {}
        for chip in self.spec.chips:
            linked = self.chip_linked(chip.name)
            shared = [m for m in memory_specs(linked.program, native)
                      if m.where != "memory nexthops"]
            ports = self.chip_port_map(chip.name)
            for hop in range(self.options.routes.next_hops):
                dmac, smac = next_hop_macs(hop)
                native.write("nexthops", hop, {"dmac": dmac, "smac": smac,
                                               "port": ports[self.tables.port_of(hop)],
                                               "mtu": self.options.next_hop_mtu})
            hops = memory_specs(linked.program, _OnlyMemory(native, "nexthops"))
            manifest = replace(linked, memory=[*linked.memory, *shared, *hops])
            out[chip.name] = self.spec.place_manifest(chip.name, manifest)
        # the NativeProgram is not needed for the chips any more; the update tests'
        # routers need shadows of the same program (their memories cleared): it becomes
        # the first, one LLVM JIT compile less (chip_shadow)
        self.__dict__["_spare_native"] = self.__dict__.pop("native")
        return out

    def _set_up(self) -> None:
        self.reference  # noqa: B018 (builds the tables too)
        self.chip_loadables  # noqa: B018

    # ---- a trial
    def run(self, trial: Trial) -> TrialResult:
        self.prepare()
        if self.streamed:
            return self.run_streamed(trial, self.restored())
        traffic = generate(trial.streams, self.ports)
        return self.run_traffic(trial, traffic, self.restored())

    def load(self) -> tuple[System, dict[str, _Loaded]]:
        """A fresh system: every chip built from its manifest, with the tables."""
        return self._system(self._runs())

    def restored(self) -> tuple[System, dict[str, _Loaded]]:
        """The system a trial runs on: every chip loaded once and snapshotted before any
        frame (as ``CompiledChipDevice``), restored for every later trial, and a new
        ``System`` over them (its links, collectors and port counts start afresh)."""
        base = self.__dict__.get("_base_runs")
        if base is None:
            runs = self._runs()
            self.__dict__["_base_runs"] = (runs, {n: r.chip.snapshot() for n, r in runs.items()})
            return self._system(runs)
        runs, snaps = base
        for name, run in runs.items():
            run.chip.restore(snaps[name])
        return self._system(runs)

    def _runs(self) -> dict[str, Any]:
        """Every chip built from its manifest, with the tables (``CompiledRun`` per chip)."""
        from npkit.runtime.compiled import CompiledRun

        return {name: CompiledRun(manifest, seed=self.options.chip_seed)
                for name, manifest in self.chip_loadables.items()}

    def _system(self, runs: dict[str, Any]) -> tuple[System, dict[str, _Loaded]]:
        system = System(self.spec, {n: r.chip for n, r in runs.items()},
                        threads=self.threads)
        return system, {n: self._loaded(r, linked=self.chip_linked(n)) for n, r in runs.items()}

    def run_traffic(self, trial: Trial, traffic: Traffic,
                    loaded_system: tuple[System, dict[str, _Loaded]] | None = None
                    ) -> TrialResult:
        system, loaded = loaded_system or self.load()
        models = self.ports
        names = [p.name for p in self.spec.ports]
        for port, source in sources(traffic).items():
            system.attach_source(names[port], source)
        sinks = {i: ListSink() for i in range(len(names))}
        for index, sink in sinks.items():
            system.attach_sink(names[index], sink)
        last_ps = traffic.last_bit_ps()  # a Fraction per port and frame length, not frame
        self.coverage_watch(list(system.chips.values()))
        during = _run_until_done(system, loaded, sinks, traffic.count(), last_ps,
                                 trial.settle_ps)
        self.coverage_take(list(system.chips.values()))
        counters = system_counters(system, loaded, during)
        clock = system.clock_hz
        frames = [f for port in sorted(sinks) for f in sinks[port].frames]
        rx = received(frames, clock)
        analyzer = Analyzer(models, self.reference, self.options.latency_bin_ps)
        report = analyzer.analyze(traffic.records(), rx)
        return TrialResult(report, traffic, rx, counters, round(system.now * PS_PER_S / clock))

    def run_streamed(self, trial: Trial,
                     loaded_system: tuple[System, dict[str, _Loaded]] | None = None,
                     batch_frames: int = SYSTEM_BATCH_FRAMES) -> TrialResult:
        """``run_traffic``'s trial with nothing held per frame: the C++ generator's batches
        offered to the chips (``BatchFeed``, the framer's delay added), every frame out
        analysed and tallied as it leaves (``AnalysisSink``), run in the same steps to the
        same ends, so the report and counters are ``run_traffic``'s
        (tests/bench/lab/test_system_device.py); ``traffic`` None, ``tally`` the per-port
        counts.  ``batch_frames``: frames per generator batch (memory per port)."""
        system, loaded = loaded_system or self.load()
        models = self.ports
        tally = trial_tally(trial, models)
        parts = streaming(trial.streams, models, self.reference, system.clock_hz,
                          self.options.latency_bin_ps, batch_frames=batch_frames, offer=True,
                          tally=tally)
        feeds = []
        for port, feed in sorted(parts.feeds.items()):
            ext = self.spec.ports[port]
            assert ext.rx is not None  # checked in __init__: every port receives
            feed.port = ext.rx.port
            feed.delay_cycles = round(ext.framer.rx_delay_ns * 1e-9 * system.clock_hz)
            feeds.append((feed, system.chips[ext.rx.chip]))
        for ext in self.spec.ports:
            system.attach_sink(ext.name, parts.sink)
        # each step's analysis (sink.flush) runs during the next step, beside the chips
        # (System.run's beside: on a host thread of its own with threads); only this
        # trial touches the sink between steps, so it sees the frames it would have.  The
        # generated frames are registered with the analysis there too, each just before
        # the first flush that can see it come out (not all on this thread before the
        # first step)
        deferred = _DeferredFlush(parts.sink, system.clock_hz)
        for feed, _ in feeds:
            deferred.register = feed.on_batch
            feed.on_batch = deferred.sent

        def ahead(cycle: int) -> None:  # generate beside the chips, as far as ``cycle``
            for feed, _ in feeds:
                feed.look_ahead(cycle)

        def step(cycles: int) -> None:
            # beside the chips: the last step's analysis, then the frames of the steps
            # after this one generated (stream_until_done would generate them on this
            # thread, between the steps; generating early changes no step: its end is
            # known sooner, and a step never passes it, BatchFeed.look_ahead)
            pending, cycle = deferred.pending(), system.now + cycles + GENERATE_AHEAD
            system.run(cycles, beside=lambda: _both(pending, lambda: ahead(cycle)))
            for one in loaded.values():
                one.drain()

        def settled() -> int:
            return sum(one.settled() for one in loaded.values()) + \
                sum(system.unconnected.values())

        # with threads, several steps a meeting: each chip's feeds offered and its
        # exceptions taken on its own thread, the generation beside them under a lock a
        # feed (it only appends batches the offers have not reached: look_ahead before)
        locks = {id(feed): threading.Lock() for feed, _ in feeds}
        chip_of = {id(chip): name for name, chip in system.chips.items()}
        mine: dict[str, list[tuple[BatchFeed, Any]]] = {name: [] for name in system.chips}
        for feed, chip in feeds:
            mine[chip_of[id(chip)]].append((feed, chip))

        def offer(name: str) -> Callable[[int], None]:
            def work(cycle: int) -> None:
                for feed, chip in mine[name]:
                    with locks[id(feed)]:
                        feed.offer_until(chip, cycle)
            return work

        def locked_ahead(cycle: int) -> None:
            for feed, _ in feeds:
                with locks[id(feed)]:
                    feed.look_ahead(cycle)

        def steps(sizes: list[int]) -> None:
            # beside them, one piece at a time: the flushes asked so far, each its own
            # piece, then the generation of the next meeting's steps and GENERATE_AHEAD more
            pending = deferred.pieces()
            cycle = system.now + sum(sizes) + STEPS_PER_MEETING * STEP_CYCLES + GENERATE_AHEAD
            system.run_steps(sizes, {name: offer(name) for name in mine},
                             {name: one.drain for name, one in loaded.items()},
                             beside=[*pending, lambda: locked_ahead(cycle)])

        self.coverage_watch(list(system.chips.values()))
        during = stream_until_done(lambda: system.now, step, system.counters, settled, feeds,
                                   deferred, trial.settle_ps, system.clock_hz,
                                   run_steps=steps if system.threads > 1 else None,
                                   steps_ahead=STEPS_PER_MEETING)
        deferred.finish()
        system.close_sinks()
        self.coverage_take(list(system.chips.values()))
        counters = system_counters(system, loaded, during)
        report = parts.report()
        return TrialResult(report, None, list(parts.sink.kept), counters,
                           round(system.now * PS_PER_S / system.clock_hz), tally)

    # ---- the control plane (npf.UpdatableDevice), on every chip
    def chip_shadow(self, chip: str) -> Any:
        """``chip``'s routers' host shadow, a NativeProgram of the program (JIT-compiled
        once per chip and device, its memories cleared by each router that takes it: the
        control plane fills them again); the first is the NativeProgram the chips'
        tables were packed in."""
        from npkit.compiler.mbl import NativeProgram

        shadows = self.__dict__.setdefault("_shadows", {})
        if chip not in shadows:
            spare = self.__dict__.pop("_spare_native", None)
            shadows[chip] = spare if spare is not None else NativeProgram(self.program)
        return shadows[chip]

    @property
    def _shadow(self) -> Any:
        """The shadow of ``CompiledChipDevice.updatable_router`` (the update rate's router,
        never alive beside a trial's routers): the first chip's."""
        return self.chip_shadow(self.spec.chips[0].name)

    def update_stream(self, family: int, count: int, seed: int,
                      protected: tuple[tuple[int, int], ...] = ()) -> list[Any]:
        """As ``CompiledChipDevice.update_stream`` (the same updates), the table filtered
        once per family and exercised set (``updates.UpdateStreams``) instead of once per
        stream."""
        from npkit.bench.lab.updates import UpdateStreams

        streams = self.__dict__.setdefault("_update_streams", {})
        if family not in streams:
            streams[family] = UpdateStreams(self.tables.routes[family],
                                            self.spare_routes[family], family,
                                            self.options.routes.next_hops)
        return streams[family].stream(-(-count // 6) * 6, seed, protected)

    def system_router(self, chip: str) -> Any:
        """Chip ``chip``'s program and tables on a fresh chip of the system with the XScale
        control plane beside it (as ``updatable_router``, with that chip's link, chip
        config and next-hop ports)."""
        from npkit.runtime.compiled_router import CompiledRouter
        from npkit.runtime.neighbours import NextHop

        self.chip_loadables  # noqa: B018 (links every chip)
        shadow = self.chip_shadow(chip)
        for words in shadow.memory.values():
            words.fill(0)
        linked = self.spec.place_manifest(chip, self.chip_linked(chip))
        router = CompiledRouter(linked=linked, shadow=shadow, seed=self.options.chip_seed,
                                exception_path=False)
        ports = self.chip_port_map(chip)
        for hop in range(self.options.routes.next_hops):
            dmac, smac = next_hop_macs(hop)
            router.control.nexthops.set(hop, NextHop(dmac, smac,
                                                     ports[self.tables.port_of(hop)],
                                                     self.options.next_hop_mtu))
        families = router.families
        router.control.routes.reload(self.tables.routes[4] if 4 in families else None,
                                     self.tables.routes[6] if 6 in families else None)
        router.load_tables()
        return router

    def run_with_updates(self, trial: Trial, family: int, updates_per_s: float,
                         seed: int, stream: Any = None) -> TrialResult:
        """As ``CompiledChipDevice.run_with_updates``, on the system: every chip's XScale
        applies the same updates to its own copy of the tables at the same instants.
        ``updates.landed`` is the chip that landed fewer; ``updates.words`` sums the
        chips' writes."""
        from npkit.bench.lab.devices import _exercised
        from npkit.runtime.compiled_router import at_rate

        if updates_per_s <= 0:
            return self.run(trial)
        self.prepare()
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
        routers = {c.name: self.system_router(c.name) for c in self.spec.chips}
        for router in routers.values():
            at_rate(router, stream, updates_per_s,
                    _cycle(first, router.chip.config.clock_hz))
        advance = {name: _control_runner(router) for name, router in routers.items()}
        system = System(self.spec, {n: r.chip for n, r in routers.items()},
                        threads=self.threads, advance=advance)
        loaded = {n: self._loaded(r.compiled, advance[n], self.chip_linked(n))
                  for n, r in routers.items()}
        result = self.run_streamed(trial, (system, loaded)) if traffic is None else \
            self.run_traffic(trial, traffic, (system, loaded))
        landed = {n: [r for r in router.records if r.end <= router.chip.now]
                  for n, router in routers.items()}
        result.counters.update({"updates.scheduled": len(stream),
                                "updates.landed": min(len(v) for v in landed.values()),
                                "updates.words": sum(r.words for v in landed.values()
                                                     for r in v)})
        return result


class _DeferredFlush:
    """An ``AnalysisSink`` for ``stream_until_done`` whose ``flush(now)`` is done later
    (``pending()``, ``run()``), in the order asked; ``written`` is the sink's.  The batches
    the feeds generate (``sent``) wait too: before each flush, the frames sent before its
    cycle are handed to ``register`` (the analysis and tally of ``streaming``), each port's
    in sending order; ``finish`` registers the rest and does the flushes left."""

    def __init__(self, sink: Any, clock_hz: float,
                 register: Callable[[Batch], None] | None = None) -> None:
        self.sink = sink
        self.register = register
        self._per_cycle = Fraction(PS_PER_S) / Fraction(clock_hz)  # ps a cycle
        self._asked: list[int | None] = []
        self._batches: deque[tuple[Batch, int]] = deque()  # (batch, first not registered)

    @property
    def written(self) -> int:
        return int(self.sink.written)

    def sent(self, batch: Batch) -> None:
        self._batches.append((batch, 0))

    def flush(self, now_cycle: int | None = None) -> None:
        self._asked.append(now_cycle)

    def pending(self) -> Any:
        """The flushes asked so far as one call (None: none)."""
        return self.run if self._asked else None

    def pieces(self) -> list[Callable[[], None]]:
        """The flushes asked so far, one call each, to be done in order."""
        asked, self._asked = self._asked, []
        return [partial(self._flush, now_cycle) for now_cycle in asked]

    def run(self) -> None:
        for piece in self.pieces():
            piece()

    def _flush(self, now_cycle: int | None) -> None:
        self._register(now_cycle)
        self.sink.flush(now_cycle)

    def finish(self) -> None:
        self.run()
        self._register(None)

    def _register(self, now_cycle: int | None) -> None:
        """Every frame sent before cycle ``now_cycle`` (None: every frame) and maybe a few
        after: a frame out before that cycle was offered at its send cycle (floor of its
        send time in cycles, BatchFeed) + a delay, so it is among them."""
        if self.register is None:
            return
        limit = None if now_cycle is None else int((now_cycle + 2) * self._per_cycle)
        waiting: deque[tuple[Batch, int]] = deque()
        stopped: set[int] = set()  # ports with frames left: their later batches wait
        for batch, start in self._batches:
            end = len(batch)
            if batch.port in stopped:
                waiting.append((batch, start))
                continue
            if limit is not None:
                end = int(np.searchsorted(batch.times_ps, limit, side="right"))
            if end > start:
                part = batch if start == 0 and end == len(batch) else Batch(
                    batch.port, batch.times_ps[start:end], batch.datas[start:end],
                    batch.streams[start:end], batch.seqs[start:end])
                self.register(part)
            if end < len(batch):
                waiting.append((batch, end))
                stopped.add(batch.port)
        self._batches = waiting


def _both(first: Callable[[], Any] | None, then: Callable[[], Any]) -> None:
    if first is not None:
        first()
    then()


def _control_runner(router: Any) -> Any:
    return lambda cycles: router.cp.run(cycles=cycles)


def _run_until_done(system: System, loaded: Mapping[str, _Loaded],
                    sinks: Mapping[int, ListSink], offered: int, last_ps: Fraction,
                    settle_ps: int) -> dict[str, Any]:
    """As ``devices._run_until_done``, for every chip of the system; the system's counters
    at the end of the traffic."""
    clock = system.clock_hz
    traffic_end, deadline = _cycle(last_ps, clock), _cycle(last_ps + settle_ps, clock)

    def drain() -> None:
        for one in loaded.values():
            one.drain()

    while system.now < traffic_end:
        system.run(min(STEP_CYCLES, traffic_end - system.now))
        drain()
    during = system.counters()
    while system.now < deadline:
        out = sum(len(s.frames) for s in sinks.values())
        settled = sum(one.settled() for one in loaded.values()) + \
            sum(system.unconnected.values())
        if out + settled >= offered:
            break
        system.run(min(STEP_CYCLES, deadline - system.now))
        drain()
    system.close_sinks()
    return during


def system_counters(system: System, loaded: Mapping[str, _Loaded],
                    during: dict[str, Any]) -> dict[str, float]:
    """The flat counters of a system trial (module docstring)."""
    out: dict[str, float] = {}
    final = system.counters()
    fwd_busiest: tuple[float, float] = (-1.0, 0.0)
    fwd_instructions = 0
    tx_frames = 0
    instructions = 0
    for name, one in loaded.items():
        span = during["chips"][name]
        flat = chip_counters(span, span["cycles"])
        busy = _mean_of(flat, one.fwd_mes, "busy_fraction", span)
        stall = _mean_of(flat, one.fwd_mes, "stall_fraction", span)
        flat["fwd.busy_fraction"] = busy
        flat["fwd.stall_fraction"] = stall
        fwd_busiest = max(fwd_busiest, (busy, stall))
        end = final["chips"][name]
        flat.update({k: v for k, v in chip_counters(end, end["cycles"]).items()
                     if k.startswith("port") or k.endswith((".commands", ".bytes",
                                                          ".instructions"))})
        chip_fwd = sum(end["mes"][m]["instructions"] for m in one.fwd_mes)
        chip_tx = sum(p["tx_frames"] for p in end["ports"])
        flat["fwd.instructions_per_frame"] = chip_fwd / chip_tx if chip_tx else 0.0
        fwd_instructions += chip_fwd
        tx_frames += chip_tx
        instructions += end["run"]["instructions_retired"]
        out.update({f"{name}.{k}": v for k, v in flat.items()})
        out.update({f"{k} ({name})": v for k, v in one.finish().items()})
    for key, count in system.unconnected.items():
        chip, _, port = key.partition(":")
        out[f"loss.unconnected ({chip} port {port})"] = count
    out["fwd.busy_fraction"], out["fwd.stall_fraction"] = fwd_busiest
    connected = tx_frames - sum(system.unconnected.values())
    out["fwd.instructions_per_frame"] = fwd_instructions / connected if connected else 0.0
    out["sim.cycles"] = system.now
    out["sim.instructions"] = instructions
    return out


def system_device(port_kinds: tuple[str, ...], routes: Any, mtu: int, system: str | Path,
                  threads: int = 1, data_path: str | None = None, streamed: bool = True,
                  **compiled: Any) -> CompiledChipDevice:
    """The compiled router for ``npf.chip_device``: ``SINGLE_SYSTEM`` is the lab's single
    chip (``CompiledChipDevice``: no framer delays, today's figures; data path ``rings``),
    any other system a ``SystemChipDevice`` (data path ``default_data_path`` unless
    ``data_path`` says which); trials ``streamed`` (nothing held per frame) unless told not
    to."""
    options = ChipOptions(port_kinds=port_kinds, routes=routes, next_hop_mtu=mtu)
    if str(system) == SINGLE_SYSTEM:
        if data_path not in (None, "rings"):
            raise LabConfigError(f"data path {data_path!r} needs a system whose chips "
                                 f"receive one port each (not {SINGLE_SYSTEM})")
        return CompiledChipDevice(options, streamed=streamed, **compiled)
    return SystemChipDevice(options, system=system, threads=threads,
                            data_path=data_path, streamed=streamed, **compiled)


__all__ = ["DATA_PATHS", "DEFAULT_SYSTEM", "SINGLE_SYSTEM", "SystemChipDevice",
           "default_data_path", "system_counters", "system_device"]
