"""The exception path (npkit.runtime.exception_path): one test per exception code, error
type and never-send rule, software fragmentation and forwarding, counters.

Offending frames are built with scapy; results are parsed with scapy (checksums, quoted
bytes, fields), reassembled with scapy's `defragment`, and dissected by tshark."""

from __future__ import annotations

import ipaddress
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import (
    ARP,
    ICMP,
    IP,
    TCP,
    UDP,
    Ether,
    ICMPv6DestUnreach,
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6ND_NS,
    ICMPv6PacketTooBig,
    ICMPv6ParamProblem,
    ICMPv6TimeExceeded,
    IPv6,
    IPv6ExtHdrHopByHop,
    defragment,
)
from scapy.layers.inet6 import (
    HBHOptUnknown,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrRouting,
    RouterAlert,
    in6_chksum,
)
from scapy.packet import Raw
from scapy.utils import checksum as scapy_checksum
from tshark_check import TSHARK, assert_well_formed, checksum_statuses, dissect

from npkit.runtime.exception_path import (
    NOT_IP,
    OUTCOME_PREFIXES,
    Emit,
    Exc,
    ExceptionHandler,
    fragment_ipv4,
)
from npkit.runtime.icmp import IcmpRateLimiter
from npkit.runtime.neighbours import NextHop, PortConfig, glean_record, mac_to_int, mac_to_str

REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- a small router

PORT0_MAC, PORT1_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
HOST_MAC, GATEWAY_MAC = "02:aa:00:00:00:07", "02:bb:00:00:00:01"
PORTS = [
    PortConfig.of(0, PORT0_MAC, ["192.0.2.1/24"], ["2001:db8:0:1::1/64", "fe80::1/64"]),
    PortConfig.of(1, PORT1_MAC, ["198.51.100.1/24"], ["2001:db8:0:2::1/64"]),
]
HOST4, HOST6 = "192.0.2.7", "2001:db8:0:1::7"          # on port 0
FAR4, FAR6 = "203.0.113.9", "2001:db8:aaaa::9"          # via the gateway on port 1
SMALL4, SMALL6 = "10.1.2.3", "2001:db8:bbbb::3"         # via a link with a small MTU
BLOCKED4, BLOCKED6 = "172.16.0.9", "2001:db8:cccc::9"   # prohibited next hop
NH_HOST, NH_GATEWAY, NH_SMALL, NH_PROHIBITED = 0, 1, 2, 3
NEXT_HOPS = {
    NH_HOST: NextHop(mac_to_int(HOST_MAC), mac_to_int(PORT0_MAC), 0, 1500),
    NH_GATEWAY: NextHop(mac_to_int(GATEWAY_MAC), mac_to_int(PORT1_MAC), 1, 1500),
    NH_SMALL: NextHop(mac_to_int(GATEWAY_MAC), mac_to_int(PORT1_MAC), 1, 1280),
    NH_PROHIBITED: NextHop(0, mac_to_int(PORT1_MAC), 1, 0),     # mtu 0: every packet traps
}
ROUTES = [("192.0.2.0/24", NH_HOST), ("203.0.113.0/24", NH_GATEWAY),
          ("198.51.100.0/24", NH_GATEWAY), ("10.0.0.0/8", NH_SMALL),
          ("172.16.0.0/12", NH_PROHIBITED), ("2001:db8:0:1::/64", NH_HOST),
          ("2001:db8:aaaa::/48", NH_GATEWAY), ("2001:db8:bbbb::/48", NH_SMALL),
          ("2001:db8:cccc::/48", NH_PROHIBITED)]


def route_lookup(family: int, address: int) -> int | None:
    """Longest-prefix match over ROUTES with ipaddress (the test's own FIB model)."""
    best: tuple[int, int] | None = None
    for text, index in ROUTES:
        net = ipaddress.ip_network(text)
        if net.version == family and int(address) >> (net.max_prefixlen - net.prefixlen) \
                == int(net.network_address) >> (net.max_prefixlen - net.prefixlen):
            if best is None or net.prefixlen > best[0]:
                best = (net.prefixlen, index)
    return None if best is None else best[1]


def make_handler(**kw) -> ExceptionHandler:
    kw.setdefault("prohibited", {NH_PROHIBITED})
    return ExceptionHandler(PORTS, NEXT_HOPS.get, route_lookup, kw.pop("limiter", None), **kw)


@pytest.fixture
def handler() -> ExceptionHandler:
    return make_handler()


def from_host4(*layers, src: str = HOST4, dst: str = FAR4, ttl: int = 64, **ip) -> Ether:
    packet = Ether(src=HOST_MAC, dst=PORT0_MAC) / IP(src=src, dst=dst, ttl=ttl, **ip)
    for layer in layers:
        packet = packet / layer
    return packet


def from_host6(*layers, src: str = HOST6, dst: str = FAR6, hlim: int = 64) -> Ether:
    packet = Ether(src=HOST_MAC, dst=PORT0_MAC) / IPv6(src=src, dst=dst, hlim=hlim)
    for layer in layers:
        packet = packet / layer
    return packet


UDP_PROBE = (UDP(sport=40000, dport=33434), b"traceroute probe data")


def run(handler: ExceptionHandler, code: int, frame, next_hop: int = 0,
        now_ns: int = 0, in_port: int = 0) -> list[Emit]:
    before_in, before_out = handler.received(), handler.outcomes()
    emits = handler.handle(code, bytes(frame), in_port, next_hop, now_ns)
    assert handler.received() == before_in + 1
    assert handler.outcomes() == before_out + 1          # exactly one counted outcome
    return emits


def one_outcome(handler: ExceptionHandler) -> str:
    outcomes = [k for k, v in handler.counters.items() if v and k.startswith(OUTCOME_PREFIXES)]
    assert len(outcomes) == 1, outcomes
    return outcomes[0]


# ---------------------------------------------------------------- checks

