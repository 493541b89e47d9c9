"""ARP and ND on the chip: the compiled MBL router (examples/router/router.mbl on the
simulated IXP2800, the XScale model polling its exception ring) starts with no neighbours,
answers the tester, resolves a host from the tester's answer, sends the packets that waited
in order, and the chip's data plane forwards the next packet by itself from the next-hop
record and host route the resolver wrote through the XScale.  Expected frames: scapy."""

from __future__ import annotations

import pytest
import test_arp_nd as arp_nd
from scapy.layers.inet import IP
from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6ND_NS, IPv6
from scapy.layers.l2 import ARP, Ether

from npkit.runtime.compiled_router import CompiledRouter, link_router
from npkit.runtime.resolver import NudState
from npkit.runtime.router_config import RouterConfig

FILLER = 200                  # frames the data plane drops, to delay the tester's answer


@pytest.fixture(scope="module")
def linked():
    return link_router(arp_nd.REPO / "examples/router/router.mbl")


@pytest.fixture
def router(linked) -> CompiledRouter:
    router = CompiledRouter(linked=linked, resolve=True)
    router.configure(RouterConfig.loads(arp_nd.CONFIG))
    router.control.exceptions.limiter = None
    return router


def dropped() -> bytes:
    """An IPv4 packet with a bad header checksum: the data plane drops it at once."""
    frame = bytearray(bytes(arp_nd.udp4(99)))
    frame[24] ^= 0xFF
    return bytes(frame)


def forwarded(packet: Ether, family: int) -> bytes:
    expected = packet.copy()
    expected.dst, expected.src = arp_nd.HOST_MAC, arp_nd.ROUTER_MAC[1]
    if family == 4:
        expected[IP].ttl -= 1
        del expected[IP].chksum
    else:
        expected[IPv6].hlim -= 1
    return bytes(Ether(bytes(expected)))


@pytest.mark.parametrize("family", [4, 6])
def test_the_chip_router_resolves_and_forwards_in_order(router, family, tmp_path):
    if family == 4:
        hello = arp_nd.arp_who_has(0, arp_nd.TESTER_MAC, arp_nd.TESTER4, arp_nd.ROUTER4[0])
        packets = [arp_nd.udp4(k) for k in (1, 2, 3)]
        answer = arp_nd.arp_reply(1, arp_nd.HOST_MAC, arp_nd.HOST4)
    else:
        hello = arp_nd.neighbour_solicit(0, arp_nd.TESTER_MAC, arp_nd.TESTER6,
                                         arp_nd.ROUTER6[0])
        packets = [arp_nd.udp6(k) for k in (1, 2, 3)]
        answer = arp_nd.neighbour_advert(1, arp_nd.HOST_MAC, arp_nd.HOST6,
                                         dst=arp_nd.ROUTER6[1])
    # port 0: the tester resolves the router, sends two packets, later a third; port 1:
    # the host answers the router's solicitation after FILLER dropped frames
    frames = {0: [bytes(hello), *map(bytes, packets[:2]), *[dropped()] * (20 * FILLER),
                  bytes(packets[2])],
              1: [*[dropped()] * FILLER, bytes(answer)]}
    result = router.forward(frames, load=0.5)
    out = {p: [Ether(f) for f in result.frames(p)] for p in result.out}
    (reply,) = out[0]                                   # the router answers the tester
    solicitation, *data = out[1]
    if family == 4:
        assert (reply[ARP].op, reply[ARP].psrc, reply.dst) == (2, arp_nd.ROUTER4[0],
                                                               arp_nd.TESTER_MAC)
        assert (solicitation[ARP].op, solicitation[ARP].pdst) == (1, arp_nd.HOST4)
    else:
        assert (reply[ICMPv6ND_NA].tgt, reply[ICMPv6ND_NA].S) == (arp_nd.ROUTER6[0], 1)
        assert solicitation[ICMPv6ND_NS].tgt == arp_nd.HOST6
    # the two that waited, in order, then the third forwarded by the chip's data plane
    assert [bytes(f) for f in data] == [forwarded(p, family) for p in packets]
    counters = router.counters()["exception_path"]
    assert counters.get("rx.fragment", 0) + counters.get("rx.too_big", 0) == 2
    host = arp_nd.HOST4 if family == 4 else arp_nd.HOST6
    assert router.control.resolver.state(1, host) is NudState.REACHABLE
    arp_nd.well_formed([reply, solicitation, *data], tmp_path)
