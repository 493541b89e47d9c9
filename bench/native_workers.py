"""How the native target scales over host cores: the router on 1 vs N worker threads.

    python -m npkit.bench.native_workers [--packets 200000] [--runs 9] [--workers 2]

The dual-stack router (examples/router/router.mbl) with the real Internet table, as
bench/native_fwd.py loads it; 64-byte IPv4/UDP frames to random destinations inside the
table's prefixes.  microblocks/rss.mbl (Microsoft key, 4-tuple, the indirection table spread
over N queues) gives each packet its queue once, beforehand (the NIC's part).  Then
npkit.compiler.mbl.workers runs the packets on 1 worker and on N workers (queue q on worker
q mod N, each a replica of the router with its own copy of the tables), timing only
NativeWorkers.execute (threads start, run their batches, join) on fresh copies of the laid
out batches.  The 1- and N-worker runs alternate (--runs pairs after a warm-up), so both see
the same load: the box is shared, and its load average is printed.  Reported: the median
rates, their ratio, and the median and range of the pairs' ratios; and a control measured
between the runs: the speed-up two threads of GIL-free C work (hashlib sha256) get over one,
i.e. how many cores the box gave at that time.

This is a benchmark, not a test: it asserts nothing but that both runs give the same
verdicts.  Results go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time
from pathlib import Path

from npkit.bench.native_fwd import (
    DEFAULT_TABLE,
    compile_router,
    cpu_model,
    destinations,
    load_router,
    udp_frame,
)
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.workers import NativeWorkers, Plan, steer
from npkit.runtime.routes import read_routes
from npkit.runtime.rss import MICROSOFT_KEY, program_rss, spread_reta

REPO = Path(__file__).resolve().parents[1]
GOAL = 1.8  # issue 15: 2 workers >= 1.8 x one worker on the 2-core machine


def seconds(pool: NativeWorkers, plan: Plan) -> float:
    """Wall time of one execute on a fresh copy of the plan."""
    work = plan.fresh()
    start = time.perf_counter()
    pool.execute(work)
    return time.perf_counter() - start


def thread_control(runs: int) -> float:
    """What two threads of GIL-free C work get on this box now: the speed-up of hashing 100 MB
    on two threads (hashlib releases the GIL) over one, median of runs.  About 2 on two free
    cores; about 1 when other work holds one core."""
    data = bytes(100_000_000)

    def digest() -> None:
        hashlib.sha256(data).digest()

    ratios = []
    for _ in range(runs):
        start = time.perf_counter()
        digest()
        one = time.perf_counter() - start
        start = time.perf_counter()
        other = threading.Thread(target=digest)
        other.start()
        digest()
        other.join()
        ratios.append(2 * one / (time.perf_counter() - start))
    return statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npkit.bench.native_workers",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=21, help="pairs of runs (median)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--table", type=Path, default=DEFAULT_TABLE, help="route file")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.packets < 1 or args.runs < 1 or args.workers < 1:
        parser.error("--packets, --runs and --workers must be at least 1")
    if not args.table.exists():
        print(f"error: no route table at {args.table}; give one with --table FILE",
              file=sys.stderr)
        return 2
    routes = read_routes(args.table)
    frames = [udp_frame(d) for d in destinations(routes, args.packets, args.seed)]
    ports = [0] * len(frames)
    rss = NativeProgram(compile_file(REPO / "microblocks" / "rss.mbl"), "rss_steer")
    program_rss(rss, MICROSOFT_KEY, reta=spread_reta(args.workers))
    steering = steer(rss, frames, ports)
    per_queue = [sum(v.queue == q for v in steering) for q in range(args.workers)]

    router = compile_router()
    load_router(router, routes)
    load = os.getloadavg()
    pools = {n: NativeWorkers(router, n) for n in sorted({1, args.workers})}
    plans = {n: pool.lay_out(frames, ports, steering) for n, pool in pools.items()}
    times: dict[int, list[float]] = {n: [] for n in pools}
    for n in pools:  # warm-up
        seconds(pools[n], plans[n])
    controls = [thread_control(1)]
    for r in range(args.runs):  # alternate, so both counts see the same load
        for n in pools:
            times[n].append(seconds(pools[n], plans[n]))
        if r % 5 == 4:
            controls.append(thread_control(1))
    rates = {n: len(frames) / statistics.median(t) for n, t in times.items()}
    ratios = [a / b for a, b in zip(times[1], times[args.workers], strict=True)]
    verdicts = {}
    for n, pool in pools.items():
        work = plans[n].fresh()
        pool.execute(work)
        verdicts[n] = pool.collect(work).verdicts
    same = verdicts[1] == verdicts[args.workers]
    forwarded = sum(v.kind == "forward" for v in verdicts[1]) / len(frames)

    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; load average before the runs "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{len(frames)} packets of 64 bytes, {len(routes.v4)} IPv4 prefixes; RSS queues "
          f"{per_queue}; median of {args.runs} runs; forwarded {forwarded:.1%}")
    for n, rate in rates.items():
        print(f"{n} worker{'s' if n > 1 else ''}: {rate / 1e6:6.2f} Mpps")
    if args.workers > 1:
        ratio = rates[args.workers] / rates[1]
        print(f"speed-up {args.workers} vs 1 workers: {ratio:.2f} x from the medians, "
              f"{statistics.median(ratios):.2f} x the median of paired runs (range "
              f"{min(ratios):.2f}-{max(ratios):.2f}; goal {GOAL} x); same verdicts: {same}")
    print(f"control: two threads of sha256 (GIL released) ran {statistics.median(controls):.2f} x "
          f"one thread (median; range {min(controls):.2f}-{max(controls):.2f}), measured "
          f"between the runs: the parallelism the box gave")
    return 0


if __name__ == "__main__":
    sys.exit(main())
