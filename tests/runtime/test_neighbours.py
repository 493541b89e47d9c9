"""Ports, neighbours, next hops and the router's own addresses (runtime/neighbours.py),
checked by running the native dual-stack router (examples/router/router.mbl) on scapy
packets: the rewritten MACs, the output port and the MTU decisions come from the data plane
reading the words these tables wrote, and the expectations from the literals below."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.native import exact_hash
from npkit.runtime.lpm import RouteTables
from npkit.runtime.neighbours import (
    LocalAddresses,
    NeighbourError,
    Neighbours,
    NextHop,
    NextHopTable,
    PortConfig,
    Ports,
    home_hash,
    mac_to_int,
    pack_next_hop,
)

REPO = Path(__file__).resolve().parents[2]
FOR_ROUTER, FOR_ROUTER6, NO_ROUTE, NO_ROUTE6 = 4, 21, 2, 18
FRAG_NEEDED, FRAGMENT, TOO_BIG = 5, 6, 19

PORT_MAC = {0: "02:00:00:00:00:a0", 1: "02:00:00:00:00:a1", 2: "02:00:00:00:00:a2",
            3: "02:00:00:00:00:a3"}
PORTS = [PortConfig.of(0, PORT_MAC[0], ["192.0.2.1/24"], ["2001:db8:0:a::1/64"], 1500),
         PortConfig.of(1, PORT_MAC[1], ["198.51.100.1/24"], ["2001:db8:0:b::1/64"], 9000),
         PortConfig.of(2, PORT_MAC[2], ["203.0.113.1/25"], ["2001:db8:0:c::1/64"], 1280),
         PortConfig.of(3, PORT_MAC[3], ["203.0.113.129/25"], [], 576)]
GW_MAC = {"198.51.100.2": "02:aa:00:00:00:02", "203.0.113.2": "02:aa:00:00:00:03",
          "203.0.113.130": "02:aa:00:00:00:04", "2001:db8:0:b::2": "02:aa:00:00:00:06"}


@pytest.fixture(scope="module")
def native() -> NativeProgram:
    return NativeProgram(compile_file(REPO / "examples" / "router" / "router.mbl"), "router")


@pytest.fixture
def router(native: NativeProgram) -> NativeProgram:
    """The module's router with empty next hops, local addresses and routes."""
    for name in ("nexthops", "local4", "local6"):
        native.region(name)[:] = 0
    RouteTables.of(native).load({}, {})
    return native


def tables(native: NativeProgram) -> tuple[NextHopTable, LocalAddresses, Neighbours]:
    nexthops = NextHopTable(native.region("nexthops"), ports=4)
    local = LocalAddresses(native.region("local4"), native.region("local6"))
    return nexthops, local, Neighbours(Ports(PORTS, count=4), nexthops)


def routes(native: NativeProgram, table: dict[str, int]) -> None:
    v4: dict[tuple[int, int], int] = {}
    v6: dict[tuple[int, int], int] = {}
    for prefix, nh in table.items():
        net = ipaddress.ip_network(prefix)
        (v4 if net.version == 4 else v6)[(int(net.network_address), net.prefixlen)] = nh
    RouteTables.of(native).load(v4, v6)


def v4(dst: str, size: int = 100, df: bool = False) -> bytes:
    """An Ethernet/IPv4/UDP frame whose IPv4 total length is `size`."""
    pkt = IP(src="198.18.0.1", dst=dst, ttl=64, flags="DF" if df else 0) / UDP(sport=1, dport=2)
    return raw(Ether(dst=PORT_MAC[0], src="02:00:00:00:99:99") / pkt / (b"x" * (size - 28)))


def v6(dst: str, size: int = 100) -> bytes:
    """An Ethernet/IPv6/UDP frame whose IPv6 packet is `size` bytes."""
    pkt = IPv6(src="2001:db8:99::9", dst=dst, hlim=64) / UDP(sport=1, dport=2)
    return raw(Ether(dst=PORT_MAC[0], src="02:00:00:00:99:99") / pkt / (b"x" * (size - 48)))


def run_one(native: NativeProgram, frame: bytes):
    (verdict,) = native.run([frame], in_ports=0)
    return verdict


def assert_forwarded(verdict, port: int, dmac: str, smac: str) -> None:
    assert (verdict.kind, verdict.port) == ("forward", port), verdict
    out = Ether(verdict.data)
    assert (out.dst, out.src) == (dmac, smac)


# ---- the record layout -----------------------------------------------------------------

