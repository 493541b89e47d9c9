"""ICMP and ICMPv6 messages the router originates (docs/control-plane.md, "Exception path").

Pure functions on bytes: each builds a complete IP packet (IPv4 or IPv6 header + the ICMP
message) or says, with a reason, why a rule forbids sending it:

- quoting: IPv4 errors quote as much of the offending datagram as fits in 576 bytes
  (RFC 1812 4.3.2.3); ICMPv6 errors as much as fits in 1280 bytes (RFC 4443 2.4(c));
- never-send rules: RFC 1812 4.3.2.7 and RFC 4443 2.4(e) (see `suppress4` / `suppress6`);
- rate limiting: a token bucket per family driven by the caller's clock (RFC 1812 4.3.2.8,
  RFC 4443 2.4(f)); defaults are RFC 4443's example for a small device, B=10, N=10/s.

Addresses are integers (an `ipaddress` object converts with `int()`).  The encoders are
written with `struct` so the runtime does not depend on scapy (the tests' reference).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from npkit.base.checksum import icmp6_checksum, internet_checksum
from npkit.base.headers import ipv4_header, ipv6_header

IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58
IPV6_HOPOPTS = 0
IPV6_ROUTING = 43
IPV6_FRAGMENT = 44
IPV6_AH = 51
IPV6_DSTOPTS = 60

# ICMPv4 types (RFC 792)
ICMP_ECHO_REPLY = 0
ICMP_DEST_UNREACHABLE = 3
ICMP_ECHO_REQUEST = 8
ICMP_REDIRECT = 5
ICMP_TIME_EXCEEDED = 11
ICMP_PARAMETER_PROBLEM = 12
# error types an ICMP error must never be sent about (RFC 1812 4.3.2.7): unreachable,
# source quench, redirect, time exceeded, parameter problem
ICMP_ERROR_TYPES = frozenset({3, 4, 5, 11, 12})
# Destination Unreachable codes this module accepts (RFC 792, RFC 1812 5.2.7.1)
UNREACH_NET, UNREACH_HOST, UNREACH_PROTOCOL, UNREACH_PORT = 0, 1, 2, 3
UNREACH_FRAG_NEEDED, UNREACH_ADMIN_PROHIBITED = 4, 13
REDIRECT_HOST = 1                # RFC 792: Redirect datagrams for the Host

# ICMPv6 types (RFC 4443)
ICMP6_DEST_UNREACHABLE = 1
ICMP6_PACKET_TOO_BIG = 2
ICMP6_TIME_EXCEEDED = 3
ICMP6_PARAMETER_PROBLEM = 4
ICMP6_ECHO_REQUEST = 128
ICMP6_ECHO_REPLY = 129
ICMP6_REDIRECT = 137
UNREACH6_NO_ROUTE, UNREACH6_ADMIN_PROHIBITED = 0, 1
UNREACH6_ADDRESS, UNREACH6_PORT = 3, 4
PARAM6_HEADER, PARAM6_NEXT_HEADER, PARAM6_OPTION = 0, 1, 2

IPV4_ERROR_LIMIT = 576          # RFC 1812 4.3.2.3: the whole ICMP error datagram
IPV6_ERROR_LIMIT = 1280         # RFC 4443 2.4(c): the IPv6 minimum MTU
DEFAULT_TTL = 64
ERROR_TOS = 0xC0                # precedence 6, internetwork control (RFC 1812 4.3.2.5)
BROADCAST_MAC = (1 << 48) - 1


@dataclass(frozen=True)
class Built:
    """A packet to send, or None and the reason a rule forbids sending it."""

    packet: bytes | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.packet is not None


def _refuse(reason: str) -> Built:
    return Built(None, reason)


# ---------------------------------------------------------------- checksums (headers: npkit.base)

def _icmp6_checksum(src: int, dst: int, message: bytes) -> int:
    """The ICMPv6 checksum with this module's integer addresses."""
    return icmp6_checksum(int(src).to_bytes(16, "big"), int(dst).to_bytes(16, "big"), message)


