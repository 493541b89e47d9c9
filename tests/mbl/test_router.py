"""The standard IPv4/IPv6 forwarding microblocks and the router pipeline, rule by rule
(FACTS.md section 4), against an independent reference written with scapy and a
brute-force longest-prefix match."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from router_address_rules import AddressRules
from router_reference import EXC, OTHER_PROTOCOL, RouterModel, outcome
from router_strategies import addr4, addr6, payload, rare, src4, src6
from scapy.all import ICMP, IP, TCP, UDP, Ether, IPv6, IPv6ExtHdrHopByHop, raw
from scapy.utils import checksum as scapy_checksum

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.runtime.lpm import RouteTables

REPO = Path(__file__).resolve().parents[2]
# next-hop index -> (dmac, smac, port, mtu)
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 2, 600),
            3: (0x02AA00000003, 0x02BB00000003, 3, 1280)}
FIB4 = [("10.0.0.0/8", 1), ("10.1.0.0/16", 2), ("192.0.2.0/24", 3), ("100.64.0.0/10", 1)]
FIB6 = [("2001:db8::/32", 1), ("2001:db8:5::/48", 3), ("2001:db8:6::/48", 2)]
LOCAL4 = ["10.0.0.1"]
LOCAL6 = ["2001:db8::1"]


def _router(**options) -> NativeProgram:
    native = NativeProgram(compile_file(REPO / "examples" / "router" / "router.mbl"), "router",
                           **options)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    tables = RouteTables.of(native)
    tables.load(*({(int(n.network_address), n.prefixlen): nh
                   for n, nh in ((ipaddress.ip_network(p), nh) for p, nh in routes)}
                  for routes in (FIB4, FIB6)))
    for a in LOCAL4:
        native.table_add("local4", int(ipaddress.ip_address(a)), 1)
    for a in LOCAL6:
        native.table_add("local6", int(ipaddress.ip_address(a)), 1)
    return native


@pytest.fixture(scope="module")
def router() -> NativeProgram:
    return _router()


@pytest.fixture(scope="module")
def staged_router() -> NativeProgram:
    """The depth-staged batch driver (NativeProgram(stages=3)), 4 packets between a
    packet's stages, so that 17-40 packets run every stage on packets of the batch."""
    return _router(stages=3, stage_distance=4)


def lpm(routes, addr: str) -> int | None:
    best = None
    for prefix, nh in routes:
        net = ipaddress.ip_network(prefix)
        if ipaddress.ip_address(addr) in net and (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, nh)
    return None if best is None else best[1]


MODEL = RouterModel(NEXTHOPS, frozenset(LOCAL4), frozenset(LOCAL6),
                    lambda a: lpm(FIB4, str(a)), lambda a: lpm(FIB6, str(a)))
reference = MODEL.reference


def eth(**kw) -> Ether:
    return Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01", **kw)


def v4(src="198.18.0.1", dst="10.2.3.4", **kw) -> bytes:
    return raw(eth() / IP(src=src, dst=dst, **kw) / UDP(sport=1, dport=2) / (b"p" * 18))


def v6(src="2001:db8:9::9", dst="2001:db8:1::1", **kw) -> bytes:
    return raw(eth() / IPv6(src=src, dst=dst, **kw) / UDP(sport=1, dport=2) / (b"p" * 10))


def check(router, frame: bytes, expected: tuple) -> None:
    """The router and the reference agree, and both give the outcome the rule names."""
    (got,) = outcome(router, [frame])
    ref = reference(frame)
    assert got == ref
    assert got[:len(expected)] == expected


def _patch(frame: bytes, offset: int, data: bytes, fix_checksum: bool = True) -> bytes:
    b = bytearray(frame)
    b[offset:offset + len(data)] = data
    if fix_checksum:  # recompute the IPv4 header checksum over the (20-byte) header
        b[24:26] = b"\0\0"
        b[24:26] = scapy_checksum(bytes(b[14:34])).to_bytes(2, "big")
    return bytes(b)


