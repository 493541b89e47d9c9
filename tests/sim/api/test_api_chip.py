"""The Chip façade with small hand-written microcode, checked through the numpy views."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from npkit.compiler.uc import Image, assemble_file, assemble_text
from npkit.sim import Chip, ChipConfig, Generator, ListSink, LoadError, SimFault
from npkit.sim.chip import FEED_CHUNK_FRAMES

# Every context reads SRAM word 0x100/4 + ctx, adds its context number and writes the sum
# to scratch word 0x200/4 + ctx.
COPY = """\
.me 0
.reg $in, $out
.sig s1
    local_csr_rd[ACTIVE_CTX_STS]
    immed[a1, 0]
    alu[a1, a1, AND, 7]
    alu_shf[a2, --, B, a1, <<2]
    immed[b1, 0x100]
    alu[b2, b1, +, a2]
    sram[read, $in, b2, 0, 1], ctx_swap[s1]
    alu[a3, $in, +, a1]
    alu[$out, --, B, a3]
    immed[b3, 0x200]
    scratch[write, $out, b3, a2, 1], ctx_swap[s1]
    ctx_arb[kill]
"""

# Reads scratch far beyond its 16 KB: a bad_address fault on line 5, column 5.
FAULT = """\
.me 1
.reg $x
.sig s
    immed[a0, 0x8000]
    scratch[read, $x, a0, 0, 1], ctx_swap[s]
    ctx_arb[kill]
