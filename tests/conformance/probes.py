"""Generated probe packets for the differential suite, by class (issue 16 item 1).

Every probe is an Ethernet frame sent into one port of a router configured by
examples/router/control.toml (addresses below are that file's).  The classes follow the
RFCs the issue names: link-layer destination checks (RFC 1812 5.3.4), special-use and
multicast sources and destinations by scope (RFC 1812 5.3.7, RFC 4291 2.5/2.7, RFC 5771),
extension headers (RFC 8200 4, RFC 5095), fragments, IPv4 options (RFC 791, 1812 5.2.4),
MTU on forwarded and generated packets, trailers after the IP length, redirects (RFC 1812
5.2.7.2), Protocol / Next Header unreachable (RFC 1122 3.2.2.1, RFC 8200 4), echo to every
address class the router owns (RFC 1122 3.2.2.6, RFC 4443 4.1, the Subnet-Router anycast
of RFC 4291 2.6.1).  `probes(seed)` draws sizes, TTLs and payloads from a seeded RNG, so a
run is reproducible; each probe carries a 16-bit marker (IPv4 ident / IPv6 flow label /
echo identifier) that is unique within the run.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import (
    HBHOptUnknown,
    ICMPv6EchoRequest,
    ICMPv6ND_NS,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    PadN,
    RouterAlert,
)
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Packet, Raw

from npkit.base.checksum import internet_checksum

ROUTER_MAC = {p: f"02:00:00:00:00:1{p}" for p in range(4)}
# a neighbour (IP, MAC) of each family on each port, from control.toml
HOST4 = {0: ("192.0.2.2", "02:00:00:00:10:02"), 1: ("198.51.100.2", "02:00:00:00:11:02"),
         2: ("203.0.113.2", "02:00:00:00:12:02"), 3: ("192.0.2.130", "02:00:00:00:13:02")}
HOST6 = {1: ("2001:db8:0:11::2", "02:00:00:00:11:02"),
         2: ("2001:db8:0:99::5", "02:00:00:00:12:05")}
MTU = {0: 1500, 1: 9000, 2: 1500, 3: 1280}
ROUTER4 = {0: "192.0.2.1", 1: "198.51.100.1", 2: "203.0.113.1", 3: "192.0.2.129"}
ROUTER6 = {0: "2001:db8:0:10::1", 1: "2001:db8:0:11::1", 2: "2001:db8:0:12::1",
           3: "2001:db8:0:13::1"}
ANYCAST6 = {0: "2001:db8:0:10::", 1: "2001:db8:0:11::", 2: "2001:db8:0:12::",
            3: "2001:db8:0:13::"}
# destinations routed out each port (control.toml's routes)
VIA4 = {1: "45.1.2.{}", 2: "10.1.2.{}", 3: "172.16.0.{}"}
VIA6 = {1: "2a00:1::{:x}", 2: "2001:db8:100::{:x}"}


@dataclass(frozen=True)
class Probe:
    cls: str          # the probe class (docs/conformance.md names them)
    port: int         # the port it enters
    frame: bytes
    marker: int


class _Maker:
    """Builds frames with unique markers."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.next_marker = 0x100
        self.made: list[Probe] = []

    def marker(self) -> int:
        self.next_marker += 1
        return self.next_marker

    def pad(self, lo: int, hi: int) -> bytes:
        return bytes(self.rng.getrandbits(8) for _ in range(self.rng.randint(lo, hi)))

    def v4(self, cls: str, port: int, ip: Packet, *, l2dst: str | None = None,
           src_mac: str | None = None, trailer: bytes = b"", options: bytes = b"",
           marker: int | None = None) -> None:
        m = marker if marker is not None else self.marker()
        if ip.haslayer(ICMP) and ip[ICMP].type == 8:
            ip[ICMP].id = m
        ip.id = m
        eth = Ether(src=src_mac or HOST4[port][1], dst=l2dst or ROUTER_MAC[port], type=0x0800)
        packet = with_options(bytes(ip), options) if options else bytes(ip)
        self.made.append(Probe(cls, port, bytes(eth) + packet + trailer, m))

    def v6(self, cls: str, port: int, ip: Packet, *, l2dst: str | None = None,
           src_mac: str | None = None, trailer: bytes = b"") -> None:
        m = self.marker()
        if ip.haslayer(ICMPv6EchoRequest):
            ip[ICMPv6EchoRequest].id = m
        ip.fl = m
        eth = Ether(src=src_mac or HOST6.get(port, HOST4[port])[1],
                    dst=l2dst or ROUTER_MAC[port])
        self.made.append(Probe(cls, port, bytes(eth / ip) + trailer, m))