def test_record_words_by_hand():
    # dmac 02:aa:bb:cc:dd:ee, smac 02:11:22:33:44:55, port 3, MTU 1500 (0x5dc), MSB first
    nh = NextHop(0x02AABBCCDDEE, 0x021122334455, 3, 1500)
    assert pack_next_hop(nh) == (0x02AABBCC, 0xDDEE0211, 0x22334455, 0x000305DC)


# ---- forwarding through resolved next hops ---------------------------------------------

def test_next_hops_rewrite_macs_and_pick_the_port(router):
    nexthops, _, neighbours = tables(router)
    for ip, mac in GW_MAC.items():
        port = 1 if ip in ("198.51.100.2", "2001:db8:0:b::2") else 2 if ip == "203.0.113.2" else 3
        neighbours.set(port, ip, mac)
    a = neighbours.next_hop_for(1, "198.51.100.2")
    b = neighbours.next_hop_for(2, "203.0.113.2")
    c = neighbours.next_hop_for(1, "2001:db8:0:b::2")
    assert neighbours.next_hop_for(1, "198.51.100.2") == a  # reused, not duplicated
    assert len({a, b, c}) == 3 and len(nexthops) == 3
    routes(router, {"10.0.0.0/8": a, "10.1.0.0/16": b, "2001:db8:5::/48": c})
    assert_forwarded(run_one(router, v4("10.2.3.4")), 1, GW_MAC["198.51.100.2"], PORT_MAC[1])
    assert_forwarded(run_one(router, v4("10.1.3.4")), 2, GW_MAC["203.0.113.2"], PORT_MAC[2])
    got = run_one(router, v6("2001:db8:5::7"))
    assert_forwarded(got, 1, GW_MAC["2001:db8:0:b::2"], PORT_MAC[1])
    assert Ether(got.data)[IPv6].hlim == 63


@pytest.mark.parametrize("size, df, expected", [
    (1280, True, "forward"), (1281, True, FRAG_NEEDED), (1281, False, FRAGMENT)])
def test_ipv4_mtu_comes_from_the_port(router, size, df, expected):
    _, _, neighbours = tables(router)
    neighbours.set(2, "203.0.113.2", GW_MAC["203.0.113.2"])
    index = neighbours.next_hop_for(2, "203.0.113.2")  # port 2: MTU 1280
    routes(router, {"10.0.0.0/8": index})
    got = run_one(router, v4("10.9.9.9", size, df))
    if expected == "forward":
        assert_forwarded(got, 2, GW_MAC["203.0.113.2"], PORT_MAC[2])
    else:
        assert (got.kind, got.code, got.next_hop) == ("exception", expected, index)


def test_ipv6_mtu_too_big(router):
    _, _, neighbours = tables(router)
    neighbours.set(2, "2001:db8:0:c::2", "02:aa:00:00:00:07")
    index = neighbours.next_hop_for(2, "2001:db8:0:c::2")
    routes(router, {"2001:db8:77::/48": index})
    assert run_one(router, v6("2001:db8:77::1", 1280)).kind == "forward"
    got = run_one(router, v6("2001:db8:77::1", 1281))
    assert (got.kind, got.code, got.next_hop) == ("exception", TOO_BIG, index)


def test_neighbour_mac_change_rewrites_every_next_hop_that_uses_it(router):
    writes: list[tuple[str, int, list[int]]] = []
    nexthops = NextHopTable(router.region("nexthops"), ports=4,
                            writer=lambda name, at, values: writes.append((name, at, values)))
    neighbours = Neighbours(Ports(PORTS, count=4), nexthops)
    neighbours.set(1, "198.51.100.2", GW_MAC["198.51.100.2"])
    first = neighbours.next_hop_for(1, "198.51.100.2")
    neighbours.bind(7, 1, "198.51.100.2")  # a second record through the same gateway
    routes(router, {"10.0.0.0/8": first, "172.16.0.0/12": 7})
    writes.clear()
    assert neighbours.set(1, "198.51.100.2", "02:bb:00:00:00:09") == [first, 7]
    for dst in ("10.0.0.9", "172.16.0.9"):
        assert_forwarded(run_one(router, v4(dst)), 1, "02:bb:00:00:00:09", PORT_MAC[1])
    # a new dmac changes words 0 and 1 of each record: one 2-word write per record
    assert writes == [("nexthops", 4 * first, [0x02BB0000, 0x00090200]),
                      ("nexthops", 4 * 7, [0x02BB0000, 0x00090200])]


