"""The lab's methodology (issue 12, item 4): throughput confirmed by repeated trials, the
convergence of the throughput against trial length, latency at % of line rate, and DRAM
bytes per forwarded packet from the chip's counters.

The answers are computed here by hand: the reference devices of
bench/lab/reference_devices.py (FACTS.md §2's OC-192 POS rate), and for DRAM the l2wire
example, whose microcode moves each frame RBUF -> DRAM once and DRAM -> TBUF once in
commands of whole 16-byte units, a frame of up to 64 bytes in one 64-byte command
(examples/l2wire/rx.uc and tx.uc)."""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.bench.lab import npf
from npkit.bench.lab.device import Trial
from npkit.bench.lab.devices import chip_counters
from npkit.bench.lab.reference_devices import EdgeLossRouter, QueueingRouter, routed_router
from npkit.bench.lab.search import (
    Convergence,
    ThroughputResult,
    search_throughput,
    throughput_by_length,
)
from npkit.bench.lab.unit_use import busiest_units, dram_bytes_per_packet
from npkit.bench.tester import FixedDestinations, PassThrough, Sizes, Stream
from npkit.runtime.routes import committed_histogram, generate_routes

PORTS = {0: "oc192pos", 1: "oc192pos"}
OC192_PAYLOAD_BPS = Fraction("9.584640e9")  # FACTS.md §2
WIRE_PS = Fraction((40 + 9) * 8 * 10**12) / OC192_PAYLOAD_BPS  # 40 IP bytes + PPP 4 + 5
DESTS = {4: FixedDestinations.of("198.18.0.5")}
L2WIRE = Path(__file__).resolve().parents[3] / "examples" / "l2wire" / "l2wire.toml"


def engine(capacity_percent: float, queue: int = 1) -> QueueingRouter:
    """An engine that serves exactly ``capacity_percent`` of line rate at 40 IP bytes."""
    service = WIRE_PS * 100 / Fraction(str(capacity_percent))
    return QueueingRouter(PORTS, PassThrough({0: 1, 1: 0}), per_packet_ps=service,
                          queue_packets=queue)


def stream(load: float, seed: int = 1, start_ps: int = 0, **length) -> Stream:
    length = length or {"count": 100}
    return Stream(1, 0, DESTS, framing="pos", sizes=Sizes.fixed(40), load_percent=load,
                  seed=seed, start_ps=start_ps, **length)


def trial_at(load: float) -> Trial:
    return Trial((stream(load),), settle_ps=5_000_000)


def repeat_at(load: float, k: int) -> Trial:
    """The k-th confirmation: another stream seed, another phase."""
    return Trial((stream(load, seed=1 + k, start_ps=7_919 * k),), settle_ps=5_000_000)


# --------------------------------------------------------------------------- confirmation
def check_confirmed(result: ThroughputResult, repeats: int) -> None:
    """The confirmed search's invariant: a load is accepted only when ``repeats`` trials at
    it all passed; a confirmation stops at the first loss; every failed load lies above
    the throughput and every accepted one at or below it."""
    accepted, failed = [], []
    for load in result.candidates():
        steps = result.trials_at(load)
        assert [s.repeat for s in steps] == list(range(len(steps)))
        assert all(s.passed for s in steps[:-1])  # stopped at the first failure
        if steps[-1].passed:
            assert len(steps) == repeats
            accepted.append(load)
        else:
            failed.append(load)
    assert result.throughput_percent == (max(accepted) if accepted else None)
    assert all(load > (result.throughput_percent or 0) for load in failed)


def edge_device(lossless: float, seed: int, lucky: float = 0.3) -> EdgeLossRouter:
    """True lossless load ``lossless`` %; up to ``lossless`` + 10 % a trial of 100 packets
    loses nothing with probability ``lucky``; above that the engine cannot keep up."""
    per_packet = 1 - lucky ** (1 / 100)
    return EdgeLossRouter(engine(lossless + 10), lossless, lossless + 10, per_packet, seed)


@settings(max_examples=12, deadline=None)
@given(lossless=st.floats(20.0, 85.0), seed=st.integers(1, 10**6),
       repeats=st.integers(1, 5))
def test_a_confirmed_load_passed_every_one_of_its_trials(lossless: float, seed: int,
                                                          repeats: int) -> None:
    result = search_throughput(edge_device(lossless, seed), trial_at, resolution=1.0,
                               repeats=repeats, repeat_at=repeat_at)
    check_confirmed(result, repeats)
    assert result.repeats == repeats


