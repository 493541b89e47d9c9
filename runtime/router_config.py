"""Router config files (TOML): ports, neighbours, next hops, routes and ICMP settings.

    config = RouterConfig.load("examples/router/control.toml")   # RouterConfigError: file:line
    config = RouterConfig.load(path, ROUTER4)       # checked against what router4 can hold
    routes = config.apply(NextHopTable(words), LocalAddresses(l4, l6))   # -> RouteSet

The format is in docs/control-plane.md ("Neighbours and ports").  tomllib gives no
positions, so `_Locator` finds the line of each table and key in the text: every error
names file:line, what is wrong and what to do.

Loading is the one validator: it checks the file against a `ConfigTarget` (the program's
ports, table sizes and address families) by a dry run of `apply` on scratch tables of
those sizes, so `npkit router check` and `npkit router run` accept and refuse the same
configs.
"""

from __future__ import annotations

import ipaddress
import math
import re
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from npkit.base.errors import NpkitError
from npkit.runtime.neighbours import (
    NEXTHOP_WORDS,
    IPAddress,
    IPNetwork,
    LocalAddresses,
    Neighbours,
    NextHopTable,
    PortConfig,
    Ports,
    mac_to_int,
)
from npkit.runtime.routes import DEFAULT_SEED, RouteFileError, RouteSet, load_routes

# the sizes of router_common.mbl's memories, for checking a config without a program
DEFAULT_NEXTHOPS = 1024
DEFAULT_LOCAL_SLOTS = 16
DEFAULT_PORTS = 16         # port_table: the data plane's per-port records

PORT_KEYS = {"port", "mac", "ipv4", "ipv6", "mtu"}
NEIGHBOUR_KEYS = {"port", "ip", "mac"}
NEXTHOP_KEYS = {"index", "port", "via"}
ROUTE_KEYS = {"prefix", "via", "port"}
ROUTES_FILE_KEYS = {"file", "seed", "next_hops"}
TOP_KEYS = {"port", "neighbour", "nexthop", "route", "routes", "icmp"}
ICMP_KEYS = {"rate", "burst"}
MAX_ICMP_RATE = 1e9      # messages/s: one a nanosecond, the token bucket's resolution
MAX_ICMP_BURST = 1 << 20


def subnet_router_anycast(ports: Iterable[PortConfig]) -> list[IPAddress]:
    """RFC 4291 2.6.1: a router answers the Subnet-Router anycast address (the prefix with
    a zero interface identifier) of each IPv6 prefix on its ports; not for /127 (RFC 6164
    6) or /128, where it would be a unicast address."""
    return [i.network.network_address for p in ports for i in p.ipv6
            if i.network.prefixlen < 127 and not i.ip.is_link_local]


@dataclass(frozen=True)
class ConfigTarget:
    """What a router program can hold: a config is checked against it when loaded.  The
    default is router_common.mbl's memories (any port, both families)."""

    name: str = "router_common.mbl"
    ports: int = DEFAULT_PORTS
    nexthops: int = DEFAULT_NEXTHOPS
    local4_slots: int = DEFAULT_LOCAL_SLOTS
    local6_slots: int = DEFAULT_LOCAL_SLOTS  # 0: no local6 table (and no IPv6 forwarding)
    resolves: bool = False   # runs ARP / ND: a route's gateway needs no [[neighbour]]

    @property
    def families(self) -> tuple[int, ...]:
        return (4, 6) if self.local6_slots else (4,)


DEFAULT_TARGET = ConfigTarget()


class RouterConfigError(NpkitError, ValueError):
    """A router config that cannot be used; the message is `file:line: what; what to do`."""


@dataclass(frozen=True)
class NeighbourEntry:
    port: int
    ip: IPAddress
    mac: int
    line: int


@dataclass(frozen=True)
class NextHopEntry:
    """An explicit next-hop index (the indices a route file names)."""

    index: int
    port: int
    via: IPAddress
    line: int


@dataclass(frozen=True)
class RouteEntry:
    """`via` a gateway (its port found from the port subnets unless given), or connected:
    `port` alone declares the prefix on-link there."""

    prefix: IPNetwork
    via: IPAddress | None
    port: int | None
    line: int


@dataclass(frozen=True)
class RouteFileEntry:
    """A route file (runtime/routes.py formats); prefix-only lines get next hops 0..n-1 by
    routes.assign_next_hop(prefix, seed, next_hops)."""

    path: Path
    seed: int
    next_hops: int | None
    line: int


