"""ARP (RFC 826) and Neighbor Discovery (RFC 4861) on the native target: a router that
starts with no neighbours resolves them from the tester's answers, forwards the packets
that waited in order, answers the tester's ARP requests and Neighbor Solicitations, ages
its entries through the NUD states and gives up with ICMP after the retries.

The tester's frames and the expected fields come from scapy, built from the RFCs; every
frame the router generates is dissected by scapy and by tshark (no malformed packet, good
checksums)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, UDP, IPerror
from scapy.layers.inet6 import (
    ICMPv6DestUnreach,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
)
from scapy.layers.l2 import ARP, Ether
from tshark_check import TSHARK, assert_well_formed, checksum_statuses, dissect

from npkit.runtime.control_plane import NativeRouter
from npkit.runtime.lpm import route_memories
from npkit.runtime.nd import parse_nd
from npkit.runtime.resolver import NudParameters, NudState
from npkit.runtime.router_config import ConfigTarget, RouterConfig

REPO = Path(__file__).resolve().parents[2]
MS = 1_000_000
SECOND = 1000 * MS
CONFIG = """
[[port]]
port = 0
mac = "02:00:00:00:00:10"
ipv4 = ["192.0.2.1/24"]
ipv6 = ["2001:db8:0:10::1/64"]

[[port]]
port = 1
mac = "02:00:00:00:00:11"
ipv4 = ["198.51.100.1/24"]
ipv6 = ["2001:db8:0:11::1/64"]
"""
ROUTER_MAC = {0: "02:00:00:00:00:10", 1: "02:00:00:00:00:11"}
ROUTER4 = {0: "192.0.2.1", 1: "198.51.100.1"}
ROUTER6 = {0: "2001:db8:0:10::1", 1: "2001:db8:0:11::1"}
TESTER_MAC, TESTER4, TESTER6 = "02:aa:00:00:00:05", "192.0.2.5", "2001:db8:0:10::5"
HOST_MAC, HOST4, HOST6 = "02:bb:00:00:00:07", "198.51.100.7", "2001:db8:0:11::7"


@pytest.fixture(scope="module")
def program():
    from npkit.compiler.mbl import NativeProgram, compile_file

    return NativeProgram(compile_file(REPO / "examples/router/router.mbl"))


def fresh(program):
    """The program's router memories zeroed: a route manager builds on empty words (one
    left by an earlier test's router can hold plies a new trie misreads)."""
    for name in ("nexthops", "local4", "local6", *route_memories(program.program.memories)):
        program.region(name)[:] = 0
    return program


@pytest.fixture
def router(program) -> NativeRouter:
    router = NativeRouter(fresh(program), ports=2, config=RouterConfig.loads(CONFIG))
    assert not list(router.control.neighbours)              # no neighbour to start with
    router.control.exceptions.limiter = None
    return router


def send(router: NativeRouter, frames, port: int, now_ns: int = 0) -> dict[int, list[Ether]]:
    out = router.forward([bytes(f) for f in frames], port, now_ns).out
    return {p: [Ether(f) for f in fs] for p, fs in out.items()}


def udp4(ident: int, dst: str = HOST4, ttl: int = 9) -> Ether:
    return (Ether(src=TESTER_MAC, dst=ROUTER_MAC[0]) / IP(src=TESTER4, dst=dst, ttl=ttl,
                                                           id=ident)
            / UDP(sport=1000 + ident, dport=53) / bytes(20))


def udp6(ident: int, dst: str = HOST6, hlim: int = 9) -> Ether:
    return (Ether(src=TESTER_MAC, dst=ROUTER_MAC[0]) / IPv6(src=TESTER6, dst=dst, hlim=hlim)
            / UDP(sport=1000 + ident, dport=53) / bytes(20))


def arp_reply(port: int, mac: str, ip: str) -> Ether:
    return Ether(src=mac, dst=ROUTER_MAC[port]) / ARP(op=2, hwsrc=mac, psrc=ip,
                                                      hwdst=ROUTER_MAC[port], pdst=ROUTER4[port])


