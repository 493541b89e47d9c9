"""Per-packet traces on the compiled data path of docs/datapath.md (one thread receives,
forwards and transmits a frame; link/dispatch/pool.uc): the compiled POS router, each
frame's journey against the native target's verdict for the same frame -- forwarded frames
leave on the native port with the native bytes at the cycles the journey names, drops carry
the native reason, exceptions the exception verdict -- and the body's stages show as "next"
verdicts on their MBL lines before the final one (docs/debugging.md, "Per-packet traces").

    .venv/bin/python -m pytest -q tests/me/link/test_pool_packet_trace.py
"""

from __future__ import annotations

import re
from pathlib import Path

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import LM_WINDOW_ABI
from npkit.link import link
from npkit.runtime.compiled import CompiledRun, paced
from npkit.runtime.lpm import RouteTables
from npkit.runtime.packet_trace import trace_program
from npkit.sim.packet_trace import Selection
from npkit.sim.packets import ListSink, ListSource, RxFrame

from .harness import drive
from .test_pool_pos_router import NEXT_HOPS, POS_ROUTER, START_S, V4_ROUTES, V6_ROUTES, frames

COUNT = 400   # frames per port


def test_pool_journeys_follow_the_native_verdicts() -> None:
    program = compile_file(POS_ROUTER)
    entry = next(iter(program.pipelines))
    manifest = link(program, compile_me(program, entry, LM_WINDOW_ABI), "ixp2800-2xoc192pos",
                    pool_mes_per_port=8)
    native = NativeProgram(program)
    for index in range(NEXT_HOPS):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 4470})
    RouteTables.of(native).load(V4_ROUTES, V6_ROUTES)
    run = CompiledRun(manifest)
    run.load_memories(native)
    trace = trace_program(run.chip, run.program, Selection())
    offered = {p: frames(COUNT, p) for p in (0, 1)}
    verdicts = {p: native.run(fs, p) for p, fs in offered.items()}
    sinks = {p: ListSink() for p in (0, 1)}
    for p, sink in sinks.items():
        run.chip.attach_sink(p, sink)
    for p, fs in offered.items():
        run.chip.attach_source(p, ListSource([
            RxFrame(f.data, START_S + (f.time_s or 0.0))
            for f in paced(fs, 0.75, run.chip.config.ports[p])]))
    drive(run, 2 * COUNT, sinks)
    sent = {(f.port, f.first_bit_cycle, f.last_bit_cycle): f.data
            for sink in sinks.values() for f in sink.frames}
    journeys = trace.journeys()
    assert len(journeys) == 2 * COUNT
    kinds = set()
    for j in journeys.values():
        v = verdicts[j.port][j.seq]
        kinds.add(v.kind)
        assert j.contexts and len(j.contexts) == 1   # run to completion: one thread
        if v.kind == "forward":
            assert j.out_port == v.port and j.departed is not None
            assert sent[(j.out_port, *j.departed)] == v.data
        elif v.kind == "drop":
            assert j.departed is None and j.drop_reason == v.reason
        else:
            assert j.departed is None and j.verdict is not None
            assert j.verdict.label == "exception"
        # the final verdict is an MBL statement naming it; stages before it say "next"
        source = trace.source_of(j.verdict_at.me, j.verdict_at.pc)
        m = re.match(r"^(.+\.mbl):(\d+):\d+$", source)
        assert m, source
        text = Path(m[1]).read_text().splitlines()[int(m[2]) - 1]
        assert f"{v.kind}(" in text, (v.kind, text)
        stages = [trace.points[(h.me, h.pc)].label for h in j.hops
                  if h.kind == "trace_point" and trace.points[(h.me, h.pc)].kind == "verdict"]
        assert "next" in stages
    assert kinds == {"forward", "drop", "exception"}
