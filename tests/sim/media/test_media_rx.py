"""Receive: freelist FIFO order, per-mpacket autopush words and timing, RBUF partitions and
their element freelists, drops and ELEMENT_DONE, against hand-worked values and a separately
written reference."""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npkit.sim.isa import MSF_RBUF_BASE, MSF_RBUF_ELEMENT_DONE, MSF_RX_THREAD_FREELIST_BASE

from .media_ref import EOP, OC192_POS, POS_OVERHEAD, RATES, SOP, TEN_GBE, RxReference, frame_cycles

FREELIST = MSF_RX_THREAD_FREELIST_BASE
DONE = MSF_RBUF_ELEMENT_DONE


def register(media: Any, me: int, ctx: int, xfer: int = 0, sig: int = 1, lst: int = 0,
             t: int = 0) -> None:
    media.fast_wr(me, ctx, FREELIST + lst, (sig << 8) | xfer, t)


def done(media: Any, first: int, count: int) -> None:
    media.fast_wr(0, 0, DONE, first | (count << 16), 0)


def test_autopush_words_timing_and_bytes(make_media: Any) -> None:
    # 2 ports, 8 KB RBUF of 128-byte elements: 32 elements per port; port 1 starts at 32.
    media = make_media([dict(TEN_GBE), dict(TEN_GBE)], autopush_latency=20)
    register(media, me=3, ctx=5, xfer=4, sig=7, lst=1)
    frame = bytes(range(100))
    media.add_rx_frame(1, frame)
    # 120 bytes on the wire = 960 bits = 134.4 cycles -> in RBUF at 135, pushed at 155
    media.advance(154)
    assert media.take_autopushes() == []
    media.advance(155)
    word0 = 100 | (1 << 16) | SOP | EOP
    word1 = 32 | (1 << 16)
    assert media.take_autopushes() == [(3, 5, 4, [word0, word1], 7, 155)]
    assert media.rbuf_read(32 * 128, 100) == frame
    words = media.read(MSF_RBUF_BASE + 32 * 128, 2)
    assert words == [0x00010203, 0x04050607]  # network byte order
    c = media.counters()[1]
    assert (c["rx_frames"], c["rx_bytes"], c["rx_handed"]) == (1, 100, 1)
    assert not media.idle()
    done(media, 32, 1)
    assert media.idle()


def test_freelist_is_fifo_and_push_waits_for_thread(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)], autopush_latency=20)
    for ctx in range(3):
        register(media, me=1, ctx=ctx, xfer=2 * ctx, sig=ctx + 1)
    media.add_rx_frames(0, bytes(64), 5)
    arrivals = [ceil(k * Fraction(9408, 100)) for k in range(1, 6)]  # 94.08 cycles each
    media.advance(10_000)
    got = media.take_autopushes()
    assert [(me, ctx, xfer, sig, when) for me, ctx, xfer, _, sig, when in got] == [
        (1, ctx, 2 * ctx, ctx + 1, arrivals[ctx] + 20) for ctx in range(3)]
    assert [w[1] & 0xFFFF for _, _, _, w, _, _ in got] == [0, 1, 2]
    assert media.counters()[0]["rx_waiting_high_water"] == 2
    assert media.rx_pending_frames() == 2
    # late threads get the waiting frames, oldest first, latency after they register
    register(media, me=2, ctx=0, t=20_000)
    register(media, me=2, ctx=1, t=20_005)
    media.advance(20_025)
    got = media.take_autopushes()
    assert [(me, ctx, w[1] & 0xFFFF, when) for me, ctx, _, w, _, when in got] == [
        (2, 0, 3, 20_020), (2, 1, 4, 20_025)]
    assert media.rx_pending_frames() == 0


def test_shared_freelist_serves_ports_in_arrival_order(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE, rx_freelist=3), dict(OC192_POS, rx_freelist=3)],
                       autopush_latency=0)
    media.add_rx_frames(0, bytes(64), 3)
    media.add_rx_frames(1, bytes(40), 3)
    media.advance(1000)
    for ctx in range(6):
        register(media, me=0, ctx=ctx, lst=3, t=1000)
    media.advance(1000)
    ten = [(ceil(k * frame_cycles(RATES["10gbe"], 64, 20)), 0) for k in range(1, 4)]
    pos = [(ceil(k * frame_cycles(RATES["oc192pos"], 40, POS_OVERHEAD)), 1) for k in range(1, 4)]
    order = [port for _, port in sorted(ten + pos)]
    got = media.take_autopushes()
    assert [(w[0] >> 16) & 0xFF for _, _, _, w, _, _ in got] == order