def tshark_clean(frames: list[bytes], tmp_path: Path, quoted_fault: str | None = None) -> None:
    """Assert tshark finds no malformed frame, no expert warning and only good checksums
    (IPv4 header checks on); `quoted_fault` is a warning expected from a quoted packet."""
    if TSHARK is None:
        pytest.skip("tshark not installed (apt-get install tshark)")
    for frame, row in zip(frames, dissect([Ether(f) for f in frames], tmp_path, "emits.pcap"),
                          strict=True):
        where = assert_well_formed(row, quoted_fault)
        assert "0" not in checksum_statuses(row), where        # 0 bad, 1 good, 2 unverified
        for field in expected_checksums(frame):
            assert row.get(field, ["none"])[0] == "1", f"{where}: {field}"


def expected_checksums(frame: bytes) -> list[str]:
    """The outermost checksums tshark must find good in a frame we emit."""
    parsed = Ether(frame)
    if IP in parsed:
        whole_icmp = parsed[IP].proto == 1 and parsed[IP].frag == 0 and not parsed[IP].flags.MF
        return ["ip.checksum.status"] + (["icmp.checksum.status"] if whole_icmp else [])
    return ["icmpv6.checksum.status"] if parsed[IPv6].nh == 58 else []


def ipv4_checksums_ok(ip: IP) -> None:
    raw = bytes(ip)[:ip.len]
    assert scapy_checksum(raw[:ip.ihl * 4]) == 0
    if ip.proto == 1 and ip.frag == 0 and not ip.flags.MF:
        assert scapy_checksum(raw[ip.ihl * 4:]) == 0


def ipv6_checksum_ok(ip: IPv6) -> None:
    raw = bytes(ip)[:40 + ip.plen]
    if ip.nh == 58:
        assert in6_chksum(58, ip, raw[40:]) == 0


def the_icmp4(emits: list[Emit], original: Ether, port: int = 0) -> IP:
    """The single ICMP message emitted toward the original's sender, checked."""
    assert len(emits) == 1 and emits[0].port == port
    frame = Ether(emits[0].frame)
    nh = NEXT_HOPS[NH_HOST] if port == 0 else NEXT_HOPS[NH_GATEWAY]
    assert (frame.dst, frame.src, frame.type) == (mac_to_str(nh.dmac), mac_to_str(nh.smac), 0x800)
    ip = frame[IP]
    ipv4_checksums_ok(ip)
    assert ip.dst == original[IP].src and ip.ttl == 64 and ip.proto == 1
    rebuilt = ip.copy()
    del rebuilt.chksum
    del rebuilt[ICMP].chksum
    assert bytes(rebuilt)[:ip.len] == bytes(ip)[:ip.len]          # scapy's checksums = ours
    if ip[ICMP].type != 0:
        original_ip = bytes(original[IP])
        quoted = bytes(ip)[ip.ihl * 4 + 8:ip.len]
        assert quoted == original_ip[:len(quoted)]
        assert len(quoted) == min(len(original_ip), 548)
    return ip


def the_icmp6(emits: list[Emit], original: Ether, port: int = 0) -> IPv6:
    assert len(emits) == 1 and emits[0].port == port
    frame = Ether(emits[0].frame)
    nh = NEXT_HOPS[NH_HOST] if port == 0 else NEXT_HOPS[NH_GATEWAY]
    assert (frame.dst, frame.src, frame.type) == (mac_to_str(nh.dmac), mac_to_str(nh.smac),
                                                  0x86DD)
    ip = frame[IPv6]
    ipv6_checksum_ok(ip)
    assert ip.dst == original[IPv6].src and ip.hlim == 64 and ip.nh == 58
    raw = bytes(ip)[:40 + ip.plen]
    if raw[40] < 128:
        original_ip = bytes(original[IPv6])
        assert raw[48:] == original_ip[:min(len(original_ip), 1232)]
    return ip


# ---------------------------------------------------------------- the codes

def test_exception_codes_match_the_microblocks():
    text = (REPO / "microblocks" / "router_common.mbl").read_text()
    enum_body = re.search(r"enum Exc : bit<16> \{(.*?)\}", text, re.S).group(1)
    declared = {name: int(value) for name, value in re.findall(r"(\w+)\s*=\s*(\d+)", enum_body)}
    assert declared == {member.name: member.value for member in Exc}
    assert "exception(0x100)" in (REPO / "microblocks" / "router.mbl").read_text()
    assert NOT_IP == 0x100


def test_ttl_expired_sends_time_exceeded(handler, tmp_path):
    original = from_host4(*UDP_PROBE, ttl=1)
    emits = run(handler, Exc.ttl_expired, original)
    ip = the_icmp4(emits, original)
    assert (ip[ICMP].type, ip[ICMP].code) == (11, 0)
    assert ip.src == "192.0.2.1"                 # the address of the port it goes out on
    assert handler.counters["sent.icmp4.time_exceeded"] == 1
    assert handler.counters["rx.ttl_expired"] == 1
    tshark_clean([e.frame for e in emits], tmp_path)


def test_icmp_source_is_the_outgoing_interface(handler):
    """RFC 1812 4.3.2.4: the reply to a host behind port 1 comes from port 1's address,
    whatever port the offending packet arrived on."""
    original = from_host4(*UDP_PROBE, src="203.0.113.50", dst=SMALL4, ttl=1)
    ip = the_icmp4(run(handler, Exc.ttl_expired, original, in_port=0), original, port=1)
    assert ip.src == "198.51.100.1"


def test_no_route_sends_net_unreachable(handler, tmp_path):
    original = from_host4(*UDP_PROBE, dst="100.64.0.1")
    emits = run(handler, Exc.no_route, original)
    ip = the_icmp4(emits, original)
    assert (ip[ICMP].type, ip[ICMP].code) == (3, 0)
    tshark_clean([e.frame for e in emits], tmp_path)


