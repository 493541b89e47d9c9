"""ARP messages (RFC 826) for Ethernet and IPv4: parsing and building.

Only the Ethernet / IPv4 pair is handled (hardware type 1, protocol type 0x0800, lengths
6 and 4); anything else is not ours to answer (RFC 826: "if the pair is not supported,
discard").  The resolver (runtime/resolver.py) decides what to learn and answer."""

from __future__ import annotations

import struct
from dataclasses import dataclass

ETHERTYPE_ARP = 0x0806
ARP_REQUEST, ARP_REPLY = 1, 2
HTYPE_ETHERNET = 1
PTYPE_IPV4 = 0x0800
BROADCAST_MAC = (1 << 48) - 1
ARP_LENGTH = 28
_ETH_MIN_FRAME = 60           # without FCS: shorter frames are padded


@dataclass(frozen=True)
class Arp:
    """One Ethernet/IPv4 ARP message: opcode, sender and target hardware/protocol address."""

    op: int
    sha: int
    spa: int
    tha: int
    tpa: int


def parse_arp(payload: bytes) -> Arp | None:
    """The ARP message in an Ethernet payload, or None when it is not Ethernet/IPv4 ARP."""
    if len(payload) < ARP_LENGTH:
        return None
    htype, ptype, hlen, plen, op = struct.unpack_from("!HHBBH", payload)
    if (htype, ptype, hlen, plen) != (HTYPE_ETHERNET, PTYPE_IPV4, 6, 4):
        return None
    return Arp(op, int.from_bytes(payload[8:14], "big"), int.from_bytes(payload[14:18], "big"),
               int.from_bytes(payload[18:24], "big"), int.from_bytes(payload[24:28], "big"))


def arp_frame(dst_mac: int, src_mac: int, message: Arp) -> bytes:
    """An Ethernet frame carrying `message`, padded to the 60-byte minimum."""
    frame = (dst_mac.to_bytes(6, "big") + src_mac.to_bytes(6, "big")
             + struct.pack("!HHHBBH", ETHERTYPE_ARP, HTYPE_ETHERNET, PTYPE_IPV4, 6, 4,
                           message.op)
             + message.sha.to_bytes(6, "big") + message.spa.to_bytes(4, "big")
             + message.tha.to_bytes(6, "big") + message.tpa.to_bytes(4, "big"))
    return frame + bytes(max(0, _ETH_MIN_FRAME - len(frame)))


def arp_request(src_mac: int, src_ip: int, target_ip: int, dst_mac: int = BROADCAST_MAC
                ) -> bytes:
    """Who has target_ip? -- broadcast, or unicast to a known MAC when re-probing a stale
    entry (as Linux does); the target hardware address is zero (RFC 826 leaves it open)."""
    return arp_frame(dst_mac, src_mac, Arp(ARP_REQUEST, src_mac, src_ip, 0, target_ip))


def arp_reply(request: Arp, our_mac: int) -> bytes:
    """The answer to `request` (RFC 826): the fields swapped, our MAC as the sender's,
    sent to the requester's MAC."""
    return arp_frame(request.sha, our_mac,
                     Arp(ARP_REPLY, our_mac, request.tpa, request.sha, request.spa))
