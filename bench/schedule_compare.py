"""The default and the quantum ME schedule side by side (issue 13, fifth round).

The quantum schedule (docs/sim-core.md, "The quantum schedule") is a model variant, so its
results differ; this prints by how much on the identity workloads (tests/sim/identity.py's
scenarios, rebuilt here): frames in and out, drops, the latency distribution (last bit in to
last bit out, from the per-frame log), unit utilisation and ME busy share.

    python -m npkit.bench.schedule_compare [--scenarios l2wire_64,router4_64,compiled_router_64]
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npkit.bench import router4_load as r4l
from npkit.bench import sim_speed
from npkit.bench.compiled_load import ROUTER, tables
from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.loader import load_manifest
from npkit.sim import Chip
from npkit.sim.chip import SCHEDULE_ENV, SCHEDULES
from npkit.sim.packet_trace import Selection, journeys
from npkit.sim.packets import ListSource, RxFrame


@dataclass(frozen=True)
class Figures:
    frames_in: int
    frames_out: int
    rbuf_drops: int
    latency: list[int]       # cycles, last bit in -> last bit out, per departed frame
    utilisation: dict[str, float]
    me_busy: float           # busy cycles / (cycles x MEs loaded)
    cycles: int
    instructions: int


def l2wire_64() -> Chip:
    chip = load_manifest(sim_speed.manifest_path()).chip
    chip.enable_frame_log(Selection())
    for port in (0, 1):
        frames = sim_speed.min_size_frames(3000, port)
        chip.attach_source(port, ListSource([RxFrame(f) for f in frames]))
    chip.run(packets=6000, cycles=50_000_000, until_idle=True,
             quiet_cycles=sim_speed.QUIET_CYCLES)
    chip.run(cycles=30_000)
    return chip


def router4_64() -> Chip:
    workload = r4l.Workload.make(7, 300, 2000, 64)
    chip = r4l.load_router(workload).chip
    chip.enable_frame_log(Selection())
    gap = r4l.frame_interval_s(64, 1.0)
    for port, frames in workload.frames.items():
        chip.attach_source(port, ListSource([RxFrame(f, i * gap) for i, f in enumerate(frames)]))
    span = 2000 * gap * chip.config.clock_hz
    chip.run(packets=4000, cycles=int(span) + r4l.DRAIN_CYCLES, until_idle=True,
             quiet_cycles=r4l.QUIET_CYCLES)
    return chip


def compiled_router_64() -> Chip:
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), fwd_mes_per_port=2)
    workload = r4l.Workload.make(3, 300, 1200, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    run.chip.enable_frame_log(Selection())
    run.run(workload.frames, load=0.9)
    return run.chip


SCENARIOS: dict[str, Callable[[], Chip]] = {
    "l2wire_64": l2wire_64,
    "router4_64": router4_64,
    "compiled_router_64": compiled_router_64,
}


def figures(chip: Chip) -> Figures:
    counters = chip.counters()
    log = chip.frame_log
    assert log is not None
    log.collect()
    frames = journeys(log.events(), list(log.status()["units"]))
    latency = sorted(j.departed[1] - j.last_bit for j in frames.values()
                     if j.departed is not None and j.last_bit)
    ports = counters["ports"]
    channels = counters["channels"]
    utilisation = {f"{kind}{i}": ch["utilization"] for kind in ("sram", "dram")
                   for i, ch in enumerate(channels[kind])}
    utilisation["scratch"] = channels["scratch"]["utilization"]
    loaded = [m for m in counters["mes"] if m["instructions"]]
    cycles = int(counters["cycles"])
    busy = sum(m["busy_cycles"] for m in loaded) / max(1, cycles * len(loaded))
    drops = sum(p["rx_dropped_rbuf_full"] for p in ports)
    return Figures(sum(p["rx_frames"] for p in ports) + drops, sum(p["tx_frames"] for p in ports),
                   drops, latency, utilisation, busy, cycles, int(counters["instructions"]))


def percentile(values: list[int], q: float) -> int:
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0


def row(name: str, schedule: str, f: Figures) -> str:
    lat = f.latency
    util = " ".join(f"{k} {100 * v:.1f}" for k, v in f.utilisation.items() if v > 0.005)
    mean = statistics.fmean(lat) if lat else 0.0
    return (f"| {name} | {schedule} | {f.frames_in} | {f.frames_out} | {f.rbuf_drops} | "
            f"{percentile(lat, 0)} / {percentile(lat, 0.5)} / {mean:.0f} / "
            f"{percentile(lat, 0.99)} / {percentile(lat, 1.0) if lat else 0} | "
            f"{100 * f.me_busy:.1f} | {util} | {f.cycles:,} | {f.instructions:,} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args(argv)
    print("| workload | schedule | frames in | frames out | RBUF drops | latency cycles "
          "min / p50 / mean / p99 / max | ME busy % | unit utilisation % | cycles | "
          "ME instructions |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.scenarios.split(","):
        for schedule in SCHEDULES:
            os.environ[SCHEDULE_ENV] = schedule  # every chip the scenario builds
            result: Any = SCENARIOS[name]()
            print(row(name, schedule, figures(result)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