def _with_checksum(message: bytes, checksum: int) -> bytes:
    return message[:2] + struct.pack("!H", checksum) + message[4:]


# ---------------------------------------------------------------- parsing the offending packet

@dataclass(frozen=True)
class IPv4Info:
    """The fields of an IPv4 packet the rules need; `packet` excludes link padding."""

    header_len: int
    tos: int
    total_len: int
    ident: int
    flags: int            # 3 bits: reserved, DF, MF
    fragment_offset: int  # in 8-byte units
    ttl: int
    protocol: int
    src: int
    dst: int
    packet: bytes

    @property
    def dont_fragment(self) -> bool:
        return bool(self.flags & 0b010)

    @property
    def more_fragments(self) -> bool:
        return bool(self.flags & 0b001)

    @property
    def header(self) -> bytes:
        return self.packet[:self.header_len]

    @property
    def payload(self) -> bytes:
        return self.packet[self.header_len:]


def parse_ipv4(packet: bytes) -> IPv4Info | None:
    """The packet's IPv4 fields, or None unless RFC 1812 5.2.2's length checks pass."""
    if len(packet) < 20 or packet[0] >> 4 != 4:
        return None
    header_len = (packet[0] & 0xF) * 4
    (tos, total_len, ident, flags_frag, ttl, protocol,
     src, dst) = struct.unpack_from("!xBHHHBBxxII", packet)
    if header_len < 20 or not header_len <= total_len <= len(packet):
        return None
    return IPv4Info(header_len, tos, total_len, ident, flags_frag >> 13, flags_frag & 0x1FFF,
                    ttl, protocol, src, dst, bytes(packet[:total_len]))


@dataclass(frozen=True)
class IPv6Info:
    payload_len: int
    next_header: int
    hop_limit: int
    src: int
    dst: int
    packet: bytes          # header + payload, without link padding


def parse_ipv6(packet: bytes) -> IPv6Info | None:
    if len(packet) < 40 or packet[0] >> 4 != 6:
        return None
    payload_len, next_header, hop_limit = struct.unpack_from("!HBB", packet, 4)
    if 40 + payload_len > len(packet):
        return None
    return IPv6Info(payload_len, next_header, hop_limit, int.from_bytes(packet[8:24], "big"),
                    int.from_bytes(packet[24:40], "big"), bytes(packet[:40 + payload_len]))


@dataclass(frozen=True)
class UpperLayer:
    """Where the upper-layer header of an IPv6 packet starts (RFC 8200 4.1 chain)."""

    protocol: int | None      # None: not reachable (non-first fragment or truncated chain)
    offset: int
    fragmented: bool = False


def upper_layer6(info: IPv6Info) -> UpperLayer:
    """Walk the extension headers to the upper-layer header."""
    packet, nh, off, fragmented = info.packet, info.next_header, 40, False
    while nh in (IPV6_HOPOPTS, IPV6_ROUTING, IPV6_DSTOPTS, IPV6_FRAGMENT, IPV6_AH):
        if off + 8 > len(packet):
            return UpperLayer(None, off, fragmented)
        if nh == IPV6_FRAGMENT:
            fragmented = True
            if struct.unpack_from("!H", packet, off + 2)[0] >> 3:
                return UpperLayer(None, off, True)       # only the first fragment has it
            nh, off = packet[off], off + 8
        elif nh == IPV6_AH:
            nh, off = packet[off], off + (packet[off + 1] + 2) * 4
        else:
            nh, off = packet[off], off + (packet[off + 1] + 1) * 8
    if off > len(packet):
        return UpperLayer(None, len(packet), fragmented)
    return UpperLayer(nh, off, fragmented)


# ---------------------------------------------------------------- never-send rules

