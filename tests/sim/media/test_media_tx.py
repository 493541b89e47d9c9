"""Transmit: strict in-order TBUF rings of mpackets (one control word per element with
SOP/EOP), TX_SEQUENCE per element, line-rate departures, frames longer than the partition
streaming through it, underruns, and control-word faults; times hand-computed with
fractions."""

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

SOP, EOP = 1 << 24, 1 << 25  # docs/media.md "Transmit": as receive status word 0


def control(length: int, port: int, sop: bool = True, eop: bool = True) -> int:
    """One element's control word: bits 15..0 its bytes, 23..16 port, 24 SOP, 25 EOP."""
    return length | (port << 16) | (SOP if sop else 0) | (EOP if eop else 0)


def element_words(length: int, port: int, element_bytes: int = 128) -> list[int]:
    """The control words of a frame's elements, first to last."""
    n = -(-length // element_bytes)
    return [control(element_bytes if j < n - 1 else length - element_bytes * (n - 1), port,
                    sop=j == 0, eop=j == n - 1) for j in range(n)]


def queue_frame(media: Any, element: int, data: bytes, port: int = 0, t: int = 0,
                partition: tuple[int, int] | None = None) -> None:
    """Write a frame into consecutive elements from `element` (wrapping in the port's
    partition (first, elements); default: 64 / number of ports each) and validate each."""
    eb = media.element_bytes
    size = media.tx_partition_elements
    first, elements = partition or (port * size, size)
    for j, word in enumerate(element_words(len(data), port, eb)):
        e = first + (element - first + j) % elements
        media.tbuf_write(e * eb, data[j * eb:(j + 1) * eb])
        media.write(MSF_TBUF_CTL_BASE + 4 * e, [word], t)


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
    queue_frame(media, 62, big, port=1, t=100_000)  # partition (32, 32): wraps
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
    media.write(MSF_TBUF_CTL_BASE, [control(1, 0)])  # validates both: element 0 comes first
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
    (0, control(0, 0), "length 0 is not 1..128"),
    (0, control(129, 0), "length 129 is not 1..128"),
    (0, control(300, 0), "one word per element"),
    (0, control(64, 0, eop=False), "without EOP must be full"),
    (0, control(64, 0) | (1 << 26), "bits 31..26"),
    (0, control(128, 0, sop=False), "no SOP, but the element before it ends a frame"),
])
def test_bad_control_words_fault(core: Any, make_media: Any, element: int, word: int,
                                 message: str) -> None:
    media = make_media([dict(TEN_GBE), dict(TEN_GBE)])
    with pytest.raises(core.MediaFault, match=message):
        media.write(MSF_TBUF_CTL_BASE + 4 * element, [word])


