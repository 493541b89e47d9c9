"""Jumbo frames on the chip (issue 16 item 4): the router target links 16 KB buffers when a
port's MTU needs them (examples/router/control.toml: port 1 has MTU 9000), so frames up to
9,014 bytes are received whole; what leaves the chip is compared with the native target's
frames (the reference model of router.mbl) frame for frame.

A frame longer than the port's TBUF partition (8 KB TBUF / 4 ports = 2,048 bytes) streams
through it as on the hardware: one control word per element, each element freed when its
bytes have left (docs/media.md "Transmit"); tx_eth.uc copies such a frame in batches as
TX_SEQUENCE shows the elements free.  Frames up to 9,014 bytes leave as natively."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.inet6 import ICMPv6PacketTooBig, IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from npkit.link.errors import LinkError
from npkit.link.media import LAYOUT, buffer_bytes_for, buffer_bytes_for_mtu
from npkit.runtime import router_targets as rt

HOST0 = ("02:00:00:00:10:02", "192.0.2.2", "2001:db8:0:10::2")      # port 0, MTU 1500
HOST2_V6 = "2001:db8:0:99::5"           # a neighbour on port 2 (MTU 1500)
UPSTREAM = ("02:00:00:00:11:02", "198.51.100.2", "2001:db8:0:11::2")  # port 1, MTU 9000
ROUTER_MAC = {0: "02:00:00:00:00:10", 1: "02:00:00:00:00:11"}
GAP_S = 200e-6          # wider than the chip's exception latency (docs/cli.md)
TBUF_PARTITION = 2048   # 8,192-byte TBUF / 4 ports (sim/chips/ixp2800.toml, docs/media.md)


def udp4(size: int, port: int, src: str, dst: str, df: bool = False) -> bytes:
    head = (Ether(src=HOST0[0] if port == 0 else UPSTREAM[0], dst=ROUTER_MAC[port])
            / IP(src=src, dst=dst, ttl=64, id=size, flags="DF" if df else 0)
            / UDP(sport=1000, dport=2000))
    return bytes(head / Raw((bytes(range(256)) * 64)[:size - len(head)]))


def udp6(size: int, port: int, src: str, dst: str) -> bytes:
    head = (Ether(src=HOST0[0] if port == 0 else UPSTREAM[0], dst=ROUTER_MAC[port])
            / IPv6(src=src, dst=dst, hlim=64, fl=size) / UDP(sport=1000, dport=2000))
    return bytes(head / Raw((bytes(range(256)) * 64)[:size - len(head)]))


def both_targets(frames: list[bytes], in_port: int) -> tuple[rt.RouterResult, rt.RouterResult,
                                                             object]:
    timed = [rt.TimedFrame(i * GAP_S, in_port, f) for i, f in enumerate(frames)]
    native = rt.run_native(rt.load_config(rt.DEFAULT_CONFIG, "native"), timed)
    router = rt.build_chip_router(rt.load_config(rt.DEFAULT_CONFIG, "chip"), rt.DEFAULT_CONFIG)
    chip = rt.run_chip(router, timed)
    return native, chip, router


# ---------------------------------------------------------------------------- buffer size
def test_the_buffer_size_follows_the_largest_mtu() -> None:
    assert buffer_bytes_for_mtu(1500) == LAYOUT.buf_bytes == 2048
    assert buffer_bytes_for_mtu(1906) == 2048            # 1,920-byte frames: one 2 KB buffer
    assert buffer_bytes_for_mtu(1907) == 4096
    assert buffer_bytes_for_mtu(9000) == 16384
    assert buffer_bytes_for(16256) == 16384
    with pytest.raises(ValueError, match="16384"):
        buffer_bytes_for(16257)
    config = rt.load_config(rt.DEFAULT_CONFIG, "chip")
    assert rt.chip_buffer_bytes(config) == 16384          # port 1: MTU 9000


def test_the_layout_derives_shift_and_largest_frame() -> None:
    big = LAYOUT.with_buffer_bytes(16384)
    assert (big.buf_shift, big.buf_max_frame) == (9, 16384 - 128)
    assert 1 << big.buf_shift == big.buf_bytes // big.desc_bytes
    for bad in (3000, 32768, 32):
        with pytest.raises(ValueError):
            LAYOUT.with_buffer_bytes(bad)


def test_the_pool_mapping_refuses_the_option() -> None:
    from npkit.compiler.mbl import compile_file
    from npkit.compiler.me import compile_me
    from npkit.link import link

    program = compile_file(rt.ROUTER_MBL)
    with pytest.raises(LinkError, match="rings mapping"):
        link(program, compile_me(program, next(iter(program.pipelines))),
             pool_mes_per_port=2, buf_bytes=16384)


# ---------------------------------------------------------------------------- on the chip
@pytest.fixture(scope="module")
def toward_port1() -> tuple[rt.RouterResult, rt.RouterResult, object]:
    """Port 0 -> port 1 (MTU 9000): frames that fit the TBUF partition, longer ones, frames
    after those (the transmit ME goes on), a 9,018-byte frame (its packet over the MTU:
    fragments, the first 9,010 bytes, sent by the XScale through the same transmit ME)
    and the same with DF (Fragmentation Needed)."""
    sizes = [1514, 1920, 1921, 2048, 2049, 4000, 9014, 100, 1514, 9018]
    frames = [udp4(n, 0, HOST0[1], UPSTREAM[1]) for n in sizes]   # 9,018: fragmented
    frames.append(udp4(9018, 0, HOST0[1], UPSTREAM[1], df=True))
    return both_targets(frames, 0)


def test_every_frame_leaves_as_natively(toward_port1) -> None:
    native, chip, router = toward_port1
    assert [len(f) for f in native.frames(1)] == [1514, 1920, 1921, 2048, 2049, 4000, 9014,
                                                  100, 1514, 9010, 60]
    assert chip.frames(1) == native.frames(1)
    assert not chip.counters["receive_drops"]
    assert not rt.buffer_leaks(router), "every frame's buffer is back"


def test_longer_frames_stream_through_the_partition(toward_port1) -> None:
    """The 2,049-, 4,000-, 9,014- and 9,010-byte frames took 17, 32, 71 and 71 TBUF
    elements of a 16-element partition: TX_SEQUENCE counts every element once, none is
    left queued."""
    native, _, router = toward_port1
    port1 = router.chip.counters()["ports"][1]
    elements = sum(-(-len(f) // 128) for f in native.frames(1))
    assert (port1["tx_frames"], port1["tx_elements"]) == (len(native.frames(1)), elements)
    assert port1["tbuf_elements_queued"] == 0


def test_too_big_for_the_jumbo_mtu_answers_as_natively(toward_port1) -> None:
    native, chip, _ = toward_port1
    assert chip.frames(0) == native.frames(0)
    (answer,) = [Ether(f) for f in chip.frames(0)]
    assert answer[ICMP].type == 3 and answer[ICMP].code == 4
    assert answer[ICMP].nexthopmtu == 9000


@pytest.fixture(scope="module")
def from_port1() -> tuple[rt.RouterResult, rt.RouterResult, object]:
    """Port 1 (MTU 9000) -> ports 0 and 2 (MTU 1500): jumbo frames fragmented or answered
    with Fragmentation Needed / Packet Too Big, all of it in frames that fit a TBUF
    partition."""
    frames = []
    for n in (1514, 1515, 4000, 9014):
        frames.append(udp4(n, 1, UPSTREAM[1], HOST0[1]))
        frames.append(udp4(n, 1, UPSTREAM[1], HOST0[1], df=True))
        frames.append(udp6(n, 1, UPSTREAM[2], HOST2_V6))
    return both_targets(frames, 1)


def test_jumbo_frames_from_the_jumbo_port_give_the_native_frames(from_port1) -> None:
    native, chip, router = from_port1
    for port in (0, 1, 2):
        assert chip.frames(port) == native.frames(port), port
    fragments = [Ether(f) for f in chip.frames(0) if IP in Ether(f) and Ether(f)[IP].frag]
    assert fragments, "the non-DF jumbo packets were fragmented"
    assert max(len(f) for f in chip.frames(0) + chip.frames(2)) == 1514
    assert len(chip.frames(2)) == 1                      # the 1,514-byte IPv6 frame fits
    too_big = [Ether(f) for f in chip.frames(1)]
    assert sum(ICMP in f and f[ICMP].type == 3 for f in too_big) == 3      # 1515, 4000, 9014 DF
    assert [f[ICMPv6PacketTooBig].mtu for f in too_big if ICMPv6PacketTooBig in f] == \
        [1500] * 3
    assert not chip.counters["receive_drops"]
    assert not rt.buffer_leaks(router)


def test_the_linked_buffers_are_the_jumbo_ones(toward_port1) -> None:
    _, _, router = toward_port1
    lay = router.linked.program.layout()
    assert (lay.buf_bytes, lay.buf_shift, lay.buf_max_frame) == (16384, 9, 16256)
    for spec in router.loaded.freelists:
        assert spec.buffer_bytes == 16384
        for i in (0, spec.count - 1):     # the microcode's handle -> buffer formula
            assert lay.buffer_address(spec.handle(i)) == spec.dram_base + i * 16384


def test_back_to_back_mixed_sizes_keep_order_and_buffers() -> None:
    """Frames at line rate (all at time 0: the wire spaces them), 55 of the 120 longer
    than the TBUF partition: the transmit ME's 8 threads stream those through it and send
    every frame in order.  A fixed run length (written before run_until_drained waited for
    the frames still on a port's wire; test below)."""
    import random

    rng = random.Random(1)
    sizes = [rng.choice([64, 1000, 1514, 2048, 2049, 3000, 9014]) for _ in range(120)]
    timed = [rt.TimedFrame(0.0, 0, udp4(n, 0, HOST0[1], UPSTREAM[1])) for n in sizes]
    native = rt.run_native(rt.load_config(rt.DEFAULT_CONFIG, "native"), timed)
    router = rt.build_chip_router(rt.load_config(rt.DEFAULT_CONFIG, "chip"), rt.DEFAULT_CONFIG)
    wire_s = sum(n + 20 for n in sizes) * 8 / 10e9
    cycles = int(2 * wire_s * router.chip.config.clock_hz) + 400_000
    chip = rt.run_chip(router, timed, cycles=cycles)
    assert sum(n > TBUF_PARTITION for n in sizes) == 55
    assert chip.frames(1) == native.frames(1)
    assert not chip.counters["receive_drops"]
    assert not rt.buffer_leaks(router)


def test_a_run_until_drained_waits_for_frames_still_on_the_wire() -> None:
    """Frames handed to a port all at once queue on its wire (300 of up to 9,014 bytes: ms of
    line time); the run ends only when every one of them has arrived and left or been
    dropped -- it once stopped while most were still queued, with a buffer out; the long
    ones stream through the TBUF partition."""
    from npkit.runtime.loader import leak_check

    sizes = [1514, 2000, 64, 9014, 512, 1200] * 50
    frames = [udp4(size, 0, HOST0[1], UPSTREAM[1]) for size in sizes]
    router = rt.build_chip_router(rt.load_config(rt.DEFAULT_CONFIG, "chip"), rt.DEFAULT_CONFIG)
    result = rt.run_chip(router, [rt.TimedFrame(0.0, 0, f) for f in frames])
    ports = router.chip.counters()["ports"]
    assert ports[0]["rx_frames"] + ports[0]["rx_dropped_rbuf_full"] == len(frames)
    assert not result.counters["receive_drops"]
    assert len(result.out[1]) == ports[0]["rx_frames"]
    assert ports[1]["tx_frames"] == ports[0]["rx_frames"]
    assert all(r.ok for r in leak_check(router.loaded)), leak_check(router.loaded)
