"""The simulated-chip devices (bench/lab/devices.py): the compiled router and router4 run
tester traffic; the analyzer checks every frame against a longest-prefix match of the
loaded table done here in Python (RouteReference), independent of the chip's trie."""

from __future__ import annotations

import math

import pytest

from npkit.bench.lab.device import Trial
from npkit.bench.lab.devices import (
    ChipOptions,
    CompiledChipDevice,
    RouteConfig,
    RoutedTables,
    Router4Device,
)
from npkit.bench.tester import FixedDestinations, Sizes, Stream
from npkit.bench.tester.destinations import BITS, lpm_prefix

WIRE_64_PS = 67_200
SMALL = ChipOptions(routes=RouteConfig(v4_routes=300, v6_routes=100))


@pytest.fixture(scope="module")
def compiled() -> CompiledChipDevice:
    return CompiledChipDevice(SMALL)


def duplex(device, load: float, duration_ps: int = 60_000_000, family=4, size: int = 64,
           seed: int = 1) -> Trial:
    streams = tuple(
        Stream(id=i + 1, port=i, family=family, sizes=Sizes.fixed(size), load_percent=load,
               duration_ps=duration_ps, seed=seed,
               destinations={f: device.destinations(f, 1 - i, 20, seed)
                             for f in ((4, 6) if family == "mixed" else (family,))})
        for i in (0, 1))
    return Trial(streams, f"{load} %", settle_ps=100_000_000)


def test_destinations_leave_on_the_wanted_port() -> None:
    tables = RoutedTables(RouteConfig(v4_routes=300, v6_routes=100).tables(), ports=2)
    import random

    rng = random.Random(3)
    for family in (4, 6):
        routes = tables.routes[family]
        lengths = sorted({n for _, n in routes}, reverse=True)
        for port in (0, 1):
            dests = tables.destinations(family, port, 25, seed=2)
            assert len(dests) == 25
            for k in range(100):
                _, address = dests.draw(k, rng)
                hop = routes[lpm_prefix(routes, lengths, address, BITS[family])]
                assert hop % 2 == port
    with pytest.raises(ValueError, match="leave on port 0"):
        tables.destinations(6, 0, 10_000)


def test_compiled_router_forwards_mixed_traffic_without_errors(compiled) -> None:
    result = compiled.run(duplex(compiled, 30, family="mixed", size=128))
    total = result.report.total
    assert total.sent > 250 and result.report.errors == 0  # 2 x 60 us x 30 % / 118.4 ns
    assert total.received == total.sent and total.filtered == 0
    lat = total.latency
    assert lat.count == total.sent
    assert lat.min_ps > 2 * WIRE_64_PS  # store and forward: at least both wire times
    c = result.counters
    assert 0 < c["fwd.busy_fraction"] < 1 and c["fwd.instructions_per_frame"] > 50
    assert c["port0.rx_frames"] + c["port1.rx_frames"] == total.sent
    assert any(k.startswith("sram") and k.endswith("busy_fraction") for k in c)
    assert result.sim_ps >= max(s.duration_ps for s in duplex(compiled, 30).streams)


def test_compiled_router_overload_loses_frames_and_counts_why(compiled) -> None:
    result = compiled.run(duplex(compiled, 100, duration_ps=100_000_000))
    total = result.report.total
    assert total.lost > 0
    # lost frames are receive drops the device counted: nothing vanished unexplained
    dropped = sum(v for k, v in result.counters.items() if k.startswith(("rx.", "drop.")))
    assert dropped == total.lost
    assert total.misrouted == total.corrupted == total.duplicates == 0


def test_forwarding_busy_is_the_mean_over_the_forwarding_mes(compiled) -> None:
    """fwd_mes are ME indices (0..15); the flat counters are keyed by the IXP2800's ME
    numbers (0..7, 16..23): every forwarding ME, past the first cluster too, counts."""
    result = compiled.run(duplex(compiled, 50, duration_ps=30_000_000))
    c = result.counters
    fwd = tuple(compiled.linked.program.fwd_mes)
    assert max(fwd) >= 8  # some in the second cluster
    busy = [c[f"me{m if m < 8 else m + 8}.busy_fraction"] for m in fwd]
    assert min(busy) > 0
    assert c["fwd.busy_fraction"] == pytest.approx(sum(busy) / len(busy))