def test_full_partition_drops_new_frames_and_holds_started_ones(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])  # 64 elements of 128 bytes, no receive thread
    media.add_rx_frames(0, bytes(64), 70)  # one element each: 64 fit, 6 dropped at SOP
    media.advance(100_000)
    c = media.counters()[0]
    assert (c["rx_frames"], c["rx_dropped_rbuf_full"]) == (64, 6)
    assert c["rbuf_high_water_elements"] == c["rbuf_partition_high_water"] == 64
    assert c["rx_waiting_high_water"] == 64  # mpackets waiting for a thread
    # a frame whose first mpacket got an element waits (flow control) for the next one
    media = make_media([dict(TEN_GBE)])
    media.add_rx_frames(0, bytes(300), 30)  # 3 elements each: 21 in, the 22nd started
    media.advance(100_000)
    c = media.counters()[0]
    assert (c["rx_frames"], c["rx_dropped_rbuf_full"], c["rbuf_elements_in_use"]) == (21, 0, 64)
    assert c["rx_flow_control_stalls"] == 1 and media.next_event() is None
    assert media.rx_pending_frames() == 9 + 64  # frames on the line + mpackets waiting


def test_frame_larger_than_the_partition_flows_through(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)], rbuf_bytes=1024)  # 8 elements of 128
    frame = bytes(k % 253 for k in range(1025))  # 9 mpackets
    media.add_rx_frame(0, frame)
    got = b""
    for _ in range(9):  # one thread: take an mpacket, copy it out, free its element
        register(media, me=0, ctx=0)
        while not (pushes := media.take_autopushes()):
            media.advance(media.next_event())
        (_, _, _, words, _, _), = pushes
        got += media.rbuf_read((words[1] & 0xFFFF) * 128, words[0] & 0xFFFF)
        done(media, words[1] & 0xFFFF, 1)
    assert got == frame
    c = media.counters()[0]
    assert (c["rx_frames"], c["rx_dropped_too_long"], c["rbuf_elements_in_use"]) == (1, 0, 0)


def test_large_frame_arrives_as_mpackets_one_status_each(make_media: Any) -> None:
    # 300 bytes, 10GbE, from cycle 0: mpackets of 128, 128, 44 bytes; the first two are
    # complete when their last byte is in (128 * 8 bits = 143.36 cycles each), the last at
    # the frame's last bit (320 bytes on the wire = 358.4 cycles)
    media = make_media([dict(TEN_GBE)], autopush_latency=0)
    for ctx in range(3):
        register(media, me=0, ctx=ctx, xfer=2 * ctx, sig=1)
    frame = bytes(k % 251 for k in range(300))
    media.add_rx_frame(0, frame)
    media.advance(10_000)
    got = media.take_autopushes()
    assert [(ctx, when) for _, ctx, _, _, _, when in got] == [(0, 144), (1, 287), (2, 359)]
    assert [w[0] for _, _, _, w, _, _ in got] == [128 | SOP, 128, 44 | EOP]
    elements = [w[1] & 0xFFFF for _, _, _, w, _, _ in got]
    assert [w[1] >> 16 for _, _, _, w, _, _ in got] == [1, 1, 1]
    assert b"".join(media.rbuf_read(e * 128, n) for e, n in zip(elements, (128, 128, 44),
                                                                   strict=True)) == frame
    c = media.counters()[0]
    assert (c["rx_frames"], c["rx_handed"], c["rx_mpackets"]) == (1, 1, 3)


def serve_one_by_one(media: Any, mpackets: int) -> list[int]:
    """Register a thread, take the next mpacket, free its element; return the elements."""
    elements = []
    for _ in range(mpackets):
        register(media, me=0, ctx=0)
        media.advance(media.next_event())
        while not (pushes := media.take_autopushes()):
            media.advance(media.next_event())
        (_, _, _, words, _, _), = pushes
        element, count = words[1] & 0xFFFF, words[1] >> 16
        assert count == 1
        elements.append(element)
        done(media, element, 1)
    return elements


def test_elements_come_from_the_partition_freelist_in_order(make_media: Any) -> None:
    # port 1 of 2: elements 32..63; freed elements go to the back of the freelist
    media = make_media([dict(TEN_GBE, rx_freelist=1), dict(TEN_GBE, rx_freelist=0)])
    media.add_rx_frames(1, bytes(64), 40)
    assert serve_one_by_one(media, 40) == [32 + k % 32 for k in range(40)]


