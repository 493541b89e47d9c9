"""The compiled router on the published two-chip system (bench/lab/system_device.py): the
tester's ports are the system's external ports, every frame crosses the chip that receives
its input line, what a chip sends to a port leading nowhere is a named loss, and the chips
on two host threads give the serial run's frames and counters; a streamed trial (the
default: nothing held per frame) gives the held trial's report, counters and rates."""

from __future__ import annotations

import dataclasses

import pytest

from npkit.bench.lab import npf
from npkit.bench.lab.devices import STEP_CYCLES
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.system_device import SystemChipDevice
from npkit.bench.lab.unit_use import dram_bytes_per_packet, dram_bytes_per_packet_by_chip
from npkit.bench.tester import Sizes, generate
from npkit.runtime.system import SystemSpec

TRIAL = dict(trial_ps=10_000_000, settle_ps=30_000_000)


def _device(system: str = "dual-ixp2800-npf", threads: int = 1, **options):
    chosen = npf.preset("ixp2800-npf", quick=True, system=system, threads=threads)
    chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(3_000, 400, source=""))
    return npf.chip_device(chosen, **options), dataclasses.replace(chosen.config, **TRIAL)


@pytest.fixture(scope="module")
def dual():
    """The device with held trials: the tests that look at the frames themselves."""
    return _device(streamed=False)


def test_the_preset_runs_on_the_two_chip_system_by_default() -> None:
    assert npf.preset("ixp2800-npf").system == "dual-ixp2800-npf"
    device, _ = _device()
    assert isinstance(device, SystemChipDevice)
    described = device.describe()
    assert described["chips"] == ["east", "west"]
    assert described["wiring"]["pos0"] == {"rx": "east:0", "tx": "west:1",
                                           "framer": "ixf18101", "rx_delay_ns": 500,
                                           "tx_delay_ns": 500}
    single, _ = _device("single-ixp2800")
    assert not isinstance(single, SystemChipDevice)  # today's single chip, unchanged
    with pytest.raises(LabConfigError, match="no such preset or file"):
        _device("no-such-system")


def test_next_hops_name_the_chip_port_of_each_line() -> None:
    device, _ = _device()
    # east: pos0 comes in on its port 0 (its transmit side leads nowhere), pos1 leaves
    # on its port 1; west the other way round
    assert device.chip_port_map("east") == {0: 0, 1: 1}
    assert device.chip_port_map("west") == {0: 1, 1: 0}
    spec = SystemSpec.load("dual-ixp2800-npf")
    assert spec.unconnected("east") == [0] and spec.unconnected("west") == [0]


def test_duplex_traffic_crosses_one_chip_each_way(dual) -> None:
    device, config = dual
    label, sizes = config.sizes("ipv4", "pos")[0]
    trials = npf.make_trials(device, config, "ipv4", label, sizes)
    result = device.run(trials.at(20))
    total = result.report.total
    assert total.received == total.sent > 0 and result.report.errors == 0
    counters = result.counters
    # each chip received one line and transmitted the other's frames
    for chip in ("east", "west"):
        assert counters[f"{chip}.port0.rx_frames"] == counters[f"{chip}.port1.tx_frames"] > 0
        assert counters[f"{chip}.port1.rx_frames"] == counters[f"{chip}.port0.tx_frames"] == 0
    assert counters["east.port0.rx_frames"] + counters["west.port0.rx_frames"] == total.sent
    # the framers' 500 + 500 ns are in every frame's latency, beside two 40-byte wire times
    assert total.latency.min_ps > 1_000_000 + 2 * 40_000
    per_chip = dram_bytes_per_packet_by_chip(counters)
    assert set(per_chip) == {"east", "west"}
    assert dram_bytes_per_packet(counters) == max(per_chip.values())
    assert counters["loss.unconnected (east port 0)"] == 0


def test_a_frame_towards_a_line_the_chip_does_not_transmit_is_a_named_loss(dual) -> None:
    device, config = dual
    # pos1 -> pos1: west receives pos1 but transmits only pos0; its next hops for pos1 name
    # its port 0, whose transmit side leads nowhere
    trials = npf.make_trials(device, config, "ipv4", "64", Sizes.fixed(64, "ip"),
                             flows=((1, 1),))
    result = device.run(trials.at(10))
    total = result.report.total
    assert total.sent > 0 and total.received == 0
    assert result.counters["loss.unconnected (west port 0)"] == total.lost == total.sent