def test_frag_needed_reports_the_next_hop_mtu(handler, tmp_path):
    original = from_host4(UDP(), bytes(1400), dst=SMALL4, flags="DF")
    emits = run(handler, Exc.frag_needed, original, next_hop=NH_SMALL)
    ip = the_icmp4(emits, original)
    assert (ip[ICMP].type, ip[ICMP].code, ip[ICMP].nexthopmtu) == (3, 4, 1280)
    tshark_clean([e.frame for e in emits], tmp_path)


def test_fragment_in_software_reassembles_to_the_original(handler, tmp_path):
    original = from_host4(UDP(sport=5, dport=7), bytes(random.Random(1).randbytes(3000)),
                          dst=SMALL4, id=0x5151)
    emits = run(handler, Exc.fragment, original, next_hop=NH_SMALL)
    assert handler.counters["forwarded.ipv4_fragmented"] == 1
    assert handler.counters["fragments_out"] == len(emits) == 3
    pieces = []
    for emit in emits:
        frame = Ether(emit.frame)
        assert emit.port == 1 and frame.dst == GATEWAY_MAC and frame.src == PORT1_MAC
        ipv4_checksums_ok(frame[IP])
        assert frame[IP].len <= 1280 and frame[IP].ttl == 63
        pieces.append(frame[IP])
    whole = defragment(pieces)
    assert len(whole) == 1
    expected = original[IP].copy()
    expected.ttl = 63
    del expected.chksum
    assert bytes(whole[0]) == bytes(IP(bytes(expected)))
    tshark_clean([e.frame for e in emits], tmp_path)


def test_fragment_options_copied_only_when_flagged(handler):
    # Security (130, copied) and Record Route (7, not copied): the slow path's options code
    security = b"\x82\x0b" + bytes(9)
    record_route = b"\x07\x07\x04" + bytes(4)
    original = from_host4(UDP(), bytes(2000), dst=SMALL4,
                          options=security + record_route + b"\x00\x00")
    emits = run(handler, Exc.options, original)
    headers = [bytes(Ether(e.frame)[IP])[20:Ether(e.frame)[IP].ihl * 4] for e in emits]
    assert len(emits) == 2
    assert headers[0][:11] == security and headers[0][11:14] == b"\x07\x07\x08"
    assert headers[0][14:18] == bytes([198, 51, 100, 1])     # recorded: the outgoing address
    assert headers[1] == security + b"\x00"                  # copied only, padded
    whole = defragment([Ether(e.frame)[IP] for e in emits])[0]
    assert bytes(whole[UDP]) == bytes(original[UDP])


def test_fragment_ipv4_continues_a_fragment():
    """Fragmenting a fragment: offsets continue, the last piece keeps MF."""
    packet = bytes(IP(src=HOST4, dst=FAR4, flags="MF", frag=10, id=9) / bytes(1000))
    pieces = [IP(p) for p in fragment_ipv4(packet, 576)]
    assert [p.frag for p in pieces] == [10, 10 + 69]        # 552 + 448 payload bytes
    assert all(p.flags.MF for p in pieces)
    with pytest.raises(ValueError, match="no room"):
        fragment_ipv4(packet, 24)


def test_admin_prohibited4(handler, tmp_path):
    """A next hop in `prohibited` (written with MTU 0, so the data plane traps every packet
    routed to it as frag_needed / fragment) answers Destination Unreachable code 13."""
    emits = []
    for code, flags in ((Exc.frag_needed, "DF"), (Exc.fragment, 0)):
        original = from_host4(*UDP_PROBE, dst=BLOCKED4, flags=flags)
        emits += run(handler, code, original, next_hop=NH_PROHIBITED)
        ip = the_icmp4(emits[-1:], original)
        assert (ip[ICMP].type, ip[ICMP].code) == (3, 13)
    assert handler.counters["sent.icmp4.admin_prohibited"] == 2
    tshark_clean([e.frame for e in emits], tmp_path)


# ---------------------------------------------------------------- IPv4 options

def test_options_forwarded_in_software(handler, tmp_path):
    original = from_host4(*UDP_PROBE, options=b"\x07\x0b\x04" + bytes(8) + b"\x00")
    emits = run(handler, Exc.options, original)
    assert handler.counters["forwarded.ipv4"] == 1 and len(emits) == 1
    frame = Ether(emits[0].frame)
    assert (emits[0].port, frame.dst, frame.src) == (1, GATEWAY_MAC, PORT1_MAC)
    ip = frame[IP]
    ipv4_checksums_ok(ip)
    assert ip.ttl == 63
    assert bytes(ip)[20:27] == b"\x07\x0b\x08" + bytes([198, 51, 100, 1])
    assert bytes(ip[UDP]) == bytes(original[UDP])
    tshark_clean([e.frame for e in emits], tmp_path)


def test_timestamp_option_records_milliseconds(handler):
    original = from_host4(*UDP_PROBE, options=b"\x44\x0c\x05\x00" + bytes(8))
    now_ns = 3_600_000 * 1_000_000 + 1_234_567          # 01:00:00.001 after midnight
    emits = run(handler, Exc.options, original, now_ns=now_ns)
    header = bytes(Ether(emits[0].frame)[IP])[20:32]
    assert header[:4] == b"\x44\x0c\x09\x00"
    assert int.from_bytes(header[4:8], "big") == 3_600_001


@pytest.mark.parametrize(("flag", "data", "expected"), [
    (1, bytes(8), bytes([198, 51, 100, 1]) + (5).to_bytes(4, "big")),       # address + time
    (3, bytes([198, 51, 100, 1, 0, 0, 0, 0]),
     bytes([198, 51, 100, 1]) + (5).to_bytes(4, "big")),                     # we are named
    (3, bytes([10, 9, 9, 9, 0, 0, 0, 0]), bytes([10, 9, 9, 9, 0, 0, 0, 0])),  # someone else
])
def test_timestamp_address_flags(handler, flag, data, expected):
    original = from_host4(*UDP_PROBE, options=bytes([0x44, 12, 5, flag]) + data)
    emits = run(handler, Exc.options, original, now_ns=5_000_000)
    header = bytes(Ether(emits[0].frame)[IP])[20:32]
    assert header[4:] == expected
    assert header[2] == (13 if expected != data else 5)


