"""The core's debugger hooks (docs/sim-core.md, "Debug hooks"): breakpoints stop before the
instruction, steps after a context's instruction, watchpoints after the write that changed
memory; coverage counts every retirement; and none of them changes what the chip does --
a run broken into hundreds of debugger stops ends in the state of one plain run.

The workload is the hand-written router4 at full line rate (as tests/sim/api/
test_api_snapshot.py), which keeps every kind of command in flight."""

from __future__ import annotations

import pytest
from test_api_snapshot import loaded_router, state

from npkit.sim import isa
from npkit.sim.chip import Chip

TOTAL = 12_000  # cycles every scenario runs to


def plain() -> dict:
    chip = loaded_router()
    chip.run(cycles=TOTAL)
    return state(chip)


@pytest.fixture(scope="module")
def reference() -> dict:
    return plain()


def run_to_total(chip: Chip, max_stops: int) -> list:
    """Run to cycle TOTAL, resuming after every debugger stop; the stops met."""
    stops = []
    while chip.now < TOTAL:
        result = chip.run(cycles=TOTAL - chip.now)
        if result.reason in ("breakpoint", "step", "watch"):
            stops.append(chip.debug_stop)
            if len(stops) >= max_stops:
                chip.set_breakpoints(0, [])
                chip.step_after(0, 0, 0)
                chip.clear_watches()
    return stops


def busy_pc(me: int) -> int:
    """A PC of ME me that retires often (from a coverage run of a copy)."""
    probe = loaded_router()
    probe.enable_coverage()
    probe.run(cycles=3_000)
    counts = probe.coverage_counts(me)
    return int(counts.argmax())


def test_breakpoints_stop_before_the_instruction_and_change_nothing(reference) -> None:
    chip = loaded_router()
    pc = busy_pc(0)
    chip.set_breakpoints(0, [pc])
    first = chip.run(cycles=TOTAL)
    assert first.reason == "breakpoint"
    stop = chip.debug_stop
    assert (stop.me, stop.pc) == (0, pc)
    ctx = chip.context_state(0, stop.ctx)
    assert ctx["pc"] == pc and ctx["state"] == "executing"
    retired = chip.instructions_retired
    # resuming passes over this breakpoint once, then stops at it again
    again = chip.run(cycles=TOTAL)
    assert again.reason == "breakpoint" and chip.instructions_retired > retired
    stops = run_to_total(chip, 10_000)
    assert len(stops) >= 100 and all(s.pc == pc and s.me == 0 for s in stops)
    assert state(chip) == reference


def test_steps_stop_after_each_instruction_of_the_context_and_change_nothing(reference) -> None:
    chip = loaded_router()
    chip.step_after(0, 3, 1)
    before = chip.context_state(0, 3)["instructions"]
    assert chip.run(cycles=TOTAL).reason == "step"
    assert chip.context_state(0, 3)["instructions"] == before + 1
    for k in range(2, 300):
        chip.step_after(0, 3, 1)
        assert chip.run(cycles=TOTAL).reason == "step"
        assert chip.debug_stop.ctx == 3
        assert chip.context_state(0, 3)["instructions"] == before + k
    chip.step_after(0, 3, 0)
    chip.run(cycles=TOTAL - chip.now)
    assert state(chip) == reference


def test_watchpoints_stop_after_the_write_and_change_nothing(reference) -> None:
    chip = loaded_router()
    # the scratch ring words router4 puts handles through change all the time
    ring = next(r for r in range(chip.config.scratch_rings) if chip.ring_state(r)["configured"])
    base, size = chip.ring_state(ring)["base"], chip.ring_state(ring)["size"]
    index = chip.add_watch("scratch", 4 * base, 4 * size)
    before = chip.scratch()[base:base + size].copy()
    assert chip.run(cycles=TOTAL).reason == "watch"
    stop = chip.debug_stop
    assert stop.watch == index
    assert (chip.scratch()[base:base + size] != before).any()
    word = chip.image_on(stop.me).words[stop.pc]
    assert isa.decode(word)[0].name == "scratch"   # the write that changed the ring
    stops = run_to_total(chip, 10_000)
    assert len(stops) >= 20 and all(s.reason == "watch" for s in stops)
    assert state(chip) == reference


def test_coverage_counts_every_retired_instruction(reference) -> None:
    chip = loaded_router()
    chip.enable_coverage()
    chip.run(cycles=TOTAL)
    total = sum(int(chip.coverage_counts(me).sum()) for me in range(chip.config.me_count))
    assert total == chip.instructions_retired
    per_me = chip.counters()["mes"]
    for me in range(chip.config.me_count):
        assert int(chip.coverage_counts(me).sum()) == per_me[me]["instructions"]
    assert state(chip) == reference


def test_bad_hook_arguments_are_value_errors() -> None:
    chip = loaded_router()
    with pytest.raises(ValueError, match="memory is one of"):
        chip.add_watch("flash", 0)
    with pytest.raises(ValueError, match="outside the memory"):
        chip.add_watch("scratch", chip.config.scratch_bytes - 2, 4)
    with pytest.raises(ValueError, match="does not exist"):
        chip.set_breakpoints(99, [1])
    assert chip.debug_stop is None