def test_two_threads_give_the_serial_frames_and_counters() -> None:
    serial, config = _device(threads=1, streamed=False)
    threaded, _ = _device(threads=2, streamed=False)
    label, sizes = config.sizes("ipv4", "pos")[0]
    for load in (30, 100):
        results = []
        for device in (serial, threaded):
            trials = npf.make_trials(device, config, "ipv4", label, sizes)
            results.append(device.run(trials.at(load)))
        one, two = results
        assert [(r.port, r.time_ps, r.data) for r in one.received] == \
            [(r.port, r.time_ps, r.data) for r in two.received]
        assert one.counters == two.counters and one.sim_ps == two.sim_ps
    assert one.report.total.received > 0


@pytest.mark.parametrize("traffic", ["ipv4", "mixed"])
def test_two_threads_give_the_serial_streamed_trial(traffic) -> None:
    """A streamed trial long enough for several steps a meeting of the threads
    (``STEPS_PER_MEETING``: each chip offered its frames, run and drained on its own thread
    for several lab steps, the frames out handed on step by step after): the serial
    report, counters, simulated time and tally, also with loss (100 % and overload: both
    inputs to one output, so some frames end as exceptions and drops) and with batches far
    smaller than a step (the generator's look-ahead beside the chips)."""
    serial, config = _device()
    threaded, _ = _device(threads=2)
    assert serial.streamed and threaded.streamed
    config = dataclasses.replace(config, trial_ps=150_000_000, exercised_v6=100)  # ~10 steps
    label, sizes = config.sizes(traffic, "pos")[0]
    trials = npf.make_trials(serial, config, traffic, label, sizes)
    for trial in (trials.at(60), trials.at(100)):
        one, two = serial.run(trial), threaded.run(trial)
        assert one.counters["sim.cycles"] > 5 * STEP_CYCLES
        assert one == two
        small = threaded.run_streamed(trial, threaded.restored(), batch_frames=97)
        assert small == serial.run_streamed(trial, serial.restored(), batch_frames=97)
    over = npf.overload(serial, config, traffic, label, sizes)
    assert over == npf.overload(threaded, config, traffic, label, sizes)
    assert over.rate.lost > 0
    # route updates: each chip's time moved by its control plane (System's advance)
    updated = serial.run_with_updates(trials.at(60), 4, 1_000_000, seed=1)
    assert updated.counters["updates.landed"] > 0
    assert updated == threaded.run_with_updates(trials.at(60), 4, 1_000_000, seed=1)


def test_route_updates_land_on_both_chips_while_they_forward(dual) -> None:
    device, config = dual
    label, sizes = config.sizes("ipv4", "pos")[0]
    trials = npf.make_trials(device, config, "ipv4", label, sizes)
    result = device.run_with_updates(trials.at(20), 4, 1_000_000, seed=1)
    total = result.report.total
    assert total.received == total.sent > 0 and result.report.errors == 0
    assert result.counters["updates.scheduled"] >= 10
    assert 0 < result.counters["updates.landed"] <= result.counters["updates.scheduled"]
    # the same frames forwarded as without updates (the updates touch no exercised route)
    plain = device.run(trials.at(20))
    assert [r.data for r in plain.received] == [r.data for r in result.received]


def test_a_pickled_device_runs_the_same_images(dual) -> None:
    """What a dask worker gets: the configuration and every chip's linked images."""
    import pickle

    device, config = dual
    label, sizes = config.sizes("ipv4", "pos")[0]
    trials = npf.make_trials(device, config, "ipv4", label, sizes)
    here = device.run(trials.at(50))
    there = pickle.loads(pickle.dumps(device))
    assert there.describe() == device.describe()
    again = there.run(npf.make_trials(there, config, "ipv4", label, sizes).at(50))
    assert [(r.port, r.time_ps, r.data) for r in again.received] == \
        [(r.port, r.time_ps, r.data) for r in here.received]
    assert again.counters == here.counters


