"""The router's control plane: the XScale core components behind one façade.

`ControlPlane` owns the route manager, the next-hop table, the neighbours, the ports, the
router's own addresses and the exception handler of one router program, and writes their
words into the program's memories (`regions(name)`).  It does not know which target runs
the data plane:

* `NativeRouter` runs the MBL router natively (npkit.compiler.mbl.NativeProgram) and hands
  its exceptions to the handler synchronously;
* `npkit.runtime.chip_router.ChipRouter` runs the hand-written microcode router on the
  simulated chip, with the control plane inside the XScale model in simulated time.

Counters (`RouterCounters`) are per port: frames received, transmitted (forwarded plus
injected by the control plane), dropped by reason, and exceptions by code.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npkit.runtime.exception_path import NOT_IP, Emit, Exc, ExceptionHandler
from npkit.runtime.icmp import IcmpRateLimiter, RedirectLimiter
from npkit.runtime.neighbours import (
    IPAddress,
    LocalAddresses,
    Neighbours,
    NextHopTable,
    Ports,
    Writer,
)
from npkit.runtime.port_table import PortRecord, PortTable
from npkit.runtime.reassembly import Reassembler, ReassemblyLimits
from npkit.runtime.resolver import NudParameters, Resolver
from npkit.runtime.route_manager import RouteUpdate, attach
from npkit.runtime.router_config import RouterConfig

FCS_BYTES = 4                   # an Ethernet frame's FCS (router_common.mbl FCS_BYTES)
Regions = Callable[[str], "np.ndarray | None"]


def exception_name(code: int) -> str:
    if code in Exc._value2member_map_:
        return Exc(code).name
    return "not_ip" if code == NOT_IP else f"code_{code:#x}"


def parse_prefix(text: str) -> tuple[int, int, int]:
    """'10.0.0.0/8' -> (family, network, length); a clear error for bad text."""
    try:
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        raise ValueError(f"bad prefix {text!r}: {exc}") from None
    return net.version, int(net.network_address), net.prefixlen


@dataclass
class PortCounters:
    rx: int = 0
    tx: int = 0
    injected: int = 0                                   # of tx: frames the control plane sent
    drops: Counter[str] = field(default_factory=Counter)      # reason -> frames
    exceptions: Counter[str] = field(default_factory=Counter)  # code name -> frames

    def as_dict(self) -> dict[str, Any]:
        return {"rx": self.rx, "tx": self.tx, "injected": self.injected,
                "drops": dict(self.drops), "exceptions": dict(self.exceptions)}


@dataclass
class RouterCounters:
    ports: dict[int, PortCounters] = field(default_factory=dict)

    def port(self, port: int) -> PortCounters:
        return self.ports.setdefault(port, PortCounters())

    def as_dict(self) -> dict[int, dict[str, Any]]:
        return {p: c.as_dict() for p, c in sorted(self.ports.items())}


class ControlPlane:
    """Route manager, next hops, neighbours, ports, own addresses and exception handler of
    one router program.  `regions(name)` gives a memory's words (or None when the program
    lacks it); `writer` (optional) receives every next-hop / own-address word write in
    order, for a target that replays them in simulated time; `log_routes` makes the route
    manager keep its write log (the chip target replays it).  `resolve` runs ARP / ND
    (runtime/resolver.py) for neighbours the config does not give, and lets routes name
    gateways not resolved yet; `tick(now_ns)` fires its timers.  `frames_have_fcs`: whether
    the frames the configured ports receive end in their 4-byte FCS, written into the port
    records so that bytes after the IP length that are not an FCS count as a trailer.
    Frames from pcaps and scapy (the CLI, the tests, on either target) have none; the
    simulator's generated traffic has one (sim/packets.py `fcs=True`), and a program run
    without a router config (zero records: the NPF lab, the identity scenarios) assumes
    one.  (The chip targets leave it
    off: the resolver's table writes would need flushing to the chip per exception.)"""

    def __init__(self, regions: Regions, ports: int, *, writer: Writer | None = None,
                 log_routes: bool = False, limiter: IcmpRateLimiter | None = None,
                 trie_regions: Regions | None = None, resolve: bool = False,
                 nud: NudParameters | None = None,
                 reassembly: ReassemblyLimits | None = None,
                 frames_have_fcs: bool = False) -> None:
        self.frames_have_fcs = frames_have_fcs
        nexthop_words = regions(NextHopTable.MEMORY)
        if nexthop_words is None:
            raise ValueError("the program has no nexthops memory "
                             "(import microblocks/router_common.mbl)")
        tries = trie_regions or regions
        self.routes = attach(tries, log=log_routes)  # 16-8-8 tries or Poptries
        self.nexthops = NextHopTable(nexthop_words, ports=ports, writer=writer)
        self.local = LocalAddresses(regions("local4"), regions("local6"), writer)
        self.ports = Ports(count=ports)
        self.port_table = PortTable(regions(PortTable.MEMORY), writer)
        self.neighbours = Neighbours(self.ports, self.nexthops, resolving=resolve)
        self.limiter = limiter if limiter is not None else IcmpRateLimiter.of()
        self.resolver = Resolver(self.ports, self.neighbours, install=self._install_host,
                                 uninstall=self._uninstall_host,
                                 unreachable=self._unreachable,
                                 parameters=nud) if resolve else None
        self._host_routes: dict[tuple[int, IPAddress], tuple[int, bool]] = {}
        self.reassembler = Reassembler(reassembly)
        self.exceptions = self._handler()

    def _handler(self) -> ExceptionHandler:
        resolver = self.resolver
        if resolver is None:
            return ExceptionHandler(list(self.ports), self.nexthops.get, self.routes.lookup,
                                    self.limiter, reassembler=self.reassembler,
                                    redirects=RedirectLimiter())
        handler = ExceptionHandler(
            list(self.ports), self.nexthops.get, self.routes.lookup, self.limiter,
            on_not_ip=lambda frame, port: resolver.on_arp(frame, port, handler.now_ns),
            on_neighbour_discovery=lambda frame, port: resolver.on_nd(frame, port,
                                                                      handler.now_ns),
            on_unresolved=resolver.resolve, reassembler=self.reassembler,
            redirects=RedirectLimiter())
        return handler

    # ---- neighbour resolution ----
    def tick(self, now_ns: int) -> list[Emit]:
        """Fire the timers due at `now_ns`: the resolver's (retransmissions, failures with
        their ICMP errors, ageing) and reassembly timeouts; the frames to send."""
        out = [] if self.resolver is None else self.resolver.tick(now_ns)
        return out + self.exceptions.reassembly_timeouts(now_ns)

    def _forget_learnt(self) -> None:
        """Before a full reload: every learnt neighbour, its host route's next hop and the
        resolver's entries go (the reload replaces the routes; waiting frames are dropped),
        so the new config starts from what it says."""
        if self.resolver is None:
            return
        for index, shared in sorted(self._host_routes.values()):
            if not shared and index in self.nexthops:
                self.neighbours.release(index)
        self._host_routes.clear()
        for (port, ip), entry in sorted(self.resolver.entries.items(),
                                        key=lambda kv: (kv[0][0], kv[0][1].version,
                                                        int(kv[0][1]))):
            if entry.mac is not None and self.neighbours.get(port, ip) is not None:
                self.neighbours.forget(port, ip)
        self.resolver.entries.clear()

    def _unreachable(self, frame: bytes, in_port: int, now_ns: int) -> list[Emit]:
        return self.exceptions.neighbour_unreachable(frame, in_port, now_ns)

    def _install_host(self, port: int, ip: IPAddress) -> None:
        """A learnt neighbour got its MAC: a host route to it, so the data plane forwards
        to it from now on (a link-local one is never a forwarding destination)."""
        if ip.is_link_local or (port, ip) in self._host_routes:
            return
        current = self.routes.lookup(ip.version, int(ip))
        if current is None or not self.neighbours.is_glean(current):
            return        # reached through a gateway or a route of its own: leave it be
        shared = bool(self.neighbours.users(port, ip))
        index = self.neighbours.next_hop_for(port, ip)
        self.routes.add(ip.version, int(ip), ip.max_prefixlen, index)
        self._host_routes[(port, ip)] = (index, shared)

    def _uninstall_host(self, port: int, ip: IPAddress) -> None:
        """A learnt neighbour is gone: its host route and (unless a route names it as a
        gateway) its next hop go; the glean route covers the host again."""
        entry = self._host_routes.pop((port, ip), None)
        if entry is None:
            return
        index, shared = entry
        self.routes.delete(ip.version, int(ip), ip.max_prefixlen)
        if not shared and self.neighbours.users(port, ip) == [index]:
            self.neighbours.release(index)

    # ---- configuration ----
    def configure(self, config: RouterConfig) -> int:
        """Apply a router config: ports, own addresses, neighbours, next hops, and load its
        routes (a full reload).  Returns the number of routes."""
        self._forget_learnt()
        routes = config.apply(self.nexthops, self.local, self.neighbours)
        self.write_port_table()
        if config.icmp:
            self.limiter = IcmpRateLimiter.of(float(config.icmp.get("rate", 10.0)),
                                              int(config.icmp.get("burst", 10)))
        self.exceptions = self._handler()
        self.routes.reload(routes.v4, routes.v6)
        return len(routes.v4) + len(routes.v6)

    def write_port_table(self) -> None:
        """Each configured port's record into the data plane's port table: its MAC (the
        address filter) and its first IPv4 subnet (whose hosts get redirects); the other
        ports' records are cleared (they accept every destination, redirect nothing)."""
        if self.port_table.words is None:
            return
        configured = {p.port: p for p in self.ports}
        for port in sorted(set(range(self.port_table.size)) | set(configured)):
            p = configured.get(port)       # a port past the table: PortTable.set refuses it
            if p is None:
                self.port_table.clear(port)
                continue
            net = p.ipv4[0].network if p.ipv4 else None
            self.port_table.set(port, PortRecord(
                mac=p.mac, fcs_absent=0 if self.frames_have_fcs else FCS_BYTES,
                net4=int(net.network_address) if net else 0,
                mask4=int(net.netmask) if net else 0))

    # ---- routes ----
    def add_route(self, prefix: str, next_hop: int) -> None:
        family, network, length = parse_prefix(prefix)
        self._check_next_hop(prefix, next_hop)
        self.routes.add(family, network, length, next_hop)

    def _check_next_hop(self, prefix: object, next_hop: int | None) -> None:
        """A route must name a next hop the table holds: an index past the nexthops memory
        would alias another next hop's record in the data plane (issue 16)."""
        if next_hop is None or not 0 <= next_hop < self.nexthops.size \
                or self.nexthops.get(next_hop) is None:
            raise ValueError(f"route {prefix}: next hop {next_hop} is not in the next-hop "
                             f"table (0..{self.nexthops.size - 1}; add the neighbour / next "
                             "hop first)")

    def delete_route(self, prefix: str) -> None:
        family, network, length = parse_prefix(prefix)
        self.routes.delete(family, network, length)

    def apply(self, updates: Iterable[RouteUpdate]) -> int:
        """Apply route changes in order; every added route's next hop is checked first, so
        a bad one changes nothing."""
        updates = list(updates)
        for u in updates:
            if u.op == "add":
                kind = ipaddress.IPv4Network if u.family == 4 else ipaddress.IPv6Network
                self._check_next_hop(kind((u.network, u.length), strict=False), u.next_hop)
        return self.routes.apply(updates)


@dataclass
class Forwarded:
    """What a batch of frames became: frames out per port (forwarded in order, then the
    control plane's injections), and the per-packet verdicts of the data plane."""

    out: dict[int, list[bytes]]
    verdicts: list[Any]


class NativeRouter:
    """The MBL router on the native target with its control plane: exceptions go to the
    handler at once, and the frames it returns are transmitted after the batch.  ARP / ND
    run unless `resolve` is False; the timers fire at each batch's `now_ns`."""

    def __init__(self, native: Any, ports: int, config: RouterConfig | None = None,
                 limiter: IcmpRateLimiter | None = None, *, resolve: bool = True,
                 nud: NudParameters | None = None) -> None:
        self.native = native
        self.control = ControlPlane(lambda name: native.region(name, missing_ok=True), ports,
                                    limiter=limiter, resolve=resolve, nud=nud,
                                    frames_have_fcs=False)      # frames from pcaps
        if config is not None:
            self.control.configure(config)
        self.counters = RouterCounters()

    def forward(self, frames: Sequence[bytes], in_ports: Sequence[int] | int = 0,
                now_ns: int = 0) -> Forwarded:
        ports = [in_ports] * len(frames) if isinstance(in_ports, int) else list(in_ports)
        emits: list[Emit] = self.control.tick(now_ns)
        verdicts = self.native.run(list(frames), ports)
        out: dict[int, list[bytes]] = {}
        for frame, port, verdict in zip(frames, ports, verdicts, strict=True):
            counters = self.counters.port(port)
            counters.rx += 1
            if verdict.kind == "forward":
                out.setdefault(verdict.port, []).append(verdict.data)
                self.counters.port(verdict.port).tx += 1
            elif verdict.kind == "drop":
                counters.drops[verdict.reason] += 1
            elif verdict.kind == "exception":
                counters.exceptions[exception_name(verdict.code)] += 1
                emits += self.control.exceptions.handle(verdict.code, frame, port,
                                                        verdict.next_hop, now_ns)
            else:
                counters.drops[f"verdict_{verdict.kind}"] += 1
        for emit in emits:
            out.setdefault(emit.port, []).append(emit.frame)
            counters = self.counters.port(emit.port)
            counters.tx += 1
            counters.injected += 1
        return Forwarded(out, verdicts)

    def advance(self, now_ns: int) -> dict[int, list[bytes]]:
        """Let the control plane's clock reach `now_ns` without traffic: the frames its
        timers send (solicitations, ICMP errors for packets whose neighbour never
        answered)."""
        return self.forward([], [], now_ns).out