def test_trials_are_deterministic(compiled) -> None:
    trial = duplex(compiled, 50, duration_ps=30_000_000)
    first, second = compiled.run(trial), compiled.run(trial)
    assert first.received == second.received
    assert first.counters == second.counters and first.sim_ps == second.sim_ps


def test_unroutable_frames_are_not_losses(compiled) -> None:
    # 198.51.100.1 (TEST-NET-2) is in no route of the generated table: the router raises
    # no_route exceptions for it, which the analyzer filters, not counts as lost
    tables = compiled.tables
    address = 0xC6336401
    assert lpm_prefix(tables.routes[4], sorted({n for _, n in tables.routes[4]}, reverse=True),
                      address, 32) is None, "the generated table covers the test address"
    stream = Stream(id=1, port=0, sizes=Sizes.fixed(64), load_percent=10, count=50,
                    destinations={4: FixedDestinations((4), (address,))})
    result = compiled.run(Trial((stream,), settle_ps=50_000_000))
    assert result.report.total.filtered == 50 and result.report.total.lost == 0
    assert result.counters["exception.no_route"] == 50


def test_router4_forwards_ipv4() -> None:
    device = Router4Device(SMALL)
    result = device.run(duplex(device, 30, duration_ps=30_000_000))
    assert result.report.errors == 0 and result.report.total.received > 200
    assert result.counters["fwd.instructions_per_frame"] > 20
    with pytest.raises(ValueError, match="two 10GbE"):
        Router4Device(ChipOptions(port_kinds=("1gbe", "1gbe")))


def test_one_gbe_ports_run_at_a_tenth_of_the_rate() -> None:
    device = CompiledChipDevice(ChipOptions(port_kinds=("1gbe", "1gbe"),
                                            routes=SMALL.routes))
    assert device.ports[0].kind == "1gbe"
    result = device.run(duplex(device, 50, duration_ps=60_000_000))
    # 60 us at half of 1GbE line rate: 1/10 of the 10GbE frame count
    per_port = result.report.streams[1].sent
    assert per_port == pytest.approx(60_000_000 / (10 * WIRE_64_PS) * 0.5, abs=1)
    assert result.report.errors == 0


def test_devices_pickle_as_their_configuration(compiled) -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(compiled))
    assert copy.describe() == compiled.describe()
    # the linked images travel (a worker runs exactly this build); the tables are rebuilt
    assert [i.image.words for i in copy.linked.images] == \
        [i.image.words for i in compiled.linked.images]
    assert "native" not in copy.__dict__
    trial = duplex(compiled, 40, duration_ps=20_000_000)
    assert copy.run(trial).received == compiled.run(trial).received
    # a worker can run the update tests too (its control plane's shadow is compiled there)
    assert copy.measure_update_rate(4, 12, 1) == compiled.measure_update_rate(4, 12, 1)


def test_pos_ports_run_the_pos_router() -> None:
    from npkit.bench.lab.devices import example_path

    source = example_path("pos_router", "pos_router.mbl")
    device = CompiledChipDevice(ChipOptions(port_kinds=("oc192pos", "oc192pos"),
                                            routes=SMALL.routes),
                                source=source, entry="pos_router")
    streams = tuple(
        Stream(id=i + 1, port=i, framing="pos", family=family, sizes=Sizes.fixed(size),
               load_percent=40, duration_ps=40_000_000,
               destinations={family: device.destinations(family, 1 - i, 20)})
        for i, family, size in ((0, 4, 40), (1, 6, 80)))
    result = device.run(Trial(streams, settle_ps=100_000_000))
    # the reference expects PPP headers out: a wrong link header would count as corrupted
    assert result.report.errors == 0 and result.report.total.received > 300


