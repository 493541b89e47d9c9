"""Transmit: strict in-order TBUF rings, TX_SEQUENCE, line-rate departures, wrap within the
partition, and control-word faults; times hand-computed with fractions."""

from __future__ import annotations

from fractions import Fraction
from math import ceil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npkit.sim.isa import (
    MSF_RBUF_BASE,
    MSF_TBUF_BASE,
    MSF_TBUF_CTL_BASE,
    MSF_TX_SEQUENCE_BASE,
)

from .media_ref import OC192_POS, POS_OVERHEAD, RATES, TEN_GBE, frame_cycles


def control(length: int, port: int) -> int:
    return length | (port << 16)  # docs/architecture.md "Transmit": bits 15..0, 23..16


def queue_frame(media: Any, element: int, data: bytes, port: int = 0, t: int = 0) -> None:
    media.tbuf_write(element * 128, data)
    media.write(MSF_TBUF_CTL_BASE + 4 * element, [control(len(data), port)], t)


def sequence(media: Any, port: int = 0) -> int:
    (value,) = media.read(MSF_TX_SEQUENCE_BASE + 4 * port, 1)
    return value


def test_one_frame_leaves_at_line_rate(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    frame = bytes(range(64))
    queue_frame(media, 0, frame, t=100)
    assert media.next_event() == 195  # 100 + 94.08, rounded up
    media.advance(194)
    assert media.take_tx() == [] and sequence(media) == 0
    media.advance(195)
    assert media.take_tx() == [(0, 100, 195, frame)]
    assert sequence(media) == 1
    c = media.counters()[0]
    assert (c["tx_frames"], c["tx_bytes"], c["tx_elements"]) == (1, 64, 1)
    assert media.idle()


def test_frames_leave_back_to_back_in_order(make_media: Any) -> None:
    media = make_media([dict(OC192_POS)])
    frames = [bytes([k]) * 200 for k in range(10)]  # 2 elements each
    for k, frame in enumerate(frames):
        queue_frame(media, 2 * k, frame)
    media.advance(100_000)
    per = frame_cycles(RATES["oc192pos"], 200, POS_OVERHEAD)
    assert media.take_tx() == [
        (0, ceil(k * per), ceil((k + 1) * per), frames[k]) for k in range(10)]
    assert sequence(media) == 20


def test_later_element_waits_for_the_earlier_one(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    second = b"\x02" * 64
    first = b"\x01" * 200  # elements 0 and 1
    queue_frame(media, 2, second, t=0)
    media.advance(400)
    assert media.take_tx() == [] and media.next_event() is None
    queue_frame(media, 0, first, t=500)
    media.advance(10_000)
    p_first = frame_cycles(RATES["10gbe"], 200, 20)
    p_second = frame_cycles(RATES["10gbe"], 64, 20)
    assert media.take_tx() == [
        (0, 500, ceil(500 + p_first), first),
        (0, ceil(500 + p_first), ceil(500 + p_first + p_second), second)]
    assert sequence(media) == 3


def test_frame_wraps_within_the_port_partition(make_media: Any) -> None:
    # 2 ports: port 1 owns elements 32..63 (bytes 4096..8191)
    media = make_media([dict(TEN_GBE), dict(TEN_GBE)])
    for rel in range(30):
        queue_frame(media, 32 + rel, bytes([rel]) * 10, port=1)
    media.advance(100_000)
    assert len(media.take_tx()) == 30 and sequence(media, 1) == 30
    big = bytes(range(256)) + bytes(range(44))  # 300 bytes: elements 62, 63, then 32
    queue_frame(media, 62, big, port=1, t=100_000)
    media.advance(200_000)
    ((port, _, _, data),) = media.take_tx()
    assert (port, data) == (1, big)
    assert sequence(media, 1) == 33 and sequence(media, 0) == 0
    # the ring continues at element 33
    queue_frame(media, 33, b"next", port=1, t=200_000)
    media.advance(300_000)
    assert [f[3] for f in media.take_tx()] == [b"next"]


def test_msf_write_fills_tbuf_in_network_byte_order(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    media.write(MSF_TBUF_BASE + 128, [0x01020304, 0x05060708])
    media.write(MSF_TBUF_CTL_BASE + 4 * 1, [control(6, 0)])
    media.write(MSF_TBUF_CTL_BASE, [control(1, 0)])
    media.advance(10_000)
    assert [f[3] for f in media.take_tx()] == [b"\x00", b"\x01\x02\x03\x04\x05\x06"]


def test_ports_depart_in_time_order(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE), dict(OC192_POS)])
    for k in range(3):
        queue_frame(media, k, bytes(64), port=0)
        queue_frame(media, 32 + k, bytes(64), port=1)
    media.advance(10_000)
    got = [(last, port) for port, _, last, _ in media.take_tx()]
    ten = [(ceil(k * frame_cycles(RATES["10gbe"], 64, 20)), 0) for k in range(1, 4)]
    pos = [(ceil(k * frame_cycles(RATES["oc192pos"], 64, POS_OVERHEAD)), 1) for k in range(1, 4)]
    assert got == sorted(ten + pos)


def test_long_run_departures_do_not_drift(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])  # 64 elements
    per = frame_cycles(RATES["10gbe"], 64, 20)
    sent = 0
    for _ in range(40):  # 40 rounds of 32 frames = 1280 frames, all back to back
        for _k in range(32):
            queue_frame(media, sent % 64, bytes(64), t=0)
            sent += 1
        media.advance(ceil((sent - 16) * per))
    media.advance(10**9)
    lasts = [f[2] for f in media.take_tx()]
    assert lasts == [ceil(k * per) for k in range(1, sent + 1)]
    assert sequence(media) == sent


