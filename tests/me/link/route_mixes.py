"""Hypothesis strategies for the router differential tests: random route tables that stress
the 16-8-8 / 16-8-...-8 tries (docs/lpm.md) and packet mixes aimed at those tables, plus
an independent longest-prefix-match reference (a linear scan) to check the native side."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv6Address

from hypothesis import strategies as st
from scapy.all import ARP, IP, UDP, Ether, IPv6, IPv6ExtHdrHopByHop, raw

V4_BITS, V6_BITS = 32, 128
# Key bits consumed after each trie level: the root takes 16, every ply 8 (docs/lpm.md).
V4_LEVELS = (16, 24, 32)
V6_LEVELS = tuple(range(16, 129, 8))
NEXTHOP_SLOTS = 1024                 # `nexthops` in microblocks/router_common.mbl
OUT_PORTS = (0, 1)                   # the linker maps exactly two ports
LOCAL_SLOTS = 8                      # of the 16-entry local4 / local6 hash tables
DMAC_BASE, SMAC_BASE = 0x02AA_0000_0000, 0x02BB_0000_0000
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}
MTUS = (0, 1, 68, 300, 576, 600, 1000, 1280, 1499, 1500, 9000, 65535)
MAX_IP_BYTES = 1500                  # frames stay within a standard Ethernet frame


@dataclass(frozen=True)
class NextHop:
    port: int
    mtu: int

    def record(self, index: int) -> dict[str, int]:
        """The `nexthop_t` fields; the MACs name the index so an output frame tells which
        next hop forwarded it."""
        return {"dmac": DMAC_BASE | index, "smac": SMAC_BASE | index,
                "port": self.port, "mtu": self.mtu}


@dataclass(frozen=True)
class RouteOp:
    """A single-route update after the bulk build: add (next_hop set) or delete."""

    family: int                      # 4 or 6
    prefix: tuple[int, int]
    next_hop: int | None


@dataclass
class RouterTables:
    """What the control plane loads: built routes, updates applied after, next hops,
    local addresses.  With `fill_seed` every next-hop slot gets a seeded record, `hops` on
    top (kept apart so a failing case prints short).  Derived: `nexthops`, and `final4` /
    `final6`, the routes once the updates are in."""

    v4: dict[tuple[int, int], int]
    v6: dict[tuple[int, int], int]
    updates: list[RouteOp]
    hops: dict[int, NextHop]
    fill_seed: int | None
    local4: list[int]
    local6: list[int]
    nexthops: dict[int, NextHop] = field(init=False)
    final4: dict[tuple[int, int], int] = field(init=False)
    final6: dict[tuple[int, int], int] = field(init=False)

    def __post_init__(self) -> None:
        self.nexthops = dict(self.hops)
        if self.fill_seed is not None:
            rng = random.Random(self.fill_seed)
            self.nexthops = {i: NextHop(rng.choice(OUT_PORTS), rng.choice(MTUS))
                             for i in range(NEXTHOP_SLOTS)} | self.hops
        self.final4, self.final6 = dict(self.v4), dict(self.v6)
        for op in self.updates:
            routes = self.final4 if op.family == 4 else self.final6
            if op.next_hop is None:
                del routes[op.prefix]
            else:
                routes[op.prefix] = op.next_hop

    def describe(self) -> str:
        """A readable dump for a failing example."""
        def prefixes(routes: dict[tuple[int, int], int], bits: int) -> str:
            width = bits // 4
            return ", ".join(f"{v:0{width}x}/{n}->{h}" for (v, n), h in sorted(routes.items()))
        hops = ", ".join(f"{i}:p{h.port}/mtu{h.mtu}" for i, h in sorted(self.hops.items()))
        return (f"v4 [{prefixes(self.v4, V4_BITS)}]\nv6 [{prefixes(self.v6, V6_BITS)}]\n"
                f"updates {self.updates}\nnexthops {{{hops}}} fill_seed {self.fill_seed}\n"
                f"local4 {[hex(a) for a in self.local4]} local6 {[hex(a) for a in self.local6]}")


def mask(value: int, length: int, bits: int) -> int:
    """The network of value/length."""
    return value & ~((1 << (bits - length)) - 1) & ((1 << bits) - 1)


def longest_match(routes: dict[tuple[int, int], int], address: int, bits: int) -> int | None:
    """The reference lookup: scan every route, keep the longest that covers address."""
    best, hop = -1, None
    for (network, length), next_hop in routes.items():
        if length > best and mask(address, length, bits) == network:
            best, hop = length, next_hop
    return hop


# ---- route tables ----

def prefix_lengths(bits: int, levels: tuple[int, ...]) -> st.SearchStrategy[int]:
    """Any length, but mostly the trie's level boundaries and one off them (where a route
    ends exactly at a ply edge or spills one bit into the next ply)."""
    edges = sorted({n for level in levels for n in (level - 1, level, level + 1)
                    if n <= bits})
    return st.one_of(st.sampled_from(edges), st.integers(0, bits))


def uniform_bits(bits: int) -> st.SearchStrategy[int]:
    """Any `bits`-bit value, its bits spread over the whole width (hypothesis' integers
    favour small values, which would crowd the addresses into 0/8 and ::/16)."""
    return st.binary(min_size=bits // 8, max_size=bits // 8).map(
        lambda b: int.from_bytes(b, "big"))


def v4_anchor() -> st.SearchStrategy[int]:
    """Mostly unicast space (1/8..223/8 but 127/8), sometimes anything."""
    first = st.sampled_from([a for a in range(1, 224) if a != 127])
    unicast = st.builds(lambda top, rest: top << 24 | rest, first, uniform_bits(24))
    return st.one_of(unicast, unicast, unicast, uniform_bits(32))


def v6_anchor() -> st.SearchStrategy[int]:
    """Mostly global unicast under a few well-known /16s, sometimes anything."""
    top = st.sampled_from([0x2001, 0x2400, 0x2A00, 0x3FFF])
    structured = st.builds(lambda t, rest: (t << 112) | rest, top, uniform_bits(112))
    return st.one_of(structured, structured, uniform_bits(128))


@st.composite
def route_family(draw: st.DrawFn, bits: int, levels: tuple[int, ...],
                 anchor: st.SearchStrategy[int],
                 next_hop: st.SearchStrategy[int]) -> dict[tuple[int, int], int]:
    """Prefixes clustered on a few anchor addresses, so they nest (one anchor at many
    lengths) and have siblings (one bit flipped just above the prefix end)."""
    anchors = draw(st.lists(anchor, min_size=1, max_size=4))
    routes: dict[tuple[int, int], int] = {}
    if draw(st.integers(0, 2)) == 0:
        routes[(0, 0)] = draw(next_hop)              # a default route, or (mostly) none
    for _ in range(draw(st.integers(0, 24))):
        length = draw(prefix_lengths(bits, levels))
        base = draw(st.sampled_from(anchors))
        if length and draw(st.integers(0, 3)) == 0:
            base ^= 1 << (bits - draw(st.integers(1, length)))   # a sibling or cousin
        routes[(mask(base, length, bits), length)] = draw(next_hop)
    return routes


@st.composite
def route_updates(draw: st.DrawFn, tables: tuple[dict, dict],
                  next_hop: st.SearchStrategy[int]) -> list[RouteOp]:
    """Adds and deletes after the build: the trie then holds plies that updates split,
    collapsed and retired, not only the bulk builder's layout."""
    current = {4: dict(tables[0]), 6: dict(tables[1])}
    ops = []
    for _ in range(draw(st.integers(0, 8))):
        family = draw(st.sampled_from([4, 6]))
        routes, bits = current[family], V4_BITS if family == 4 else V6_BITS
        if routes and draw(st.booleans()):
            prefix = draw(st.sampled_from(sorted(routes)))
            del routes[prefix]
            ops.append(RouteOp(family, prefix, None))
            continue
        levels = V4_LEVELS if family == 4 else V6_LEVELS
        length = draw(prefix_lengths(bits, levels))
        near = [v for v, _ in routes] or [0]
        base = draw(st.sampled_from(sorted(near))) ^ draw(uniform_bits(bits)) \
            * draw(st.sampled_from([0, 0, 1]))
        prefix = (mask(base, length, bits), length)
        routes[prefix] = draw(next_hop)
        ops.append(RouteOp(family, prefix, routes[prefix]))
    return ops