def test_port_change_rewrites_source_mac_and_mtu(router):
    _, _, neighbours = tables(router)
    neighbours.set(1, "198.51.100.2", GW_MAC["198.51.100.2"])
    index = neighbours.next_hop_for(1, "198.51.100.2")
    routes(router, {"10.0.0.0/8": index})
    assert run_one(router, v4("10.0.0.9", 1400, df=True)).kind == "forward"  # MTU 9000
    changed = PortConfig.of(1, "02:00:00:00:00:b1", ["198.51.100.1/24"], [], 1300)
    assert neighbours.set_port(changed) == [index]
    got = run_one(router, v4("10.0.0.9", 1400, df=True))
    assert (got.kind, got.code) == ("exception", FRAG_NEEDED)
    assert_forwarded(run_one(router, v4("10.0.0.9", 1300)), 1, GW_MAC["198.51.100.2"],
                     "02:00:00:00:00:b1")


def test_a_deleted_next_hop_sends_packets_to_the_slow_path(router):
    nexthops, _, neighbours = tables(router)
    neighbours.set(1, "198.51.100.2", GW_MAC["198.51.100.2"])
    index = neighbours.next_hop_for(1, "198.51.100.2")
    routes(router, {"10.0.0.0/8": index})
    neighbours.release(index)
    assert index not in nexthops and neighbours.users(1, "198.51.100.2") == []
    got = run_one(router, v4("10.0.0.9"))
    assert got.kind == "exception" and got.code in (FRAG_NEEDED, FRAGMENT)
    neighbours.remove(1, "198.51.100.2")  # no longer used: allowed


def test_an_unresolved_gateway_is_slow_path_until_learnt_and_after_it_is_forgotten(router):
    """With a resolver (resolving=True) a gateway may be named before its MAC is known:
    its next hop is a glean-style record naming it; learning fills it in, forgetting puts
    the unresolved record back, and the data plane follows each step."""
    nexthops = NextHopTable(router.region("nexthops"), ports=4)
    neighbours = Neighbours(Ports(PORTS, count=4), nexthops, resolving=True)
    index = neighbours.next_hop_for(1, "198.51.100.2")
    record = nexthops.get(index)
    assert (record.dmac, record.mtu, record.port) == (0, 0, 1)
    assert str(record.gateway) == "198.51.100.2"
    routes(router, {"10.0.0.0/8": index})
    got = run_one(router, v4("10.0.0.9"))
    assert (got.kind, got.next_hop) == ("exception", index)
    assert neighbours.set(1, "198.51.100.2", GW_MAC["198.51.100.2"], static=False) == [index]
    assert_forwarded(run_one(router, v4("10.0.0.9")), 1, GW_MAC["198.51.100.2"], PORT_MAC[1])
    assert neighbours.forget(1, "198.51.100.2") == [index]
    assert neighbours.get(1, "198.51.100.2") is None and nexthops.get(index).mtu == 0
    assert run_one(router, v4("10.0.0.9")).kind == "exception"
    with pytest.raises(NeighbourError, match="no neighbour"):
        neighbours.forget(1, "198.51.100.2")
    static = Neighbours(Ports(PORTS, count=4), NextHopTable(np.zeros(64, np.uint32), ports=4))
    with pytest.raises(NeighbourError, match="add its MAC first"):
        static.next_hop_for(1, "198.51.100.2")


def test_writes_redirected_to_another_memory_reproduce_the_table(router):
    """The chip path: the table writes a host shadow and hands each write to `writer`,
    here copying into the native router's memory."""
    live = router.region("nexthops")
    shadow = np.zeros_like(live)

    def copy(name: str, at: int, values: list[int]) -> None:
        live[at:at + len(values)] = values

    nexthops = NextHopTable(shadow, ports=4, writer=copy)
    neighbours = Neighbours(Ports(PORTS, count=4), nexthops)
    neighbours.set(3, "203.0.113.130", GW_MAC["203.0.113.130"])
    index = neighbours.next_hop_for(3, "203.0.113.130")
    routes(router, {"10.0.0.0/8": index})
    assert_forwarded(run_one(router, v4("10.0.0.9", 576)), 3, GW_MAC["203.0.113.130"],
                     PORT_MAC[3])
    assert np.array_equal(shadow, live)


