"""Receive timing at line rate: exact arrival cycles and frames per second against FACTS.md
section 2 (10GbE, 1GbE, OC-192 POS), computed independently with fractions."""

from __future__ import annotations

from fractions import Fraction
from math import ceil, floor
from typing import Any

import pytest

from .media_ref import (
    CLOCK,
    OC192_POS,
    ONE_GBE,
    POS_OVERHEAD,
    PPP_HEADER,
    RATES,
    TEN_GBE,
    back_to_back_arrivals,
    frame_cycles,
    frames_within,
)

PRESETS = {"10gbe": TEN_GBE, "1gbe": ONE_GBE, "oc192pos": OC192_POS}

# FACTS.md section 2, copied by hand: the published per-size line rates.
TEN_GBE_PPS = {64: 14_880_952, 128: 8_445_946, 256: 4_528_986, 512: 2_349_624,
               1024: 1_197_318, 1280: 961_538, 1518: 812_744}
OC192_MPPS = {40: 24.451, 64: 16.412, 128: 8.745, 576: 2.048, 1500: 0.794}


def arrival_cycles(media: Any, n: int) -> list[int]:
    """Step the model event by event (mpackets), collecting the cycles at which the first n
    frames (of all ports) are complete in the RBUF (their last bit has arrived)."""
    seen: list[int] = []
    while len(seen) < n:
        t = media.next_event()
        assert t is not None
        media.advance(t)
        seen += [t] * (sum(c["rx_frames"] for c in media.counters()) - len(seen))
    return seen


@pytest.mark.parametrize("kind", ["10gbe", "1gbe", "oc192pos"])
@pytest.mark.parametrize("length", [40, 64, 65, 100, 1500])
def test_back_to_back_arrivals_are_exact(make_media: Any, kind: str, length: int) -> None:
    preset = PRESETS[kind]
    media = make_media([dict(preset)], rbuf_bytes=65536)  # room for all 40: nothing dropped
    media.add_rx_frames(0, bytes(length), 40)
    expected = back_to_back_arrivals(RATES[kind], length, preset["overhead_bytes"], 40)
    assert arrival_cycles(media, 40) == expected


def test_64_byte_10gbe_frame_takes_94_08_cycles(make_media: Any) -> None:
    # 84 bytes * 8 = 672 bits at 10 Gb/s = 67.2 ns = 94.08 cycles at 1.4 GHz.
    media = make_media([dict(TEN_GBE)])
    media.add_rx_frames(0, bytes(64), 26)
    assert arrival_cycles(media, 26)[::25] == [95, 2447]  # ceil(94.08), ceil(26 * 94.08)


def count_arrivals(media: Any, length: int, per: Fraction, window: int) -> int:
    """Feed a back-to-back burst in chunks (never letting the line go idle) and count the
    frames whose last bit arrived by cycle `window`."""
    chunk = 100_000
    fed = Fraction(0)
    while fed <= window + per:
        media.add_rx_frames(0, bytes(length), chunk)
        fed += chunk * per
        media.advance(min(window, floor(fed - chunk * per / 2)))
    media.advance(window)
    c = media.counters()[0]
    assert media.next_event() > window  # the next frame is still on the wire
    return c["rx_frames"] + c["rx_dropped_rbuf_full"]


@pytest.mark.parametrize(("kind", "length", "seconds"), [
    ("1gbe", 64, Fraction(1)),
    ("oc192pos", 40, Fraction(1)),
    *[("10gbe", n, Fraction(1, 20)) for n in (128, 256, 512, 1024, 1280, 1518)],
    *[("oc192pos", n, Fraction(1, 20)) for n in (64, 128, 576, 1500)],
])
def test_frames_per_second_match_facts(
    make_media: Any, kind: str, length: int, seconds: Fraction
) -> None:
    preset = PRESETS[kind]
    overhead = preset["overhead_bytes"]
    window = seconds * CLOCK
    assert window.denominator == 1
    # one element per frame (any multiple of 8 is accepted): the count is about the wire;
    # once the RBUF is full each frame is dropped at its last bit, like one that is received
    media = make_media([dict(preset)], rbuf_bytes=65536, element_bytes=2048)
    # FACTS.md counts POS sizes as IP packets; the frame adds the PPP header
    frame = length + PPP_HEADER if kind == "oc192pos" else length
    got = count_arrivals(media, frame, frame_cycles(RATES[kind], frame, overhead),
                         int(window))
    assert got == frames_within(RATES[kind], frame, overhead, seconds)
    # ...and the published figures agree with that count to their rounding.
    per_second = got / seconds
    if kind == "10gbe":
        assert abs(per_second - TEN_GBE_PPS[length]) <= 1 / seconds
    elif kind == "1gbe":
        assert abs(per_second - Fraction(TEN_GBE_PPS[length], 10)) <= 1 / seconds
    else:
        assert abs(per_second / 10**6 - Fraction(str(OC192_MPPS[length]))) <= Fraction(
            5, 10**4) + 1 / (seconds * 10**6)


def test_64_byte_10gbe_is_14880952_per_second(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    per = frame_cycles(RATES["10gbe"], 64, 20)
    assert count_arrivals(media, 64, per, 1_400_000_000) == 14_880_952


def test_timestamped_frames_start_not_before_their_cycle(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    per = frame_cycles(RATES["10gbe"], 100, 20)  # 120 bytes: 134.4 cycles
    media.add_rx_frame(0, bytes(100), 1000)
    media.add_rx_frame(0, bytes(100), 1000)  # line busy: follows back to back
    media.add_rx_frame(0, bytes(100), 5000)  # line idle by then: starts at 5000
    assert arrival_cycles(media, 3) == [ceil(1000 + per), ceil(1000 + 2 * per),
                                        ceil(5000 + per)]


def test_frame_added_after_idle_line_starts_now(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    media.advance(10_000)
    media.add_rx_frame(0, bytes(64))
    assert media.next_event() == ceil(10_000 + frame_cycles(RATES["10gbe"], 64, 20))


def test_custom_rate_and_overhead(make_media: Any) -> None:
    # an OC-48-like port: 2.48832 Gb/s, 7 bytes overhead (FCS-16)
    media = make_media([{"rate_bps": 2.48832e9, "overhead_bytes": 7}])
    media.add_rx_frames(0, bytes(57), 30)
    expected = back_to_back_arrivals(Fraction(2_488_320_000), 57, 7, 30)
    assert arrival_cycles(media, 30) == expected


def test_ports_are_independent(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE), dict(OC192_POS)])
    media.add_rx_frames(0, bytes(64), 3)
    media.add_rx_frames(1, bytes(40), 3)
    expected = sorted(back_to_back_arrivals(RATES["10gbe"], 64, 20, 3)
                      + back_to_back_arrivals(RATES["oc192pos"], 40, POS_OVERHEAD, 3))
    assert arrival_cycles(media, 6) == expected
