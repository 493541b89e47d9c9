"""Receive and transmit written in MBL (docs/datapath.md) on the native target.

The reference is today's native router: a pipeline `frame_rx -> <router stages> ->
frame_tx` fed a frame as mpackets of any element size must give, frame for frame, exactly
the verdict and bytes the router gives the whole frame (examples/pos_router,
examples/router).  Frames are built with scapy; the buffer pool must be whole again at the
end (no leak).  Then the receive block's own rules: a pool that runs dry, a frame longer than
a buffer, a frame whose last mpacket never came, interleaved ports."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import ARP, IP, UDP, Ether, IPv6, raw
from test_pos_router import load_tables, v4, v6

from npkit.compiler.mbl import NativeProgram, check_source, compile_file
from npkit.compiler.mbl.native import BufferPool, Verdict
from npkit.compiler.mbl.types import MEDIA_EOP, MEDIA_SOP

REPO = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).parent / "programs"
SOP, EOP, ONE = MEDIA_SOP, MEDIA_EOP, MEDIA_SOP | MEDIA_EOP


def media_router(name: str, pool: BufferPool | None = None) -> NativeProgram:
    return load_tables(NativeProgram(compile_file(PROGRAMS / f"{name}.mbl"), name,
                                     buffers=pool))


@pytest.fixture(scope="module")
def pos_pair() -> tuple[NativeProgram, NativeProgram]:
    plain = load_tables(NativeProgram(compile_file(REPO / "examples/pos_router/pos_router.mbl"),
                                      "pos_router"))
    # buffers for the largest frame the tests build (12 x 256 + 1 bytes)
    return plain, media_router("media_pos_router", BufferPool(count=64, buffer_bytes=4096))


@pytest.fixture(scope="module")
def eth_pair() -> tuple[NativeProgram, NativeProgram]:
    plain = load_tables(NativeProgram(compile_file(REPO / "examples/router/router.mbl"),
                                      "router"))
    return plain, media_router("media_router")


def same_as_plain(pair, frames: list[bytes], element_bytes: int) -> list[Verdict]:
    """The media pipeline gives each frame the plain router's verdict and bytes."""
    plain, media = pair
    ports = [k % 2 for k in range(len(frames))]
    expected = plain.run(frames, ports)
    got = list(media.run_media(zip(frames, ports, strict=True), element_bytes))
    assert [i for i, _ in got] == list(range(len(frames)))  # one verdict a frame, in order
    assert [v for _, v in got] == expected
    assert media.buffers_free() == media.pool.count  # every buffer came back
    return expected


def pos_frames() -> list[bytes]:
    return [v4(), v4(ttl=1), v4(dst="10.1.2.3"), v4(dst="192.0.2.5", ttl=9),
            v4(src="127.0.0.1"), v4()[:-1], v4()[:4 + 19], b"\xff\x03\x00", b"",
            raw(IP(dst="10.2.3.4")),  # no PPP header: bad_ppp_header
            v6(), v6(hlim=1), v6(dst="2001:db8:5::7"), v6(src="::1"),
            v4() + b"x" * 1200,  # longer than the IP total length: forwarded as delivered
            v4(dst="10.9.9.9", options=b"\x01" * 4)]


def eth(ip) -> bytes:
    return raw(Ether(src="02:00:00:00:00:09", dst="02:00:00:00:00:01") / ip)


def eth_frames() -> list[bytes]:
    udp = UDP(sport=7, dport=9)
    return [eth(IP(src="198.18.0.1", dst="10.2.3.4") / udp / (b"a" * 18)),
            eth(IP(src="198.18.0.1", dst="10.1.2.3", ttl=1) / udp),
            eth(IP(src="198.18.0.1", dst="192.0.2.9") / udp / (b"b" * 1400)),
            eth(IPv6(src="2001:db8:9::9", dst="2001:db8:1::1") / udp / (b"c" * 700)),
            raw(Ether() / ARP()), b"\x01" * 13, b""]


@pytest.mark.parametrize("element_bytes", [8, 64, 128, 256, 2048])
def test_pos_router_with_mbl_receive_and_transmit(pos_pair, element_bytes):
    verdicts = same_as_plain(pos_pair, pos_frames(), element_bytes)
    assert {v.kind for v in verdicts} == {"forward", "drop", "exception"}