def arp_who_has(port: int, mac: str, ip: str, target: str) -> Ether:
    return Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=mac, psrc=ip, pdst=target)


def solicited_node(address: str) -> tuple[str, str]:
    """The solicited-node group of an address and its Ethernet group (RFC 4291, 2464)."""
    import socket

    from scapy.utils6 import in6_getnsma, in6_getnsmac, inet_ntop, inet_pton
    group = in6_getnsma(inet_pton(socket.AF_INET6, address))
    return inet_ntop(socket.AF_INET6, group), in6_getnsmac(group)


def neighbour_advert(port: int, mac: str, ip: str, *, dst: str, solicited: bool = True,
                     override: bool = True) -> Ether:
    return (Ether(src=mac, dst=ROUTER_MAC[port]) / IPv6(src=ip, dst=dst, hlim=255)
            / ICMPv6ND_NA(tgt=ip, R=0, S=int(solicited), O=int(override))
            / ICMPv6NDOptDstLLAddr(lladdr=mac))


def neighbour_solicit(port: int, mac: str, ip: str, target: str, hlim: int = 255) -> Ether:
    group, group_mac = solicited_node(target)
    return (Ether(src=mac, dst=group_mac) / IPv6(src=ip, dst=group, hlim=hlim)
            / ICMPv6ND_NS(tgt=target) / ICMPv6NDOptSrcLLAddr(lladdr=mac))


def tester_known(router: NativeRouter, now_ns: int = 0) -> None:
    """The tester resolves its gateway (the router) as a host would; the router learns it."""
    out = send(router, [arp_who_has(0, TESTER_MAC, TESTER4, ROUTER4[0])], 0, now_ns)
    assert [f[ARP].op for f in out[0]] == [2]
    out = send(router, [neighbour_solicit(0, TESTER_MAC, TESTER6, ROUTER6[0])], 0, now_ns)
    assert [f.haslayer(ICMPv6ND_NA) for f in out[0]] == [True]


def well_formed(frames: list[Ether], tmp_path: Path) -> None:
    if TSHARK is None:
        pytest.skip("tshark is not installed")
    for row in dissect(frames, tmp_path):
        where = assert_well_formed(row)
        assert "0" not in checksum_statuses(row), where


# ------------------------------------------------------------------------- answering

def test_answers_an_arp_request_for_its_address(router, tmp_path):
    request = arp_who_has(0, TESTER_MAC, TESTER4, ROUTER4[0])
    (reply,) = send(router, [request], 0)[0]
    assert (reply.dst, reply.src, reply.type) == (TESTER_MAC, ROUTER_MAC[0], 0x0806)
    arp = reply[ARP]
    assert (arp.hwtype, arp.ptype, arp.hwlen, arp.plen, arp.op) == (1, 0x0800, 6, 4, 2)
    assert (arp.hwsrc, arp.psrc, arp.hwdst, arp.pdst) == (ROUTER_MAC[0], ROUTER4[0],
                                                          TESTER_MAC, TESTER4)
    # RFC 826: the requester, whose request was for us, is now in the table
    assert router.control.neighbours.get(0, TESTER4).mac == int(TESTER_MAC.replace(":", ""),
                                                                16)
    assert router.control.resolver.state(0, TESTER4) is NudState.DELAY   # installed: in use
    assert send(router, [arp_who_has(0, TESTER_MAC, TESTER4, "192.0.2.99")], 0) == {}
    well_formed([reply], tmp_path)


def test_answers_a_neighbour_solicitation_for_its_address(router, tmp_path):
    ns = neighbour_solicit(0, TESTER_MAC, TESTER6, ROUTER6[0])
    (na,) = send(router, [ns], 0)[0]
    assert (na.dst, na.src) == (TESTER_MAC, ROUTER_MAC[0])
    assert (na[IPv6].src, na[IPv6].dst, na[IPv6].hlim) == (ROUTER6[0], TESTER6, 255)
    adv = na[ICMPv6ND_NA]
    assert (adv.tgt, adv.R, adv.S, adv.O, adv.code) == (ROUTER6[0], 1, 1, 1, 0)
    assert na[ICMPv6NDOptDstLLAddr].lladdr == ROUTER_MAC[0]
    resum = IPv6(bytes(na[IPv6]))
    del resum[ICMPv6ND_NA].cksum
    assert IPv6(bytes(resum))[ICMPv6ND_NA].cksum == adv.cksum
    assert router.control.neighbours.get(0, TESTER6) is not None      # 7.2.3: learnt
    well_formed([na], tmp_path)


