"""ICMP / ICMPv6 encoders, never-send rules and the rate limiter (npkit.runtime.icmp).

References: scapy builds every offending packet and the expected message (its own
checksum code, incl. the ICMPv6 pseudo-header), and tshark dissects what we wrote
(checksum status, expert info, malformed-packet markers)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import (
    ICMP,
    IP,
    TCP,
    UDP,
    Ether,
    ICMPv6DestUnreach,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6PacketTooBig,
    ICMPv6ParamProblem,
    ICMPv6TimeExceeded,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.inet6 import ICMPv6ND_Redirect, in6_chksum
from scapy.utils import checksum as scapy_checksum
from tshark_check import TSHARK, assert_well_formed, checksum_statuses, dissect

from npkit.runtime import icmp

ROUTER4 = "192.0.2.1"
HOST4 = "198.51.100.7"
FAR4 = "203.0.113.9"
ROUTER6 = "2001:db8:0:1::1"
HOST6 = "2001:db8:0:2::7"
FAR6 = "2001:db8:aaaa::9"
ROUTER_MAC = "02:00:00:00:00:01"
HOST_MAC = "02:00:00:00:00:07"


def a4(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def a6(text: str) -> int:
    return int(ipaddress.IPv6Address(text))


def datagram4(**ip_fields) -> bytes:
    fields = {"src": HOST4, "dst": FAR4, "ttl": 1, "id": 0x1234} | ip_fields
    return bytes(IP(**fields) / UDP(sport=40000, dport=33434) / (b"probe-" * 8))


def datagram6(**ip_fields) -> bytes:
    fields = {"src": HOST6, "dst": FAR6, "hlim": 1} | ip_fields
    return bytes(IPv6(**fields) / UDP(sport=40000, dport=33434) / (b"probe-" * 8))


# ---------------------------------------------------------------- tshark

needs_tshark = pytest.mark.skipif(TSHARK is None,
                                  reason="tshark not installed (apt-get install tshark)")


def tshark_rows(packets: list[bytes], tmp_path: Path,
                quoted_fault: str | None = None) -> list[dict[str, list[str]]]:
    """tshark's dissection of IP packets (wrapped in Ethernet): no malformed packet, no
    expert warning/error and every checksum good.  `quoted_fault`: the one expert warning
    expected, raised by the faulty packet quoted inside a Parameter Problem."""
    frames = [Ether(src=ROUTER_MAC, dst=HOST_MAC) / (IP if p[0] >> 4 == 4 else IPv6)(p)
              for p in packets]
    rows = dissect(frames, tmp_path, "icmp.pcap")
    for row in rows:
        where = assert_well_formed(row, quoted_fault)
        statuses = checksum_statuses(row)
        assert statuses and set(statuses) == {"1"}, where       # 1 = good
    return rows


# ---------------------------------------------------------------- scapy checks

def check_ipv4_message(packet: bytes) -> IP:
    """Parse with scapy; the IPv4 and ICMP checksums scapy computes equal ours."""
    parsed = IP(packet)
    assert len(packet) == parsed.len
    assert scapy_checksum(packet[:parsed.ihl * 4]) == 0
    assert scapy_checksum(packet[parsed.ihl * 4:]) == 0
    rebuilt = parsed.copy()
    del rebuilt.chksum
    del rebuilt[ICMP].chksum
    assert bytes(rebuilt) == packet
    return parsed


def check_ipv6_message(packet: bytes) -> IPv6:
    parsed = IPv6(packet)
    assert len(packet) == 40 + parsed.plen
    assert in6_chksum(58, parsed, packet[40:]) == 0        # pseudo-header included
    return parsed


# ---------------------------------------------------------------- ICMPv4 errors

def test_time_exceeded4_matches_scapy_and_tshark(tmp_path):
    original = datagram4()
    built = icmp.time_exceeded4(original, a4(ROUTER4), ident=7)
    expected = IP(src=ROUTER4, dst=HOST4, ttl=64, tos=0xC0, id=7) / ICMP(type=11, code=0)
    assert built.packet == bytes(expected / original)
    parsed = check_ipv4_message(built.packet)
    assert (parsed[ICMP].type, parsed[ICMP].code) == (11, 0)
    assert bytes(parsed[ICMP].payload) == original
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


@pytest.mark.parametrize("code", [icmp.UNREACH_NET, icmp.UNREACH_HOST, icmp.UNREACH_PROTOCOL,
                                  icmp.UNREACH_PORT, icmp.UNREACH_ADMIN_PROHIBITED])
def test_dest_unreachable4_codes(code, tmp_path):
    original = datagram4(ttl=30)
    built = icmp.dest_unreachable4(original, a4(ROUTER4), code)
    expected = IP(src=ROUTER4, dst=HOST4, ttl=64, tos=0xC0, id=0) / ICMP(type=3, code=code)
    assert built.packet == bytes(expected / original)
    parsed = check_ipv4_message(built.packet)
    assert bytes(parsed[ICMP].payload) == original
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_fragmentation_needed_carries_next_hop_mtu(tmp_path):
    original = datagram4(ttl=30, flags="DF")
    built = icmp.dest_unreachable4(original, a4(ROUTER4), icmp.UNREACH_FRAG_NEEDED, mtu=1400)
    expected = IP(src=ROUTER4, dst=HOST4, ttl=64, tos=0xC0, id=0) / ICMP(
        type=3, code=4, nexthopmtu=1400)
    assert built.packet == bytes(expected / original)
    assert check_ipv4_message(built.packet)[ICMP].nexthopmtu == 1400
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_parameter_problem4_pointer(tmp_path):
    original = bytes(IP(src=HOST4, dst=FAR4, options=b"\x07\x01\x04\x00") / UDP())
    built = icmp.parameter_problem4(original, a4(ROUTER4), pointer=21)
    expected = IP(src=ROUTER4, dst=HOST4, ttl=64, tos=0xC0, id=0) / ICMP(type=12, ptr=21)
    assert built.packet == bytes(expected / original)
    assert check_ipv4_message(built.packet)[ICMP].ptr == 21
    if TSHARK:
        tshark_rows([built.packet], tmp_path, quoted_fault="too-short option length")


def test_ipv4_quote_fills_576_bytes(tmp_path):
    original = bytes(IP(src=HOST4, dst=FAR4, ttl=1) / UDP() / (bytes(range(256)) * 6))
    built = icmp.time_exceeded4(original, a4(ROUTER4))
    assert len(built.packet) == 576
    assert built.packet[28:] == original[:548]
    check_ipv4_message(built.packet)
    short = datagram4()
    assert icmp.time_exceeded4(short, a4(ROUTER4)).packet[28:] == short   # all of it
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_link_padding_is_not_quoted():
    original = datagram4()
    built = icmp.time_exceeded4(original + b"\0" * 10, a4(ROUTER4))
    assert built.packet[28:] == original


def test_echo_reply4_matches_scapy(tmp_path):
    request = bytes(IP(src=HOST4, dst=ROUTER4, tos=0x10) / ICMP(type=8, id=0x4242, seq=9)
                    / b"ping payload 0123456789")
    built = icmp.echo_reply4(request, ident=3)
    expected = IP(src=ROUTER4, dst=HOST4, ttl=64, tos=0x10, id=3) / ICMP(
        type=0, id=0x4242, seq=9) / b"ping payload 0123456789"
    assert built.packet == bytes(expected)
    check_ipv4_message(built.packet)
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


@pytest.mark.parametrize(("request_packet", "reason"), [
    (IP(src=HOST4, dst="255.255.255.255") / ICMP(type=8), "broadcast_destination"),
    (IP(src=HOST4, dst="224.0.0.1") / ICMP(type=8), "multicast_destination"),
    (IP(src="0.0.0.0", dst=ROUTER4) / ICMP(type=8), "invalid_source"),
    (IP(src=HOST4, dst=ROUTER4, flags="MF") / ICMP(type=8), "fragment"),
    (IP(src=HOST4, dst=ROUTER4) / ICMP(type=8, chksum=0xBEEF), "bad_checksum"),
    (IP(src=HOST4, dst=ROUTER4) / ICMP(type=13), "not_echo_request"),
    (IP(src=HOST4, dst=ROUTER4) / UDP(), "not_echo_request"),
])
def test_echo_reply4_refusals(request_packet, reason):
    assert icmp.echo_reply4(bytes(request_packet)) == icmp.Built(None, reason)


def test_ipv4_argument_errors_are_clear():
    original = datagram4()
    with pytest.raises(ValueError, match="next-hop MTU"):
        icmp.dest_unreachable4(original, a4(ROUTER4), icmp.UNREACH_FRAG_NEEDED)
    with pytest.raises(ValueError, match="code must be 0..15"):
        icmp.dest_unreachable4(original, a4(ROUTER4), 16)
    with pytest.raises(ValueError, match="pointer must be 0..255"):
        icmp.parameter_problem4(original, a4(ROUTER4), 300)
    with pytest.raises(ValueError, match="0 or 1"):
        icmp.time_exceeded4(original, a4(ROUTER4), 2)


# ---------------------------------------------------------------- IPv4 never-send rules

def test_never_about_an_icmp_error():
    about_error = bytes(IP(src=HOST4, dst=FAR4, ttl=1) / ICMP(type=3, code=1) / datagram4())
    assert icmp.time_exceeded4(about_error, a4(ROUTER4)) == icmp.Built(None, "icmp_error")
    for error_type in (4, 5, 11, 12):
        packet = bytes(IP(src=HOST4, dst=FAR4, ttl=1) / ICMP(type=error_type))
        assert icmp.suppress4(packet) == "icmp_error"
    # queries are not errors: a Time Exceeded about an echo request is allowed
    echo = bytes(IP(src=HOST4, dst=FAR4, ttl=1) / ICMP(type=8))
    assert icmp.time_exceeded4(echo, a4(ROUTER4)).ok


@pytest.mark.parametrize("dst", ["255.255.255.255", "192.0.2.255"])
def test_never_to_a_broadcast_destination(dst):
    original = datagram4(dst=dst)
    built = icmp.dest_unreachable4(original, a4(ROUTER4), 0,
                                   local_broadcasts=[a4("192.0.2.255")])
    assert built == icmp.Built(None, "broadcast_destination")


def test_never_to_a_multicast_destination():
    built = icmp.time_exceeded4(datagram4(dst="239.1.2.3"), a4(ROUTER4))
    assert built == icmp.Built(None, "multicast_destination")


def test_never_for_a_link_layer_broadcast():
    built = icmp.time_exceeded4(datagram4(), a4(ROUTER4), link_dst=(1 << 48) - 1)
    assert built == icmp.Built(None, "link_broadcast")


def test_never_for_a_link_layer_multicast():
    built = icmp.time_exceeded4(datagram4(), a4(ROUTER4), link_dst=0x01005E010203)
    assert built == icmp.Built(None, "link_multicast")
    assert icmp.time_exceeded4(datagram4(), a4(ROUTER4), link_dst=0x020000000001).ok


def test_never_for_a_non_initial_fragment():
    later = datagram4(frag=100, flags="MF")
    assert icmp.time_exceeded4(later, a4(ROUTER4)) == icmp.Built(None, "non_initial_fragment")
    first = datagram4(frag=0, flags="MF")
    assert icmp.time_exceeded4(first, a4(ROUTER4)).ok


@pytest.mark.parametrize("src", ["0.0.0.0", "0.1.2.3", "127.0.0.1", "240.0.0.1",
                                 "255.255.255.255", "224.0.0.5", "192.0.2.255"])
def test_never_to_an_invalid_source(src):
    built = icmp.time_exceeded4(datagram4(src=src), a4(ROUTER4),
                                local_broadcasts=[a4("192.0.2.255")])
    assert built == icmp.Built(None, "invalid_source")


def test_malformed_original_is_refused():
    assert icmp.time_exceeded4(b"\x45\x00", a4(ROUTER4)) == icmp.Built(None, "malformed")
    assert icmp.time_exceeded6(b"\x60" + bytes(10), a6(ROUTER6)) == icmp.Built(None, "malformed")


# ---------------------------------------------------------------- ICMPv6 errors

def expected6(message) -> bytes:
    return bytes(IPv6(src=ROUTER6, dst=HOST6, hlim=64) / message)


@pytest.mark.parametrize("code", [icmp.UNREACH6_NO_ROUTE, icmp.UNREACH6_ADMIN_PROHIBITED,
                                  icmp.UNREACH6_ADDRESS, icmp.UNREACH6_PORT])
def test_dest_unreachable6_codes(code, tmp_path):
    original = datagram6(hlim=30)
    built = icmp.dest_unreachable6(original, a6(ROUTER6), code)
    assert built.packet == expected6(ICMPv6DestUnreach(code=code) / original)
    parsed = check_ipv6_message(built.packet)
    assert bytes(parsed[ICMPv6DestUnreach].payload) == original
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_packet_too_big_carries_mtu(tmp_path):
    original = datagram6(hlim=30)
    built = icmp.packet_too_big6(original, a6(ROUTER6), 1280)
    assert built.packet == expected6(ICMPv6PacketTooBig(mtu=1280) / original)
    assert check_ipv6_message(built.packet)[ICMPv6PacketTooBig].mtu == 1280
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_time_exceeded6(tmp_path):
    original = datagram6()
    built = icmp.time_exceeded6(original, a6(ROUTER6))
    assert built.packet == expected6(ICMPv6TimeExceeded(code=0) / original)
    check_ipv6_message(built.packet)
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


@pytest.mark.parametrize(("code", "pointer"), [(0, 4), (1, 6), (2, 42)])
def test_parameter_problem6(code, pointer, tmp_path):
    original = datagram6(hlim=30)
    built = icmp.parameter_problem6(original, a6(ROUTER6), code, pointer)
    assert built.packet == expected6(ICMPv6ParamProblem(code=code, ptr=pointer) / original)
    parsed = check_ipv6_message(built.packet)
    assert (parsed[ICMPv6ParamProblem].code, parsed[ICMPv6ParamProblem].ptr) == (code, pointer)
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_ipv6_quote_fills_1280_bytes(tmp_path):
    original = bytes(IPv6(src=HOST6, dst=FAR6) / UDP() / (bytes(range(256)) * 6))
    built = icmp.packet_too_big6(original, a6(ROUTER6), 1280)
    assert len(built.packet) == 1280
    assert built.packet[48:] == original[:1232]
    check_ipv6_message(built.packet)
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_echo_reply6_matches_scapy(tmp_path):
    request = bytes(IPv6(src=HOST6, dst=ROUTER6) / ICMPv6EchoRequest(id=77, seq=3,
                                                                       data=b"hello v6"))
    built = icmp.echo_reply6(request)
    assert built.packet == expected6(ICMPv6EchoReply(id=77, seq=3, data=b"hello v6"))
    check_ipv6_message(built.packet)
    if TSHARK:
        tshark_rows([built.packet], tmp_path)


def test_echo_reply6_after_extension_headers():
    request = bytes(IPv6(src=HOST6, dst=ROUTER6) / IPv6ExtHdrDestOpt()
                    / ICMPv6EchoRequest(id=1, seq=2, data=b"x"))
    built = icmp.echo_reply6(request)
    assert built.packet == expected6(ICMPv6EchoReply(id=1, seq=2, data=b"x"))


@pytest.mark.parametrize(("request_packet", "reason"), [
    (IPv6(src=HOST6, dst=ROUTER6) / ICMPv6EchoRequest(cksum=0x1111), "bad_checksum"),
    (IPv6(src="::", dst=ROUTER6) / ICMPv6EchoRequest(), "invalid_source"),
    (IPv6(src=HOST6, dst="ff02::1") / ICMPv6EchoRequest(), "multicast_destination"),
    (IPv6(src=HOST6, dst=ROUTER6) / IPv6ExtHdrFragment(m=1) / ICMPv6EchoRequest(), "fragment"),
    (IPv6(src=HOST6, dst=ROUTER6) / UDP(), "not_echo_request"),
])
def test_echo_reply6_refusals(request_packet, reason):
    assert icmp.echo_reply6(bytes(request_packet)) == icmp.Built(None, reason)


def test_ipv6_argument_errors_are_clear():
    with pytest.raises(ValueError, match="at least the IPv6 minimum 1280"):
        icmp.packet_too_big6(datagram6(), a6(ROUTER6), 1000)
    with pytest.raises(ValueError, match="0, 1 or 2"):
        icmp.parameter_problem6(datagram6(), a6(ROUTER6), 3, 0)
    with pytest.raises(ValueError, match="0..6"):
        icmp.dest_unreachable6(datagram6(), a6(ROUTER6), 9)


# ---------------------------------------------------------------- IPv6 never-send rules

def test_never_about_an_icmpv6_error():
    about_error = bytes(IPv6(src=HOST6, dst=FAR6, hlim=1) / ICMPv6DestUnreach() / datagram6())
    assert icmp.time_exceeded6(about_error, a6(ROUTER6)) == icmp.Built(None, "icmp_error")
    # behind extension headers too
    hidden = bytes(IPv6(src=HOST6, dst=FAR6, hlim=1) / IPv6ExtHdrHopByHop()
                   / IPv6ExtHdrRouting() / ICMPv6TimeExceeded() / datagram6())
    assert icmp.time_exceeded6(hidden, a6(ROUTER6)) == icmp.Built(None, "icmp_error")
    echo = bytes(IPv6(src=HOST6, dst=FAR6, hlim=1) / ICMPv6EchoRequest())
    assert icmp.time_exceeded6(echo, a6(ROUTER6)).ok


def test_never_about_a_redirect():
    redirect = bytes(IPv6(src=HOST6, dst=FAR6, hlim=1) / ICMPv6ND_Redirect())
    assert icmp.time_exceeded6(redirect, a6(ROUTER6)) == icmp.Built(None, "icmp_redirect")


def test_multicast_destination_only_packet_too_big_and_option_problem():
    original = datagram6(dst="ff0e::1", hlim=30)
    src = a6(ROUTER6)
    assert icmp.dest_unreachable6(original, src, 0).reason == "multicast_destination"
    assert icmp.time_exceeded6(original, src).reason == "multicast_destination"
    assert icmp.parameter_problem6(original, src, 0, 4).reason == "multicast_destination"
    assert icmp.packet_too_big6(original, src, 1280).ok
    assert icmp.parameter_problem6(original, src, 2, 42).ok


@pytest.mark.parametrize(("link_dst", "reason"), [((1 << 48) - 1, "link_broadcast"),
                                                  (0x333300000001, "link_multicast")])
def test_link_layer_broadcast_and_multicast6(link_dst, reason):
    original = datagram6(hlim=30)
    src = a6(ROUTER6)
    assert icmp.time_exceeded6(original, src, link_dst=link_dst).reason == reason
    assert icmp.packet_too_big6(original, src, 1500, link_dst=link_dst).ok
    assert icmp.parameter_problem6(original, src, 2, 42, link_dst=link_dst).ok


@pytest.mark.parametrize("src", ["::", "::1", "ff02::1"])
def test_never_to_an_invalid_source6(src):
    for built in (icmp.time_exceeded6(datagram6(src=src), a6(ROUTER6)),
                  icmp.packet_too_big6(datagram6(src=src), a6(ROUTER6), 1280)):
        assert built == icmp.Built(None, "invalid_source")


def test_non_initial_fragment6_still_answered():
    """RFC 4443 2.4(e) has no fragment rule: a Packet Too Big about a later fragment is what
    lets the source shrink its fragments (path MTU discovery)."""
    later = bytes(IPv6(src=HOST6, dst=FAR6) / IPv6ExtHdrFragment(offset=100, nh=58)
                  / (b"\x01" * 64))
    assert icmp.packet_too_big6(later, a6(ROUTER6), 1280).ok


# ---------------------------------------------------------------- rate limiter

def test_token_bucket_with_explicit_clock():
    bucket = icmp.TokenBucket(rate_per_s=10, burst=10)
    assert [bucket.take(0) for _ in range(11)] == [True] * 10 + [False]
    assert not bucket.take(99_999_999)               # 99.99 ms: not yet one token
    assert bucket.take(100_000_000)                  # 100 ms earns exactly one
    assert not bucket.take(100_000_000)
    assert sum(bucket.take(60 * 10**9) for _ in range(20)) == 10     # refill caps at burst
    assert not bucket.take(1)                        # a clock going backwards earns nothing


def test_rate_limiter_families_are_independent():
    limiter = icmp.IcmpRateLimiter.of(rate_per_s=1, burst=2)
    assert [limiter.allow(4, 0) for _ in range(3)] == [True, True, False]
    assert limiter.allow(6, 0)
    assert limiter.allow(4, 10**9) and not limiter.allow(4, 10**9)
    with pytest.raises(ValueError, match="family must be 4 or 6"):
        limiter.allow(5, 0)


def test_rate_limiter_defaults_are_rfc4443_example():
    limiter = icmp.IcmpRateLimiter()
    assert (limiter.v4.rate_per_s, limiter.v4.burst) == (10.0, 10)
    assert (limiter.v6.rate_per_s, limiter.v6.burst) == (10.0, 10)


@pytest.mark.parametrize(("rate", "burst", "message"), [(0, 10, "rate must be > 0"),
                                                         (10, 0, "burst must be at least 1")])
def test_token_bucket_rejects_bad_parameters(rate, burst, message):
    with pytest.raises(ValueError, match=message):
        icmp.TokenBucket(rate, burst)


# ---------------------------------------------------------------- properties

SUPPRESSION_REASONS = {"malformed", "broadcast_destination", "multicast_destination",
                       "link_broadcast", "link_multicast", "invalid_source",
                       "non_initial_fragment", "icmp_error", "icmp_redirect"}

addresses4 = st.one_of(st.integers(0, 2**32 - 1),
                       st.sampled_from([0, a4("127.0.0.1"), a4("224.0.0.1"), 2**32 - 1,
                                        a4(HOST4), a4(FAR4)]))


@st.composite
def ipv4_packets(draw) -> bytes:
    payload_kind = draw(st.sampled_from(["udp", "tcp", "icmp", "raw"]))
    layer = {"udp": UDP(), "tcp": TCP(), "icmp": ICMP(type=draw(st.integers(0, 20))),
             "raw": b""}[payload_kind]
    packet = IP(src=str(ipaddress.IPv4Address(draw(addresses4))),
                dst=str(ipaddress.IPv4Address(draw(addresses4))), ttl=draw(st.integers(0, 255)),
                frag=draw(st.integers(0, 8191)), flags=draw(st.integers(0, 7)),
                tos=draw(st.integers(0, 255))) / layer / draw(st.binary(max_size=700))
    return bytes(packet)


@settings(max_examples=200, deadline=None)
@given(packet=st.one_of(ipv4_packets(), st.binary(max_size=80)),
       link_dst=st.one_of(st.none(), st.integers(0, 2**48 - 1)))
def test_ipv4_errors_are_well_formed_or_suppressed(packet, link_dst):
    built = icmp.time_exceeded4(packet, a4(ROUTER4), link_dst=link_dst)
    if built.packet is None:
        assert built.reason in SUPPRESSION_REASONS
        return
    parsed = check_ipv4_message(built.packet)
    assert len(built.packet) <= 576
    original = IP(packet)
    assert built.packet[28:] == packet[:min(original.len, 548)]
    assert parsed.dst == original.src


addresses6 = st.one_of(st.integers(0, 2**128 - 1),
                       st.sampled_from([0, 1, a6("ff02::1"), a6(HOST6), a6(FAR6)]))


@st.composite
def ipv6_packets(draw) -> bytes:
    chain = draw(st.lists(st.sampled_from(["hbh", "dst", "rt", "frag"]), max_size=3))
    packet = IPv6(src=str(ipaddress.IPv6Address(draw(addresses6))),
                  dst=str(ipaddress.IPv6Address(draw(addresses6))))
    for kind in chain:
        packet = packet / {"hbh": IPv6ExtHdrHopByHop(), "dst": IPv6ExtHdrDestOpt(),
                           "rt": IPv6ExtHdrRouting(),
                           "frag": IPv6ExtHdrFragment(offset=draw(st.integers(0, 3)))}[kind]
    upper = draw(st.sampled_from([UDP(), ICMPv6EchoRequest(), ICMPv6DestUnreach(),
                                  ICMPv6PacketTooBig()]))
    return bytes(packet / upper / draw(st.binary(max_size=1500)))


@settings(max_examples=200, deadline=None)
@given(packet=st.one_of(ipv6_packets(), st.binary(max_size=80)),
       kind=st.sampled_from(["te", "ptb", "pp2"]))
def test_ipv6_errors_are_well_formed_or_suppressed(packet, kind):
    src = a6(ROUTER6)
    built = {"te": lambda: icmp.time_exceeded6(packet, src),
             "ptb": lambda: icmp.packet_too_big6(packet, src, 1280),
             "pp2": lambda: icmp.parameter_problem6(packet, src, 2, 40)}[kind]()
    if built.packet is None:
        assert built.reason in SUPPRESSION_REASONS
        return
    parsed = check_ipv6_message(built.packet)
    assert len(built.packet) <= 1280
    original = IPv6(packet)
    assert built.packet[48:] == packet[:min(40 + original.plen, 1232)]
    assert parsed.dst == original.src


@needs_tshark
def test_tshark_check_catches_a_bad_checksum(tmp_path):
    """The tshark harness itself: a corrupted ICMP checksum must fail it."""
    packet = bytearray(icmp.time_exceeded4(datagram4(), a4(ROUTER4)).packet)
    packet[22] ^= 0xFF
    with pytest.raises(AssertionError):
        tshark_rows([bytes(packet)], tmp_path)