def test_rewriting_a_queued_element_faults(core: Any, make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    queue_frame(media, 5, bytes(300), t=0)  # elements 5..7, waiting for 0..4
    with pytest.raises(core.MediaFault, match="element 7 is still queued"):
        media.write(MSF_TBUF_CTL_BASE + 4 * 7, [control(64, 0)])


@pytest.mark.parametrize(("first", "second", "message"), [
    # element 3 first, then element 2 before it: 2 must end a frame iff 3 starts one
    (control(128, 0, sop=True, eop=False), control(128, 0, sop=True, eop=False),
     "EOP: the element after it does not start|no EOP, but the element after it starts"),
    (control(128, 0, sop=False, eop=False), control(64, 0),
     "EOP, but the element after it does not start a frame"),
])
def test_frame_boundaries_are_checked_against_both_neighbours(
        core: Any, make_media: Any, first: int, second: int, message: str) -> None:
    media = make_media([dict(TEN_GBE)])
    media.write(MSF_TBUF_CTL_BASE + 4 * 3, [first])
    with pytest.raises(core.MediaFault, match=message):
        media.write(MSF_TBUF_CTL_BASE + 4 * 2, [second])
    # and against the element the transmitter took last
    media2 = make_media([dict(TEN_GBE)])
    media2.write(MSF_TBUF_CTL_BASE, [control(128, 0, eop=False)])
    with pytest.raises(core.MediaFault, match="SOP, but the element before it does not end"):
        media2.write(MSF_TBUF_CTL_BASE + 4, [control(64, 0)])


def test_tx_sequence_counts_each_element_when_its_bytes_have_left(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    frame = bytes(range(256)) + bytes(44)  # 300 bytes: 128 + 128 + 44
    queue_frame(media, 0, frame, t=0)
    bit = Fraction(8) * Fraction(1.4e9) / RATES["10gbe"]  # cycles per byte on the wire
    ends = [ceil(128 * bit), ceil(256 * bit), ceil((300 + 20) * bit)]
    seen = []
    while media.next_event() is not None:
        t = media.next_event()
        media.advance(t)
        seen.append((t, sequence(media)))
    assert seen == [(ends[0], 1), (ends[1], 2), (ends[2], 3)]
    assert media.take_tx() == [(0, 0, ends[2], frame)]
    assert media.counters()[0]["tx_underruns"] == 0


def test_one_msf_write_of_several_words_validates_consecutive_elements(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    frame = bytes(range(256)) + b"tail"  # 260 bytes: elements 4, 5, 6
    media.tbuf_write(4 * 128, frame)
    media.write(MSF_TBUF_CTL_BASE + 4 * 4, element_words(260, 0), 0)
    queue_frame(media, 0, bytes(512), t=0)  # elements 0..3 first: the ring's order
    media.advance(10**6)
    assert [f[3] for f in media.take_tx()] == [bytes(512), frame]
    assert sequence(media) == 7


def test_frame_longer_than_the_partition_streams_through_it(make_media: Any) -> None:
    """A 9,018-byte frame through a 4-element partition: each element is rewritten as soon as
    TX_SEQUENCE shows it free; the frame leaves whole, at line rate, with no underrun."""
    media = make_media([dict(TEN_GBE)], tbuf_bytes=512)  # 4 elements of 128 B
    frame = bytes((7 * i + 1) % 256 for i in range(9018))
    words = element_words(len(frame), 0)
    written = 0
    while written < len(words):
        while written < len(words) and written - sequence(media) < 4:
            e = written % 4
            media.tbuf_write(e * 128, frame[written * 128:(written + 1) * 128])
            media.write(MSF_TBUF_CTL_BASE + 4 * e, [words[written]], media.now)
            written += 1
        if media.next_event() is not None:
            media.advance(media.next_event())
    media.advance(10**9)
    assert media.take_tx() == [
        (0, 0, ceil(frame_cycles(RATES["10gbe"], 9018, 20)), frame)]
    c = media.counters()[0]
    assert (c["tx_elements"], c["tx_underruns"], c["tbuf_elements_queued"]) == (71, 0, 0)
    assert sequence(media) == 71 and media.idle()


def test_a_late_element_is_an_underrun_and_the_frame_waits(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    frame = bytes(range(200))
    first, second = element_words(200, 0)
    media.tbuf_write(0, frame)
    media.write(MSF_TBUF_CTL_BASE, [first], 0)
    media.advance(5_000)
    assert media.take_tx() == [] and not media.idle()  # a frame is half sent
    media.write(MSF_TBUF_CTL_BASE + 4, [second], 6_000)
    media.advance(10**6)
    bit = Fraction(8) * Fraction(1.4e9) / RATES["10gbe"]
    assert media.take_tx() == [(0, 0, ceil(6_000 + (72 + 20) * bit), frame)]
    assert media.counters()[0]["tx_underruns"] == 1 and media.idle()


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
@given(frames=st.lists(st.tuples(st.integers(1, 3000), st.integers(0, 400), st.integers(0, 30),
                                 st.integers(0, 600)), min_size=1, max_size=25),
       element_bytes=st.sampled_from([64, 128, 256]))
def test_transmit_matches_hand_model(make_media: Any, frames: list[tuple[int, int, int, int]],
                                     element_bytes: int) -> None:
    """Frames written element by element in ring order, each element as soon as TX_SEQUENCE
    shows it free (frames up to 3,000 B through a 2,048 B partition), with random gaps
    before a frame and a random late element (an underrun when the line got there first),
    against a model written here: every mpacket starts when the line is free and its word
    is written, the frame's overhead after its EOP mpacket."""
    ports = [dict(OC192_POS), dict(TEN_GBE)]
    media = make_media(ports, tbuf_bytes=4096, element_bytes=element_bytes)
    elements = 4096 // element_bytes // 2  # port 1's partition
    base = elements  # port 1's first element
    per_byte = frame_cycles(RATES["10gbe"], 1, 0)
    written = 0  # elements written so far (TX_SEQUENCE's counter space)
    write_time = 0
    expected = []
    line_free = Fraction(0)
    underruns = 0
    for k, (length, gap, late_at, late) in enumerate(frames):
        data = bytes((k + i) % 251 for i in range(length))
        words = element_words(length, 1, element_bytes)
        for j, word in enumerate(words):
            write_time += gap if j == 0 else 0
            write_time += late if j == late_at % len(words) else 0
            while written - sequence(media, 1) >= elements:  # wait for a free element
                media.advance(media.next_event())
            write_time = max(write_time, media.now)
            e = base + written % elements
            media.tbuf_write(e * element_bytes, data[j * element_bytes:(j + 1) * element_bytes])
            media.write(MSF_TBUF_CTL_BASE + 4 * e, [word], write_time)
            written += 1
            # the reference
            size = word & 0xFFFF
            start = max(line_free, Fraction(write_time))
            if j == 0:
                first_bit = start
            elif write_time > line_free:
                underruns += 1
            line_free = start + (size + (20 if j == len(words) - 1 else 0)) * per_byte
        expected.append((1, ceil(first_bit), ceil(line_free), data))
    media.advance(10**9)
    assert media.take_tx() == expected
    assert sequence(media, 1) == written
    assert media.counters()[1]["tx_underruns"] == underruns
    assert media.idle()