def test_a_duplicate_address_probe_is_answered_to_all_nodes(router):
    """RFC 4861 7.2.4.  The data plane drops an unspecified source before the slow path
    (docs/conformance.md), so the probe is handed to the resolver directly here."""
    group, group_mac = solicited_node(ROUTER6[0])
    dad = (Ether(src=TESTER_MAC, dst=group_mac) / IPv6(src="::", dst=group, hlim=255)
           / ICMPv6ND_NS(tgt=ROUTER6[0]))
    assert send(router, [dad], 0) == {}
    (emit,) = router.control.resolver.on_nd(bytes(dad), 0, 0)
    na = Ether(emit.frame)
    assert (na.dst, na[IPv6].dst) == ("33:33:00:00:00:01", "ff02::1")
    assert (na[ICMPv6ND_NA].S, na[ICMPv6ND_NA].O) == (0, 1)
    assert router.control.neighbours.get(0, "::") is None


def test_the_subnet_router_anycast_address_is_advertised_late_without_override(router):
    """RFC 4861 7.2.7: an anycast answer has Override clear and waits a random time below
    MAX_ANYCAST_DELAY_TIME (1 s); Linux delays it too (its proxy_delay)."""
    ns = neighbour_solicit(0, TESTER_MAC, TESTER6, "2001:db8:0:10::")
    assert send(router, [ns], 0, 0) == {}
    (due,) = [t for t, _ in router.control.resolver._delayed]
    assert 0 <= due < SECOND
    assert router.advance(due - 1) == {}
    (frame,) = router.advance(due)[0]
    na = Ether(frame)
    assert (na[ICMPv6ND_NA].tgt, na[ICMPv6ND_NA].S, na[ICMPv6ND_NA].O) == (
        "2001:db8:0:10::", 1, 0)


def test_invalid_solicitations_are_ignored(router):
    """RFC 4861 7.1.1: hop limit not 255, or a target that is not ours."""
    assert send(router, [neighbour_solicit(0, TESTER_MAC, TESTER6, ROUTER6[0], hlim=64)],
                0) == {}
    assert send(router, [neighbour_solicit(0, TESTER_MAC, TESTER6, "2001:db8:0:10::77")],
                0) == {}
    assert parse_nd(bytes(neighbour_solicit(0, TESTER_MAC, TESTER6, ROUTER6[0],
                                            hlim=64)[IPv6])) is None


# ------------------------------------------------------------------------- resolving

def test_ipv4_host_resolved_on_demand_and_the_waiting_packets_go_in_order(router, tmp_path):
    tester_known(router)
    # four packets wait; the queue holds three, the oldest goes (RFC 4861 7.2.2)
    out = send(router, [udp4(k) for k in (1, 2, 3, 4)], 0, 1 * MS)
    (request,) = out[1]
    assert request.dst == "ff:ff:ff:ff:ff:ff" and request[ARP].op == 1
    assert (request[ARP].hwsrc, request[ARP].psrc, request[ARP].pdst) == (
        ROUTER_MAC[1], ROUTER4[1], HOST4)
    assert router.control.resolver.state(1, HOST4) is NudState.INCOMPLETE
    out = send(router, [arp_reply(1, HOST_MAC, HOST4)], 1, 2 * MS)
    assert [f[IP].id for f in out[1]] == [2, 3, 4]
    for frame, k in zip(out[1], (2, 3, 4), strict=True):
        expected = udp4(k)
        expected.dst, expected.src = HOST_MAC, ROUTER_MAC[1]
        expected[IP].ttl -= 1
        del expected[IP].chksum
        assert bytes(frame) == bytes(Ether(bytes(expected)))
    assert router.control.resolver.state(1, HOST4) is NudState.REACHABLE
    # from now on the data plane forwards by itself
    verdicts = router.forward([bytes(udp4(5))], 0, 3 * MS).verdicts
    assert [(v.kind, v.port) for v in verdicts] == [("forward", 1)]
    assert Ether(verdicts[0].data).dst == HOST_MAC
    well_formed([request, *out[1]], tmp_path)


