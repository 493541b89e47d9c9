"""Reassembly of IPv4 and IPv6 fragments addressed to the router (RFC 791, RFC 8200 4.5,
RFC 5722): scapy fragments the datagrams (an independent fragmenter), scapy reassembles
the router's fragmented answers, tshark checks every frame the router sends."""

from __future__ import annotations

import random

import pytest
import test_arp_nd as arp_nd
from scapy.layers.inet import ICMP, IP, defragment, fragment
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6TimeExceeded,
    IPv6,
    IPv6ExtHdrFragment,
    fragment6,
)
from scapy.layers.l2 import Ether

from npkit.runtime.control_plane import NativeRouter
from npkit.runtime.icmp import parse_ipv4, parse_ipv6
from npkit.runtime.reassembly import Reassembler, ReassemblyLimits
from npkit.runtime.router_config import RouterConfig

SECOND = 1_000_000_000
PAYLOAD = bytes(range(256)) * 12                        # 3072 bytes: three fragments


def echo4(size: int = len(PAYLOAD)) -> IP:
    return IP(src=arp_nd.TESTER4, dst=arp_nd.ROUTER4[0], id=0x4242) / ICMP(
        type=8, id=7, seq=1) / PAYLOAD[:size]


def echo6() -> IPv6:
    return IPv6(src=arp_nd.TESTER6, dst=arp_nd.ROUTER6[0]) / ICMPv6EchoRequest(
        id=7, seq=1, data=PAYLOAD)


def fragments6(packet: IPv6, size: int = 1280, ident: int = 0x1234) -> list[IPv6]:
    with_header = packet.copy()
    with_header.remove_payload()
    with_header = with_header / IPv6ExtHdrFragment(id=ident) / packet.payload
    return fragment6(with_header, size)


# ------------------------------------------------------------------------- the reassembler

def test_ipv4_fragments_in_any_order_give_the_original():
    original = IP(bytes(echo4()))
    pieces = fragment(original, fragsize=1000)
    assert len(pieces) == 4
    random.Random(5).shuffle(pieces)
    r = Reassembler()
    results = [r.add4(parse_ipv4(bytes(p)), 0) for p in pieces]
    assert results[:-1] == [None] * 3
    assert results[-1] == bytes(original) and len(r) == 0


def test_ipv6_fragments_in_any_order_give_the_original():
    original = echo6()
    pieces = fragments6(original)
    assert len(pieces) == 3
    r = Reassembler()
    results = [r.add6(parse_ipv6(bytes(p)), 0) for p in reversed(pieces)]
    assert results[:-1] == [None] * 2
    assert results[-1] == bytes(IPv6(bytes(original)))


def test_overlapping_fragments_discard_the_datagram():
    """RFC 5722 (and Linux for IPv4): an overlap with different bytes drops it all."""
    pieces = [bytes(p) for p in fragment(IP(bytes(echo4())), fragsize=1000)]
    forged = bytearray(pieces[1])
    forged[-1] ^= 0xFF
    r = Reassembler()
    assert r.add4(parse_ipv4(pieces[1]), 0) is None
    assert r.add4(parse_ipv4(pieces[1]), 0) is None         # an exact repeat is harmless
    assert len(r) == 1
    assert r.add4(parse_ipv4(bytes(forged)), 0) is None
    assert len(r) == 0 and r.counters["dropped.inconsistent"] == 1
    for p in (pieces[0], pieces[2], pieces[3]):
        assert r.add4(parse_ipv4(p), 0) is None


def test_a_datagram_over_65535_bytes_is_refused():
    first = IP(src="192.0.2.5", dst="192.0.2.1", id=9, flags="MF") / (b"x" * 1480)
    last = IP(src="192.0.2.5", dst="192.0.2.1", id=9, frag=8184, proto=1) / (b"y" * 100)
    r = Reassembler()
    assert r.add4(parse_ipv4(bytes(first)), 0) is None
    assert r.add4(parse_ipv4(bytes(last)), 0) is None
    assert r.counters["dropped.inconsistent"] == 1


