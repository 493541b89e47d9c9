"""How fast the simulator runs: l2wire on 2 x 10GbE and the compiled POS router on
2 x OC-192 POS, both at 100 % line rate.

    python -m npkit.bench.sim_speed [--frames N] [--pos-frames N] [--repeat 5]
        [--workload 64|mixed|pos|system|all] [--threads 1 2] [--clock wall|cpu]
        [--schedule default|quantum]

For the l2wire workloads the packaged l2wire example forwards N frames per port at 100 % of
line rate on both ports (64-byte frames; and mixed 60..1514-byte frames).  The ``pos``
workload is the compiled dual-stack POS router (examples/pos_router, 4 forwarding MEs per
port, the real route table, bench/compiled_pos) offered 40-byte IPv4 packets (44-byte PPP
frames) at line rate on both ports; compiling, reading the table and copying it to the
chip happen before the timing.  Each run is timed on the host around ``Chip.run`` only
(the frames are made beforehand), and split into the C++ core (``_core.run``) and the
Python facade around it (feeding frames in, draining them out).  The median of
``--repeat`` runs is printed:

* simulated instructions per host second (MIPS) -- retired ME instructions, all MEs;
* simulated packets per host second (frames transmitted);
* simulated cycles per host second, how much slower than the real chip that is, and the
  host time one simulated second of this load takes;
* MIPS against Neptune's published 3.31 MIPS (FACTS.md section 3).

The ``system`` workload is the same load as the acceptance of issue 13 names it: the
compiled router on the two-chip system of the NPF lab (``dual-ixp2800-npf``: chip east
receives pos0 and transmits pos1, west the reverse; docs/system.md), built and run by the
lab's own machinery -- the ``ixp2800-npf`` preset's device (``npf.chip_device``: the data
path ``pool-mbl``, the sampled route tables) and one of its trials (``make_trials``: IPv4
40 B, 100 % of line rate on both ports, streamed: the C++ generator's batches in, every
frame out analysed as it leaves), ``--pos-frames`` frames per port long, once per
``--threads`` value (``System(threads=N)``: each chip on its own host thread).  The set-up
(compiling, linking, the tables, loading and snapshotting both chips) happens before the
timing; each timed run is one ``device.run(trial)``: the chips restored, the trial run to
its end, the report and counters made.  Its figures count both chips (instructions, frames
out) over the wall time; the core is timed per chip (``core alone``: the busier chip's core
seconds, the longest any thread spent in the core), so with two threads the core seconds of
both chips can add up to more than the wall time.  ``CPU per thread`` is the CPU time of
the thread that ran the trial and of the process's other threads (the system's pool): on
a host with a free core per thread the wall time is at least the larger, whatever else
the machine runs (the wall time on a shared host is not).

``--clock cpu`` times with the process's CPU time (``time.process_time``) instead of the wall
clock: on a host shared with other work the wall clock counts the time other processes had
the core; CPU time does not (cache and memory contention remain).

This is a benchmark, not a test: it asserts nothing.  Results and the machine they were
measured on go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from npkit.bench import compiled_pos
from npkit.bench.lab.device import Trial
from npkit.bench.lab.npf import SampledRoutes, chip_device, make_trials, preset
from npkit.bench.tester import Sizes
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.loader import chip_config_for, load_manifest
from npkit.runtime.routes import REAL_TABLE, ROUTES_DIR_ENV, read_routes, real_table_path
from npkit.sim.chip import SCHEDULE_ENV, SCHEDULES, default_schedule
from npkit.sim.packets import ListSource, RxFrame, TxFrame

NEPTUNE_MIPS = 3.31  # FACTS.md section 3: Neptune (2025)
LINE_BPS = 10e9
WIRE_OVERHEAD = 20
QUIET_CYCLES = 20_000  # ~12 maximum-size frame times


@dataclass(frozen=True)
class Workload:
    name: str
    make: Callable[[int, int], list[bytes]]  # (count, port) -> frames


def min_size_frames(count: int, port: int) -> list[bytes]:
    """64 bytes on the wire (60 + FCS stand-in), each one different."""
    head = bytes([2, 0, 0, 0, 0, port, 2, 0, 0, 0, 0, 1 - port, 0x88, 0xB5])
    return [head + i.to_bytes(4, "big") + bytes(46) for i in range(count)]


def mixed_frames(count: int, port: int) -> list[bytes]:
    rng = random.Random(1000 + port)
    return [rng.randbytes(rng.randint(60, 1514)) for _ in range(count)]


WORKLOADS = {"64": Workload("64-byte frames", min_size_frames),
             "mixed": Workload("mixed 60..1514-byte frames", mixed_frames)}


class CountingSink:
    """Counts frames; keeps nothing (the benchmark measures the simulator, not a sink)."""

    def __init__(self) -> None:
        self.frames = 0

    def write(self, frame: TxFrame) -> None:
        self.frames += 1

    def close(self) -> None:
        pass


Clock = Callable[[], float]
CLOCKS: dict[str, Clock] = {"wall": time.perf_counter, "cpu": time.process_time}


class TimedCore:
    """Forwards to the C++ core and adds up the host time spent in its ``run``."""

    def __init__(self, core: Any, clock: Clock = time.perf_counter) -> None:
        self._core = core
        self._clock = clock
        self.seconds = 0.0

    def run(self, *args: Any) -> Any:
        start = self._clock()
        try:
            return self._core.run(*args)
        finally:
            self.seconds += self._clock() - start

    @property
    def now(self) -> Any:  # read by the facade around every core call
        return self._core.now

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._core, name)
        if callable(value):  # a method: looked up once (not values such as ``now``)
            setattr(self, name, value)
        return value


@dataclass(frozen=True)
class Sample:
    host_s: float
    core_s: float
    instructions: int
    cycles: int
    frames_out: int
    frames_in: int


def manifest_path() -> Path:
    return Path(str(resources.files("npkit.examples") / "l2wire" / "l2wire.toml"))


def run_once(frames: dict[int, list[bytes]], clock: Clock = time.perf_counter) -> Sample:
    loaded = load_manifest(manifest_path())
    chip = loaded.chip
    timed = TimedCore(chip._core, clock)
    chip._core = timed  # the facade calls self._core.run: time the core part
    for port, items in frames.items():
        chip.attach_source(port, ListSource([RxFrame(f) for f in items]))
        chip.attach_sink(port, CountingSink())
    total = sum(len(v) for v in frames.values())
    wire = max(sum((len(f) + WIRE_OVERHEAD) * 8 / LINE_BPS for f in v) for v in frames.values())
    budget = int(wire * chip.config.clock_hz * 1.5) + 100_000
    i0, c0 = chip.instructions_retired, chip.now
    start = clock()
    # stop once the offered traffic is through: all frames out, or (with drops) nothing moved
    # for a few frame times -- the transmit threads poll their rings forever otherwise
    result = chip.run(packets=total, cycles=budget, until_idle=True, quiet_cycles=QUIET_CYCLES)
    host = clock() - start
    return Sample(host, timed.seconds, chip.instructions_retired - i0, chip.now - c0,
                  result.frames_out, total)


@dataclass(frozen=True)
class PosSetup:
    """The compiled POS router, its tables and its traffic, made once for all runs."""

    linked: Any
    native: Any
    frames: dict[int, list[bytes]]


def pos_setup(frames_per_port: int) -> PosSetup:
    program, entry = compiled_pos.pos_program()
    routes = read_routes(REAL_TABLE, compiled_pos.SEED, compiled_pos.NEXT_HOPS)
    native = compiled_pos.load_tables(program, routes)
    linked = compiled_pos.compile_pos(program, entry, per_port=4)
    return PosSetup(linked, native, compiled_pos.pos_frames(routes, 2000, frames_per_port))


def run_pos_once(setup: PosSetup, clock: Clock = time.perf_counter) -> Sample:
    run = CompiledRun(setup.linked)
    run.load_memories(setup.native)  # the table copy is set-up, not simulation
    chip = run.chip
    timed = TimedCore(chip._core, clock)
    chip._core = timed
    i0, c0 = chip.instructions_retired, chip.now
    start = clock()
    result = run.run(setup.frames, load=1.0)
    host = clock() - start
    return Sample(host, timed.seconds, chip.instructions_retired - i0, chip.now - c0,
                  sum(len(v) for v in result.out.values()), result.offered)


@dataclass(frozen=True)
class SystemSetup:
    """The NPF lab's device on the two-chip system and its trial, made once for all runs."""

    device: Any  # bench.lab.system_device.SystemChipDevice
    trial: Trial
    cores: dict[str, TimedCore]  # per chip, the timed C++ core of the device's chips
    clock_hz: float
    tables: str  # where the route tables come from (the real table, or generated without it)