def test_timestamp_overflow_counts_then_errors(handler, tmp_path):
    full = from_host4(*UDP_PROBE, options=b"\x44\x08\x09\x20" + bytes(4))   # full, overflow 2
    emits = run(handler, Exc.options, full)
    assert Ether(emits[0].frame)[IP].options[0].oflw == 3
    overflowed = from_host4(*UDP_PROBE, options=b"\x44\x08\x09\xf0" + bytes(4))
    emits = run(handler, Exc.options, overflowed)
    ip = the_icmp4(emits, overflowed)
    assert (ip[ICMP].type, ip[ICMP].ptr) == (12, 23)


@pytest.mark.parametrize(("options", "pointer", "fault"), [
    (b"\x07\x01\x04\x00", 21, "too-short option length"),     # length < 2
    (b"\x07\x07\x02" + bytes(5), 22, "Pointer points before"),  # pointer < 4
    (b"\x44\x08\x05\x02" + bytes(4), 23, None),              # timestamp flag 2 undefined
    (b"\x94\x03\x00\x00", 21, None),                         # router alert length != 4
    (b"\x01\x01\x01\x83", 23, "length byte past end"),   # no room for the length octet
])
def test_malformed_option_sends_parameter_problem(handler, tmp_path, options, pointer, fault):
    original = from_host4(*UDP_PROBE, options=options)
    emits = run(handler, Exc.options, original)
    ip = the_icmp4(emits, original)
    assert (ip[ICMP].type, ip[ICMP].code, ip[ICMP].ptr) == (12, 0, pointer)
    assert handler.counters["sent.icmp4.parameter_problem"] == 1
    tshark_clean([e.frame for e in emits], tmp_path,
                 quoted_fault=fault or "option length")


@pytest.mark.parametrize(("change", "outcome"), [
    ({"ttl": 1}, "sent.icmp4.time_exceeded"),
    ({"dst": "100.64.0.1"}, "sent.icmp4.unreachable_net"),
    ({"dst": BLOCKED4}, "sent.icmp4.admin_prohibited"),
    ({"dst": SMALL4, "flags": "DF"}, "sent.icmp4.frag_needed"),
    ({"chksum": 0x1234}, "dropped.bad_checksum"),
    ({"src": "127.0.0.1"}, "dropped.martian_source"),
    ({"dst": "0.1.2.3"}, "dropped.martian_destination"),
    ({"dst": "192.0.2.1"}, "sent.icmp4.unreachable_protocol"),      # for the router
])
def test_options_path_makes_the_fast_path_checks(handler, change, outcome):
    proto = {"proto": 99} if change.get("dst") == "192.0.2.1" else {}
    original = from_host4(bytes(1400), options=b"\x94\x04\x00\x00", **(change | proto))
    run(handler, Exc.options, original)
    assert one_outcome(handler) == outcome


@pytest.mark.parametrize("dst", [FAR4, "192.0.2.1"])     # the router may be a listed hop
def test_source_routed_packets_are_dropped(handler, dst):
    original = from_host4(*UDP_PROBE, dst=dst, options=b"\x83\x07\x04" + bytes(4) + b"\x00")
    assert run(handler, Exc.options, original) == []
    assert one_outcome(handler) == "dropped.source_route"


def test_completed_source_route_to_the_router_is_accepted(handler):
    request = from_host4(ICMP(type=8, id=3), dst="192.0.2.1",
                         options=b"\x89\x07\x08" + bytes([203, 0, 113, 1]) + b"\x00")
    ip = the_icmp4(run(handler, Exc.options, request), request)
    assert ip[ICMP].type == 0


def test_record_route_with_partial_room_is_an_error(handler):
    original = from_host4(*UDP_PROBE, options=b"\x07\x09\x08" + bytes(6) + b"\x00\x00\x00")
    ip = the_icmp4(run(handler, Exc.options, original), original)
    assert (ip[ICMP].type, ip[ICMP].ptr) == (12, 22)


def test_full_record_route_is_forwarded_unchanged(handler):
    options = b"\x07\x07\x08" + bytes([10, 0, 0, 1]) + b"\x00"
    emits = run(handler, Exc.options, from_host4(*UDP_PROBE, options=options))
    assert bytes(Ether(emits[0].frame)[IP])[20:28] == options


# ---------------------------------------------------------------- for the router (IPv4)

def test_echo_request_to_the_router_is_answered(handler, tmp_path):
    request = from_host4(ICMP(type=8, id=0x77, seq=5), b"are you there?", dst="198.51.100.1")
    emits = run(handler, Exc.for_router, request)
    ip = the_icmp4(emits, request)
    assert ip.src == "198.51.100.1"          # the address the request was sent to
    assert (ip[ICMP].type, ip[ICMP].id, ip[ICMP].seq) == (0, 0x77, 5)
    assert bytes(ip[ICMP].payload)[:14] == b"are you there?"
    tshark_clean([e.frame for e in emits], tmp_path)


def test_echo_request_with_options_is_answered(handler):
    request = from_host4(ICMP(type=8, id=1, seq=1), dst="192.0.2.1",
                         options=b"\x94\x04\x00\x00")
    ip = the_icmp4(run(handler, Exc.options, request), request)
    assert ip[ICMP].type == 0 and ip.ihl == 5


def test_udp_to_the_router_gets_port_unreachable(handler, tmp_path):
    original = from_host4(*UDP_PROBE, dst="192.0.2.1")
    emits = run(handler, Exc.for_router, original)
    ip = the_icmp4(emits, original)
    assert (ip[ICMP].type, ip[ICMP].code) == (3, 3)
    tshark_clean([e.frame for e in emits], tmp_path)


