"""bench/tester/chip.py AnalysisSink: frames written one by one or as a port's columns
are analysed in the same order -- those with the last bit before the flush's cycle, by
port, each port in arrival order -- and the rest wait, also when a port's last bits are
not in order (a reference written here from that rule)."""

from __future__ import annotations

import random

import numpy as np

from npkit.bench.tester.chip import AnalysisSink, cycles_to_ps
from npkit.sim.frames import PackedFrames
from npkit.sim.packets import TxFrame

CLOCK = 1.4e9


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[list[int], list[int], list[bytes]]] = []

    def received(self, ports, times, datas) -> None:
        self.calls.append((list(ports), list(times), list(datas)))

    def received_arrays(self, ports, times, datas) -> None:  # FastAnalysis's numpy columns
        self.received([int(p) for p in ports], [int(t) for t in times], datas)


def _frames(seed: int, ordered: bool | str) -> list[TxFrame]:
    """``ordered``: every port's last bits in order, none, or "one": in order but for
    frame 150 (an ordered port turns unordered in the second chunk)."""
    rng = random.Random(seed)
    out, clock = [], {0: 0, 1: 0, 2: 0}
    for i in range(300):
        port = rng.randrange(3)
        clock[port] += rng.randrange(1, 60)
        last = clock[port] if ordered else rng.randrange(0, 9000)
        if ordered == "one" and i == 150:
            last = 1
        out.append(TxFrame(port, last - 5, last, i.to_bytes(2, "big") + bytes([port]), 0))
    return out


def _run(frames, flushes, columns: bool | str):
    recorder = Recorder()
    sink = AnalysisSink(recorder, CLOCK, keep=True)  # type: ignore[arg-type]
    # the frames arrive in three chunks, each flush after one
    chunks = [frames[:100], frames[100:200], frames[200:]]
    for chunk, now in zip(chunks, flushes[:3], strict=True):
        if columns == "packed":  # as runtime.system's collectors hand them (no bytes each)
            for port in sorted({f.port for f in chunk}):
                mine = [f for f in chunk if f.port == port]
                sink.write_packed(port, np.array([f.first_bit_cycle for f in mine]),
                                  np.array([f.last_bit_cycle for f in mine], dtype=np.int64),
                                  PackedFrames.from_list([f.data for f in mine]))
        elif columns:
            for port in sorted({f.port for f in chunk}):
                mine = [f for f in chunk if f.port == port]
                sink.write_columns(port, [f.first_bit_cycle for f in mine],
                                   [f.last_bit_cycle for f in mine], [f.data for f in mine])
        else:
            for frame in chunk:
                sink.write(frame)
        sink.flush(now)
    sink.flush(flushes[3])
    return recorder.calls, sink


def test_columns_and_frames_flush_as_the_rule_says() -> None:
    for ordered in (True, False, "one"):
        frames = _frames(7, ordered)
        flushes = [3000, 6000, 8000, None]
        want = _flat(_written_reference(frames, flushes))
        assert len(want[1]) >= 3  # frames were held back and flushed later
        for columns in (False, True, "packed"):
            calls, sink = _run(frames, flushes, columns)
            assert sum(len(c[0]) for c in calls) == 300 == sink.written
            assert [r.data for r in sink.kept] == [d for c in calls for d in c[2]]
            assert _flat(calls) == want


def _written_reference(frames, flushes):
    """The rule applied as the sink sees the frames: a chunk written before each flush."""
    waiting, calls = [], []
    chunks = [frames[:100], frames[100:200], frames[200:], []]
    for chunk, now in zip(chunks, flushes, strict=True):
        waiting += chunk
        ready = [f for f in waiting if now is None or f.last_bit_cycle < now]
        waiting = [f for f in waiting if not (now is None or f.last_bit_cycle < now)]
        ready.sort(key=lambda f: f.port)
        if ready:
            calls.append(([f.port for f in ready],
                          cycles_to_ps([f.last_bit_cycle for f in ready], CLOCK),
                          [f.data for f in ready]))
    return calls


def _flat(calls):
    return [(p, t, d) for ports, times, datas in calls
            for p, t, d in zip(ports, times, datas, strict=True)], [len(c[0]) for c in calls]
