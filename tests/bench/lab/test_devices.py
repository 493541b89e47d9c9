"""The simulated-chip devices (bench/lab/devices.py): the compiled router and router4 run
tester traffic; the analyzer checks every frame against a longest-prefix match of the
loaded table done here in Python (RouteReference), independent of the chip's trie."""

from __future__ import annotations

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


def test_trials_are_deterministic(compiled) -> None:
    trial = duplex(compiled, 50, duration_ps=30_000_000)
    first, second = compiled.run(trial), compiled.run(trial)
    assert first.received == second.received
    assert first.counters == second.counters and first.sim_ps == second.sim_ps


def test_unroutable_frames_are_not_losses(compiled) -> None:
    # 198.51.100.0/24 is in no generated route? then the router raises no_route exceptions
    tables = compiled.tables
    address = 0xC6336401
    if lpm_prefix(tables.routes[4], sorted({n for _, n in tables.routes[4]}, reverse=True),
                  address, 32) is not None:
        pytest.skip("the generated table covers the test address")
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


def test_pos_ports_run_the_pos_router() -> None:
    from npkit.bench.lab.devices import _linker_takes_port_kinds, example_path

    source = example_path("pos_router", "pos_router.mbl")
    if not _linker_takes_port_kinds() or not source.is_file():
        pytest.skip("no POS media in this linker")
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
