"""A run's results must not depend on how the caller slices it (docs/sim-core.md, "Time and
scheduling"): N cycles in one ``Chip.run`` call and the same N cycles in calls of 1, 7, 20,
997, 3,000 or 100,000 cycles (or of random lengths) must send every frame at the same cycle
and leave the same counters and the same memory.  The reference is the run in one call: the
relation checked is that slicing changes nothing, so the reference is the same model run
whole, not the code under test checked against itself.

Workloads: l2wire (examples/l2wire) with mixed-size frames back to back at line rate and
paced at 80 % of it; router4 (examples/router4) with 64-byte frames at line rate; router4
under its control plane (runtime/chip_router.py), whose XScale model slices the chip's runs
at its own events; and a deadlock, which must be found at the same cycle in short slices.
"""

from __future__ import annotations

import hashlib
import importlib.util
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from npkit.bench.router4_load import Workload, frame_interval_s, load_router, udp_frame
from npkit.runtime.chip_router import ChipRouter
from npkit.runtime.router_config import RouterConfig
from npkit.sim import Chip
from npkit.sim.loader import load_manifest
from npkit.sim.packets import ListSink, ListSource, RxFrame

LINE_BPS = 10e9
WIRE_OVERHEAD = 20  # preamble + SFD + inter-frame gap, bytes
REPO = Path(__file__).resolve().parents[2]
ROUTER_CONFIG = REPO / "examples" / "router4" / "control.toml"
RANDOM = "random"  # a slicing of random lengths 1..5,000 (seeded)
SLICINGS = [7, 20, 997, 3_000, 100_000, RANDOM]


# --------------------------------------------------------------------------- what a run left
@dataclass(frozen=True)
class Outcome:
    now: int
    departures: dict[int, list[tuple[int, int, bytes]]]  # port -> (first bit, last bit, data)
    counters: dict[str, Any]
    memory: str  # digest of SRAM, scratch, DRAM and every ME's local memory


MakeRun = Callable[[], tuple[Chip, dict[int, ListSink]]]  # a fresh chip and its sinks


def memory_digest(chip: Chip) -> str:
    digest = hashlib.sha1()
    for channel in range(chip.config.sram_channels):
        digest.update(memoryview(chip.sram(channel)))
    digest.update(memoryview(chip.scratch()))
    digest.update(memoryview(chip.dram()))
    for me in range(chip.config.me_count):
        digest.update(memoryview(chip.local_memory(me)))
    return digest.hexdigest()


def outcome(chip: Chip, sinks: dict[int, ListSink]) -> Outcome:
    counters = chip.counters()
    # frames the facade has queued ahead of simulated time: feeding bookkeeping, which
    # follows the call pattern by design (frames still waiting in a port's queue)
    del counters["run"]["frames_fed"]
    departures = {port: [(f.first_bit_cycle, f.last_bit_cycle, f.data) for f in sink.frames]
                  for port, sink in sinks.items()}
    return Outcome(chip.now, departures, counters, memory_digest(chip))


def slices(total: int, step: int | str) -> Iterator[int]:
    rng = random.Random(7)
    done = 0
    while done < total:
        length = rng.randint(1, 5_000) if step == RANDOM else int(step)
        length = min(length, total - done)
        yield length
        done += length


def run_sliced(make: MakeRun, total: int, step: int | str) -> Outcome:
    chip, sinks = make()
    for length in slices(total, step):
        chip.run(cycles=length)
    return outcome(chip, sinks)


def assert_same(got: Outcome, want: Outcome) -> None:
    assert got.now == want.now
    for port, frames in want.departures.items():
        assert len(got.departures[port]) == len(frames), f"port {port}: frame count"
        differ = [i for i, (a, b) in enumerate(zip(got.departures[port], frames, strict=True))
                  if a != b]
        assert not differ, f"port {port}: {len(differ)} departures differ, first #{differ[0]}"
    assert got.counters == want.counters
    assert got.memory == want.memory