class _Locator:
    """Lines of TOML tables and keys, found by scanning the text: `[[name]]` headers counted
    per name, `[name]` headers, `key =` lines inside the current table."""

    HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.-]+)\s*\]\]?")
    KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")

    def __init__(self, text: str) -> None:
        self.tables: dict[tuple[str | None, int], int] = {(None, 0): 1}
        self.keys: dict[tuple[str | None, int, str], int] = {}
        counts: dict[str, int] = {}
        current: tuple[str | None, int] = (None, 0)
        for number, line in enumerate(text.splitlines(), 1):
            header = self.HEADER.match(line)
            if header:
                name = header.group(2)
                index = counts.get(name, 0) if header.group(1) == "[[" else 0
                counts[name] = index + 1
                current = (name, index)
                self.tables.setdefault(current, number)
                continue
            key = self.KEY.match(line)
            if key:
                self.keys.setdefault((*current, key.group(1)), number)

    def line(self, table: str | None, index: int = 0, key: str | None = None) -> int:
        if key is not None:
            if (table, index, key) in self.keys:
                return self.keys[(table, index, key)]
            if table is None and (key, 0) in self.tables:  # a top-level [key] table
                return self.tables[(key, 0)]
        if (table, index) in self.tables:
            return self.tables[(table, index)]
        if table is not None and (None, 0, table) in self.keys:  # `routes = {...}` inline
            return self.keys[(None, 0, table)]
        return 1


class _Reader:
    """Typed access to one TOML table with errors at its lines."""

    def __init__(self, path: Path, where: _Locator, table: str | None, index: int,
                 data: dict[str, Any], label: str) -> None:
        self.path, self.where, self.table, self.index = path, where, table, index
        self.data, self.label = data, label

    @property
    def line(self) -> int:
        return self.where.line(self.table, self.index)

    def error(self, message: str, key: str | None = None) -> RouterConfigError:
        line = self.where.line(self.table, self.index, key)
        return RouterConfigError(f"{self.path}:{line}: {self.label}: {message}")

    def check_keys(self, allowed: set[str], required: set[str]) -> None:
        for key in self.data:
            if key not in allowed:
                raise self.error(f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})",
                                 key)
        for key in sorted(required - self.data.keys()):
            raise self.error(f"missing {key} = ...; add it")

    def get(self, key: str, kind: type, default: Any = None) -> Any:
        value = self.data.get(key, default)
        if value is default:
            return value
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.error(f"{key} must be an integer, not {value!r}", key)
        if kind is str and not isinstance(value, str):
            raise self.error(f"{key} must be a string, not {value!r}", key)
        if kind is list and not (isinstance(value, list)
                                 and all(isinstance(v, str) for v in value)):
            raise self.error(f"{key} must be a list of strings, not {value!r}", key)
        return value

    def parse(self, key: str, convert, what: str) -> Any:
        value = self.data[key]
        try:
            return convert(value)
        except ValueError as exc:
            raise self.error(f"{key} = {value!r}: {exc}; give {what}", key) from None

    @contextmanager
    def at(self, key: str | None = None) -> Iterator[None]:
        """Errors of the tables (NeighbourError, ...) as errors at this entry's line."""
        try:
            yield
        except RouterConfigError:
            raise
        except ValueError as exc:
            raise self.error(str(exc), key) from None


def _ip(text: str) -> IPAddress:
    return ipaddress.ip_address(text)


def _prefix(text: str) -> IPNetwork:
    try:
        return ipaddress.ip_network(text)
    except ValueError as exc:
        if "host bits set" in str(exc):
            raise ValueError("host bits set (did you mean the network address?)") from None
        raise


def _port(r: _Reader) -> int:
    port = r.get("port", int)
    if port is not None and port < 0:
        raise r.error(f"port {port} is negative", "port")
    return port


