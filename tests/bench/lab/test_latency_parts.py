"""The IMIX latency split by component (npf_method_report.latency_parts): framer delays
from the system's wiring, the chip's no-wait transit, queueing as the rest."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from npkit.bench.lab.npf_method_report import framer_ps, latency_parts

OC192_BPS = 9_584_640_000  # STS-192c payload (FACTS.md)
POS_LINE_BYTES = 4 + 5  # PPP header in the frame, flag + FCS-32 added by the line


def _wire_ps(ip_bytes: int) -> float:
    return (ip_bytes + POS_LINE_BYTES) * 8 / OC192_BPS * 1e12


def _result(wiring: dict | None) -> SimpleNamespace:
    device = {"port_kinds": ["oc192pos", "oc192pos"]}
    if wiring is not None:
        device["wiring"] = wiring
    config = SimpleNamespace(imix_sizes=(40, 576, 1500), imix_weights=(7, 4, 1))
    return SimpleNamespace(device=device, config=config)


def test_the_parts_add_up_to_the_average_with_the_framers_from_the_wiring() -> None:
    wiring = {"pos0": {"rx_delay_ns": 500, "tx_delay_ns": 500},
              "pos1": {"rx_delay_ns": 500, "tx_delay_ns": 500}}
    result = _result(wiring)
    assert framer_ps(result) == 1_000_000
    point = SimpleNamespace(min_ps=3_000_000, avg_ps=9_000_000)
    parts = latency_parts(result, SimpleNamespace(traffic="ipv4"), point)
    mean = (7 * _wire_ps(40) + 4 * _wire_ps(576) + _wire_ps(1500)) / 12
    assert parts.framer == 1.0
    assert parts.pipeline == pytest.approx(2.0 + 2 * (mean - _wire_ps(40)) / 1e6)
    assert parts.framer + parts.pipeline + parts.queueing == pytest.approx(parts.average)
    assert parts.average == 9.0


def test_the_single_chip_has_no_framer_and_ipv6_starts_at_its_smallest_packet() -> None:
    result = _result(None)
    assert framer_ps(result) == 0
    point = SimpleNamespace(min_ps=2_000_000, avg_ps=5_000_000)
    parts = latency_parts(result, SimpleNamespace(traffic="ipv6"), point)
    # IPv6 cannot be 40 bytes: the mix's smallest is the smallest signed IPv6 packet
    from npkit.bench.tester import smallest_ip

    least = smallest_ip(6)
    sizes = (max(least, 40), 576, 1500)
    mean = (7 * _wire_ps(sizes[0]) + 4 * _wire_ps(sizes[1]) + _wire_ps(sizes[2])) / 12
    assert parts.framer == 0
    assert parts.pipeline == pytest.approx(2.0 + 2 * (mean - _wire_ps(sizes[0])) / 1e6)
    assert latency_parts(result, SimpleNamespace(traffic="ipv4"),
                         SimpleNamespace(min_ps=None, avg_ps=None)) is None
