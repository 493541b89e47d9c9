"""The dual-stack router over PPP/POS (examples/pos_router/pos_router.mbl), rule by rule
(RFC 1662 framing, then RFC 1812 / RFC 8200 exactly as the Ethernet router), against an
independent reference: scapy's HDLC/PPP layers build the frames, the PPP rules are written
here, and the IP rules are router_reference.RouterModel's (a scapy model of ipv4_fwd /
ipv6_fwd) applied to the frame's IP packet, with the PPP header kept instead of a MAC
rewrite."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from router_address_rules import AddressRules
from router_reference import EXC, OTHER_PROTOCOL, RouterModel, outcome
from router_strategies import addr4, addr6, payload, rare, src4, src6
from scapy.all import ICMP, IP, TCP, UDP, IPv6, IPv6ExtHdrHopByHop, raw
from scapy.layers.ppp import HDLC, PPP
from scapy.utils import checksum as scapy_checksum

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.lower import SPACE_IDS
from npkit.compiler.mbl.types import META_CODE, META_FIELDS, META_VERDICT
from npkit.compiler.me.front import to_wir
from npkit.compiler.me.interp import Machine
from npkit.compiler.me.interp import run as run_wir
from npkit.runtime.lpm import RouteTables

REPO = Path(__file__).resolve().parents[2]
PIPELINE = REPO / "examples" / "pos_router" / "pos_router.mbl"
# next-hop index -> (dmac, smac, port, mtu): a POS link ignores the MACs
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 0, 600),
            3: (0x02AA00000003, 0x02BB00000003, 1, 1280)}
FIB4 = [("10.0.0.0/8", 1), ("10.1.0.0/16", 2), ("192.0.2.0/24", 3), ("100.64.0.0/10", 1)]
FIB6 = [("2001:db8::/32", 1), ("2001:db8:5::/48", 3), ("2001:db8:6::/48", 2)]
LOCAL4 = ["10.0.0.1"]
LOCAL6 = ["2001:db8::1"]
PPP_PROTOCOL_TO_ETHERTYPE = {0x0021: b"\x08\x00", 0x0057: b"\x86\xdd"}


def load_tables(native: NativeProgram) -> NativeProgram:
    """The Ethernet router's tables and the same route loader (RouteTables)."""
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(*({(int(n.network_address), n.prefixlen): nh
                                   for n, nh in ((ipaddress.ip_network(p), nh)
                                                 for p, nh in routes)}
                                  for routes in (FIB4, FIB6)))
    for a in LOCAL4:
        native.table_add("local4", int(ipaddress.ip_address(a)), 1)
    for a in LOCAL6:
        native.table_add("local6", int(ipaddress.ip_address(a)), 1)
    return native


@pytest.fixture(scope="module")
def router() -> NativeProgram:
    return load_tables(NativeProgram(compile_file(PIPELINE), "pos_router"))


def lpm(routes, addr: str) -> int | None:
    best = None
    for prefix, nh in routes:
        net = ipaddress.ip_network(prefix)
        if ipaddress.ip_address(addr) in net and (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, nh)
    return None if best is None else best[1]


IP_MODEL = RouterModel(NEXTHOPS, frozenset(LOCAL4), frozenset(LOCAL6),
                       lambda a: lpm(FIB4, str(a)), lambda a: lpm(FIB6, str(a)))


def reference(frame: bytes) -> tuple:
    """RFC 1662 framing (address 0xff, control 0x03, 2-byte protocol), then the IP rules on
    the packet behind it; a forwarded packet keeps its PPP header."""
    if len(frame) < 4:
        return ("drop", "runt")
    if frame[0] != 0xFF or frame[1] != 0x03:
        return ("drop", "bad_ppp_header")
    ethertype = PPP_PROTOCOL_TO_ETHERTYPE.get(int.from_bytes(frame[2:4], "big"))
    if ethertype is None:
        return ("exception", OTHER_PROTOCOL)
    # the model's IP rules read the IP packet behind a 14-byte Ethernet header
    result = IP_MODEL.reference(bytes(12) + ethertype + frame[4:])
    if result[0] == "forward":
        return ("forward", result[1], frame[:4] + result[2][14:])
    return result


def pos(proto: int = 0x0021, address: int = 0xFF, control: int = 0x03) -> HDLC:
    return HDLC(address=address, control=control) / PPP(proto=proto)


def v4(src="198.18.0.1", dst="10.2.3.4", **kw) -> bytes:
    return raw(pos() / IP(src=src, dst=dst, **kw) / UDP(sport=1, dport=2) / (b"p" * 18))


def v6(src="2001:db8:9::9", dst="2001:db8:1::1", **kw) -> bytes:
    return raw(pos(0x0057) / IPv6(src=src, dst=dst, **kw) / UDP(sport=1, dport=2)
               / (b"p" * 10))


def check(router, frame: bytes, expected: tuple) -> None:
    """The router and the reference agree, and both give the outcome the rule names."""
    (got,) = outcome(router, [frame])
    assert got == reference(frame)
    assert got[:len(expected)] == expected


