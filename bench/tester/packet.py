"""Test packets: IPv4/IPv6 (+ UDP) carrying the tester's signature, and their parsing.

Layout of every packet the tester sends::

    [link header] IP header (TTL / hop limit 64) [UDP header] signature filler [Ethernet FCS]

The **signature** (20 bytes, network byte order) follows the IP header, or the UDP header
when there is one:

    magic "NPkT" (4) | stream id (2) | sequence number (4) | send time, ps (6) | CRC-32 (4)

The send time is the instant the frame's first bit starts on the tester's wire, in
picoseconds from the start of the run (48 bits: 281 s).  The CRC-32 (zlib / IEEE 802.3)
covers the 16 signature bytes before it and every payload byte after it (the filler), so a
flipped bit anywhere in the payload is detected.

**Transport.**  UDP (IPv4 checksum computed, never 0 unless asked; IPv6 checksum always)
when the packet has room for it, else the signature directly follows the IP header with
protocol / next header 253 (RFC 3692, for experimentation): the 40-byte IPv4 packets of the
NPF report have only 20 bytes after the IP header.  Smallest packets: IPv4 40 (raw) or
48 (UDP), IPv6 60 (raw) or 68 (UDP).
"""

from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass
from typing import Literal

from npkit.base.checksum import PROTO_UDP, udp_checksum
from npkit.base.headers import ipv4_header, ipv6_header
from npkit.bench.tester.media import (
    ETH_FCS,
    ETH_HEADER,
    ETH_MIN_FRAME,
    ETHERTYPE,
    PPP_ADDRESS,
    PPP_CONTROL,
    PPP_PROTOCOL,
    Framing,
)

Transport = Literal["auto", "udp", "raw"]

MAGIC = b"NPkT"
SIGNATURE = struct.Struct("!4sHI6sI")  # magic, stream, seq, time (48-bit), crc
SIGNATURE_BYTES = SIGNATURE.size  # 20
CRC_OFFSET = 16  # the CRC's position in the signature
MAX_TIME_PS = (1 << 48) - 1
PROTO_RAW = 253  # RFC 3692 experimental
IPV4_HEADER, IPV6_HEADER, UDP_HEADER = 20, 40, 8
TTL = 64
# payload filler: pseudo-random bytes sliced at an offset per packet (built once, immutable)
FILLER = random.Random("npkit-tester-filler").randbytes(9216 + 256)


def smallest_ip(family: int, transport: Transport = "auto") -> int:
    """The smallest IP packet carrying the signature (``auto``: raw IP if UDP does not fit)."""
    header = IPV4_HEADER if family == 4 else IPV6_HEADER
    return header + (UDP_HEADER if transport == "udp" else 0) + SIGNATURE_BYTES


def uses_udp(family: int, ip_len: int, transport: Transport) -> bool:
    if transport == "raw":
        return False
    if transport == "udp":
        return True
    return ip_len >= smallest_ip(family, "udp")


# --------------------------------------------------------------------------- signature
def signature_payload(stream: int, seq: int, time_ps: int, length: int) -> bytes:
    """``length`` payload bytes: the signature, then filler; the CRC covers all but itself."""
    if length < SIGNATURE_BYTES:
        raise ValueError(f"payload of {length} bytes cannot hold the {SIGNATURE_BYTES}-byte "
                         "signature")
    if not 0 <= time_ps <= MAX_TIME_PS:
        raise ValueError(f"send time {time_ps} ps outside 0..2**48-1")
    head = MAGIC + struct.pack("!HI", stream, seq) + time_ps.to_bytes(6, "big")
    start = (stream * 31 + seq) & 0xFF
    filler = FILLER[start:start + length - SIGNATURE_BYTES]
    crc = zlib.crc32(filler, zlib.crc32(head))
    return head + struct.pack("!I", crc) + filler


@dataclass(frozen=True, slots=True)
class Signature:
    stream: int
    seq: int
    time_ps: int
    crc_ok: bool


def read_signature(payload: bytes) -> Signature | None:
    """The signature at the start of ``payload``, or None when there is no magic."""
    if len(payload) < SIGNATURE_BYTES or payload[:4] != MAGIC:
        return None
    _, stream, seq, time_raw, crc = SIGNATURE.unpack_from(payload)
    computed = zlib.crc32(payload[SIGNATURE_BYTES:], zlib.crc32(payload[:CRC_OFFSET]))
    return Signature(stream, seq, int.from_bytes(time_raw, "big"), computed == crc)


# --------------------------------------------------------------------------- packets
@dataclass(frozen=True, slots=True)
class PacketSpec:
    """What one test packet carries (addresses as integers)."""

    family: int
    ip_len: int
    src: int
    dst: int
    stream: int
    seq: int
    time_ps: int
    transport: Transport = "auto"
    sport: int = 49152
    dport: int = 49153
    udp_checksum: bool = True  # IPv4 only: False sends 0 (IPv6 always has one)


