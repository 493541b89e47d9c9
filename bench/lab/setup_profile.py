"""Where an NPF run's host time goes: the set-up the lab pays (compiling, reading the route
file, packing the tables into each trial's chip, the route reference) against the
simulator, the tester and the garbage collector.

    python -m npkit.bench.lab.setup_profile [--full] [--trial-us US] [--profile OUT.prof]
                                            [--cpu-clock] [--out DIR]

runs the ``ixp2800-npf`` preset (``--quick`` unless ``--full``; trials of ``--trial-us``
simulated us instead of the preset's, as ``npkit bench npf --trial-us``) serially, as
``npkit bench npf`` does, and prints the wall time, the garbage collector's time (every
collection, timed by ``gc.callbacks``) and, with ``--profile``, the cProfile cumulative
time of each part below (the profiler slows pure Python more than the C++ core, so the
shares are of the profiled run; its clock is the wall clock unless ``--cpu-clock``).
Some parts hold others: "chip set-up" holds "tables into the chip", the update tests'
routers hold their native targets, and the update streams hold any reading of the route
file their spare routes do."""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import time
from pathlib import Path

# part -> (file suffix, function name) pairs whose cumulative times add up to it
PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "compile + link (MBL, ME back end, linker)": (
        ("compiler/mbl/__init__.py", "compile_file"), ("compiler/me/__init__.py", "compile_me"),
        ("link/linker.py", "link")),
    "native target (NativeProgram: LLVM JIT)": (("compiler/mbl/native.py", "__init__"),),
    "read the route file": (("runtime/routes.py", "read_routes"),),
    "route reference (analyzer's LPM)": (("bench/tester/reference.py", "__post_init__"),),
    "chip set-up per trial (Chip, images, freelists, tables)": (
        ("runtime/loader.py", "build_from_manifest"), ("runtime/compiled.py", "load_memories")),
    "  of which tables into the chip": (
        ("runtime/compiled.py", "load_memories"), ("runtime/loader.py", "_write_memory")),
    "update tests' routers (control plane, tables)": (
        ("bench/lab/devices.py", "updatable_router"),
        ("bench/lab/system_device.py", "system_router")),
    "update streams (spare routes, picking)": (
        ("bench/lab/devices.py", "update_stream"), ("bench/lab/system_device.py", "update_stream")),
    "simulator (Chip.run)": (("sim/chip.py", "run"),),
    "tester: traffic generation": (("bench/tester/generator.py", "generate"),),
    "tester: analysis": (("bench/tester/analyzer.py", "analyze"),),
    "tester, held: the last bit (Traffic.last_bit_ps)": (
        ("bench/tester/generator.py", "last_bit_ps"),),
    "tester, held: frames out as records, IP bits (received, npf._ip_bits)": (
        ("bench/tester/chip.py", "received"), ("bench/lab/npf.py", "_ip_bits")),
    "tester, streamed: batches generated, registered, tallied": (
        ("bench/tester/chip.py", "_fetch"),),
    "tester, streamed: frames out analysed and tallied (AnalysisSink.flush)": (
        ("bench/tester/chip.py", "flush"),),
}


class GcClock:
    """Wall time spent in garbage collections, by generation."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            generation = info["generation"]
            self.seconds[generation] += time.perf_counter() - self._start
            self.count[generation] += 1


def part_times(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds of each part (a function counted once however it recurses)."""
    table = stats.stats  # type: ignore[attr-defined]
    out = {}
    for part, functions in PARTS.items():
        total = 0.0
        for (filename, _, name), (_, _, _, cumulative, _) in table.items():
            if any(filename.endswith(suffix) and name == fn for suffix, fn in functions):
                total += cumulative
        out[part] = total
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the full preset, not --quick")
    parser.add_argument("--profile", type=Path, help="run under cProfile, stats to this file")
    parser.add_argument("--trial-us", type=float, help="simulated us per trial")
    parser.add_argument("--cpu-clock", action="store_true",
                        help="profile with the process's CPU clock (a loaded machine's "
                             "waits left out; each call costs more), not the wall clock")
    parser.add_argument("--out", type=Path, help="write the report (results.json) here")
    args = parser.parse_args(argv)

    from npkit.bench.lab import npf

    clock = GcClock()
    gc.callbacks.append(clock)
    timer = {"timer": time.process_time} if args.cpu_clock else {}
    profiler = cProfile.Profile(**timer) if args.profile else None
    start, cpu = time.perf_counter(), time.process_time()
    if profiler:
        profiler.enable()
    changes = {} if args.trial_us is None else {"trial_ps": round(args.trial_us * 1e6)}
    result = npf.run_preset("ixp2800-npf", quick=not args.full, **changes)
    if profiler:
        profiler.disable()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    gc.callbacks.remove(clock)
    print(f"NPF {result.config.preset}: {wall:.1f} s wall, {cpu:.1f} s CPU")
    print(f"garbage collector: {sum(clock.seconds):.1f} s in "
          f"{'/'.join(str(n) for n in clock.count)} collections (gen 0/1/2), "
          f"{clock.seconds[2]:.1f} s in full ones")
    if profiler and args.profile:
        profiler.dump_stats(str(args.profile))
        stats = pstats.Stats(str(args.profile))
        total = stats.total_tt  # type: ignore[attr-defined]
        print(f"profiled: {total:.1f} s")
        for part, seconds in part_times(stats).items():
            print(f"  {part:<58} {seconds:7.1f} s {100 * seconds / total:5.1f} %")
    if args.out:
        from npkit.bench.lab.report import write_report

        write_report(result, args.out)


if __name__ == "__main__":
    main()