@pytest.mark.parametrize("proto", [89, 99, 253])
def test_a_protocol_the_router_lacks_gets_protocol_unreachable(handler, tmp_path, proto):
    """RFC 1122 3.2.2.1: Destination Unreachable code 2 (from the outgoing port's address,
    RFC 1812 4.3.2.4)."""
    original = from_host4(bytes(8), dst="192.0.2.1", proto=proto)
    emits = run(handler, Exc.for_router, original)
    ip = the_icmp4(emits, original)
    assert (ip[ICMP].type, ip[ICMP].code, ip.src) == (3, 2, "192.0.2.1")
    tshark_clean([e.frame for e in emits], tmp_path)


@pytest.mark.parametrize(("packet", "outcome"), [
    (from_host4(TCP(dport=22), dst="192.0.2.1"), "consumed.tcp"),
    (from_host4(ICMP(type=13), dst="192.0.2.1"), "consumed.icmp"),
    (from_host4(ICMP(type=8), dst="255.255.255.255"), "consumed.broadcast"),
    (from_host4(ICMP(type=8), dst="192.0.2.255"), "consumed.broadcast"),
    (from_host4(ICMP(type=8), dst="192.0.2.1", flags="MF"), "consumed.fragment"),
    (from_host4(ICMP(type=8, chksum=1), dst="192.0.2.1"), "dropped.bad_checksum"),
    (from_host4(ICMP(type=8), dst="192.0.2.99"), "dropped.not_local"),
    (from_host4(bytes(8), dst="192.0.2.1", proto=2), "consumed.igmp"),
])
def test_other_traffic_to_the_router_is_consumed(handler, packet, outcome):
    assert run(handler, Exc.for_router, packet) == []
    assert one_outcome(handler) == outcome


# ---------------------------------------------------------------- IPv6 codes

def test_hop_limit_sends_time_exceeded(handler, tmp_path):
    original = from_host6(*UDP_PROBE, hlim=1)
    emits = run(handler, Exc.hop_limit, original)
    ip = the_icmp6(emits, original)
    assert (ip[ICMPv6TimeExceeded].type, ip[ICMPv6TimeExceeded].code) == (3, 0)
    assert ip.src == "2001:db8:0:1::1"        # a global address of the outgoing port
    tshark_clean([e.frame for e in emits], tmp_path)


def test_no_route6_sends_no_route(handler, tmp_path):
    original = from_host6(*UDP_PROBE, dst="2001:db8:9999::1")
    emits = run(handler, Exc.no_route6, original)
    ip = the_icmp6(emits, original)
    assert (ip[ICMPv6DestUnreach].type, ip[ICMPv6DestUnreach].code) == (1, 0)
    tshark_clean([e.frame for e in emits], tmp_path)


def test_too_big_sends_packet_too_big(handler, tmp_path):
    original = from_host6(UDP(), bytes(1400), dst=SMALL6)
    emits = run(handler, Exc.too_big, original, next_hop=NH_SMALL)
    ip = the_icmp6(emits, original)
    assert ip[ICMPv6PacketTooBig].mtu == 1280
    tshark_clean([e.frame for e in emits], tmp_path)


def test_admin_prohibited6(handler, tmp_path):
    original = from_host6(*UDP_PROBE, dst=BLOCKED6)
    emits = run(handler, Exc.too_big, original, next_hop=NH_PROHIBITED)
    ip = the_icmp6(emits, original)
    assert (ip[ICMPv6DestUnreach].type, ip[ICMPv6DestUnreach].code) == (1, 1)
    tshark_clean([e.frame for e in emits], tmp_path)


def hbh(option) -> IPv6ExtHdrHopByHop:
    return IPv6ExtHdrHopByHop(options=[option])


def test_hop_by_hop_router_alert_is_forwarded(handler, tmp_path):
    original = from_host6(hbh(RouterAlert()), *UDP_PROBE)
    emits = run(handler, Exc.hop_by_hop, original)
    assert one_outcome(handler) == "forwarded.ipv6"
    frame = Ether(emits[0].frame)
    assert (emits[0].port, frame.dst, frame.src, frame[IPv6].hlim) == (1, GATEWAY_MAC,
                                                                       PORT1_MAC, 63)
    expected = original[IPv6].copy()
    expected.hlim = 63
    assert bytes(frame[IPv6]) == bytes(expected)
    tshark_clean([e.frame for e in emits], tmp_path)


@pytest.mark.parametrize(("option_type", "dst", "outcome"), [
    (0x3E, FAR6, "forwarded.ipv6"),                         # 00: skip
    (0x7E, FAR6, "dropped.hbh_option_discard"),             # 01: discard
    (0xBE, FAR6, "sent.icmp6.parameter_problem"),           # 10: discard + PP code 2
    (0xBE, "ff0e::1", "sent.icmp6.parameter_problem"),      # ... even to multicast
    (0xFE, FAR6, "sent.icmp6.parameter_problem"),           # 11: discard + PP if unicast
    (0xFE, "ff0e::1", "suppressed.multicast_destination"),
])
def test_unrecognized_hop_by_hop_option_actions(handler, tmp_path, option_type, dst, outcome):
    original = from_host6(hbh(HBHOptUnknown(otype=option_type, optdata=b"ab")), *UDP_PROBE,
                          dst=dst)
    emits = run(handler, Exc.hop_by_hop, original)
    assert one_outcome(handler) == outcome
    if outcome.startswith("sent."):
        ip = the_icmp6(emits, original)
        assert (ip[ICMPv6ParamProblem].code, ip[ICMPv6ParamProblem].ptr) == (2, 42)
        tshark_clean([e.frame for e in emits], tmp_path)


def test_malformed_hop_by_hop_sends_parameter_problem_code0(handler):
    original = from_host6(IPv6ExtHdrHopByHop(nh=17, len=0,
                                             options=[HBHOptUnknown(otype=1, optlen=9)]),
                          UDP())
    ip = the_icmp6(run(handler, Exc.hop_by_hop, original), original)
    assert (ip[ICMPv6ParamProblem].code, ip[ICMPv6ParamProblem].ptr) == (0, 43)