def _link_rule(link_dst: int | None) -> str | None:
    if link_dst is None:
        return None
    if link_dst == BROADCAST_MAC:
        return "link_broadcast"
    if link_dst >> 40 & 1:            # I/G bit of the first octet
        return "link_multicast"
    return None


def invalid_source4(src: int, local_broadcasts: Iterable[int] = ()) -> bool:
    """A source that does not name one host (RFC 1812 4.3.2.7, 5.3.7)."""
    first = src >> 24
    return first in (0, 127) or first >= 224 or src in local_broadcasts


def suppress4(original: bytes, *, link_dst: int | None = None,
              local_broadcasts: Iterable[int] = ()) -> str | None:
    """Why RFC 1812 4.3.2.7 forbids an ICMP error about `original`, or None.

    `link_dst` is the Ethernet destination the datagram arrived with; `local_broadcasts`
    the directed-broadcast addresses of the router's own subnets.
    """
    ip = parse_ipv4(original)
    if ip is None:
        return "malformed"
    broadcasts = frozenset(local_broadcasts)
    if ip.dst == 0xFFFFFFFF or ip.dst in broadcasts:
        return "broadcast_destination"
    if 224 <= ip.dst >> 24 < 240:
        return "multicast_destination"
    link = _link_rule(link_dst)
    if link:
        return link
    if invalid_source4(ip.src, broadcasts):
        return "invalid_source"
    if ip.fragment_offset:
        return "non_initial_fragment"
    if ip.protocol == IPPROTO_ICMP:
        # unreadable type: assume the worst, an error about an error must never go out
        if ip.total_len < ip.header_len + 1 or ip.packet[ip.header_len] in ICMP_ERROR_TYPES:
            return "icmp_error"
    return None


def suppress6(original: bytes, icmp_type: int, code: int, *,
              link_dst: int | None = None) -> str | None:
    """Why RFC 4443 2.4(e) forbids ICMPv6 error (`icmp_type`, `code`) about `original`.

    Packet Too Big and Parameter Problem code 2 may answer multicast (e.3-e.5 exceptions).
    """
    ip = parse_ipv6(original)
    if ip is None:
        return "malformed"
    multicast_ok = icmp_type == ICMP6_PACKET_TOO_BIG or (
        icmp_type == ICMP6_PARAMETER_PROBLEM and code == PARAM6_OPTION)
    if ip.dst >> 120 == 0xFF and not multicast_ok:
        return "multicast_destination"
    link = _link_rule(link_dst)
    if link and not multicast_ok:
        return link
    if ip.src in (0, 1) or ip.src >> 120 == 0xFF:        # ::, ::1, multicast (e.6)
        return "invalid_source"
    upper = upper_layer6(ip)
    if upper.protocol == IPPROTO_ICMPV6:
        if upper.offset >= len(ip.packet):
            return "icmp_error"                          # unreadable type: assume an error
        icmp_type_seen = ip.packet[upper.offset]
        if icmp_type_seen < 128:
            return "icmp_error"
        if icmp_type_seen == ICMP6_REDIRECT:
            return "icmp_redirect"
    return None


# ---------------------------------------------------------------- ICMPv4

def icmp4_error(original: bytes, icmp_type: int, code: int, src: int, *, rest: int = 0,
                ttl: int = DEFAULT_TTL, ident: int = 0, link_dst: int | None = None,
                local_broadcasts: Iterable[int] = ()) -> Built:
    """An ICMP error about `original` (an IPv4 packet) from `src`, or why not.

    `rest` is the second 32-bit word of the ICMP header (MTU, pointer).
    """
    reason = suppress4(original, link_dst=link_dst, local_broadcasts=local_broadcasts)
    if reason:
        return _refuse(reason)
    ip = parse_ipv4(original)
    assert ip is not None                      # suppress4 said "malformed" otherwise
    quote = ip.packet[:IPV4_ERROR_LIMIT - 20 - 8]
    message = struct.pack("!BBHI", icmp_type, code, 0, rest) + quote
    message = _with_checksum(message, internet_checksum(message))
    return Built(ipv4_header(int(src), ip.src, IPPROTO_ICMP, len(message), ttl=ttl,
                             tos=ERROR_TOS, ident=ident) + message)