def test_a_lucky_trial_near_the_edge_does_not_raise_the_throughput() -> None:
    """A device that loses at random above 60 %: one trial of 100 packets there passes
    with probability 0.3.  A search that believes one trial reports a load above 60 % as
    soon as one band load it tries is lucky (for 12 devices, all unlucky at the first band
    load they try has probability 0.7**12 < 1.4 %); confirmed by 10 trials a band load
    passes with probability 0.3**10 < 6e-6, so over the 12 devices and the at most 5 band
    loads a search tries, one above 60 % has probability < 4e-4.  The hashes are fixed:
    the test is deterministic, and these are the odds it was written against."""
    plain, confirmed = [], []
    for seed in range(1, 13):
        device = edge_device(60.0, seed)
        plain.append(search_throughput(device, trial_at, resolution=0.5).throughput_percent)
        result = search_throughput(device, trial_at, resolution=0.5, repeats=10,
                                   repeat_at=repeat_at)
        check_confirmed(result, 10)
        confirmed.append(result.throughput_percent)
    assert any(t > 60 for t in plain)  # one trial is fooled ...
    assert all(59.5 <= t <= 60 for t in confirmed)  # ... ten are not, and reach the edge


def test_confirmation_needs_a_way_to_build_its_trials() -> None:
    with pytest.raises(ValueError, match="repeat_at"):
        search_throughput(engine(50), trial_at, repeats=2)
    with pytest.raises(ValueError, match="repeats"):
        search_throughput(engine(50), trial_at, repeats=0)


def test_a_device_that_keeps_up_is_confirmed_at_line_rate() -> None:
    result = search_throughput(engine(100, queue=2), trial_at, repeats=3, repeat_at=repeat_at)
    assert result.throughput_percent == 100.0
    assert [(s.load_percent, s.repeat) for s in result.steps] == [(100.0, k) for k in range(3)]


# --------------------------------------------------------------------------- trial length
def length_trials(length_ps: int):
    def at(load: float) -> Trial:
        return Trial((stream(load, duration_ps=length_ps),), settle_ps=5_000_000)
    return at, None


def test_the_throughput_falls_with_trial_length_to_the_sustained_rate() -> None:
    """An engine of 60 % with a queue of 8: a trial of T at load L > 60 % sends
    T L / (100 w) packets and the backlog grows by (1 - 60 / L) a packet, so it passes
    while T (L - 60) / (100 w) < 8, i.e. up to L = 60 + 800 w / T (w = 40.9 ns): 66.5 % at
    5 us, 61.6 % at 20 us, 60.4 % at 80 us, 60.1 % at 320 us."""
    lengths = [5_000_000, 20_000_000, 80_000_000, 320_000_000]
    conv = throughput_by_length(engine(60, queue=8), length_trials, lengths, resolution=0.5)
    found = [p.search.throughput_percent for p in conv.points]
    assert [p.trial_ps for p in conv.points] == lengths
    assert found == sorted(found, reverse=True)
    for length, value in zip(lengths, found, strict=True):
        bound = 60 + float(800 * WIRE_PS / length)  # the queue's allowance at this length
        one_packet = float(100 * WIRE_PS / length)
        assert 60 - 0.5 <= value <= bound + one_packet, (length, value, bound)
    assert found[0] > 65 and found[-1] <= 60.2
    assert conv.settled and conv.stable_at(320_000_000)
    assert conv.settled_from() == 80_000_000
    assert not Convergence(conv.points[:3], 0.5).settled  # 20 vs 80 us still differ
    assert conv.stable_at(20_000_000) is False and conv.stable_at(5_000_000) is None


def npf_routes() -> dict[int, dict[tuple[int, int], int]]:
    return {4: generate_routes(4, 600, seed=11, histogram=committed_histogram(4)),
            6: generate_routes(6, 200, seed=11, histogram=committed_histogram(6))}


def small_npf(**changes) -> npf.NpfConfig:
    base = dict(traffic=("ipv4",), sizes_v4=(40,), imix=False, trial_ps=20_000_000,
                settle_ps=10_000_000, resolution_percent=2.0, exercised_v4=50,
                exercised_v6=20, overload=False, update_tests=False, loss_step_percent=50)
    return npf.NpfConfig(**(base | changes))