@pytest.mark.parametrize(("changes", "next_hop", "outcome"), [
    ({"hlim": 1}, None, "sent.icmp6.time_exceeded"),
    ({"dst": "2001:db8:9999::1"}, None, "sent.icmp6.no_route"),
    ({"dst": BLOCKED6}, None, "sent.icmp6.admin_prohibited"),
    ({"dst": SMALL6}, NH_SMALL, "sent.icmp6.packet_too_big"),
])
def test_hop_by_hop_path_makes_the_fast_path_checks(handler, changes, next_hop, outcome):
    original = from_host6(hbh(RouterAlert()), UDP(), bytes(1300), **changes)
    run(handler, Exc.hop_by_hop, original)
    assert one_outcome(handler) == outcome


def test_echo_request6_to_the_router_is_answered(handler, tmp_path):
    request = from_host6(ICMPv6EchoRequest(id=9, seq=1, data=b"v6 ping"),
                         dst="2001:db8:0:2::1")
    emits = run(handler, Exc.for_router6, request)
    ip = the_icmp6(emits, request)
    assert ip.src == "2001:db8:0:2::1"
    reply = ip[ICMPv6EchoReply]
    assert (reply.id, reply.seq, reply.data) == (9, 1, b"v6 ping")
    tshark_clean([e.frame for e in emits], tmp_path)


def test_echo_request6_with_hop_by_hop_is_answered(handler):
    request = from_host6(hbh(RouterAlert()), ICMPv6EchoRequest(id=2), dst="2001:db8:0:1::1")
    ip = the_icmp6(run(handler, Exc.hop_by_hop, request), request)
    assert ip[ICMPv6EchoReply].id == 2


def test_udp6_to_the_router_gets_port_unreachable(handler, tmp_path):
    original = from_host6(*UDP_PROBE, dst="2001:db8:0:1::1")
    emits = run(handler, Exc.for_router6, original)
    ip = the_icmp6(emits, original)
    assert (ip[ICMPv6DestUnreach].code, ip.src) == (4, "2001:db8:0:1::1")
    tshark_clean([e.frame for e in emits], tmp_path)


def test_neighbour_discovery_goes_to_its_hook():
    seen = []
    handler = make_handler(on_neighbour_discovery=lambda frame, port: seen.append(port) or [])
    run(handler, Exc.for_router6, from_host6(ICMPv6ND_NS(tgt="2001:db8:0:1::1"),
                                             dst="2001:db8:0:1::1"), in_port=0)
    assert seen == [0] and one_outcome(handler) == "consumed.neighbour_discovery"


def test_not_ip_goes_to_its_hook():
    reply = Emit(0, bytes(60))
    handler = make_handler(on_not_ip=lambda frame, port: [reply])
    arp = Ether(dst="ff:ff:ff:ff:ff:ff", src=HOST_MAC) / ARP(pdst="192.0.2.1", psrc=HOST4)
    assert run(handler, NOT_IP, arp) == [reply]
    assert handler.counters["rx.not_ip"] == 1 and one_outcome(handler) == "consumed.not_ip"
    plain = make_handler()
    assert run(plain, NOT_IP, arp) == []
    assert one_outcome(plain) == "consumed.not_ip"


def test_unknown_code_is_counted(handler):
    assert run(handler, 77, from_host4(*UDP_PROBE)) == []
    assert handler.counters["rx.unknown"] == 1 and one_outcome(handler) == "dropped.unknown_code"


def test_neighbour_unreachable_for_the_resolver(handler, tmp_path):
    v4, v6 = from_host4(*UDP_PROBE), from_host6(*UDP_PROBE)
    ip4 = the_icmp4(handler.neighbour_unreachable(bytes(v4), 0, 0), v4)
    ip6 = the_icmp6(handler.neighbour_unreachable(bytes(v6), 0, 0), v6)
    assert (ip4[ICMP].type, ip4[ICMP].code) == (3, 1)
    assert (ip6[ICMPv6DestUnreach].type, ip6[ICMPv6DestUnreach].code) == (1, 3)
    assert handler.received() == handler.outcomes() == 2


# ---------------------------------------------------------------- never-send, through the handler

@pytest.mark.parametrize(("code", "packet", "reason"), [
    (Exc.ttl_expired, from_host4(ICMP(type=3) / IP(dst=HOST4) / UDP(), ttl=1), "icmp_error"),
    (Exc.no_route, from_host4(*UDP_PROBE, dst="239.1.1.1"), "multicast_destination"),
    (Exc.ttl_expired, Ether(dst="ff:ff:ff:ff:ff:ff") / IP(src=HOST4, dst=FAR4, ttl=1) / UDP(),
     "link_broadcast"),
    (Exc.ttl_expired, Ether(dst="01:00:5e:00:00:01") / IP(src=HOST4, dst=FAR4, ttl=1) / UDP(),
     "link_multicast"),
    (Exc.ttl_expired, from_host4(*UDP_PROBE, ttl=1, frag=50), "non_initial_fragment"),
    (Exc.ttl_expired, from_host4(*UDP_PROBE, ttl=1, src="192.0.2.255"), "invalid_source"),
    (Exc.ttl_expired, from_host4(*UDP_PROBE, ttl=1, src="0.0.0.0"), "invalid_source"),
    (Exc.no_route, from_host4(*UDP_PROBE, dst="192.0.2.255"), "broadcast_destination"),
    (Exc.hop_limit, from_host6(ICMPv6DestUnreach() / IPv6() / UDP(), hlim=1), "icmp_error"),
    (Exc.no_route6, from_host6(*UDP_PROBE, dst="ff0e::5"), "multicast_destination"),
    (Exc.hop_limit, Ether(dst="33:33:00:00:00:01") / IPv6(src=HOST6, dst=FAR6, hlim=1) / UDP(),
     "link_multicast"),
    (Exc.no_route6, from_host6(*UDP_PROBE, src="ff02::1"), "invalid_source"),
    (Exc.ttl_expired, from_host4(*UDP_PROBE, ttl=1, src="100.64.0.1"), "no_route_back"),
    (Exc.hop_limit, from_host6(*UDP_PROBE, hlim=1, src=BLOCKED6), "no_route_back"),
])
def test_never_send_rules_through_the_handler(handler, code, packet, reason):
    assert run(handler, code, packet) == []
    assert one_outcome(handler) == f"suppressed.{reason}"


