"""microblocks/rss.mbl on the native target against Microsoft's published RSS verification
values and a separately written Toeplitz reference (npkit.runtime.rss.toeplitz)."""

from __future__ import annotations

import ipaddress
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import ICMP, IP, TCP, UDP, Ether, IPv6, IPv6ExtHdrHopByHop, raw

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.runtime.rss import (
    ADDRS,
    DEFAULT_FIELDS,
    MICROSOFT_KEY,
    PORTS,
    PacketType,
    RssError,
    key_table,
    program_rss,
    spread_reta,
    toeplitz,
)

REPO = Path(__file__).resolve().parents[2]

# Microsoft, "Verifying the RSS Hash Calculation" (learn.microsoft.com/windows-hardware/drivers/
# network/verifying-the-rss-hash-calculation), with the default key MICROSOFT_KEY:
# (destination, dst port, source, src port, hash of the addresses, hash with the ports).
# FACTS.md 1b quotes the first row.
MS_IPV4 = [
    ("161.142.100.80", 1766, "66.9.149.187", 2794, 0x323E8FC2, 0x51CCC178),
    ("65.69.140.83", 4739, "199.92.111.2", 14230, 0xD718262A, 0xC626B0EA),
    ("12.22.207.184", 38024, "24.19.198.95", 12898, 0xD2D0A5DE, 0x5C2B394A),
    ("209.142.163.6", 2217, "38.27.205.30", 48228, 0x82989176, 0xAFC7327F),
    ("202.188.127.2", 1303, "153.39.163.191", 44251, 0x5D1809C5, 0x10E828A2),
]
MS_IPV6 = [
    ("3ffe:2501:200:3::1", 1766, "3ffe:2501:200:1fff::7", 2794, 0x2CC18CD5, 0x40207D3D),
    ("ff02::1", 4739, "3ffe:501:8::260:97ff:fe40:efab", 14230, 0x0F0C461C, 0xDDE51BBF),
    ("fe80::200:f8ff:fe21:67cf", 38024, "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251,
     0x4B61E985, 0x02D1FEEF),
]

PROBE = f"""
import "{REPO / 'microblocks' / 'rss.mbl'}";
array out : bit<32> [1] in sram;
block probe {{
    let h = rss_hash();
    out[0] = h;
    forward(rss_queue(h) as bit<16>);
}}
"""


@pytest.fixture(scope="module")
def probe() -> NativeProgram:
    return NativeProgram(compile_source(PROBE, "probe.mbl"), "probe")


def _hash(native: NativeProgram, frame: bytes) -> int:
    native.run([frame])
    return native.read("out", 0)


def _v4(dst, dport, src, sport, l4=TCP) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst) / l4(sport=sport, dport=dport))


def _v6(dst, dport, src, sport, l4=TCP) -> bytes:
    return raw(Ether() / IPv6(src=src, dst=dst) / l4(sport=sport, dport=dport))


@pytest.mark.parametrize("l4", [TCP, UDP])
def test_microsoft_vectors_ipv4_and_ipv6_with_ports(probe, l4):
    program_rss(probe, MICROSOFT_KEY)  # default fields: 4-tuple for TCP and UDP
    for dst, dport, src, sport, _, with_ports in MS_IPV4:
        assert _hash(probe, _v4(dst, dport, src, sport, l4)) == with_ports
    for dst, dport, src, sport, _, with_ports in MS_IPV6:
        assert _hash(probe, _v6(dst, dport, src, sport, l4)) == with_ports


def test_microsoft_vectors_addresses_only(probe):
    program_rss(probe, MICROSOFT_KEY, {t: ADDRS for t in PacketType})
    for dst, dport, src, sport, addrs_only, _ in MS_IPV4:
        assert _hash(probe, _v4(dst, dport, src, sport)) == addrs_only
    for dst, dport, src, sport, addrs_only, _ in MS_IPV6:
        assert _hash(probe, _v6(dst, dport, src, sport)) == addrs_only


def test_the_reference_toeplitz_gives_the_published_values():
    for dst, dport, src, sport, addrs_only, with_ports in MS_IPV4 + MS_IPV6:
        a = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
        assert toeplitz(a) == addrs_only
        assert toeplitz(a + sport.to_bytes(2, "big") + dport.to_bytes(2, "big")) == with_ports


