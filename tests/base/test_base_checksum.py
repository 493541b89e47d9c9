"""npkit.base.checksum against scapy (an independent implementation) and the worked examples
of RFC 1071 and RFC 1624."""

from __future__ import annotations

import struct
from ipaddress import IPv6Address

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6, in6_chksum
from scapy.utils import checksum as scapy_checksum

from npkit.base.checksum import (
    PROTO_TCP,
    PROTO_UDP,
    icmp6_checksum,
    internet_checksum,
    ipv4_header_checksum,
    ones_sum,
    pseudo_header_checksum,
    udp_checksum,
    update_checksum,
    with_ipv4_checksum,
)

addresses4 = st.integers(0, 2**32 - 1).map(lambda a: a.to_bytes(4, "big"))
addresses6 = st.integers(0, 2**128 - 1).map(lambda a: a.to_bytes(16, "big"))
words = st.integers(0, 0xFFFF)


def test_rfc1071_example():
    """RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2 (checksum 220d)."""
    data = bytes.fromhex("0001f203f4f5f6f7")
    assert ones_sum(data) == 0xDDF2
    assert internet_checksum(data) == 0x220D


def test_rfc1624_example():
    """RFC 1624 section 4: HC 0xdd2f, m 0x5555 -> m' 0x3285 gives HC' 0x0000 by eqn. 3
    (eqn. 2 of RFC 1141 would give the wrong 0xffff)."""
    assert update_checksum(0xDD2F, 0x5555, 0x3285) == 0x0000


def test_sums_of_zero_and_negative_zero():
    assert ones_sum(b"") == 0 and internet_checksum(b"") == 0xFFFF
    assert ones_sum(bytes(6)) == 0
    assert ones_sum(b"\xff\xff\xff\xff") == 0xFFFF  # a non-zero sum is never written 0


@given(st.binary(max_size=300))
def test_internet_checksum_matches_scapy(data):
    assert internet_checksum(data) == scapy_checksum(data)


@given(st.binary(max_size=300))
def test_data_with_its_checksum_verifies(data):
    """Appending the checksum (at an even offset) makes the whole sum to zero."""
    padded = data + bytes(len(data) & 1)
    assert internet_checksum(padded + struct.pack("!H", internet_checksum(padded))) == 0


@given(addresses4, addresses4, st.integers(0, 255))
def test_ipv4_header_checksum_matches_scapy(src, dst, ttl):
    packet = bytes(IP(src=".".join(map(str, src)), dst=".".join(map(str, dst)), ttl=ttl,
                      id=ttl * 7) / b"payload")
    header = packet[:20]
    assert ipv4_header_checksum(header) == struct.unpack("!H", header[10:12])[0]
    stale = header[:10] + b"\xbe\xef" + header[12:]
    assert with_ipv4_checksum(stale) == header
    assert internet_checksum(with_ipv4_checksum(stale)) == 0


def test_ipv4_header_too_short():
    with pytest.raises(ValueError, match="at least 20 bytes"):
        ipv4_header_checksum(bytes(19))


@given(addresses4, addresses4, st.binary(max_size=200), words, words)
def test_udp4_and_tcp4_match_scapy(src, dst, payload, sport, dport):
    ip = IP(src=".".join(map(str, src)), dst=".".join(map(str, dst)))
    udp = bytes(ip / UDP(sport=sport, dport=dport) / payload)[20:]
    want = struct.unpack("!H", udp[6:8])[0]
    zeroed = udp[:6] + b"\0\0" + udp[8:]
    assert udp_checksum(src, dst, zeroed) == want
    assert pseudo_header_checksum(src, dst, PROTO_UDP, udp) == 0  # as sent, it verifies
    tcp = bytes(ip / TCP(sport=sport, dport=dport) / payload)[20:]
    want = struct.unpack("!H", tcp[16:18])[0]
    assert pseudo_header_checksum(src, dst, PROTO_TCP, tcp[:16] + b"\0\0" + tcp[18:]) == want


@given(addresses6, addresses6, st.binary(max_size=200))
def test_udp6_and_icmp6_match_scapy(src, dst, payload):
    ip = IPv6(src=str(IPv6Address(src)), dst=str(IPv6Address(dst)))
    udp = bytes(ip / UDP(sport=1, dport=2) / payload)[40:]
    assert udp_checksum(src, dst, udp[:6] + b"\0\0" + udp[8:]) == \
        struct.unpack("!H", udp[6:8])[0]
    echo = bytes(ip / ICMPv6EchoRequest(id=1, seq=2, data=payload))[40:]
    assert icmp6_checksum(src, dst, echo[:2] + b"\0\0" + echo[4:]) == \
        struct.unpack("!H", echo[2:4])[0]
    assert in6_chksum(58, ip, echo) == 0  # scapy agrees the message verifies


def test_udp_checksum_zero_is_sent_as_ffff():
    """RFC 768: a computed 0 is sent as all ones.  Find a segment whose sum is 0xFFFF by
    choosing its last word."""
    src, dst = bytes(4), bytes(4)
    segment = struct.pack("!HHHH", 1, 2, 10, 0) + b"\0\0"
    partial = pseudo_header_checksum(src, dst, PROTO_UDP, segment)
    fixed = segment[:8] + struct.pack("!H", partial)
    assert pseudo_header_checksum(src, dst, PROTO_UDP, fixed) == 0
    assert udp_checksum(src, dst, fixed) == 0xFFFF


def test_pseudo_header_needs_matching_addresses():
    with pytest.raises(ValueError, match="4 .IPv4. or 16 .IPv6. bytes"):
        pseudo_header_checksum(bytes(4), bytes(16), PROTO_UDP, b"")


@given(st.binary(min_size=2, max_size=100).filter(lambda b: len(b) % 2 == 0),
       st.data())
def test_incremental_update_equals_recomputing(data, draw):
    """RFC 1624: updating for one changed word gives the checksum computed from scratch.
    The one exception is data that becomes all zero: recomputing gives 0xFFFF, eqn. 3 the
    equivalent 0x0000 (+0 and -0 of one's complement)."""
    index = draw.draw(st.integers(0, len(data) // 2 - 1))
    new = draw.draw(words)
    old = struct.unpack_from("!H", data, 2 * index)[0]
    changed = data[:2 * index] + struct.pack("!H", new) + data[2 * index + 2:]
    updated = update_checksum(internet_checksum(data), old, new)
    if any(changed):
        assert updated == internet_checksum(changed)
    else:
        assert updated == 0x0000 and internet_checksum(changed) == 0xFFFF
