"""IPv6 Neighbor Discovery messages (RFC 4861 4.3, 4.4, 4.6.1, 7.1): the Neighbor
Solicitation and Advertisement, parsed with the validity checks of 7.1.1 / 7.1.2 and
built with their checksums.  The resolver (runtime/resolver.py) runs the protocol."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from npkit.base.checksum import icmp6_checksum

ETHERTYPE_IPV6 = 0x86DD
IPPROTO_ICMPV6 = 58
ND_NEIGHBOR_SOLICIT, ND_NEIGHBOR_ADVERT = 135, 136
OPT_SOURCE_LLA, OPT_TARGET_LLA = 1, 2
ND_HOP_LIMIT = 255                     # RFC 4861 7.1: proves the sender is on-link
NA_ROUTER, NA_SOLICITED, NA_OVERRIDE = 0x80, 0x40, 0x20
ALL_NODES6 = 0xFF02 << 112 | 1
SOLICITED_NODE6 = 0xFF02 << 112 | 1 << 32 | 0xFF << 24          # ff02::1:ff00:0/104
_ETH_MIN_FRAME = 60


def solicited_node(address: int) -> int:
    """ff02::1:ffXX:XXXX of an address (RFC 4291 2.7.1)."""
    return SOLICITED_NODE6 | address & 0xFFFFFF


def multicast_mac(group: int) -> int:
    """33:33 and the group's low 32 bits (RFC 2464 7)."""
    return 0x3333 << 32 | group & 0xFFFF_FFFF


@dataclass(frozen=True)
class NdMessage:
    """A valid NS or NA: addresses from the IPv6 header, the target, NA flags (0 for an NS)
    and the link-layer address option (source for an NS, target for an NA) or None."""

    kind: int
    src: int
    dst: int
    target: int
    flags: int
    lla: int | None

    @property
    def solicited(self) -> bool:
        return bool(self.flags & NA_SOLICITED)

    @property
    def override(self) -> bool:
        return bool(self.flags & NA_OVERRIDE)


def parse_nd(packet: bytes) -> NdMessage | None:
    """An NS or NA in an IPv6 packet without extension headers that passes RFC 4861 7.1.1
    / 7.1.2 (hop limit 255, code 0, checksum, length, target not multicast, every option
    length non-zero, the source / destination rules); None for anything else."""
    if len(packet) < 40 + 24 or packet[0] >> 4 != 6 or packet[6] != IPPROTO_ICMPV6:
        return None
    payload_len = struct.unpack_from("!H", packet, 4)[0]
    if packet[7] != ND_HOP_LIMIT or 40 + payload_len > len(packet) or payload_len < 24:
        return None
    src, dst = packet[8:24], packet[24:40]
    message = packet[40:40 + payload_len]
    kind, code = message[0], message[1]
    if kind not in (ND_NEIGHBOR_SOLICIT, ND_NEIGHBOR_ADVERT) or code != 0:
        return None
    if icmp6_checksum(src, dst, message) != 0:
        return None
    target = int.from_bytes(message[8:24], "big")
    if target >> 120 == 0xFF:
        return None
    lla, off = None, 24
    wanted = OPT_SOURCE_LLA if kind == ND_NEIGHBOR_SOLICIT else OPT_TARGET_LLA
    while off < len(message):
        if off + 2 > len(message) or message[off + 1] == 0:
            return None
        length = message[off + 1] * 8
        if off + length > len(message):
            return None
        if message[off] == wanted and length >= 8:
            lla = int.from_bytes(message[off + 2:off + 8], "big")
        off += length
    s, d = int.from_bytes(src, "big"), int.from_bytes(dst, "big")
    flags = message[4] if kind == ND_NEIGHBOR_ADVERT else 0
    if kind == ND_NEIGHBOR_SOLICIT and s == 0 and (d >> 24 != SOLICITED_NODE6 >> 24
                                                   or lla is not None):
        return None                   # DAD: to the solicited-node group, no source LLA
    if kind == ND_NEIGHBOR_ADVERT and d >> 120 == 0xFF and flags & NA_SOLICITED:
        return None
    return NdMessage(kind, s, d, target, flags, lla)


def _nd_frame(dst_mac: int, src_mac: int, src: int, dst: int, message: bytes) -> bytes:
    src_b, dst_b = src.to_bytes(16, "big"), dst.to_bytes(16, "big")
    checksum = icmp6_checksum(src_b, dst_b, message)
    message = message[:2] + struct.pack("!H", checksum) + message[4:]
    header = struct.pack("!IHBB", 6 << 28, len(message), IPPROTO_ICMPV6, ND_HOP_LIMIT)
    frame = (dst_mac.to_bytes(6, "big") + src_mac.to_bytes(6, "big")
             + struct.pack("!H", ETHERTYPE_IPV6) + header + src_b + dst_b + message)
    return frame + bytes(max(0, _ETH_MIN_FRAME - len(frame)))


def _lla_option(kind: int, mac: int) -> bytes:
    return bytes([kind, 1]) + mac.to_bytes(6, "big")


def neighbor_solicitation(src_mac: int, src: int, target: int,
                          dst_mac: int | None = None) -> bytes:
    """An NS for `target` from `src` with our source link-layer address (RFC 4861 4.3):
    multicast to the target's solicited-node group, or unicast to `dst_mac` (NUD probe,
    7.3.3: to the cached address)."""
    message = (bytes([ND_NEIGHBOR_SOLICIT, 0, 0, 0]) + bytes(4) + target.to_bytes(16, "big")
               + _lla_option(OPT_SOURCE_LLA, src_mac))
    if dst_mac is None:
        group = solicited_node(target)
        return _nd_frame(multicast_mac(group), src_mac, src, group, message)
    return _nd_frame(dst_mac, src_mac, src, target, message)


def neighbor_advertisement(src_mac: int, dst_mac: int, src: int, dst: int, target: int,
                           flags: int) -> bytes:
    """An NA for our `target` with our target link-layer address (RFC 4861 4.4, 7.2.4)."""
    message = (bytes([ND_NEIGHBOR_ADVERT, 0, 0, 0, flags, 0, 0, 0]) + target.to_bytes(16, "big")
               + _lla_option(OPT_TARGET_LLA, src_mac))
    return _nd_frame(dst_mac, src_mac, src, dst, message)