@dataclass(frozen=True)
class RouterConfig:
    path: Path
    ports: tuple[PortConfig, ...] = ()
    neighbours: tuple[NeighbourEntry, ...] = ()
    nexthops: tuple[NextHopEntry, ...] = ()
    routes: tuple[RouteEntry, ...] = ()
    route_file: RouteFileEntry | None = None
    icmp: dict[str, Any] = field(default_factory=dict)
    port_lines: dict[int, int] = field(default_factory=dict)

    # ---- reading ----
    @classmethod
    def load(cls, path: str | Path, target: ConfigTarget = DEFAULT_TARGET) -> RouterConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RouterConfigError(f"cannot read router config {path}: "
                                    f"{getattr(exc, 'strerror', None) or exc}") from None
        return cls.loads(text, path, target)

    @classmethod
    def loads(cls, text: str, path: str | Path = "<config>",
              target: ConfigTarget = DEFAULT_TARGET) -> RouterConfig:
        """Parse and check a config against `target` (a dry run of `apply` on scratch
        tables of its sizes catches what needs the tables: ports that exist, neighbours
        on-link, gateways known, addresses of a family the program has...)."""
        path = Path(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            found = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
            where = f"{found.group(1)}:{found.group(2)}" if found else "1"
            message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
            raise RouterConfigError(f"{path}:{where}: TOML syntax: {message}") from None
        where = _Locator(text)
        top = _Reader(path, where, None, 0, data, "config")
        for key in data:
            if key not in TOP_KEYS:
                raise top.error(f"unknown table or key {key!r} (allowed: "
                                f"{', '.join(sorted(TOP_KEYS))})", key)
        config = cls(path, *cls._tables(path, where, data))
        config.check_families(target)
        local6 = np.zeros(target.local6_slots * 6, np.uint32) if target.local6_slots else None
        nexthops = NextHopTable(np.zeros(target.nexthops * NEXTHOP_WORDS, np.uint32),
                                ports=target.ports)
        routes = config.apply(
            nexthops, LocalAddresses(np.zeros(target.local4_slots * 3, np.uint32), local6),
            Neighbours(Ports(count=target.ports), nexthops, resolving=target.resolves))
        if routes.v6 and 6 not in target.families and config.route_file is not None:
            raise config._error(config.route_file.line, f"routes: {config.route_file.path} "
                                f"has IPv6 routes; {target.name} forwards IPv4 only")
        return config

    def check_families(self, target: ConfigTarget) -> None:
        """Every address and route of a family `target` forwards."""
        if 6 in target.families:
            return
        what = f"{target.name} forwards IPv4 only (no local6 / fib6 tables)"
        for p in self.ports:
            if p.ipv6:
                raise self._error(self.port_lines[p.port], f"[[port]] {p.port}: {what}; "
                                  "remove ipv6 = [...]")
        for n in self.neighbours:
            if n.ip.version == 6:
                raise self._error(n.line, f"[[neighbour]] {n.ip}: {what}")
        for nh in self.nexthops:
            if nh.via.version == 6:
                raise self._error(nh.line, f"[[nexthop]] {nh.index}: {what}")
        for r in self.routes:
            if r.prefix.version == 6:
                raise self._error(r.line, f"[[route]] {r.prefix}: {what}")

    @staticmethod
    def _entries(path: Path, where: _Locator, data: dict, name: str) -> Iterator[_Reader]:
        items = data.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            line = where.line(None, 0, name)
            raise RouterConfigError(f"{path}:{line}: {name} must be written [[{name}]] "
                                    "tables")
        for index, item in enumerate(items):
            yield _Reader(path, where, name, index, item, f"[[{name}]] #{index + 1}")

    @classmethod
    def _tables(cls, path: Path, where: _Locator, data: dict) -> tuple:
        ports: list[PortConfig] = []
        port_lines: dict[int, int] = {}
        for r in cls._entries(path, where, data, "port"):
            r.check_keys(PORT_KEYS, {"port", "mac"})
            port = _port(r)
            if port in port_lines:
                raise r.error(f"port {port} is already configured at line {port_lines[port]}",
                              "port")
            mac = r.parse("mac", lambda v: mac_to_int(str(v)), 'a MAC like "02:00:00:00:00:01"')
            ipv4 = r.get("ipv4", list, [])
            ipv6 = r.get("ipv6", list, [])
            for key, values, version in (("ipv4", ipv4, 4), ("ipv6", ipv6, 6)):
                for v in values:
                    try:
                        interface = ipaddress.ip_interface(v)
                    except ValueError:
                        interface = None
                    if interface is None or interface.version != version or "/" not in v:
                        raise r.error(f"{v!r} is not an IPv{version} address with a prefix "
                                      f"length; give e.g. "
                                      f"{'192.0.2.1/24' if version == 4 else '2001:db8::1/64'}",
                                      key)
            mtu = r.get("mtu", int, 1500)
            ports.append(PortConfig.of(port, mac, ipv4, ipv6, mtu))
            port_lines[port] = r.line
        neighbours: dict[tuple[int, IPAddress], NeighbourEntry] = {}
        for r in cls._entries(path, where, data, "neighbour"):
            r.check_keys(NEIGHBOUR_KEYS, NEIGHBOUR_KEYS)
            r.get("ip", str)
            n = NeighbourEntry(
                _port(r), r.parse("ip", _ip, "an IPv4 or IPv6 address"),
                r.parse("mac", lambda v: mac_to_int(str(v)), 'a MAC like "02:00:00:00:00:01"'),
                r.line)
            if (n.port, n.ip) in neighbours:
                raise r.error(f"neighbour {n.ip} on port {n.port} is already given at line "
                              f"{neighbours[(n.port, n.ip)].line}; keep one", "ip")
            neighbours[(n.port, n.ip)] = n
        nexthops: dict[int, NextHopEntry] = {}
        for r in cls._entries(path, where, data, "nexthop"):
            r.check_keys(NEXTHOP_KEYS, NEXTHOP_KEYS)
            r.get("via", str)
            nh = NextHopEntry(r.get("index", int), _port(r),
                              r.parse("via", _ip, "the gateway's IP address"), r.line)
            if nh.index in nexthops:
                raise r.error(f"next hop {nh.index} is already given at line "
                              f"{nexthops[nh.index].line}; keep one", "index")
            nexthops[nh.index] = nh
        routes = []
        for r in cls._entries(path, where, data, "route"):
            r.check_keys(ROUTE_KEYS, {"prefix"})
            r.get("prefix", str)
            prefix = r.parse("prefix", _prefix, 'a prefix like "10.0.0.0/8"')
            via = None
            if "via" in r.data:
                r.get("via", str)
                via = r.parse("via", _ip, "the gateway's IP address")
                if via.version != prefix.version:
                    raise r.error(f"an IPv{prefix.version} prefix needs an "
                                  f"IPv{prefix.version} gateway, not {via}", "via")
            port = _port(r)
            if via is None and port is None:
                raise r.error('give via = "gateway IP" or port = N (a connected prefix)')
            routes.append(RouteEntry(prefix, via, port, r.line))
        return (tuple(ports), tuple(neighbours.values()), tuple(nexthops.values()),
                tuple(routes),
                cls._route_file(path, where, data), cls._icmp(path, where, data), port_lines)

    @staticmethod
    def _route_file(path: Path, where: _Locator, data: dict) -> RouteFileEntry | None:
        if "routes" not in data:
            return None
        value = data["routes"]
        r = _Reader(path, where, "routes", 0, value if isinstance(value, dict) else {},
                    "routes")
        if isinstance(value, str):
            file, seed, next_hops = value, DEFAULT_SEED, None
        elif isinstance(value, dict):
            r.check_keys(ROUTES_FILE_KEYS, {"file"})
            file = r.get("file", str)
            seed = r.get("seed", int, DEFAULT_SEED)
            next_hops = r.get("next_hops", int, None)
            if next_hops is not None and next_hops < 1:
                raise r.error(f"next_hops = {next_hops}: give at least 1", "next_hops")
        else:
            raise r.error('write routes = "file" or [routes] with file = "..."')
        resolved = (path.parent / file) if not Path(file).is_absolute() else Path(file)
        return RouteFileEntry(resolved, seed, next_hops, r.where.line("routes", 0, "file"))

    @staticmethod
    def _icmp(path: Path, where: _Locator, data: dict) -> dict[str, Any]:
        value = data.get("icmp", {})
        r = _Reader(path, where, "icmp", 0, value if isinstance(value, dict) else {}, "[icmp]")
        if not isinstance(value, dict):
            raise r.error("write [icmp] as a table of settings")
        r.check_keys(ICMP_KEYS, set())
        rate = value.get("rate", 10.0)
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not (
                math.isfinite(rate) and 0 < rate <= MAX_ICMP_RATE):
            raise r.error(f"rate = {rate!r}: rate must be a number of ICMP errors per second "
                          f"in (0, {MAX_ICMP_RATE:g}]", "rate")
        burst = r.get("burst", int, 10)
        if not 1 <= burst <= MAX_ICMP_BURST:
            raise r.error(f"burst = {burst}: give 1..{MAX_ICMP_BURST} messages", "burst")
        return dict(value)

    # ---- writing the tables ----
    def _error(self, line: int, message: str) -> RouterConfigError:
        return RouterConfigError(f"{self.path}:{line}: {message}")

    @contextmanager
    def _at(self, line: int, label: str) -> Iterator[None]:
        try:
            yield
        except RouterConfigError:
            raise
        except ValueError as exc:
            raise self._error(line, f"{label}: {exc}") from None

    def apply(self, nexthops: NextHopTable, local: LocalAddresses,
              neighbours: Neighbours | None = None) -> RouteSet:
        """Write the ports' addresses into `local`, the neighbours' next hops into
        `nexthops`, and return the routes (prefix -> next-hop index) for the route manager.
        Pass `neighbours` (built on the same `nexthops`) to keep managing them afterwards."""
        if neighbours is None:
            neighbours = Neighbours(Ports(count=nexthops.ports), nexthops)
        elif neighbours.nexthops is not nexthops:
            raise ValueError("neighbours must manage the same NextHopTable")
        ports = neighbours.ports
        for p in self.ports:
            with self._at(self.port_lines[p.port], f"[[port]] {p.port}"):
                ports.set(p)
                if p.port >= nexthops.ports:
                    raise ValueError(f"the program has ports 0..{nexthops.ports - 1}")
        for route in self.routes:
            if route.via is None:
                with self._at(route.line, f"[[route]] {route.prefix}"):
                    ports.add_on_link(route.port, route.prefix)
        with self._at(min(self.port_lines.values(), default=1), "the router's own addresses"):
            local.sync([*ports.router_addresses(), *subnet_router_anycast(ports)])
        for n in self.neighbours:
            with self._at(n.line, f"[[neighbour]] {n.ip}"):
                neighbours.set(n.port, n.ip, n.mac)
        for nh in self.nexthops:
            with self._at(nh.line, f"[[nexthop]] {nh.index}"):
                neighbours.bind(nh.index, nh.port, nh.via)
        routes = self._file_routes()
        for p in ports:  # connected prefixes: unresolved hosts go to the slow path
            for net in ports.on_link(p.port):
                table = routes.v4 if net.version == 4 else routes.v6
                table[(int(net.network_address), net.prefixlen)] = neighbours.glean_for(p.port)
        for n in self.neighbours:  # every neighbour is on-link: a host route to it
            if n.ip.is_link_local:
                continue  # the data plane never forwards to link-local addresses
            table = routes.v4 if n.ip.version == 4 else routes.v6
            with self._at(n.line, f"[[neighbour]] {n.ip}"):
                table[(int(n.ip), n.ip.max_prefixlen)] = neighbours.next_hop_for(n.port, n.ip)
        seen: dict[IPNetwork, int] = {}
        for route in self.routes:
            label = f"[[route]] {route.prefix}"
            if route.prefix in seen:
                raise self._error(route.line, f"{label} is already given at line "
                                  f"{seen[route.prefix]}; keep one")
            seen[route.prefix] = route.line
            if route.via is None:
                continue  # connected: on-link only, its neighbours got host routes
            with self._at(route.line, label):
                port = route.port
                if port is None:
                    candidates = ports.connected(route.via)
                    if not candidates:
                        raise ValueError(f"gateway {route.via} is on no port's subnet: fix "
                                         "it or add port = N")
                    port = candidates[0]
                if neighbours.get(port, route.via) is None and not neighbours.resolving:
                    raise ValueError(f"no [[neighbour]] with ip = \"{route.via}\" on port "
                                     f"{port}; add one (the data plane does not resolve "
                                     "addresses)")
                table = routes.v4 if route.prefix.version == 4 else routes.v6
                key = (int(route.prefix.network_address), route.prefix.prefixlen)
                table[key] = neighbours.next_hop_for(port, route.via)
        return routes

    def _file_routes(self) -> RouteSet:
        entry = self.route_file
        if entry is None:
            return RouteSet()
        defined = {nh.index for nh in self.nexthops}
        count = entry.next_hops or max(len(defined), 1)
        try:
            routes = load_routes(entry.path, seed=entry.seed, next_hops=count)
        except RouteFileError as exc:
            raise self._error(entry.line, f"routes: {exc}") from None
        used = {nh for table in (routes.v4, routes.v6) for nh in table.values()}
        missing = sorted(used - defined)
        if missing:
            shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
            raise self._error(entry.line, f"routes: {entry.path} names next hops {shown} that "
                              f"no [[nexthop]] defines; add [[nexthop]] index = "
                              f"{missing[0]}, port = ..., via = \"...\" for each")
        return RouteSet(dict(routes.v4), dict(routes.v6))