def test_route_updates_land_while_the_compiled_router_forwards(compiled) -> None:
    from npkit.bench.lab.devices import _exercised
    from npkit.bench.tester.destinations import lpm_prefix as lpm

    trial = duplex(compiled, 30, duration_ps=60_000_000, family="mixed", size=128)
    # half the maximum: each update's cost is its counted work, so at the maximum itself
    # the ones costlier than the mean queue up and may land after the trial
    rate = compiled.measure_update_rate(4, 30, seed=3) / 2
    assert rate > 0
    result = compiled.run_with_updates(trial, 4, rate, seed=3)
    c = result.counters
    # one update per 1 / rate from the first frame's send time to the last's
    sends = [r.time_ps for r in result.traffic.records()]
    assert c["updates.scheduled"] == 1 + math.floor((max(sends) - min(sends)) * rate / 1e12)
    assert c["updates.landed"] == c["updates.scheduled"] and c["updates.words"] > 0
    # the analyzer's Python LPM of the loaded table: nothing lost, misrouted or damaged
    assert result.report.errors == 0
    assert result.report.total.received == result.report.total.sent > 250
    # ... which is exact because no update touched a route the traffic used: every
    # updated prefix is outside the trial's exercised prefixes
    exercised = _exercised(trial, 4)
    stream = compiled.update_stream(4, int(c["updates.scheduled"]), 3, exercised)
    for update in stream:
        covering = lpm(dict.fromkeys(exercised, 0),
                       sorted({n for _, n in exercised}, reverse=True), update.network, 32)
        assert covering is None or covering[1] > update.length


def test_a_stream_that_moves_the_traffics_routes_shows_as_misrouted(compiled) -> None:
    from npkit.bench.lab.devices import _exercised
    from npkit.runtime.route_manager import RouteUpdate

    # exercised IPv4 prefixes of the 0 -> 1 stream moved to next hop 0 (port 0), one per
    # 10 us: frames to them sent after a move lands come back out of port 0, and the
    # analyzer (the loaded table) counts them misrouted -- the lab does not hide them
    trial = duplex(compiled, 30, duration_ps=60_000_000)
    moved = [p for p in _exercised(trial, 4)
             if compiled.tables.port_of(compiled.tables.routes[4][p]) == 1]
    stream = [RouteUpdate("add", 4, n, length, 0) for n, length in moved]
    result = compiled.run_with_updates(trial, 4, 100_000, seed=1, stream=stream)
    assert result.counters["updates.landed"] == result.counters["updates.scheduled"] == 6
    total = result.report.total
    assert total.received == total.sent and total.lost == 0
    assert 0 < total.misrouted < result.report.streams[1].sent
    assert result.report.streams[2].misrouted == 0


def _same(streamed, held) -> None:
    assert streamed.traffic is None and streamed.received == [] and streamed.tally
    assert held.traffic is not None and held.tally is None
    assert streamed.report == held.report
    assert streamed.counters == held.counters and streamed.sim_ps == held.sim_ps


@pytest.mark.parametrize("kind", ["compiled", "router4"])
def test_a_streamed_trial_gives_the_held_trials_result(compiled, kind) -> None:
    """``streamed=True`` (the NPF lab's single chip): C++ batches offered to the chip, the
    frames out analysed and tallied as they leave, nothing held -- the held trial's
    report, counters and simulated time, with loss (the compiled router at 100 %), in
    small batches, and under
    route updates; the tally's rates are the held frames' (npf.rate_point)."""
    from npkit.bench.lab.npf import rate_point

    if kind == "compiled":
        held, streamed = compiled, CompiledChipDevice(SMALL, streamed=True)
    else:
        held, streamed = Router4Device(SMALL), Router4Device(SMALL, streamed=True)
    for load, family in ((60, "mixed" if kind == "compiled" else 4), (100, 4)):
        trial = duplex(held, load, duration_ps=40_000_000, family=family,
                       size=128 if family == "mixed" else 64)
        one, other = streamed.run(trial), held.run(trial)
        _same(one, other)
        assert rate_point(load, one, 40_000_000, "ethernet") == \
            rate_point(load, other, 40_000_000, "ethernet")
        _same(streamed.run_streamed(trial, streamed._trial_chip(), batch_frames=53), other)
    if kind == "compiled":
        assert one.report.total.lost > 0  # router4 keeps up with this trial
        trial = duplex(held, 30, duration_ps=40_000_000)
        _same(streamed.run_with_updates(trial, 4, 2_000_000, seed=3),
              held.run_with_updates(trial, 4, 2_000_000, seed=3))