def test_a_frame_takes_any_free_elements_not_a_contiguous_run(make_media: Any) -> None:
    # 1 port, 64 elements. 21 frames of 3 elements take 0..62; freeing the odd ones leaves 32
    # free elements but no run of 3 -- the old contiguous placement dropped the next frame,
    # the freelist gives it the never-used 63, then 1 and 3 (freed elements queue behind)
    media = make_media([dict(TEN_GBE)], autopush_latency=0)
    for k in range(63):
        register(media, me=k // 8, ctx=k % 8)
    media.add_rx_frames(0, bytes(300), 21)
    media.advance(100_000)
    assert sorted(w[1] & 0xFFFF for _, _, _, w, _, _ in media.take_autopushes()) == list(range(63))
    for e in range(1, 63, 2):
        done(media, e, 1)
    for ctx in range(3):
        register(media, me=9, ctx=ctx, t=100_000)
    media.add_rx_frame(0, bytes(300))
    media.advance(200_000)
    assert [w[1] & 0xFFFF for _, _, _, w, _, _ in media.take_autopushes()] == [63, 1, 3]
    c = media.counters()[0]
    assert (c["rx_frames"], c["rx_dropped_rbuf_full"], c["rbuf_elements_in_use"]) == (22, 0, 35)


def test_wrapping_read_stays_in_partition(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE), dict(TEN_GBE)])  # 4096-byte partitions
    register(media, 0, 0)
    media.add_rx_frame(0, bytes(range(256)) * 2)  # elements 0..3 of port 0
    media.advance(10_000)
    # reading 8 bytes from the last 4 of port 0's partition wraps to its start
    assert media.rbuf_read(4092, 8) == bytes(4) + bytes(range(4))


@pytest.mark.parametrize(("value", "message"), [
    (5 | (1 << 16), "not in use"),
    (0 | (0 << 16), "count"),
    (0 | (65 << 16), "count"),
    (64 | (1 << 16), "outside the RBUF"),
])
def test_bad_element_done_faults(core: Any, make_media: Any, value: int, message: str) -> None:
    media = make_media([dict(TEN_GBE)])
    with pytest.raises(core.MediaFault, match=message):
        media.fast_wr(0, 0, DONE, value, 0)


def test_freeing_twice_or_before_the_push_faults(core: Any, make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    media.add_rx_frame(0, bytes(64))
    media.advance(1000)
    with pytest.raises(core.MediaFault, match="not yet handed"):
        done(media, 0, 1)
    register(media, 0, 0, t=1000)
    media.advance(2000)
    done(media, 0, 1)
    with pytest.raises(core.MediaFault, match="not in use"):
        done(media, 0, 1)
    assert media.idle()


@pytest.mark.parametrize(("csr", "value", "message"), [
    (0x7, 0, "unknown MSF CSR"),
    (FREELIST + 1, 1 << 8, "no port is served"),
    (FREELIST, 0, "signal 0"),
    (FREELIST, (16 << 8), "signal 16"),
    (FREELIST, (1 << 8) | 31, "no room"),
    (FREELIST, 1 << 16, "bits above 15"),
])
def test_bad_freelist_writes_fault(core: Any, make_media: Any, csr: int, value: int,
                                   message: str) -> None:
    media = make_media([dict(TEN_GBE)])
    with pytest.raises(core.MediaFault, match=message):
        media.fast_wr(0, 0, csr, value, 0)


# --------------------------------------------------------------------------- reference model
ops = st.lists(st.one_of(
    st.tuples(st.just("frame"), st.integers(0, 1), st.integers(1, 700)),
    st.tuples(st.just("register"), st.integers(0, 1), st.integers(0, 3)),
    st.tuples(st.just("advance"), st.integers(0, 3000), st.just(0)),
    st.tuples(st.just("free"), st.just(0), st.just(0)),
), max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(ops=ops, element_bytes=st.sampled_from([64, 128]), latency=st.integers(0, 40))
def test_receive_matches_reference_model(make_media: Any, ops: list[tuple[str, int, int]],
                                         element_bytes: int, latency: int) -> None:
    ports = [dict(TEN_GBE, rx_freelist=0), dict(OC192_POS, rx_freelist=1)]
    media = make_media(ports, rbuf_bytes=2048, element_bytes=element_bytes,
                       autopush_latency=latency)
    ref = RxReference(2048, element_bytes, latency,
                      [(RATES["10gbe"], 20, 0), (RATES["oc192pos"], POS_OVERHEAD, 1)])
    now = 0
    handed: list[tuple[int, int]] = []
    for kind, a, b in ops:
        if kind == "frame":
            media.add_rx_frame(a, bytes(b))
            ref.add(a, b)
        elif kind == "register":
            register(media, me=a, ctx=b, lst=a, t=now)
            ref.register(a, b, a, 0, 1, now)
        elif kind == "advance":
            now += a
            media.advance(now)
            expected = ref.advance(now)
            got = media.take_autopushes()
            assert got == expected
            handed += [(w[1] & 0xFFFF, w[1] >> 16) for _, _, _, w, _, _ in got]
        elif handed:
            element, count = handed.pop(0)
            assert count == 1
            done(media, element, 1)
            ref.free(element)
    for got, want in zip(media.counters(), ref.counters, strict=True):
        keys = ("rx_frames", "rx_dropped_rbuf_full", "rx_dropped_too_long", "rbuf_elements_in_use",
                "rbuf_high_water_elements", "rx_waiting_high_water", "rx_mpackets",
                "rx_flow_control_stalls")
        assert tuple(got[k] for k in keys) == (
            want["rx_frames"], want["rx_dropped_rbuf_full"], want["rx_dropped_too_long"],
            want["in_use"], want["high"], want["waiting_high"], want["mpackets"], want["stalls"])