# --------------------------------------------------------------------------- l2wire
def mixed_frames(count: int, port: int) -> list[bytes]:
    rng = random.Random(100 + port)
    return [rng.randbytes(rng.randint(60, 1514)) for _ in range(count)]


def paced(frames: list[bytes], load: float) -> list[RxFrame]:
    out, t = [], 0.0
    for frame in frames:
        out.append(RxFrame(frame, t))
        t += (len(frame) + WIRE_OVERHEAD) * 8 / LINE_BPS / load
    return out


def l2wire(load: float | None, count: int = 300) -> MakeRun:
    """l2wire with ``count`` mixed-size frames per port, back to back (load None) or paced."""
    def make() -> tuple[Chip, dict[int, ListSink]]:
        manifest = Path(str(resources.files("npkit.examples") / "l2wire" / "l2wire.toml"))
        chip = load_manifest(manifest).chip
        sinks = {}
        for port in (0, 1):
            frames = mixed_frames(count, port)
            items = [RxFrame(f) for f in frames] if load is None else paced(frames, load)
            chip.attach_source(port, ListSource(items))
            sinks[port] = ListSink()
            chip.attach_sink(port, sinks[port])
        return chip, sinks
    return make


L2WIRE_CYCLES = 150_000  # ~160 frames per port at line rate: ports, DRAM and rings busy


@cache
def l2wire_reference(load: float | None) -> Outcome:
    return run_sliced(l2wire(load), L2WIRE_CYCLES, L2WIRE_CYCLES)


@pytest.mark.parametrize("step", SLICINGS)
def test_l2wire_back_to_back_gives_the_same_run_for_any_slicing(step: int | str) -> None:
    want = l2wire_reference(None)
    assert sum(len(v) for v in want.departures.values()) > 200  # frames did go through
    assert_same(run_sliced(l2wire(None), L2WIRE_CYCLES, step), want)


@pytest.mark.parametrize("step", [997, RANDOM])
def test_l2wire_paced_gives_the_same_run_for_any_slicing(step: int | str) -> None:
    assert_same(run_sliced(l2wire(0.8), L2WIRE_CYCLES, step), l2wire_reference(0.8))


def test_one_cycle_slices_give_the_same_run() -> None:
    total = 12_000  # the first frames are received, copied to DRAM and sent
    want = run_sliced(l2wire(None), total, total)
    assert sum(len(v) for v in want.departures.values()) > 0
    assert_same(run_sliced(l2wire(None), total, 1), want)


def test_until_idle_stops_where_a_fixed_length_run_would_be() -> None:
    """A run until idle (here: quiet, l2wire's transmit threads poll) and a run of the same
    length in fixed-length calls are the same run; so is carrying on after it."""
    few = l2wire(None, count=20)
    chip, sinks = few()
    result = chip.run(until_idle=True, quiet_cycles=20_000)
    assert result.reason in ("idle", "quiet") and result.frames_out == 40
    idle = outcome(chip, sinks)
    assert_same(run_sliced(few, idle.now, 997), idle)
    assert_same(run_sliced(few, idle.now, idle.now), idle)
    chip.run(cycles=5_000)
    assert_same(outcome(chip, sinks), run_sliced(few, idle.now + 5_000, 3_000))


# --------------------------------------------------------------------------- router4
ROUTER4_CYCLES = 100_000  # ~1,000 64-byte frames per port at line rate


@cache
def router4_workload() -> Workload:
    return Workload.make(seed=1, routes=200, frames=1_500, size=64)


def router4() -> tuple[Chip, dict[int, ListSink]]:
    workload = router4_workload()
    chip = load_router(workload).chip
    gap = frame_interval_s(64, 1.0)
    sinks = {}
    for port, frames in workload.frames.items():
        chip.attach_source(port, ListSource([RxFrame(f, i * gap) for i, f in enumerate(frames)]))
        sinks[port] = ListSink()
        chip.attach_sink(port, sinks[port])
    return chip, sinks