def _patch(frame: bytes, offset: int, data: bytes, fix_checksum: bool = True) -> bytes:
    b = bytearray(frame)
    b[offset:offset + len(data)] = data
    if fix_checksum:  # recompute the IPv4 header checksum over the (20-byte) header at 4
        b[14:16] = b"\0\0"
        b[14:16] = scapy_checksum(bytes(b[4:24])).to_bytes(2, "big")
    return bytes(b)


# ---- PPP in HDLC-like framing, RFC 1662 -----------------------------------------------------

def test_ppp_shorter_than_its_header_is_a_runt(router):
    check(router, b"\xff\x03\x00", ("drop", "runt"))
    check(router, b"", ("drop", "runt"))


@pytest.mark.parametrize(("address", "control"), [(0xFE, 0x03), (0xFF, 0x13), (0x00, 0x21)])
def test_ppp_bad_address_or_control_is_dropped(router, address, control):
    frame = raw(pos(address=address, control=control) / IP(src="198.18.0.1", dst="10.2.3.4"))
    check(router, frame, ("drop", "bad_ppp_header"))


@pytest.mark.parametrize("proto", [0xC021, 0x8021, 0x8057, 0xC023, 0x0023])
def test_ppp_other_protocols_go_to_the_control_plane(router, proto):
    """LCP, IPCP, IPV6CP, PAP and anything else: the not-IP exception of the Ethernet router."""
    check(router, raw(pos(proto) / (b"\x01\x01\x00\x04")), ("exception", OTHER_PROTOCOL))


# ---- address rules shared with the other framing's router (router_address_rules.py) ----

class TestAddressRules(AddressRules):
    v4 = staticmethod(v4)
    v6 = staticmethod(v6)
    check = staticmethod(check)
    patch = staticmethod(_patch)
    ip_at = 4


# ---- IPv4, RFC 1812 -------------------------------------------------------------------------

def test_ipv4_forwards_with_ttl_decrement_and_the_ppp_header_kept(router):
    frame = v4(ttl=64)
    check(router, frame, ("forward", 1))  # 10.2.3.4 matches 10.0.0.0/8 only: next hop 1
    got = HDLC(outcome(router, [frame])[0][2])
    assert (got.address, got.control, got[PPP].proto) == (0xFF, 0x03, 0x0021)
    sent = IP(raw(got[IP]))
    recomputed = sent.copy()
    del recomputed.chksum  # scapy computes it from scratch
    assert sent.ttl == 63 and sent.chksum == IP(raw(recomputed)).chksum


def test_ipv4_longest_prefix_wins(router):
    check(router, v4(dst="10.1.2.3"), ("forward", 0))
    check(router, v4(dst="192.0.2.77", ttl=2), ("forward", 1))


def test_ipv4_options_go_to_slow_path(router):
    frame = raw(pos() / IP(src="198.18.0.1", dst="10.2.3.4", options=b"\x01\x01\x01\x00")
                / UDP())
    check(router, frame, ("exception", EXC["options"]))


def test_ipv4_df_and_mtu_too_small_is_frag_needed_naming_the_next_hop(router):
    big = raw(pos() / IP(src="198.18.0.1", dst="10.1.0.9", flags="DF") / (b"x" * 700))
    check(router, big, ("exception", EXC["frag_needed"]))
    (v,) = router.run([big])
    assert (v.next_hop, NEXTHOPS[v.next_hop][3]) == (2, 600)  # 10.1/16 -> 2, MTU 600


def test_ipv4_mtu_too_small_without_df_goes_to_fragmentation(router):
    big = raw(pos() / IP(src="198.18.0.1", dst="10.1.0.9") / (b"x" * 700))
    check(router, big, ("exception", EXC["fragment"]))


def test_ipv4_exactly_the_mtu_is_forwarded(router):
    frame = raw(pos() / IP(src="198.18.0.1", dst="10.1.0.9") / (b"x" * (600 - 20)))
    check(router, frame, ("forward", 0))


# ---- IPv6, RFC 8200 / RFC 4291 --------------------------------------------------------------

def test_ipv6_forwards_with_hop_limit_decrement_and_the_ppp_header_kept(router):
    frame = v6(hlim=9)
    check(router, frame, ("forward", 1))
    got = HDLC(outcome(router, [frame])[0][2])
    assert got[PPP].proto == 0x0057 and got[IPv6].hlim == 8
    assert raw(got[IPv6])[8:] == frame[4 + 8:]  # nothing but the hop limit changes


def test_ipv6_longest_prefix_wins(router):
    check(router, v6(dst="2001:db8:5::7"), ("forward", 1))
    check(router, v6(dst="2001:db8:6::7"), ("forward", 0))


def test_rfc8200_packet_too_big_never_fragmented(router):
    frame = raw(pos(0x0057) / IPv6(src="2001:db8:9::9", dst="2001:db8:6::1") / (b"x" * 600))
    check(router, frame, ("exception", EXC["too_big"]))
    (v,) = router.run([frame])
    assert (v.next_hop, NEXTHOPS[v.next_hop][3]) == (2, 600)


