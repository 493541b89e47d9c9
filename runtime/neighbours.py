"""Ports, neighbours, next hops and the router's own addresses (docs/control-plane.md).

The data-plane side of these tables lives in the program's memories (`nexthops`, `local4`,
`local6` in microblocks/router_common.mbl); this module keeps the control plane's view and
writes those words.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from npkit.base.errors import NpkitError

IPv4If = ipaddress.IPv4Interface
IPv6If = ipaddress.IPv6Interface


def mac_to_int(mac: str | int) -> int:
    """A MAC address as a 48-bit integer ("02:00:00:00:00:01" or an int)."""
    if isinstance(mac, int):
        if not 0 <= mac < 1 << 48:
            raise ValueError(f"MAC address {mac:#x} does not fit 48 bits")
        return mac
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"bad MAC address {mac!r}: expected six hex bytes like 02:00:00:00:00:01")
    try:
        return int("".join(parts), 16)
    except ValueError:
        raise ValueError(f"bad MAC address {mac!r}: expected hex bytes") from None


def mac_to_str(mac: int) -> str:
    return ":".join(f"{(mac >> (8 * k)) & 0xFF:02x}" for k in range(5, -1, -1))


@dataclass(frozen=True)
class PortConfig:
    """One router port: its MAC, its IPv4/IPv6 interface addresses and its IP MTU."""

    port: int
    mac: int
    ipv4: tuple[IPv4If, ...] = ()
    ipv6: tuple[IPv6If, ...] = ()
    mtu: int = 1500

    @classmethod
    def of(cls, port: int, mac: str | int, ipv4: list[str] | tuple[str, ...] = (),
           ipv6: list[str] | tuple[str, ...] = (), mtu: int = 1500) -> PortConfig:
        return cls(port, mac_to_int(mac), tuple(IPv4If(a) for a in ipv4),
                   tuple(IPv6If(a) for a in ipv6), mtu)


@dataclass(frozen=True)
class NextHop:
    """A next hop as the data plane reads it: Ethernet rewrite, output port, link IP MTU."""

    dmac: int
    smac: int
    port: int
    mtu: int = 1500
    gateway: ipaddress.IPv4Address | ipaddress.IPv6Address | None = field(default=None,
                                                                         compare=False)


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
# writer(memory name, word index within that memory, values): where a table write goes
# besides the words array (e.g. the XScale model's timed SRAM writes on the chip).
Writer = Callable[[str, int, Sequence[int]], None]

NEXTHOP_WORDS = 4          # nexthop_t: 48 + 48 + 16 + 16 bits
MIN_MTU_V4 = 68            # RFC 791: every IPv4 link carries 68-byte datagrams
MIN_MTU_V6 = 1280          # RFC 8200 section 5: the IPv6 minimum link MTU
MAX_MTU = 0xFFFF           # nexthop_t.mtu is bit<16>
GLEAN_MTU = 0              # a connected prefix's next hop: every packet to the slow path
MAX_PORTS = 1 << 16        # nexthop_t.port is bit<16>
HASH_VALID = 0x8000_0000   # header bit of a hash-table entry (docs/language.md "Memories")
HASH_MULTIPLIER = 0x9E3779B1


class NeighbourError(NpkitError, ValueError):
    """A bad port, next hop, neighbour or address; the message says what and what to do."""


def _address(address: str | int | IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return address
    try:
        return ipaddress.ip_address(address)
    except ValueError:
        raise NeighbourError(f"{address!r} is not an IPv4 or IPv6 address") from None


def _unicast_mac(mac: int, what: str) -> None:
    if not 0 < mac < 1 << 48:
        raise NeighbourError(f"{what} {mac:#x} is not a 48-bit MAC address")
    if mac >> 40 & 1:  # I/G bit of the first octet
        raise NeighbourError(f"{what} {mac_to_str(mac)} is a group (multicast) address: "
                             "give a unicast MAC")


# ---- next hops --------------------------------------------------------------------------

def pack_next_hop(nh: NextHop) -> tuple[int, int, int, int]:
    """The 4 words of nexthop_t: the fields packed MSB first, dmac in bits 127..80, smac in
    79..32, port in 31..16, mtu in 15..0 of the 128-bit record."""
    return (nh.dmac >> 16,
            (nh.dmac & 0xFFFF) << 16 | nh.smac >> 32,
            nh.smac & 0xFFFF_FFFF,
            nh.port << 16 | nh.mtu)


def unpack_next_hop(words: Sequence[int]) -> NextHop:
    w0, w1, w2, w3 = (int(w) for w in words)
    return NextHop(dmac=w0 << 16 | w1 >> 16, smac=(w1 & 0xFFFF) << 32 | w2,
                   port=w3 >> 16, mtu=w3 & 0xFFFF)


def glean_record(port: int, smac: int) -> NextHop:
    """The next hop of a connected prefix whose hosts are not resolved: MTU 0 (GLEAN_MTU)
    and no destination MAC.  Every packet routed to it exceeds the MTU, so the data plane
    hands it to the slow path (frag_needed / fragment / too_big) with meta.next_hop naming
    this record; the exception path must treat MTU 0 as "neighbour unresolved"."""
    return NextHop(dmac=0, smac=smac, port=port, mtu=GLEAN_MTU)


def is_glean(nh: NextHop) -> bool:
    return nh.mtu == GLEAN_MTU and nh.dmac == 0


class NextHopTable:
    """The `nexthops` array (router_common.mbl): index -> NextHop, 4 words per entry.

    `words` is the memory (NativeProgram.region("nexthops"), or the host shadow of the
    chip's SRAM); every write goes through `_write`, which also calls `writer` when one is
    given.  The table keeps the records it wrote (with their gateways) host-side."""

    MEMORY = "nexthops"

    def __init__(self, words: np.ndarray, ports: int | None = None,
                 writer: Writer | None = None) -> None:
        if len(words) % NEXTHOP_WORDS:
            raise NeighbourError(f"the {self.MEMORY} memory has {len(words)} words, not a "
                                 f"multiple of {NEXTHOP_WORDS}")
        self.words = words
        self.size = len(words) // NEXTHOP_WORDS
        self.ports = MAX_PORTS if ports is None else ports
        self.writer = writer
        self._entries: dict[int, NextHop] = {}

    def _write(self, word_index: int, values: Sequence[int]) -> None:
        self.words[word_index:word_index + len(values)] = values
        if self.writer is not None:
            self.writer(self.MEMORY, word_index, list(values))

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise NeighbourError(f"next-hop index {index} is outside the {self.MEMORY} "
                                 f"memory (0..{self.size - 1})")

    def validate(self, nh: NextHop) -> None:
        if not 0 <= nh.port < self.ports:
            raise NeighbourError(f"next-hop port {nh.port} out of range 0..{self.ports - 1}")
        if is_glean(nh):
            _unicast_mac(nh.smac, "next-hop source MAC")
            return
        if not MIN_MTU_V4 <= nh.mtu <= MAX_MTU:
            raise NeighbourError(f"next-hop MTU {nh.mtu} out of range "
                                 f"{MIN_MTU_V4}..{MAX_MTU}")
        if isinstance(nh.gateway, ipaddress.IPv6Address) and nh.mtu < MIN_MTU_V6:
            raise NeighbourError(f"next-hop MTU {nh.mtu} is below the IPv6 minimum "
                                 f"{MIN_MTU_V6} (gateway {nh.gateway})")
        _unicast_mac(nh.dmac, "next-hop destination MAC")
        _unicast_mac(nh.smac, "next-hop source MAC")

    def set(self, index: int, nh: NextHop) -> None:
        """Write next hop `index`.  A new record is written whole; a changed one only in the
        words that differ, in ascending order (docs/control-plane.md: what a concurrent
        lookup can see)."""
        self._check_index(index)
        self.validate(nh)
        new = pack_next_hop(nh)
        base = index * NEXTHOP_WORDS
        old = self._entries.get(index)
        if old is None:
            self._write(base, new)
        else:
            current = pack_next_hop(old)
            changed = [k for k in range(NEXTHOP_WORDS) if current[k] != new[k]]
            if changed:
                self._write(base + changed[0], new[changed[0]:changed[-1] + 1])
        self._entries[index] = nh

    def get(self, index: int) -> NextHop | None:
        self._check_index(index)
        return self._entries.get(index)

    def delete(self, index: int) -> None:
        """Zero the record.  Routes must stop naming it first: a packet that still reaches a
        zero record sees MTU 0, so it goes to the slow path (frag_needed / fragment /
        too_big), never out of a port with a zero MAC."""
        self._check_index(index)
        if self._entries.pop(index, None) is None:
            raise NeighbourError(f"next hop {index} is not set")
        self._write(index * NEXTHOP_WORDS, [0] * NEXTHOP_WORDS)

    def allocate(self, start: int = 0) -> int:
        """The first free index from `start`."""
        for index in range(start, self.size):
            if index not in self._entries:
                return index
        raise NeighbourError(f"the {self.MEMORY} memory is full ({self.size} next hops): "
                             "delete unused next hops or make the array larger")

    def read(self, index: int) -> NextHop:
        """The record as the words hold it now (gateway unknown)."""
        self._check_index(index)
        base = index * NEXTHOP_WORDS
        return unpack_next_hop(self.words[base:base + NEXTHOP_WORDS])

    def __iter__(self) -> Iterator[tuple[int, NextHop]]:
        return iter(sorted(self._entries.items()))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, index: object) -> bool:
        return index in self._entries


# ---- the router's own addresses ------------------------------------------------------------

def home_hash(key: int, key_words: int) -> int:
    """The home-slot hash of a `hash` table key before masking (docs/language.md
    "Memories"): h = (h ^ w) * 0x9E3779B1 mod 2^32 over the key words MSB first from 0,
    then h ^ h >> 16 -- what the data plane's npu.hash.lookup computes."""
    h = 0
    for k in range(key_words):
        w = key >> (32 * (key_words - 1 - k)) & 0xFFFF_FFFF
        h = (h ^ w) * HASH_MULTIPLIER & 0xFFFF_FFFF
    return h ^ h >> 16


class HashSet:
    """An open-addressed MBL `hash` table used as a set: entries `[VALID, value, key words
    MSB first]`, home slot home_hash(key) & (size - 1), linear probing.  The data-plane
    lookup stops at the key or at the first slot without VALID; every key value can be
    looked up, so no tombstone is possible and removal shifts the cluster back instead."""

    def __init__(self, name: str, words: np.ndarray, key_bits: int,
                 writer: Writer | None = None, value: int = 1) -> None:
        self.name = name
        self.key_words = (key_bits + 31) // 32
        self.stride = 2 + self.key_words
        if len(words) % self.stride:
            raise NeighbourError(f"the {name} memory has {len(words)} words, not a multiple "
                                 f"of its {self.stride}-word entries")
        self.size = len(words) // self.stride
        if self.size & (self.size - 1) or not self.size:
            raise NeighbourError(f"the {name} table has {self.size} slots; hash tables need "
                                 "a power of two")
        self.words = words
        self.writer = writer
        self.value = value

    def _write(self, word_index: int, values: Sequence[int]) -> None:
        self.words[word_index:word_index + len(values)] = values
        if self.writer is not None:
            self.writer(self.name, word_index, list(values))

    def _home(self, key: int) -> int:
        return home_hash(key, self.key_words) & (self.size - 1)

    def _valid(self, slot: int) -> bool:
        return bool(int(self.words[slot * self.stride]) & HASH_VALID)

    def _key(self, slot: int) -> int:
        key = 0
        first = slot * self.stride + 2
        for w in self.words[first:first + self.key_words]:
            key = key << 32 | int(w)
        return key

    def _key_words(self, key: int) -> list[int]:
        return [key >> (32 * (self.key_words - 1 - k)) & 0xFFFF_FFFF
                for k in range(self.key_words)]

    def find(self, key: int) -> int | None:
        """The slot holding key, probing as the data plane does."""
        home = self._home(key)
        for i in range(self.size):
            slot = (home + i) & (self.size - 1)
            if not self._valid(slot):
                return None
            if self._key(slot) == key:
                return slot
        return None

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and self.find(key) is not None

    def keys(self) -> list[int]:
        return [self._key(s) for s in range(self.size) if self._valid(s)]

    def add(self, key: int) -> bool:
        """Insert key (False when already there).  Value and key words are written before
        the header with VALID, so a lookup never sees a half-written entry."""
        home = self._home(key)
        for i in range(self.size):
            slot = (home + i) & (self.size - 1)
            if not self._valid(slot):
                base = slot * self.stride
                self._write(base + 1, [self.value, *self._key_words(key)])
                self._write(base, [HASH_VALID])
                return True
            if self._key(slot) == key:
                return False
        raise NeighbourError(f"the {self.name} table is full ({self.size} addresses): "
                             "remove an address or make the table larger in "
                             "router_common.mbl")

    def remove(self, key: int) -> bool:
        """Delete key (False when absent) by backward shift: each later entry of the cluster
        that may live in the hole is copied into it (the hole's old key is overwritten, never
        emptied first), then the last hole's header is cleared.  Until that clear an entry is
        present twice, which a lookup cannot tell from once."""
        hole = self.find(key)
        if hole is None:
            return False
        mask = self.size - 1
        j = hole
        for _ in range(self.size - 1):
            j = (j + 1) & mask
            if not self._valid(j):
                break
            moved = self._key(j)
            home = self._home(moved)
            # the entry at j may move to the hole when the hole lies on its probe path
            if (hole - home) & mask < (j - home) & mask:
                self._copy_key(hole, moved)
                hole = j
        base = hole * self.stride
        self._write(base, [0])
        self._write(base + 1, [0] * (1 + self.key_words))
        return True

    def _copy_key(self, slot: int, key: int) -> None:
        """Overwrite the key of a valid slot; only the words that differ are written."""
        base = slot * self.stride
        new = [self.value, *self._key_words(key)]
        old = [int(w) for w in self.words[base + 1:base + self.stride]]
        changed = [k for k in range(len(new)) if new[k] != old[k]]
        if changed:
            self._write(base + 1 + changed[0], new[changed[0]:changed[-1] + 1])

    def clear(self) -> None:
        for slot in range(self.size):
            if self._valid(slot):
                self._write(slot * self.stride, [0])


class LocalAddresses:
    """The router's own addresses: the `local4` (bit<32> keys) and `local6` (bit<128>)
    hash tables that ipv4_fwd / ipv6_fwd probe (`localN.contains(ip.dst)` -> for_router)."""

    def __init__(self, local4_words: np.ndarray | None, local6_words: np.ndarray | None,
                 writer: Writer | None = None) -> None:
        self.v4 = None if local4_words is None else HashSet("local4", local4_words, 32, writer)
        self.v6 = None if local6_words is None else HashSet("local6", local6_words, 128, writer)

    def _table(self, address: IPAddress) -> HashSet:
        table = self.v4 if address.version == 4 else self.v6
        if table is None:
            raise NeighbourError(f"the program has no local{address.version} table for "
                                 f"{address}")
        return table

    def add(self, address: str | int | IPAddress) -> bool:
        a = _address(address)
        return self._table(a).add(int(a))

    def remove(self, address: str | int | IPAddress) -> bool:
        """Remove an address (False when it was not there); the others stay findable."""
        a = _address(address)
        return self._table(a).remove(int(a))

    def contains(self, address: str | int | IPAddress) -> bool:
        a = _address(address)
        return int(a) in self._table(a)

    __contains__ = contains

    def addresses(self) -> list[IPAddress]:
        out: list[IPAddress] = []
        if self.v4 is not None:
            out += [ipaddress.IPv4Address(k) for k in sorted(self.v4.keys())]
        if self.v6 is not None:
            out += [ipaddress.IPv6Address(k) for k in sorted(self.v6.keys())]
        return out

    def sync(self, addresses: Iterable[str | IPAddress]) -> None:
        """Make the tables hold exactly `addresses` (removals first, so a full table can
        still take a replacement)."""
        wanted = {_address(a) for a in addresses}
        have = set(self.addresses())
        for a in have - wanted:
            self.remove(a)
        for a in sorted(wanted - have, key=lambda x: (x.version, int(x))):
            self.add(a)


# ---- ports ----------------------------------------------------------------------------------

class Ports:
    """The router's ports by number."""

    def __init__(self, ports: Iterable[PortConfig] = (), count: int = MAX_PORTS) -> None:
        self.count = count
        self._ports: dict[int, PortConfig] = {}
        # prefixes declared on-link on a port besides its interface subnets (connected routes)
        self._on_link: dict[int, list[IPNetwork]] = {}
        for p in ports:
            self.set(p)

    def validate(self, p: PortConfig) -> None:
        if not 0 <= p.port < self.count:
            raise NeighbourError(f"port {p.port} out of range 0..{self.count - 1}")
        _unicast_mac(p.mac, f"port {p.port} MAC")
        if not MIN_MTU_V4 <= p.mtu <= MAX_MTU:
            raise NeighbourError(f"port {p.port} MTU {p.mtu} out of range "
                                 f"{MIN_MTU_V4}..{MAX_MTU}")
        if p.ipv6 and p.mtu < MIN_MTU_V6:
            raise NeighbourError(f"port {p.port} has IPv6 addresses but MTU {p.mtu} is below "
                                 f"the IPv6 minimum {MIN_MTU_V6}")

    def set(self, p: PortConfig) -> None:
        """Add or replace a port (its addresses may not belong to another port)."""
        self.validate(p)
        mine = {i.ip for i in (*p.ipv4, *p.ipv6)}
        for other in self._ports.values():
            if other.port != p.port:
                clash = mine & {i.ip for i in (*other.ipv4, *other.ipv6)}
                if clash:
                    raise NeighbourError(f"port {p.port} address {min(clash, key=str)} is "
                                         f"already on port {other.port}")
        self._ports[p.port] = p

    def get(self, port: int) -> PortConfig:
        try:
            return self._ports[port]
        except KeyError:
            known = ", ".join(map(str, sorted(self._ports))) or "none"
            raise NeighbourError(f"port {port} is not configured (ports: {known})") from None

    def __iter__(self) -> Iterator[PortConfig]:
        return iter(sorted(self._ports.values(), key=lambda p: p.port))

    def __len__(self) -> int:
        return len(self._ports)

    def __contains__(self, port: object) -> bool:
        return port in self._ports

    def router_addresses(self) -> list[IPAddress]:
        """Every interface address of every port (what LocalAddresses must hold)."""
        return [i.ip for p in self for i in (*p.ipv4, *p.ipv6)]

    def add_on_link(self, port: int, network: IPNetwork) -> None:
        """Declare `network` directly reachable on `port` (a connected route)."""
        p = self.get(port)
        if network.version == 6 and p.mtu < MIN_MTU_V6:
            raise NeighbourError(f"port {port} MTU {p.mtu} is below the IPv6 minimum "
                                 f"{MIN_MTU_V6}, so {network} cannot be on it")
        self._on_link.setdefault(port, []).append(network)

    def on_link(self, port: int) -> list[IPNetwork]:
        """The prefixes reachable directly on `port`: its subnets and declared ones."""
        p = self.get(port)
        return [i.network for i in (*p.ipv4, *p.ipv6)] + self._on_link.get(port, [])

    def connected(self, address: str | IPAddress) -> list[int]:
        """The ports with an on-link prefix holding `address`, longest prefix first."""
        a = _address(address)
        hits = [(net.prefixlen, p.port) for p in self for net in self.on_link(p.port)
                if net.version == a.version and a in net]
        return [port for _, port in sorted(hits, key=lambda h: -h[0])]


# ---- neighbours and their next hops --------------------------------------------------------

@dataclass(frozen=True)
class Neighbour:
    """An on-link host or gateway: its MAC on one port (static: configured, not learnt)."""

    port: int
    ip: IPAddress
    mac: int
    static: bool = True


class Neighbours:
    """The neighbour cache (port, IP) -> MAC and the next hops built from it.

    A next hop is (port, gateway): dmac = the gateway's MAC, smac = the port's MAC, mtu =
    the port's MTU.  When a neighbour's MAC or a port's MAC / MTU changes, every next hop
    that uses it is rewritten in place (NextHopTable.set writes only the changed words)."""

    def __init__(self, ports: Ports, nexthops: NextHopTable, resolving: bool = False) -> None:
        self.ports = ports
        self.nexthops = nexthops
        # a resolver runs (runtime/resolver.py): a gateway may be named before its MAC is
        # known; its next hop is an unresolved record until the resolver learns it
        self.resolving = resolving
        self._cache: dict[tuple[int, IPAddress], Neighbour] = {}
        self._users: dict[tuple[int, IPAddress], set[int]] = {}
        self._gleans: dict[int, int] = {}  # port -> its glean next hop

    def _record(self, port: int, gateway: IPAddress, unresolved_ok: bool = False) -> NextHop:
        neighbour = self._cache.get((port, gateway))
        if neighbour is None and unresolved_ok:
            # the data plane hands its packets to the slow path, which resolves `gateway`
            record = glean_record(port, self.ports.get(port).mac)
            return NextHop(record.dmac, record.smac, port, record.mtu, gateway=gateway)
        if neighbour is None:
            raise NeighbourError(f"no neighbour {gateway} on port {port}: add its MAC first "
                                 "(the data plane does not resolve addresses)")
        p = self.ports.get(port)
        return NextHop(dmac=neighbour.mac, smac=p.mac, port=port, mtu=p.mtu, gateway=gateway)

    def set(self, port: int, ip: str | IPAddress, mac: str | int,
            static: bool = True) -> list[int]:
        """Add or change a neighbour; returns the next hops rewritten for it."""
        a = _address(ip)
        self.ports.get(port)
        value = mac_to_int(mac)
        _unicast_mac(value, f"neighbour {a} MAC")
        if a in self.ports.router_addresses():
            raise NeighbourError(f"neighbour {a} is one of the router's own addresses")
        on_link = (a.version == 6 and a.is_link_local) or port in self.ports.connected(a)
        if not on_link:
            nets = ", ".join(map(str, self.ports.on_link(port))) or "none"
            raise NeighbourError(f"neighbour {a} is not on a subnet of port {port} ({nets}): "
                                 "fix the address or the port's addresses")
        key = (port, a)
        self._cache[key] = Neighbour(port, a, value, static)
        users = sorted(self._users.get(key, ()))
        for index in users:
            self.nexthops.set(index, self._record(port, a))
        return users

    def forget(self, port: int, ip: str | IPAddress) -> list[int]:
        """Drop a learnt neighbour whose next hops may stay: each is rewritten as an
        unresolved record (glean_record with its gateway), so the data plane hands its
        packets to the slow path, which resolves the gateway again.  Returns those
        next hops."""
        key = (port, _address(ip))
        if key not in self._cache:
            raise NeighbourError(f"no neighbour {key[1]} on port {port}")
        del self._cache[key]
        users = sorted(self._users.get(key, ()))
        for index in users:
            self.nexthops.set(index, self._record(port, key[1], unresolved_ok=True))
        return users

    def get(self, port: int, ip: str | IPAddress) -> Neighbour | None:
        return self._cache.get((port, _address(ip)))

    def __iter__(self) -> Iterator[Neighbour]:
        return iter(sorted(self._cache.values(), key=lambda n: (n.port, n.ip.version,
                                                                int(n.ip))))

    def remove(self, port: int, ip: str | IPAddress) -> None:
        key = (port, _address(ip))
        if key not in self._cache:
            raise NeighbourError(f"no neighbour {key[1]} on port {port}")
        if self._users.get(key):
            used = ", ".join(map(str, sorted(self._users[key])))
            raise NeighbourError(f"neighbour {key[1]} on port {port} is used by next hops "
                                 f"{used}: move their routes and release them first")
        del self._cache[key]

    def next_hop_for(self, port: int, gateway: str | IPAddress,
                     unresolved_ok: bool = False) -> int:
        """The index of a next hop through `gateway` on `port`, created (first free index)
        when there is none yet.  With `unresolved_ok` a gateway without a MAC yet gets an
        unresolved record (the resolver fills it in); otherwise that is an error."""
        key = (port, _address(gateway))
        users = self._users.get(key)
        if users:
            return min(users)
        record = self._record(*key, unresolved_ok=unresolved_ok or self.resolving)
        index = self.nexthops.allocate()
        self.nexthops.set(index, record)
        self._users.setdefault(key, set()).add(index)
        return index

    def glean_for(self, port: int) -> int:
        """The index of `port`'s glean next hop (glean_record), created when needed: the
        next hop of its connected prefixes, whose unresolved hosts go to the slow path."""
        if port not in self._gleans:
            record = glean_record(port, self.ports.get(port).mac)
            index = self.nexthops.allocate()
            self.nexthops.set(index, record)
            self._gleans[port] = index
        return self._gleans[port]

    def is_glean(self, index: int) -> bool:
        return index in self._gleans.values()

    def bind(self, index: int, port: int, gateway: str | IPAddress) -> None:
        """Make next hop `index` go through `gateway` on `port` (an explicit index, e.g. one
        that a route file names)."""
        key = (port, _address(gateway))
        self.nexthops.set(index, self._record(*key, unresolved_ok=self.resolving))
        self._drop_user(index)
        self._users.setdefault(key, set()).add(index)

    def release(self, index: int) -> None:
        """Delete next hop `index` (after its routes are gone)."""
        self.nexthops.delete(index)
        self._drop_user(index)

    def _drop_user(self, index: int) -> None:
        self._gleans = {p: i for p, i in self._gleans.items() if i != index}
        for key, users in list(self._users.items()):
            if index in users:
                users.discard(index)
                if not users:
                    del self._users[key]

    def users(self, port: int, ip: str | IPAddress) -> list[int]:
        return sorted(self._users.get((port, _address(ip)), ()))

    def set_port(self, p: PortConfig) -> list[int]:
        """Change a port's MAC / MTU / addresses; rewrites the next hops on it (all records
        are checked before anything is written)."""
        self.ports.validate(p)
        records = [(index, NextHop(dmac=self._cache[key].mac, smac=p.mac, port=p.port,
                                   mtu=p.mtu, gateway=key[1]) if key in self._cache else
                    NextHop(0, p.mac, p.port, GLEAN_MTU, gateway=key[1]))
                   for key, users in self._users.items() if key[0] == p.port
                   for index in sorted(users)]
        if p.port in self._gleans:
            records.append((self._gleans[p.port], glean_record(p.port, p.mac)))
        for _, record in records:
            self.nexthops.validate(record)
        self.ports.set(p)
        for index, record in sorted(records, key=lambda r: r[0]):
            self.nexthops.set(index, record)
        return sorted(index for index, _ in records)