def test_the_npf_convergence_and_confirmation_on_a_reference_router() -> None:
    service = WIRE_PS * 100 / 60
    device = routed_router(PORTS, npf_routes(), per_packet_ps=service, queue_packets=8)
    config = small_npf(confirm_trials=2, convergence_trial_ps=(5_000_000, 80_000_000),
                       convergence_cases=("ipv4:40",))
    result = npf.run_npf(device, config)
    (conv,) = result.convergence
    assert (conv.traffic, conv.size, conv.trial_ps) == ("ipv4", "40", 20_000_000)
    # the suite's own length is always among the lengths searched
    assert [p.trial_ps for p in conv.convergence.points] == [5_000_000, 20_000_000,
                                                              80_000_000]
    values = [p.search.throughput_percent for p in conv.convergence.points]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    assert conv.stable_at_preset == conv.convergence.stable_at(20_000_000)
    (case,) = result.cases
    check_confirmed(case.throughput, 2)
    # the case's search is the convergence's at the suite's length
    assert case.throughput.throughput_percent == values[1]
    # a confirmation trial is another seed and other phases of the same streams
    trials = npf.make_trials(device, config, "ipv4", "40", Sizes.fixed(40, "ip"))
    first, again = trials.at(50), trials.repeat(50, 1)
    assert [s.seed for s in again.streams] == [config.seed + 1] * 2
    # every stream starts once the device is up (ready_ps), a confirmation's up to a phase
    # window later
    assert all(s.start_ps == config.ready_ps for s in first.streams)
    assert all(0 <= s.start_ps - config.ready_ps < config.phase_window_ps
               for s in again.streams)
    assert [s.start_ps for s in again.streams] != [config.ready_ps] * 2
    assert [replace(s, seed=config.seed, start_ps=config.ready_ps) for s in again.streams] \
        == list(first.streams)
    with pytest.raises(ValueError, match="convergence case"):
        npf.run_npf(device, replace(config, convergence_cases=("ipv4:41",)))


def test_the_presets_set_the_method() -> None:
    full = npf.preset("ixp2800-npf").config
    assert full.trial_ps >= 10_000_000_000 == npf.MIN_TRIAL_PS  # 10 ms
    assert full.confirm_trials >= 2 and not full.short_trials
    assert full.trial_ps in full.convergence_trial_ps and "ipv4:40" in full.convergence_cases
    assert min(full.convergence_trial_ps) <= 100_000_000  # from 0.1 ms
    quick = npf.preset("ixp2800-npf", quick=True).config
    assert quick.short_trials and quick.confirm_trials >= 2


# --------------------------------------------------------------------------- latency
def test_latency_at_line_rate_is_at_line_rate_not_of_the_throughput() -> None:
    # engines of 60 %: the throughput is about 60 %, latency "of throughput" runs at
    # 60/57/54/30 % of line rate, "of line rate" at 100/95/90/50 %, the first three
    # above the throughput and losing packets
    service = WIRE_PS * 100 / 60
    device = routed_router(PORTS, npf_routes(), per_packet_ps=service, queue_packets=4)
    config = small_npf(convergence_cases=())
    label, sizes = config.sizes("ipv4", "pos")[0]
    case = npf.run_case(device, config, "ipv4", label, sizes)
    tput = case.throughput.throughput_percent
    assert 58 <= tput <= 60
    assert [p.load_percent for p in case.latency] == [tput * f for f in (1, .95, .9, .5)]
    line = case.latency_line
    assert [p.load_percent for p in line] == [100, 95, 90, 50]
    assert [p.percent_of_throughput for p in line] == [100 * x / tput for x in (100, 95, 90, 50)]
    assert all(p.lost > 0 for p in line[:3]) and line[3].lost == 0
    # the 100 % point is the forwarding-rate trial itself
    assert line[0].lost == case.forwarding.lost and line[0].count == case.forwarding.received
    # below the throughput nothing queues: wire in + service + pipeline + wire out
    idle = float(2 * WIRE_PS + service + 1_000_000)
    assert idle - 1 <= line[3].min_ps <= line[3].max_ps <= idle + 2