def time_exceeded4(original: bytes, src: int, code: int = 0, **kw) -> Built:
    """Time Exceeded: code 0 TTL exceeded in transit, 1 reassembly time exceeded."""
    if code not in (0, 1):
        raise ValueError(f"ICMP Time Exceeded code must be 0 or 1, got {code}")
    return icmp4_error(original, ICMP_TIME_EXCEEDED, code, src, **kw)


def dest_unreachable4(original: bytes, src: int, code: int, *, mtu: int = 0, **kw) -> Built:
    """Destination Unreachable; code 4 carries the next-hop MTU (RFC 1191)."""
    if not 0 <= code <= 15:
        raise ValueError(f"ICMP Destination Unreachable code must be 0..15, got {code}")
    if code == UNREACH_FRAG_NEEDED and not 0 < mtu <= 0xFFFF:
        raise ValueError(f"fragmentation needed needs the next-hop MTU (1..65535), got {mtu}")
    return icmp4_error(original, ICMP_DEST_UNREACHABLE, code, src,
                       rest=mtu if code == UNREACH_FRAG_NEEDED else 0, **kw)


def parameter_problem4(original: bytes, src: int, pointer: int, code: int = 0, **kw) -> Built:
    """Parameter Problem, pointing at the octet of the original's header in error."""
    if not 0 <= pointer <= 0xFF:
        raise ValueError(f"Parameter Problem pointer must be 0..255, got {pointer}")
    return icmp4_error(original, ICMP_PARAMETER_PROBLEM, code, src, rest=pointer << 24, **kw)


def redirect_host4(original: bytes, src: int, gateway: int, **kw) -> Built:
    """Redirect for Host (RFC 792 type 5 code 1; RFC 1812 5.2.7.2: routers send only
    this code): `gateway` is the better first hop for the original's destination."""
    if not 0 <= gateway <= 0xFFFFFFFF:
        raise ValueError(f"redirect gateway must be an IPv4 address, got {gateway}")
    return icmp4_error(original, ICMP_REDIRECT, REDIRECT_HOST, src, rest=gateway, **kw)


def echo_reply4(request: bytes, *, ttl: int = DEFAULT_TTL, ident: int = 0,
                local_broadcasts: Iterable[int] = ()) -> Built:
    """The Echo Reply to an IPv4 Echo Request, from the address it was sent to (RFC 1122
    3.2.2.6); no reply to broadcast or multicast requests, fragments or bad checksums."""
    ip = parse_ipv4(request)
    if ip is None:
        return _refuse("malformed")
    if ip.protocol != IPPROTO_ICMP or len(ip.payload) < 8 or ip.payload[:2] != b"\x08\x00":
        return _refuse("not_echo_request")
    broadcasts = frozenset(local_broadcasts)
    if ip.dst == 0xFFFFFFFF or ip.dst in broadcasts:
        return _refuse("broadcast_destination")
    if 224 <= ip.dst >> 24 < 240:
        return _refuse("multicast_destination")
    if invalid_source4(ip.src, broadcasts):
        return _refuse("invalid_source")
    if ip.fragment_offset or ip.more_fragments:
        return _refuse("fragment")              # no reassembly in the control plane
    if internet_checksum(ip.payload):
        return _refuse("bad_checksum")
    message = b"\x00\x00\x00\x00" + ip.payload[4:]
    message = _with_checksum(message, internet_checksum(message))
    return Built(ipv4_header(ip.dst, ip.src, IPPROTO_ICMP, len(message), ttl=ttl, tos=ip.tos,
                             ident=ident) + message)


# ---------------------------------------------------------------- ICMPv6

