"""The control plane driving the MBL router on the native target: the config's tables,
the exception path (ICMP out of the right port, quoting the offending packet), live route
changes and the per-port counters.  Expected packets are built with scapy from the RFCs,
independently of the code under test."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether

from npkit.runtime.control_plane import NativeRouter
from npkit.runtime.router_config import RouterConfig

REPO = Path(__file__).resolve().parents[2]
PORT_MAC = {p: f"02:00:00:00:00:1{p}" for p in range(4)}
HOST = "192.0.2.2"                      # a neighbour on port 0
HOST_MAC = "02:00:00:00:10:02"


@pytest.fixture(scope="module")
def native_program():
    from npkit.compiler.mbl import NativeProgram, compile_file

    return NativeProgram(compile_file(REPO / "examples/router/router.mbl"))


@pytest.fixture
def router(native_program):
    return NativeRouter(native_program, ports=4,
                        config=RouterConfig.load(REPO / "examples/router/control.toml"))


def from_host(dst: str, ttl: int = 64, size: int = 64, df: bool = False, **kw) -> bytes:
    ip = IP(src=HOST, dst=dst, ttl=ttl, id=7, flags="DF" if df else 0)
    payload = kw.get("l4", UDP(sport=1234, dport=5678))
    frame = Ether(src=HOST_MAC, dst=PORT_MAC[0]) / ip / payload
    return bytes(frame / bytes(max(0, size - len(frame))))


def test_forwarding_uses_the_configured_next_hop(router):
    out = router.forward([from_host("10.1.2.3")], 0).out
    (frame,) = out[2]
    eth = Ether(frame)
    assert (eth.dst, eth.src, eth[IP].ttl) == ("02:00:00:00:12:02", PORT_MAC[2], 63)


def test_ttl_expired_becomes_time_exceeded_back_to_the_source(router):
    original = from_host("10.1.2.3", ttl=1)
    out = router.forward([original], 0).out
    assert list(out) == [0]
    reply = Ether(out[0][0])
    assert (reply.dst, reply.src) == (HOST_MAC, PORT_MAC[0])
    ip = reply[IP]
    assert (ip.src, ip.dst, ip[ICMP].type, ip[ICMP].code) == ("192.0.2.1", HOST, 11, 0)
    quoted = bytes(ip[ICMP].payload)
    assert quoted == original[14:14 + len(quoted)] and len(quoted) >= 28
    counters = router.counters.as_dict()
    assert counters[0]["exceptions"] == {"ttl_expired": 1}
    assert counters[0]["injected"] == 1 and counters[0]["tx"] == 1


def test_frag_needed_quotes_the_next_hop_mtu(router):
    out = router.forward([from_host("172.16.0.9", size=1400, df=True)], 0).out
    icmp = Ether(out[0][0])[ICMP]
    assert (icmp.type, icmp.code, icmp.nexthopmtu) == (3, 4, 1280)   # port 3's MTU


def test_echo_to_the_router_is_answered(router):
    request = from_host("198.51.100.1", l4=ICMP(type=8, id=3, seq=9) / b"ping")
    reply = Ether(router.forward([request], 0).out[0][0])
    assert (reply[IP].src, reply[IP].dst) == ("198.51.100.1", HOST)
    assert (reply[ICMP].type, reply[ICMP].id, reply[ICMP].seq) == (0, 3, 9)


def test_live_route_changes_take_effect(router):
    probe = from_host("10.1.2.3")
    router.control.delete_route("10.0.0.0/8")
    assert list(router.forward([probe], 0).out) == [1]              # the default route
    hop = router.control.neighbours.next_hop_for(3, "192.0.2.130")
    router.control.add_route("10.0.0.0/8", hop)
    assert list(router.forward([probe], 0).out) == [3]
    router.control.add_route("10.1.0.0/16", hop)
    router.control.delete_route("10.1.0.0/16")
    assert list(router.forward([probe], 0).out) == [3]
    with pytest.raises(ValueError, match="next hop 999"):
        router.control.add_route("10.2.0.0/16", 999)
    with pytest.raises(ValueError, match="bad prefix"):
        router.control.delete_route("10.2.0.1/16")


def test_drops_are_counted_by_reason(router):
    bad = bytearray(from_host("10.1.2.3"))
    bad[24] ^= 0xFF                                                   # header checksum
    router.forward([bytes(bad), from_host("10.1.2.3")], 0)
    counters = router.counters.as_dict()
    assert counters[0]["rx"] == 2 and counters[0]["drops"] == {"bad_checksum": 1}
    assert counters[2]["tx"] == 1


def test_a_trailer_does_not_leave_with_the_packet(router):
    """RFC 1812 5.2.2: the datagram is total-length bytes; what follows stays behind."""
    plain = from_host("10.1.2.3", size=100)
    out = router.forward([plain + b"trailer bytes"], 0).out
    (frame,) = out[2]
    expected = Ether(plain)
    expected.dst, expected.src = "02:00:00:00:12:02", PORT_MAC[2]
    expected[IP].ttl -= 1
    del expected[IP].chksum
    assert frame == bytes(expected)


def test_a_packet_from_a_broadcast_frame_is_not_forwarded_even_by_the_slow_path(router):
    frame = bytearray(from_host("10.1.2.3", size=100))
    frame[:6] = b"\xff" * 6
    assert router.forward([bytes(frame) + b"trailer"], 0).out == {}


UPSTREAM6, UPSTREAM_MAC = "2001:db8:0:11::2", "02:00:00:00:11:02"     # a neighbour on port 1


def from_upstream6(dst: str, payload) -> bytes:
    from scapy.layers.inet6 import IPv6

    return bytes(Ether(src=UPSTREAM_MAC, dst=PORT_MAC[1]) / IPv6(src=UPSTREAM6, dst=dst)
                 / payload)


@pytest.mark.parametrize("dst", ["2001:db8:0:10::", "2001:db8:0:11::", "2001:db8:0:13::",
                                 "ff02::1", "ff02::2"])
def test_echo_to_an_anycast_or_multicast_address_is_answered_from_the_port(router, dst):
    """RFC 4291 2.6.1 (Subnet-Router anycast), 2.8 (groups a router joins); RFC 4443 4.2:
    the reply comes from a unicast address of the interface the request arrived on."""
    from scapy.layers.inet6 import ICMPv6EchoReply, ICMPv6EchoRequest, IPv6

    out = router.forward([from_upstream6(dst, ICMPv6EchoRequest(id=4, seq=2, data=b"hi"))],
                         1).out
    reply = Ether(out[1][0])
    assert (reply[IPv6].src, reply[IPv6].dst) == ("2001:db8:0:11::1", UPSTREAM6)
    assert (reply[ICMPv6EchoReply].id, reply[ICMPv6EchoReply].seq) == (4, 2)


@pytest.mark.parametrize("dst", ["ff01::1", "ff02::fb", "ff05::1:3", "ff0e::1", "ff15::42"])
def test_multicast_is_never_forwarded(router, dst):
    """RFC 4291 2.7: no multicast routing here, so no scope leaves by the unicast table."""
    from scapy.layers.inet6 import IPv6ExtHdrHopByHop

    for payload in (UDP(sport=1, dport=2), IPv6ExtHdrHopByHop() / UDP(sport=1, dport=2)):
        assert router.forward([from_upstream6(dst, payload)], 1).out == {}


@pytest.mark.parametrize("index", [1024, 1025, 4096, 65535])
def test_a_next_hop_index_past_the_table_is_refused_not_aliased(router, index):
    """Issue 16: index 1025 used to alias next hop 1 (the trie keeps 16 bits, the
    nexthops memory has 1024 records)."""
    from npkit.runtime.route_manager import RouteUpdate

    probe = from_host("11.1.2.3")
    before = router.forward([probe], 0).out
    with pytest.raises(ValueError, match=f"next hop {index} is not in the next-hop table"):
        router.control.add_route("11.0.0.0/8", index)
    with pytest.raises(ValueError, match=f"11.0.0.0/8: next hop {index}"):
        router.control.apply([RouteUpdate("add", 4, 0x0B000000, 8, 1),
                              RouteUpdate("add", 4, 0x0B000000, 8, index)])
    assert router.forward([probe], 0).out == before                  # nothing was applied


def test_an_echo_reply_larger_than_the_way_back_leaves_in_fragments(router):
    """RFC 791: the request came over port 1 (MTU 9000), the reply to 172.16.0.9 leaves
    by port 3 (MTU 1280); scapy reassembles the pieces into the whole reply."""
    from scapy.layers.inet import defragment

    request = bytes(Ether(src="02:00:00:00:11:02", dst=PORT_MAC[1])
                    / IP(src="172.16.0.9", dst="198.51.100.1", id=3)
                    / ICMP(type=8, id=5, seq=6) / (bytes(range(256)) * 8))
    out = router.forward([request], 1).out
    pieces = [Ether(f) for f in out[3]]
    assert len(pieces) == 2 and all(len(p[IP]) <= 1280 for p in pieces)
    (whole,) = defragment([p[IP] for p in pieces])
    assert whole[ICMP].type == 0 and (whole[ICMP].id, whole[ICMP].seq) == (5, 6)
    assert bytes(whole[ICMP].payload) == bytes(range(256)) * 8


def test_an_echo6_reply_larger_than_the_way_back_leaves_in_fragments(router):
    """RFC 8200 4.5 / 5: from port 1 (MTU 9000) to a host behind port 2 (MTU 1500)."""
    from scapy.layers.inet6 import (
        ICMPv6EchoReply,
        ICMPv6EchoRequest,
        IPv6,
        IPv6ExtHdrFragment,
        defragment6,
    )

    request = bytes(Ether(src=UPSTREAM_MAC, dst=PORT_MAC[1])
                    / IPv6(src="2001:db8:100::9", dst="2001:db8:0:11::1")
                    / ICMPv6EchoRequest(id=7, seq=8, data=bytes(range(256)) * 12))
    out = router.forward([request], 1).out
    pieces = [Ether(f)[IPv6] for f in out[2]]
    assert len(pieces) == 3 and all(len(p) <= 1500 for p in pieces)
    assert len({p[IPv6ExtHdrFragment].id for p in pieces}) == 1
    whole = defragment6(pieces)
    reply = IPv6(bytes(whole))[ICMPv6EchoReply]
    assert (reply.id, reply.seq, reply.data) == (7, 8, bytes(range(256)) * 12)


def test_an_echo_reply_carries_the_requests_record_route(router):
    """RFC 1122 3.2.2.6: Record Route / Timestamp of an Echo Request SHOULD be updated and
    included in the Echo Reply (only those two; a NOP-only option list is not copied)."""
    from scapy.layers.inet import IPOption_NOP, IPOption_RR

    request = Ether(src=HOST_MAC, dst=PORT_MAC[0]) / IP(
        src=HOST, dst="192.0.2.1", options=[IPOption_RR(routers=["0.0.0.0"] * 2)]) \
        / ICMP(type=8, id=1, seq=2) / b"rr"
    reply = Ether(router.forward([bytes(request)], 0).out[0][0])
    from scapy.utils import checksum

    rr = reply[IP].options[0]                   # then the EOL padding to a 4-byte word
    assert rr.option == 7 and rr.pointer == 8 and rr.routers == ["192.0.2.1", "0.0.0.0"]
    assert (reply[ICMP].type, reply[ICMP].id, reply[ICMP].seq) == (0, 1, 2)
    assert checksum(bytes(reply[IP])[:reply[IP].ihl * 4]) == 0
    plain = Ether(src=HOST_MAC, dst=PORT_MAC[0]) / IP(
        src=HOST, dst="192.0.2.1", options=[IPOption_NOP()] * 4) / ICMP(type=8)
    assert Ether(router.forward([bytes(plain)], 0).out[0][0])[IP].ihl == 5
