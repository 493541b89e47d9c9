"""The XScale control plane driving the compiled MBL router (runtime/compiled_router.py):
examples/router/router.mbl compiled by the ME backend, linked, run on the simulated chip,
its tables changed in simulated time through the XScale model.

References: a brute-force longest-prefix match over plain dicts (written here), the
chip's SRAM against the NativeProgram shadow word for word at the linker's addresses, the
XScale's cost parameters read from the chip TOML and run through a posted-write recurrence
written here, scapy for the exception path's replies."""

from __future__ import annotations

import math
import random
import struct
import tomllib
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from router_structures import router_with
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import checksum as scapy_checksum

from npkit.bench.lab.updates import max_update_rate
from npkit.link import Manifest
from npkit.link.program import ProgramMemory
from npkit.runtime.compiled import paced, wire_seconds
from npkit.runtime.compiled_router import (
    CompiledRouter,
    at_rate,
    barriers_within,
    link_router,
    sram_runs,
    update_rate,
)
from npkit.runtime.loader import leak_check
from npkit.runtime.lpm import FIB4_MEMORY, POPTRIE4_MEMORY, route_memories
from npkit.runtime.neighbours import NextHop
from npkit.runtime.route_manager import RouteUpdate
from npkit.runtime.router_config import RouterConfig
from npkit.runtime.routes import generate_routes, write_routes
from npkit.sim.packets import ListSink, ListSource, RxFrame

REPO = Path(__file__).resolve().parents[2]
ROUTER = REPO / "examples/router/router.mbl"
CONFIG = REPO / "examples/router4/control.toml"       # 2 ports, as the linked router has
CHIP_TOML = REPO / "sim/chips/ixp2800.toml"

CLOCK_HZ = 1.4e9
LINE_BPS = 10e9
LOAD = 0.5                    # below the compiled router's lossless 71 % (docs/me-backend.md)
PORT_MAC = {0: 0x020000000010, 1: 0x020000000011}
# four next hops, two per port: index -> (dmac, port)
HOPS = {1: (0x02AA00000001, 0), 2: (0x02AA00000002, 0), 3: (0x02AA00000003, 1),
        4: (0x02AA00000004, 1)}
V6_BASE = 0x20010DB8 << 96


@pytest.fixture(scope="module")
def linked() -> Manifest:
    return link_router(ROUTER)


def linked_with(structure: str, linked: Manifest, tmp_path_factory) -> Manifest:
    """The default router when it has `structure`, else a copy with it linked."""
    names = route_memories(m.name for m in linked.program.memories)
    if names[0] == {"16-8-8": FIB4_MEMORY, "poptrie": POPTRIE4_MEMORY}[structure]:
        return linked
    return link_router(router_with(structure, tmp_path_factory.mktemp(structure)))


@pytest.fixture(scope="module")
def trie_linked(linked, tmp_path_factory) -> Manifest:
    """The router with microblocks/lpm.mbl's 16-8-8 tries, on 64 MB SRAM channels."""
    manifest = linked_with("16-8-8", linked, tmp_path_factory)
    assert manifest.overrides == {"sram": {"channel_bytes": 64 << 20}}
    return manifest


@pytest.fixture(scope="module")
def poptrie_linked(linked, tmp_path_factory) -> Manifest:
    """The router with microblocks/lpm_poptrie.mbl's tables, on the preset's 8 MB channels."""
    manifest = linked_with("poptrie", linked, tmp_path_factory)
    assert manifest.overrides == {}
    return manifest


def with_next_hops(linked: Manifest, **kw) -> CompiledRouter:
    router = CompiledRouter(linked=linked, **kw)
    for index, (dmac, port) in HOPS.items():
        router.control.nexthops.set(index, NextHop(dmac, PORT_MAC[port], port, 1500))
    return router