HOP = st.builds(NextHop, st.sampled_from(OUT_PORTS),
                st.one_of(st.sampled_from(MTUS), st.integers(0, 1600)))


@st.composite
def router_tables(draw: st.DrawFn) -> RouterTables:
    # a few drawn next hops, or every slot filled (a seeded pattern) with those on top;
    # slots left out stay zero: port 0, MTU 0
    hops = draw(st.dictionaries(st.integers(0, NEXTHOP_SLOTS - 1), HOP, max_size=12))
    fill_seed = draw(st.one_of(st.none(), st.integers(0, 2**16)))
    used = sorted(hops) if fill_seed is None else list(range(NEXTHOP_SLOTS))
    used = used or [0]
    # mostly next hops that exist, sometimes a slot never written (MTU 0), or an index
    # past the table (a trie leaf holds 16 bits; MBL masks an array index to the size)
    next_hop = st.one_of(st.sampled_from(used), st.sampled_from(used), st.sampled_from(used),
                         st.integers(0, NEXTHOP_SLOTS - 1), st.integers(0, 0xFFFF))
    v4 = draw(route_family(V4_BITS, V4_LEVELS, v4_anchor(), next_hop))
    v6 = draw(route_family(V6_BITS, V6_LEVELS, v6_anchor(), next_hop))
    updates = draw(route_updates((v4, v6), next_hop))
    local4 = draw(st.lists(st.sampled_from(interesting(v4, V4_BITS)), max_size=LOCAL_SLOTS,
                           unique=True))
    local6 = draw(st.lists(st.sampled_from(interesting(v6, V6_BITS)), max_size=LOCAL_SLOTS,
                           unique=True))
    return RouterTables(v4, v6, updates, hops, fill_seed, local4, local6)