def test_other_types_hash_addresses_and_fields_are_per_type(probe):
    src, dst = "10.0.0.1", "10.0.0.2"
    addrs = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
    program_rss(probe, MICROSOFT_KEY)
    assert _hash(probe, raw(Ether() / IP(src=src, dst=dst) / ICMP())) == toeplitz(addrs)
    # a fragment is "other": its ports are not hashed (the first fragment neither)
    frag = raw(Ether() / IP(src=src, dst=dst, flags="MF") / UDP(sport=1, dport=2))
    assert _hash(probe, frag) == toeplitz(addrs)
    # an IPv6 extension header: "other"
    v6 = raw(Ether() / IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrHopByHop()
             / UDP(sport=1, dport=2))
    assert _hash(probe, v6) == toeplitz(ipaddress.ip_address("2001:db8::1").packed
                                        + ipaddress.ip_address("2001:db8::2").packed)
    # UDP hashed by addresses only while TCP keeps the 4-tuple
    program_rss(probe, MICROSOFT_KEY, {**DEFAULT_FIELDS, PacketType.IPV4_UDP: ADDRS})
    assert _hash(probe, _v4(dst, 2, src, 1, UDP)) == toeplitz(addrs)
    assert _hash(probe, _v4(dst, 2, src, 1, TCP)) == toeplitz(addrs + bytes([0, 1, 0, 2]))
    # nothing selected, not IP, or a truncated TCP header: hash 0
    program_rss(probe, MICROSOFT_KEY, {PacketType.IPV4_TCP: ADDRS | PORTS})
    assert _hash(probe, _v4(dst, 2, src, 1, UDP)) == 0
    assert _hash(probe, raw(Ether(type=0x0806) / bytes(28))) == 0
    cut = raw(Ether() / IP(src=src, dst=dst, proto=6))
    assert _hash(probe, cut) == 0  # IPV4_OTHER has no fields selected here


@settings(max_examples=25, deadline=None)
@given(key=st.binary(min_size=40, max_size=40), v6=st.booleans(),
       src=st.integers(0, 2**128 - 1), dst=st.integers(0, 2**128 - 1),
       sport=st.integers(0, 65535), dport=st.integers(0, 65535))
def test_any_key_matches_the_reference(probe, key, v6, src, dst, sport, dport):
    program_rss(probe, key)
    ports = sport.to_bytes(2, "big") + dport.to_bytes(2, "big")
    if v6:
        s, d = ipaddress.IPv6Address(src), ipaddress.IPv6Address(dst)
        frame = _v6(str(d), dport, str(s), sport, UDP)
    else:
        s, d = ipaddress.IPv4Address(src >> 96), ipaddress.IPv4Address(dst >> 96)
        frame = _v4(str(d), dport, str(s), sport, UDP)
    assert _hash(probe, frame) == toeplitz(s.packed + d.packed + ports, key)


def test_key_table_is_the_toeplitz_of_each_byte():
    table = key_table(MICROSOFT_KEY)
    for pos in (0, 7, 35):
        for v in (1, 0x80, 0xA5):
            data = bytes(pos) + bytes([v])
            assert int(table[pos * 256 + v]) == toeplitz(data)


def test_bad_configurations_are_errors(probe):
    with pytest.raises(RssError):
        key_table(bytes(39))
    with pytest.raises(RssError):
        program_rss(probe, MICROSOFT_KEY, {PacketType.IPV4_TCP: 4})
    with pytest.raises(RssError):
        program_rss(probe, MICROSOFT_KEY, reta=[0] * 127)


# Spread: 4096 distinct random TCP flows over 4 queues through the 128-entry table.  A queue's
# share has a standard deviation of sqrt(.25 * .75 / 4096) = 0.68 percentage points; the bound
# is 25 % +- 3 points (4.4 sigma), and no table entry takes more than twice its mean (32).
FLOWS = 4096
QUEUES = 4


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**64 - 1))
def test_indirection_table_spreads_flows_near_uniformly(seed):
    native = _steer()
    program_rss(native, MICROSOFT_KEY, reta=spread_reta(QUEUES))
    rng = random.Random(seed)
    flows = {(rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(16),
              rng.getrandbits(16)) for _ in range(FLOWS)}
    frames = [raw(Ether() / IP(src=str(ipaddress.IPv4Address(s)),
                                  dst=str(ipaddress.IPv4Address(d))) / TCP(sport=sp, dport=dp))
              for s, d, sp, dp in sorted(flows)]
    verdicts = native.run(frames)
    per_queue = Counter(v.queue for v in verdicts)
    assert set(per_queue) <= set(range(QUEUES))
    for q in range(QUEUES):
        assert abs(per_queue[q] / len(frames) - 1 / QUEUES) <= 0.03, per_queue
    hashes = Counter(toeplitz(ipaddress.IPv4Address(s).packed + ipaddress.IPv4Address(d).packed
                              + sp.to_bytes(2, "big") + dp.to_bytes(2, "big")) & 127
                     for s, d, sp, dp in flows)
    assert max(hashes.values()) <= 2 * len(flows) / 128


_STEER: list[NativeProgram] = []


def _steer() -> NativeProgram:
    if not _STEER:
        from npkit.compiler.mbl import compile_file
        _STEER.append(NativeProgram(compile_file(REPO / "microblocks" / "rss.mbl"), "rss_steer"))
    return _STEER[0]


def test_steering_pipeline_sets_the_queue_and_keeps_the_port():
    native = _steer()
    program_rss(native, MICROSOFT_KEY, reta=[(i * 7) % 16 for i in range(128)])
    dst, dport, src, sport, _, h = MS_IPV4[0]
    [v] = native.run([_v4(dst, dport, src, sport)], in_ports=3)
    assert (v.kind, v.port, v.queue) == ("forward", 3, ((h & 127) * 7) % 16)
