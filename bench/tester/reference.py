"""Expected-output functions for the analyzer: where a sent packet should come out, and how.

An expectation is a callable ``(TxRecord, Parsed) -> Expected``.  ``Expected.port`` None means
the device should not forward the packet (its absence is then not a loss); ``link`` / ``ip``
are the exact link header and IP packet the device should send (None: not checked).  The
link trailer (Ethernet padding and FCS) is never compared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from npkit.base.checksum import with_ipv4_checksum
from npkit.bench.tester.destinations import BITS, Routes, lpm_prefix
from npkit.bench.tester.media import Framing
from npkit.bench.tester.packet import Parsed, link_header


@dataclass(frozen=True, slots=True)
class Expected:
    port: int | None
    link: bytes | None = None
    ip: bytes | None = None


def forwarded_ip(ip: bytes) -> bytes | None:
    """The IP packet a router sends: TTL / hop limit - 1 and (IPv4) the header checksum
    recomputed; None when the packet must not be forwarded (TTL / hop limit <= 1)."""
    if ip[0] >> 4 == 4:
        if ip[8] <= 1:
            return None
        header_len = (ip[0] & 0xF) * 4
        head = ip[:8] + bytes([ip[8] - 1]) + ip[9:header_len]
        return with_ipv4_checksum(head) + ip[header_len:]
    if ip[7] <= 1:
        return None
    return ip[:7] + bytes([ip[7] - 1]) + ip[8:]


@dataclass(frozen=True)
class PassThrough:
    """A wire: input port -> output port, the frame unchanged (e.g. examples/l2wire)."""

    port_map: Mapping[int, int]

    def __call__(self, tx, parsed: Parsed) -> Expected:
        return Expected(self.port_map.get(tx.port), parsed.link, parsed.ip)


@dataclass
class RouteReference:
    """An IP router: longest-prefix match of the destination over ``routes[family]``, the
    next hop's output port from ``next_hop_port``, TTL - 1 and checksum.  ``next_hop_link``
    (next hop, family) -> expected link header, when the output link header is known;
    ``out_framing`` port -> framing builds the POS header when the port is POS."""

    routes: Mapping[int, Routes]
    next_hop_port: Callable[[int], int]
    next_hop_link: Callable[[int, int], bytes | None] | None = None
    out_framing: Mapping[int, Framing] | None = None
    _lengths: dict[int, tuple[int, ...]] = field(default_factory=dict, init=False, repr=False)
    _cache: dict[tuple[int, int], int | None] = field(default_factory=dict, init=False,
                                                       repr=False)

    def __post_init__(self) -> None:
        self._lengths = {f: tuple(sorted({n for _, n in r}, reverse=True))
                         for f, r in self.routes.items()}

    def __getstate__(self) -> dict:
        # the C++ analysis's tables (fast_analysis.compiled keeps them on the reference)
        # are rebuilt where the reference is unpickled
        return {k: v for k, v in self.__dict__.items() if k != "_fast_tables"}

    def next_hop(self, family: int, address: int) -> int | None:
        key = (family, address)
        if key not in self._cache:
            routes = self.routes.get(family, {})
            found = lpm_prefix(routes, self._lengths.get(family, ()), address, BITS[family])
            self._cache[key] = None if found is None else routes[found]
        return self._cache[key]

    def __call__(self, tx, parsed: Parsed) -> Expected:
        ip = parsed.ip
        dst = int.from_bytes(ip[16:20] if parsed.family == 4 else ip[24:40], "big")
        hop = self.next_hop(parsed.family, dst)
        out_ip = forwarded_ip(ip)
        if hop is None or out_ip is None:
            return Expected(None)
        port = self.next_hop_port(hop)
        link = None
        if self.out_framing is not None and self.out_framing.get(port) == "pos":
            link = link_header("pos", parsed.family)
        elif self.next_hop_link is not None:
            link = self.next_hop_link(hop, parsed.family)
        return Expected(port, link, out_ip)