# ---- destinations and frames ----

def interesting(routes: dict[tuple[int, int], int], bits: int) -> list[int]:
    """Addresses at and just outside every prefix's edges, and across the trie's level
    boundaries inside it.  Never empty."""
    top = (1 << bits) - 1
    out = {1 << (bits - 1) | 1}
    for network, length in routes:
        last = network | (top >> length)
        out.update({network, last, (network - 1) & top, (last + 1) & top})
        if length < bits:
            out.add(network ^ (1 << (bits - length - 1)))        # the other half
        out.update(network ^ (1 << (bits - b)) for b in (16, 17, 24, 25) if b > length)
    return sorted(out)


def martian4(address: int) -> bool:
    return address >> 24 in (0, 127) or address >> 28 == 0xF


def destination(tables: RouterTables, family: int) -> st.SearchStrategy[int]:
    bits = V4_BITS if family == 4 else V6_BITS
    routes = {**(tables.v4 if family == 4 else tables.v6),
              **(tables.final4 if family == 4 else tables.final6)}
    local = tables.local4 if family == 4 else tables.local6
    inside = [st.builds(lambda host, n=n, length=length: n | (host >> length),
                        uniform_bits(bits)) for n, length in routes]
    edges = interesting(routes, bits)
    # mostly destinations the router looks up (not 0/8, 127/8, 240/4: dropped before that)
    routable = [a for a in edges if family == 6 or not martian4(a)] or edges
    choices = [st.sampled_from(routable)] * 3 + [st.sampled_from(edges)] + inside[:8]
    if local:
        choices.append(st.sampled_from(local))
    choices.append(uniform_bits(bits))
    return st.one_of(choices)


