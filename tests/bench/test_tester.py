"""The tester (bench/tester): signatures, packets against scapy, exact line-rate timing from
FACTS.md §2, destinations against a brute-force longest-prefix match, and the analyzer on a
perfect loopback."""

from __future__ import annotations

import ipaddress
import math
import random
import struct
import zlib
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.bench.tester import (
    Analyzer,
    FixedDestinations,
    PassThrough,
    Sizes,
    Stream,
    generate,
    pick_destinations,
    read_signature,
    smallest_ip,
)
from npkit.bench.tester.analyzer import RxRecord
from npkit.bench.tester.media import PORT_MODELS
from npkit.bench.tester.packet import SIGNATURE_BYTES, signature_payload
from npkit.runtime.routes import committed_histogram, generate_routes

# FACTS.md §2
OC192_PAYLOAD_BPS = Fraction("9.584640e9")
POS_OVERHEAD = 9  # flag, address, control, protocol 2, FCS-32 4: on top of the IP packet
TEN_GBE_BPS, ETH_GAP = Fraction(10**10), 20
PS = 10**12


# --------------------------------------------------------------------------- signature
@given(stream=st.integers(0, 0xFFFF), seq=st.integers(0, 2**32 - 1),
       time_ps=st.integers(0, 2**48 - 1), length=st.integers(SIGNATURE_BYTES, 1500))
def test_signature_round_trips(stream: int, seq: int, time_ps: int, length: int) -> None:
    payload = signature_payload(stream, seq, time_ps, length)
    assert len(payload) == length
    sig = read_signature(payload)
    assert sig is not None and (sig.stream, sig.seq, sig.time_ps, sig.crc_ok) == \
        (stream, seq, time_ps, True)


