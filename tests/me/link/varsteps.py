"""Stepping a compiled program on the chip by MBL line and comparing the variables the
image's debug info locates with the native target's line trace (npkit.compiler.mbl.
linetrace): the helpers of test_variables.py and test_variables_props.py (the comparison
itself is tests/mbl_variables.py's)."""

from __future__ import annotations

import re

from npkit.compiler.mbl.linetrace import LineTracer
from npkit.compiler.uc.operands import parse_register_spelling
from npkit.runtime.compiled import CompiledRun, paced
from npkit.sim.packets import ListSink, ListSource

LM = re.compile(r"\*l\$index([01])\[(\d+)\]")
STEP_LIMIT = 20_000          # cycles: one frame crosses the chip in ~3,400


def reader(run: CompiledRun, me: int, ctx: int):
    """read(part) of a context on the chip: GPRs and transfer registers by operand code,
    local-memory words through where fwd.uc points the context's LM_ADDR_1 (its metadata)
    and LM_ADDR_0 (its spill area; the body moves it only around `in local` memories, and
    the debug info gives no spill location there)."""
    # link/plan.py: the dispatch's areas follow the program's `in local` memories,
    # 16-word aligned, 32 words a context (16 metadata, 16 spill)
    local_end = max((m.address + m.bytes for m in run.program.memories
                     if m.space == "local"), default=0) // 4
    metadata = (local_end + 15) // 16 * 16 + 32 * ctx

    def read(part: str) -> int:
        code = parse_register_spelling(part)
        if code is not None:
            return run.chip._core.read_reg(me, ctx, code)
        m = LM.fullmatch(part)
        assert m is not None, part
        word = metadata + (16 if m.group(1) == "0" else 0) + int(m.group(2))
        return int(run.chip.local_memory(me)[word])
    return read


def step_by_line(linked, tracer: LineTracer, frame: bytes) -> list[tuple]:
    """(file, line, {(name, declaration): value or None}) at every new MBL line a context
    reaches while the frame crosses the chip."""
    run = CompiledRun(linked)
    run.load_memories(tracer)
    chip = run.chip
    core = chip._core
    for q in range(len(linked.ports)):
        chip.attach_sink(q, ListSink())
    chip.attach_source(0, ListSource(paced([frame], 0.5, chip.config.ports[0])))
    mes = [me for me in range(chip.config.me_count)
           if getattr(chip.image_on(me), "variables", None)]
    assert mes, "no image with MBL variables"
    last: dict[tuple[int, int], tuple[str, int]] = {}
    stops = []
    for _ in range(STEP_LIMIT):
        chip.run(cycles=1)
        for me in mes:
            image = chip.image_on(me)
            for ctx in range(8):
                pc = core.context(me, ctx)["pc"]
                loc = image.lines[pc] if pc < len(image.lines) else None
                if loc is None or not loc.file.endswith(".mbl"):
                    last.pop((me, ctx), None)
                    continue
                if last.get((me, ctx)) == (loc.file, loc.line):
                    continue
                last[(me, ctx)] = (loc.file, loc.line)
                read = reader(run, me, ctx)
                values = {(v.variable.name, v.variable.decl): v.value(read)
                          for v in image.variables_at(pc)}
                stops.append((loc.file, loc.line, values))
        if any(chip.frames_out.values()) and stops and not last:
            break
    return stops