def test_table_api(router):
    nexthops, _, _ = tables(router)
    a, b = NextHop(0x020000000001, 0x0200000000A0, 0), NextHop(0x020000000002, 0x0200000000A1, 1)
    nexthops.set(0, a)
    nexthops.set(2, b)
    assert nexthops.allocate() == 1 and nexthops.allocate(start=2) == 3
    assert list(nexthops) == [(0, a), (2, b)] and nexthops.get(1) is None
    assert nexthops.read(2) == b  # from the words
    nexthops.delete(0)
    assert list(nexthops) == [(2, b)] and nexthops.read(0) == NextHop(0, 0, 0, 0)


@pytest.mark.parametrize("index, nh, message", [
    (1024, NextHop(0x020000000001, 0x020000000002, 0), "outside the nexthops memory"),
    (0, NextHop(0x020000000001, 0x020000000002, 4), "port 4 out of range 0..3"),
    (0, NextHop(0x020000000001, 0x020000000002, 0, 67), "MTU 67 out of range 68..65535"),
    (0, NextHop(0x020000000001, 0x020000000002, 0, 65536), "out of range 68..65535"),
    (0, NextHop(0x020000000001, 0x020000000002, 0, 1279,
                ipaddress.ip_address("2001:db8::2")), "below the IPv6 minimum 1280"),
    (0, NextHop(0x010000000001, 0x020000000002, 0), "group \\(multicast\\)"),
    (0, NextHop(0, 0x020000000002, 0), "not a 48-bit MAC"),
])
def test_next_hop_validation(router, index, nh, message):
    nexthops, _, _ = tables(router)
    with pytest.raises(NeighbourError, match=message):
        nexthops.set(index, nh)
    assert not router.region("nexthops").any()  # nothing written


def test_neighbour_and_port_errors(router):
    _, _, neighbours = tables(router)
    with pytest.raises(NeighbourError, match="not on a subnet of port 1"):
        neighbours.set(1, "192.0.2.9", "02:aa:00:00:00:01")
    with pytest.raises(NeighbourError, match="port 9 is not configured"):
        neighbours.set(9, "192.0.2.9", "02:aa:00:00:00:01")
    with pytest.raises(NeighbourError, match="no neighbour 198.51.100.3 on port 1"):
        neighbours.next_hop_for(1, "198.51.100.3")
    with pytest.raises(NeighbourError, match="own addresses"):
        neighbours.set(1, "198.51.100.1", "02:aa:00:00:00:01")
    neighbours.set(1, "fe80::2", "02:aa:00:00:00:01")  # IPv6 link-local is always on-link
    index = neighbours.next_hop_for(1, "fe80::2")
    with pytest.raises(NeighbourError, match="used by next hops"):
        neighbours.remove(1, "fe80::2")
    with pytest.raises(NeighbourError, match="below the IPv6 minimum"):
        Ports([PortConfig.of(0, "02:00:00:00:00:01", [], ["2001:db8::1/64"], 1000)])
    with pytest.raises(NeighbourError, match="already on port 0"):
        Ports([PortConfig.of(0, "02:00:00:00:00:01", ["192.0.2.1/24"]),
               PortConfig.of(1, "02:00:00:00:00:02", ["192.0.2.1/24"])])
    # lowering port 1's MTU below 1280 would break the IPv6 next hop: refused, nothing written
    before = router.region("nexthops")[4 * index:4 * index + 4].copy()
    with pytest.raises(NeighbourError, match="IPv6 minimum"):
        neighbours.set_port(PortConfig.of(1, PORT_MAC[1], ["198.51.100.1/24"], [], 1000))
    assert np.array_equal(router.region("nexthops")[4 * index:4 * index + 4], before)


# ---- the router's own addresses ----------------------------------------------------------

def test_ports_feed_local_addresses_and_packets_become_for_router(router):
    _, local, neighbours = tables(router)
    neighbours.set(1, "198.51.100.2", GW_MAC["198.51.100.2"])
    neighbours.set(1, "2001:db8:0:b::2", GW_MAC["2001:db8:0:b::2"])
    routes(router, {"0.0.0.0/0": neighbours.next_hop_for(1, "198.51.100.2"),
                    "::/0": neighbours.next_hop_for(1, "2001:db8:0:b::2")})
    mine = neighbours.ports.router_addresses()
    assert len(mine) == 7
    for a in mine:
        local.add(a)
    for a in mine:
        frame = v4(str(a)) if a.version == 4 else v6(str(a))
        got = run_one(router, frame)
        assert (got.kind, got.code) == ("exception", FOR_ROUTER if a.version == 4
                                        else FOR_ROUTER6)
    assert run_one(router, v4("192.0.2.2")).kind == "forward"
    local.remove("192.0.2.1")
    local.remove("2001:db8:0:a::1")
    assert run_one(router, v4("192.0.2.1")).kind == "forward"
    assert run_one(router, v6("2001:db8:0:a::1")).kind == "forward"
    assert run_one(router, v4("198.51.100.1")).code == FOR_ROUTER
    assert "192.0.2.1" not in local and local.contains("198.51.100.1")