def test_the_report_states_the_method_and_the_line_rate_latency(tmp_path) -> None:
    from npkit.bench.lab import npf_report

    service = WIRE_PS * 100 / 60
    device = routed_router(PORTS, npf_routes(), per_packet_ps=service, queue_packets=8)
    config = small_npf(traffic=("ipv4",), imix=True, confirm_trials=2,
                       convergence_trial_ps=(5_000_000,), convergence_cases=("ipv4:40",))
    result = npf.run_npf(device, config)
    sections = npf_report.npf_sections(result, tmp_path)
    text = "\n".join(s.markdown for s in sections)
    titles = [s.title for s in sections]
    assert "Trial length" in titles and "Latency at % of line rate" in titles
    assert "2 trials at it all lose nothing" in text
    assert "These figures are from short trials" in text  # 20 us < 10 ms
    assert "of line rate" in text and "of our throughput" in text
    assert "Beside the published IMIX rows" in text and "avg 10.80 µs" in text
    assert "DRAM bytes moved per forwarded packet" in text
    assert (tmp_path / "npf_convergence.png").is_file()
    # the JSON reads back and redraws the same sections
    from npkit.bench.lab.report import load_result, results_json

    (tmp_path / "r.json").write_text(results_json(result), encoding="utf-8")
    again = load_result(tmp_path / "r.json")
    assert results_json(again) == results_json(result)


# --------------------------------------------------------------------------- DRAM
def _moved(frame_bytes: int) -> int:
    """Bytes one l2wire copy of a frame moves: whole 16-byte units, at least 64."""
    return max(64, 16 * math.ceil(frame_bytes / 16))


@pytest.mark.parametrize("frame_bytes", [60, 200, 1514])
def test_dram_bytes_per_packet_of_l2wire_is_one_write_and_one_read(frame_bytes: int) -> None:
    from npkit.runtime.loader import load_manifest
    from npkit.sim import ListSink, ListSource, RxFrame

    run = load_manifest(L2WIRE)
    chip = run.chip
    header = bytes.fromhex("020000000001" "020000000002" "0800")
    frames = [(header + bytes([i]) * 2000)[:frame_bytes] for i in range(12)]
    chip.attach_source(0, ListSource([RxFrame(f, i * 2e-6) for i, f in enumerate(frames)]))
    sink = ListSink()
    chip.attach_sink(1, sink)
    chip.run(until_idle=True, quiet_cycles=50_000)
    assert [f.data for f in sink.frames] == frames
    counters = chip_counters(chip.counters(), chip.now)
    assert dram_bytes_per_packet(counters) == 2 * _moved(frame_bytes)
    names = [name for name, _ in busiest_units(counters, 3)]
    assert len(names) == 3 and set(names) <= {f"me{m}" for m in range(16)} | \
        {f"dram{c}" for c in range(3)} | {f"sram{c}" for c in range(4)} | {"scratch"}


def test_the_per_packet_figures_from_counters() -> None:
    counters = {"dram0.bytes": 600, "dram1.bytes": 400, "dram2.bytes": 0,
                "port0.tx_frames": 3, "port1.tx_frames": 2, "me4.busy_fraction": 0.5,
                "dram1.busy_fraction": 0.9, "fwd.busy_fraction": 0.99,
                "scratch.busy_fraction": 0.5}
    assert dram_bytes_per_packet(counters) == 200
    assert busiest_units(counters, 2) == (("dram1", 0.9), ("me4", 0.5))
    assert dram_bytes_per_packet({"port0.tx_frames": 3}) is None  # no DRAM counters
    assert dram_bytes_per_packet({"dram0.bytes": 64}) is None  # nothing forwarded


def test_the_chip_device_counts_dram_bytes_per_forwarded_packet() -> None:
    """The compiled POS router at a light load: the trial's counters carry every DRAM
    channel's bytes, and each forwarded 40-byte packet (PPP 4 + IP 40 = 44 bytes, 48 in
    16-byte units) was at least written to DRAM once and read back once."""
    import dataclasses

    # the single chip (the two-chip system's per-chip figures: test_system_device.py)
    chosen = npf.preset("ixp2800-npf", quick=True, system="single-ixp2800")
    chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(3_000, 400, source=""))
    device = npf.chip_device(chosen)
    config = small_npf(trial_ps=10_000_000, settle_ps=30_000_000)
    label, sizes = config.sizes("ipv4", "pos")[0]
    result = device.run(npf.make_trials(device, config, "ipv4", label, sizes).at(20))
    assert result.report.total.lost == 0 and result.report.total.received > 0
    channels = sorted(k for k in result.counters if k.startswith("dram") and
                      k.endswith(".bytes"))
    assert channels == ["dram0.bytes", "dram1.bytes", "dram2.bytes"]
    per_packet = dram_bytes_per_packet(result.counters)
    assert per_packet is not None and per_packet >= 2 * 48
    moved = sum(result.counters[k] for k in channels)
    assert per_packet == moved / result.report.total.received