def with_options(packet: bytes, options: bytes) -> bytes:
    """An IPv4 packet (20-byte header) with raw option bytes (a multiple of 4) spliced into
    its header, length and checksum fixed: scapy cannot build malformed options."""
    header = bytearray(packet[:20] + options)
    header[0] = 0x40 | len(header) // 4
    header[2:4] = (len(packet) + len(options)).to_bytes(2, "big")
    header[10:12] = b"\0\0"
    header[10:12] = internet_checksum(bytes(header)).to_bytes(2, "big")
    return bytes(header) + packet[20:]


def _udp(mk: _Maker, lo: int = 0, hi: int = 64) -> Packet:
    return UDP(sport=mk.rng.randint(1024, 65535), dport=mk.rng.randint(1, 65535)) / \
        Raw(mk.pad(lo, hi))


def _forward(mk: _Maker) -> None:
    """Ordinary forwarding both ways, sizes up to the egress MTU."""
    for _ in range(60):
        port = mk.rng.choice((0, 2, 3))
        out = mk.rng.choice([p for p in VIA4 if p != port])
        size = mk.rng.randint(0, min(MTU[port], MTU[out]) - 28)
        l4 = mk.rng.choice((_udp(mk, size, size), TCP(flags="S") / Raw(mk.pad(0, 40)),
                            ICMP(type=8) / Raw(mk.pad(0, 40))))
        mk.v4("forward", port, IP(src=HOST4[port][0], dst=VIA4[out].format(
            mk.rng.randint(1, 254)), ttl=mk.rng.randint(2, 255), tos=mk.rng.choice((0, 0xb8)))
            / l4)
    for _ in range(60):
        port = mk.rng.choice((1, 2))
        out = 2 if port == 1 else 1
        size = mk.rng.randint(0, 1400)
        mk.v6("forward", port, IPv6(src=HOST6[port][0], dst=VIA6[out].format(
            mk.rng.randint(1, 0xffff)), hlim=mk.rng.randint(2, 255)) / _udp(mk, size, size))


def _ttl(mk: _Maker) -> None:
    """TTL / hop limit 0, 1 and 2 to routed destinations and to the router."""
    for ttl in (0, 1, 2) * 4:
        port = mk.rng.choice((0, 2, 3))
        mk.v4("ttl", port, IP(src=HOST4[port][0], dst=VIA4[1].format(ttl + 1), ttl=ttl)
              / _udp(mk))
        mk.v4("ttl", port, IP(src=HOST4[port][0], dst=ROUTER4[port], ttl=ttl)
              / ICMP(type=8) / Raw(b"ttl"))
        mk.v6("ttl", 1, IPv6(src=HOST6[1][0], dst=VIA6[2].format(ttl + 1), hlim=ttl)
              / _udp(mk))
        mk.v6("ttl", 1, IPv6(src=HOST6[1][0], dst=ROUTER6[1], hlim=ttl)
              / ICMPv6EchoRequest(data=b"ttl"))


