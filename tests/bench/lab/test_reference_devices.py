"""The reference devices (bench/lab/reference_devices.py): their timing computed by hand
from FACTS.md §2's OC-192 POS rate, their forwarding checked with scapy and a brute-force
longest-prefix match written here, their injected faults counted by the documented hash."""

from __future__ import annotations

import math
import zlib
from fractions import Fraction

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6

from npkit.bench.lab.device import Trial
from npkit.bench.lab.reference_devices import QueueingRouter, service_for_load
from npkit.bench.tester import (
    FixedDestinations,
    PassThrough,
    RouteReference,
    Sizes,
    Stream,
    pick_destinations,
)
from npkit.bench.tester.media import PORT_MODELS
from npkit.runtime.routes import committed_histogram, generate_routes

PORTS = {0: "oc192pos", 1: "oc192pos"}
OC192_PAYLOAD_BPS = Fraction("9.584640e9")  # FACTS.md §2
PS = 10**12
DEST = {4: FixedDestinations.of("198.18.0.5")}


def wire_ps(ip_bytes: int) -> Fraction:
    """POS: PPP header 4 + flag 1 + FCS-32 4 bytes on top of the IP packet."""
    return Fraction((ip_bytes + 9) * 8 * PS) / OC192_PAYLOAD_BPS


def stream(count: int, load: float = 100, port: int = 0, size: int = 40, sid: int = 1,
           **kw) -> Stream:
    return Stream(sid, port, kw.pop("destinations", DEST), framing="pos",
                  sizes=Sizes.fixed(size), load_percent=load, count=count, **kw)


def wire() -> PassThrough:
    return PassThrough({0: 1, 1: 0})


def test_an_idle_router_takes_wire_in_service_pipeline_wire_out() -> None:
    service = Fraction(123_457, 3)
    device = QueueingRouter(PORTS, wire(), per_packet_ps=service, per_byte_ps=7,
                            pipeline_ps=2_500_000)
    result = device.run(Trial((stream(1, size=100),)))
    frame_bytes = 104
    expected = math.ceil(wire_ps(100) + service + 7 * frame_bytes + 2_500_000 + wire_ps(100))
    assert result.report.total.latency.min_ps == expected
    assert result.received[0].port == 1 and result.received[0].time_ps == expected


def test_below_capacity_latency_is_constant_and_nothing_is_lost() -> None:
    device = QueueingRouter(PORTS, wire(), per_packet_ps=service_for_load(
        PORT_MODELS["oc192pos"], 44, 80), queue_packets=1, pipeline_ps=0)
    result = device.run(Trial((stream(500, load=70),)))
    latency = result.report.total.latency
    assert result.report.errors == 0 and result.report.total.received == 500
    # the service time is 100/80 wire times; the tester rounds send times up to 1 ps
    ideal = wire_ps(40) * 2 + wire_ps(40) * 100 / 80
    assert ideal - 1 <= latency.min_ps <= latency.max_ps <= ideal + 2
    assert result.counters["engine.busy_fraction"] > 0


def brute_lpm(routes: dict[tuple[int, int], int], address: int, bits: int) -> int | None:
    for length in range(bits, -1, -1):
        network = address >> (bits - length) << (bits - length) if length else 0
        if (network, length) in routes:
            return routes[(network, length)]
    return None


