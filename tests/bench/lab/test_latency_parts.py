"""Latency by component (bench/lab/latency_parts.py): a measured point splits into line,
framer, link, chip and queueing parts that add up to its average; one frame through the
idle two-chip system splits into parts that add up to the tester's measured latency, the
line times and framer delays computed here by hand from the OC-192 rate and the system
file; the framer sensitivity run moves the latency by exactly the delay it adds."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from types import SimpleNamespace

import pytest

from npkit.bench.lab import npf
from npkit.bench.lab.latency_parts import (
    PathDelays,
    Published,
    breakdown_markdown,
    breakdown_rows,
    latency_parts,
    one_frame,
)
from npkit.bench.lab.latency_sensitivity import Variant, varied
from npkit.bench.tester import Sizes
from npkit.runtime.system import SystemSpec

OC192_BPS = 9_584_640_000  # STS-192c payload (FACTS.md §2)
POS_LINE_BYTES = 4 + 5  # PPP header in the frame, flag + FCS-32 added by the line
CLOCK_HZ = 1_400_000_000  # the IXP2800's ME clock (FACTS.md §1)


def _wire_ps(ip_bytes: int) -> Fraction:
    return Fraction((ip_bytes + POS_LINE_BYTES) * 8 * 10**12, OC192_BPS)


DUAL = {"system": "dual-ixp2800-npf",
        "wiring": {"pos0": {"rx": "east:0", "tx": "west:1", "rx_delay_ns": 500,
                            "tx_delay_ns": 500},
                   "pos1": {"rx": "west:0", "tx": "east:1", "rx_delay_ns": 500,
                            "tx_delay_ns": 500}}}


def _point(avg: float, lifo_avg: float, lifo_min: float) -> SimpleNamespace:
    return SimpleNamespace(load_percent=95.0, avg_ps=avg, lifo_avg_ps=lifo_avg,
                           lifo_min_ps=lifo_min)


def test_the_parts_of_a_point_add_up_to_its_average() -> None:
    parts = latency_parts(DUAL, _point(5_000_000, 4_400_000, 2_300_000))
    assert parts is not None
    assert parts.line == pytest.approx(0.6)  # 5.0 - 4.4: the frames' own line time
    assert parts.framer == pytest.approx(1.0)  # 500 + 500 ns
    assert parts.link == 0  # one chip per frame in this arrangement
    assert parts.chip == pytest.approx(1.3)  # fastest S&F 2.3 less the framers
    assert parts.queueing == pytest.approx(2.1)  # average S&F 4.4 less the fastest
    assert parts.total() == pytest.approx(parts.average) and parts.average == 5.0


def test_the_table_sets_the_average_and_the_fastest_frame_beside_the_published() -> None:
    point = _point(5_000_000, 4_400_000, 2_300_000)
    point.min_ps = 2_350_000
    (row,) = breakdown_rows(DUAL, [("IPv4", point, Published(10.80, 8.85))])
    assert row == ("IPv4", "95 %", "5.00", "0.60", "1.00", "0.00", "1.30", "2.10", "10.80",
                   "+5.80", "+6.50")
    text = breakdown_markdown(DUAL, [("IPv4", point, Published(10.80, 8.85))])
    assert "500 + 500 ns" in text and "| IPv4 | 95 % | 5.00 |" in text
    assert breakdown_markdown(DUAL, [("IPv4", _point(None, None, None), Published(1.0))]) == ""


def test_a_link_between_the_receiving_and_the_transmitting_chip_is_its_own_part() -> None:
    device = {"wiring": {"pos0": {"rx": "ingress:0", "tx": "egress:1", "rx_delay_ns": 200,
                                  "tx_delay_ns": 300}},
              "links": {"csix": {"from": "ingress:1", "to": "egress:0", "latency_ns": 100},
                        "back": {"from": "egress:0", "to": "ingress:1", "latency_ns": 900}}}
    assert PathDelays.of(device) == PathDelays(200_000, 300_000, 100_000)
    parts = latency_parts(device, _point(4_000_000, 3_000_000, 2_000_000))
    assert parts is not None
    assert (parts.framer, parts.link, parts.chip) == pytest.approx((0.5, 0.1, 1.4))
    assert parts.total() == pytest.approx(4.0)


def test_the_single_chip_has_no_fixed_delays_and_an_empty_point_no_parts() -> None:
    assert PathDelays.of({"port_kinds": ["oc192pos", "oc192pos"]}) == PathDelays()
    parts = latency_parts({}, _point(3_000_000, 2_500_000, 1_500_000))
    assert parts is not None and parts.framer == 0 and parts.chip == pytest.approx(1.5)
    assert latency_parts(DUAL, _point(None, None, None)) is None  # type: ignore[arg-type]


# --------------------------------------------------------------------------- one frame
@pytest.fixture(scope="module")
def dual():
    chosen = npf.preset("ixp2800-npf", quick=True)
    chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(3_000, 400, source=""))
    return chosen, npf.chip_device(chosen)


def _one(chosen, device, size: int) -> object:
    trials = npf.make_trials(device, chosen.config, "ipv4", str(size), Sizes.fixed(size),
                             flows=((0, 1),))
    stream = dataclasses.replace(trials.at(1).streams[0], count=1, duration_ps=None,
                                 start_ps=20_000_000)
    return one_frame(device, stream)


def test_one_40_byte_frame_through_the_idle_system_adds_up_to_what_the_tester_measured(
        dual) -> None:
    chosen, device = dual
    parts = _one(chosen, device, 40)
    cycle = Fraction(10**12, CLOCK_HZ)
    # by hand: 49 bytes on OC-192 each way; 500 ns framers (700 cycles at 1.4 GHz)
    assert parts.line_out == pytest.approx(float(_wire_ps(40)))
    assert 0 <= parts.line_in - float(_wire_ps(40)) < float(cycle)  # + the wait to a cycle
    assert parts.framer_rx == parts.framer_tx == pytest.approx(500_000)
    # the chip: the receive status reaches a thread after the MSF's autopush latency
    # (20 cycles, sim/chips/ixp2800.toml) and that thread runs the frame to the line
    assert 20 * float(cycle) <= parts.rbuf < 25 * float(cycle)
    assert parts.me_executing > 0 and parts.me_waiting > 0
    # the tester's first bit in -> last bit out, from the frame's last-bit time alone
    assert parts.total() == pytest.approx(parts.measured, abs=float(cycle))
    # the measured point's split gives the same chip transit for a lone frame
    point = _point(parts.measured, parts.measured - parts.line_in - parts.line_out,
                   parts.measured - parts.line_in - parts.line_out)
    split = latency_parts(device.describe(), point)
    assert split is not None and split.queueing == 0
    assert split.chip * 1e6 == pytest.approx(parts.chip, abs=float(cycle))


def test_doubling_the_framer_delays_adds_exactly_their_500_ns_each_way(dual) -> None:
    chosen, device = dual
    base = _one(chosen, device, 40)
    slower = npf.chip_device(chosen)
    slower.spec, value = varied(SystemSpec.load("dual-ixp2800-npf"), Variant("framer", 2.0))
    assert value == "1000 + 1000 ns"
    parts = _one(chosen, slower, 40)
    assert parts.framer_rx == parts.framer_tx == pytest.approx(1_000_000)
    assert parts.measured - base.measured == pytest.approx(1_000_000, abs=1)
    assert parts.chip == pytest.approx(base.chip)


def test_a_chip_config_variant_becomes_the_chips_overrides() -> None:
    spec = SystemSpec.load("dual-ixp2800-npf")
    slower, value = varied(spec, Variant("dram.latency", 2.0))
    assert value == "600"
    for chip in slower.chips:
        assert slower.chip_config(chip.name).raw["dram"]["latency"] == 600
    assert all(spec.chip_config(c.name).raw["dram"]["latency"] == 300 for c in spec.chips)


def test_the_sensitivity_table_gives_each_runs_move_from_the_base() -> None:
    from npkit.bench.lab.latency_sensitivity import Outcome, markdown

    base = Outcome(None, "as shipped", 5_000_000, 4_400_000, 2_300_000, 100, 0)
    slower = Outcome(Variant("framer", 2.0), "1000 + 1000 ns", 6_000_000, 5_400_000,
                     3_300_000, 100, 0)
    text = markdown([base, slower])
    assert "| (as shipped) | as shipped | 5.000 | 4.400 | 2.300 | +0.000 | +0.0 % | 0 |" in text
    assert "| framer × 2 | 1000 + 1000 ns | 6.000 | 5.400 | 3.300 | +1.000 | +20.0 % | 0 |" \
        in text


def test_the_idle_frame_table_shows_the_parts_and_their_sum() -> None:
    from npkit.bench.lab.latency_parts import FrameParts
    from npkit.bench.lab.latency_runs import frames_markdown

    parts = FrameParts(size=44, measured=1_970_000, line_in=41_000, framer_rx=500_000,
                       rbuf=15_000, me_executing=231_000, me_waiting=642_000,
                       framer_tx=500_000, line_out=41_000)
    assert parts.chip == 888_000 and parts.total() == 1_970_000
    row = frames_markdown("ipv4", [parts]).splitlines()[-1]
    assert row == ("| ipv4 | 44 | 0.041 | 0.500 | 0.015 | 0.231 | 0.642 | 0.500 | 0.041 | "
                   "0.888 | 1.970 | 1.970 |")


def test_a_short_frame_right_behind_a_long_one_waits_for_it_on_the_output_line() -> None:
    from npkit.bench.lab.latency_parts import line_wait_ps
    from npkit.bench.tester import port_model

    ports = {0: port_model("oc192pos"), 1: port_model("oc192pos")}
    long_, short = bytes(1500 + 4), bytes(40 + 4)  # PPP frames of 1500 and 40 IP bytes
    wa, wb = _wire_ps(1500), _wire_ps(40)
    back_to_back = [SimpleNamespace(port=0, time_ps=0, data=long_),
                    SimpleNamespace(port=0, time_ps=int(wa) + 1, data=short)]
    # the long frame is ready at wa and leaves until 2 wa; the short one starts at
    # t1 = int(wa) + 1, is ready at t1 + wb and waits until 2 wa: the mean of two frames
    t1 = int(wa) + 1
    wait = line_wait_ps(back_to_back, ports, {0: 1, 1: 0})
    assert wait == pytest.approx(float(2 * wa - t1 - wb) / 2, abs=1)
    later = [SimpleNamespace(port=0, time_ps=0, data=long_),
             SimpleNamespace(port=0, time_ps=int(2 * wa), data=short)]
    assert line_wait_ps(later, ports, {0: 1, 1: 0}) == 0
    # two input lines to two output lines do not wait for each other
    crossed = [SimpleNamespace(port=0, time_ps=0, data=long_),
               SimpleNamespace(port=1, time_ps=int(wa) + 1, data=short)]
    assert line_wait_ps(crossed, ports, {0: 1, 1: 0}) == 0