def _link_layer(mk: _Maker) -> None:
    """RFC 1812 5.3.4 / RFC 4291: unicast IP in broadcast or multicast frames, and frames
    for another station's MAC."""
    for l2dst in ("ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01",
                  "02:00:00:00:99:99"):
        for _ in range(3):
            mk.v4("link_layer", 0, IP(src=HOST4[0][0], dst=VIA4[2].format(9)) / _udp(mk),
                  l2dst=l2dst)
            mk.v4("link_layer", 0, IP(src=HOST4[0][0], dst=ROUTER4[0]) / ICMP(type=8),
                  l2dst=l2dst)
            mk.v6("link_layer", 1, IPv6(src=HOST6[1][0], dst=VIA6[2].format(9)) / _udp(mk),
                  l2dst=l2dst)
            mk.v6("link_layer", 1, IPv6(src=HOST6[1][0], dst=ROUTER6[1]) /
                  ICMPv6EchoRequest(), l2dst=l2dst)


def _special4(mk: _Maker) -> None:
    """RFC 1812 5.3.7 / RFC 5771 / RFC 6890: special-use IPv4 sources and destinations."""
    sources = ("0.0.0.0", "0.1.2.3", "127.0.0.1", "224.0.0.5", "239.1.1.1", "240.0.0.1",
               "255.255.255.255", "192.0.2.127", "169.254.1.1", "100.64.0.1",
               "192.0.2.1", "198.51.100.1")
    for src in sources:
        mk.v4("special_source4", 0, IP(src=src, dst=VIA4[2].format(7)) / _udp(mk))
        mk.v4("special_source4", 0, IP(src=src, dst=VIA4[2].format(8), ttl=1) / _udp(mk))
    dests = ("0.0.0.0", "0.1.2.3", "127.0.0.1", "224.0.0.1", "224.0.0.5", "224.0.1.1",
             "232.1.1.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
             "192.0.2.127", "203.0.113.255", "169.254.1.1",
             "100.64.0.1", "192.0.2.255")
    for dst in dests:
        mk.v4("special_destination4", 0, IP(src=HOST4[0][0], dst=dst) / _udp(mk))
        mk.v4("special_destination4", 0, IP(src=HOST4[0][0], dst=dst) / ICMP(type=8))


def _special6(mk: _Maker) -> None:
    """RFC 4291 2.5 / 2.7 / RFC 8200: special-use IPv6 sources and multicast destinations
    of every scope."""
    sources = ("::", "::1", "ff02::1", "ff0e::1", "fe80::1", "::ffff:192.0.2.2",
               "fc00::1", "fec0::1", "2001:db8:0:11::1", "2001:db8:0:11::")
    for src in sources:
        mk.v6("special_source6", 1, IPv6(src=src, dst=VIA6[2].format(7)) / _udp(mk))
    for scope in (0, 1, 2, 3, 4, 5, 8, 0xe, 0xf):
        for group in ("1", "2", "1:2", "fb", "1234"):
            dst = f"ff0{scope:x}::{group}"
            mk.v6("multicast_destination6", 1, IPv6(src=HOST6[1][0], dst=dst) / _udp(mk))
        mk.v6("multicast_destination6", 1, IPv6(src=HOST6[1][0], dst=f"ff1{scope:x}::42")
              / _udp(mk))
    dests = ("::", "::1", "fe80::1", "fe80::12:2", "::ffff:10.1.2.3", "fc00::1",
             "fec0::1", "2001:db8:0:99::5", "100::1")
    for dst in dests:
        mk.v6("special_destination6", 1, IPv6(src=HOST6[1][0], dst=dst) / _udp(mk))


def _hbh_opt(kind: int) -> Packet:
    return HBHOptUnknown(otype=kind, optdata=b"\0\0")


