"""The lab pays set-up once (issue 13): a chip device compiles, reads its route file, packs
its tables and builds its route reference once, not per trial, and the results do not
change; ``Chip.run`` keeps the garbage collector off while it runs."""

from __future__ import annotations

import gc
from dataclasses import replace

import numpy as np
import pytest

from npkit.bench.lab.device import Trial
from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice, RouteConfig
from npkit.bench.tester import Sizes, Stream, generate

SMALL = ChipOptions(routes=RouteConfig(v4_routes=300, v6_routes=100))


def duplex(device, load: float = 60, duration_ps: int = 20_000_000) -> Trial:
    streams = tuple(
        Stream(id=i + 1, port=i, family="mixed", sizes=Sizes.fixed(128), load_percent=load,
               duration_ps=duration_ps, seed=1,
               destinations={f: device.destinations(f, 1 - i, 20) for f in (4, 6)})
        for i in (0, 1))
    return Trial(streams, f"{load} %", settle_ps=50_000_000)


def old_load(device: CompiledChipDevice):
    """A trial's chip as it was loaded before set-up was shared: the linked program on a
    fresh chip, then every memory of a filled NativeProgram copied in word for word."""
    from npkit.runtime.compiled import CompiledRun

    run = CompiledRun(device.linked, seed=device.options.chip_seed)
    run.load_memories(device.native)
    return run


def memories(chip) -> list[np.ndarray]:
    cfg = chip.config
    return ([chip.sram(c).copy() for c in range(cfg.sram_channels)] + [chip.scratch().copy()]
            + [chip.local_memory(me).copy() for me in range(cfg.me_count)])


def test_a_trials_chip_holds_what_the_word_for_word_copy_wrote() -> None:
    device = CompiledChipDevice(SMALL)
    new = memories(device._load().chip)
    old = memories(old_load(device).chip)
    assert len(new) == len(old)
    for a, b in zip(new, old, strict=True):
        assert np.array_equal(a, b)


def test_trials_give_the_results_of_the_old_load() -> None:
    device = CompiledChipDevice(SMALL)
    trial = duplex(device)
    new = device.run(trial)
    again = device.run(trial)  # the second trial reuses everything the first built
    traffic = generate(trial.streams, device.ports)
    old = device._trial_on(device._loaded(old_load(device)), trial, traffic)
    for result in (again, old):
        assert result.received == new.received
        assert result.counters == new.counters
        assert result.report == new.report
    assert new.report.total.received > 100 and new.report.errors == 0


def test_set_up_is_paid_once(monkeypatch) -> None:
    import npkit.compiler.mbl as mbl
    from npkit.bench.lab.devices import RoutedTables

    calls = {"compile": 0, "native": 0, "reference": 0}
    compile_file, native_program = mbl.compile_file, mbl.NativeProgram
    reference = RoutedTables.reference

    def counting(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(mbl, "compile_file", counting("compile", compile_file))
    monkeypatch.setattr(mbl, "NativeProgram", counting("native", native_program))
    monkeypatch.setattr(RoutedTables, "reference", counting("reference", reference))
    device = CompiledChipDevice(SMALL)
    trial = duplex(device, duration_ps=5_000_000)
    for _ in range(3):
        device.run(trial)
    rates = [device.measure_update_rate(4, 12, seed=1) for _ in range(2)]
    # compile: once (linked and the shadows); native: the tables'
    # NativeProgram and the control plane's shadow, shared by every router (cleared)
    assert calls == {"compile": 1, "native": 2, "reference": 1}
    assert rates[0] == rates[1]
    assert "native" not in device.__dict__  # dropped once packed into the manifest


def test_a_reused_shadow_measures_what_a_fresh_one_does() -> None:
    first = CompiledChipDevice(SMALL)
    first.measure_update_rate(6, 12, seed=2)  # the shadow now holds a router's tables
    assert first.measure_update_rate(4, 30, seed=1) == \
        CompiledChipDevice(SMALL).measure_update_rate(4, 30, seed=1)


def test_the_route_file_is_read_once(tmp_path, monkeypatch) -> None:
    from npkit.bench.lab import npf
    from npkit.bench.lab.updates import spare_routes

    table = tmp_path / "table.txt"
    lines = [f"10.{i}.0.0/16" for i in range(60)] + [f"2001:db8:{i:x}::/48" for i in range(20)]
    table.write_text("\n".join(lines) + "\n")
    reads = []
    real = npf.read_routes
    monkeypatch.setattr(npf, "read_routes", lambda *a: reads.append(a) or real(*a))
    npf._read_table.cache_clear()
    routes = npf.SampledRoutes(v4_routes=20, v6_routes=5, source=str(table))
    tables = routes.tables()
    assert routes.tables() == tables
    spares = spare_routes(routes, tables, 10)
    assert len(reads) == 1
    assert len(spares[4]) == 10 and not set(spares[4]) & set(tables[4])
    npf._read_table.cache_clear()


@pytest.mark.parametrize("collecting", [True, False])
def test_chip_run_turns_the_collector_off_and_back_as_it_was(collecting) -> None:
    from npkit.sim.chip import Chip

    chip = Chip("ixp2800")
    seen = []

    def progress(_):
        seen.append(gc.isenabled())

    was = gc.isenabled()
    try:
        (gc.enable if collecting else gc.disable)()
        chip.run(cycles=5_000, progress=progress)
        assert seen and not any(seen)
        assert gc.isenabled() == collecting

        def fail(_):
            raise RuntimeError("stop")

        with pytest.raises(RuntimeError, match="stop"):
            chip.run(cycles=5_000, progress=fail)
        assert gc.isenabled() == collecting
    finally:
        (gc.enable if was else gc.disable)()


def test_a_restored_chip_gives_the_fresh_chips_results() -> None:
    """The device loads one chip and restores its snapshot per trial: a trial after other
    trials (drops, exceptions, frames in flight at the end) gives the TrialResult a fresh
    chip gives, and the device keeps one chip."""
    device = CompiledChipDevice(SMALL)
    light = duplex(device, 30)
    # cut short: frames still inside the chip when the trial ends
    busy = replace(duplex(device, 100, duration_ps=10_000_000), settle_ps=0)
    first = device.run(light)
    chip = device.__dict__["_base"][0].chip
    assert device.run(busy).report.total.lost > 0
    again = device.run(light)
    fresh = device._trial_on(device._load(), light, generate(light.streams, device.ports))
    assert again == first == fresh
    assert device.__dict__["_base"][0].chip is chip
    assert first.report.total.received > 100 and first.report.errors == 0


def test_router4_on_a_restored_chip_counts_from_zero() -> None:
    from npkit.bench.lab.devices import Router4Device

    device = Router4Device(SMALL)
    streams = tuple(Stream(id=i + 1, port=i, sizes=Sizes.fixed(64), load_percent=100,
                           duration_ps=10_000_000, seed=1,
                           destinations={4: device.destinations(4, 1 - i, 20)})
                    for i in (0, 1))
    trial = Trial(streams, settle_ps=50_000_000)
    first, second = device.run(trial), device.run(trial)
    assert second == first
    fresh = device._trial_on(device._load(), trial, generate(trial.streams, device.ports))
    assert fresh == first
