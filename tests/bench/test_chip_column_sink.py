"""A chip sink that takes its port's frames as columns (``write_columns``, what
runtime.system attaches so no TxFrame is made per frame): the same frames, in the same
order, as a per-frame sink on that port, while the other port's per-frame sink is
unchanged (sim/chip.py ``_drain_tx``)."""

from __future__ import annotations

from npkit.bench import sim_speed
from npkit.runtime.loader import load_manifest
from npkit.sim.packets import ListSink, ListSource, RxFrame


class ColumnSink:
    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, bytes]] = []

    def write_columns(self, port, firsts, lasts, datas) -> None:
        self.rows += [(port, f, la, d) for f, la, d in zip(firsts, lasts, datas, strict=True)]

    def write(self, frame) -> None:  # pragma: no cover - the chip must use the columns
        raise AssertionError("a column sink was given a TxFrame")

    def close(self) -> None:
        pass


def _run(columns_on: int | None):
    chip = load_manifest(sim_speed.manifest_path()).chip
    sinks = {}
    for port in (0, 1):
        frames = sim_speed.min_size_frames(300, port)
        chip.attach_source(port, ListSource([RxFrame(f) for f in frames]))
        sinks[port] = ColumnSink() if port == columns_on else ListSink()
        chip.attach_sink(port, sinks[port])
    chip.run(packets=600, cycles=2_000_000, until_idle=True,
             quiet_cycles=sim_speed.QUIET_CYCLES)
    return chip, sinks


def _rows(sink) -> list[tuple[int, int, int, bytes]]:
    if isinstance(sink, ColumnSink):
        return sink.rows
    return [(f.port, f.first_bit_cycle, f.last_bit_cycle, f.data) for f in sink.frames]


def test_columns_carry_the_per_frame_sink_s_frames() -> None:
    _, framed = _run(None)
    chip, mixed = _run(1)
    assert len(_rows(framed[1])) == 300 and len(_rows(framed[0])) == 300
    for port in (0, 1):
        assert _rows(mixed[port]) == _rows(framed[port])
    assert chip.frames_out == {0: 300, 1: 300}
