"""Address resolution for the router: ARP (RFC 826) and IPv6 Neighbor Discovery (RFC 4861)
with one neighbour state machine (RFC 4861 7.3.2, which Linux applies to ARP as well).

The data plane cannot resolve: a packet to a neighbour without a MAC reaches the slow path
through an unresolved next-hop record (glean_record: MTU 0, no MAC), and the exception
path builds its frame with a zero destination MAC and hands it here (`Emit.awaiting`).
The resolver keeps such frames in a bounded queue per neighbour, solicits, and on an
answer installs the neighbour into the next-hop table (through `Neighbours` and the
`install` callback, which gives a connected host its host route) and sends the queue in
order.  After the retries it drops the queue with ICMP Destination Unreachable (host /
address unreachable; `unreachable` callback) and forgets the entry.

Timers run on the control plane's clock: `tick(now_ns)` fires what is due.  The data plane
does not report which next hops it uses, so an installed STALE entry counts as used at
once (STALE -> DELAY): every installed learnt entry is re-confirmed after it leaves
REACHABLE (docs/control-plane.md, "Neighbour resolution").
"""

from __future__ import annotations

import ipaddress
import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from npkit.runtime.arp import (
    ARP_REPLY,
    ARP_REQUEST,
    ETHERTYPE_ARP,
    arp_reply,
    arp_request,
    parse_arp,
)
from npkit.runtime.exception_path import Emit
from npkit.runtime.nd import (
    ALL_NODES6,
    NA_OVERRIDE,
    NA_ROUTER,
    NA_SOLICITED,
    ND_NEIGHBOR_ADVERT,
    ND_NEIGHBOR_SOLICIT,
    multicast_mac,
    neighbor_advertisement,
    neighbor_solicitation,
    parse_nd,
)
from npkit.runtime.neighbours import IPAddress, NeighbourError, Neighbours, Ports

ETH_HEADER = 14
MS = 1_000_000


class NudState(Enum):
    """RFC 4861 7.3.2; PERMANENT is a configured (static) neighbour, never aged."""

    INCOMPLETE = "incomplete"
    REACHABLE = "reachable"
    STALE = "stale"
    DELAY = "delay"
    PROBE = "probe"
    PERMANENT = "permanent"


@dataclass(frozen=True)
class NudParameters:
    """RFC 4861 section 10 protocol constants (the same for ARP, as in Linux).  The
    reachable time is BaseReachableTime without the 0.5..1.5 random factor (6.3.2), so a
    run is reproducible; `queue_limit` packets wait per neighbour (7.2.2 "a small queue";
    Linux's unres_qlen was 3).  An answer for an anycast address waits a random time
    below `max_anycast_delay_ns` (7.2.7 SHOULD), drawn from the resolver's seeded RNG."""

    retrans_ns: int = 1000 * MS               # RETRANS_TIMER
    reachable_ns: int = 30_000 * MS           # REACHABLE_TIME
    delay_first_probe_ns: int = 5000 * MS     # DELAY_FIRST_PROBE_TIME
    max_multicast_solicit: int = 3            # MAX_MULTICAST_SOLICIT
    max_unicast_solicit: int = 3              # MAX_UNICAST_SOLICIT
    max_anycast_delay_ns: int = 1000 * MS     # MAX_ANYCAST_DELAY_TIME (7.2.7)
    queue_limit: int = 3

    def __post_init__(self) -> None:
        if min(self.retrans_ns, self.reachable_ns, self.delay_first_probe_ns) <= 0 or min(
                self.max_multicast_solicit, self.max_unicast_solicit, self.queue_limit) < 1:
            raise ValueError("neighbour timers and limits must be positive")


@dataclass(frozen=True)
class Waiting:
    """A frame waiting for its neighbour: complete but for the destination MAC, the port
    it arrived on, and whether the router generated it (no ICMP error about it)."""

    frame: bytes
    in_port: int
    local: bool


@dataclass
class Entry:
    port: int
    ip: IPAddress
    state: NudState
    mac: int | None = None
    deadline: int = 0
    probes: int = 0
    queue: deque[Waiting] = field(default_factory=deque)


Install = Callable[[int, IPAddress], None]
Unreachable = Callable[[bytes, int, int], list[Emit]]


def _ip_destination(frame: bytes) -> IPAddress | None:
    ethertype = int.from_bytes(frame[12:14], "big")
    if ethertype == 0x0800 and len(frame) >= ETH_HEADER + 20:
        return ipaddress.IPv4Address(frame[ETH_HEADER + 16:ETH_HEADER + 20])
    if ethertype == 0x86DD and len(frame) >= ETH_HEADER + 40:
        return ipaddress.IPv6Address(frame[ETH_HEADER + 24:ETH_HEADER + 40])
    return None