def ip_bytes(tables: RouterTables) -> st.SearchStrategy[int]:
    """IP packet sizes: mostly just at, under and over a next hop's MTU."""
    mtus = sorted({h.mtu for h in tables.nexthops.values()} | {0})
    edge = st.builds(lambda m, d: min(max(m + d, 28), MAX_IP_BYTES),
                     st.sampled_from(mtus), st.sampled_from([-1, 0, 1]))
    return st.one_of(edge, edge, st.integers(28, MAX_IP_BYTES))


# mostly sources the routers accept; the rest are martians they drop
V4_SOURCES = ["198.18.0.1", "223.255.0.1"] * 8 + ["0.1.2.3", "127.0.0.1", "240.0.0.1"]
V6_SOURCES = ["2001:db8:ffff::1", "2a00::5"] * 8 + ["::", "ff02::1", "fe80::1"]
TTLS = [64] * 6 + [0, 1, 2, 255]


def v4_frame(draw: st.DrawFn, tables: RouterTables, uid: int) -> bytes:
    dst = str(IPv4Address(draw(destination(tables, 4))))
    size = draw(ip_bytes(tables))
    ip = IP(src=draw(st.sampled_from(V4_SOURCES)), dst=dst,
            ttl=draw(st.sampled_from(TTLS)), id=uid & 0xFFFF,
            flags=draw(st.sampled_from([0, 2])))
    if draw(st.integers(0, 9)) == 0:
        ip.options = b"\x01\x01\x01\x00"             # IHL 6: the slow path
    header = 20 + len(ip.options)
    pad = b"\x00" * draw(st.sampled_from([0, 0, 0, 3]))   # Ethernet padding after the IP
    return raw(Ether(**MACS) / ip / UDP(sport=uid >> 16, dport=uid & 0xFFFF)
               / (b"p" * max(0, size - header - 8))) + pad


def v6_frame(draw: st.DrawFn, tables: RouterTables, uid: int) -> bytes:
    dst = str(IPv6Address(draw(destination(tables, 6))))
    size = draw(ip_bytes(tables))
    ip = IPv6(src=draw(st.sampled_from(V6_SOURCES)), dst=dst,
              hlim=draw(st.sampled_from(TTLS)), fl=uid & 0xFFFFF)
    body = UDP(sport=uid >> 16, dport=uid & 0xFFFF) / (b"q" * max(0, size - 48))
    if draw(st.integers(0, 9)) == 0:
        body = IPv6ExtHdrHopByHop() / body
    return raw(Ether(**MACS) / ip / body)


def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """A header bit flipped, a length field lying, or the frame cut short."""
    out = bytearray(data)
    how = draw(st.sampled_from(["flip", "flip", "length", "cut"]))
    if how == "flip":
        out[draw(st.integers(14, min(53, len(out) - 1)))] ^= 1 << draw(st.integers(0, 7))
    elif how == "length":
        at = 16 if out[12:14] == b"\x08\x00" else 18      # total / payload length
        out[at:at + 2] = draw(st.integers(0, 0xFFFF)).to_bytes(2, "big")
    else:
        out = out[:draw(st.integers(1, len(out) - 1))]
    return bytes(out)


@st.composite
def frame(draw: st.DrawFn, tables: RouterTables, uid: int) -> bytes:
    kind = draw(st.sampled_from(["v4"] * 6 + ["v6"] * 4 + ["bad4", "bad6", "runt", "arp"]))
    if kind == "runt":
        return draw(st.binary(min_size=1, max_size=20))
    if kind == "arp":
        return raw(Ether(**MACS) / ARP())
    data = (v4_frame if kind.endswith("4") else v6_frame)(draw, tables, uid)
    return damaged(draw, data) if kind.startswith("bad") else data


@st.composite
def scenario(draw: st.DrawFn, max_frames: int) -> tuple[RouterTables, dict[int, list[bytes]]]:
    """A route table and, per input port, a frame mix aimed at it."""
    tables = draw(router_tables())
    frames = {p: [draw(frame(tables, (p << 12) | i))
                  for i in range(draw(st.integers(1 - p, max_frames)))] for p in OUT_PORTS}
    return tables, frames
