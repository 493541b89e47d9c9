"""Ports, neighbours, next hops and the router's own addresses (docs/control-plane.md).

The data-plane side of these tables lives in the program's memories (`nexthops`, `local4`,
`local6` in microblocks/router_common.mbl); this module keeps the control plane's view and
writes those words.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

IPv4If = ipaddress.IPv4Interface
IPv6If = ipaddress.IPv6Interface


def mac_to_int(mac: str | int) -> int:
    """A MAC address as a 48-bit integer ("02:00:00:00:00:01" or an int)."""
    if isinstance(mac, int):
        if not 0 <= mac < 1 << 48:
            raise ValueError(f"MAC address {mac:#x} does not fit 48 bits")
        return mac
    parts = mac.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"bad MAC address {mac!r}: expected six hex bytes like 02:00:00:00:00:01")
    try:
        return int("".join(parts), 16)
    except ValueError:
        raise ValueError(f"bad MAC address {mac!r}: expected hex bytes") from None


def mac_to_str(mac: int) -> str:
    return ":".join(f"{(mac >> (8 * k)) & 0xFF:02x}" for k in range(5, -1, -1))


@dataclass(frozen=True)
class PortConfig:
    """One router port: its MAC, its IPv4/IPv6 interface addresses and its IP MTU."""

    port: int
    mac: int
    ipv4: tuple[IPv4If, ...] = ()
    ipv6: tuple[IPv6If, ...] = ()
    mtu: int = 1500

    @classmethod
    def of(cls, port: int, mac: str | int, ipv4: list[str] | tuple[str, ...] = (),
           ipv6: list[str] | tuple[str, ...] = (), mtu: int = 1500) -> PortConfig:
        return cls(port, mac_to_int(mac), tuple(IPv4If(a) for a in ipv4),
                   tuple(IPv6If(a) for a in ipv6), mtu)


@dataclass(frozen=True)
class NextHop:
    """A next hop as the data plane reads it: Ethernet rewrite, output port, link IP MTU."""

    dmac: int
    smac: int
    port: int
    mtu: int = 1500
    gateway: ipaddress.IPv4Address | ipaddress.IPv6Address | None = field(default=None,
                                                                         compare=False)