def build_ip(spec: PacketSpec) -> bytes:
    """The IP packet of ``spec``: valid header, TTL / hop limit 64, UDP or raw + signature."""
    if spec.ip_len < smallest_ip(spec.family, spec.transport):
        raise ValueError(f"IPv{spec.family} packet of {spec.ip_len} bytes is too small for the "
                         f"signature (at least {smallest_ip(spec.family, spec.transport)})")
    header_len = IPV4_HEADER if spec.family == 4 else IPV6_HEADER
    udp = uses_udp(spec.family, spec.ip_len, spec.transport)
    transport_len = spec.ip_len - header_len
    payload = signature_payload(spec.stream, spec.seq, spec.time_ps,
                                transport_len - (UDP_HEADER if udp else 0))
    if udp:
        segment = struct.pack("!HHHH", spec.sport, spec.dport, transport_len, 0) + payload
        if spec.family == 6 or spec.udp_checksum:
            size = 4 if spec.family == 4 else 16
            check = udp_checksum(spec.src.to_bytes(size, "big"),
                                 spec.dst.to_bytes(size, "big"), segment)
            segment = segment[:6] + struct.pack("!H", check) + segment[8:]
        payload = segment
    protocol = PROTO_UDP if udp else PROTO_RAW
    if spec.family == 4:
        return ipv4_header(spec.src, spec.dst, protocol, transport_len, ttl=TTL,
                           ident=spec.seq) + payload
    return ipv6_header(spec.src, spec.dst, protocol, transport_len, hop_limit=TTL) + payload


def mac_bytes(text: str) -> bytes:
    """The six bytes of a MAC address written ``02:00:00:00:00:01``."""
    parts = text.split(":")
    if len(parts) != 6:
        raise ValueError(f"bad MAC address {text!r}: expected six hex bytes")
    return bytes(int(p, 16) for p in parts)


def link_header(framing: Framing, family: int, dst_mac: bytes = b"", src_mac: bytes = b"") -> bytes:
    if framing == "pos":
        return struct.pack("!BBH", PPP_ADDRESS, PPP_CONTROL, PPP_PROTOCOL[family])
    return dst_mac + src_mac + struct.pack("!H", ETHERTYPE[family])


def frame(framing: Framing, ip: bytes, family: int, dst_mac: bytes = b"",
          src_mac: bytes = b"") -> bytes:
    """The frame the tester hands to a port: link header + IP [+ padding + FCS on Ethernet]."""
    body = link_header(framing, family, dst_mac, src_mac) + ip
    if framing == "pos":
        return body
    body += bytes(max(0, ETH_MIN_FRAME - ETH_FCS - len(body)))
    return body + struct.pack("<I", zlib.crc32(body))


# --------------------------------------------------------------------------- parsing
@dataclass(frozen=True, slots=True)
class Parsed:
    """A received frame taken apart: link header, IP packet, and the signature (if any)."""

    family: int
    link: bytes
    ip: bytes
    signature: Signature | None


def split_link(framing: Framing, data: bytes) -> tuple[int, bytes, bytes] | None:
    """(family, link header, rest) of a frame, or None when it does not carry IP."""
    if framing == "pos":
        if len(data) < 4 or data[0] != PPP_ADDRESS or data[1] != PPP_CONTROL:
            return None
        families = {v: k for k, v in PPP_PROTOCOL.items()}
        family = families.get(int.from_bytes(data[2:4], "big"))
        return None if family is None else (family, data[:4], data[4:])
    if len(data) < ETH_HEADER:
        return None
    families = {v: k for k, v in ETHERTYPE.items()}
    family = families.get(int.from_bytes(data[12:14], "big"))
    return None if family is None else (family, data[:ETH_HEADER], data[ETH_HEADER:])


def parse(framing: Framing, data: bytes) -> Parsed | None:
    """Take a frame apart; None when it is not IP or too short for its own IP header."""
    split = split_link(framing, data)
    if split is None:
        return None
    family, link, rest = split
    if family == 4:
        if len(rest) < IPV4_HEADER or rest[0] >> 4 != 4:
            return None
        header_len = (rest[0] & 0xF) * 4
        ip_len = int.from_bytes(rest[2:4], "big")
        protocol = rest[9]
    else:
        if len(rest) < IPV6_HEADER or rest[0] >> 4 != 6:
            return None
        header_len = IPV6_HEADER
        ip_len = IPV6_HEADER + int.from_bytes(rest[4:6], "big")
        protocol = rest[6]
    if not header_len <= ip_len <= len(rest) or header_len < IPV4_HEADER:
        return None
    ip = rest[:ip_len]
    offset = header_len + (UDP_HEADER if protocol == PROTO_UDP else 0)
    signature = read_signature(ip[offset:]) if protocol in (PROTO_UDP, PROTO_RAW) else None
    return Parsed(family, link, ip, signature)


def ip_offset(framing: Framing) -> int:
    """Where the IP packet starts in a frame of ``framing``."""
    return 4 if framing == "pos" else ETH_HEADER