def test_ipv6_host_resolved_on_demand_and_the_waiting_packets_go_in_order(router, tmp_path):
    tester_known(router)
    out = send(router, [udp6(k) for k in (1, 2)], 0, 1 * MS)
    (ns,) = out[1]
    group, group_mac = solicited_node(HOST6)
    assert (ns.dst, ns[IPv6].dst, ns[IPv6].src, ns[IPv6].hlim) == (group_mac, group,
                                                                   ROUTER6[1], 255)
    assert (ns[ICMPv6ND_NS].tgt, ns[ICMPv6NDOptSrcLLAddr].lladdr) == (HOST6, ROUTER_MAC[1])
    out = send(router, [neighbour_advert(1, HOST_MAC, HOST6, dst=ROUTER6[1])], 1, 2 * MS)
    assert [f[UDP].sport for f in out[1]] == [1001, 1002]
    for frame, k in zip(out[1], (1, 2), strict=True):
        expected = udp6(k)
        expected.dst, expected.src = HOST_MAC, ROUTER_MAC[1]
        expected[IPv6].hlim -= 1
        assert bytes(frame) == bytes(expected)
    verdicts = router.forward([bytes(udp6(3))], 0, 3 * MS).verdicts
    assert [(v.kind, v.port) for v in verdicts] == [("forward", 1)]
    well_formed([ns, *out[1]], tmp_path)


def test_an_echo_request_from_an_unknown_host_is_answered_after_resolving_it(router):
    ping = (Ether(src=TESTER_MAC, dst=ROUTER_MAC[0]) / IP(src=TESTER4, dst=ROUTER4[0])
            / ICMP(type=8, id=4, seq=1) / b"ping")
    (request,) = send(router, [ping], 0)[0]
    assert request[ARP].pdst == TESTER4
    (reply,) = send(router, [arp_reply(0, TESTER_MAC, TESTER4)], 0, MS)[0]
    assert (reply.dst, reply[IP].dst, reply[ICMP].type, reply[ICMP].id) == (TESTER_MAC,
                                                                            TESTER4, 0, 4)


@pytest.mark.parametrize("family", [4, 6])
def test_no_answer_means_retries_then_icmp_unreachable(router, family, tmp_path):
    tester_known(router)
    packet = udp4(1) if family == 4 else udp6(1)
    out = send(router, [packet], 0, 0)
    solicitations = list(out[1])
    for second in (1, 2):                  # MAX_MULTICAST_SOLICIT = 3, RETRANS_TIMER = 1 s
        out = {p: [Ether(f) for f in fs] for p, fs in router.advance(second * SECOND).items()}
        assert list(out) == [1]
        solicitations += out[1]
    assert len(solicitations) == 3
    out = {p: [Ether(f) for f in fs] for p, fs in router.advance(3 * SECOND).items()}
    (error,) = out[0]
    assert error.dst == TESTER_MAC
    if family == 4:
        assert (error[ICMP].type, error[ICMP].code, error[IP].dst) == (3, 1, TESTER4)
        assert error[IPerror].id == 1
    else:
        assert (error[ICMPv6DestUnreach].code, error[IPv6].dst) == (3, TESTER6)
    assert router.control.resolver.state(1, HOST4 if family == 4 else HOST6) is None
    well_formed([*solicitations, error], tmp_path)