# --------------------------------------------------------------------------- reference
def brute_force_lpm(routes: dict[tuple[int, int], int], address: int, bits: int
                    ) -> int | None:
    for length in range(bits, -1, -1):
        network = address >> (bits - length) << (bits - length)
        if (network, length) in routes:
            return routes[(network, length)]
    return None


def possible_versions(starts: list[int], ends: list[int], first: int, last: int) -> range:
    """Table versions (0 = before any update, k = after update k) a lookup made between
    cycles `first` and `last` may have seen: version k from the start of update k until
    update k + 1 has ended."""
    latest = sum(1 for s in starts if s <= last)
    earliest = sum(1 for e in ends if e < first)
    return range(earliest, latest + 1)


# --------------------------------------------------------------------------- frames
def udp4(dst: int, key: int, port: int) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, key & 0xFFFF, 0, 64, 17, 0,
                         bytes([198, 18, 0, 1]), dst.to_bytes(4, "big"))
    header = header[:10] + struct.pack("!H", scapy_checksum(header)) + header[12:]
    return eth(port, 0x0800) + header + struct.pack("!HHHHI", 7, 9, 26, 0, key) + bytes(14)


def udp6(dst: int, key: int, port: int) -> bytes:
    header = struct.pack("!IHBB16s16s", 6 << 28, 26, 17, 64,
                         (V6_BASE | 0xFFFF << 80 | 1).to_bytes(16, "big"),
                         dst.to_bytes(16, "big"))
    return eth(port, 0x86DD) + header + struct.pack("!HHHHI", 7, 9, 26, 0, key) + bytes(14)


def eth(port: int, ethertype: int) -> bytes:
    return (PORT_MAC[port].to_bytes(6, "big") + bytes.fromhex("020000000099")
            + struct.pack("!H", ethertype))


def frame_key(data: bytes) -> int:
    l4 = 14 + (20 if data[12:14] == b"\x08\x00" else 40)
    return struct.unpack("!I", data[l4 + 8:l4 + 12])[0]


def attach(router: CompiledRouter, frames: dict[int, list[RxFrame]]) -> dict[int, ListSink]:
    sinks = {p: ListSink() for p in (0, 1)}
    for port, sink in sinks.items():
        router.chip.attach_sink(port, sink)
    for port, port_frames in frames.items():
        router.chip.attach_source(port, ListSource(port_frames))
    return sinks


# --------------------------------------------------------------------------- tests
def test_writes_follow_the_memory_map_across_sram_channels() -> None:
    fib6 = ProgramMemory("fib6_trie", "sram", 32 << 20, 64 << 20)    # channels 0 and 1
    quarter = (32 << 20) // 4                # words of fib6 on channel 0
    runs = sram_runs(fib6, np.array([0, quarter - 1, quarter, quarter + 5, 3]))
    assert [(r.channel, r.positions, r.words.tolist()) for r in runs] == [
        (0, slice(0, 2), [quarter, 2 * quarter - 1]), (1, slice(2, 4), [0, 5]),
        (0, slice(4, 5), [quarter + 3])]
    assert barriers_within([0, 1, 2, 3, 5], slice(2, 4)) == [1]


