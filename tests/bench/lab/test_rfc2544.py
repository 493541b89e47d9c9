"""RFC 2544 procedures (bench/lab/rfc2544.py) on reference devices whose answers are worked
out here by hand from 10GbE wire times (FACTS.md section 2: a 64-byte frame + 20 bytes of
preamble and gap = 67,200 ps at 10 Gb/s)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.bench.lab.reference_devices import QueueingRouter, ideal_router
from npkit.bench.lab.rfc2544 import (
    benchmark_network_routes,
    preset,
    run_rfc2544,
    run_size,
)
from npkit.bench.tester import RouteReference

WIRE_64_PS = 67_200  # (64 + 20) * 8 / 10 Gb/s
TWO = {0: "10gbe", 1: "10gbe"}
FOUR = {p: "10gbe" for p in range(4)}


def reference(ports) -> RouteReference:
    return RouteReference(benchmark_network_routes(sorted(ports)), lambda hop: hop)


def router(capacity_percent: float, queue: int = 1, ports=TWO) -> QueueingRouter:
    """An engine per input port serving exactly ``capacity_percent`` of 64-byte line rate."""
    service = Fraction(WIRE_64_PS) * 100 / Fraction(str(capacity_percent))
    return QueueingRouter(ports, reference(ports), per_packet_ps=service, queue_packets=queue)


def config(**changes):
    base = dict(sizes=(64,), trial_ps=20_000_000, settle_ps=5_000_000, latency_repeats=2,
                resolution_percent=1.0, b2b_max_frames=64, b2b_resolution_frames=1)
    base.update(changes)
    return preset("rfc2544-10g", **base)


@settings(max_examples=6, deadline=None)
@given(capacity=st.floats(5.0, 95.0))
def test_throughput_is_the_capacity_within_the_resolution(capacity: float) -> None:
    # queue of one: any load above the capacity loses the second frame already
    result = run_size(router(capacity), config(tests=("throughput",)), 64)
    found = result.throughput.throughput_percent
    assert capacity - 1.0 <= found <= capacity
    # both ports offer the load: total = 2 x per port, Gbps of 64-byte frames
    per_port = 1e12 / WIRE_64_PS * found / 100
    assert result.throughput_fps == pytest.approx(per_port)
    assert result.total_throughput_fps == pytest.approx(2 * per_port)
    assert result.total_throughput_gbps == pytest.approx(2 * per_port * 64 * 8 / 1e9)
    # the counters of the lowest losing trial name the engine's drops
    assert result.counters_above["engine.dropped"] > 0
    assert result.counters_at_throughput["engine.dropped"] == 0


def test_latency_of_an_ideal_router_is_wire_pipeline_wire() -> None:
    # no service time, 1 us pipeline: each frame leaves exactly wire + 1 us + wire after
    # its first bit, at 100 % too (one input per output)
    device = ideal_router(TWO, reference(TWO), pipeline_ps=1_000_000)
    result = run_size(device, config(tests=("throughput", "latency")), 64)
    assert result.throughput.throughput_percent == 100.0
    lat = result.latency
    assert lat.load_percent == 100.0 and lat.repeats == 2 and lat.lost == 0
    assert lat.min_ps == lat.max_ps == 2 * WIRE_64_PS + 1_000_000
    assert lat.lifo_avg_ps == pytest.approx(1_000_000)
    # every frame of both trials was timed: 20 us at line rate on two ports, twice
    per_trial = 2 * math.ceil(20_000_000 / WIRE_64_PS)
    assert lat.measured == 2 * per_trial
    assert sum(count for _, count in lat.histogram) == lat.measured


def test_frame_loss_rate_matches_the_engine_arithmetic() -> None:
    # queue of one, capacity 43 %: at load L the engine takes one frame in every
    # m = ceil(L / 43) (frames arriving while it is busy are lost); 40 % and below lose none
    result = run_size(router(43.0), config(tests=("frame_loss",), loss_step_percent=10.0), 64)
    steps = result.frame_loss.steps
    assert [s.load_percent for s in steps] == [100, 90, 80, 70, 60, 50, 40, 30]
    for s in steps:
        per_port = s.sent // 2
        m = math.ceil(s.load_percent / 43)
        assert s.lost == 2 * (per_port - math.ceil(per_port / m)), s
    assert steps[-1].lost == steps[-2].lost == 0


def test_back_to_back_finds_the_longest_burst_the_queue_absorbs() -> None:
    # capacity 50 %, queue of 16 (the one in service included): at line rate frame k finds
    # k - floor(k / 2) frames in the system, so frames 0 .. 2*16 - 2 fit: 31 frames
    result = run_size(router(50.0, queue=16), config(tests=("back_to_back",)), 64)
    b2b = result.back_to_back
    assert b2b.per_repeat == (31,) and b2b.mean_frames == 31 and not b2b.capped
    assert any(s.frames_per_port == 31 and s.passed for s in b2b.steps)
    assert all(not s.passed for s in b2b.steps if s.frames_per_port > 31)


def test_back_to_back_is_capped_when_the_longest_burst_passes() -> None:
    device = ideal_router(TWO, reference(TWO))
    b2b = run_size(device, config(tests=("back_to_back",)), 64).back_to_back
    assert b2b.capped and b2b.per_repeat == (64,) and len(b2b.steps) == 1


def test_four_port_full_mesh_spreads_each_port_over_the_three_others() -> None:
    device = ideal_router(FOUR, reference(FOUR))
    cfg = preset("rfc2544-10g-4port", sizes=(64,), trial_ps=10_000_000, settle_ps=5_000_000,
                 tests=("throughput",), resolution_percent=1.0)
    assert cfg.flows() == tuple((i, o) for i in range(4) for o in range(4) if i != o)
    result = run_rfc2544(device, cfg)
    size = result.sizes[0]
    assert size.throughput.throughput_percent == 100.0
    assert size.total_throughput_fps == pytest.approx(4 * 1e12 / WIRE_64_PS)
    # the trial's traffic: 12 streams, each port's three a third of its line rate
    trial = device.run(_mesh_trial(cfg))
    assert len(trial.report.streams) == 12
    sent = [s.sent for s in trial.report.streams.values()]
    assert max(sent) - min(sent) <= 1
    assert trial.report.errors == 0


def _mesh_trial(cfg):
    from npkit.bench.lab.rfc2544 import _make_trials

    return _make_trials(ideal_router(FOUR, reference(FOUR)), cfg, 64).at(100.0)


def test_a_topology_the_device_cannot_run_is_a_clear_error() -> None:
    device = ideal_router(TWO, reference(TWO))
    with pytest.raises(ValueError, match="needs ports 0, 1, 2, 3"):
        run_rfc2544(device, preset("rfc2544-10g-4port", quick=True))
    with pytest.raises(ValueError, match="1gbe"):
        run_rfc2544(device, preset("rfc2544-1g", quick=True))


def test_bad_configuration_values_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown RFC 2544 test"):
        preset("rfc2544-10g", tests=("speed",))
    with pytest.raises(ValueError, match="unknown RFC 2544 preset"):
        preset("rfc2544-40g")
    with pytest.raises(ValueError, match="topology"):
        preset("rfc2544-10g", topology="3-port")
    with pytest.raises(ValueError, match="64-byte frames cannot carry IPv6"):
        preset("rfc2544-10g", family=6, sizes=(64, 128))


def test_standard_sizes_are_rfc_2544s_and_start_higher_for_ipv6() -> None:
    assert preset("rfc2544-10g").frame_sizes() == (64, 128, 256, 512, 1024, 1280, 1518)
    v6 = preset("rfc2544-10g", family=6).frame_sizes()
    assert v6[0] > 64 and v6[1:] == (128, 256, 512, 1024, 1280, 1518)
