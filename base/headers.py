"""IPv4 and IPv6 headers, built once for every layer (the router's ICMP messages, the
simulator's traffic generator, the tester's packets).  Addresses are integers (an
``ipaddress`` object converts with ``int()``); the IPv4 header checksum is filled in."""

from __future__ import annotations

import struct

from npkit.base.checksum import with_ipv4_checksum

DEFAULT_TTL = 64
IPV4_HEADER_BYTES = 20
IPV6_HEADER_BYTES = 40


def ipv4_header(src: int, dst: int, protocol: int, payload_len: int, *, ttl: int = DEFAULT_TTL,
                tos: int = 0, ident: int = 0, flags_fragment: int = 0,
                options: bytes = b"") -> bytes:
    """An IPv4 header (RFC 791) for ``payload_len`` bytes of payload, with its checksum;
    ``flags_fragment`` is the 16-bit flags + fragment offset word, ``options`` must be
    0..40 bytes in 4-byte words."""
    if len(options) % 4 or len(options) > 40:
        raise ValueError(f"IPv4 options must be 0..40 bytes in 4-byte words, got {len(options)}")
    ihl = 5 + len(options) // 4
    head = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + payload_len, ident & 0xFFFF,
                       flags_fragment, ttl, protocol, 0, int(src).to_bytes(4, "big"),
                       int(dst).to_bytes(4, "big")) + bytes(options)
    return with_ipv4_checksum(head)


def ipv6_header(src: int, dst: int, next_header: int, payload_len: int, *,
                hop_limit: int = DEFAULT_TTL, traffic_class: int = 0,
                flow_label: int = 0) -> bytes:
    """An IPv6 header (RFC 8200) for ``payload_len`` bytes of payload."""
    return struct.pack("!IHBB16s16s", 6 << 28 | traffic_class << 20 | flow_label, payload_len,
                       next_header, hop_limit, int(src).to_bytes(16, "big"),
                       int(dst).to_bytes(16, "big"))