def test_a_restored_system_gives_the_fresh_systems_results(dual) -> None:
    """Every chip is loaded once and restored per trial: a trial after another gives the
    TrialResult of a freshly loaded system."""
    device, config = dual
    label, sizes = config.sizes("ipv4", "pos")[0]
    trials = npf.make_trials(device, config, "ipv4", label, sizes)
    first = device.run(trials.at(30))
    device.run(trials.at(100))
    again = device.run(trials.at(30))
    fresh = device.run_traffic(trials.at(30), generate(trials.at(30).streams, device.ports),
                               device.load())
    assert again == first == fresh
    assert first.report.total.received > 0


def test_forwarding_figures_count_each_chips_own_forwarding_mes(dual) -> None:
    """A chip that receives one port links its forwarding MEs elsewhere than the lab's
    single chip; fwd.* counters average that chip's, all of which ran."""
    device, config = dual
    label, sizes = config.sizes("ipv4", "pos")[0]
    result = device.run(npf.make_trials(device, config, "ipv4", label, sizes).at(30))
    counters = result.counters
    for chip in ("east", "west"):
        fwd = tuple(device.chip_linked(chip).program.fwd_mes)
        assert fwd != tuple(device.linked.program.fwd_mes)  # why the link matters
        numbers = [m if m < 8 else m + 8 for m in fwd]  # ME index -> IXP2800 ME number
        ran = {int(k.split(".")[1][2:]) for k, v in counters.items()
               if k.startswith(f"{chip}.me") and k.endswith(".instructions") and v}
        assert set(numbers) <= ran
        busy = [counters[f"{chip}.me{m}.busy_fraction"] for m in numbers]
        assert min(busy) > 0
        assert counters[f"{chip}.fwd.busy_fraction"] == pytest.approx(sum(busy) / len(busy))


def _same_trial(streamed, held, config, rate_ps: int) -> None:
    assert streamed.traffic is None and streamed.received == [] and streamed.tally
    assert streamed.report == held.report
    assert streamed.counters == held.counters and streamed.sim_ps == held.sim_ps
    assert npf.rate_point(100, streamed, rate_ps, "pos") == \
        npf.rate_point(100, held, rate_ps, "pos")


@pytest.mark.parametrize("traffic", ["ipv4", "mixed"])
def test_a_streamed_trial_gives_the_held_trials_result(dual, traffic) -> None:
    """The default trial holds no frame (C++ batches offered to the chips, frames analysed
    and tallied as they leave): the report, counters, simulated time and rates of the held
    trial, with loss (overload: both inputs to one output), confirmation phases, and
    batches far smaller than the trial (the generator's look-ahead at the end)."""
    held, _ = dual
    device, config = _device()
    assert device.streamed and not held.streamed
    config = dataclasses.replace(config, trial_ps=30_000_000, exercised_v6=100)
    label, sizes = config.sizes(traffic, "pos")[0]
    trials = npf.make_trials(device, config, traffic, label, sizes)
    for trial in (trials.at(60), trials.repeat(100, 1)):
        _same_trial(device.run(trial), held.run(trial), config, config.trial_ps)
        small = device.run_streamed(trial, device.restored(), batch_frames=97)
        _same_trial(small, held.run(trial), config, config.trial_ps)
    first = device.run(trials.at(60))
    assert first == device.run_streamed(trials.at(60), device.load())  # restored = fresh
    over = npf.overload(device, config, traffic, label, sizes)
    assert over == npf.overload(held, config, traffic, label, sizes)
    assert over.rate.lost > 0 and 0 < over.output_utilization <= 1


def test_a_streamed_trial_under_route_updates_gives_the_held_ones_result(dual) -> None:
    held, _ = dual
    device, config = _device()
    label, sizes = config.sizes("ipv4", "pos")[0]
    trial = npf.make_trials(device, config, "ipv4", label, sizes).at(40)
    streamed = device.run_with_updates(trial, 4, 1_000_000, seed=1)
    _same_trial(streamed, held.run_with_updates(trial, 4, 1_000_000, seed=1), config,
                config.trial_ps)
    assert streamed.counters["updates.landed"] > 0
