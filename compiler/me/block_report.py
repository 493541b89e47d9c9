"""The figures of ``npkit build --report``: the entry and, for a pipeline, each stage's block
compiled alone, analysed by compiler/me/report.py."""

from __future__ import annotations

from ..mbl.sema import Program
from . import MEBuild, compile_me
from .abi import LABEL_PREFIX, LM_WINDOW_ABI
from .front.prepare import choose_entry
from .report import BodyStats, analyze_body


def entry_names(program: Program, entry: str | None) -> list[str]:
    """The entry to compile, then (for a pipeline) its stages' blocks."""
    build_entry = entry or choose_entry(program, None).name
    names = [build_entry]
    pipeline = next((p for p in program.pipelines.values() if p.name == build_entry), None)
    if pipeline is not None:
        names += list(dict.fromkeys(st.block for st in pipeline.stages))
    return names


def loop_trips(build: MEBuild) -> dict[str, int]:
    """WIR loop bounds by the body's labels (the back end's: it may enter a loop past its
    header, compiler/me/back/thread.py)."""
    return {f"{LABEL_PREFIX}{b.label}": b.max_trips for b in build.wir.blocks
            if b.max_trips} | build.body.loop_trips


def _receives(program: Program, name: str) -> bool:
    """The pipeline's first stage (or the block itself) is a receive stage."""
    pipeline = program.pipelines.get(name)
    first = pipeline.stages[0].block if pipeline is not None else name
    return program.media_use.get(first, {}).get("rx") is not None


def block_stats(program: Program, entry: str | None) -> dict[str, BodyStats]:
    """Per name of entry_names: the compiled body's instructions, worst path, memory
    commands, registers and estimated packets per second per ME.  An entry that receives
    in MBL compiles, stages included, as the pool runs it (LM_WINDOW_ABI: docs/link.md)."""
    stats = {}
    names = entry_names(program, entry)
    abi = LM_WINDOW_ABI if _receives(program, names[0]) else None
    for name in names:
        build = compile_me(program, name, abi)
        stats[name] = analyze_body(build.body.uc, filename=f"{name}.uc",
                                   loop_trips=loop_trips(build))
    return stats