def system_setup(frames_per_port: int, threads: int, clock: Clock = time.perf_counter,
                 routes: SampledRoutes | None = None) -> SystemSetup:
    """The ``ixp2800-npf`` preset's device (two chips, ``threads`` host threads) and its
    IPv4 40-byte trial at 100 % of line rate, ``frames_per_port`` frame times long; both
    chips loaded and snapshotted, their cores timed.  ``routes``: other tables than the
    preset's (a test's small ones)."""
    npf = preset("ixp2800-npf", threads=threads)
    if routes is not None:
        npf = replace(npf, routes=routes)
    device = chip_device(npf)
    model = device.ports[0]
    frame_bytes = 44  # a 40-byte IPv4 packet behind the 4-byte PPP header (tester.media)
    trial_ps = int(frames_per_port * model.wire_ps(frame_bytes))
    config = replace(npf.config, trial_ps=trial_ps)
    trial = make_trials(device, config, "ipv4", "40", Sizes((40,), None, "ip")).at(100.0)
    device.prepare()
    system, _ = device.restored()  # the chips loaded once and snapshotted (set-up)
    # time each chip's core; with threads, each thread's core time (wall clock per call)
    core_clock = time.thread_time if clock is time.process_time else clock
    cores = {}
    for name, chip in system.chips.items():
        cores[name] = TimedCore(chip._core, core_clock)
        chip._core = cores[name]
    return SystemSetup(device, trial, cores, system.clock_hz, npf.routes.origin())


