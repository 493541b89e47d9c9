"""Writes sample.pcap: the traffic `npkit router run` is shown and tested with (README.md).

    .venv/bin/python examples/router/make_sample.py        # -> examples/router/sample.pcap

Frames a host on port 0 sends to the router (from 192.0.2.2, a neighbour there, and from
2001:db8:ffff::2, routed via port 1, so the IPv6 answers leave on port 1), 50 µs apart (wider
than the chip's exception latency, so every target answers in the same order): IPv4 and
IPv6 to routed destinations on ports 1, 2 and 3, pings to the router's port-0 addresses,
TTL / hop limit 1, a DF packet larger than port 3's MTU (1280), a frame with a bad IPv4
header checksum, an ARP request for the router, a frame for another station's MAC and one
with a 3-byte trailer after the IP packet.  Each is one line below; the expected outcome
is its comment.
"""

from __future__ import annotations

import sys
from pathlib import Path

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Packet, Padding, Raw
from scapy.utils import wrpcap

HERE = Path(__file__).resolve().parent
HOST_MAC, ROUTER_MAC = "02:00:00:00:10:02", "02:00:00:00:00:10"   # control.toml, port 0
OTHER_MAC = "02:00:00:00:99:99"          # another station on port 0's link
HOST4 = "192.0.2.2"            # a neighbour on port 0: IPv4 answers go back on port 0
HOST6 = "2001:db8:ffff::2"     # behind the upstream (::/0 via port 1): IPv6 answers on port 1
GAP_S = 50e-6
START_S = 1_700_000_000.0


def frames() -> list[Packet]:
    def v4(**fields: object) -> Packet:
        return Ether(src=HOST_MAC, dst=ROUTER_MAC) / IP(src=HOST4, **fields)

    def v6(**fields: object) -> Packet:
        return Ether(src=HOST_MAC, dst=ROUTER_MAC) / IPv6(src=HOST6, **fields)

    return [
        v4(dst="198.18.0.1") / UDP(sport=4000, dport=9) / Raw(b"default"),  # port 1
        v4(dst="10.1.2.3") / UDP(sport=4001, dport=9) / Raw(b"10/8"),       # port 2
        v4(dst="172.16.5.5") / TCP(sport=4002, dport=80),                   # port 3
        v4(dst="192.0.2.130") / UDP(sport=4003, dport=9),                   # port 3, host
        v6(dst="2001:db8:ffff::1") / UDP(sport=4004, dport=9),              # port 1, ::/0
        v6(dst="2001:db8:100::7") / UDP(sport=4005, dport=9),               # port 2, /40
        v4(dst="192.0.2.1") / ICMP(id=7, seq=1) / Raw(b"ping"),             # echo reply
        v6(dst="2001:db8:0:10::1") / ICMPv6EchoRequest(id=7, seq=2),        # echo reply
        v4(dst="10.1.2.3", ttl=1) / UDP(sport=4006, dport=9),               # time exceeded
        v6(dst="2001:db8:ffff::1", hlim=1) / UDP(sport=4007, dport=9),      # time exceeded
        v4(dst="172.16.5.5", flags="DF") / UDP(sport=4008, dport=9)
        / Raw(bytes(1300)),                                                 # frag. needed
        v4(dst="10.9.9.9", chksum=0x1234) / UDP(sport=4009, dport=9),       # dropped
        v4(dst="198.18.0.2", ttl=2) / TCP(sport=4010, dport=443),           # port 1, TTL 1
        Ether(src=HOST_MAC, dst="ff:ff:ff:ff:ff:ff")
        / ARP(hwsrc=HOST_MAC, psrc=HOST4, pdst="192.0.2.1"),                # ARP reply
        Ether(src=HOST_MAC, dst=OTHER_MAC) / IP(src=HOST4, dst="10.1.2.3")
        / UDP(sport=4011, dport=9),                                         # not ours: dropped
        v4(dst="10.1.2.3") / UDP(sport=4012, dport=9) / Raw(b"trailer" * 8)
        / Padding(b"\xde\xad\xbe"),                                        # port 2, w/o trailer
    ]


def main(out: Path = HERE / "sample.pcap") -> None:
    packets = []
    for i, frame in enumerate(frames()):
        frame = Ether(bytes(frame))          # checksums and lengths filled in
        frame.time = START_S + i * GAP_S
        packets.append(frame)
    wrpcap(str(out), packets)
    print(f"{out}: {len(packets)} frames")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "sample.pcap")