def icmp6_error(original: bytes, icmp_type: int, code: int, src: int, *, param: int = 0,
                hop_limit: int = DEFAULT_TTL, link_dst: int | None = None) -> Built:
    """An ICMPv6 error about `original` (an IPv6 packet) from `src`, or why not.

    `param` is the 32-bit word after the checksum (MTU, pointer).
    """
    reason = suppress6(original, icmp_type, code, link_dst=link_dst)
    if reason:
        return _refuse(reason)
    ip = parse_ipv6(original)
    assert ip is not None
    quote = ip.packet[:IPV6_ERROR_LIMIT - 40 - 8]
    message = struct.pack("!BBHI", icmp_type, code, 0, param) + quote
    message = _with_checksum(message, _icmp6_checksum(src, ip.src, message))
    return Built(ipv6_header(int(src), ip.src, IPPROTO_ICMPV6, len(message),
                             hop_limit=hop_limit) + message)


def dest_unreachable6(original: bytes, src: int, code: int, **kw) -> Built:
    """Destination Unreachable: 0 no route, 1 administratively prohibited, 3 address
    unreachable, 4 port unreachable (RFC 4443 3.1; 2, 5, 6 also accepted)."""
    if not 0 <= code <= 6:
        raise ValueError(f"ICMPv6 Destination Unreachable code must be 0..6, got {code}")
    return icmp6_error(original, ICMP6_DEST_UNREACHABLE, code, src, **kw)


def packet_too_big6(original: bytes, src: int, mtu: int, **kw) -> Built:
    if not 1280 <= mtu <= 0xFFFFFFFF:
        raise ValueError(f"Packet Too Big MTU must be at least the IPv6 minimum 1280, got {mtu}")
    return icmp6_error(original, ICMP6_PACKET_TOO_BIG, 0, src, param=mtu, **kw)


def time_exceeded6(original: bytes, src: int, code: int = 0, **kw) -> Built:
    if code not in (0, 1):
        raise ValueError(f"ICMPv6 Time Exceeded code must be 0 or 1, got {code}")
    return icmp6_error(original, ICMP6_TIME_EXCEEDED, code, src, **kw)


def parameter_problem6(original: bytes, src: int, code: int, pointer: int, **kw) -> Built:
    """Parameter Problem: 0 erroneous header field, 1 unrecognized Next Header, 2
    unrecognized IPv6 option; `pointer` is the octet offset in the original packet."""
    if code not in (0, 1, 2):
        raise ValueError(f"ICMPv6 Parameter Problem code must be 0, 1 or 2, got {code}")
    return icmp6_error(original, ICMP6_PARAMETER_PROBLEM, code, src, param=pointer, **kw)


def echo_reply6(request: bytes, src: int | None = None, *,
                hop_limit: int = DEFAULT_TTL) -> Built:
    """The Echo Reply to an ICMPv6 Echo Request (RFC 4443 4.2), from the address it was
    sent to unless `src` is given (it must be for a multicast request)."""
    ip = parse_ipv6(request)
    if ip is None:
        return _refuse("malformed")
    if ip.src in (0, 1) or ip.src >> 120 == 0xFF:
        return _refuse("invalid_source")
    upper = upper_layer6(ip)
    if upper.fragmented:
        return _refuse("fragment")              # no reassembly in the control plane
    body = ip.packet[upper.offset:]
    if upper.protocol != IPPROTO_ICMPV6 or len(body) < 8 or body[:2] != b"\x80\x00":
        return _refuse("not_echo_request")
    if _icmp6_checksum(ip.src, ip.dst, body):
        return _refuse("bad_checksum")
    if src is None:
        if ip.dst >> 120 == 0xFF:
            return _refuse("multicast_destination")
        src = ip.dst
    message = bytes([ICMP6_ECHO_REPLY]) + b"\x00\x00\x00" + body[4:]
    message = _with_checksum(message, _icmp6_checksum(src, ip.src, message))
    return Built(ipv6_header(int(src), ip.src, IPPROTO_ICMPV6, len(message),
                             hop_limit=hop_limit) + message)


