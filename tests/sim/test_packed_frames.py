"""Frames packed in one buffer (npkit.sim.frames.PackedFrames) and the core's packed I/O
(``add_rx_packed``, ``take_tx_packed``): the sequence behaves as the list of bytes it
packs, and a chip fed and drained packed sends the frames, at the cycles, that it sends fed
a list of bytes and drained into a per-frame sink (``ListSink``, the reference)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from npkit.bench import sim_speed
from npkit.runtime.loader import load_manifest
from npkit.sim.frames import PackedFrames
from npkit.sim.packets import ListSink


def _frames(seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 90))) for _ in range(n)]


def test_packed_frames_are_the_list_they_pack() -> None:
    datas = _frames(1, 60)
    packed = PackedFrames.from_list(datas)
    assert len(packed) == 60 and list(packed) == datas and packed == datas
    assert packed.nbytes == sum(map(len, datas))
    assert packed.lengths().tolist() == [len(d) for d in datas]
    for i in (0, 5, 59, -1, -60):
        assert packed[i] == datas[i]
    with pytest.raises(IndexError):
        packed[60]
    for start, stop in ((0, 60), (3, 17), (17, 3), (-5, None), (59, 60), (60, 60)):
        view = packed[start:stop]
        assert list(view) == datas[start:stop]
        assert view.data is packed.data  # a view, no copy
        assert list(view[1:4]) == datas[start:stop][1:4]
    assert list(packed[::3]) == datas[::3]
    parts = [packed[:10], packed[10:10], packed[10:33], PackedFrames.from_list([]), packed[33:]]
    assert list(PackedFrames.concat(parts)) == datas
    assert list(PackedFrames.concat([])) == []
    order = np.array([5, 0, 57, 5, 30], dtype=np.int64)
    assert list(packed[2:].take(order)) == [datas[2:][i] for i in order]
    assert list(packed.take(np.zeros(0, dtype=np.int64))) == []


def test_packed_frames_check_their_arrays() -> None:
    with pytest.raises(ValueError):
        PackedFrames(np.zeros(4, dtype=np.int8), np.zeros(1, dtype=np.int64))
    with pytest.raises(ValueError):
        PackedFrames(np.zeros(4, dtype=np.uint8), np.zeros(0, dtype=np.int64))


class PackedSink:
    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, bytes]] = []

    def write_packed(self, port, firsts, lasts, frames) -> None:
        assert firsts.dtype == np.int64 and lasts.dtype == np.int64
        self.rows += [(port, f, la, d) for f, la, d in
                      zip(firsts.tolist(), lasts.tolist(), frames, strict=True)]

    def write(self, frame) -> None:  # pragma: no cover - the chip must use the packed path
        raise AssertionError("a packed sink was given a TxFrame")

    def close(self) -> None:
        pass


def _run(packed: bool):
    """The l2wire chip fed 2 x 300 minimum-size frames by offer_frames in chunks with send
    cycles, as a list of bytes (reference) or packed; drained into ListSinks or packed."""
    chip = load_manifest(sim_speed.manifest_path()).chip
    sinks = {port: PackedSink() if packed else ListSink() for port in (0, 1)}
    for port, sink in sinks.items():
        chip.attach_sink(port, sink)
    for port in (0, 1):
        frames = sim_speed.min_size_frames(300, port)
        dues = [40 * i + 7 * port for i in range(len(frames))]
        for start in range(0, 300, 70):  # several offers, each a slice of the batch
            part, due = frames[start:start + 70], dues[start:start + 70]
            if packed:
                whole = PackedFrames.from_list(frames)
                chip.offer_frames(port, whole[start:start + 70],
                                  np.array(due, dtype=np.int64))
            else:
                chip.offer_frames(port, part, due)
    chip.run(cycles=400_000, until_idle=True, quiet_cycles=sim_speed.QUIET_CYCLES)
    rows = {port: sink.rows if packed else
            [(f.port, f.first_bit_cycle, f.last_bit_cycle, f.data) for f in sink.frames]
            for port, sink in sinks.items()}
    return chip, rows


def test_a_chip_fed_and_drained_packed_sends_what_lists_give() -> None:
    chip_ref, want = _run(False)
    chip, got = _run(True)
    assert len(want[0]) == 300 and len(want[1]) == 300
    assert got == want
    assert chip.frames_out == chip_ref.frames_out == {0: 300, 1: 300}
    assert chip.counters() == chip_ref.counters()
    assert chip.now == chip_ref.now


def test_add_rx_packed_checks_every_frame_before_queueing_any() -> None:
    chip = load_manifest(sim_speed.manifest_path()).chip
    bad = PackedFrames.from_list([b"x" * 60, b""])  # an empty frame
    with pytest.raises(ValueError):
        chip.offer_frames(0, bad, np.array([0, 0], dtype=np.int64))
    with pytest.raises(ValueError):  # offsets past the buffer
        chip._core.add_rx_packed(0, np.zeros(10, dtype=np.uint8),
                                 np.array([0, 11], dtype=np.int64), np.array([0]))
    with pytest.raises(ValueError):  # not as many dues as frames
        chip._core.add_rx_packed(0, np.zeros(10, dtype=np.uint8),
                                 np.array([0, 10], dtype=np.int64), np.array([0, 1]))
    assert chip.counters()["ports"][0]["rx_frames"] == 0