@dataclass(frozen=True)
class SystemSample:
    host_s: float
    core_s: dict[str, float]  # per chip
    instructions: int
    cycles: int
    frames_out: int
    frames_in: int
    calling_cpu_s: float = 0.0  # CPU time of the thread that ran the trial
    other_cpu_s: float = 0.0  # CPU time of the process's other threads (the pool's)


def run_system_once(setup: SystemSetup, clock: Clock = time.perf_counter) -> SystemSample:
    for core in setup.cores.values():
        core.seconds = 0.0
    cpu0, thread0 = time.process_time(), time.thread_time()
    start = clock()
    result = setup.device.run(setup.trial)
    host = clock() - start
    calling = time.thread_time() - thread0
    other = time.process_time() - cpu0 - calling
    tally = result.tally
    assert tally is not None  # the lab's trials are streamed
    return SystemSample(host, {n: c.seconds for n, c in setup.cores.items()},
                        int(result.counters["sim.instructions"]),
                        int(result.counters["sim.cycles"]),
                        sum(t.frames for t in tally.received.values()),
                        sum(t.frames for t in tally.sent.values()), calling, max(0.0, other))


def report_system(name: str, samples: list[SystemSample], clock_hz: float
                  ) -> dict[str, float]:
    """As ``report``, both chips counted; the core per chip (module docstring)."""
    host = statistics.median(s.host_s for s in samples)
    chips = sorted(samples[0].core_s)
    core = {c: statistics.median(s.core_s[c] for s in samples) for c in chips}
    busiest = max(core.values())
    s0 = samples[0]  # deterministic: every run does the same work
    figures = speed_figures(host, busiest, s0.instructions, s0.cycles, s0.frames_out,
                            clock_hz)
    figures["core_sum_share"] = sum(core.values()) / host
    print(f"\n{name}: {s0.frames_in} frames offered, {s0.frames_out} forwarded, "
          f"{s0.cycles:,} cycles, {s0.instructions:,} instructions "
          f"({figures['instructions_per_packet']:.1f} per packet, all MEs of both chips)")
    per_chip = ", ".join(f"{c} {core[c]:.3f} s" for c in chips)
    print(f"  host time (median of {len(samples)}): {host:.3f} s "
          f"(C++ core {per_chip}: busiest = {100 * figures['core_share']:.0f} %, "
          f"both = {100 * figures['core_sum_share']:.0f} % of it)")
    print_figures(figures, clock_hz)
    calling = statistics.median(s.calling_cpu_s for s in samples)
    other = statistics.median(s.other_cpu_s for s in samples)
    figures["calling_cpu_s"], figures["other_cpu_s"] = calling, other
    # each thread's CPU time: on free cores the wall time is at least the larger
    figures["busiest_thread_s_per_simulated_s"] = max(calling, other) / (s0.cycles / clock_hz)
    print(f"  CPU per thread           calling {calling:.3f} s, others {other:.3f} s "
          f"(one simulated second >= {figures['busiest_thread_s_per_simulated_s']:.1f} "
          "host s on free cores)")
    return figures