def _extension_headers(mk: _Maker) -> None:
    """RFC 8200 4.x, RFC 5095, RFC 2711: every extension header, forwarded and to us."""
    src = HOST6[1][0]
    for dst, label in ((VIA6[2].format(0xe), "forward"), (ROUTER6[1], "local")):
        cls = f"ext_headers_{label}"
        options = [PadN(optdata=b"\0\0\0\0"), RouterAlert(), _hbh_opt(0x1e), _hbh_opt(0x5e),
                   _hbh_opt(0x9e), _hbh_opt(0xde)]
        for opt in options:
            mk.v6(cls, 1, IPv6(src=src, dst=dst) / IPv6ExtHdrHopByHop(options=[opt])
                  / _udp(mk))
            mk.v6(cls, 1, IPv6(src=src, dst=dst) / IPv6ExtHdrDestOpt(options=[opt])
                  / _udp(mk))
        for rtype in (0, 2, 3, 4, 253):
            for left in (0, 1):
                addrs = ["2001:db8:0:12::9"] if rtype != 2 else ["2001:db8:0:12::9"]
                mk.v6(cls, 1, IPv6(src=src, dst=dst) / IPv6ExtHdrRouting(
                    type=rtype, segleft=left, addresses=addrs) / _udp(mk))
        for nh in (59, 50, 51, 253, 143):
            mk.v6(cls, 1, IPv6(src=src, dst=dst, nh=nh) / Raw(mk.pad(8, 32)))
        mk.v6(cls, 1, IPv6(src=src, dst=dst) / IPv6ExtHdrHopByHop()
              / IPv6ExtHdrHopByHop() / _udp(mk))                # HBH not first: RFC 8200 4.1
        mk.v6(cls, 1, IPv6(src=src, dst=dst) / IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting()
              / IPv6ExtHdrDestOpt() / ICMPv6EchoRequest())


def _fragments(mk: _Maker) -> None:
    """Fragments forwarded and to the router (both families)."""
    for _ in range(4):
        for dst, label in ((VIA4[2].format(5), "forward"), (ROUTER4[0], "local")):
            m = mk.marker()                    # both fragments: one Identification
            body = bytes(ICMP(type=8, id=m) / Raw(mk.pad(40, 200)))
            mk.v4(f"fragments_{label}", 0, IP(src=HOST4[0][0], dst=dst, proto=1, flags="MF")
                  / Raw(body[:24]), marker=m)
            mk.v4(f"fragments_{label}", 0, IP(src=HOST4[0][0], dst=dst, proto=1, frag=3)
                  / Raw(body[24:]), marker=m)
        for dst, label in ((VIA6[2].format(5), "forward"), (ROUTER6[1], "local")):
            mk.v6(f"fragments_{label}", 1, IPv6(src=HOST6[1][0], dst=dst)
                  / IPv6ExtHdrFragment(id=mk.rng.getrandbits(32), m=1) / Raw(mk.pad(16, 16)))
            mk.v6(f"fragments_{label}", 1, IPv6(src=HOST6[1][0], dst=dst)
                  / IPv6ExtHdrFragment(id=mk.rng.getrandbits(32), m=0)     # atomic
                  / ICMPv6EchoRequest(data=mk.pad(8, 32)))


def _options(mk: _Maker) -> None:
    """RFC 791 options forwarded and to the router, good and malformed."""
    options = [b"\x01\x01\x01\x00",                         # NOP NOP NOP EOL
               b"\x07\x07\x04" + bytes(4) + b"\x00",           # Record Route
               b"\x94\x04\x00\x00",                         # Router Alert
               b"\x44\x0c\x05\x00" + bytes(8),              # Timestamp
               b"\x83\x07\x04\x0a\x01\x02\x03\x00",         # LSRR
               b"\x07\x02\x04\x00",                         # RR length 2: bad
               b"\x99\x03\x00\x00",                         # unknown copied
               b"\x07\x0b\x04" + bytes(5)]                  # RR longer than hdr
    for dst, label in ((VIA4[2].format(6), "forward"), (ROUTER4[0], "local")):
        for opt in options:
            for l4 in (_udp(mk), ICMP(type=8) / Raw(b"opt")):
                mk.v4(f"options_{label}", 0, IP(src=HOST4[0][0], dst=dst) / l4, options=opt)


