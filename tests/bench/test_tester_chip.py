"""The tester on the simulated chip: examples/l2wire (port 0 <-> 1, frames unchanged) with
generated traffic, analyzed: nothing lost, latencies positive and plausible."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from npkit.bench.tester import Analyzer, FixedDestinations, PassThrough, Sizes, Stream, generate
from npkit.bench.tester.chip import attach, port_mismatches, received
from npkit.runtime.loader import load_manifest
from npkit.sim.config import Port

PORTS = {0: "10gbe", 1: "10gbe"}
TEN_GBE_FRAME_PS = {64: 67_200, 1518: 1_230_400}  # (frame + 20) * 8 / 10 Gb/s


def manifest() -> Path:
    return Path(str(resources.files("npkit.examples") / "l2wire" / "l2wire.toml"))


def test_l2wire_forwards_generated_traffic_without_loss() -> None:
    dests = {4: FixedDestinations.of("198.19.0.1", "198.19.0.2"),
             6: FixedDestinations.of("2001:2::99")}
    streams = [
        Stream(id=1, port=0, family=4, sizes=Sizes.fixed(64), count=300, load_percent=50,
               destinations=dests),
        Stream(id=2, port=1, family="mixed", sizes=Sizes.imix(clamp=True, values=(46, 576, 1500)),
               count=150, load_percent=50, destinations=dests, seed=4),
    ]
    traffic = generate(streams, PORTS)
    run = load_manifest(manifest())
    chip = run.chip
    sinks = attach(chip, traffic)
    chip.run(packets=traffic.count(), cycles=20_000_000)
    chip.run(cycles=20_000)
    rx = received([f for s in sinks.values() for f in s.frames], chip.config.clock_hz)

    report = Analyzer(PORTS, PassThrough({0: 1, 1: 0})).analyze(traffic.records(), rx)
    assert report.errors == 0, report.total.counts()
    assert report.total.received == report.total.sent == 450
    lat = report.total.latency
    assert lat.count == 450
    # at least both wire times of a 64-byte frame (in and out, store and forward) ...
    assert lat.min_ps > 2 * TEN_GBE_FRAME_PS[64]
    assert lat.lifo_min_ps > 0
    # ... and, at half load with nothing queued, well under 20 µs
    assert lat.max_ps < 20_000_000
    assert lat.min_ps <= lat.avg_ps <= lat.max_ps


def test_pos_ports_must_match_the_tester_model() -> None:
    from npkit.bench.tester import PORT_MODELS

    pos = PORT_MODELS["oc192pos"]
    assert port_mismatches([Port.oc192_pos()], {0: pos}) == []
    assert port_mismatches([pos.chip_port()], {0: pos}) == []
    problems = port_mismatches([Port.custom(9.58464e9, 9)], {0: pos})
    assert len(problems) == 1 and "5 bytes" in problems[0]


def test_attach_refuses_mismatched_ports() -> None:
    stream = Stream(id=1, port=0, framing="pos", sizes=Sizes.fixed(40), count=1,
                    destinations={4: FixedDestinations.of("198.19.0.1")})
    traffic = generate([stream], {0: "oc192pos"})
    chip = load_manifest(manifest()).chip  # two 10GbE ports
    with pytest.raises(ValueError, match="port 0"):
        attach(chip, traffic)


@pytest.mark.parametrize("offer", [False, True])
def test_streaming_trial_reports_what_the_held_records_give(offer: bool) -> None:
    """stream_trial (C++ batches in -- through sources or Chip.offer_frames -- frames
    analysed as they leave, nothing held) against attach + received + Analyzer.analyze on
    the same streams and chip program."""
    from npkit.bench.tester.chip import stream_trial

    dests = {4: FixedDestinations.of("198.19.0.1", "198.19.0.2"),
             6: FixedDestinations.of("2001:2::99")}
    streams = [
        Stream(id=3, port=1, family="mixed", sizes=Sizes.imix(clamp=True, values=(46, 576, 1500)),
               count=400, load_percent=90, destinations=dests, seed=4, start_ps=5_000_000),
        Stream(id=1, port=0, family=4, sizes=Sizes.fixed(64), count=900, load_percent=100,
               destinations=dests),
        Stream(id=2, port=0, family=6, sizes=Sizes.fixed(200), count=100, load_percent=20,
               destinations=dests, start_ps=1_000_000),
    ]
    expect = PassThrough({0: 1, 1: 0})

    chip = load_manifest(manifest()).chip
    traffic = generate(streams, PORTS)
    sinks = attach(chip, traffic)
    for _ in range(60):
        chip.run(cycles=20_000)
    rx = received([f for s in sinks.values() for f in s.frames], chip.config.clock_hz)
    held = Analyzer(PORTS, expect).analyze(traffic.records(), rx)

    chip = load_manifest(manifest()).chip
    trial = stream_trial(chip, streams, PORTS, expect, batch_frames=64, keep=True,
                         offer=offer)
    for _ in range(60):
        if offer:
            trial.offer_until(chip, chip.now + 20_000)
        chip.run(cycles=20_000)
        trial.sink.flush(chip.now)
    assert trial.fed
    streamed = trial.report()
    assert trial.sent == traffic.count() == 1400
    assert sorted(trial.sink.kept, key=lambda r: (r.port, r.time_ps)) == \
        sorted(rx, key=lambda r: (r.port, r.time_ps))
    assert streamed == held
    assert list(streamed.streams) == list(held.streams) == [1, 2, 3]
    assert held.total.received > 1000 and held.total.latency.count > 1000


def test_received_times_and_last_bit_are_the_exact_fractions() -> None:
    from fractions import Fraction

    from npkit.bench.tester.chip import cycles_to_ps
    from npkit.sim.packets import TxFrame

    clock = 1.4e9
    cycles = [0, 1, 2, 3, 7, 10, 1_399_999_999, 2_800_000_001, 123_456_789_012]
    frames = [TxFrame(c % 2, 0, c, b"x", 0) for c in cycles]
    exact = [round(c * (10**12 / Fraction(clock))) for c in cycles]
    assert cycles_to_ps(cycles, clock) == exact
    assert [r.time_ps for r in received(frames, clock)] == exact
    ties = [round(c * Fraction(5, 4)) for c in range(12)]  # 1.25 ps a cycle: halves to even
    assert cycles_to_ps(range(12), 8e11) == ties and ties[2] == 2 and ties[6] == 8
    dests = {4: FixedDestinations.of("198.19.0.1")}
    streams = [Stream(id=1, port=0, sizes=Sizes((64, 1518, 200)), count=7, destinations=dests),
               Stream(id=2, port=1, sizes=Sizes.fixed(99), count=3, load_percent=10,
                      destinations=dests)]
    traffic = generate(streams, PORTS)
    wire = traffic.models[0].wire_ps
    assert traffic.last_bit_ps() == max(r.time_ps + wire(len(r.data))
                                        for r in traffic.records())
