"""npkit.base.headers against scapy's IPv4 and IPv6 headers, and the simulator's generator
against scapy's parse of its frames."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from npkit.base.headers import ipv4_header, ipv6_header
from npkit.sim.packets import Generator

byte = st.integers(0, 255)


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), byte, st.integers(0, 1400),
       byte, byte, st.integers(0, 0xFFFF), st.integers(0, 7), st.integers(0, 0x1FFF),
       st.integers(0, 10).map(lambda n: bytes([1]) * (4 * n)))
def test_ipv4_header_matches_scapy(src, dst, protocol, payload_len, ttl, tos, ident, flags,
                                   fragment, options):
    ours = ipv4_header(src, dst, protocol, payload_len, ttl=ttl, tos=tos, ident=ident,
                       flags_fragment=flags << 13 | fragment, options=options)
    theirs = IP(src=str(IPv4Address(src)), dst=str(IPv4Address(dst)), proto=protocol, ttl=ttl,
                tos=tos, id=ident, flags=flags, frag=fragment, options=options,
                len=20 + len(options) + payload_len)
    assert ours == bytes(theirs)


def test_ipv4_options_must_be_words():
    with pytest.raises(ValueError, match="4-byte words"):
        ipv4_header(1, 2, 17, 0, options=b"\x01")


@given(st.integers(0, 2**128 - 1), st.integers(0, 2**128 - 1), byte, st.integers(0, 9000),
       byte, byte, st.integers(0, 0xFFFFF))
def test_ipv6_header_matches_scapy(src, dst, next_header, payload_len, hop_limit, tc, flow):
    ours = ipv6_header(src, dst, next_header, payload_len, hop_limit=hop_limit,
                       traffic_class=tc, flow_label=flow)
    theirs = IPv6(src=str(IPv6Address(src)), dst=str(IPv6Address(dst)), nh=next_header,
                  plen=payload_len, hlim=hop_limit, tc=tc, fl=flow)
    assert ours == bytes(theirs)


def test_generator_frames_are_what_scapy_would_build():
    gen = Generator(sizes=(64, 128), count=6, flows=3, fcs=False)
    for seq, frame in enumerate(f.data for f in gen.frames()):
        packet = Ether(frame)
        ip, udp = packet[IP], packet[UDP]
        assert (ip.src, ip.dst, ip.id, ip.ttl) == ("198.18.0.1", "198.19.0.1", seq, 64)
        rebuilt = IP(src=ip.src, dst=ip.dst, id=ip.id, ttl=64, proto=17, len=ip.len)
        assert bytes(ip)[:20] == bytes(rebuilt)  # the header scapy computes, checksum included
        assert udp.sport == 1024 + seq % 3