@given(length=st.integers(SIGNATURE_BYTES, 300), data=st.data())
def test_any_flipped_bit_after_the_magic_fails_the_crc(length: int, data: st.DataObject) -> None:
    payload = bytearray(signature_payload(7, 9, 11, length))
    bit = data.draw(st.integers(32, 8 * length - 1))
    payload[bit // 8] ^= 1 << (bit % 8)
    sig = read_signature(bytes(payload))
    assert sig is not None and not sig.crc_ok


def test_no_magic_no_signature() -> None:
    payload = bytearray(signature_payload(1, 2, 3, 40))
    payload[0] ^= 0x80
    assert read_signature(bytes(payload)) is None


# --------------------------------------------------------------------------- packets
def one_packet(framing: str, family: int, size: int, unit: str | None, transport: str
               ) -> bytes:
    dests = {4: FixedDestinations.of("203.0.113.9"), 6: FixedDestinations.of("2001:db8::9")}
    kind = "oc192pos" if framing == "pos" else "10gbe"
    stream = Stream(id=3, port=0, framing=framing, family=family, count=1,
                    sizes=Sizes.fixed(size, unit), destinations=dests, transport=transport)
    return generate([stream], {0: kind}).ports[0][0].data


def scapy_checked(ip_bytes: bytes, family: int):
    """Parse with scapy and check every checksum by letting scapy recompute it."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6

    pkt = (IP if family == 4 else IPv6)(ip_bytes)
    if family == 4:
        assert pkt.version == 4 and pkt.ihl == 5 and pkt.ttl == 64 and pkt.len == len(ip_bytes)
        fresh = pkt.copy()
        del fresh.chksum
        assert IP(bytes(fresh)).chksum == pkt.chksum
        assert pkt.dst == "203.0.113.9" and pkt.src == "198.18.0.1"
    else:
        assert pkt.version == 6 and pkt.hlim == 64 and pkt.plen == len(ip_bytes) - 40
        assert pkt.dst == "2001:db8::9"
    if UDP in pkt:
        udp = pkt[UDP]
        assert udp.len == len(ip_bytes) - (20 if family == 4 else 40)
        fresh = pkt.copy()
        del fresh[UDP].chksum
        rebuilt = (IP if family == 4 else IPv6)(bytes(fresh))
        assert udp.chksum != 0 and rebuilt[UDP].chksum == udp.chksum
    return pkt


@settings(max_examples=60, deadline=None)
@given(framing=st.sampled_from(["pos", "ethernet"]), family=st.sampled_from([4, 6]),
       transport=st.sampled_from(["auto", "udp", "raw"]), extra=st.integers(0, 1460),
       data=st.data())
def test_packets_are_valid_for_scapy(framing: str, family: int, transport: str, extra: int,
                                     data: st.DataObject) -> None:
    from scapy.layers.inet import UDP

    ip_len = smallest_ip(family, transport) + extra
    frame = one_packet(framing, family, ip_len, "ip", transport)
    if framing == "pos":
        assert frame[:4] == bytes([0xFF, 0x03, 0x00, 0x21 if family == 4 else 0x57])
        assert len(frame) == 4 + ip_len
        ip = frame[4:]
    else:
        from scapy.layers.l2 import Ether

        eth = Ether(frame[:-4])
        assert eth.type == (0x0800 if family == 4 else 0x86DD)
        assert eth.dst == "02:00:00:00:00:01"
        assert len(frame) == max(64, 14 + ip_len + 4)
        assert struct.unpack("<I", frame[-4:])[0] == zlib.crc32(frame[:-4])  # FCS
        ip = frame[14:14 + ip_len]
    pkt = scapy_checked(ip, family)
    has_udp = transport == "udp" or (transport == "auto" and ip_len >= smallest_ip(family, "udp"))
    assert (UDP in pkt) == has_udp


def test_size_units() -> None:
    # POS sizes are IP bytes (the report), Ethernet sizes are frame bytes with FCS (RFC 2544)
    assert len(one_packet("pos", 4, 40, None, "auto")) == 44
    assert len(one_packet("ethernet", 4, 64, None, "auto")) == 64
    assert len(one_packet("ethernet", 4, 40, "ip", "auto")) == 64  # padded
    assert len(one_packet("ethernet", 6, 78, None, "auto")) == 78  # smallest IPv6 + signature
    with pytest.raises(ValueError, match="outside 60"):
        one_packet("pos", 6, 40, None, "auto")


# --------------------------------------------------------------------------- rates
def send_times(kind: str, framing: str, size: int, count: int | None, **rate) -> list[int]:
    stream = Stream(id=1, port=0, framing=framing, sizes=Sizes.fixed(size), count=count,
                    destinations={4: FixedDestinations.of("203.0.113.1")}, **rate)
    return [r.time_ps for r in generate([stream], {0: kind}).ports[0]]


def test_pos_40_byte_packets_at_oc192_line_rate() -> None:
    slot_ps = Fraction((40 + POS_OVERHEAD) * 8 * PS) / OC192_PAYLOAD_BPS
    assert round(PS / slot_ps / 1e3) / 1e3 == 24.451  # FACTS.md §2 table
    times = send_times("oc192pos", "pos", 40, 3000)
    assert times == [math.ceil(k * slot_ps) for k in range(3000)]
    # no drift: the frame that starts 1 s in is exactly the 24,450,612th (FACTS: 24.451 Mpps)
    assert math.floor(PS / slot_ps) == 24_450_612


def test_ethernet_64_byte_frames_at_10gbe_line_rate() -> None:
    slot_ps = Fraction((64 + ETH_GAP) * 8 * PS) / TEN_GBE_BPS
    assert math.floor(PS / slot_ps) == 14_880_952  # FACTS.md §2
    assert send_times("10gbe", "ethernet", 64, 500) == [67_200 * k for k in range(500)]


@pytest.mark.parametrize("size,pps", [(128, 8_445_946), (256, 4_528_986), (512, 2_349_624),
                                      (1024, 1_197_318), (1280, 961_538), (1518, 812_744)])
def test_ethernet_line_rates_of_facts(size: int, pps: int) -> None:
    assert round(PORT_MODELS["10gbe"].line_rate_fps(size)) == pps
    times = send_times("10gbe", "ethernet", size, 3)
    slot_ps = Fraction((size + ETH_GAP) * 8 * PS) / TEN_GBE_BPS
    assert times == [math.ceil(k * slot_ps) for k in range(3)]


def test_partial_load_and_pps() -> None:
    assert send_times("10gbe", "ethernet", 64, 4, load_percent=40) == \
        [0, 168_000, 336_000, 504_000]
    assert send_times("oc192pos", "pos", 1500, 3, load_percent=None, pps=1000) == \
        [0, 10**9, 2 * 10**9]


def test_two_streams_on_one_port_never_overlap_on_the_wire() -> None:
    dests = {4: FixedDestinations.of("203.0.113.1")}
    streams = [Stream(id=i, port=0, sizes=Sizes.fixed(64), count=50, load_percent=60,
                      destinations=dests) for i in (1, 2)]
    records = generate(streams, {0: "10gbe"}).ports[0]
    gaps = [b.time_ps - a.time_ps for a, b in zip(records, records[1:], strict=False)]
    assert min(gaps) >= 67_200 and len(records) == 100
    for sid in (1, 2):
        assert [r.seq for r in records if r.stream == sid] == list(range(50))


def test_imix_sizes_follow_the_weights() -> None:
    stream = Stream(id=1, port=0, framing="pos", sizes=Sizes.imix(), count=6000,
                    destinations={4: FixedDestinations.of("203.0.113.1")})
    lengths = [len(r.data) - 4 for r in generate([stream], {0: "oc192pos"}).ports[0]]
    share = {n: lengths.count(n) / len(lengths) for n in (40, 576, 1500)}
    assert set(lengths) == {40, 576, 1500}
    assert abs(share[40] - 7 / 12) < 0.03 and abs(share[1500] - 1 / 12) < 0.02


# --------------------------------------------------------------------------- destinations
def brute_lpm(routes: dict[tuple[int, int], int], address: int, bits: int):
    """The longest route containing ``address``, by looking at every route."""
    best = None
    for network, length in routes:
        if address >> (bits - length) == network >> (bits - length) and \
                (best is None or length > best[1]):
            best = (network, length)
    return best


def nested_table(rng: random.Random, family: int, count: int) -> dict[tuple[int, int], int]:
    """Routes crowded into a few short prefixes, so most have more-specifics inside."""
    bits = 32 if family == 4 else 128
    base = [(10 << 24, 8), (0xC6120000, 15)] if family == 4 else [(0x2001_0db8 << 96, 32)]
    routes: dict[tuple[int, int], int] = {b: 1 for b in base}
    while len(routes) < count:
        network, length = rng.choice(list(routes))
        sub = min(bits, length + rng.randint(1, 4))
        address = network | rng.getrandbits(bits - length)
        routes[(address >> (bits - sub) << (bits - sub), sub)] = rng.randrange(8)
    routes[(0, 0)] = 0  # a default route: only forwardable space outside the others counts
    return routes


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), family=st.sampled_from([4, 6]), n=st.integers(1, 40))
def test_destinations_hit_n_prefixes_that_really_match(seed: int, family: int, n: int) -> None:
    routes = nested_table(random.Random(seed), family, 120)
    dests = pick_destinations(routes, family, n, seed=seed)
    assert len({(p.network, p.length) for p in dests.prefixes}) == n
    rng = random.Random(seed)
    bits = 32 if family == 4 else 128
    hit = set()
    for k in range(3 * n):
        index, address = dests.draw(k, rng)
        prefix = dests.prefixes[index]
        assert brute_lpm(routes, address, bits) == (prefix.network, prefix.length)
        ip = ipaddress.ip_address(address)
        assert not (ip.is_multicast or ip.is_loopback or ip.is_unspecified or
                    ip.is_link_local and family == 6 or ip.is_reserved and family == 4)
        assert not (family == 4 and address >> 24 == 0)
        hit.add(index)
    assert hit == set(range(n))


def test_a_fully_covered_prefix_is_never_picked() -> None:
    routes = {(10 << 24, 8): 1, (10 << 24, 9): 2, (10 << 24 | 1 << 23, 9): 3}
    dests = pick_destinations(routes, 4, 2, seed=5)
    assert {(p.network, p.length) for p in dests.prefixes} == {(10 << 24, 9),
                                                                (10 << 24 | 1 << 23, 9)}
    with pytest.raises(ValueError, match="only 2"):
        pick_destinations(routes, 4, 3)


def test_npf_counts_on_generated_tables() -> None:
    """2,000 of 20,000 IPv4 routes and 400 of 1,200 IPv6 routes, as the report exercised."""
    for family, size, n in ((4, 20_000, 2_000), (6, 1_200, 400)):
        routes = generate_routes(family, size, seed=3, histogram=committed_histogram(family))
        dests = pick_destinations(routes, family, n, seed=1)
        by_length = sorted({length for _, length in routes}, reverse=True)
        rng = random.Random(2)
        bits = 32 if family == 4 else 128
        for k in range(n):
            index, address = dests.draw(k, rng)
            got = next((address >> (bits - m) << (bits - m), m) for m in by_length
                       if (address >> (bits - m) << (bits - m), m) in routes)
            p = dests.prefixes[index]
            assert got == (p.network, p.length)
        assert len(set(dests.prefixes)) == n


# --------------------------------------------------------------------------- analyzer
def loopback_traffic():
    dests = {4: FixedDestinations.of("203.0.113.1", "203.0.113.2"),
             6: FixedDestinations.of("2001:db8::1")}
    streams = [
        Stream(id=1, port=0, framing="ethernet", family="mixed", sizes=Sizes.imix(clamp=True),
               count=300, load_percent=90, destinations=dests),
        Stream(id=2, port=2, framing="pos", family=4, sizes=Sizes.standard("pos", 4),
               count=200, destinations=dests),
        Stream(id=3, port=2, framing="pos", family=6, sizes=Sizes.fixed(60), count=100,
               load_percent=5, destinations=dests, seed=9),
    ]
    ports = {0: "10gbe", 1: "10gbe", 2: "oc192pos", 3: "oc192pos"}
    return generate(streams, ports), ports


def test_analyzer_perfect_loopback_counts_no_errors() -> None:
    traffic, ports = loopback_traffic()
    wire = {0: 1, 2: 3}
    delay = 3_000_000  # 3 µs from first bit in to last bit out
    rx = [RxRecord(wire[r.port], r.time_ps + delay, r.data) for r in traffic.records()]
    random.Random(1).shuffle(rx)  # the analyzer orders arrivals by time itself
    report = Analyzer(ports, PassThrough(wire)).analyze(traffic.records(), rx)
    assert report.errors == 0
    assert report.total.sent == report.total.received == 600
    assert {s: report.streams[s].received for s in (1, 2, 3)} == {1: 300, 2: 200, 3: 100}
    lat = report.total.latency
    assert lat.count == 600 and lat.min_ps == lat.max_ps == lat.avg_ps == delay
    assert sum(lat.histogram.values()) == 600 and set(lat.histogram) == {delay // lat.bin_ps}
    # store-and-forward latency: minus the input and the output frame's wire time
    first = traffic.ports[2][0]
    wire_ps = Fraction((len(first.data) - 4 + POS_OVERHEAD) * 8 * PS) / OC192_PAYLOAD_BPS
    assert report.streams[2].latency.lifo_max_ps == pytest.approx(float(delay - 2 * wire_ps))


def test_nothing_received_is_all_lost() -> None:
    traffic, ports = loopback_traffic()
    report = Analyzer(ports, PassThrough({0: 1, 2: 3})).analyze(traffic.records(), [])
    assert report.total.lost == 600 and report.total.received == 0
    assert report.total.latency.count == 0 and report.total.latency.avg_ps is None


def test_npf_counts_on_the_real_table() -> None:
    """2,000 IPv4 and 400 IPv6 routes exercised in the real 2024 table (shared/data/routes)."""
    from npkit.runtime.routes import load_routes, real_table_path

    path = real_table_path()
    if path is None:
        pytest.skip("the real route table (../shared/data/routes) is not there")
    table = load_routes(path)
    for family, routes, n in ((4, table.v4, 2_000), (6, table.v6, 400)):
        dests = pick_destinations(routes, family, n, seed=2)
        bits = 32 if family == 4 else 128
        rng = random.Random(3)
        covered = 0  # chosen prefixes with more-specific routes inside them
        for k in range(2 * n):
            index, address = dests.draw(k, rng)
            got = next((address >> (bits - m) << (bits - m), m) for m in range(bits, -1, -1)
                       if (address >> (bits - m) << (bits - m), m) in routes)
            p = dests.prefixes[index]
            assert got == (p.network, p.length)
            covered += k < n and sum(hi - lo + 1 for lo, hi in dests.free[index]) < \
                (1 << (bits - p.length))
        assert len(set(dests.prefixes)) == n
        assert covered > 0  # the real table nests: the more-specifics were really avoided


def test_duration_sends_what_starts_before_the_end() -> None:
    # 64-byte frames on 10GbE start every 67.2 ns: 1 µs holds starts 0, 67.2, ... 940.8 ns
    times = send_times("10gbe", "ethernet", 64, None, duration_ps=1_000_000)
    assert len(times) == 15 and times[-1] == 14 * 67_200


def test_route_reference_predicts_port_and_pos_header() -> None:
    from npkit.bench.tester import RouteReference, parse

    routes = {4: {(0xCB007100, 24): 5, (0xCB007180, 25): 6}}
    ref = RouteReference(routes, lambda hop: hop - 4, out_framing={1: "pos", 2: "pos"})
    data = one_packet("pos", 4, 40, None, "auto")  # to 203.0.113.9: the /24, next hop 5
    expected = ref(None, parse("pos", data))
    assert expected.port == 1 and expected.link == bytes.fromhex("ff030021")
    ip = bytearray(data[4:])
    ip[8] -= 1  # TTL 63; checksum + 0x0100 (RFC 1624: the field's one's complement sum)
    check = int.from_bytes(ip[10:12], "big") + 0x0100
    ip[10:12] = ((check & 0xFFFF) + (check >> 16)).to_bytes(2, "big")
    assert expected.ip == bytes(ip)


# --------------------------------------------------------------------------- phases
def test_streams_out_of_phase_start_at_their_own_seeded_offsets() -> None:
    from npkit.bench.tester import PHASE_WINDOW_PS, out_of_phase, phase_offset

    dests = {4: FixedDestinations.of("198.19.0.1")}
    streams = [Stream(id=i, port=i % 2, framing="pos", sizes=Sizes.fixed(40), count=5,
                      destinations=dests, start_ps=100 * i) for i in range(1, 5)]
    moved = out_of_phase(streams, seed=7)
    offsets = [m.start_ps - s.start_ps for m, s in zip(moved, streams, strict=True)]
    assert all(0 <= o < PHASE_WINDOW_PS for o in offsets) and len(set(offsets)) == 4
    # a stream's phase depends on the seed and its id only
    assert out_of_phase(streams[2:], seed=7) == moved[2:]
    assert out_of_phase(streams, seed=8) != moved
    assert out_of_phase(streams, seed=7, window_ps=0) == tuple(streams)
    traffic = generate(moved, {0: "oc192pos", 1: "oc192pos"})
    firsts = {p: recs[0].time_ps for p, recs in traffic.ports.items()}
    assert firsts[0] != firsts[1]
    assert sorted(firsts.values()) == sorted(min(m.start_ps for m in moved if m.port == p)
                                             for p in (0, 1))
    # uniform over the window: 4,000 streams' offsets in 10 bins, chi-square (9 d.o.f.)
    # below its 0.999 quantile
    counts = [0] * 10
    for i in range(4000):
        counts[phase_offset(i, "uniformity") * 10 // PHASE_WINDOW_PS] += 1
    assert sum((c - 400) ** 2 / 400 for c in counts) < 27.9
    with pytest.raises(ValueError, match="phase window"):
        phase_offset(1, 1, -1)