def test_routes_like_a_router_checked_with_scapy() -> None:
    tables = {4: generate_routes(4, 300, seed=5, histogram=committed_histogram(4)),
              6: generate_routes(6, 80, seed=5, histogram=committed_histogram(6))}
    dests = {4: pick_destinations(tables[4], 4, 50, seed=2),
             6: pick_destinations(tables[6], 6, 20, seed=2)}
    reference = RouteReference(tables, lambda hop: hop % 2,
                               out_framing={0: "pos", 1: "pos"})
    device = QueueingRouter(PORTS, reference)
    trial = Trial((stream(150, port=0, size=128, family="mixed", destinations=dests),
                   stream(100, port=1, size=64, family=4, sid=2, destinations=dests)))
    result = device.run(trial)
    total = result.report.total
    # (streams spread over two output queues may be reordered: not checked here)
    assert (total.received, total.lost, total.misrouted, total.corrupted, total.duplicates) \
        == (250, 0, 0, 0, 0)
    for rx in result.received:
        assert rx.data[:2] == b"\xff\x03"
        if rx.data[2:4] == b"\x00\x21":
            ip = IP(rx.data[4:])
            sent_checksum = ip.chksum
            del ip.chksum  # scapy recomputes it
            assert ip.ttl == 63 and IP(bytes(ip)).chksum == sent_checksum
            hop = brute_lpm(tables[4], int.from_bytes(rx.data[20:24], "big"), 32)
        else:
            ip6 = IPv6(rx.data[4:])
            assert ip6.hlim == 63
            hop = brute_lpm(tables[6], int.from_bytes(rx.data[28:44], "big"), 128)
        assert hop is not None and rx.port == hop % 2


def picked(kind: str, seq: int, fraction: float, seed: int = 1, sid: int = 1) -> bool:
    return zlib.crc32(f"{seed}:{kind}:{sid}:{seq}".encode()) < fraction * 2**32


def test_injected_faults_are_what_the_analyzer_counts() -> None:
    count = 400
    device = QueueingRouter(PORTS, wire(), drop_fraction=0.05, misroute_fraction=0.1,
                            reorder_fraction=0.05, reorder_delay_ps=5_000_000)
    result = device.run(Trial((stream(count, load=50),)))
    dropped = {k for k in range(count) if picked("drop", k, 0.05)}
    misrouted = {k for k in range(count) if k not in dropped and picked("misroute", k, 0.1)}
    reordered = {k for k in range(count) if k not in dropped and picked("reorder", k, 0.05)}
    # a held packet arrives after every later packet sent less than 5 us after it that is
    # neither dropped nor held itself; one such packet makes it reordered
    interval = wire_ps(40) * 2  # 50 % load
    late = {k for k in reordered
            if any(j not in dropped and j not in reordered
                   for j in range(k + 1, count) if (j - k) * interval < 5_000_000)}
    total = result.report.total
    assert dropped and misrouted and late
    assert total.lost == len(dropped) == result.counters["fault.dropped"]
    assert total.misrouted == len(misrouted) == result.counters["fault.misrouted"]
    assert total.reordered == len(late)
    assert result.counters["fault.reordered"] == len(reordered)


def test_overload_two_inputs_into_one_output_keeps_the_output_at_line_rate() -> None:
    queue, count = 8, 1000
    device = QueueingRouter(PORTS | {2: "oc192pos"}, PassThrough({0: 2, 1: 2}),
                            output_queue_packets=queue, pipeline_ps=0)
    result = device.run(Trial((stream(count, port=0), stream(count, port=1, sid=2))))
    # two arrivals per wire time, one departure: the output sends the first packet, then
    # one packet per wire time while the inputs last (count), and drains its queue
    received = result.report.total.received
    assert count + queue - 2 <= received <= count + queue + 1
    assert result.counters["output.dropped"] == 2 * count - received
    times = sorted(r.time_ps for r in result.received)
    gaps = {b - a for a, b in zip(times, times[1:], strict=False)}
    assert gaps <= {math.floor(wire_ps(40)), math.ceil(wire_ps(40))}


def test_packets_still_inside_at_the_end_of_the_trial_are_not_received() -> None:
    device = QueueingRouter(PORTS, wire(), pipeline_ps=3_000_000)
    result = device.run(Trial((stream(20),), settle_ps=1_000_000))
    assert result.report.total.received == 0 and result.report.total.lost == 20
    assert result.counters["in_flight_at_end"] == 20


def test_the_same_trial_gives_the_same_result() -> None:
    device = QueueingRouter(PORTS, wire(), per_packet_ps=50_000, queue_packets=3,
                            misroute_fraction=0.2)
    trial = Trial((stream(300, load=90),))
    first, second = device.run(trial), device.run(trial)
    assert first.received == second.received and first.counters == second.counters
