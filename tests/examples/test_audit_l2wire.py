"""Audit of issue 2 on l2wire: the freelists end holding exactly the buffers they started
with (not just the same number), and the output pcap carries simulated-time timestamps
(read back with dpkt, checked against the 10GbE line rate computed here)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import dpkt
import pytest

from npkit.sim.loader import load_manifest
from npkit.sim.packets import ListSource, PcapSink, RxFrame

CLOCK_HZ = 1.4e9
FRAME_NS = (64 + 20) * 8 / 10e9 * 1e9  # 67.2 ns per 64-byte frame on 10GbE


def frames(count: int, stream: int) -> list[bytes]:
    return [bytes([2, 0, 0, 0, 0, stream, 2, 0, 0, 0, 0, 9, 0x88, 0xB5])
            + i.to_bytes(4, "big") + bytes(46) for i in range(count)]


def test_buffers_come_back_as_the_same_set_and_sink_times_are_simulated(tmp_path: Path) -> None:
    run = load_manifest(Path(str(resources.files("npkit.examples") / "l2wire" / "l2wire.toml")))
    chip = run.chip
    before = {(s.channel, s.queue): sorted(chip.queue_handles(s.channel, s.queue))
              for s in run.freelists}
    assert all(len(h) == len(set(h)) > 0 for h in before.values())
    count = 600
    offered = {p: frames(count, p) for p in (0, 1)}
    for p in (0, 1):
        chip.attach_source(p, ListSource([RxFrame(f) for f in offered[p]]))
        chip.attach_sink(p, PcapSink(tmp_path / f"out{p}.pcap"))
    chip.run(packets=2 * count, cycles=2_000_000)
    chip.run(cycles=20_000)
    chip.close_sinks()

    after = {(s.channel, s.queue): sorted(chip.queue_handles(s.channel, s.queue))
             for s in run.freelists}
    assert after == before, "a buffer was lost or duplicated on a freelist"

    end_ns = chip.now / CLOCK_HZ * 1e9
    for p in (0, 1):
        with open(tmp_path / f"out{1 - p}.pcap", "rb") as f:
            got = [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]
        assert [data for _, data in got] == offered[p]
        times = [float(ts) * 1e9 for ts, _ in got]
        assert 0 < times[0] and times[-1] <= end_ns
        # back-to-back 64-byte frames leave one line-rate frame time apart
        gap = (times[-1] - times[0]) / (count - 1)
        assert gap == pytest.approx(FRAME_NS, rel=0.01)