def _mtu(mk: _Maker) -> None:
    """MTU on forwarded packets (DF set and clear, IPv6) and on the router's own replies."""
    for size in (1281, 1400, 1480, 1500, 3000, 8000):
        for df in (0, 2):
            mk.v4("mtu_forward", 1, IP(src=HOST4[1][0], dst=VIA4[3].format(size % 250 + 1),
                                       flags=df) / _udp(mk, size - 28, size - 28))
            mk.v4("mtu_forward", 1, IP(src=HOST4[1][0], dst=VIA4[2].format(size % 250 + 1),
                                       flags=df) / _udp(mk, size - 28, size - 28))
        mk.v6("mtu_forward", 1, IPv6(src=HOST6[1][0], dst=VIA6[2].format(size))
              / _udp(mk, size - 48, size - 48))
    # a large echo from a source whose route back is a smaller MTU than the arrival port
    for size in (1300, 2000, 4000):
        mk.v4("mtu_reply", 1, IP(src=VIA4[3].format(9), dst=ROUTER4[1])
              / ICMP(type=8) / Raw(mk.pad(size - 28, size - 28)), src_mac=HOST4[1][1])
        mk.v6("mtu_reply", 1, IPv6(src=VIA6[2].format(9), dst=ROUTER6[1])
              / ICMPv6EchoRequest(data=mk.pad(size - 48, size - 48)))


def _trailers(mk: _Maker) -> None:
    """Bytes after the IP total / payload length (RFC 1812 5.2.2, RFC 8200 3)."""
    for _ in range(8):
        trailer = mk.pad(1, 40) + b"\x5a"
        mk.v4("trailer", 0, IP(src=HOST4[0][0], dst=VIA4[2].format(4)) / _udp(mk, 20, 80),
              trailer=trailer)
        mk.v6("trailer", 1, IPv6(src=HOST6[1][0], dst=VIA6[2].format(4)) / _udp(mk, 20, 80),
              trailer=trailer)
        mk.v4("trailer", 0, IP(src=HOST4[0][0], dst=ROUTER4[0]) / ICMP(type=8)
              / Raw(mk.pad(4, 40)), trailer=trailer)


def _redirects(mk: _Maker) -> None:
    """A packet that leaves by the port it came in on (RFC 1812 5.2.7.2, RFC 4861 8)."""
    for _ in range(3):
        mk.v4("redirect", 2, IP(src=HOST4[2][0], dst=VIA4[2].format(3)) / _udp(mk))
        mk.v6("redirect", 1, IPv6(src=HOST6[1][0], dst="2a00:2::3") / _udp(mk))


def _unreachable_protocol(mk: _Maker) -> None:
    """Protocols / next headers the router does not speak, sent to the router; UDP to it."""
    for proto in (253, 254, 143):
        mk.v4("protocol_unreachable", 0, IP(src=HOST4[0][0], dst=ROUTER4[0], proto=proto)
              / Raw(mk.pad(8, 40)))
        mk.v6("protocol_unreachable", 1, IPv6(src=HOST6[1][0], dst=ROUTER6[1], nh=proto)
              / Raw(mk.pad(8, 40)))
    for _ in range(3):
        mk.v4("port_unreachable", 0, IP(src=HOST4[0][0], dst=ROUTER4[2]) / _udp(mk))
        mk.v6("port_unreachable", 1, IPv6(src=HOST6[1][0], dst=ROUTER6[2]) / _udp(mk))


def _echo(mk: _Maker) -> None:
    """Echo to every address class the router owns, from every port with a neighbour."""
    for port in HOST4:
        for target in (*ROUTER4.values(), "192.0.2.127", "255.255.255.255"):
            mk.v4("echo4", port, IP(src=HOST4[port][0], dst=target)
                  / ICMP(type=8, seq=port) / Raw(mk.pad(0, 64)))
    for port in HOST6:
        for target in (*ROUTER6.values(), *ANYCAST6.values(), "ff02::1", "ff02::2",
                       "ff01::1", "ff05::2"):
            mk.v6("echo6", port, IPv6(src=HOST6[port][0], dst=target)
                  / ICMPv6EchoRequest(seq=port, data=mk.pad(0, 64)))


