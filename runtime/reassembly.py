"""Reassembly of IPv4 and IPv6 datagrams addressed to the router (RFC 791 3.2, RFC 815;
RFC 8200 4.5), with bounded buffers and a timeout.

Fragments are kept per datagram (IPv4: source, destination, protocol, identification;
IPv6: source, destination, identification) until every byte from 0 to the end given by
the last fragment has arrived.  A fragment that overlaps another with different bytes
discards the whole datagram (RFC 5722 for IPv6; Linux does the same for IPv4); so does a
datagram that would exceed 65,535 bytes.  At most `max_datagrams` are in progress and
`max_bytes` held in all: a new datagram beyond that is refused (the oldest are not evicted,
so a flood of first fragments cannot push out the datagrams already under way).  After
`timeout_ns` a datagram is dropped and, when its first fragment had arrived, returned by
`expire` for a Time Exceeded "fragment reassembly time exceeded" (RFC 792, RFC 8200 4.5).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from npkit.base.checksum import internet_checksum
from npkit.runtime.icmp import IPv4Info, IPv6Info

SECOND = 1_000_000_000
MAX_DATAGRAM = 0xFFFF
IPV6_FRAGMENT, IPV6_EXTENSIONS = 44, (0, 43, 60)


@dataclass(frozen=True)
class ReassemblyLimits:
    """timeout_ns: Linux's ipfrag_time (30 s; RFC 8200 4.5 says 60 s for IPv6, RFC 791 a
    15 s initial timer); max_datagrams / max_bytes: the buffers (Linux bounds bytes,
    ipfrag_high_thresh 4 MB; a router needs far fewer for the datagrams sent to it)."""

    timeout_ns: int = 30 * SECOND
    max_datagrams: int = 64
    max_bytes: int = 256 * 1024

    def __post_init__(self) -> None:
        if min(self.timeout_ns, self.max_datagrams, self.max_bytes) <= 0:
            raise ValueError("reassembly limits must be positive")


@dataclass
class _Datagram:
    deadline: int
    pieces: dict[int, bytes] = field(default_factory=dict)   # byte offset -> data
    end: int | None = None               # total data length, once the last piece is in
    first: bytes | None = None           # the fragment with offset 0 (its headers)
    prefix: bytes = b""                  # IPv4 header / IPv6 unfragmentable part
    held: int = 0


@dataclass(frozen=True)
class Expired:
    family: int
    first: bytes | None                  # the offset-0 fragment, if it had arrived


def ipv6_fragment_header(packet: bytes) -> tuple[int, int] | None:
    """(offset of the Fragment header, offset of the Next Header byte that names it) in
    an IPv6 packet, walking Hop-by-Hop, Routing and Destination Options headers."""
    nh, off, pointer = packet[6], 40, 6
    while nh in IPV6_EXTENSIONS:
        if off + 8 > len(packet):
            return None
        nh, pointer, off = packet[off], off, off + (packet[off + 1] + 1) * 8
    if nh != IPV6_FRAGMENT or off + 8 > len(packet):
        return None
    return off, pointer


class Reassembler:
    """Datagrams in progress for both families; `add4` / `add6` return the whole datagram
    once its last missing fragment arrives, else None."""

    def __init__(self, limits: ReassemblyLimits | None = None) -> None:
        self.limits = limits or ReassemblyLimits()
        self._datagrams: dict[tuple, _Datagram] = {}
        self.counters: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    @property
    def held_bytes(self) -> int:
        return sum(d.held for d in self._datagrams.values())

    def __len__(self) -> int:
        return len(self._datagrams)

    def add4(self, ip: IPv4Info, now_ns: int) -> bytes | None:
        key = (4, ip.src, ip.dst, ip.protocol, ip.ident)
        return self._add(key, ip.fragment_offset * 8, ip.payload, ip.more_fragments,
                         ip.header if ip.fragment_offset == 0 else None, ip.packet, now_ns)

    def add6(self, ip: IPv6Info, now_ns: int) -> bytes | None:
        found = ipv6_fragment_header(ip.packet)
        if found is None:
            self._count("dropped.malformed")
            return None
        off, pointer = found
        packet = ip.packet
        offset_m = struct.unpack_from("!H", packet, off + 2)[0]
        ident = struct.unpack_from("!I", packet, off + 4)[0]
        offset, more, data = offset_m & ~7, bool(offset_m & 1), packet[off + 8:]
        if more and len(data) % 8:            # RFC 8200 4.5: a multiple of 8 octets
            self._count("dropped.malformed")
            return None
        prefix = None
        if offset == 0:   # the unfragmentable part, naming the fragment's Next Header
            prefix = bytearray(packet[:off])
            prefix[pointer] = packet[off]
            prefix = bytes(prefix)
        return self._add((6, ip.src, ip.dst, ident), offset, data, more, prefix, packet,
                         now_ns)

    def _add(self, key: tuple, offset: int, data: bytes, more: bool, prefix: bytes | None,
             packet: bytes, now_ns: int) -> bytes | None:
        self.expire(now_ns)
        d = self._datagrams.get(key)
        if d is None:
            if len(self._datagrams) >= self.limits.max_datagrams or \
                    self.held_bytes + len(data) > self.limits.max_bytes:
                self._count("dropped.no_buffer")
                return None
            d = self._datagrams[key] = _Datagram(now_ns + self.limits.timeout_ns)
        elif self.held_bytes + len(data) > self.limits.max_bytes:
            self._count("dropped.no_buffer")
            return None
        end = offset + len(data)
        header_len = len(prefix) if prefix is not None else len(d.prefix)
        if (not more and d.end is not None and d.end != end) or \
                (d.end is not None and end > d.end) or header_len + end > MAX_DATAGRAM or \
                self._overlaps(d, offset, data):
            del self._datagrams[key]
            self._count("dropped.inconsistent")
            return None
        if offset not in d.pieces:
            d.pieces[offset] = data
            d.held += len(data)
        if not more:
            d.end = end
        if prefix is not None:
            d.prefix, d.first = prefix, packet
        return self._complete(key, d)

    @staticmethod
    def _overlaps(d: _Datagram, offset: int, data: bytes) -> bool:
        """True when the piece overlaps one held, unless it repeats it exactly."""
        end = offset + len(data)
        for start, held in d.pieces.items():
            if start < end and offset < start + len(held):
                if start != offset or held != data:
                    return True
        return False

    def _complete(self, key: tuple, d: _Datagram) -> bytes | None:
        if d.end is None or d.first is None:
            return None
        at, parts = 0, []
        for start in sorted(d.pieces):
            if start != at:
                return None
            parts.append(d.pieces[start])
            at += len(d.pieces[start])
        if at != d.end:
            return None
        del self._datagrams[key]
        self._count("reassembled")
        data = b"".join(parts)
        if key[0] == 4:
            header = bytearray(d.prefix)
            struct.pack_into("!H", header, 2, len(header) + len(data))
            struct.pack_into("!H", header, 6, 0)          # flags and offset: whole
            header[10:12] = b"\0\0"
            struct.pack_into("!H", header, 10, internet_checksum(bytes(header)))
            return bytes(header) + data
        prefix = bytearray(d.prefix)
        struct.pack_into("!H", prefix, 4, len(prefix) - 40 + len(data))
        return bytes(prefix) + data

    def expire(self, now_ns: int) -> list[Expired]:
        """Drop the datagrams whose time is up; those whose first fragment arrived are
        returned for the ICMP Time Exceeded (code 1)."""
        gone = [k for k, d in self._datagrams.items() if d.deadline <= now_ns]
        out = []
        for key in gone:
            d = self._datagrams.pop(key)
            self._count("dropped.timeout")
            out.append(Expired(key[0], d.first))
        return out
