"""What a per-packet trace costs (docs/debugging.md, "Per-packet traces"): the compiled
examples/router (2 forwarding MEs per port) at 90 % of line rate, FRAMES frames per port,
run five times with the frame log off or on; with it on, the core's events, the time to
build the journeys and write the trace file at a 10 MB cap (with and without commands) and
without a cap (with commands; for ``pftrace`` also without the compression, at the cap and
without one), and the utilisation table.

    python -m npkit.bench.packet_trace_cost off|on [FRAMES] [json|pftrace]

(``pftrace``, Perfetto's protobuf format, needs the perfetto package.)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from npkit.bench import router4_load as r4l
from npkit.bench.compiled_load import ROUTER, tables
from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun

CAP = 10_000_000
RUNS = 5


def main(argv: list[str]) -> None:
    mode = argv[0] if argv else "off"
    if mode not in ("off", "on"):
        raise SystemExit("usage: python -m npkit.bench.packet_trace_cost off|on [FRAMES] "
                         "[json|pftrace]")
    frames = int(argv[1]) if len(argv) > 1 else 5000
    suffix = argv[2] if len(argv) > 2 else "json"
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), fwd_mes_per_port=2)
    workload = r4l.Workload.make(5, 300, frames, 64)
    times = []
    trace = None
    for _ in range(RUNS):
        run = CompiledRun(linked)
        run.load_memories(tables(program, workload))
        if mode == "on":
            from npkit.runtime.packet_trace import trace_program
            from npkit.sim.packet_trace import Selection

            trace = trace_program(run.chip, run.program, Selection(max_events=4 * CAP // 40))
        start = time.perf_counter()
        run.run(workload.frames, load=0.9)
        times.append(time.perf_counter() - start)
    print(f"{mode}: run seconds {[round(t, 3) for t in times]}, median "
          f"{statistics.median(times):.3f}, min {min(times):.3f}; {run.chip.now:,} cycles")
    if trace is not None:
        report(trace, run, suffix)


def report(trace: Any, run: CompiledRun, suffix: str) -> None:
    from npkit.sim import utilisation as util
    from npkit.sim.packet_trace import TraceOptions, write_packet_trace

    status = trace.log.status()
    print(f"core events {status['recorded']:,}, lost {status['lost']:,}")
    start = time.perf_counter()
    journeys = trace.journeys()
    raw = trace.log.utilisation_raw()
    clock = run.chip.config.clock_hz
    counters = util.counter_events(raw, status["units"], status["bucket_cycles"], clock)
    with tempfile.TemporaryDirectory() as folder:
        for commands in (True, False):
            result = write_packet_trace(Path(folder) / f"t.{suffix}", journeys, clock,
                                        trace.source_of, run.chip.config.me_label,
                                        TraceOptions(cap_bytes=CAP, commands=commands),
                                        status, counters)
            print(f"commands {commands}: {result.frames:,} of {result.frames_total:,} frames, "
                  f"{result.bytes:,} bytes, cap reached {result.truncated}")
        whole = write_packet_trace(Path(folder) / f"all.{suffix}", journeys, clock,
                                   trace.source_of, run.chip.config.me_label,
                                   TraceOptions(cap_bytes=1 << 40), status, counters)
        print(f"no cap, commands True: {whole.frames:,} frames, {whole.bytes:,} bytes")
        if suffix == "pftrace":     # the packets as they are, without the compression
            for cap in (CAP, 1 << 40):
                plain = write_packet_trace(Path(folder) / "plain.pftrace", journeys, clock,
                                           trace.source_of, run.chip.config.me_label,
                                           TraceOptions(cap_bytes=cap, compress=False),
                                           status, counters)
                print(f"uncompressed, cap {cap:,}, commands True: {plain.frames:,} frames, "
                      f"{plain.bytes:,} bytes")
    print(f"journeys and files: {time.perf_counter() - start:.1f} s")
    shares = util.me_shares(raw, trace.log.baseline, status["units"], run.chip.config.me_label)
    print(util.table(shares))


if __name__ == "__main__":
    main(sys.argv[1:])