@cache
def router4_reference() -> Outcome:
    return run_sliced(router4, ROUTER4_CYCLES, ROUTER4_CYCLES)


@pytest.mark.parametrize("step", SLICINGS)
def test_router4_gives_the_same_run_for_any_slicing(step: int | str) -> None:
    want = router4_reference()
    assert sum(len(v) for v in want.departures.values()) > 1_000
    assert_same(run_sliced(router4, ROUTER4_CYCLES, step), want)


# --------------------------------------------------------------------------- control plane
PORT_MACS = {0: bytes.fromhex("020000000010"), 1: bytes.fromhex("020000000011")}  # control.toml


def routed_frames(count: int) -> dict[int, list[bytes]]:
    """64-byte frames to the router's MAC: port 0's to the default route (out of port 1),
    port 1's into 10.0.0.0/8 (out of port 0); control.toml routes both."""
    rng = random.Random(3)
    first_octet = {0: 100, 1: 10}
    return {port: [PORT_MACS[port] + udp_frame(first_octet[port] << 24 | rng.getrandbits(24),
                                                64, i)[6:] for i in range(count)]
            for port in (0, 1)}


def router_under_control_plane(noop_at: int | None) -> tuple[ChipRouter, dict[int, ListSink]]:
    """router4 with its control plane: 64-byte frames on both ports at line rate, so the
    XScale's exception-ring polls slice the chip's runs; ``noop_at``: a change that writes
    nothing, at that cycle (it only moves where the XScale slices the runs)."""
    router = ChipRouter()
    router.configure(RouterConfig.load(ROUTER_CONFIG))
    gap = frame_interval_s(64, 1.0)
    sinks = {}
    for port, frames in routed_frames(600).items():
        router.chip.attach_source(port, ListSource([RxFrame(f, i * gap)
                                                    for i, f in enumerate(frames)]))
        sinks[port] = ListSink()
        router.chip.attach_sink(port, sinks[port])
    if noop_at is not None:
        router.at(noop_at, lambda control: None, "no-op")
    return router, sinks


def test_chip_router_results_do_not_change_with_an_unrelated_event() -> None:
    runs = []
    for noop_at in (None, 23_457):
        router, sinks = router_under_control_plane(noop_at)
        router.run(cycles=60_000)
        counters = router.counters()
        del counters["xscale"]  # the XScale's own work: the no-op change is part of it
        runs.append((outcome(router.chip, sinks), counters))
    (plain, plain_router), (with_noop, noop_router) = runs
    assert sum(len(v) for v in plain.departures.values()) > 500
    assert_same(with_noop, plain)
    assert noop_router == plain_router


# --------------------------------------------------------------------------- deadlock watch
def core_programs() -> ModuleType:
    """tests/sim/core/coreprog.py: encoders for hand-made core programs."""
    spec = importlib.util.spec_from_file_location("coreprog", REPO / "tests/sim/core/coreprog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deadlock_in_slices(step: int) -> tuple[str, str, int]:
    """As tests/sim/core/test_core_faults.py: ME 0 waits for a signal nobody sends while
    ME 1 makes slow SRAM reads (events, no instructions) for longer than deadlock_cycles."""
    prog = core_programs()
    cfg = prog.chip_config()
    cfg["run"]["deadlock_cycles"] = 100
    core = prog._core.Core(cfg, 1)
    core.load(0, prog.single_context([prog.ctx_arb(2)]))
    core.load(1, [prog.mem("sram", "read", 0, prog.NONE, prog.NONE, sig=1, swap=True)] * 3
              + [prog.kill()])
    with pytest.raises(prog._core.SimFault) as info:
        for _ in range(100_000 // step):
            core.run(step)
    return info.value.kind, info.value.message, core.now


def test_deadlock_is_found_at_the_same_cycle_in_short_slices() -> None:
    whole = deadlock_in_slices(100_000)
    assert whole[0] == "deadlock" and "deadlock_cycles" in whole[1]
    assert deadlock_in_slices(20) == whole
