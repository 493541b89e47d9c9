"""The exception path: exception code + frame from the data plane -> frames to inject.

docs/control-plane.md ("Exception path") says what each code does and which RFC rule
applies.  Every input ends in exactly one counted outcome: a counter named `sent.*`,
`suppressed.*`, `forwarded.*`, `consumed.*` or `dropped.*` goes up by one per `handle`.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from npkit.base.checksum import internet_checksum
from npkit.base.headers import ipv4_header
from npkit.runtime.icmp import (
    ICMP6_DEST_UNREACHABLE,
    ICMP6_PACKET_TOO_BIG,
    ICMP6_PARAMETER_PROBLEM,
    ICMP6_TIME_EXCEEDED,
    ICMP_ECHO_REQUEST,
    IPPROTO_ICMP,
    IPPROTO_ICMPV6,
    IPPROTO_TCP,
    IPPROTO_UDP,
    PARAM6_HEADER,
    PARAM6_NEXT_HEADER,
    PARAM6_OPTION,
    UNREACH6_ADDRESS,
    UNREACH6_ADMIN_PROHIBITED,
    UNREACH6_NO_ROUTE,
    UNREACH6_PORT,
    UNREACH_ADMIN_PROHIBITED,
    UNREACH_FRAG_NEEDED,
    UNREACH_HOST,
    UNREACH_NET,
    UNREACH_PORT,
    UNREACH_PROTOCOL,
    Built,
    IcmpRateLimiter,
    IPv4Info,
    IPv6Info,
    dest_unreachable4,
    dest_unreachable6,
    echo_reply4,
    echo_reply6,
    invalid_source4,
    packet_too_big6,
    parameter_problem4,
    parameter_problem6,
    parse_ipv4,
    parse_ipv6,
    suppress4,
    suppress6,
    time_exceeded4,
    time_exceeded6,
)
from npkit.runtime.neighbours import NextHop, PortConfig, is_glean
from npkit.runtime.router_config import subnet_router_anycast


class Exc(IntEnum):
    """The exception codes of microblocks/router_common.mbl (kept equal by a test)."""

    ttl_expired = 1
    no_route = 2
    options = 3
    for_router = 4
    frag_needed = 5
    fragment = 6
    trailer = 7
    hop_limit = 17
    no_route6 = 18
    too_big = 19
    hop_by_hop = 20
    for_router6 = 21
    trailer6 = 22


IPPROTO_IGMP = 2
ALL_NODES6, ALL_ROUTERS6 = 0xFF02 << 112 | 1, 0xFF02 << 112 | 2
SITE_ROUTERS6 = 0xFF05 << 112 | 2
SOLICITED_NODE6 = 0xFF02 << 112 | 1 << 32 | 0xFF << 24          # ff02::1:ff00:0/104
NOT_IP = 0x100                  # eth_classify in microblocks/router.mbl: ARP and the rest
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETH_HEADER = 14
ETH_MIN_FRAME = 60              # without FCS: shorter frames are padded
OUTCOME_PREFIXES = ("sent.", "suppressed.", "forwarded.", "consumed.", "dropped.")

# IPv4 options (RFC 791, RFC 2113)
OPT_EOL, OPT_NOP, OPT_RR, OPT_TS, OPT_LSRR, OPT_SSRR, OPT_RA = 0, 1, 7, 68, 131, 137, 148
# IPv6 Hop-by-Hop options we recognise (RFC 8200 4.2, RFC 2711): Pad1, PadN, Router Alert
HBH_PAD1, HBH_PADN, HBH_ROUTER_ALERT = 0, 1, 5


@dataclass(frozen=True)
class Emit:
    """A complete Ethernet frame (no FCS) to transmit on `port`."""

    port: int
    frame: bytes


NextHopFn = Callable[[int], NextHop | None]
RouteLookup = Callable[[int, int], int | None]
FrameHook = Callable[[bytes, int], list[Emit]]


def ethernet_frame(dst: int, src: int, ethertype: int, payload: bytes) -> bytes:
    frame = dst.to_bytes(6, "big") + src.to_bytes(6, "big") + struct.pack("!H", ethertype)
    frame += payload
    return frame + bytes(max(0, ETH_MIN_FRAME - len(frame)))


# ---------------------------------------------------------------- IPv4 options

class OptionError(Exception):
    """A malformed IPv4 option; `pointer` is the octet offset in the IP header."""

    def __init__(self, pointer: int) -> None:
        super().__init__(f"bad IPv4 option at octet {pointer}")
        self.pointer = pointer


def ipv4_options(header: bytes) -> list[tuple[int, int, int]]:
    """(offset in the header, type, length) of each option; raises OptionError."""
    found, off = [], 20
    while off < len(header):
        kind = header[off]
        if kind == OPT_EOL:
            break
        if kind == OPT_NOP:
            found.append((off, kind, 1))
            off += 1
            continue
        if off + 1 >= len(header):
            raise OptionError(off)
        length = header[off + 1]
        if length < 2 or off + length > len(header):
            raise OptionError(off + 1)
        if kind in (OPT_RR, OPT_LSRR, OPT_SSRR):
            if length < 3:
                raise OptionError(off + 1)
            if header[off + 2] < 4:
                raise OptionError(off + 2)
        elif kind == OPT_TS:
            if length < 4:
                raise OptionError(off + 1)
            if header[off + 2] < 5:
                raise OptionError(off + 2)
            if header[off + 3] & 0xF not in (0, 1, 3):
                raise OptionError(off + 3)
        elif kind == OPT_RA and length != 4:
            raise OptionError(off + 1)
        found.append((off, kind, length))
        off += length
    return found


def apply_ipv4_options(packet: bytes, out_address: int, local: Iterable[int],
                       now_ns: int, kinds: frozenset[int] = frozenset({OPT_RR, OPT_TS})
                       ) -> bytes:
    """Record Route and Timestamp processing on the way out (RFC 791), of the option
    `kinds` given; raises OptionError when a Record Route has room for part of an address
    or a Timestamp overflow counter overflows.  The header checksum is left stale."""
    ip = parse_ipv4(packet)
    assert ip is not None
    out = bytearray(packet)
    # RFC 791: milliseconds since midnight UT; the simulated clock's 0 is midnight
    stamp = (now_ns // 1_000_000) % 86_400_000
    for off, kind, length in ipv4_options(ip.header):
        if kind not in kinds:
            continue
        ptr = out[off + 2] if length >= 3 else 0
        if kind == OPT_RR and ptr <= length:
            if ptr + 3 > length:                          # some room, not enough: in error
                raise OptionError(off + 2)
            out[off + ptr - 1:off + ptr + 3] = out_address.to_bytes(4, "big")
            out[off + 2] = ptr + 4
        elif kind == OPT_TS:
            flag = out[off + 3] & 0xF
            size = 4 if flag == 0 else 8
            if ptr + size - 1 > length:                   # full: count the overflow
                overflow = out[off + 3] >> 4
                if overflow == 15:
                    raise OptionError(off + 3)
                out[off + 3] = (overflow + 1) << 4 | flag
            elif flag == 0:
                out[off + ptr - 1:off + ptr + 3] = stamp.to_bytes(4, "big")
                out[off + 2] = ptr + 4
            elif flag == 1:
                out[off + ptr - 1:off + ptr + 7] = (out_address.to_bytes(4, "big")
                                                    + stamp.to_bytes(4, "big"))
                out[off + 2] = ptr + 8
            else:                                         # 3: only where we are prespecified
                named = int.from_bytes(out[off + ptr - 1:off + ptr + 3], "big")
                if named == out_address or named in local:
                    out[off + ptr + 3:off + ptr + 7] = stamp.to_bytes(4, "big")
                    out[off + 2] = ptr + 8
    return bytes(out)


def echo_reply_options(request: IPv4Info, reply: bytes, out_address: int,
                       local: Iterable[int], now_ns: int) -> bytes:
    """The Echo Reply `reply` (no options) with the request's Record Route and Timestamp
    options, updated (RFC 1122 3.2.2.6: they SHOULD be, "without truncation"): the
    Timestamp is stamped on arrival and both are processed again on the way out, as Linux
    does.  Options that cannot take the router's entries are left out."""
    kept = b"".join(request.header[off:off + length]
                    for off, kind, length in ipv4_options(request.header)
                    if kind in (OPT_RR, OPT_TS))
    if not kept:
        return reply
    kept += bytes(-len(kept) % 4)
    header = reply[:20]
    packet = ipv4_header(int.from_bytes(header[12:16], "big"),
                         int.from_bytes(header[16:20], "big"), header[9], len(reply) - 20,
                         ttl=header[8], tos=header[1],
                         ident=int.from_bytes(header[4:6], "big"),
                         flags_fragment=int.from_bytes(header[6:8], "big"),
                         options=kept) + reply[20:]
    try:
        packet = apply_ipv4_options(packet, request.dst, local, now_ns,
                                    frozenset({OPT_TS}))             # stamped on arrival
        packet = apply_ipv4_options(packet, out_address, local, now_ns)
    except OptionError:
        return reply
    return with_ttl(packet, header[8])                               # the checksum


