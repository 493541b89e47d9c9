"""The façade's bulk feed/drain path: frames go to the core a chunk per call, transmitted
frames come back as columns, and what sources and sinks see is what the frame-by-frame
path gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npkit.runtime.loader import load_manifest
from npkit.sim import ListSink, ListSource
from npkit.sim.chip import _tx_frame_maker
from npkit.sim.packets import TxFrame

MANIFEST = Path(__file__).resolve().parents[3] / "examples" / "l2wire" / "l2wire.toml"


def _frame(i: int, port: int = 0) -> bytes:
    head = bytes([2, 0, 0, 0, 0, port, 2, 0, 0, 0, 0, 1 - port, 0x88, 0xB5])
    return head + i.to_bytes(4, "big") + bytes(42)


def test_core_checks_a_whole_chunk_before_queueing_any_frame() -> None:
    chip = load_manifest(MANIFEST).chip
    raw = chip._core
    with pytest.raises(ValueError, match="1..65535"):
        raw.add_rx_frames(0, [_frame(0), b"", _frame(1)], [-1, -1, -1])
    with pytest.raises(ValueError, match="differ in length"):
        raw.add_rx_frames(0, [_frame(0)], [])
    with pytest.raises(TypeError):
        raw.add_rx_frames(0, [_frame(0), "not bytes"], [-1, -1])
    with pytest.raises(IndexError):
        raw.add_rx_frames(7, [_frame(0)], [-1])
    raw.run(20_000, -1, False)
    assert all(p["rx_frames"] == 0 for p in raw.counters()["ports"])  # nothing was queued


def test_a_bad_frame_stops_the_feed_after_the_frames_before_it() -> None:
    chip = load_manifest(MANIFEST).chip
    good = [_frame(i) for i in range(5)]
    chip.attach_source(0, ListSource([*good, b"", _frame(9)]))
    with pytest.raises(ValueError, match="1..65535"):
        chip.run(cycles=50_000)
    assert chip.frames_fed[0] == len(good)


def test_sinks_get_every_frame_in_order_with_its_times() -> None:
    chip = load_manifest(MANIFEST).chip
    count = 300  # more than one feed chunk per port is not needed; several drains are
    sinks = {p: ListSink() for p in (0, 1)}
    for p in (0, 1):
        chip.attach_source(p, ListSource([_frame(i, p) for i in range(count)]))
        chip.attach_sink(p, sinks[p])
    result = chip.run(packets=2 * count, cycles=2_000_000)
    assert result.frames_out == 2 * count
    clock = chip.config.clock_hz
    for p in (0, 1):
        out = sinks[1 - p].frames
        assert [f.data for f in out] == [_frame(i, p) for i in range(count)]
        assert all(type(f) is TxFrame and f.port == 1 - p for f in out)
        assert all(f.time_ns == round(f.last_bit_cycle * 1e9 / clock) for f in out)
        pairs = zip(out, out[1:], strict=False)
        assert all(a.last_bit_cycle <= b.first_bit_cycle for a, b in pairs)
    assert chip.frames_out == {0: count, 1: count}


def test_port_counters_are_the_ports_of_counters_after_traffic() -> None:
    chip = load_manifest(MANIFEST).chip
    for p in (0, 1):
        chip.attach_source(p, ListSource([_frame(i, p) for i in range(40)]))
    chip.run(cycles=30_000)  # some frames in, some still queued or in flight
    raw = chip._core
    ports = raw.port_counters()
    assert ports == raw.counters()["ports"]
    assert sum(p["rx_frames"] for p in ports) > 0


@given(st.integers(0, 255), st.integers(0, 2**63), st.integers(0, 2**63), st.binary(max_size=64),
       st.integers(0, 2**63))
def test_the_fast_tx_frame_equals_the_constructed_one(port: int, first: int, last: int, data: bytes,
                                                      time_ns: int) -> None:
    made = _tx_frame_maker()(port, first, last, data, time_ns)
    reference = TxFrame(port, first, last, data, time_ns)
    assert made == reference and hash(made) == hash(reference) and repr(made) == repr(reference)
    with pytest.raises(AttributeError):  # still frozen
        made.port = 1  # type: ignore[misc]