def test_rfc8200_hop_by_hop_goes_to_slow_path(router):
    frame = raw(pos(0x0057) / IPv6(src="2001:db8:9::9", dst="2001:db8:1::1")
                / IPv6ExtHdrHopByHop() / UDP())
    check(router, frame, ("exception", EXC["hop_by_hop"]))


# ---- the forwarding blocks alone check their protocol ----------------------------------------

@pytest.mark.parametrize(("block", "frame", "reason"), [
    ("ipv4_pos_fwd", raw(pos(0x0057) / IP(src="198.18.0.1", dst="10.2.3.4")), "not_ipv4"),
    ("ipv6_pos_fwd", raw(pos(0x0021) / IPv6(src="2001:db8:9::9", dst="2001:db8:1::1")),
     "not_ipv6"),
    ("ipv4_pos_fwd", b"\xff\x03\x00", "runt"),
], ids=["ipv6_to_ipv4_block", "ipv4_to_ipv6_block", "runt"])
def test_forwarding_blocks_alone_drop_the_other_protocol(block, frame, reason):
    native = NativeProgram(compile_file(PIPELINE), block, prefetch=False)
    (v,) = native.run([frame])
    assert (v.kind, v.reason) == ("drop", reason)


# ---- a hypothesis mix of valid and malformed frames -----------------------------------------



@st.composite
def frames(draw) -> bytes:
    kind = draw(st.sampled_from(["v4", "v4", "v6", "v6", "other"]))
    ttl = st.one_of(st.sampled_from([2, 64, 255]), st.integers(0, 255))
    if kind == "v4":
        ip = IP(src=draw(src4), dst=draw(addr4), ttl=draw(ttl),
                flags=draw(st.sampled_from(["", "DF"])),
                options=b"\x01\x01\x01\x00" if draw(rare) else b"")
        l4 = draw(st.sampled_from([UDP(), TCP(), ICMP()]))
        frame = bytearray(raw(pos() / ip / l4 / draw(payload)))
    elif kind == "v6":
        ip = IPv6(src=draw(src6), dst=draw(addr6), hlim=draw(ttl))
        l4 = IPv6ExtHdrHopByHop() / UDP() if draw(rare) else UDP()
        frame = bytearray(raw(pos(0x0057) / ip / l4 / draw(payload)))
    else:
        proto = draw(st.sampled_from([0xC021, 0x8021, 0x8057]) | st.integers(0, 0xFFFF))
        frame = bytearray(raw(pos(proto) / draw(payload)))
    if draw(rare):  # corruption: flip a byte (the PPP header too)
        i = draw(st.integers(0, len(frame) - 1))
        frame[i] ^= draw(st.integers(1, 255))
    if draw(rare):  # truncation
        frame = frame[:draw(st.integers(0, len(frame)))]
    return bytes(frame)


def _forwarded_counts(router: NativeProgram) -> tuple[int, int]:
    return router.read("ip_forwarded", 0), router.read("ip_forwarded", 1)


@settings(max_examples=120, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=40))
def test_pos_router_matches_reference_on_random_mix_and_counts(router, batch):
    """Batches up to 40 frames (more than a prefetch group of 16): the reference's verdicts,
    and the forwarded counters advance by the packets forwarded per IP version."""
    before = _forwarded_counts(router)
    expected = [reference(f) for f in batch]
    assert outcome(router, batch) == expected
    v4 = sum(1 for f, e in zip(batch, expected, strict=True)
             if e[0] == "forward" and f[2:4] == b"\x00\x21")
    v6 = sum(1 for e in expected if e[0] == "forward") - v4
    after = _forwarded_counts(router)
    assert (after[0] - before[0], after[1] - before[1]) == (v4, v6)


# ---- the ME front end's WIR (the code the chip runs) against the same reference -------------

@dataclass(frozen=True)
class WirRouter:
    program: object
    fn: object
    memory: dict[int, dict[int, int]]   # space -> word -> value: the loaded tables

    def outcome(self, frame: bytes) -> tuple:
        meta = [0] * 16
        meta[META_FIELDS["len"].word] = len(frame)
        memory = {space: dict(words) for space, words in self.memory.items()}
        m = run_wir(self.fn, Machine(bytearray(frame), meta=meta, memory=memory))
        kind, code = m.meta[META_VERDICT], m.meta[META_CODE]
        if kind == 1:
            return ("forward", m.meta[META_FIELDS["out_port"].word], bytes(m.packet))
        if kind == 2:
            return ("drop", self.program.reasons.name(code))
        return ("exception", code) if kind == 3 else ("none", kind)


@pytest.fixture(scope="module")
def wir_router() -> WirRouter:
    native = load_tables(NativeProgram(compile_file(PIPELINE), "pos_router", prefetch=False))
    memory = {space: {int(k): int(native.memory[name][k])
                      for k in np.nonzero(native.memory[name])[0]}
              for name, space in SPACE_IDS.items()}
    return WirRouter(native.program, to_wir(native.program, "pos_router"), memory)


@settings(max_examples=40, deadline=None)
@given(st.lists(frames(), min_size=1, max_size=8))
def test_me_front_end_matches_reference(wir_router, batch):
    assert [wir_router.outcome(f) for f in batch] == [reference(f) for f in batch]