def _copied_options(header: bytes) -> bytes:
    """The options a non-first fragment carries (copy flag set, RFC 791), padded."""
    kept = b"".join(header[off:off + length] for off, kind, length in ipv4_options(header)
                    if kind & 0x80)
    return kept + bytes(-len(kept) % 4)


def with_ttl(packet: bytes, ttl: int) -> bytes:
    """The IPv4 packet with a new TTL and its header checksum recomputed."""
    ip = parse_ipv4(packet)
    assert ip is not None
    header = bytearray(ip.header)
    header[8] = ttl
    header[10:12] = b"\0\0"
    header[10:12] = struct.pack("!H", internet_checksum(bytes(header)))
    return bytes(header) + ip.payload


def fragment_ipv4(packet: bytes, mtu: int) -> list[bytes]:
    """Fragments of an IPv4 packet no longer than `mtu` (RFC 791 3.2 / RFC 1812 5.2.6).

    Offsets continue the original's (it may itself be a fragment); the last fragment keeps
    the original's MF bit; non-first fragments carry only the copied options.  Raises
    ValueError when not even 8 bytes of payload fit.
    """
    ip = parse_ipv4(packet)
    if ip is None:
        raise ValueError("not a well-formed IPv4 packet")
    if ip.total_len <= mtu:
        return [ip.packet]
    options, copied = ip.header[20:], _copied_options(ip.header)
    payload, pos, pieces = ip.payload, 0, []
    while pos < len(payload) or not pieces:
        room = (mtu - 20 - len(options)) // 8 * 8
        if room <= 0:
            raise ValueError(f"MTU {mtu} leaves no room for 8 bytes after a "
                             f"{20 + len(options)}-byte header")
        chunk = payload[pos:pos + room]
        more = pos + len(chunk) < len(payload) or ip.more_fragments
        flags_fragment = (ip.flags & 0b100) << 13 | int(more) << 13 \
            | (ip.fragment_offset + pos // 8)
        pieces.append(ipv4_header(ip.src, ip.dst, ip.protocol, len(chunk), ttl=ip.ttl,
                                  tos=ip.tos, ident=ip.ident, flags_fragment=flags_fragment,
                                  options=options) + chunk)
        pos += len(chunk)
        options = copied
    return pieces


def fragment_ipv6(packet: bytes, mtu: int, ident: int) -> list[bytes]:
    """A packet the router generated (no extension headers), in fragments of at most `mtu`
    bytes (RFC 8200 4.5): each a Fragment header (Identification `ident`) and a multiple
    of 8 bytes of the payload, the last with M = 0."""
    room = (mtu - 40 - 8) // 8 * 8
    if room <= 0:
        raise ValueError(f"MTU {mtu} leaves no room for a fragment")
    payload, next_header, pieces = packet[40:], packet[6], []
    for start in range(0, len(payload), room):
        chunk = payload[start:start + room]
        more = int(start + room < len(payload))
        header = bytearray(packet[:40])
        header[4:6] = struct.pack("!H", 8 + len(chunk))
        header[6] = 44
        pieces.append(bytes(header) + struct.pack("!BBHI", next_header, 0,
                                                  start | more, ident) + chunk)
    return pieces


# ---------------------------------------------------------------- IPv6 Hop-by-Hop options

@dataclass(frozen=True)
class HopByHopVerdict:
    """What RFC 8200 4.2 says to do with a packet's Hop-by-Hop options header.

    action: "forward", "discard" (silently), "param_problem" (send code/pointer even to
    multicast), "param_problem_unicast" (send only if the destination is not multicast).
    """

    action: str
    code: int = 0
    pointer: int = 0


def process_hop_by_hop(ip: IPv6Info) -> HopByHopVerdict:
    if ip.next_header != 0:
        return HopByHopVerdict("forward")
    if ip.payload_len < 8:
        return HopByHopVerdict("param_problem", PARAM6_HEADER, 4)       # payload length
    return process_options6(ip.packet, 40)


def process_options6(packet: bytes, start: int) -> HopByHopVerdict:
    """The options of the Hop-by-Hop or Destination Options header at `start` (RFC 8200
    4.2: the option type's two high bits say what to do with one we do not know)."""
    if start + 2 > len(packet):
        return HopByHopVerdict("param_problem", PARAM6_HEADER, start)
    end = start + (packet[start + 1] + 1) * 8
    if end > len(packet):
        return HopByHopVerdict("param_problem", PARAM6_HEADER, start + 1)   # Hdr Ext Len
    off = start + 2
    while off < end:
        kind = packet[off]
        if kind == HBH_PAD1:
            off += 1
            continue
        if off + 1 >= end:
            return HopByHopVerdict("param_problem", PARAM6_HEADER, off)
        length = packet[off + 1]
        if off + 2 + length > end:
            return HopByHopVerdict("param_problem", PARAM6_HEADER, off + 1)
        if kind == HBH_ROUTER_ALERT and length != 2:
            return HopByHopVerdict("param_problem", PARAM6_HEADER, off + 1)
        if kind not in (HBH_PADN, HBH_ROUTER_ALERT):
            action = kind >> 6
            if action == 1:
                return HopByHopVerdict("discard")
            if action == 2:
                return HopByHopVerdict("param_problem", PARAM6_OPTION, off)
            if action == 3:
                return HopByHopVerdict("param_problem_unicast", PARAM6_OPTION, off)
        off += 2 + length
    return HopByHopVerdict("forward")


# ---------------------------------------------------------------- IPv6 to the router

KNOWN_UPPER6 = frozenset({IPPROTO_ICMPV6, IPPROTO_UDP, IPPROTO_TCP})
NO_NEXT_HEADER = 59


@dataclass(frozen=True)
class LocalChain:
    """What RFC 8200 4 says to do with the headers of a packet addressed to the router.

    action: "deliver" (`protocol` at `offset`), "discard", "fragment" (no reassembly here),
    "malformed", "param_problem" (`code`, `pointer`; "param_problem_unicast": only if the
    destination is not multicast) or "no_next_header".
    """

    action: str
    protocol: int = -1
    offset: int = 0
    code: int = 0
    pointer: int = 0


def local_chain6(ip: IPv6Info) -> LocalChain:
    """Walk the extension headers of a packet for us: a Hop-by-Hop header after the first
    position or a Next Header we do not implement is Parameter Problem code 1 at that Next
    Header field (RFC 8200 4, 4.1); Destination Options are processed like Hop-by-Hop ones
    (4.2, 4.6); a Routing header with Segments Left > 0 is Parameter Problem code 0 at its
    Routing Type (4.4: no type is implemented here, and RFC 5095 deprecates type 0)."""
    packet, nh, off, pointer = ip.packet, ip.next_header, 40, 6
    first = True
    while True:
        if nh in (0, 43, 44, 60) and off + 8 > len(packet):
            return LocalChain("malformed")
        if nh == 0 and first:                     # its options were processed already
            pointer, nh, off = off, packet[off], off + (packet[off + 1] + 1) * 8
        elif nh == 60:
            verdict = process_options6(packet, off)
            if verdict.action != "forward":
                return LocalChain(verdict.action, code=verdict.code, pointer=verdict.pointer)
            pointer, nh, off = off, packet[off], off + (packet[off + 1] + 1) * 8
        elif nh == 43:
            if packet[off + 3]:                   # Segments Left > 0
                return LocalChain("param_problem", code=PARAM6_HEADER, pointer=off + 2)
            pointer, nh, off = off, packet[off], off + (packet[off + 1] + 1) * 8
        elif nh == 44:
            return LocalChain("fragment")
        elif nh == NO_NEXT_HEADER:
            return LocalChain("no_next_header")
        elif nh in KNOWN_UPPER6:
            if off > len(packet):
                return LocalChain("malformed")
            return LocalChain("deliver", nh, off)
        else:
            return LocalChain("param_problem", code=PARAM6_NEXT_HEADER, pointer=pointer)
        first = False


# ---------------------------------------------------------------- the handler

@dataclass(frozen=True)
class _Input:
    frame: bytes
    in_port: int
    nh_index: int
    now_ns: int

    @property
    def link_dst(self) -> int:
        return int.from_bytes(self.frame[:6], "big")

    @property
    def ethertype(self) -> int:
        return int.from_bytes(self.frame[12:14], "big") if len(self.frame) >= 14 else -1


class ExceptionHandler:
    """Turns exceptions from the data plane into frames to inject (docs/control-plane.md).

    ports: the router's ports (addresses are the router's own; sources of its ICMP);
    next_hop(index): the next-hop table; route_lookup(family, address): the FIB;
    limiter: ICMP error rate limiter (None: unlimited);
    prohibited: next-hop indices that are administratively prohibited (blackholes);
    on_not_ip(frame, in_port): the hook for non-IP frames (ARP), returns frames to send;
    on_neighbour_discovery(frame, in_port): the hook for ICMPv6 ND messages to us.
    """

    def __init__(self, ports: Sequence[PortConfig], next_hop: NextHopFn,
                 route_lookup: RouteLookup, limiter: IcmpRateLimiter | None = None, *,
                 prohibited: Iterable[int] = (), ttl: int = 64,
                 on_not_ip: FrameHook | None = None,
                 on_neighbour_discovery: FrameHook | None = None) -> None:
        if not 1 <= ttl <= 255:
            raise ValueError(f"ICMP TTL / hop limit must be 1..255, got {ttl}")
        self.ports = {p.port: p for p in ports}
        self.next_hop = next_hop
        self.route_lookup = route_lookup
        self.limiter = limiter
        self.prohibited = frozenset(prohibited)
        self.ttl = ttl
        self.on_not_ip = on_not_ip
        self.on_neighbour_discovery = on_neighbour_discovery
        self.local4 = frozenset(int(i.ip) for p in ports for i in p.ipv4)
        self.unicast6 = frozenset(int(i.ip) for p in ports for i in p.ipv6)
        self.anycast6 = frozenset(int(a) for a in subnet_router_anycast(ports))
        self.local6 = self.unicast6 | self.anycast6
        # the groups a router joins (RFC 4291 2.8): all-nodes and all-routers of link scope,
        # all-routers of site scope, and the solicited-node group of each address
        self.groups6 = frozenset({ALL_NODES6, ALL_ROUTERS6, SITE_ROUTERS6} | {
            SOLICITED_NODE6 | a & 0xFFFFFF for a in self.local6})
        self.broadcasts4 = frozenset(int(i.network.broadcast_address) for p in ports
                                     for i in p.ipv4 if i.network.prefixlen < 31)
        self.counters: Counter[str] = Counter()
        self._ident = 0
        self._ident6 = 0
        self._dispatch: dict[int, Callable[[_Input], list[Emit]]] = {
            Exc.ttl_expired: self._ttl_expired, Exc.no_route: self._no_route,
            Exc.options: self._options, Exc.for_router: self._for_router,
            Exc.frag_needed: self._frag_needed, Exc.fragment: self._fragment,
            Exc.hop_limit: self._hop_limit, Exc.no_route6: self._no_route6,
            Exc.too_big: self._too_big, Exc.hop_by_hop: self._hop_by_hop,
            Exc.for_router6: self._for_router6, Exc.trailer: self._trailer,
            Exc.trailer6: self._trailer6, NOT_IP: self._not_ip,
        }

    # -- public

    def handle(self, code: int, frame: bytes, in_port: int, next_hop_index: int,
               now_ns: int) -> list[Emit]:
        """Frames to inject for one exception; `next_hop_index` is meta.next_hop (used by
        frag_needed, fragment and too_big), `now_ns` the simulated time."""
        try:
            name = Exc(code).name
        except ValueError:
            name = "not_ip" if code == NOT_IP else "unknown"
        self.counters[f"rx.{name}"] += 1
        action = self._dispatch.get(code)
        if action is None:
            return self._done("dropped.unknown_code")
        return action(_Input(bytes(frame), in_port, next_hop_index, now_ns))

    def neighbour_unreachable(self, frame: bytes, in_port: int, now_ns: int) -> list[Emit]:
        """For the neighbour resolver: the next hop's link address could not be resolved.
        IPv4 -> Destination Unreachable host (1); IPv6 -> address unreachable (3)."""
        self.counters["rx.neighbour_unreachable"] += 1
        pkt = _Input(bytes(frame), in_port, 0, now_ns)
        if (ip := self._ipv4(pkt)) is not None:
            return self._error4(pkt, ip, "unreachable_host", lambda src, **kw:
                                dest_unreachable4(ip.packet, src, UNREACH_HOST, **kw))
        if (ip6 := self._ipv6(pkt)) is not None:
            return self._error6(pkt, ip6, ICMP6_DEST_UNREACHABLE, UNREACH6_ADDRESS,
                                "address_unreachable", lambda src, **kw:
                                dest_unreachable6(ip6.packet, src, UNREACH6_ADDRESS, **kw))
        return self._done("dropped.malformed")

    def received(self) -> int:
        return sum(v for k, v in self.counters.items() if k.startswith("rx."))

    def outcomes(self) -> int:
        return sum(v for k, v in self.counters.items() if k.startswith(OUTCOME_PREFIXES))

    # -- plumbing

    def _done(self, outcome: str, emits: Sequence[Emit] = ()) -> list[Emit]:
        self.counters[outcome] += 1
        return list(emits)

    def _ipv4(self, pkt: _Input) -> IPv4Info | None:
        return parse_ipv4(pkt.frame[ETH_HEADER:]) if pkt.ethertype == ETHERTYPE_IPV4 else None

    def _ipv6(self, pkt: _Input) -> IPv6Info | None:
        return parse_ipv6(pkt.frame[ETH_HEADER:]) if pkt.ethertype == ETHERTYPE_IPV6 else None

    def _next_ident(self) -> int:
        self._ident = (self._ident + 1) & 0xFFFF
        return self._ident

    def _route_back(self, family: int, address: int) -> NextHop | None:
        index = self.route_lookup(family, address)
        if index is None or index in self.prohibited:
            return None
        nh = self.next_hop(index)
        # a connected prefix's glean record has no MAC: the neighbour is unresolved
        return None if nh is None or is_glean(nh) else nh

    def _source4(self, out_port: int, in_port: int) -> int | None:
        """RFC 1812 4.3.2.4: an address of the interface the message goes out on; else of
        the arrival interface; else the lowest-numbered port's (a router id)."""
        for port in (out_port, in_port, *sorted(self.ports)):
            cfg = self.ports.get(port)
            if cfg is not None and cfg.ipv4:
                return int(cfg.ipv4[0].ip)
        return None

    def _source6(self, out_port: int, in_port: int, original_dst: int) -> int | None:
        """RFC 4443 2.2: the address the packet was sent to if it is ours; else a global
        address of the outgoing interface, the arrival interface, any port."""
        if original_dst in self.unicast6:
            return original_dst
        return self._unicast6(out_port, in_port)

    def _unicast6(self, *preferred: int) -> int | None:
        """A global address of the first of `preferred` ports that has one, else of any."""
        for port in (*preferred, *sorted(self.ports)):
            cfg = self.ports.get(port)
            for iface in cfg.ipv6 if cfg is not None else ():
                if not iface.ip.is_link_local:
                    return int(iface.ip)
        return None

    def _emit(self, nh: NextHop, ethertype: int, packet: bytes) -> Emit:
        return Emit(nh.port, ethernet_frame(nh.dmac, nh.smac, ethertype, packet))

    def _error4(self, pkt: _Input, ip: IPv4Info, name: str,
                build: Callable[..., Built]) -> list[Emit]:
        reason = suppress4(ip.packet, link_dst=pkt.link_dst, local_broadcasts=self.broadcasts4)
        if reason:
            return self._done(f"suppressed.{reason}")
        back = self._route_back(4, ip.src)
        if back is None:
            return self._done("suppressed.no_route_back")
        src = self._source4(back.port, pkt.in_port)
        if src is None:
            return self._done("suppressed.no_source_address")
        if self.limiter is not None and not self.limiter.allow(4, pkt.now_ns):
            return self._done("suppressed.rate_limit")
        built = build(src, ttl=self.ttl, ident=self._next_ident(), link_dst=pkt.link_dst,
                      local_broadcasts=self.broadcasts4)
        if built.packet is None:
            return self._done(f"suppressed.{built.reason}")
        return self._done(f"sent.icmp4.{name}", [self._emit(back, ETHERTYPE_IPV4, built.packet)])

    def _error6(self, pkt: _Input, ip: IPv6Info, icmp_type: int, code: int, name: str,
                build: Callable[..., Built]) -> list[Emit]:
        reason = suppress6(ip.packet, icmp_type, code, link_dst=pkt.link_dst)
        if reason:
            return self._done(f"suppressed.{reason}")
        back = self._route_back(6, ip.src)
        if back is None:
            return self._done("suppressed.no_route_back")
        src = self._source6(back.port, pkt.in_port, ip.dst)
        if src is None:
            return self._done("suppressed.no_source_address")
        if self.limiter is not None and not self.limiter.allow(6, pkt.now_ns):
            return self._done("suppressed.rate_limit")
        built = build(src, hop_limit=self.ttl, link_dst=pkt.link_dst)
        if built.packet is None:
            return self._done(f"suppressed.{built.reason}")
        return self._done(f"sent.icmp6.{name}", [self._emit(back, ETHERTYPE_IPV6, built.packet)])

    def _unreachable4(self, pkt: _Input, ip: IPv4Info, code: int, name: str,
                      mtu: int = 0) -> list[Emit]:
        return self._error4(pkt, ip, name, lambda src, **kw:
                            dest_unreachable4(ip.packet, src, code, mtu=mtu, **kw))

    def _unreachable6(self, pkt: _Input, ip: IPv6Info, code: int, name: str) -> list[Emit]:
        return self._error6(pkt, ip, ICMP6_DEST_UNREACHABLE, code, name, lambda src, **kw:
                            dest_unreachable6(ip.packet, src, code, **kw))

    def _parameter_problem4(self, pkt: _Input, ip: IPv4Info, pointer: int) -> list[Emit]:
        return self._error4(pkt, ip, "parameter_problem", lambda src, **kw:
                            parameter_problem4(ip.packet, src, pointer, **kw))

    def _param_problem6(self, pkt: _Input, ip: IPv6Info, code: int,
                        pointer: int) -> list[Emit]:
        return self._error6(pkt, ip, ICMP6_PARAMETER_PROBLEM, code, "parameter_problem",
                            lambda src, **kw: parameter_problem6(ip.packet, src, code, pointer,
                                                                 **kw))

    # -- IPv4 codes

    def _ttl_expired(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        return self._time_exceeded4(pkt, ip)

    def _time_exceeded4(self, pkt: _Input, ip: IPv4Info) -> list[Emit]:
        return self._error4(pkt, ip, "time_exceeded", lambda src, **kw:
                            time_exceeded4(ip.packet, src, 0, **kw))

    def _no_route(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        return self._unreachable4(pkt, ip, UNREACH_NET, "unreachable_net")

    def _frag_needed(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        if pkt.nh_index in self.prohibited:
            return self._unreachable4(pkt, ip, UNREACH_ADMIN_PROHIBITED, "admin_prohibited")
        nh = self.next_hop(pkt.nh_index)
        if nh is None:
            return self._done("dropped.no_next_hop")
        if not 0 < nh.mtu <= 0xFFFF:
            return self._done("dropped.bad_next_hop_mtu")
        return self._unreachable4(pkt, ip, UNREACH_FRAG_NEEDED, "frag_needed", nh.mtu)

    def _fragment(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        return self._forward4(pkt, ip, pkt.nh_index, with_options=False)

    def _trailer(self, pkt: _Input) -> list[Emit]:
        # parse_ipv4 keeps total length bytes: the trailer stays behind (RFC 1812 5.2.2)
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        return self._forward4(pkt, ip, pkt.nh_index, with_options=False)

    def _options(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        # the fast path hands options over before its checksum and martian checks
        if internet_checksum(ip.header):
            return self._done("dropped.bad_checksum")
        try:
            options = ipv4_options(ip.header)
        except OptionError as bad:
            return self._parameter_problem4(pkt, ip, bad.pointer)
        routes = [(off, length) for off, kind, length in options if kind in (OPT_LSRR, OPT_SSRR)]
        # RFC 1812 4.2.2.1: we must accept a completed source route ending at us; any other
        # source-routed packet is dropped, RFC 7126 4.3/4.4's default
        completed = all(ip.header[off + 2] > length for off, length in routes)
        if routes and not (completed and ip.dst in self.local4):
            return self._done("dropped.source_route")
        if ip.dst == 0xFFFFFFFF or ip.dst in self.broadcasts4 or ip.dst in self.local4:
            return self._for_router_ip(pkt, ip)
        if invalid_source4(ip.src):
            return self._done("dropped.martian_source")
        if ip.dst >> 24 in (0, 127) or ip.dst >> 24 >= 240:
            return self._done("dropped.martian_destination")
        return self._forward4(pkt, ip, None, with_options=True)

    def _forward4(self, pkt: _Input, ip: IPv4Info, nh_index: int | None, *,
                  with_options: bool) -> list[Emit]:
        """The fast path's steps in software: TTL, route, MTU, options, rewrite."""
        if pkt.link_dst >> 40 & 1:          # RFC 1812 5.3.4: not from a broadcast frame
            return self._done("dropped.l2_multicast")
        if ip.ttl <= 1:
            return self._time_exceeded4(pkt, ip)
        if nh_index is None:
            nh_index = self.route_lookup(4, ip.dst)
            if nh_index is None:
                return self._unreachable4(pkt, ip, UNREACH_NET, "unreachable_net")
        if nh_index in self.prohibited:
            return self._unreachable4(pkt, ip, UNREACH_ADMIN_PROHIBITED, "admin_prohibited")
        nh = self.next_hop(nh_index)
        if nh is None:
            return self._done("dropped.no_next_hop")
        if ip.total_len > nh.mtu and ip.dont_fragment:
            if not 0 < nh.mtu <= 0xFFFF:
                return self._done("dropped.bad_next_hop_mtu")
            return self._unreachable4(pkt, ip, UNREACH_FRAG_NEEDED, "frag_needed", nh.mtu)
        packet = ip.packet
        if with_options:
            out_address = self._source4(nh.port, pkt.in_port) or 0
            try:
                packet = apply_ipv4_options(packet, out_address, self.local4, pkt.now_ns)
            except OptionError as bad:
                return self._parameter_problem4(pkt, ip, bad.pointer)
        packet = with_ttl(packet, ip.ttl - 1)
        if ip.total_len <= nh.mtu:
            return self._done("forwarded.ipv4", [self._emit(nh, ETHERTYPE_IPV4, packet)])
        try:
            pieces = fragment_ipv4(packet, nh.mtu)
        except ValueError:
            return self._done("dropped.mtu_too_small")
        self.counters["fragments_out"] += len(pieces)
        return self._done("forwarded.ipv4_fragmented",
                          [self._emit(nh, ETHERTYPE_IPV4, piece) for piece in pieces])

    def _for_router(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv4(pkt)) is None:
            return self._done("dropped.malformed")
        return self._for_router_ip(pkt, ip)

    def _for_router_ip(self, pkt: _Input, ip: IPv4Info) -> list[Emit]:
        if ip.dst == 0xFFFFFFFF or ip.dst in self.broadcasts4:
            return self._done("consumed.broadcast")       # no broadcast ping replies
        if ip.dst not in self.local4:
            return self._done("dropped.not_local")
        if ip.fragment_offset or ip.more_fragments:
            return self._done("consumed.fragment")        # no reassembly here
        if ip.protocol == IPPROTO_ICMP:
            if ip.payload[:1] != bytes([ICMP_ECHO_REQUEST]):
                return self._done("consumed.icmp")
            built = echo_reply4(ip.packet, ttl=self.ttl, ident=self._next_ident(),
                                local_broadcasts=self.broadcasts4)
            if built.packet is None:
                outcome = "suppressed" if built.reason == "invalid_source" else "dropped"
                return self._done(f"{outcome}.{built.reason}")
            back = self._route_back(4, ip.src)
            if back is None:
                return self._done("suppressed.no_route_back")
            if ip.header_len > 20:
                built = Built(echo_reply_options(ip, built.packet,
                                                 self._source4(back.port, pkt.in_port) or 0,
                                                 self.local4, pkt.now_ns))
            # RFC 791 / RFC 1122 3.3.3: a reply larger than the way back's MTU (the request
            # may have come over a larger one) leaves in fragments, as any host's would
            pieces = fragment_ipv4(built.packet, back.mtu) if 68 <= back.mtu < len(
                built.packet) else [built.packet]
            if len(pieces) > 1:
                self.counters["fragments_out"] += len(pieces)
            return self._done("sent.icmp4.echo_reply",
                              [self._emit(back, ETHERTYPE_IPV4, piece) for piece in pieces])
        if ip.protocol == IPPROTO_UDP:
            return self._unreachable4(pkt, ip, UNREACH_PORT, "unreachable_port")
        if ip.protocol == IPPROTO_TCP:
            return self._done("consumed.tcp")
        if ip.protocol == IPPROTO_IGMP:
            return self._done("consumed.igmp")
        # RFC 1122 3.2.2.1: a protocol the router does not implement
        return self._unreachable4(pkt, ip, UNREACH_PROTOCOL, "unreachable_protocol")

    # -- IPv6 codes

    def _hop_limit(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv6(pkt)) is None:
            return self._done("dropped.malformed")
        return self._time_exceeded6(pkt, ip)

    def _time_exceeded6(self, pkt: _Input, ip: IPv6Info) -> list[Emit]:
        return self._error6(pkt, ip, ICMP6_TIME_EXCEEDED, 0, "time_exceeded", lambda src, **kw:
                            time_exceeded6(ip.packet, src, 0, **kw))

    def _no_route6(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv6(pkt)) is None:
            return self._done("dropped.malformed")
        return self._unreachable6(pkt, ip, UNREACH6_NO_ROUTE, "no_route")

    def _too_big(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv6(pkt)) is None:
            return self._done("dropped.malformed")
        return self._packet_too_big(pkt, ip, pkt.nh_index)

    def _packet_too_big(self, pkt: _Input, ip: IPv6Info, nh_index: int) -> list[Emit]:
        if nh_index in self.prohibited:
            return self._unreachable6(pkt, ip, UNREACH6_ADMIN_PROHIBITED, "admin_prohibited")
        nh = self.next_hop(nh_index)
        if nh is None:
            return self._done("dropped.no_next_hop")
        if not 1280 <= nh.mtu <= 0xFFFFFFFF:          # an IPv6 link has MTU >= 1280
            return self._done("dropped.bad_next_hop_mtu")
        return self._error6(pkt, ip, ICMP6_PACKET_TOO_BIG, 0, "packet_too_big", lambda src, **kw:
                            packet_too_big6(ip.packet, src, nh.mtu, **kw))

    def _hop_by_hop(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv6(pkt)) is None:
            return self._done("dropped.malformed")
        verdict = process_hop_by_hop(ip)
        if verdict.action == "discard":
            return self._done("dropped.hbh_option_discard")
        if verdict.action == "param_problem_unicast" and ip.dst >> 120 == 0xFF:
            return self._done("suppressed.multicast_destination")
        if verdict.action != "forward":
            return self._param_problem6(pkt, ip, verdict.code, verdict.pointer)
        if ip.dst in self.local6 or ip.dst >> 120 == 0xFF:   # multicast: never forwarded
            return self._for_router6_ip(pkt, ip)
        return self._forward6(pkt, ip, None)

    def _trailer6(self, pkt: _Input) -> list[Emit]:
        # parse_ipv6 keeps 40 + payload length bytes: the trailer stays behind
        if (ip := self._ipv6(pkt)) is None:
            return self._done("dropped.malformed")
        return self._forward6(pkt, ip, pkt.nh_index)

    def _forward6(self, pkt: _Input, ip: IPv6Info, nh_index: int | None) -> list[Emit]:
        """The fast path's steps in software: hop limit, route, MTU, rewrite."""
        if pkt.link_dst >> 40 & 1:          # as for IPv4: not from a multicast frame
            return self._done("dropped.l2_multicast")
        if ip.hop_limit <= 1:
            return self._time_exceeded6(pkt, ip)
        if nh_index is None:
            nh_index = self.route_lookup(6, ip.dst)
        if nh_index is None:
            return self._unreachable6(pkt, ip, UNREACH6_NO_ROUTE, "no_route")
        if nh_index in self.prohibited:
            return self._unreachable6(pkt, ip, UNREACH6_ADMIN_PROHIBITED, "admin_prohibited")
        nh = self.next_hop(nh_index)
        if nh is None:
            return self._done("dropped.no_next_hop")
        if len(ip.packet) > nh.mtu:
            return self._packet_too_big(pkt, ip, nh_index)
        packet = ip.packet[:7] + bytes([ip.hop_limit - 1]) + ip.packet[8:]
        return self._done("forwarded.ipv6", [self._emit(nh, ETHERTYPE_IPV6, packet)])

    def _for_router6(self, pkt: _Input) -> list[Emit]:
        if (ip := self._ipv6(pkt)) is None:
            return self._done("dropped.malformed")
        return self._for_router6_ip(pkt, ip)

    def _for_router6_ip(self, pkt: _Input, ip: IPv6Info) -> list[Emit]:
        if ip.dst >> 120 == 0xFF and ip.dst not in self.groups6:
            return self._done("consumed.multicast")       # no multicast routing here
        if ip.dst not in self.local6 and ip.dst not in self.groups6:
            return self._done("dropped.not_local")
        upper = local_chain6(ip)
        if upper.action == "fragment":
            return self._done("consumed.fragment")        # no reassembly here
        if upper.action in ("malformed", "discard", "no_next_header"):
            return self._done(f"dropped.{upper.action}")
        if upper.action == "param_problem_unicast" and ip.dst >> 120 == 0xFF:
            return self._done("suppressed.multicast_destination")
        if upper.action != "deliver":
            return self._param_problem6(pkt, ip, upper.code, upper.pointer)
        if upper.protocol == IPPROTO_ICMPV6:
            icmp_type = ip.packet[upper.offset] if upper.offset < len(ip.packet) else -1
            if 133 <= icmp_type <= 137:                   # RS, RA, NS, NA, redirect
                emits = (self.on_neighbour_discovery(pkt.frame, pkt.in_port)
                         if self.on_neighbour_discovery else [])
                return self._done("consumed.neighbour_discovery", emits)
            if icmp_type != 128:
                return self._done("consumed.icmp6")
            # RFC 4443 4.2: a reply to an anycast or multicast request comes from a unicast
            # address of the interface it arrived on
            src = None if ip.dst in self.unicast6 else self._unicast6(pkt.in_port)
            built = echo_reply6(ip.packet, src, hop_limit=self.ttl)
            if built.packet is None:
                outcome = "suppressed" if built.reason == "invalid_source" else "dropped"
                return self._done(f"{outcome}.{built.reason}")
            back = self._route_back(6, ip.src)
            if back is None:
                return self._done("suppressed.no_route_back")
            pieces = [built.packet]
            if 1280 <= back.mtu < len(built.packet):      # RFC 8200 4.5, 5: the source
                self._ident6 = (self._ident6 + 1) & 0xFFFFFFFF  # fragments its own packets
                pieces = fragment_ipv6(built.packet, back.mtu, self._ident6)
                self.counters["fragments_out"] += len(pieces)
            return self._done("sent.icmp6.echo_reply",
                              [self._emit(back, ETHERTYPE_IPV6, piece) for piece in pieces])
        if upper.protocol == IPPROTO_UDP:
            return self._unreachable6(pkt, ip, UNREACH6_PORT, "port_unreachable")
        if upper.protocol == IPPROTO_TCP:
            return self._done("consumed.tcp")
        return self._done("consumed.other_protocol")

    # -- not IP

    def _not_ip(self, pkt: _Input) -> list[Emit]:
        emits = self.on_not_ip(pkt.frame, pkt.in_port) if self.on_not_ip else []
        return self._done("consumed.not_ip", emits)
