"""An independent reference model of the dual-stack router (examples/router/router.mbl),
written with scapy and Python's ipaddress: the order of checks of FACTS.md section 4 as
microblocks/ipv4_fwd.mbl and ipv6_fwd.mbl specify it, and a longest-prefix match that the
test supplies (brute force over a route list)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

from scapy.all import IP, Ether, IPv6, raw
from scapy.utils import checksum as scapy_checksum

EXC = {"ttl_expired": 1, "no_route": 2, "options": 3, "for_router": 4, "frag_needed": 5,
       "fragment": 6, "hop_limit": 17, "no_route6": 18, "too_big": 19, "hop_by_hop": 20,
       "for_router6": 21, "trailer": 7, "trailer6": 22}
OTHER_PROTOCOL = 0x100


def _mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def _martian4(a: ipaddress.IPv4Address) -> bool:
    return a.packed[0] in (0, 127) or a.packed[0] >= 240


@dataclass(frozen=True)
class RouterModel:
    """nexthops: index -> (dmac, smac, port, mtu); lpm4/lpm6: destination -> next hop."""

    nexthops: dict[int, tuple[int, int, int, int]]
    local4: frozenset[str]
    local6: frozenset[str]
    lpm4: Callable[[ipaddress.IPv4Address], int | None]
    lpm6: Callable[[ipaddress.IPv6Address], int | None]

    def _rewritten(self, frame: bytes, nh: int, layer, field: str) -> bytes:
        dmac, smac, _, _ = self.nexthops[nh]
        out = Ether(frame)
        out.dst, out.src = _mac(dmac), _mac(smac)
        setattr(out[layer], field, getattr(out[layer], field) - 1)
        if layer is IP:
            del out[IP].chksum  # scapy recomputes it from scratch
        return raw(out)

    def reference(self, frame: bytes) -> tuple:
        """The expected outcome: ("forward", port, bytes), ("drop", reason) or
        ("exception", code)."""
        if len(frame) < 14:
            return ("drop", "runt")
        ethertype = int.from_bytes(frame[12:14], "big")
        if ethertype == 0x0800:
            return self._leaving(frame, self.reference_v4(frame), EXC["trailer"],
                                 EXC["fragment"], EXC["frag_needed"])
        if ethertype == 0x86DD:
            return self._leaving(frame, self.reference_v6(frame), EXC["trailer6"],
                                 EXC["too_big"])
        return ("exception", OTHER_PROTOCOL)

    @staticmethod
    def _leaving(frame: bytes, result: tuple, trailer: int, *after_next_hop: int) -> tuple:
        """The Ethernet checks once the next hop is known (before its MTU check): what came
        in a broadcast / multicast frame (the I/G bit) is not forwarded (RFC 1812 5.3.4);
        more than 4 bytes (an FCS) after the IP length, beyond the 60-byte minimum frame,
        are a trailer the slow path leaves behind."""
        leaving = result[0] == "forward" or (result[0] == "exception"
                                             and result[1] in after_next_hop)
        if not leaving:
            return result
        if frame[0] & 1:
            return ("drop", "l2_multicast")
        ip = frame[14:]
        length = (14 + int.from_bytes(ip[2:4], "big") if ip[0] >> 4 == 4
                  else 54 + int.from_bytes(ip[4:6], "big"))
        if len(frame) > 64 and len(frame) > length + 4:        # 4 bytes may be an FCS
            return ("exception", trailer)
        return result

    def reference_v4(self, frame: bytes) -> tuple:
        ip = frame[14:]
        if len(ip) < 20:
            return ("drop", "ip_too_short")
        version, ihl = ip[0] >> 4, ip[0] & 15
        if version != 4:
            return ("drop", "bad_version")
        if ihl < 5:
            return ("drop", "bad_ihl")
        total = int.from_bytes(ip[2:4], "big")
        if total < ihl * 4 or total > len(ip):
            return ("drop", "bad_length")
        if ihl != 5:
            return ("exception", EXC["options"])
        if scapy_checksum(bytes(ip[:20])) != 0:
            return ("drop", "bad_checksum")
        src, dst = ipaddress.IPv4Address(ip[12:16]), ipaddress.IPv4Address(ip[16:20])
        if str(dst) == "255.255.255.255":
            return ("exception", EXC["for_router"])
        if _martian4(src) or src.is_multicast:
            return ("drop", "martian_source")
        if _martian4(dst):
            return ("drop", "martian_destination")
        if dst.is_multicast:
            return ("exception", EXC["for_router"])
        if str(dst) in self.local4:
            return ("exception", EXC["for_router"])
        if ip[8] <= 1:
            return ("exception", EXC["ttl_expired"])
        nh = self.lpm4(dst)
        if nh is None:
            return ("exception", EXC["no_route"])
        if total > self.nexthops[nh][3]:
            return ("exception", EXC["frag_needed"] if ip[6] & 0x40 else EXC["fragment"])
        return ("forward", self.nexthops[nh][2], self._rewritten(frame, nh, IP, "ttl"))

    def reference_v6(self, frame: bytes) -> tuple:
        ip = frame[14:]
        if len(ip) < 40:
            return ("drop", "ip_too_short")
        if ip[0] >> 4 != 6:
            return ("drop", "bad_version")
        payload = int.from_bytes(ip[4:6], "big")
        if payload > len(ip) - 40:
            return ("drop", "bad_length")
        src, dst = ipaddress.IPv6Address(ip[8:24]), ipaddress.IPv6Address(ip[24:40])
        if src == ipaddress.IPv6Address("::"):
            return ("drop", "unspecified_source")
        if src.is_multicast:
            return ("drop", "multicast_source")
        if ipaddress.IPv6Address("::1") in (src, dst):
            return ("drop", "loopback")
        if dst.is_multicast:                  # no multicast routing: the control plane's
            return ("exception", EXC["for_router6"])
        if src.is_link_local or dst.is_link_local:
            return ("drop", "link_local")
        if ip[6] == 0:
            return ("exception", EXC["hop_by_hop"])
        if str(dst) in self.local6:
            return ("exception", EXC["for_router6"])
        if ip[7] <= 1:
            return ("exception", EXC["hop_limit"])
        nh = self.lpm6(dst)
        if nh is None:
            return ("exception", EXC["no_route6"])
        if payload + 40 > self.nexthops[nh][3]:
            return ("exception", EXC["too_big"])
        return ("forward", self.nexthops[nh][2], self._rewritten(frame, nh, IPv6, "hlim"))


def outcome(program, frames: list[bytes]) -> list[tuple]:
    """What a native program did with each frame, in the reference's terms."""
    out = []
    for v in program.run(frames, in_ports=0):
        if v.kind == "forward":
            out.append(("forward", v.port, v.data))
        elif v.kind == "drop":
            out.append(("drop", v.reason))
        else:
            out.append((v.kind, v.code))
    return out