# ---------------------------------------------------------------- rate limiting

@dataclass
class TokenBucket:
    """A token bucket in integer nanoseconds of credit: one message costs 1e9/rate ns,
    the bucket holds `burst` messages and starts full.  Time is the caller's (simulated)."""

    rate_per_s: float = 10.0
    burst: int = 10
    _cost_ns: int = field(init=False, repr=False)
    _credit_ns: int = field(init=False, repr=False)
    _last_ns: int | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0:
            raise ValueError(f"token bucket rate must be > 0 messages/s, got {self.rate_per_s}")
        if self.burst < 1:
            raise ValueError(f"token bucket burst must be at least 1 message, got {self.burst}")
        self._cost_ns = max(1, round(1e9 / self.rate_per_s))
        self._credit_ns = self._cost_ns * self.burst

    def take(self, now_ns: int) -> bool:
        """Spend one token at `now_ns` if there is one."""
        if self._last_ns is not None and now_ns > self._last_ns:
            self._credit_ns = min(self._cost_ns * self.burst,
                                  self._credit_ns + now_ns - self._last_ns)
        if self._last_ns is None or now_ns > self._last_ns:
            self._last_ns = now_ns          # a clock going backwards earns nothing
        if self._credit_ns >= self._cost_ns:
            self._credit_ns -= self._cost_ns
            return True
        return False


@dataclass
class IcmpRateLimiter:
    """One token bucket per family for originated ICMP errors (RFC 1812 4.3.2.8, RFC 4443
    2.4(f)).  Defaults: RFC 4443's example for a small/mid-size device, B=10, N=10/s."""

    v4: TokenBucket = field(default_factory=TokenBucket)
    v6: TokenBucket = field(default_factory=TokenBucket)

    @classmethod
    def of(cls, rate_per_s: float = 10.0, burst: int = 10) -> IcmpRateLimiter:
        return cls(TokenBucket(rate_per_s, burst), TokenBucket(rate_per_s, burst))

    def allow(self, family: int, now_ns: int) -> bool:
        if family not in (4, 6):
            raise ValueError(f"address family must be 4 or 6, got {family}")
        return (self.v4 if family == 4 else self.v6).take(now_ns)


@dataclass
class RedirectLimiter:
    """Linux's per-source back-off for ICMP Redirects (net/ipv4/route.c
    ip_rt_send_redirect, its defaults): the first redirect to a source goes at once, the
    n-th only when `load_ns << (n - 1)` has passed since the one before; after `number`
    redirects nothing more goes until the source has been quiet for `silence_ns`, which
    starts it over.  At most `sources` sources are remembered (the oldest is forgotten).
    RFC 1812 4.3.2.8 asks for a limit on generated ICMP; this one is Linux's, so both
    routers redirect the same packets."""

    load_ns: int = 20_000_000              # ip_rt_redirect_load = HZ / 50
    number: int = 9                        # ip_rt_redirect_number
    silence_ns: int = 20_000_000 << 10     # ip_rt_redirect_silence = (HZ / 50) << (9 + 1)
    sources: int = 4096
    _peers: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)

    def allow(self, source: int, now_ns: int) -> bool:
        """May a redirect go to `source` at `now_ns`?  (Counts it when it may.)"""
        sent, last = self._peers.pop(source, (0, 0))
        if sent and now_ns - last > self.silence_ns:
            sent = 0
        if sent >= self.number:
            ok, last = False, now_ns             # ignored redirects: wait for silence
        elif sent == 0 or now_ns - last > self.load_ns << sent:
            ok, sent, last = True, sent + 1, now_ns
        else:
            ok = False
        self._peers[source] = (sent, last)       # most recent last
        if len(self._peers) > self.sources:
            del self._peers[next(iter(self._peers))]
        return ok