@pytest.mark.parametrize("element_bytes", [64, 128, 256])
def test_ethernet_router_with_mbl_receive_and_transmit(eth_pair, element_bytes):
    verdicts = same_as_plain(eth_pair, eth_frames(), element_bytes)
    # forwarded, TTL expired, frag needed (1400 B to a 1280 B MTU), ARP, runts
    assert [v.kind for v in verdicts] == ["forward", "exception", "exception", "forward",
                                          "exception", "drop", "drop"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(element_bytes=st.sampled_from([64, 128, 256]),
       shapes=st.lists(st.tuples(st.integers(0, 12), st.integers(-1, 1), st.booleans()),
                       min_size=1, max_size=12))
def test_frame_sizes_around_element_boundaries(pos_pair, element_bytes, shapes):
    """Frames of k elements and one byte less or more (IPv4 and IPv6 over PPP, padded to
    the size), so mpackets end exactly at, just before and just after a boundary."""
    frames = []
    for k, delta, six in shapes:
        base = v6() if six else v4()
        size = max(1, k * element_bytes + delta)
        frames.append((base + bytes(size))[:size] if size < len(base) else
                      base + b"\x5a" * (size - len(base)))
    same_as_plain(pos_pair, frames, element_bytes)


def test_a_dry_pool_drops_the_frame_once_and_the_rest_of_it_is_absorbed():
    media = media_router("media_pos_router", BufferPool(count=1))
    big, small = v4() + b"x" * 300, v4()
    cut = [big[k:k + 128] for k in range(0, len(big), 128)]
    items = [(cut[0], 0, SOP),             # port 0 takes the only buffer
             (cut[0], 1, SOP),             # port 1: none left
             (cut[1], 1, 0), (cut[2], 1, EOP),  # the rest of port 1's frame: absorbed
             (small, 1, ONE),              # a one-mpacket frame needs no buffer
             (cut[1], 0, 0), (cut[2], 0, EOP)]
    got = list(media.run_mpackets(items))
    assert [v.kind for v in got] == ["consumed", "drop", "consumed", "consumed", "forward",
                                     "consumed", "forward"]
    assert got[1].reason == "no_buffer"
    assert len(got[6].data) == len(big) and got[6].data[12] == big[12] - 1  # TTL - 1
    assert media.buffers_free() == 1


def test_a_frame_longer_than_a_buffer_is_dropped_as_too_long():
    media = media_router("media_pos_router", BufferPool(count=4, buffer_bytes=256))
    frames = [(v4() + b"y" * 300, 0), (v4(), 0), (v4() + b"y" * 150, 1)]
    got = list(media.run_media(frames, element_bytes=128))
    assert [(i, v.kind, v.reason) for i, v in got] == [(0, "drop", "too_long"),
                                                       (1, "forward", ""), (2, "forward", "")]
    assert media.buffers_free() == 4


def test_a_frame_without_its_last_mpacket_is_given_up_at_the_next_first_of_several():
    """A one-mpacket frame passes without touching the port's state (media_rx.mbl: on the
    chip it then holds the receive turn for a few instructions): the stale frame is given up
    at the next frame of several mpackets."""
    media = media_router("media_pos_router", BufferPool(count=2))
    frame = v4() + b"z" * 200
    got = list(media.run_mpackets([(frame[:128], 0, SOP), (frame, 0, ONE)]))
    assert [v.kind for v in got] == ["consumed", "forward"]
    assert got[1].data[4 + 8] == v4()[4 + 8] - 1  # TTL decremented: the second frame's bytes
    assert media.read("rx_incomplete", 0) == 0 and media.buffers_free() == 1
    again = list(media.run_mpackets([(frame[:128], 0, SOP), (frame[128:], 0, EOP)]))
    assert [v.kind for v in again] == ["consumed", "forward"] and again[1].data == got[1].data
    assert media.read("rx_incomplete", 0) == 1 and media.buffers_free() == 2


def test_the_transmit_stage_runs_after_every_forward(native_from):
    src = """
        counter sent [4] in scratch;
        block a { if meta.in_port == 3 { drop(three); } forward(meta.in_port + 1); }
        block t { if meta.out_port == 2 { drop(closed); } sent.count(meta.out_port);
                  media.send(meta.out_port); }
        pipeline p { stage s = a; stage x = t; }
    """
    program, bag = check_source(src, "t.mbl")
    assert not bag.errors, bag.render(program.sources)
    native = NativeProgram(program, "p")
    got = native.run([b"\0" * 20] * 4, [0, 1, 2, 3])
    assert [(v.kind, v.port, v.reason) for v in got] == [
        ("forward", 1, ""), ("drop", 0, "closed"), ("forward", 3, ""), ("drop", 0, "three")]
    assert [native.read("sent", k) for k in range(4)] == [0, 1, 0, 1]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(1, 700), min_size=2, max_size=10),
       order=st.lists(st.booleans(), min_size=200, max_size=200))
def test_interleaved_ports_are_gathered_independently(pos_pair, sizes, order):
    """Mpackets of two ports interleave in any way (each port's own in order, as the MSF
    delivers them): each frame still gets the plain router's verdict and bytes."""
    plain, media = pos_pair
    frames = [(v4() + b"\x5a" * n)[:max(n, 4)] if k % 3 else v6() + bytes(n)
              for k, n in enumerate(sizes)]
    queues: dict[int, list[tuple[int, bytes, int]]] = {0: [], 1: []}
    for k, frame in enumerate(frames):
        cut = [frame[i:i + 64] for i in range(0, len(frame), 64)]
        for i, piece in enumerate(cut):
            status = (SOP if i == 0 else 0) | (EOP if i == len(cut) - 1 else 0)
            queues[k % 2].append((k, piece, status))
    items, owners, choices = [], [], iter(order)
    while queues[0] or queues[1]:
        port = 0 if not queues[1] else 1 if not queues[0] else int(next(choices, False))
        k, piece, status = queues[port].pop(0)
        items.append((piece, port, status))
        owners.append(k)
    got = {}
    for k, verdict in zip(owners, media.run_mpackets(items), strict=True):
        if verdict.kind != "consumed":
            assert k not in got  # one verdict a frame
            got[k] = verdict
    expected = plain.run(frames, [k % 2 for k in range(len(frames))])
    assert [got[k] for k in range(len(frames))] == expected
    assert media.buffers_free() == media.pool.count


def test_whole_frames_through_run_are_one_mpacket_each(pos_pair):
    """run()/run_stream() (npkit run, the lab) give a receive stage each frame as one
    mpacket: the media pipeline then needs no buffer and matches the plain router."""
    plain, media = pos_pair
    frames = pos_frames()
    ports = [k % 2 for k in range(len(frames))]
    assert media.run(frames, ports) == plain.run(frames, ports)
    assert media.buffers_free() == media.pool.count
