"""bench/linux_bridge.py: the sender's frames (against scapy's parse); the bench itself needs
root and network namespaces and is run by hand (docs/lab/compare)."""

from __future__ import annotations

import pytest
from scapy.all import IP, UDP, Ether

from npkit.bench import linux_bridge


@pytest.mark.parametrize("size", [64, 128, 1518])
def test_frames_are_valid_udp_of_the_size(size: int) -> None:
    data = linux_bridge.frame(size)
    assert len(data) == size - 4  # no FCS
    packet = Ether(data)
    assert packet.dst == "02:00:00:00:0b:02" and packet.src == "02:00:00:00:0b:01"
    ip = packet[IP]
    assert (ip.src, ip.dst, ip.ttl, ip.len) == ("198.18.0.1", "198.19.0.1", 64, size - 18)
    recomputed = IP(bytes(ip))
    del recomputed.chksum
    assert IP(bytes(recomputed)).chksum == ip.chksum
    assert packet[UDP].dport == 9 and packet[UDP].len == size - 38


def test_bad_sizes_are_usage_errors() -> None:
    with pytest.raises(SystemExit):
        linux_bridge.main(["--sizes", "40"])
