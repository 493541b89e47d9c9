"""The loader and the façade end to end on the l2wire example (port 0 <-> port 1)."""

from __future__ import annotations

from pathlib import Path

from npkit.sim import Generator, ListSink, ListSource, RxFrame, parse_tag
from npkit.sim.loader import leak_check, load_manifest

MANIFEST = Path(__file__).resolve().parents[3] / "examples" / "l2wire" / "l2wire.toml"


def _dropped(port: dict[str, int]) -> int:
    return sum(v for k, v in port.items() if k.startswith("rx_dropped"))


def test_every_frame_is_accounted_for() -> None:
    run = load_manifest(MANIFEST)
    chip = run.chip
    sinks = {p: ListSink() for p in (0, 1)}
    gens = {p: Generator(sizes=(64, 256, 1518), count=60, seed=p + 5, stream=p)
            for p in (0, 1)}
    for p in (0, 1):
        chip.attach_source(p, gens[p])
        chip.attach_sink(p, sinks[p])
    result = chip.run(until_idle=True, quiet_cycles=50_000)
    assert result.reason in ("idle", "quiet")
    ports = chip.counters()["ports"]
    for p in (0, 1):
        sent = {(p, seq) for seq in range(60)}
        # l2wire forwards port p to port 1 - p, bytes unchanged
        out = sinks[1 - p].frames
        got = [parse_tag(f.data) for f in out]
        assert len(got) == len(set(got))
        assert set(got) <= sent
        assert len(sent) - len(got) == _dropped(ports[p])
        originals = {(p, seq): rx.data for seq, rx in enumerate(gens[p].frames())}
        assert all(f.data == originals[parse_tag(f.data)] for f in out)
        assert ports[1 - p]["tx_frames"] == len(out) == chip.frames_out.get(1 - p, 0)
    assert all(r.ok for r in leak_check(run))


def test_timestamps_pace_arrivals_and_sink_times_follow() -> None:
    run = load_manifest(MANIFEST)
    chip = run.chip
    gap_s = 2e-6  # far slower than line rate: nothing may be dropped
    frames = [rx.data for rx in Generator(sizes=(64, 512), count=12, seed=3).frames()]
    chip.attach_source(0, ListSource([RxFrame(d, i * gap_s) for i, d in enumerate(frames)]))
    sink = ListSink()
    chip.attach_sink(1, sink)
    chip.run(until_idle=True, quiet_cycles=50_000)
    assert [f.data for f in sink.frames] == frames  # in order, unchanged, none lost
    clock = chip.config.clock_hz
    for i, f in enumerate(sink.frames):
        # the frame cannot leave before it fully arrived and was sent at 10 Gb/s
        wire_ns = (len(f.data) + 20) * 8 / 10e9 * 1e9
        assert f.time_ns >= i * gap_s * 1e9 + 2 * wire_ns - 1
        assert f.time_ns == round(f.last_bit_cycle * 1e9 / clock)
        assert f.last_bit_cycle > f.first_bit_cycle


def test_packets_limit_stops_early() -> None:
    run = load_manifest(MANIFEST)
    chip = run.chip
    chip.attach_source(0, Generator(sizes=64, count=50, times_s=[i * 1e-6 for i in range(50)]))
    result = chip.run(packets=10, until_idle=True)
    assert result.reason == "packets"
    assert result.frames_out == 10
    assert chip.counters()["ports"][1]["tx_frames"] == 10

