"""Chip.run switches the garbage collector off while it runs and puts it back as it was,
also when the run raises (issue 13: the collector's passes were ~18 % of a run)."""

from __future__ import annotations

import gc

import pytest

from npkit.sim.chip import Chip


def test_collector_off_during_the_run_and_restored_after() -> None:
    chip = Chip()
    seen = []
    assert gc.isenabled()
    chip.run(cycles=100, progress=lambda p: seen.append(gc.isenabled()))
    assert seen and not any(seen)
    assert gc.isenabled()


def test_collector_restored_when_the_run_raises() -> None:
    def fail(_progress) -> None:
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        Chip().run(cycles=100, progress=fail)
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    try:
        Chip().run(cycles=100)
        assert not gc.isenabled()
    finally:
        gc.enable()
