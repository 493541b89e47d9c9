"""The throughput search and the loss-rate sweep (bench/lab/search.py) on reference devices
whose answers are computed here by hand from FACTS.md §2's OC-192 POS rate."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.bench.lab.device import Trial
from npkit.bench.lab.reference_devices import QueueingRouter
from npkit.bench.lab.search import loss_loads, loss_rate_sweep, search_throughput
from npkit.bench.tester import FixedDestinations, PassThrough, Sizes, Stream

PORTS = {0: "oc192pos", 1: "oc192pos"}
OC192_PAYLOAD_BPS = Fraction("9.584640e9")  # FACTS.md §2
IP_BYTES = 40
WIRE_PS = Fraction((IP_BYTES + 9) * 8 * 10**12) / OC192_PAYLOAD_BPS  # PPP 4 + flag/FCS 5
DESTS = {4: FixedDestinations.of("198.18.0.5")}


def router(capacity_percent: float, queue: int = 1, **faults) -> QueueingRouter:
    """A router whose engine serves exactly ``capacity_percent`` of line rate at 40 bytes."""
    service = WIRE_PS * 100 / Fraction(str(capacity_percent))
    return QueueingRouter(PORTS, PassThrough({0: 1, 1: 0}), per_packet_ps=service,
                          queue_packets=queue, **faults)


def trials(count: int):
    def trial_at(load: float) -> Trial:
        return Trial((Stream(1, 0, DESTS, framing="pos", sizes=Sizes.fixed(IP_BYTES),
                             load_percent=load, count=count),), label=f"{load}%")
    return trial_at


@settings(max_examples=15, deadline=None)
@given(capacity=st.floats(2.0, 99.0), resolution=st.sampled_from([0.25, 0.5, 1.0, 3.0]))
def test_search_finds_the_capacity_within_its_resolution(capacity: float,
                                                         resolution: float) -> None:
    # queue of one: a packet arriving while the engine is busy is lost, so any load above
    # the capacity loses the second packet already; at or below it nothing is lost (the
    # tester's whole-picosecond send times may make exactly-at-capacity fail)
    result = search_throughput(router(capacity), trials(40), resolution=resolution)
    assert result.throughput_percent is not None
    assert capacity - resolution <= result.throughput_percent <= capacity
    # bisection: 100 %, then the lower bound, then halvings of 99 % down to the resolution
    assert len(result.steps) == 2 + math.ceil(math.log2(99 / resolution))
    assert result.passing_step() is not None and result.passing_step().lost == 0
    for step in result.steps:
        assert step.passed == (step.lost == 0)
        interval = WIRE_PS * 100 / Fraction(step.load_percent)
        service = WIRE_PS * 100 / Fraction(capacity)
        if step.load_percent > capacity:
            assert not step.passed
        elif interval - service >= 1:  # clear of the send times' 1 ps rounding
            assert step.passed


def test_search_with_a_queue_finds_sixty_percent() -> None:
    result = search_throughput(router(60, queue=4), trials(2000), resolution=0.5)
    assert 59.5 <= result.throughput_percent <= 60


def test_a_device_that_keeps_up_needs_one_trial() -> None:
    result = search_throughput(router(100, queue=2), trials(200))  # 2: room for rounding
    assert result.throughput_percent == 100.0
    assert [s.load_percent for s in result.steps] == [100.0]


def test_a_device_that_loses_everything_has_no_throughput() -> None:
    result = search_throughput(router(100, drop_fraction=1.0), trials(50), lower=5)
    assert result.throughput_percent is None
    assert [(s.load_percent, s.received, s.lost) for s in result.steps] == \
        [(100.0, 0, 50), (5.0, 0, 50)]


def test_errors_other_than_loss_are_reported_but_do_not_fail_a_step() -> None:
    result = search_throughput(router(100, queue=2, misroute_fraction=0.5), trials(100))
    assert result.throughput_percent == 100.0 and result.steps[0].errors > 0


def test_bad_bounds_are_refused() -> None:
    for lower, upper, resolution in ((0, 100, 1), (50, 40, 1), (10, 101, 1), (1, 100, 0)):
        with pytest.raises(ValueError, match="lower|resolution"):
            search_throughput(router(50), trials(10), lower, upper, resolution)


def test_loss_loads_step_down_from_100() -> None:
    assert loss_loads(100, 10) == [100, 90, 80, 70, 60, 50, 40, 30, 20, 10]
    assert loss_loads(100, 25, floor=30) == [100, 75, 50]
    with pytest.raises(ValueError):
        loss_loads(100, 0)


def test_loss_sweep_stops_after_two_clean_trials() -> None:
    # queue of one, capacity 55 %: an accepted packet's service lasts L/55 arrival
    # intervals (1.82 at 100 %, 1.09 at 60 %), so it makes exactly the next arrival find
    # the engine busy: half of the 2000 packets are lost at every load from 100 to 60 %
    curve = loss_rate_sweep(router(55), trials(2000), step=10)
    assert [s.load_percent for s in curve.steps] == [100, 90, 80, 70, 60, 50, 40]
    assert [s.lost for s in curve.steps] == [1000] * 5 + [0, 0]
    assert curve.steps[0].loss_percent == 50.0