@pytest.mark.parametrize(("element", "word", "message"), [
    (32, control(64, 0), "outside port 0's TBUF partition"),
    (0, control(64, 2), "no port 2"),
    (0, control(0, 0), "length 0 does not fit"),
    (0, control(32 * 128 + 1, 0), "does not fit"),
    (0, control(64, 0) | (1 << 24), "bits 31..24"),
])
def test_bad_control_words_fault(core: Any, make_media: Any, element: int, word: int,
                                 message: str) -> None:
    media = make_media([dict(TEN_GBE), dict(TEN_GBE)])
    with pytest.raises(core.MediaFault, match=message):
        media.write(MSF_TBUF_CTL_BASE + 4 * element, [word])


def test_overlapping_a_queued_frame_faults(core: Any, make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    media.write(MSF_TBUF_CTL_BASE + 4 * 5, [control(300, 0)])  # elements 5..7, waiting
    with pytest.raises(core.MediaFault, match="element 7 still belongs"):
        media.write(MSF_TBUF_CTL_BASE + 4 * 7, [control(64, 0)])


@pytest.mark.parametrize(("op", "addr", "message"), [
    ("read", MSF_TBUF_BASE, "not readable"),
    ("read", MSF_TBUF_CTL_BASE, "not readable"),
    ("read", MSF_TX_SEQUENCE_BASE + 4 * 2, "only ports 0..1"),
    ("read", MSF_RBUF_BASE + 2, "not longword aligned"),
    ("read", MSF_RBUF_BASE + 8192, "outside the RBUF partitions"),
    ("write", MSF_RBUF_BASE, "not writable"),
    ("write", MSF_TX_SEQUENCE_BASE, "not writable"),
    ("write", MSF_TBUF_BASE + 6, "not longword aligned"),
])
def test_bad_msf_addresses_fault(core: Any, make_media: Any, op: str, addr: int,
                                 message: str) -> None:
    media = make_media([dict(TEN_GBE), dict(TEN_GBE)])
    with pytest.raises(core.MediaFault, match=message):
        if op == "read":
            media.read(addr, 1)
        else:
            media.write(addr, [0])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames=st.lists(st.tuples(st.integers(1, 700), st.integers(0, 400)), min_size=1,
                       max_size=40),
       element_bytes=st.sampled_from([64, 128, 256]))
def test_transmit_matches_hand_model(make_media: Any, frames: list[tuple[int, int]],
                                     element_bytes: int) -> None:
    """Frames queued in ring order, with random gaps between control-word writes and flow
    control on TX_SEQUENCE, leave back to back or at their write time, bytes intact."""
    ports = [dict(OC192_POS), dict(TEN_GBE)]
    media = make_media(ports, tbuf_bytes=4096, element_bytes=element_bytes)
    elements = 4096 // element_bytes // 2  # port 1's partition
    base = elements  # port 1's first element
    allocated = 0
    write_time = 0
    expected = []
    line_free = Fraction(0)
    for k, (length, gap) in enumerate(frames):
        need = -(-length // element_bytes)
        if need > elements:
            continue
        while allocated - sequence(media, 1) + need > elements:  # wait for room
            media.advance(media.next_event())
        write_time = max(write_time + gap, media.now)
        rel = allocated % elements
        data = bytes((k + i) % 251 for i in range(length))
        offset = rel * element_bytes  # the copy wraps within the partition
        media.tbuf_write((base * element_bytes) + offset, data)
        media.write(MSF_TBUF_CTL_BASE + 4 * (base + rel), [control(length, 1)], write_time)
        allocated += need
        start = max(line_free, Fraction(write_time))
        line_free = start + frame_cycles(RATES["10gbe"], length, 20)
        expected.append((1, ceil(start), ceil(line_free), data))
    media.advance(10**9)
    assert media.take_tx() == expected
    assert sequence(media, 1) == allocated
    assert media.idle()