"""

SPIN = """\
.me 0
loop#:
    alu[a0, a0, +, 1]
    br[loop#]
"""


def _chip(**kwargs: object) -> Chip:
    return Chip(ChipConfig.load("ixp2800"), seed=1, **kwargs)  # type: ignore[arg-type]


def test_sram_to_scratch_program() -> None:
    chip = _chip()
    chip.load(assemble_text(COPY, "copy.uc"))
    sram = chip.sram(0)
    values = [1000 * (ctx + 1) + 0xABC00000 for ctx in range(8)]
    sram[0x100 // 4:0x100 // 4 + 8] = values
    result = chip.run(until_idle=True, quiet_cycles=10_000)
    assert result.reason in ("idle", "quiet")
    scratch = chip.scratch()
    expected = [(v + ctx) & 0xFFFFFFFF for ctx, v in enumerate(values)]
    assert [int(w) for w in scratch[0x200 // 4:0x200 // 4 + 8]] == expected
    assert chip.instructions_retired >= 8 * 12
    # unrelated memory untouched
    assert int(scratch[0x200 // 4 + 8]) == 0


def test_fault_names_me_context_pc_and_source_line() -> None:
    chip = _chip()
    chip.load(assemble_text(FAULT, "fault.uc"))
    with pytest.raises(SimFault) as err:
        chip.run(cycles=100_000)
    fault = err.value
    assert fault.kind == "bad_address"
    assert fault.me == 1 and fault.pc == 1
    assert fault.source == "fault.uc:5:5"
    assert str(fault).startswith(f"ME 0x01 ctx {fault.ctx} pc 1 (fault.uc:5:5)")


def test_load_checks() -> None:
    chip = _chip()
    image = assemble_text(SPIN, "spin.uc")
    with pytest.raises(LoadError, match="ME 16 does not exist on ixp2800"):
        chip.load(image, mes=[16])
    big = Image(mes=(0,), ctx_mode=8, words=[0xB800000000] * 8193)  # nop x 8193
    with pytest.raises(LoadError, match="8193 instructions do not fit the 8192-word"):
        chip.load(big)
    small = Chip(ChipConfig.load("ixp2400"))
    with pytest.raises(LoadError, match="ME 8 does not exist on ixp2400"):
        small.load(image, mes=[8])
    assert chip.load(image, mes=[0, 8]) == [0, 8]


def test_load_a_file_assembled_by_the_layer_below(tmp_path: Path) -> None:
    (tmp_path / "copy.uc").write_text(COPY)
    chip = _chip()
    with pytest.raises(TypeError, match="takes an assembled image, not the path"):
        chip.load(tmp_path / "copy.uc")  # the chip does not call the assembler
    assert chip.load(assemble_file(str(tmp_path / "copy.uc")), mes=[9]) == [9]
    chip.sram(0)[0x100 // 4] = 41
    chip.run(until_idle=True, quiet_cycles=10_000)
    assert int(chip.scratch()[0x200 // 4]) == 41  # context 0 adds 0
    assert chip.counters()["mes"][9]["instructions"] > 0
    assert chip.counters()["mes"][0]["instructions"] == 0


def test_run_for_cycles() -> None:
    chip = _chip()
    chip.load(assemble_text(SPIN, "spin.uc"))
    first = chip.run(cycles=5_000)
    assert first.reason == "cycles" and first.cycles == 5_000 and chip.now == 5_000
    second = chip.run(cycles=1_234)
    assert second.cycles == 1_234 and chip.now == 6_234
    with pytest.raises(ValueError, match="give cycles"):
        chip.run()


def test_q_array_freelist() -> None:
    chip = _chip()
    handles = [(1 << 26) | (0x1000 + 32 * i) for i in range(5)]
    for h in handles:
        chip.enqueue(1, 3, h)
    assert chip.queue_state(1, 3)["count"] == 5
    assert chip.queue_handles(1, 3) == handles
    # the links live in SRAM: word 0 of each descriptor holds the next handle
    sram1 = chip.sram(1)
    assert [int(sram1[(h & 0x3FFFFFF) // 4]) for h in handles[:-1]] == handles[1:]
    assert chip.dequeue(1, 3) == handles[0]
    assert chip.queue_handles(1, 3) == handles[1:]


def test_trace_json(tmp_path: Path) -> None:
    chip = _chip(trace=True)
    chip.load(assemble_text(COPY, "copy.uc"))
    chip.run(until_idle=True, quiet_cycles=10_000)
    path = tmp_path / "trace.json"
    count = chip.write_trace(path)
    assert count > 0
    events = json.loads(path.read_text())["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert {e["pid"] for e in complete} == {0}
    assert {e["tid"] for e in complete} == set(range(8))
    # the last instruction (ctx_arb[kill] at cycle `now`) may end one cycle after `now`
    end_us = (chip.now + 1) / 1.4e9 * 1e6
    assert all(0 <= e["ts"] and e["ts"] + e["dur"] <= end_us + 1e-9 for e in complete)
    # every context's spans tile its time without overlaps
    for ctx in range(8):
        mine = sorted((e["args"]["start_cycle"], e["args"]["end_cycle"]) for e in complete
                      if e["tid"] == ctx)
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:], strict=False))
    names = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert names == {"ME 0x00"}


def test_sources_are_fed_in_chunks() -> None:
    # no receive threads: frames arrive, fill RBUF and are dropped; every one is counted
    chip = _chip()
    count = 4 * FEED_CHUNK_FRAMES
    chip.attach_source(0, Generator(sizes=64, count=count))
    backlog: list[int] = []

    def watch(progress: object) -> None:
        ports = chip.counters()["ports"]
        taken = sum(v for k, v in ports[0].items()
                    if k == "rx_frames" or k.startswith("rx_dropped"))
        backlog.append(chip.frames_fed[0] - taken)

    result = chip.run(until_idle=True, quiet_cycles=10_000, progress=watch)
    assert result.reason in ("idle", "quiet")
    assert chip.frames_fed[0] == count
    assert max(backlog) <= FEED_CHUNK_FRAMES
    ports = chip.counters()["ports"]
    dropped = sum(v for k, v in ports[0].items() if k.startswith("rx_dropped"))
    assert ports[0]["rx_frames"] + dropped == count


def test_sink_gets_nothing_without_microcode() -> None:
    chip = _chip()
    sink = ListSink()
    chip.attach_sink(1, sink)
    chip.run(cycles=1_000)
    assert sink.frames == []
    assert np.all(chip.local_memory(0) == 0)


def test_long_gap_in_timestamps_is_crossed_in_few_slices() -> None:
    # no microcode: the frames are dropped on arrival (RBUF never drained) but counted
    from npkit.sim import ListSource, RxFrame

    chip = _chip()
    frames = [RxFrame(bytes(60), 0.0), RxFrame(bytes(60), 0.5), RxFrame(bytes(60), 0.5)]
    chip.attach_source(0, ListSource(frames))
    calls: list[int] = []
    result = chip.run(until_idle=True, quiet_cycles=10_000,
                      progress=lambda p: calls.append(p.cycle))
    assert result.reason in ("idle", "quiet")
    assert chip.now >= 0.5 * 1.4e9  # the last frames arrived half a second in
    assert len(calls) < 20
    ports = chip.counters()["ports"]
    assert ports[0]["rx_frames"] + sum(v for k, v in ports[0].items()
                                       if k.startswith("rx_dropped")) == 3