def _solicited_node(address: str) -> tuple[str, str]:
    """ff02::1:ffXX:XXXX of an address and its Ethernet group 33:33:ff:XX:XX:XX."""
    low = ipaddress.IPv6Address(address).packed[13:]
    return (str(ipaddress.IPv6Address(b"\xff\x02" + bytes(9) + b"\x01\xff" + low)),
            "33:33:ff:" + low.hex(":"))


def _neighbour_discovery(mk: _Maker) -> None:
    """ARP requests (RFC 826) and Neighbor Solicitations (RFC 4861 7.2.3) from each
    port's neighbour: for the port's address, another port's, and one nobody has.  The
    neighbours are permanent on both sides, so nothing is learnt that later probes see."""
    for port, (ip, mac) in HOST4.items():
        for target in (ROUTER4[port], ROUTER4[(port + 1) % 4], VIA4[1].format(77)):
            frame = Ether(src=mac, dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc=mac, psrc=ip,
                                                                 pdst=target)
            mk.made.append(Probe("neighbour_discovery", port, bytes(frame), mk.marker()))
    for port, (ip, mac) in HOST6.items():
        # (not the Subnet-Router anycast address: both sides delay that answer by a random
        # time, RFC 4861 7.2.7, so it lands after later probes)
        for target in (ROUTER6[port], "2001:db8:0:11::77"):
            group, group_mac = _solicited_node(target)
            mk.v6("neighbour_discovery", port, IPv6(src=ip, dst=group, hlim=255)
                  / ICMPv6ND_NS(tgt=target) / ICMPv6NDOptSrcLLAddr(lladdr=mac),
                  l2dst=group_mac)


def _jumbo_out(mk: _Maker) -> None:
    """Jumbo frames LEAVING the 9000-byte port 1 (issue 16 item 4): large echoes to the
    router's port-1 addresses (the reply goes back out of port 1 whole) and a large packet
    forwarded back out of port 1 (with the Redirect its source gets).  Fixed payloads, no
    RNG draw, so the probes of the other classes stay as they were."""
    for size in (2000, 5000, 9000):              # IP bytes: frames of up to 9,014 bytes
        body = bytes(i & 0xFF for i in range(size))
        mk.v4("jumbo_out", 1, IP(src=HOST4[1][0], dst=ROUTER4[1])
              / ICMP(type=8) / Raw(body[:size - 28]))
        mk.v6("jumbo_out", 1, IPv6(src=HOST6[1][0], dst=ROUTER6[1])
              / ICMPv6EchoRequest(data=body[:size - 48]))
        mk.v4("jumbo_out", 1, IP(src=HOST4[1][0], dst=VIA4[1].format(size % 250 + 1))
              / UDP(sport=7, dport=9) / Raw(body[:size - 28]))


CLASSES: tuple[Callable[[_Maker], None], ...] = (
    _forward, _ttl, _link_layer, _special4, _special6, _extension_headers, _fragments,
    _options, _mtu, _trailers, _redirects, _unreachable_protocol, _echo,
    _neighbour_discovery, _jumbo_out)


def probes(seed: int = 16, repeat: int = 2) -> list[Probe]:
    """Every class `repeat` times (the RNG draws new sizes and payloads each time)."""
    mk = _Maker(seed)
    for _ in range(repeat):
        for make in CLASSES:
            make(mk)
    return mk.made


def by_class(items: list[Probe]) -> Iterator[tuple[str, list[Probe]]]:
    classes: dict[str, list[Probe]] = {}
    for p in items:
        classes.setdefault(p.cls, []).append(p)
    yield from classes.items()
