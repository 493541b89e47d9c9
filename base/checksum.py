"""The Internet checksum (RFC 1071) and the checksums built on it, in one place.

``ones_sum`` is the 16-bit one's complement sum of big-endian words; the checksum sent is its
complement.  Because 2**16 = 1 (mod 0xFFFF), the sum with end-around carry of any number of
words is the whole byte string read as one big integer, mod 0xFFFF -- one C-speed operation
instead of a loop over words -- except that a non-zero sum is written 0xFFFF ("negative
zero"), never 0.  A received header or segment whose checksum field is included verifies
when ``internet_checksum`` of it is 0.

Addresses for the pseudo-headers are bytes: 4 of them for IPv4 (RFC 768, RFC 793), 16 for
IPv6 (RFC 8200 section 8.1).
"""

from __future__ import annotations

import struct

PROTO_TCP = 6
PROTO_UDP = 17
PROTO_ICMPV6 = 58


def ones_sum(data: bytes) -> int:
    """The folded 16-bit one's complement sum of ``data`` (odd length: a zero byte is
    appended, RFC 1071 section 4.1)."""
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    value = int.from_bytes(data, "big")
    folded = value % 0xFFFF
    return 0xFFFF if folded == 0 and value else folded


def internet_checksum(data: bytes) -> int:
    """The one's complement of the one's complement sum: the value to send, or 0 when
    ``data`` already holds a correct checksum."""
    return ~ones_sum(data) & 0xFFFF


def ipv4_header_checksum(header: bytes) -> int:
    """The checksum for bytes 10..11 of an IPv4 header (whatever they hold now)."""
    if len(header) < 20:
        raise ValueError(f"an IPv4 header has at least 20 bytes, got {len(header)}")
    return internet_checksum(bytes(header[:10]) + b"\x00\x00" + bytes(header[12:]))


def with_ipv4_checksum(header: bytes) -> bytes:
    """The IPv4 header with its checksum field filled in."""
    return (bytes(header[:10]) + struct.pack("!H", ipv4_header_checksum(header))
            + bytes(header[12:]))


def pseudo_header(src: bytes, dst: bytes, protocol: int, length: int) -> bytes:
    """The IPv4 (4-byte addresses) or IPv6 (16-byte addresses) pseudo-header that the
    UDP, TCP and ICMPv6 checksums cover before the segment."""
    if len(src) != len(dst) or len(src) not in (4, 16):
        raise ValueError(f"pseudo-header addresses must both be 4 (IPv4) or 16 (IPv6) bytes, "
                         f"got {len(src)} and {len(dst)}")
    if len(src) == 4:
        return bytes(src) + bytes(dst) + struct.pack("!BBH", 0, protocol, length)
    return bytes(src) + bytes(dst) + struct.pack("!I3xB", length, protocol)


def pseudo_header_checksum(src: bytes, dst: bytes, protocol: int, segment: bytes) -> int:
    """The transport checksum of ``segment`` (its checksum field 0 to compute it; as sent,
    to verify it: then the result is 0) over the pseudo-header for ``src`` -> ``dst``."""
    return internet_checksum(pseudo_header(src, dst, protocol, len(segment)) + bytes(segment))


def udp_checksum(src: bytes, dst: bytes, segment: bytes) -> int:
    """The UDP checksum to send; a computed 0 is sent as 0xFFFF (0 means "none", RFC 768)."""
    return pseudo_header_checksum(src, dst, PROTO_UDP, segment) or 0xFFFF


def icmp6_checksum(src: bytes, dst: bytes, message: bytes) -> int:
    """The ICMPv6 checksum (RFC 4443 section 2.3) of ``message``."""
    return pseudo_header_checksum(src, dst, PROTO_ICMPV6, message)


def update_checksum(checksum: int, old: int, new: int) -> int:
    """The checksum after one 16-bit word of the covered data changes from ``old`` to
    ``new``, without summing the rest again (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'))."""
    total = (~checksum & 0xFFFF) + (~old & 0xFFFF) + (new & 0xFFFF)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