def test_reachable_ages_to_stale_delay_probe_and_is_confirmed_by_unicast(router):
    tester_known(router)
    send(router, [udp4(1)], 0, 0)
    send(router, [arp_reply(1, HOST_MAC, HOST4)], 1, MS)
    resolver = router.control.resolver
    reachable = NudParameters().reachable_ns
    # (the tester's own entry ages too, on port 0: only port 1 matters here)
    assert 1 not in router.advance(MS + reachable - 1)
    assert resolver.state(1, HOST4) is NudState.REACHABLE
    assert 1 not in router.advance(MS + reachable)
    assert resolver.state(1, HOST4) is NudState.DELAY       # installed, so in use at once
    out = router.advance(MS + reachable + 5 * SECOND)       # DELAY_FIRST_PROBE_TIME
    (probe,) = [Ether(f) for f in out[1]]
    assert resolver.state(1, HOST4) is NudState.PROBE
    assert (probe.dst, probe[ARP].op, probe[ARP].pdst) == (HOST_MAC, 1, HOST4)   # unicast
    send(router, [arp_reply(1, HOST_MAC, HOST4)], 1, MS + reachable + 6 * SECOND)
    assert resolver.state(1, HOST4) is NudState.REACHABLE


def test_an_unanswered_probe_removes_the_entry_and_the_host_is_gleaned_again(router):
    tester_known(router)
    send(router, [neighbour_solicit(1, HOST_MAC, HOST6, ROUTER6[1])], 1, 0)   # learnt STALE
    resolver = router.control.resolver
    assert resolver.state(1, HOST6) is NudState.DELAY
    verdicts = router.forward([bytes(udp6(1))], 0, MS).verdicts
    assert [(v.kind, v.port) for v in verdicts] == [("forward", 1)]
    probes = []
    for t in (5, 6, 7):
        probes += [Ether(f) for f in router.advance(t * SECOND).get(1, [])]
    assert [(p.dst, p[IPv6].dst) for p in probes] == [(HOST_MAC, HOST6)] * 3   # unicast NS
    assert router.advance(8 * SECOND) == {} and resolver.state(1, HOST6) is None
    assert router.control.neighbours.get(1, HOST6) is None
    verdicts = router.forward([bytes(udp6(2))], 0, 9 * SECOND).verdicts
    assert verdicts[0].kind == "exception"                  # the glean path again


def test_a_changed_mac_without_override_only_marks_the_entry_stale(router):
    tester_known(router)
    send(router, [udp6(1)], 0, 0)
    send(router, [neighbour_advert(1, HOST_MAC, HOST6, dst=ROUTER6[1])], 1, MS)
    other = "02:bb:00:00:00:99"
    send(router, [neighbour_advert(1, other, HOST6, dst=ROUTER6[1], override=False)], 1, 2 * MS)
    assert router.control.neighbours.get(1, HOST6).mac == int(HOST_MAC.replace(":", ""), 16)
    assert router.control.resolver.state(1, HOST6) is NudState.DELAY
    send(router, [neighbour_advert(1, other, HOST6, dst=ROUTER6[1])], 1, 3 * MS)
    assert router.control.neighbours.get(1, HOST6).mac == int(other.replace(":", ""), 16)
    verdicts = router.forward([bytes(udp6(2))], 0, 4 * MS).verdicts
    assert Ether(verdicts[0].data).dst == other


def test_configured_neighbours_are_permanent(program):
    config = RouterConfig.loads(CONFIG + '[[neighbour]]\nport = 1\nip = "198.51.100.7"\n'
                                         'mac = "02:bb:00:00:00:07"\n')
    router = NativeRouter(fresh(program), ports=2, config=config)
    assert router.control.resolver.state(1, HOST4) is NudState.PERMANENT
    send(router, [arp_reply(1, "02:bb:00:00:00:99", HOST4)], 1, 0)
    assert router.control.neighbours.get(1, HOST4).mac == int(HOST_MAC.replace(":", ""), 16)


GATEWAY_ROUTE = '[[route]]\nprefix = "10.0.0.0/8"\nvia = "198.51.100.9"\n'