def test_buffers_are_bounded_and_time_out():
    r = Reassembler(ReassemblyLimits(timeout_ns=30 * SECOND, max_datagrams=2))
    firsts = [bytes(fragment(IP(bytes(echo4())) , fragsize=1000)[0]) for _ in range(3)]
    firsts = [f[:4] + bytes([0, k]) + f[6:] for k, f in enumerate(firsts)]   # three idents
    for f in firsts:
        assert r.add4(parse_ipv4(f), 0) is None
    assert len(r) == 2 and r.counters["dropped.no_buffer"] == 1
    assert r.expire(30 * SECOND - 1) == []
    expired = r.expire(30 * SECOND)
    assert [e.first for e in expired] == firsts[:2] and len(r) == 0


# ------------------------------------------------------------------------- on the router

TESTER_NEIGHBOURS = "".join(f"""
[[neighbour]]
port = 0
ip = "{ip}"
mac = "{arp_nd.TESTER_MAC}"
""" for ip in (arp_nd.TESTER4, arp_nd.TESTER6))


@pytest.fixture(scope="module")
def program():
    from npkit.compiler.mbl import NativeProgram, compile_file

    return NativeProgram(compile_file(arp_nd.REPO / "examples/router/router.mbl"))


@pytest.fixture
def router(program) -> NativeRouter:
    router = NativeRouter(arp_nd.fresh(program), ports=2,
                          config=RouterConfig.loads(arp_nd.CONFIG + TESTER_NEIGHBOURS))
    router.control.exceptions.limiter = None
    return router


def from_tester(packet) -> bytes:
    return bytes(Ether(src=arp_nd.TESTER_MAC, dst=arp_nd.ROUTER_MAC[0]) / packet)


def test_a_fragmented_ipv4_echo_request_is_answered(router, tmp_path):
    pieces = fragment(IP(bytes(echo4())), fragsize=1400)
    out = router.forward([from_tester(p) for p in pieces], 0, SECOND).out
    frames = [Ether(f) for f in out[0]]
    assert len(frames) == 3                             # the 3100-byte reply, fragmented
    reply = defragment([f[IP] for f in frames])[0]
    reply = IP(bytes(reply))
    assert (reply.src, reply.dst, reply[ICMP].type, reply[ICMP].id) == (
        arp_nd.ROUTER4[0], arp_nd.TESTER4, 0, 7)
    assert bytes(reply[ICMP].payload) == PAYLOAD
    arp_nd.well_formed(frames, tmp_path)


def test_a_fragmented_ipv6_echo_request_is_answered(router, tmp_path):
    pieces = fragments6(echo6())
    out = router.forward([from_tester(p) for p in pieces], 0, SECOND).out
    frames = [Ether(f) for f in out[0]]
    assert len(frames) == 3 and all(f.haslayer(IPv6ExtHdrFragment) for f in frames)
    data = b"".join(bytes(f[IPv6ExtHdrFragment].payload) for f in
                    sorted(frames, key=lambda f: f[IPv6ExtHdrFragment].offset))
    reply = ICMPv6EchoReply(data)
    assert (reply.type, reply.id, reply.seq, reply.data) == (129, 7, 1, PAYLOAD)
    arp_nd.well_formed(frames, tmp_path)


def test_an_incomplete_datagram_times_out_with_time_exceeded(router, tmp_path):
    pieces = fragments6(echo6())
    assert router.forward([from_tester(pieces[0])], 0, SECOND).out == {}
    assert router.advance(SECOND + 30 * SECOND - 1) == {}
    out = router.advance(31 * SECOND)
    errors = [Ether(f) for f in out.get(0, []) if Ether(f).haslayer(ICMPv6TimeExceeded)]
    (error,) = errors
    assert (error[ICMPv6TimeExceeded].code, error[IPv6].dst) == (1, arp_nd.TESTER6)
    arp_nd.well_formed([error], tmp_path)
