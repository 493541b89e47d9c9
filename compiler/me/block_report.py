"""The figures of ``npkit build --report``: the entry and, for a pipeline, each stage's block
compiled alone, analysed by compiler/me/report.py."""

from __future__ import annotations

from ..mbl.sema import Program
from . import MEBuild, compile_me
from .abi import LABEL_PREFIX
from .front import to_wir
from .report import BodyStats, analyze_body


def entry_names(program: Program, entry: str | None) -> list[str]:
    """The entry to compile, then (for a pipeline) its stages' blocks."""
    build_entry = entry or to_wir(program, None).name
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


def block_stats(program: Program, entry: str | None) -> dict[str, BodyStats]:
    """Per name of entry_names: the compiled body's instructions, worst path, memory
    commands, registers and estimated packets per second per ME."""
    stats = {}
    for name in entry_names(program, entry):
        build = compile_me(program, name)
        stats[name] = analyze_body(build.body.uc, filename=f"{name}.uc",
                                   loop_trips=loop_trips(build))
    return stats