def test_a_route_through_an_unresolved_gateway_resolves_the_gateway(program, tmp_path):
    config = RouterConfig.loads(CONFIG + GATEWAY_ROUTE, target=ConfigTarget(resolves=True))
    router = NativeRouter(fresh(program), ports=2, config=config)
    tester_known(router)
    gateway_mac = "02:cc:00:00:00:09"
    out = send(router, [udp4(1, dst="10.1.2.3"), udp4(2, dst="10.9.9.9")], 0, MS)
    (request,) = out[1]
    assert (request[ARP].pdst, request.dst) == ("198.51.100.9", "ff:ff:ff:ff:ff:ff")
    out = send(router, [arp_reply(1, gateway_mac, "198.51.100.9")], 1, 2 * MS)
    assert [(f.dst, f[IP].dst, f[IP].ttl) for f in out[1]] == [
        (gateway_mac, "10.1.2.3", 8), (gateway_mac, "10.9.9.9", 8)]
    verdicts = router.forward([bytes(udp4(3, dst="10.7.7.7"))], 0, 3 * MS).verdicts
    assert [(v.kind, v.port, Ether(v.data).dst) for v in verdicts] == [("forward", 1,
                                                                        gateway_mac)]
    well_formed([request, *out[1]], tmp_path)


def test_without_resolution_a_route_needs_a_configured_gateway(program):
    with pytest.raises(ValueError, match="no \\[\\[neighbour\\]\\]"):
        RouterConfig.loads(CONFIG + GATEWAY_ROUTE)
    config = RouterConfig.loads(CONFIG + GATEWAY_ROUTE, target=ConfigTarget(resolves=True))
    with pytest.raises(ValueError, match="no \\[\\[neighbour\\]\\]"):
        NativeRouter(fresh(program), ports=2, config=config, resolve=False)


def test_no_solicitation_for_our_own_or_a_broadcast_address(router):
    """An error to a spoofed source that is ours, or a directed broadcast, asks nobody
    (the Linux differential suite found the first)."""
    from npkit.runtime.exception_path import Emit

    resolver = router.control.resolver
    for target in (ROUTER4[0], "192.0.2.255"):
        emit = Emit(0, bytes(60), awaiting=ipaddress.ip_address(target))
        assert resolver.resolve(emit, 0, False, 0) == []
    assert resolver.counters["dropped.own_address"] == 1
    assert resolver.counters["dropped.broadcast_destination"] == 1
    assert not resolver.entries


def test_the_glean_path_applies_the_ports_mtu_before_resolving(router):
    """A packet to an unresolved host meets the real link MTU (the glean record's MTU 0
    is only the slow-path trigger): DF and too big -> Fragmentation Needed with 1500 and no
    solicitation; not DF -> fragments, each waiting for the neighbour."""
    tester_known(router)
    big = (Ether(src=TESTER_MAC, dst=ROUTER_MAC[0]) / IP(src=TESTER4, dst=HOST4, flags="DF",
                                                         id=9) / UDP() / bytes(1600))
    out = send(router, [big], 0, MS)
    assert list(out) == [0]
    (error,) = out[0]
    assert (error[ICMP].type, error[ICMP].code, error[ICMP].nexthopmtu) == (3, 4, 1500)
    big[IP].flags = 0
    (request,) = send(router, [big], 0, 2 * MS)[1]
    assert request[ARP].pdst == HOST4
    pieces = send(router, [arp_reply(1, HOST_MAC, HOST4)], 1, 3 * MS)[1]
    assert [(len(p[IP]), p[IP].frag, p[IP].flags.MF) for p in pieces] == [
        (1500, 0, 1), (148, 185, 0)]


def test_a_config_reload_forgets_what_was_learnt(router):
    tester_known(router)
    send(router, [udp4(1)], 0, 0)
    send(router, [arp_reply(1, HOST_MAC, HOST4)], 1, MS)
    assert router.forward([bytes(udp4(2))], 0, 2 * MS).verdicts[0].kind == "forward"
    router.control.configure(RouterConfig.loads(CONFIG))
    assert router.control.resolver.state(1, HOST4) is None
    assert router.control.neighbours.get(1, HOST4) is None
    out = send(router, [udp4(3)], 0, 3 * MS)                # resolved afresh
    assert [f[ARP].pdst for f in out[1]] == [HOST4]
    assert sorted(router.control.nexthops._entries) == [0, 1]   # the two glean records