def profile_system(setup: SystemSetup, path: str, clock: Clock = time.perf_counter) -> None:
    """One more run of ``setup`` under cProfile: the stats to ``path``, the top printed.
    The profiler sees the calling thread only (with threads, the other chips' Python
    facade is not in it) and slows pure Python ~2x, not the C++ core."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    sample = run_system_once(setup, clock)
    profiler.disable()
    profiler.dump_stats(path)
    print(f"  profiled run: {sample.host_s:.3f} s, stats in {path}; the top by own time:")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def speed_figures(host_s: float, core_s: float, instructions: int, cycles: int,
                  frames_out: int, clock_hz: float) -> dict[str, float]:
    """The figures of a run of ``cycles`` simulated cycles (``instructions`` retired,
    ``frames_out`` transmitted) that took ``host_s`` host seconds, ``core_s`` of them in
    the C++ core (for a system: the busiest chip's)."""
    mips = instructions / host_s / 1e6
    return {
        "mips": mips,
        "core_mips": instructions / core_s / 1e6,
        "pps": frames_out / host_s,
        "cycles_per_s": cycles / host_s,
        "slowdown": clock_hz / (cycles / host_s),
        "neptune_ratio": mips / NEPTUNE_MIPS,
        "core_share": core_s / host_s,
        "instructions_per_packet": instructions / max(1, frames_out),
        "host_s_per_simulated_s": host_s / (cycles / clock_hz),
    }


def print_figures(figures: dict[str, float], clock_hz: float) -> None:
    print(f"  simulated MIPS           {figures['mips']:10.2f}   "
          f"(core alone {figures['core_mips']:.2f})")
    print(f"  simulated packets/s      {figures['pps']:10,.0f}")
    print(f"  simulated cycles/s       {figures['cycles_per_s']:10,.0f}   "
          f"({figures['slowdown']:,.0f} x slower than a {clock_hz / 1e9:.1f} GHz chip)")
    print(f"  one simulated second     {figures['host_s_per_simulated_s']:10.1f} host s")
    print(f"  vs Neptune 3.31 MIPS     {figures['neptune_ratio']:10.2f} x")


def report(name: str, samples: list[Sample], clock_hz: float) -> dict[str, float]:
    host = statistics.median(s.host_s for s in samples)
    core = statistics.median(s.core_s for s in samples)
    s0 = samples[0]  # the simulation is deterministic: every run does the same work
    figures = speed_figures(host, core, s0.instructions, s0.cycles, s0.frames_out, clock_hz)
    print(f"\n{name}: {s0.frames_in} frames offered, {s0.frames_out} forwarded, "
          f"{s0.cycles:,} cycles, {s0.instructions:,} instructions "
          f"({figures['instructions_per_packet']:.1f} per packet, all MEs)")
    print(f"  host time (median of {len(samples)}): {host:.3f} s "
          f"(C++ core {core:.3f} s = {100 * figures['core_share']:.0f} %, Python facade the rest)")
    print_figures(figures, clock_hz)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50_000, help="frames per port")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pos-frames", type=int, default=20_000,
                        help="frames per port for the pos workload")
    parser.add_argument("--workload", choices=["64", "mixed", "pos", "system", "all"],
                        default="all")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="host threads of the system workload, one run set per value")
    parser.add_argument("--profile", metavar="FILE", default=None,
                        help="system workload: one more run under cProfile per --threads "
                             "value, its stats written to FILE.t<threads> (pstats) and the "
                             "top functions printed (the calling thread only)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="host time: wall clock (default) or the process's CPU time")
    parser.add_argument("--schedule", choices=list(SCHEDULES), default=None,
                        help=f"the ME schedule of every chip (default: ${SCHEDULE_ENV} or "
                             "'default'); 'quantum' is the coarser model variant")
    args = parser.parse_args(argv)
    if args.schedule is not None:  # every chip made below (manifest, compiled run) reads it
        os.environ[SCHEDULE_ENV] = args.schedule
    clock_fn = CLOCKS[args.clock]
    print(f"npkit simulator speed, 100 % line rate on both ports, median of {args.repeat}: "
          f"l2wire on 2 x 10GbE ({args.frames} frames per port), compiled POS router on "
          f"2 x OC-192 POS ({args.pos_frames} frames per port), {args.clock} clock, "
          f"{default_schedule()} schedule")
    print(f"host: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, {platform.system()}")
    chosen = [*WORKLOADS, "pos", "system"] if args.workload == "all" else [args.workload]
    if "pos" in chosen and real_table_path() is None:
        print(f"sim_speed: the pos workload routes over the real table, not found at "
              f"{REAL_TABLE}; set {ROUTES_DIR_ENV} to the folder that holds it",
              file=sys.stderr)
        return 2
    clock = load_manifest(manifest_path()).chip.config.clock_hz
    for key in chosen:
        if key == "system":
            for threads in args.threads:
                system = system_setup(args.pos_frames, threads, clock_fn)
                runs = [run_system_once(system, clock_fn) for _ in range(args.repeat)]
                report_system(f"compiled POS router, 40-byte IPv4 on 2 x OC-192 POS, "
                              f"two-chip system ({system.device.spec.name}, "
                              f"{system.device.data_path}), {threads} host "
                              f"thread{'s' if threads > 1 else ''}, route tables "
                              f"{system.tables}", runs, system.clock_hz)
                if args.profile:
                    profile_system(system, f"{args.profile}.t{threads}", clock_fn)
            continue
        if key == "pos":
            setup = pos_setup(args.pos_frames)
            samples = [run_pos_once(setup, clock_fn) for _ in range(args.repeat)]
            report("compiled POS router, 40-byte IPv4 on 2 x OC-192 POS", samples,
                   chip_config_for(setup.linked).clock_hz)
            continue
        workload = WORKLOADS[key]
        frames = {p: workload.make(args.frames, p) for p in (0, 1)}
        samples = [run_once(frames, clock_fn) for _ in range(args.repeat)]
        report(workload.name, samples, clock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
