"""The streamed trial's per-port tally (bench/tester/tally.py) against the same figures
computed over held frames: IP bits by the per-frame rule of ``npf._ip_bits``, the output
line's use by ``npf._output_use``, the last bit by ``Traffic.last_bit_ps``; and the sink's
cycle -> picosecond conversion against exact ``Fraction`` rounding."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from npkit.bench.lab.npf import _ip_bits, _output_use
from npkit.bench.tester import RxRecord, Sizes, Stream, generate, pick_destinations, port_model
from npkit.bench.tester.chip import cycles_to_ps
from npkit.bench.tester.media import PS_PER_S
from npkit.bench.tester.tally import PortTally, TrialTally, ip_lengths
from npkit.runtime.routes import committed_histogram, generate_routes
from npkit.sim.frames import PackedFrames


def _frames(framing: str, seed: int, count: int = 400) -> list[bytes]:
    """Generated IPv4/IPv6 frames, some damaged (link header, length field, truncated,
    a few bytes only) and some not IP at all."""
    rng = random.Random(seed)
    routes = {f: generate_routes(f, 300, 7, committed_histogram(f), 16) for f in (4, 6)}
    dests = {f: pick_destinations(routes[f], f, 20, seed=1) for f in (4, 6)}
    stream = Stream(id=1, port=0, destinations=dests, framing=framing, family="mixed",
                    sizes=Sizes.imix(clamp=True), count=count, seed=seed)
    kind = "oc192pos" if framing == "pos" else "10gbe"
    frames = [r.data for r in generate([stream], {0: kind}).records()]
    out = []
    for data in frames:
        roll = rng.random()
        if roll < 0.1:
            data = bytes([rng.randrange(256)]) + data[1:]
        elif roll < 0.2:
            cut = rng.randrange(len(data))
            data = data[:cut]
        elif roll < 0.3:
            at = rng.randrange(min(len(data), 24))
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
        out.append(data)
    return out + [b"", b"\xff", b"\xff\x03\x00\x21\x45"]


@pytest.mark.parametrize("framing", ["pos", "ethernet"])
def test_ip_lengths_are_the_per_frame_rule(framing: str) -> None:
    frames = _frames(framing, seed=3)
    lengths = ip_lengths(framing, frames)
    assert lengths.tolist() == [_ip_bits(framing, [d]) // 8 for d in frames]
    assert 8 * int(lengths.sum()) == _ip_bits(framing, frames)
    assert ip_lengths(framing, []).tolist() == []


@pytest.mark.parametrize("packed", [False, True])
def test_a_port_tally_gives_the_held_frames_line_use_and_counts(packed: bool) -> None:
    """``packed``: the batches as PackedFrames views (the lab's: one buffer, no bytes each;
    the short and empty frames go through the Python rule read from the buffer)."""
    rng = random.Random(5)
    model = port_model("oc192pos")
    frames = _frames("pos", seed=9, count=300)
    given = PackedFrames.from_list(frames) if packed else frames
    times = sorted(rng.randrange(10**9) for _ in frames)
    records = [RxRecord(1, t, d) for t, d in zip(times, frames, strict=True)]
    tally = PortTally("pos")
    end = times[len(times) // 2]
    for start in range(0, len(frames), 37):  # in batches, as a sink flushes them
        tally.add(np.array(times[start:start + 37]), given[start:start + 37], end)
    assert tally.frames == len(frames)
    assert tally.ip_bits == _ip_bits("pos", frames)
    assert tally.until == sum(1 for t in times if t <= end)
    assert tally.line_use(model) == _output_use(model, records)
    assert PortTally("pos").line_use(model) == (0.0, 0.0)


@pytest.mark.parametrize("framing", ["pos", "ethernet"])
def test_a_port_tally_counts_each_length_as_the_frames_held(framing: str) -> None:
    rng = random.Random(13)
    frames = _frames(framing, seed=11)
    times = [rng.randrange(-10**6, 10**12) for _ in frames]  # any order, as a list
    end = sorted(times)[len(times) // 3]
    tally = PortTally(framing)
    tally.add(times, frames, end)
    assert tally.ip_bits == _ip_bits(framing, frames)
    assert tally.until == sum(1 for t in times if t <= end)
    lengths = sorted({len(d) for d in frames})
    assert list(tally.by_length) == lengths
    for size in lengths:
        mine = [t for t, d in zip(times, frames, strict=True) if len(d) == size]
        assert tally.by_length[size] == len(mine)
        assert (tally.first_ps[size], tally.last_ps[size]) == (min(mine), max(mine))


def test_a_trial_tally_gives_the_traffics_last_bit_and_the_frames_out_by_the_end() -> None:
    routes = generate_routes(4, 300, 7, committed_histogram(4), 16)
    dests = {4: pick_destinations(routes, 4, 20, seed=1)}
    streams = [Stream(id=p + 1, port=p, destinations=dests, framing="pos",
                      sizes=Sizes.imix(clamp=True), load_percent=90, duration_ps=2_000_000,
                      seed=p, start_ps=1000 * p) for p in (0, 1)]
    ports = {0: "oc192pos", 1: "oc192pos"}
    traffic = generate(streams, ports)
    tally = TrialTally("pos", window_ps=2_000_000)
    for port, records in traffic.ports.items():
        tally.add_sent(port, np.array([r.time_ps for r in records]), [r.data for r in records])
    models = {p: port_model(k) for p, k in ports.items()}
    assert tally.last_bit_ps(models) == traffic.last_bit_ps()
    assert tally.sent_ip_bits() == _ip_bits("pos", [r.data for r in traffic.records()])
    back = [RxRecord(r.port ^ 1, r.time_ps + 700_000, r.data) for r in traffic.records()]
    for port in (0, 1):
        mine = [r for r in back if r.port == port]
        tally.add_received(port, [r.time_ps for r in mine], [r.data for r in mine])
    end = min(r.time_ps for r in traffic.records()) + 2_000_000
    assert tally.received_by_end() == sum(1 for r in back if r.time_ps <= end) > 0
    with pytest.raises(RuntimeError, match="before any sent"):
        TrialTally("pos", 10).add_received(0, [5], [b"x" * 44])


@pytest.mark.parametrize("clock_hz", [1.4e9, 1.0e9, 700e6 + 1 / 3])
def test_cycles_to_ps_rounds_half_to_even_exactly(clock_hz: float) -> None:
    rng = random.Random(11)
    cycles = [0, 1, 2, 5, 7, 14, 2**31 - 1] + [rng.randrange(2**31) for _ in range(500)]
    exact = [round(Fraction(c) * PS_PER_S / Fraction(clock_hz)) for c in cycles]
    assert cycles_to_ps(cycles, clock_hz) == exact
    big = [2**31, 2**40 + 3]  # past the numpy path's range: the per-cycle one
    assert cycles_to_ps(big, clock_hz) == \
        [round(Fraction(c) * PS_PER_S / Fraction(clock_hz)) for c in big]