def test_a_write_beyond_a_channel_lands_on_the_next(trie_linked) -> None:
    # the 16-8-8 IPv6 trie (64 MB) is the memory that spans two channels
    linked = trie_linked
    router = CompiledRouter(linked=linked, exception_path=False)
    placement = linked.program.memory("fib6_trie")
    span = placement.bytes // 4
    words = np.array([span - 1, 5, (64 << 20) // 4 - placement.address // 4 + 7])
    router.cp.process(router._write("fib6_trie", words, np.array([11, 22, 33]), [1]))
    router.run(cycles=5_000)
    channel1 = router.chip.sram(1)
    base1 = (placement.address + 4 * span - (1 << 26)) // 4          # end of fib6 on ch 1
    assert channel1[base1 - 1] == 11 and channel1[7] == 33
    assert router.chip.sram(0)[placement.address // 4 + 5] == 22


def test_exceptions_are_answered_through_the_xscale(linked) -> None:
    router = CompiledRouter(linked=linked)
    router.configure(RouterConfig.load(CONFIG))

    def from_host(dst: str, ttl: int = 64, l4=None) -> bytes:
        data = bytes(Ether(src="02:00:00:00:10:02", dst="02:00:00:00:00:10")
                     / IP(src="192.0.2.2", dst=dst, ttl=ttl, id=5)
                     / (l4 if l4 is not None else UDP(sport=7, dport=9)))
        return data + bytes(max(0, 60 - len(data)))

    expired = from_host("10.1.2.3", ttl=1)
    echo = from_host("192.0.2.1", l4=ICMP(type=8, id=77, seq=3) / b"are you there")
    sinks = attach(router, {0: [RxFrame(f) for f in (expired, echo, from_host("10.1.2.3"))]})
    router.run(cycles=300_000)
    out = [Ether(f.data) for f in sinks[0].frames]
    # 10/8 is via 192.0.2.3 on port 0, the host's own link: forwarded with a Redirect (5)
    assert sorted((f[ICMP].type if ICMP in f else -1) for f in out) == [-1, 0, 5, 11]
    exceeded = next(f for f in out if ICMP in f and f[ICMP].type == 11)
    assert (exceeded.dst, exceeded[IP].src, exceeded[IP].dst) == (
        "02:00:00:00:10:02", "192.0.2.1", "192.0.2.2")
    quoted = bytes(exceeded[ICMP].payload)
    assert len(quoted) >= 28 and quoted == expired[14:14 + len(quoted)]
    reply = next(f for f in out if ICMP in f and f[ICMP].type == 0)
    assert (reply[ICMP].id, reply[ICMP].seq) == (77, 3)
    counters = router.counters()
    assert counters["ports"][0]["exceptions"] == {"ttl_expired": 1, "for_router": 1,
                                                  "redirect": 1}
    assert counters["ports"][0]["injected"] == 4
    assert all(r.ok for r in leak_check(router.loaded)), leak_check(router.loaded)


@pytest.mark.parametrize("structure", ["16-8-8", "poptrie"])
def test_route_changes_under_traffic_follow_the_table_in_force(request, structure) -> None:
    rng = random.Random(9)
    router = with_next_hops(request.getfixturevalue(
        "trie_linked" if structure == "16-8-8" else "poptrie_linked"))
    assert router.control.routes.structure == structure
    # IPv4: 10.0.0.0/8 covers twenty /16s (deletes fall back to it); IPv6: 2001:db8::/32
    # covers twenty /48s.  Updates flip next hops, delete, and add/remove more-specifics
    # (a /24 or /56 below: new plies made and unlinked).
    v4_nets = [0x0A000000 | i << 16 for i in range(1, 21)]
    v6_nets = [V6_BASE | i << 80 for i in range(1, 21)]
    tables = {4: {(0x0A000000, 8): 1}, 6: {(V6_BASE, 32): 3}}
    for net in v4_nets[:12]:
        tables[4][(net, 16)] = rng.choice(list(HOPS))
    for net in v6_nets[:12]:
        tables[6][(net, 48)] = rng.choice(list(HOPS))
    router.control.routes.reload(tables[4], tables[6])
    router.load_tables()

    frames_per_port = 5000
    gap_s = (64 + 20) * 8 / LINE_BPS / LOAD
    sources: dict[int, list[RxFrame]] = {}
    sent: dict[int, tuple[int, int, float]] = {}
    for port in (0, 1):
        sources[port] = []
        for seq in range(frames_per_port):
            key = port << 24 | seq
            family = 6 if rng.random() < 0.3 else 4
            if family == 4:
                dst = rng.choice(v4_nets) | rng.getrandbits(16)
                data = udp4(dst, key, port)
            else:
                dst = rng.choice(v6_nets) | rng.getrandbits(80)
                data = udp6(dst, key, port)
            sources[port].append(RxFrame(data, time_s=seq * gap_s))
            sent[key] = (family, dst, seq * gap_s)
    sinks = attach(router, sources)

    versions = [{f: dict(t) for f, t in tables.items()}]
    end_cycle = int(frames_per_port * gap_s * CLOCK_HZ)
    cycle = 20_000
    while cycle < end_cycle - 150_000:
        family = rng.choice((4, 6))
        nets, length, sub = (v4_nets, 16, 24) if family == 4 else (v6_nets, 48, 56)
        net, table = rng.choice(nets), tables[family]
        kind = rng.random()
        bits = 32 if family == 4 else 128
        if kind < 0.4:
            update = RouteUpdate("add", family, net, length, rng.choice(list(HOPS)))
        elif kind < 0.6 and (net, length) in table:
            update = RouteUpdate("delete", family, net, length)
        else:
            small = rng.choice(nets[:4]) | rng.randrange(3) << (bits - sub)
            update = (RouteUpdate("delete", family, small, sub) if (small, sub) in table
                      else RouteUpdate("add", family, small, sub, rng.choice(list(HOPS))))
        if update.op == "add":
            table[(update.network, update.length)] = update.next_hop
        else:
            del table[(update.network, update.length)]
        versions.append({f: dict(t) for f, t in tables.items()})
        router.at(cycle, lambda c, u=update: c.routes.apply([u]), label=str(update))
        cycle += 12_000
    assert len(versions) > 40

    router.run(cycles=end_cycle + 200_000)
    assert len(router.records) == len(versions) - 1
    starts = [r.start for r in router.records]
    ends = [r.end for r in router.records]
    last_departure = max(f.last_bit_cycle for s in sinks.values() for f in s.frames)
    assert ends[-1] < last_departure                      # every change landed under traffic

    seen: set[int] = set()
    wire_cycles = (64 + 20) * 8 / LINE_BPS * CLOCK_HZ
    for out_port, sink in sinks.items():
        for tx in sink.frames:
            key = frame_key(tx.data)
            assert key in sent and key not in seen, key
            seen.add(key)
            family, dst, time_s = sent[key]
            arrived = int(time_s * CLOCK_HZ + wire_cycles)
            allowed = {brute_force_lpm(versions[v][family], dst, 32 if family == 4 else 128)
                       for v in possible_versions(starts, ends, arrived, tx.last_bit_cycle)}
            got = (out_port, int.from_bytes(tx.data[:6], "big"))
            assert got in {(HOPS[h][1], HOPS[h][0]) for h in allowed}, (key, got, allowed)
    counters = router.counters()
    assert len(seen) == len(sent), (len(sent) - len(seen), counters)
    assert all(r.ok for r in leak_check(router.loaded)), leak_check(router.loaded)
    # after the grace periods every unlinked ply was reclaimed, and the chip holds exactly
    # the shadow
    router.run(cycles=2 * router.grace_cycles)
    retired = "plies_retired" if structure == "16-8-8" else "words_retired"
    assert router.control.routes.stats(4)[retired] == 0
    assert router.control.routes.stats(6)[retired] == 0
    assert_chip_equals_shadow(router)


def assert_chip_equals_shadow(router: CompiledRouter) -> None:
    for placement in router.linked.program.memories:
        if placement.space != "sram":
            continue                        # scratch: the data plane's own counters
        chip = router.compiled.read_memory(placement.name)
        shadow = router.native.region(placement.name)
        differ = np.flatnonzero(chip != shadow)
        assert not len(differ), (placement.name, differ[:5])


def test_chip_memory_equals_the_native_shadow_after_every_kind_of_write(linked) -> None:
    rng = random.Random(3)
    router = CompiledRouter(linked=linked)
    router.configure(RouterConfig.load(CONFIG))
    control = router.control
    cycle, added = 10_000, []
    for i in range(40):                    # v4 and v6 routes through the XScale
        hop = rng.choice(sorted(i for i, _ in control.nexthops))
        network = rng.getrandbits(32) >> 8 << 8
        added.append(network)
        router.at(cycle, lambda c, n=network, h=hop: c.routes.add(4, n, 24, h))
        router.at(cycle, lambda c, n=i, h=hop: c.routes.add(6, V6_BASE | n << 64, 64, h))
        cycle += 20_000
    router.at(cycle, lambda c: c.routes.delete(4, added[0], 24))
    router.at(cycle, lambda c: c.neighbours.set(1, "198.51.100.2", "02:00:00:00:11:99"))
    router.at(cycle, lambda c: c.local.add("203.0.113.9"))
    router.at(cycle, lambda c: c.local.add("2001:db8::9"))
    router.run_until_changes_done(max_cycles=3_000_000)
    assert len(router.records) == 84 and sum(r.words for r in router.records) > 84
    router.run(cycles=10_000)
    assert_chip_equals_shadow(router)


def xscale_parameters() -> dict[str, float]:
    with CHIP_TOML.open("rb") as f:
        return tomllib.load(f)["xscale"]


def expected_update_cycles(words: int, work: int, x: dict[str, float]) -> int:
    """One update on an idle XScale, from the TOML: the route manager's `work` (XScale
    cycles), then one posted-write call of `words` words (call overhead, issue per word, at
    most max_posted_writes in flight, each visible the write latency after its issue)."""
    me = CLOCK_HZ / x["clock_hz"]

    def cycles(xscale: float) -> int:
        return math.ceil(xscale * me - 1e-9)

    if not words:
        return cycles(work)
    clock = cycles(work) + cycles(x["call_cycles"])
    in_flight: deque[int] = deque()
    visible = 0
    for _ in range(words):
        if len(in_flight) == x["max_posted_writes"]:
            clock = max(clock, in_flight.popleft())
        clock += cycles(x["write_issue_cycles"])
        visible = max(visible, clock + cycles(x["sram_write_cycles"]))
        in_flight.append(visible)
    return visible


def test_update_cost_is_the_xscale_models(linked) -> None:
    router = with_next_hops(linked, exception_path=False)
    router.control.routes.reload({(0x0A000000, 8): 1}, {(V6_BASE, 32): 3})
    router.load_tables()
    updates = ([RouteUpdate("add", 4, 0x0A000000 | i << 12, 20, 2 + i % 3) for i in range(8)]
               + [RouteUpdate("add", 6, V6_BASE | i << 72, 56, (1, 2, 4)[i % 3]) for i in range(8)]
               + [RouteUpdate("delete", 4, 0x0A000000 | i << 12, 20) for i in range(4)])
    gap = 100_000                          # each update starts on an idle core
    cycles = at_rate(router, updates, CLOCK_HZ / gap, router.cp.now + 1_000)
    assert cycles[1] - cycles[0] == gap
    router.run_until_changes_done(max_cycles=len(updates) * gap + 100_000)
    x = xscale_parameters()
    assert [r.start for r in router.records] == cycles
    for record in router.records:
        assert record.words > 0
        assert record.work > 0
        assert record.end - record.start == expected_update_cycles(record.words, record.work,
                                                                    x), record
    # back to back: the rate is updates over the stretch from the first start to the last
    # word visible (the stretches add up: the next update waits for the core)
    rate = update_rate(router, [RouteUpdate("add", 4, 0x0B000000 | i << 8, 24, 2)
                                for i in range(10)])
    last = router.records[-10:]
    assert rate.cycles == last[-1].end - last[0].start
    assert rate.per_second == pytest.approx(10 / (rate.cycles / CLOCK_HZ))
    alone = sum(expected_update_cycles(r.words, r.work, x) for r in last)
    assert 0.5 * alone < rate.cycles <= alone


def test_forward_applies_updates_at_a_rate_while_frames_flow(linked) -> None:
    router = with_next_hops(linked)
    router.control.routes.reload({(0x0A000000, 8): 3}, {})
    router.load_tables()
    rng = random.Random(4)
    frames = {p: [udp4(0x0A000000 | rng.randrange(12) << 16 | rng.getrandbits(16), p << 24 | i, p)
                  for i in range(1000)] for p in (0, 1)}
    # 10.x.0.0/16 flips to next hop 1 (port 0) at 100,000 updates/s from cycle 50,000
    updates = [RouteUpdate("add", 4, 0x0A000000 | i << 16, 16, 1) for i in range(256)]
    cycles = at_rate(router, updates, 100_000, 50_000)
    assert cycles[1] - cycles[0] == 14_000
    result = router.forward(frames, load=LOAD)
    landed = [r for r in router.records if r.end <= result.cycles]
    assert 0 < len(landed) < len(updates)
    assert sum(len(v) for v in result.out.values()) == 2000 and result.leak_free
    # a frame's lookup is between its arrival and its departure: one that left before
    # the update of its /16 began went by the /8 (port 1), one that arrived after that
    # update landed went by port 0
    ports = router.chip.config.ports
    arrival = {p: [int((rx.time_s + wire_seconds(len(rx.data), ports[p])) * CLOCK_HZ)
                   for rx in paced(frames[p], LOAD, ports[p])] for p in (0, 1)}
    checked = {0: 0, 1: 0}
    for q, out in result.out.items():
        for tx in out:
            key = frame_key(tx.data)
            index = tx.data[14 + 17]                        # the /16's update
            if index >= len(router.records) or tx.last_bit_cycle < router.records[index].start:
                assert q == 1, key
                checked[1] += 1
            elif arrival[key >> 24][key & 0xFFFFFF] > router.records[index].end:
                assert q == 0, key
                checked[0] += 1
    assert min(checked.values()) > 100, checked


@pytest.mark.parametrize("family", [4, 6])
def test_max_update_rate_on_a_small_table(linked, family, tmp_path) -> None:
    table = generate_routes(family, 3000, seed=11)
    path = tmp_path / f"routes{family}.txt"
    write_routes(path, table, family)
    rate = max_update_rate(linked, family, count=60, seed=5, table=path)
    assert (rate.family, rate.updates) == (family, 60) and rate.words > 0
    assert rate.per_second == pytest.approx(60 / (rate.cycles / CLOCK_HZ))
    # never faster than the route manager's own work per update on the XScale
    x = xscale_parameters()
    assert rate.work > 0 and rate.per_second < x["clock_hz"] / (rate.work / rate.updates)


def test_the_xscale_buffers_have_a_queue_of_their_own_on_four_ports() -> None:
    """Four ports put two receive freelists on a channel (queues 0 and 1); the XScale's
    buffers on that channel once shared queue 1 with port 3, so every buffer it injected
    landed in port 3's pool.  After exceptions, each freelist is whole and distinct."""
    router = CompiledRouter(linked=link_router(ROUTER, "ixp2800-4x10gbe"))
    router.configure(RouterConfig.load(CONFIG))
    frame = bytes(Ether(src="02:00:00:00:10:02", dst="02:00:00:00:00:10")
                  / IP(src="192.0.2.2", dst="10.1.2.3", ttl=1) / UDP(sport=7, dport=9))
    attach(router, {0: [RxFrame(frame + bytes(60 - len(frame)))] * 3})
    router.run(cycles=200_000)
    assert router.counters()["ports"][0]["injected"] == 3
    reports = leak_check(router.loaded)
    assert len({(r.channel, r.queue) for r in reports}) == len(reports) == 5
    assert all(r.ok for r in reports), reports
