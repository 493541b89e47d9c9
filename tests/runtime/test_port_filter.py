"""The port's address filter (IEEE 802.3 4.2.4.1.2: a station receives frames for its own
address, broadcast and the multicast groups it listens to; Linux drops the rest as
PACKET_OTHERHOST): a unicast frame for another station's MAC is dropped by the data
plane (`other_host`) on the native target and on the chip, IPv4, IPv6 and ARP alike; the
same packet to the port's MAC is forwarded or answered.  Frames from scapy."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from npkit.runtime.control_plane import NativeRouter
from npkit.runtime.port_table import PortTable
from npkit.runtime.router_config import RouterConfig

REPO = Path(__file__).resolve().parents[2]
ROUTER = REPO / "examples/router/router.mbl"
CONFIG = REPO / "examples/router/control.toml"
PORT0_MAC = "02:00:00:00:00:10"
OTHER_MAC = "02:00:00:00:99:99"
HOST_MAC = "02:00:00:00:10:02"          # control.toml's neighbour on port 0


def udp4(dst_mac: str) -> bytes:
    return bytes(Ether(src=HOST_MAC, dst=dst_mac) / IP(src="192.0.2.2", dst="10.1.2.3")
                 / UDP(sport=1, dport=2) / (b"x" * 20))


def udp6(dst_mac: str) -> bytes:
    return bytes(Ether(src=HOST_MAC, dst=dst_mac)
                 / IPv6(src="2001:db8:0:10::2", dst="2001:db8:0:11::2")
                 / UDP(sport=1, dport=2) / (b"x" * 20))


def ping_router(dst_mac: str) -> bytes:
    return bytes(Ether(src=HOST_MAC, dst=dst_mac) / IP(src="192.0.2.2", dst="192.0.2.1")
                 / ICMP(id=7, seq=1))


def arp_request(dst_mac: str) -> bytes:
    return bytes(Ether(src=HOST_MAC, dst=dst_mac)
                 / ARP(op=1, hwsrc=HOST_MAC, psrc="192.0.2.2", pdst="192.0.2.1"))


FRAMES = {"ipv4": udp4, "ipv6": udp6, "echo": ping_router, "arp": arp_request}


@pytest.fixture(scope="module")
def program():
    from npkit.compiler.mbl import NativeProgram, compile_file

    return NativeProgram(compile_file(ROUTER))


@pytest.fixture
def router(program) -> NativeRouter:
    for name in program.program.memories:
        program.region(name)[:] = 0
    router = NativeRouter(program, ports=4, config=RouterConfig.load(CONFIG))
    router.control.exceptions.limiter = None
    return router


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_a_frame_for_another_station_is_dropped(router, kind):
    out = router.forward([FRAMES[kind](OTHER_MAC)], 0).out
    assert out == {}
    counters = router.counters.port(0)
    assert counters.drops["other_host"] + router.control.exceptions.counters[
        "dropped.other_host"] == 1


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_the_same_frame_for_the_port_is_taken(router, kind):
    out = router.forward([FRAMES[kind](PORT0_MAC)], 0).out
    assert sum(map(len, out.values())) == 1


def test_broadcast_and_multicast_pass_the_filter(router):
    out = router.forward([arp_request("ff:ff:ff:ff:ff:ff")], 0).out
    assert Ether(out[0][0])[ARP].op == 2
    # IP in a multicast frame is not forwarded (RFC 1812 5.3.4), but not as other_host
    router.forward([udp4("01:00:5e:00:00:01")], 0)
    assert router.counters.port(0).drops == {"l2_multicast": 1}


def test_a_port_without_a_mac_accepts_every_destination(program):
    for name in program.program.memories:
        program.region(name)[:] = 0
    router = NativeRouter(program, ports=4, config=RouterConfig.load(CONFIG))
    router.control.port_table.clear(0)
    assert 2 in router.forward([udp4(OTHER_MAC)], 0).out      # 10/8 via port 2


def test_the_port_table_holds_the_configs_macs(router):
    table: PortTable = router.control.port_table
    assert [table.get(p).mac for p in range(5)] == [
        0x020000000010, 0x020000000011, 0x020000000012, 0x020000000013, 0]
    assert (table.get(3).net4, table.get(3).mask4) == (0xC0000280, 0xFFFFFF80)   # /25


def test_the_chip_drops_frames_for_another_station():
    from npkit.runtime.compiled_router import CompiledRouter, link_router

    router = CompiledRouter(linked=link_router(ROUTER, "ixp2800-4x10gbe"))
    router.configure(RouterConfig.load(CONFIG))
    frames = [f(mac) for f in (udp4, udp6) for mac in (OTHER_MAC, PORT0_MAC)]
    result = router.forward({0: frames}, load=0.1)
    assert [Ether(f).type for f in result.frames(2) + result.frames(1)] == [0x0800, 0x86DD]
    assert router.counters()["drops"].get("other_host") == 2


# ---- trailers: the port record says whether its frames end in an FCS ----
TRAILERS = (1, 2, 3, 4, 9)


def with_trailer(size: int, ipv6: bool = False) -> bytes:
    """A frame over the 60-byte minimum with `size` bytes after the IP packet."""
    frame = udp6(PORT0_MAC) if ipv6 else udp4(PORT0_MAC)
    return frame + bytes(range(1, size + 1))


@pytest.mark.parametrize("size", TRAILERS)
@pytest.mark.parametrize("ipv6", [False, True])
def test_the_native_target_strips_every_trailer(router, size, ipv6):
    """Frames from pcaps carry no FCS (the port record says so): every byte after the IP
    length leaves out (RFC 1812 5.2.2, RFC 8200 3), 1 to 4 bytes too."""
    out = router.forward([with_trailer(size, ipv6)], 0).out
    (frame,) = [f for fs in out.values() for f in fs]
    assert len(frame) == len(udp6(PORT0_MAC) if ipv6 else udp4(PORT0_MAC))
    assert router.control.port_table.get(0).fcs_absent == 4


@pytest.mark.parametrize("fcs", [False, True])
def test_the_chip_strips_trailers_with_and_without_an_fcs(fcs):
    """The same on the chip, for frames without an FCS (scapy's) and with one (as the
    simulator's generated traffic): a trailer of 1..4 bytes is not taken for an FCS."""
    from zlib import crc32

    from npkit.runtime.compiled_router import CompiledRouter, link_router

    router = CompiledRouter(linked=link_router(ROUTER, "ixp2800-4x10gbe"))
    router.control.frames_have_fcs = fcs
    router.configure(RouterConfig.load(CONFIG))
    assert router.control.port_table.get(0).fcs_absent == (0 if fcs else 4)
    frames = [with_trailer(size) for size in TRAILERS] + [udp4(PORT0_MAC)]
    if fcs:
        frames = [f + crc32(f).to_bytes(4, "little") for f in frames]
    result = router.forward({0: frames}, load=0.05)
    # the slow path sends the packet alone; the fast path passes an FCS through
    plain = len(udp4(PORT0_MAC))
    assert sorted(len(f) for f in result.frames(2)) == sorted(
        [plain] * len(TRAILERS) + [plain + (4 if fcs else 0)])