def test_packet_too_big_to_a_multicast_destination_is_sent(handler):
    original = from_host6(UDP(), bytes(1400), dst="ff0e::5")
    the_icmp6(run(handler, Exc.too_big, original, next_hop=NH_SMALL), original)


def test_rate_limit_through_the_handler():
    handler = make_handler(limiter=IcmpRateLimiter.of(rate_per_s=2, burst=3))
    original = from_host4(*UDP_PROBE, ttl=1)
    sent = [len(run(handler, Exc.ttl_expired, original, now_ns=t))
            for t in (0, 0, 0, 0, 499_999_999, 500_000_000)]
    assert sent == [1, 1, 1, 0, 0, 1]
    assert handler.counters["suppressed.rate_limit"] == 2
    v6 = from_host6(*UDP_PROBE, hlim=1)
    assert len(run(handler, Exc.hop_limit, v6, now_ns=0)) == 1       # its own bucket
    # suppressed and echo replies spend no tokens
    echo = from_host4(ICMP(type=8), dst="192.0.2.1")
    assert all(run(handler, Exc.for_router, echo, now_ns=500_000_000) for _ in range(5))


def test_bad_configuration_is_reported():
    with pytest.raises(ValueError, match="TTL / hop limit must be 1..255"):
        make_handler(ttl=0)


# ---------------------------------------------------------------- properties

CODES = [*Exc, NOT_IP, 0, 99]
ADDRESSES4 = [HOST4, FAR4, SMALL4, BLOCKED4, "192.0.2.1", "198.51.100.1", "192.0.2.255",
              "255.255.255.255", "224.0.0.1", "127.0.0.1", "0.0.0.0", "100.64.0.1"]
ADDRESSES6 = [HOST6, FAR6, SMALL6, BLOCKED6, "2001:db8:0:1::1", "ff02::1", "::", "::1",
              "2001:db8:9999::1"]


@dataclass(frozen=True)
class Case:
    code: int
    frame: bytes
    next_hop: int
    now_ns: int