class Resolver:
    """The neighbour cache's protocol side.  `install(port, ip)` is called when a learnt
    neighbour first gets a MAC (the control plane gives a connected host its host route),
    `uninstall(port, ip)` when it is forgotten; `unreachable(frame, in_port, now_ns)`
    builds the ICMP error for a packet whose neighbour did not answer."""

    def __init__(self, ports: Ports, neighbours: Neighbours, *, install: Install,
                 uninstall: Install, unreachable: Unreachable,
                 parameters: NudParameters | None = None, seed: int = 0) -> None:
        self.ports = ports
        self.neighbours = neighbours
        self.install = install
        self.uninstall = uninstall
        self.unreachable = unreachable
        self.parameters = parameters or NudParameters()
        self.entries: dict[tuple[int, IPAddress], Entry] = {}
        self.counters: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._delayed: list[tuple[int, Emit]] = []      # anycast answers: (due, frame)

    # ---- queries ----
    def state(self, port: int, ip: str | IPAddress) -> NudState | None:
        key = (port, ipaddress.ip_address(ip))
        if key in self.entries:
            return self.entries[key].state
        n = self.neighbours.get(*key)
        return NudState.PERMANENT if n is not None and n.static else None

    # ---- frames that wait ----
    def resolve(self, emit: Emit, in_port: int, local: bool, now_ns: int) -> list[Emit]:
        """Send `emit` (destination MAC zero) once its neighbour `emit.awaiting` is known;
        returns what goes out now (the frame itself, or a solicitation)."""
        target = emit.awaiting
        assert target is not None
        if target.is_multicast or target in self._broadcasts(emit.port):
            # a subnet's broadcast address has no neighbour to ask for; directed broadcasts
            # are not forwarded (RFC 2644, Linux's default)
            self.counters["dropped.broadcast_destination"] += 1
            return []
        if target in self.ports.router_addresses():   # e.g. an error to a spoofed source
            self.counters["dropped.own_address"] += 1
            return []
        known = self.neighbours.get(emit.port, target)
        if known is not None:                       # resolved meanwhile (same batch)
            entry = self.entries.get((emit.port, target))
            if entry is not None and entry.state is NudState.STALE:
                self._enter(entry, NudState.DELAY, now_ns)
            return [self._addressed(emit.port, emit.frame, known.mac)]
        key = (emit.port, target)
        entry = self.entries.get(key)
        out: list[Emit] = []
        if entry is None:
            entry = self.entries[key] = Entry(emit.port, target, NudState.INCOMPLETE)
            out = self._solicit(entry, now_ns, multicast=True)
            self.counters["resolutions_started"] += 1
        if len(entry.queue) >= self.parameters.queue_limit:
            entry.queue.popleft()                   # RFC 4861 7.2.2: the new replaces the oldest
            self.counters["dropped.queue_full"] += 1
        entry.queue.append(Waiting(emit.frame, in_port, local))
        self.counters["queued"] += 1
        return out

    def _broadcasts(self, port: int) -> set[IPAddress]:
        p = self.ports.get(port)
        return {i.network.broadcast_address for i in p.ipv4 if i.network.prefixlen < 31}

    # ---- timers ----
    def tick(self, now_ns: int) -> list[Emit]:
        """Fire every timer due at `now_ns`: retransmissions, failures, ageing."""
        due = [e for t, e in self._delayed if t <= now_ns]
        self._delayed = [(t, e) for t, e in self._delayed if t > now_ns]
        out: list[Emit] = due
        for key in sorted(self.entries, key=lambda k: (k[0], k[1].version, int(k[1]))):
            entry = self.entries.get(key)
            while entry is not None and entry.deadline and entry.deadline <= now_ns:
                out += self._expire(entry, entry.deadline)
                entry = self.entries.get(key)
        return out

    def next_deadline(self) -> int | None:
        deadlines = [e.deadline for e in self.entries.values() if e.deadline]
        deadlines += [t for t, _ in self._delayed]
        return min(deadlines, default=None)

    def _expire(self, entry: Entry, at: int) -> list[Emit]:
        p = self.parameters
        if entry.state is NudState.INCOMPLETE:
            if entry.probes < p.max_multicast_solicit:
                return self._solicit(entry, at, multicast=True)
            return self._fail(entry, at)
        if entry.state is NudState.REACHABLE:
            self._stale(entry, at)
            return []
        if entry.state is NudState.DELAY:
            self._enter(entry, NudState.PROBE, at)
            return self._solicit(entry, at, multicast=False)
        if entry.state is NudState.PROBE:
            if entry.probes < p.max_unicast_solicit:
                return self._solicit(entry, at, multicast=False)
            return self._fail(entry, at)
        entry.deadline = 0
        return []

    def _enter(self, entry: Entry, state: NudState, now_ns: int) -> None:
        p = self.parameters
        entry.state = state
        entry.probes = 0
        entry.deadline = {NudState.REACHABLE: now_ns + p.reachable_ns,
                          NudState.DELAY: now_ns + p.delay_first_probe_ns}.get(state, 0)
        self.counters[f"state.{state.value}"] += 1

    def _stale(self, entry: Entry, now_ns: int) -> None:
        """Enter STALE; the data plane's use is invisible, so an entry installed in the
        next-hop table counts as used at once (STALE -> DELAY, RFC 4861 7.3.3)."""
        self._enter(entry, NudState.STALE, now_ns)
        if self.neighbours.users(entry.port, entry.ip):
            self._enter(entry, NudState.DELAY, now_ns)

    def _fail(self, entry: Entry, now_ns: int) -> list[Emit]:
        """No answer after the retries: ICMP for each waiting packet (RFC 4861 7.2.2,
        RFC 1812 4.3.3.1 host unreachable), then the entry goes."""
        out: list[Emit] = []
        for waiting in entry.queue:
            self.counters["dropped.unresolved"] += 1
            if not waiting.local:
                out += self.unreachable(waiting.frame, waiting.in_port, now_ns)
        del self.entries[(entry.port, entry.ip)]
        self.counters["failed"] += 1
        if entry.mac is not None:
            self.neighbours.forget(entry.port, entry.ip)
            self.uninstall(entry.port, entry.ip)
        return out

    # ---- solicitations ----
    def _source(self, port: int, target: IPAddress) -> IPAddress | None:
        """Our address on `port` for soliciting `target`: one on the target's subnet, else
        the first of its family (RFC 4861 7.2.2 allows any of the interface's)."""
        p = self.ports.get(port)
        ifaces = p.ipv4 if target.version == 4 else p.ipv6
        for iface in ifaces:
            if target in iface.network:
                return iface.ip
        return ifaces[0].ip if ifaces else None

    def _solicit(self, entry: Entry, now_ns: int, *, multicast: bool) -> list[Emit]:
        entry.probes += 1
        entry.deadline = now_ns + self.parameters.retrans_ns
        src = self._source(entry.port, entry.ip)
        if src is None:
            self.counters["dropped.no_source_address"] += 1
            return []
        mac = self.ports.get(entry.port).mac
        unicast = None if multicast else entry.mac
        if entry.ip.version == 4:
            frame = arp_request(mac, int(src), int(entry.ip),
                                *(() if unicast is None else (unicast,)))
            self.counters["sent.arp_request"] += 1
        else:
            frame = neighbor_solicitation(mac, int(src), int(entry.ip), unicast)
            self.counters["sent.neighbour_solicitation"] += 1
        return [Emit(entry.port, frame)]

    # ---- answers ----
    def _learn(self, port: int, ip: IPAddress, mac: int, state: NudState, now_ns: int,
               *, create: bool) -> list[Emit]:
        """Record `mac` for `ip` in `state` (RFC 4861 7.2.3 / 7.2.5); an entry that gets
        its first MAC is installed and its queue sent in order."""
        key = (port, ip)
        known = self.neighbours.get(port, ip)
        if known is not None and known.static:
            return []                               # configured neighbours are not learnt
        entry = self.entries.get(key)
        if entry is None:
            if not create:
                return []
            entry = self.entries[key] = Entry(port, ip, state)
        first = entry.mac is None
        try:
            self.neighbours.set(port, ip, mac, static=False)
        except NeighbourError:                      # not on-link here, or one of ours
            self.counters["dropped.not_on_link"] += 1
            if first:
                del self.entries[key]
            return []
        entry.mac = mac
        if first:
            self.install(port, ip)
        if state is NudState.STALE:
            self._stale(entry, now_ns)
        else:
            self._enter(entry, state, now_ns)
        out = [self._addressed(port, w.frame, mac) for w in entry.queue]
        self.counters["sent.after_resolution"] += len(entry.queue)
        entry.queue.clear()
        if entry.state is NudState.STALE and out:   # sending through a STALE entry
            self._enter(entry, NudState.DELAY, now_ns)
        return out

    def _addressed(self, port: int, frame: bytes, mac: int) -> Emit:
        return Emit(port, mac.to_bytes(6, "big") + frame[6:])

    def on_arp(self, frame: bytes, in_port: int, now_ns: int) -> list[Emit]:
        """An ARP frame received on `in_port` (RFC 826's algorithm: merge the sender if we
        know it, answer a request for one of our addresses and then learn the sender)."""
        if int.from_bytes(frame[12:14], "big") != ETHERTYPE_ARP:
            return []
        arp = parse_arp(frame[ETH_HEADER:])
        if arp is None or arp.op not in (ARP_REQUEST, ARP_REPLY) or in_port not in self.ports:
            self.counters["dropped.arp_unsupported"] += 1
            return []
        sender = ipaddress.IPv4Address(arp.spa)
        ours = {int(i.ip) for p in self.ports for i in p.ipv4}
        out: list[Emit] = []
        if arp.spa and not arp.sha >> 40 & 1 and arp.spa not in ours:
            entry = self.entries.get((in_port, sender))
            if arp.op == ARP_REPLY and entry is not None:
                out += self._learn(in_port, sender, arp.sha, NudState.REACHABLE, now_ns,
                                   create=False)
            elif entry is not None and entry.mac != arp.sha:
                out += self._learn(in_port, sender, arp.sha, NudState.STALE, now_ns,
                                   create=False)
            elif entry is None and arp.op == ARP_REQUEST and arp.tpa in ours:
                out += self._learn(in_port, sender, arp.sha, NudState.STALE, now_ns,
                                   create=True)
        if arp.op == ARP_REQUEST and arp.tpa in ours:
            self.counters["sent.arp_reply"] += 1
            out.insert(0, Emit(in_port, arp_reply(arp, self.ports.get(in_port).mac)))
        return out

    def on_nd(self, frame: bytes, in_port: int, now_ns: int) -> list[Emit]:
        """A Neighbor Solicitation or Advertisement to us (RFC 4861 7.2.3 - 7.2.5)."""
        message = parse_nd(frame[ETH_HEADER:])
        if message is None or in_port not in self.ports:
            self.counters["dropped.nd_invalid"] += 1
            return []
        port = self.ports.get(in_port)
        target = ipaddress.IPv6Address(message.target)
        source = ipaddress.IPv6Address(message.src)
        if message.kind == ND_NEIGHBOR_SOLICIT:
            unicast = {i.ip for i in port.ipv6}
            anycast = {ipaddress.IPv6Address(int(i.network.network_address))
                       for i in port.ipv6 if i.network.prefixlen < 127} - unicast
            if target not in unicast | anycast:
                self.counters["dropped.ns_not_ours"] += 1
                return []
            out: list[Emit] = []
            if message.src and message.lla is not None:
                entry = self.entries.get((in_port, source))
                if entry is None or entry.mac != message.lla:
                    out += self._learn(in_port, source, message.lla, NudState.STALE, now_ns,
                                       create=True)
            flags = NA_ROUTER | (NA_OVERRIDE if target in unicast else 0)
            if message.src:
                dst, flags = message.src, flags | NA_SOLICITED
                dst_mac = message.lla if message.lla is not None else int.from_bytes(
                    frame[6:12], "big")
            else:                                   # DAD: to all nodes (7.2.4)
                dst, dst_mac = ALL_NODES6, multicast_mac(ALL_NODES6)
            self.counters["sent.neighbour_advertisement"] += 1
            answer = Emit(in_port, neighbor_advertisement(port.mac, dst_mac, int(target), dst,
                                                          int(target), flags))
            if target in anycast:               # 7.2.7: after a random delay (sorted: FIFO)
                delay = self._rng.randrange(self.parameters.max_anycast_delay_ns)
                self._delayed.append((now_ns + delay, answer))
                self._delayed.sort(key=lambda d: d[0])
                return out
            return [answer, *out]
        assert message.kind == ND_NEIGHBOR_ADVERT
        entry = self.entries.get((in_port, target))
        if entry is None:                           # 7.2.5: no entry, silently discard
            self.counters["dropped.na_unsolicited"] += 1
            return []
        if entry.state is NudState.INCOMPLETE:
            if message.lla is None:
                return []
            state = NudState.REACHABLE if message.solicited else NudState.STALE
            return self._learn(in_port, target, message.lla, state, now_ns, create=False)
        changed = message.lla is not None and message.lla != entry.mac
        if not message.override and changed:
            if entry.state is NudState.REACHABLE:
                self._stale(entry, now_ns)
            return []
        if changed:
            assert message.lla is not None
            state = NudState.REACHABLE if message.solicited else NudState.STALE
            return self._learn(in_port, target, message.lla, state, now_ns, create=False)
        if message.solicited:
            self._enter(entry, NudState.REACHABLE, now_ns)
        return []