# ---- address rules shared with the other framing's router (router_address_rules.py) ----

class TestAddressRules(AddressRules):
    v4 = staticmethod(v4)
    v6 = staticmethod(v6)
    check = staticmethod(check)
    patch = staticmethod(_patch)
    ip_at = 14


# ---- IPv4, RFC 1812 ---------------------------------------------------------------------

def test_ipv4_forwards_with_ttl_decrement_incremental_checksum_and_mac_rewrite(router):
    frame = v4(ttl=64)
    check(router, frame, ("forward", 1))  # 10.2.3.4 matches 10.0.0.0/8 only: next hop 1
    got = Ether(outcome(router, [frame])[0][2])
    assert got[IP].ttl == 63 and got.dst == "02:aa:00:00:00:01" and got.src == "02:bb:00:00:00:01"


def test_ipv4_longest_prefix_wins(router):
    check(router, v4(dst="10.1.2.3"), ("forward", 2))
    check(router, v4(dst="192.0.2.77", ttl=2), ("forward", 3))


def test_ipv4_options_go_to_slow_path(router):
    frame = raw(eth() / IP(src="198.18.0.1", dst="10.2.3.4", options=b"\x01\x01\x01\x00") / UDP())
    check(router, frame, ("exception", EXC["options"]))


def test_ipv4_df_and_mtu_too_small_is_frag_needed(router):
    big = raw(eth() / IP(src="198.18.0.1", dst="10.1.0.9", flags="DF") / (b"x" * 700))
    check(router, big, ("exception", EXC["frag_needed"]))
    (v,) = router.run([big])
    # the control plane needs the next hop to quote its MTU (ICMP code 4): 10.1/16 -> 2
    assert (v.code, v.next_hop, NEXTHOPS[v.next_hop][3]) == (EXC["frag_needed"], 2, 600)


def test_ipv4_mtu_too_small_without_df_goes_to_fragmentation(router):
    big = raw(eth() / IP(src="198.18.0.1", dst="10.1.0.9") / (b"x" * 700))
    check(router, big, ("exception", EXC["fragment"]))


# ---- IPv6, RFC 8200 / RFC 4291 -----------------------------------------------------------

def test_ipv6_forwards_with_hop_limit_decrement_and_mac_rewrite(router):
    frame = v6(hlim=9)
    check(router, frame, ("forward", 1))
    assert Ether(outcome(router, [frame])[0][2])[IPv6].hlim == 8


def test_ipv6_longest_prefix_wins(router):
    check(router, v6(dst="2001:db8:5::7"), ("forward", 3))


def test_rfc8200_packet_too_big_never_fragmented(router):
    frame = raw(eth() / IPv6(src="2001:db8:9::9", dst="2001:db8:6::1") / (b"x" * 600))
    check(router, frame, ("exception", EXC["too_big"]))
    (v,) = router.run([frame])
    assert (v.next_hop, NEXTHOPS[v.next_hop][3]) == (2, 600)  # 2001:db8:6::/48 -> 2, MTU 600


def test_rfc8200_hop_by_hop_goes_to_slow_path(router):
    frame = raw(eth() / IPv6(src="2001:db8:9::9", dst="2001:db8:1::1") / IPv6ExtHdrHopByHop()
                / UDP())
    check(router, frame, ("exception", EXC["hop_by_hop"]))


def test_other_protocols_go_to_the_control_plane(router):
    check(router, raw(eth(type=0x0806) / (b"\0" * 28)), ("exception", OTHER_PROTOCOL))
    check(router, b"\x01" * 9, ("drop", "runt"))


# ---- a hypothesis mix of valid and malformed packets --------------------------------------



