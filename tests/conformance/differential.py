"""Per-probe comparison of what the Linux router and ours send for the same frame.

A side's answer to a probe is the list of (port, frame) it transmitted.  Frames are put in
a canonical form before comparing (docs/conformance.md, "What is compared"):

* Ethernet padding is dropped: veth does not pad short frames to 60 bytes, our ports do.
  Bytes after the IP length that are not that padding (a trailer) are kept and compared.
* In ICMP messages the router *generates* (errors and echo replies, from one of its
  addresses) the IPv4 Identification is set to 0 and the header checksum recomputed, and
  so is the Identification of an IPv6 Fragment header in them: Linux draws both at random
  (RFC 6864, RFC 7739 allow any value).  Both checksums are checked first.

Everything else -- ports, the bytes of forwarded packets, TTL / hop limit, checksums,
ICMP type/code and the quoted bytes -- must be equal.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from npkit.base.checksum import internet_checksum

ETH = 14
IGNORED_ICMP6 = {130, 131, 132, 143, 133}   # MLD reports/queries, router solicitations


@dataclass(frozen=True)
class Out:
    port: int
    frame: bytes           # canonical
    checksums_ok: bool


def _icmp6_sum(packet: bytes) -> int:
    plen = len(packet) - 40
    pseudo = packet[8:40] + struct.pack("!IxxxB", plen, 58)
    return internet_checksum(pseudo + packet[40:])


def is_noise(frame: bytes) -> bool:
    """The kernel's own unsolicited traffic (MLD reports, router solicitations)."""
    if frame[12:14] != b"\x86\xdd" or len(frame) < ETH + 40:
        return False
    ip = frame[ETH:]
    nh, off = ip[6], 40
    while nh == 0 and off + 8 <= len(ip):           # skip a Hop-by-Hop header (MLD has one)
        nh, off = ip[off], off + (ip[off + 1] + 1) * 8
    return nh == 58 and off < len(ip) and ip[off] in IGNORED_ICMP6


def canonical(port: int, frame: bytes, router_addresses: frozenset[bytes]) -> Out:
    ethertype = frame[12:14]
    ok = True
    if ethertype == b"\x08\x00" and len(frame) >= ETH + 20:
        ihl = (frame[ETH] & 0xF) * 4
        end = ETH + struct.unpack_from("!H", frame, ETH + 2)[0]
        body, extra = bytearray(frame[:end]), frame[end:]
        header = bytes(body[ETH:ETH + ihl])
        ok = internet_checksum(header) == 0
        if body[ETH + 9] == 1 and bytes(body[ETH + 12:ETH + 16]) in router_addresses:
            if not struct.unpack_from("!H", body, ETH + 6)[0] & 0x3FFF:   # not a fragment
                ok = ok and internet_checksum(bytes(body[ETH + ihl:])) == 0
            body[ETH + 4:ETH + 6] = b"\0\0"
            body[ETH + 10:ETH + 12] = b"\0\0"
            body[ETH + 10:ETH + 12] = struct.pack("!H", internet_checksum(
                bytes(body[ETH:ETH + ihl])))
    elif ethertype == b"\x86\xdd" and len(frame) >= ETH + 40:
        end = ETH + 40 + struct.unpack_from("!H", frame, ETH + 4)[0]
        body, extra = bytearray(frame[:end]), frame[end:]
        if bytes(body[ETH + 8:ETH + 24]) in router_addresses:
            if body[ETH + 6] == 58:
                ok = _icmp6_sum(bytes(body[ETH:])) == 0
            elif body[ETH + 6] == 44 and len(body) >= ETH + 48:   # a fragment of our own:
                body[ETH + 44:ETH + 48] = bytes(4)                # Linux draws the ident
    elif ethertype == b"\x08\x06" and len(frame) >= ETH + 28:   # ARP: 28 bytes, then padding
        body, extra = bytearray(frame[:ETH + 28]), b""
    else:
        body, extra = bytearray(frame), b""
    if len(frame) <= 60 and not any(extra):
        extra = b""                                   # Ethernet padding, not a trailer
    return Out(port, bytes(body) + extra, ok)


@dataclass(frozen=True)
class Difference:
    probe: object
    linux: tuple[Out, ...]
    ours: tuple[Out, ...]

    def describe(self) -> str:
        from scapy.layers.l2 import Ether

        def side(outs: Sequence[Out]) -> str:
            if not outs:
                return "nothing"
            return "; ".join(f"port {o.port}: {Ether(o.frame).summary()} ({len(o.frame)} B"
                             f"{'' if o.checksums_ok else ', BAD CHECKSUM'})" for o in outs)

        return f"linux: {side(self.linux)}\n    ours:  {side(self.ours)}"


ICMP4_ERRORS = {3, 4, 5, 11, 12}
ICMP6_ERRORS = {1, 2, 3, 4}


def marker(frame: bytes, router_addresses: frozenset[bytes] = frozenset()) -> int | None:
    """The probe marker a frame carries (tests/conformance/probes.py): the echo identifier
    of an echo reply, the IPv4 Identification / IPv6 flow label of the packet an ICMP error
    quotes, else the frame's own; None for a frame that carries none (not IP, or a later
    fragment of a packet the router generated: its Identification is the router's)."""
    ip = frame[ETH:]
    if frame[12:14] == b"\x08\x00" and len(ip) >= 20:
        ihl = (ip[0] & 0xF) * 4
        if struct.unpack_from("!H", ip, 6)[0] & 0x1FFF and ip[12:16] in router_addresses:
            return None
        if ip[9] == 1 and len(ip) >= ihl + 8 and not struct.unpack_from("!H", ip, 6)[0] & 0x1FFF:
            kind = ip[ihl]
            if kind == 0:
                return struct.unpack_from("!H", ip, ihl + 4)[0]
            if kind in ICMP4_ERRORS and len(ip) >= ihl + 8 + 20:
                return struct.unpack_from("!H", ip, ihl + 8 + 4)[0]
        return struct.unpack_from("!H", ip, 4)[0]
    if frame[12:14] == b"\x86\xdd" and len(ip) >= 40:
        if ip[6] == 58 and len(ip) >= 48:
            kind = ip[40]
            if kind == 129:
                return struct.unpack_from("!H", ip, 44)[0]
            if kind in ICMP6_ERRORS and len(ip) >= 48 + 4:
                return struct.unpack_from("!I", ip, 48)[0] & 0xFFFFF
        return struct.unpack_from("!I", ip, 0)[0] & 0xFFFFF
    return None
