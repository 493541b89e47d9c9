"""Chip.snapshot / Chip.restore (docs/sim-core.md, "Snapshot and restore"; issue 18's
acceptance line): a restored chip runs on exactly as the chip ran on from the snapshot --
every transmitted frame (port, first/last-bit cycle, bytes), every counter, every memory
word, every context -- whatever the chip did in between.

The workload is the hand-written router4 (bench/router4_load) with its route tables in SRAM,
frames offered with due times up front (so they are part of the chip's state) at full line
rate, which keeps memory commands, autopushes and TBUF frames in flight at every cycle."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from npkit.bench import router4_load as r4l
from npkit.sim.chip import Chip
from npkit.sim.packets import ListSink, ListSource, RxFrame

FRAMES = 600  # per port (about 56,000 cycles of traffic at line rate)
N_CYCLES = 20_001  # odd: the snapshot falls inside a burst and between memory events
M_CYCLES = 30_000


def loaded_router() -> Chip:
    workload = r4l.Workload.make(11, 200, FRAMES, 64)
    chip = r4l.load_router(workload).chip
    gap = r4l.frame_interval_s(64, 1.0) * chip.config.clock_hz
    for port, frames in workload.frames.items():
        chip.offer_frames(port, frames, [int(i * gap) for i in range(len(frames))])
        chip.attach_sink(port, ListSink())
    return chip


def memory_digest(chip: Chip) -> str:
    h = hashlib.sha256()
    for ch in range(chip.config.sram_channels):
        h.update(chip.sram(ch).tobytes())
    h.update(chip.dram().tobytes())
    h.update(chip.scratch().tobytes())
    for me in range(chip.config.me_count):
        h.update(chip.local_memory(me).tobytes())
    return h.hexdigest()


def contexts(chip: Chip) -> list[Any]:
    core = chip._core
    return [dict(core.context(me, ctx)) for me in range(chip.config.me_count)
            for ctx in range(8)]


def state(chip: Chip) -> dict[str, Any]:
    """Everything a run leaves that the tests compare."""
    return {"now": chip.now, "retired": chip.instructions_retired,
            "counters": chip.counters(), "memory": memory_digest(chip),
            "contexts": contexts(chip)}


def take_frames(chip: Chip) -> list[tuple[int, int, int, bytes]]:
    out = []
    for port in (0, 1):
        sink = chip.sink(port)
        assert isinstance(sink, ListSink)
        out += [(f.port, f.first_bit_cycle, f.last_bit_cycle, f.data) for f in sink.frames]
        sink.frames.clear()
    return out


def run_m(chip: Chip) -> tuple[list[tuple[int, int, int, bytes]], dict[str, Any]]:
    take_frames(chip)
    chip.run(cycles=M_CYCLES)
    return take_frames(chip), state(chip)


@pytest.fixture(scope="module")
def chip_and_snapshot() -> tuple[Chip, Any, dict[str, Any], Any]:
    chip = loaded_router()
    chip.run(cycles=N_CYCLES)
    at_snapshot = state(chip)
    snap = chip.snapshot()
    assert state(chip) == at_snapshot  # taking a snapshot changes nothing
    first = run_m(chip)
    return chip, snap, at_snapshot, first


def test_restore_then_run_gives_the_same_frames_and_counters(chip_and_snapshot: Any) -> None:
    chip, snap, at_snapshot, (frames, after) = chip_and_snapshot
    assert len(frames) > 100  # the router forwards during M: the comparison means something
    chip.restore(snap)
    assert state(chip) == at_snapshot
    again = run_m(chip)
    assert again == (frames, after)


def test_restore_after_other_work(chip_and_snapshot: Any) -> None:
    chip, snap, at_snapshot, first = chip_and_snapshot
    chip.restore(snap)
    chip.run(cycles=250_000)  # past the last frame: other state, other memory contents
    chip.sram(0)[:4096] = 0xDEADBEEF  # host writes through the views, big and small memories
    chip.dram()[1 << 20:(1 << 20) + 100_000] = 7
    chip.scratch()[:64] = 1
    chip.local_memory(2)[:8] = 3
    assert state(chip) != at_snapshot
    chip.restore(snap)
    assert state(chip) == at_snapshot
    assert run_m(chip) == first


def test_memory_words_restored_and_views_stay_valid(chip_and_snapshot: Any) -> None:
    chip, snap, _, _ = chip_and_snapshot
    chip.restore(snap)
    view = chip.sram(r4l.TABLE_CHANNEL)  # taken before the writes and kept across restore
    before = view.copy()
    nonzero = np.flatnonzero(before)
    assert len(nonzero) > 100  # the route table is there
    view[nonzero] ^= 0x5A5A5A5A
    view[-1] = 1
    chip.restore(snap)
    assert np.array_equal(view, before)
    assert np.array_equal(chip.sram(r4l.TABLE_CHANNEL), before)


def test_the_snapshot_says_when_and_how_big(chip_and_snapshot: Any) -> None:
    _, snap, at_snapshot, _ = chip_and_snapshot
    assert snap.cycle == at_snapshot["now"] == N_CYCLES
    assert snap.tx_total == sum(snap_port for _, snap_port in snap.tx_per_port)
    # the route table and the packet buffers, far less than the 288 MiB of SRAM and DRAM
    assert 0 < snap.held_bytes < 64 << 20


def test_one_snapshot_restores_many_times(chip_and_snapshot: Any) -> None:
    chip, snap, _, first = chip_and_snapshot
    for _ in range(3):
        chip.restore(snap)
        assert run_m(chip) == first


def test_a_later_snapshot_and_the_earlier_one_both_hold(chip_and_snapshot: Any) -> None:
    chip, snap, at_snapshot, first = chip_and_snapshot
    chip.restore(snap)
    chip.run(cycles=40_000)
    later_state = state(chip)
    later = chip.snapshot()
    later_run = run_m(chip)
    chip.restore(snap)
    assert state(chip) == at_snapshot
    chip.restore(later)
    assert state(chip) == later_state
    assert run_m(chip) == later_run
    assert later.cycle == snap.cycle + 40_000


def test_a_snapshot_goes_back_only_into_its_chip(chip_and_snapshot: Any) -> None:
    _, snap, _, _ = chip_and_snapshot
    other = Chip("ixp2800")
    with pytest.raises(ValueError, match="another chip"):
        other.restore(snap)


def test_restore_detaches_sources() -> None:
    chip = loaded_router()
    snap = chip.snapshot()
    chip.attach_source(0, ListSource([RxFrame(bytes(60))]))
    assert chip.frames_fed == {0: 0}
    chip.restore(snap)
    assert chip.frames_fed == {}