def test_home_hash_is_the_data_planes():
    for key in (0, 1, 0xC0000201, 0xFFFFFFFF):
        assert home_hash(key, 1) == exact_hash(key, 1)
    key6 = int(ipaddress.ip_address("2001:db8::1"))
    assert home_hash(key6, 4) == exact_hash(key6, 4)


def colliding(family: int, homes: tuple[int, ...], per_home: int) -> list[str]:
    """Addresses whose home slot (the data plane's exact_hash, 16 slots) is in `homes`."""
    found: dict[int, list[str]] = {h: [] for h in homes}
    base = int(ipaddress.ip_address("10.0.0.0" if family == 4 else "2001:db8:1::"))
    words = 1 if family == 4 else 4
    n = 1
    while any(len(v) < per_home for v in found.values()):
        home = exact_hash(base + n, words) & 15
        if home in found and len(found[home]) < per_home:
            found[home].append(str(ipaddress.ip_address(base + n)))
        n += 1
    return [a for h in homes for a in found[h]]


# clusters that wrap around the end of the table, and a separate one
POOL4 = colliding(4, (14, 15, 0, 6), 5)
POOL6 = colliding(6, (15, 0, 3), 5)


def check_local(router, local: LocalAddresses, model: set[str], pool: list[str]) -> None:
    six = ":" in pool[0]
    frames = [v6(a) if six else v4(a) for a in pool]
    for a, got in zip(pool, router.run(frames, in_ports=0), strict=True):
        expected = (FOR_ROUTER6 if six else FOR_ROUTER) if a in model else \
            (NO_ROUTE6 if six else NO_ROUTE)
        assert (got.kind, got.code) == ("exception", expected), a
        assert local.contains(a) == (a in model)


def local_property(native, pool: list[str], ops: list[tuple[bool, int]]) -> None:
    for name in ("local4", "local6"):
        native.region(name)[:] = 0
    local = LocalAddresses(native.region("local4"), native.region("local6"))
    model: set[str] = set()
    for add, i in ops:
        a = pool[i % len(pool)]
        if add:
            if a not in model and len(model) == 16:
                with pytest.raises(NeighbourError, match="table is full"):
                    local.add(a)
                continue
            assert local.add(a) == (a not in model)
            model.add(a)
        else:
            assert local.remove(a) == (a in model)
            model.discard(a)
    check_local(native, local, model, pool)


OPS = st.lists(st.tuples(st.booleans(), st.integers(0, 63)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops=OPS)
def test_local4_random_add_remove_matches_a_set(native, ops):
    RouteTables.of(native).load({}, {})
    local_property(native, POOL4, ops)


@settings(max_examples=100, deadline=None)
@given(ops=OPS)
def test_local6_random_add_remove_matches_a_set(native, ops):
    RouteTables.of(native).load({}, {})
    local_property(native, POOL6, ops)


def test_removal_from_the_middle_of_a_wrapping_cluster(router):
    local = LocalAddresses(router.region("local4"), router.region("local6"))
    cluster = colliding(4, (15,), 4)  # homes 15: occupies 15, 0, 1, 2
    for a in cluster:
        local.add(a)
    local.remove(cluster[1])
    check_local(router, local, set(cluster) - {cluster[1]}, cluster)
    local.remove(cluster[0])
    check_local(router, local, {cluster[2], cluster[3]}, cluster)


def test_full_local_table(router):
    local = LocalAddresses(router.region("local4"), router.region("local6"))
    for n in range(16):
        local.add(f"10.0.0.{n + 1}")
    with pytest.raises(NeighbourError, match="local4 table is full \\(16 addresses\\)"):
        local.add("10.0.0.200")
    assert local.add("10.0.0.5") is False  # present already: no slot needed
    local.sync(["10.0.1.1", "2001:db8::1"])
    assert [str(a) for a in local.addresses()] == ["10.0.1.1", "2001:db8::1"]
    with pytest.raises(NeighbourError, match="not an IPv4 or IPv6 address"):
        local.add("10.0.0.256")


def test_mac_helpers_round_trip():
    assert mac_to_int("02:AA:00:00:00:01") == 0x02AA00000001