@st.composite
def cases(draw) -> Case:
    """Frames the data plane could hand over (and some it could not): random fields."""
    family = draw(st.sampled_from([4, 6, 0]))
    link = draw(st.sampled_from([PORT0_MAC, "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01"]))
    if family == 0:
        frame = bytes(Ether(dst=link, src=HOST_MAC)) + draw(st.binary(max_size=100))
    elif family == 4:
        upper = draw(st.sampled_from([UDP(), TCP(), ICMP(type=8), ICMP(type=3), ICMP(type=0)]))
        options = draw(st.one_of(st.just(b""), st.binary(min_size=4, max_size=40).map(
            lambda b: b[:len(b) // 4 * 4]), st.sampled_from(
            [b"\x07\x07\x04" + bytes(5), b"\x44\x0c\x05\x01" + bytes(8), b"\x94\x04\x00\x00"])))
        frame = bytes(Ether(dst=link, src=HOST_MAC) / IP(
            src=draw(st.sampled_from(ADDRESSES4)), dst=draw(st.sampled_from(ADDRESSES4)),
            ttl=draw(st.integers(0, 255)), flags=draw(st.integers(0, 7)),
            frag=draw(st.sampled_from([0, 0, 3])), options=options)
            / upper / draw(st.binary(max_size=2000)))
    else:
        layers = IPv6(src=draw(st.sampled_from(ADDRESSES6)),
                      dst=draw(st.sampled_from(ADDRESSES6)), hlim=draw(st.integers(0, 255)))
        if draw(st.booleans()):
            layers = layers / hbh(HBHOptUnknown(otype=draw(st.integers(2, 255)),
                                                optdata=draw(st.binary(max_size=6))))
        upper = draw(st.sampled_from([UDP(), TCP(), ICMPv6EchoRequest(), ICMPv6DestUnreach()]))
        frame = bytes(Ether(dst=link, src=HOST_MAC) / layers / upper
                      / draw(st.binary(max_size=2000)))
    if draw(st.booleans()):
        cut = draw(st.integers(0, len(frame)))
        frame = frame[:cut]                  # truncated or mangled input
    return Case(draw(st.sampled_from(CODES)), frame,
                draw(st.sampled_from(list(NEXT_HOPS) + [99])), draw(st.integers(0, 10**12)))


def check_emit(emit: Emit) -> None:
    """A frame we emit parses with scapy and its checksums verify."""
    frame = Ether(emit.frame)
    assert emit.port in (0, 1) and len(emit.frame) >= 60
    if frame.type == 0x800:
        ip = frame[IP]
        ipv4_checksums_ok(ip)
        assert ip.len <= NEXT_HOPS[NH_HOST].mtu
        if ip.proto == 1 and ip.frag == 0 and not ip.flags.MF and ip[ICMP].type != 0:
            assert ip.len <= 576
    else:
        assert frame.type == 0x86DD
        ip = frame[IPv6]
        ipv6_checksum_ok(ip)
        if ip.nh == 58 and bytes(ip)[40] < 128:
            assert 40 + ip.plen <= 1280


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_input_ends_in_one_outcome(case):
    handler = make_handler(limiter=IcmpRateLimiter())
    emits = handler.handle(case.code, case.frame, 0, case.next_hop, case.now_ns)
    assert handler.received() == handler.outcomes() == 1
    for emit in emits:
        check_emit(emit)
    outcome = one_outcome(handler)
    if outcome.startswith("sent."):
        assert len(emits) == 1
    elif not outcome.startswith(("forwarded.", "consumed.")):
        assert emits == []


def test_random_traffic_through_tshark(tmp_path):
    """A seeded batch of random exceptions: every frame emitted dissects cleanly."""
    handler = make_handler()
    frames = []
    for seed in range(400):
        rng = random.Random(seed)
        code = rng.choice([Exc.ttl_expired, Exc.no_route, Exc.frag_needed, Exc.fragment,
                           Exc.options, Exc.for_router, Exc.hop_limit, Exc.no_route6,
                           Exc.too_big, Exc.hop_by_hop, Exc.for_router6])
        size = rng.randrange(0, 1800)
        if code < 16:
            options = rng.choice([b"", b"\x94\x04\x00\x00", b"\x07\x07\x04" + bytes(5),
                                  b"\x44\x0c\x05\x01" + bytes(8)])
            # ports without a dissector: random payload is not a malformed DNS / HTTP message
            upper = rng.choice([UDP(sport=40000 + seed, dport=33434), ICMP(type=8, id=seed),
                                TCP(sport=40000 + seed, dport=33435)])
            packet = from_host4(upper, rng.randbytes(size), src=rng.choice([HOST4, FAR4]),
                                dst=rng.choice([FAR4, SMALL4, BLOCKED4, "192.0.2.1"]),
                                ttl=rng.choice([1, 2, 64]), flags=rng.choice([0, "DF"]),
                                options=options)
        else:
            layers = [hbh(RouterAlert())] if code == Exc.hop_by_hop else []
            upper = rng.choice([UDP(sport=40000 + seed, dport=33434),
                                ICMPv6EchoRequest(id=seed, data=rng.randbytes(20))])
            packet = from_host6(*layers, upper, rng.randbytes(size),
                                src=rng.choice([HOST6, FAR6]),
                                dst=rng.choice([FAR6, SMALL6, "2001:db8:0:1::1"]),
                                hlim=rng.choice([1, 64]))
        next_hop = rng.choice([NH_SMALL, NH_PROHIBITED, NH_GATEWAY])
        frames += [e.frame for e in handler.handle(code, bytes(packet), 0, next_hop, seed)]
    assert handler.received() == handler.outcomes() == 400
    assert len(frames) > 200
    tshark_clean(frames, tmp_path)


def test_no_icmp_toward_an_unresolved_neighbour():
    """A source on a connected prefix whose host has no MAC yet routes to the port's glean
    record (neighbours.glean_record: no MAC, MTU 0): no frame to MAC 0, counted."""
    glean = 9
    hops = dict(NEXT_HOPS) | {glean: glean_record(0, mac_to_int(PORT0_MAC))}
    handler = ExceptionHandler(PORTS, hops.get, lambda family, address: glean, None)
    emits = run(handler, Exc.ttl_expired, from_host4(*UDP_PROBE, ttl=1))
    assert emits == [] and one_outcome(handler) == "suppressed.no_route_back"


# ---------------------------------------------------------------- IPv6 headers for the router

ROUTER6_PORT0 = "2001:db8:0:1::1"


@pytest.mark.parametrize(("layers", "code", "pointer"), [
    # RFC 8200 4.4 / RFC 5095: Segments Left > 0 of a type the router does not implement
    ((IPv6ExtHdrRouting(type=0, segleft=1, addresses=["2001:db8::1"]), UDP()), 0, 42),
    ((IPv6ExtHdrRouting(type=253, segleft=2, addresses=["2001:db8::1"]), UDP()), 0, 42),
    # RFC 8200 4: a Next Header the router does not implement, at the field that names it
    ((Raw(bytes(16)),), 1, 6),
    ((IPv6ExtHdrDestOpt(nh=253), Raw(bytes(16))), 1, 40),
    ((IPv6ExtHdrHopByHop(), IPv6ExtHdrHopByHop(), UDP()), 1, 40),   # 4.1: HBH only first
    # RFC 8200 4.2 / 4.6: Destination Options are processed like Hop-by-Hop options
    ((IPv6ExtHdrDestOpt(options=[HBHOptUnknown(otype=0x9E, optdata=b"\0\0")]), UDP()), 2, 42),
])
def test_headers_of_a_packet_for_the_router_get_parameter_problem(handler, tmp_path, layers,
                                                                   code, pointer):
    original = from_host6(*layers, dst=ROUTER6_PORT0)
    if not original.haslayer(UDP) and original[IPv6].nh == 59:
        original[IPv6].nh = 253
    emits = run(handler, Exc.for_router6, original)
    ip = the_icmp6(emits, original)
    assert (ip[ICMPv6ParamProblem].code, ip[ICMPv6ParamProblem].ptr) == (code, pointer)
    misplaced = "Hop-by-Hop extension header must appear immediately after IPv6 header"
    tshark_clean([e.frame for e in emits], tmp_path,
                 quoted_fault=misplaced if pointer == 40 and code == 1 and
                 original.haslayer(IPv6ExtHdrHopByHop) else None)


@pytest.mark.parametrize(("layers", "outcome"), [
    ((IPv6ExtHdrRouting(type=0, segleft=0, addresses=["2001:db8::1"]), UDP()),
     "sent.icmp6.port_unreachable"),                                     # SL 0: ignored
    ((IPv6ExtHdrDestOpt(options=[HBHOptUnknown(otype=0x5E, optdata=b"\0\0")]), UDP()),
     "dropped.discard"),                                                 # action 01
    ((IPv6ExtHdrDestOpt(), UDP()), "sent.icmp6.port_unreachable"),
])
def test_headers_of_a_packet_for_the_router_that_are_passed_or_discarded(handler, layers,
                                                                         outcome):
    run(handler, Exc.for_router6, from_host6(*layers, dst=ROUTER6_PORT0))
    assert one_outcome(handler) == outcome