@st.composite
def frames(draw) -> bytes:
    kind = draw(st.sampled_from(["v4", "v4", "v6", "v6", "other"]))
    ttl = st.one_of(st.sampled_from([2, 64, 255]), st.integers(0, 255))
    if kind == "v4":
        ip = IP(src=draw(src4), dst=draw(addr4), ttl=draw(ttl),
                flags=draw(st.sampled_from(["", "DF"])),
                options=b"\x01\x01\x01\x00" if draw(rare) else b"")
        l4 = draw(st.sampled_from([UDP(), TCP(), ICMP()]))
        frame = bytearray(raw(eth() / ip / l4 / draw(payload)))
    elif kind == "v6":
        ip = IPv6(src=draw(src6), dst=draw(addr6), hlim=draw(ttl))
        pkt = eth() / ip / IPv6ExtHdrHopByHop() / UDP() if draw(rare) else eth() / ip / UDP()
        frame = bytearray(raw(pkt / draw(payload)))
    else:
        frame = bytearray(raw(eth(type=draw(st.integers(0, 0xFFFF))) / draw(payload)))
    if draw(rare):  # corruption: flip a byte
        i = draw(st.integers(0, len(frame) - 1))
        frame[i] ^= draw(st.integers(1, 255))
    if draw(rare):  # truncation
        frame = frame[:draw(st.integers(0, len(frame)))]
    return bytes(frame)


@settings(max_examples=150, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=16))
def test_router_matches_reference_on_random_mix(router, batch):
    assert outcome(router, batch) == [reference(f) for f in batch]


def _forwarded_counts(router: NativeProgram) -> tuple[int, int]:
    return router.read("ip_forwarded", 0), router.read("ip_forwarded", 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(frames(), min_size=17, max_size=40))
def test_batches_across_prefetch_groups_match_reference_and_count(router, batch):
    """Batches longer than a prefetch group (the driver runs slices of 16 packets ahead of
    their blocks): the same verdicts as the reference, and the forwarded counters (plain adds
    natively) advance by exactly the number of packets forwarded per IP version."""
    _check_batch(router, batch)


def _check_batch(router: NativeProgram, batch: list[bytes]) -> None:
    before = _forwarded_counts(router)
    expected = [reference(f) for f in batch]
    assert outcome(router, batch) == expected
    v4 = sum(1 for f, e in zip(batch, expected, strict=True)
             if e[0] == "forward" and f[12:14] == b"\x08\x00")
    v6 = sum(1 for e in expected if e[0] == "forward") - v4
    after = _forwarded_counts(router)
    assert (after[0] - before[0], after[1] - before[1]) == (v4, v6)


@settings(max_examples=40, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=40))
def test_staged_batches_match_reference_and_count(staged_router, batch):
    """The same with the depth-staged batch driver: its stages change nothing (the
    counters advance by the packets forwarded, once each)."""
    _check_batch(staged_router, batch)



def test_rfc1812_5_2_2_trailer_goes_to_the_slow_path(router):
    check(router, v4() + b"trailer!", ("exception", EXC["trailer"]))
    check(router, v6() + b"trailer!", ("exception", EXC["trailer6"]))


def test_four_bytes_after_the_ip_length_are_taken_for_an_fcs(router):
    (got,) = outcome(router, [v4() + b"\x01\x02\x03\x04"])
    assert got[0] == "forward"


def test_ethernet_padding_is_not_a_trailer(router):
    short = raw(eth() / IP(src="198.18.0.1", dst="10.2.3.4") / UDP(sport=1, dport=2))
    (got,) = outcome(router, [short + bytes(60 - len(short))])
    assert got[0] == "forward"


@pytest.mark.parametrize("dst", ["ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01"])
def test_rfc1812_5_3_4_nothing_from_a_group_frame_is_forwarded(router, dst):
    frame = raw(Ether(dst=dst, src="02:00:00:00:00:01") / IP(src="198.18.0.1", dst="10.2.3.4")
                / UDP(sport=1, dport=2) / (b"p" * 18))
    check(router, frame, ("drop", "l2_multicast"))
