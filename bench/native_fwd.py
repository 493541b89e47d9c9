"""How fast the native target (LLVM JIT on the host) forwards IPv4 with the real table.

    python -m npkit.bench.native_fwd [--packets 200000] [--runs 5] [--table PATH] [--cpu-time]
                                     [--structure 16-8-8|poptrie] [--stages N]
                                     [--branching-stages]

The dual-stack router (examples/router/router.mbl, built with NATIVE_STRUCTURE's walker:
16-8-8, see below) is loaded with the full real Internet
table (../shared/data/routes/full-table-2024.txt.gz by default; next hops by the documented
rule of npkit.runtime.routes, records by default_next_hop, exactly as `npkit run --routes`).
Packets are 64-byte-class Ethernet + IPv4 + UDP frames (60 bytes without FCS) to seeded
random destinations inside random IPv4 prefixes of the table.  Measured, median of --runs:

* forwarding Mpps per core: the router pipeline (eth_classify -> ipv4_fwd) and the
  ipv4_fwd block alone, one thread, timing only the JIT batch call (the packet buffer is
  made and copied beforehand; verdicts are read afterwards);
* lookup-only M lookups/s: tests/mbl/programs/lpm_probe.mbl's probe4 (the packet is the
  4-byte key; the same fib4_lookup walk of the same trie, no header checks or rewrite),
  with the one-pass batch driver (prefetch=False: its tiny loop overlaps misses by itself)
  and with the prefetch pipeline;
* router compile time: check + lower + optimize + JIT of examples/router/router.mbl;
* the fraction of packets forwarded (sanity: every destination is inside a real prefix).

The route-table structure is chosen here, explicitly: the router's source imports the
chip's structure (microblocks/router_common.mbl: lpm_poptrie.mbl, whose Poptries fit the
IXP2800's 8 MB SRAM channels), while natively memory is no limit and the 16-8-8 tries of
lpm.mbl forward about twice as fast (docs/lpm.md, "The switch"; bench/lpm_native_rate.py
measures both), so the native figures are the router with lpm.mbl (`router_program`).

This is a benchmark, not a test: it asserts nothing.  Results go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npkit.base.headers import ipv4_header
from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.native import HEADROOM, KeyFunction, NativeProgram
from npkit.compiler.mbl.sema import Program
from npkit.compiler.mbl.types import META_FIELDS, META_VERDICT, META_WORDS, VERDICT_FORWARD
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import REAL_TABLE, RouteSet, default_next_hop, read_routes

REPO = Path(__file__).resolve().parents[1]
ROUTER = REPO / "examples" / "router" / "router.mbl"
# The structure the native figures forward with (module docstring), and each structure's
# walker file (the router imports its walker through router_common.mbl).
NATIVE_STRUCTURE = "16-8-8"
LPM_FILES = {"16-8-8": "lpm.mbl", "poptrie": "lpm_poptrie.mbl"}
LPM_PROBE = REPO / "tests" / "mbl" / "programs" / "lpm_probe.mbl"
GOAL_MPPS = 40.0  # issue 19: 40 Mpps per core through the MBL router (issue 3 asked 20)
ROUTER_PORTS = 4  # examples/router/router.mbl: ports 0..3
SOURCE = 0xC6336401  # 198.51.100.1: a valid (non-martian) source


@dataclass
class Batch:
    """Packets laid out as NativeProgram.run lays them out (HEADROOM bytes before each)."""

    buf: np.ndarray  # (n, stride) uint8
    lens: np.ndarray  # (n,) uint32
    metas: np.ndarray  # (n, META_WORDS) uint32

    @classmethod
    def of(cls, packets: list[bytes], in_port: int = 0) -> Batch:
        n = len(packets)
        stride = HEADROOM + max(64, (max(len(p) for p in packets) + 63) // 64 * 64)
        buf = np.zeros((n, stride), dtype=np.uint8)
        lens = np.zeros(n, dtype=np.uint32)
        for i, p in enumerate(packets):
            buf[i, HEADROOM:HEADROOM + len(p)] = np.frombuffer(p, dtype=np.uint8)
            lens[i] = len(p)
        metas = np.zeros((n, META_WORDS), dtype=np.uint32)
        metas[:, META_FIELDS["in_port"].word] = in_port
        metas[:, META_FIELDS["len"].word] = lens
        return cls(buf, lens, metas)

    def fresh(self) -> Batch:
        """A copy to run on: the router rewrites packets and metadata in place."""
        return Batch(self.buf.copy(), self.lens, self.metas.copy())


def add_cpu_time_option(parser: argparse.ArgumentParser) -> None:
    """--cpu-time: the benchmarks' clock (clock_of) for a box shared with other work."""
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by the thread's CPU time, not wall time (on a box shared "
                             "with other work)")


def clock_of(args: argparse.Namespace) -> Callable[[], float]:
    return time.thread_time if args.cpu_time else time.perf_counter


def run_batch(native: NativeProgram, batch: Batch,
              clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """One JIT batch call on a fresh copy: (seconds by `clock`, wall time unless given,
    e.g. time.thread_time on a shared box; fraction forwarded)."""
    work = batch.fresh()
    mem = native.memory
    start = clock()
    native._run(work.buf.ctypes.data, work.buf.shape[1], work.lens.ctypes.data,
                work.metas.ctypes.data, len(work.lens), mem["sram"].ctypes.data,
                mem["scratch"].ctypes.data, mem["local"].ctypes.data)
    elapsed = clock() - start
    return elapsed, float(np.mean(work.metas[:, META_VERDICT] == VERDICT_FORWARD))


def median_rate(native: NativeProgram, batch: Batch, runs: int,
                clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """(median items per second, fraction forwarded), after one warm-up run."""
    _, forwarded = run_batch(native, batch, clock)
    times = [run_batch(native, batch, clock)[0] for _ in range(runs)]
    return len(batch.lens) / statistics.median(times), forwarded


def key_rate(function: KeyFunction, keys: np.ndarray, runs: int,
             clock: Callable[[], float] = time.perf_counter) -> float:
    """Median keys per second of an MBL function over a key array (one call a run), after
    one warm-up call."""
    out = function(keys)
    times = []
    for _ in range(runs):
        start = clock()
        function.run_into(keys, out)
        times.append(clock() - start)
    return len(keys) / statistics.median(times)


def destinations(routes: RouteSet, count: int, seed: int) -> list[int]:
    """Addresses inside random IPv4 prefixes of the table (random host bits)."""
    rng = random.Random(seed)
    prefixes = sorted(routes.v4)
    out = []
    for _ in range(count):
        net, length = prefixes[rng.randrange(len(prefixes))]
        out.append(net | (rng.getrandbits(32) & ((1 << (32 - length)) - 1)))
    return out


def udp_frame(dst: int) -> bytes:
    """Ethernet + IPv4 (TTL 64, DF) + UDP + 18 bytes of payload: 60 bytes + FCS = 64."""
    payload = bytes(18)
    udp = struct.pack("!HHHH", 1024, 9, 8 + len(payload), 0) + payload
    header = ipv4_header(SOURCE, dst, 17, len(udp), flags_fragment=0x4000)  # DF
    eth = bytes.fromhex("02000000ff01" "02000000ff02" "0800")
    return eth + header + udp


def load_router(native: NativeProgram, routes: RouteSet) -> None:
    """Tries and next-hop records as `npkit run --routes` gives them."""
    RouteTables.of(native).load(routes.v4, routes.v6)
    for nh in sorted(set(routes.v4.values()) | set(routes.v6.values())):
        native.write("nexthops", nh, default_next_hop(nh, ROUTER_PORTS))


def router_program(structure: str = NATIVE_STRUCTURE) -> Program:
    """examples/router/router.mbl compiled with `structure`'s walker under both LPM file
    names (a copy of microblocks/ in a temporary folder; the same forwarding code whatever
    router_common.mbl imports)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "microblocks", root / "microblocks")
        for name in LPM_FILES.values():
            shutil.copy(REPO / "microblocks" / LPM_FILES[structure], root / "microblocks" / name)
        (root / "examples" / "router").mkdir(parents=True)
        shutil.copy(ROUTER, root / "examples" / "router")
        return compile_file(root / "examples" / "router" / "router.mbl")


def compile_router() -> NativeProgram:
    return NativeProgram(router_program(), "router")


def timed(make: Callable[[], object], runs: int) -> tuple[float, float]:
    """(first call, median of the calls): the first one also initializes LLVM."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        make()
        times.append(time.perf_counter() - start)
    return times[0], statistics.median(times)


@dataclass(frozen=True)
class Row:
    what: str
    rate: float  # millions per second
    unit: str
    forwarded: float | None = None


def measure(table: Path, packets: int, runs: int, seed: int,
            clock: Callable[[], float] = time.perf_counter,
            structure: str = NATIVE_STRUCTURE, stages: int = 0, flat_stages: bool = True,
            ) -> tuple[list[Row], tuple[float, float]]:
    print(f"reading {table} ...", flush=True)
    routes = read_routes(table)
    dsts = destinations(routes, packets, seed)
    frames = Batch.of([udp_frame(d) for d in dsts])
    keys = Batch.of([d.to_bytes(4, "big") for d in dsts])
    print(f"{len(routes.v4)} IPv4 + {len(routes.v6)} IPv6 prefixes; {packets} packets of "
          f"{len(udp_frame(dsts[0])) + 4} bytes (with FCS) to destinations in random IPv4 "
          f"prefixes (seed {seed})", flush=True)

    compile_seconds = timed(compile_router, runs)
    program = router_program(structure)
    driver = f"{structure}, " + (f"staged ({stages}{'' if flat_stages else ', branching'})"
                                 if stages else "prefetch pipeline")
    print(f"router: {driver}", flush=True)
    rows = []
    for title, block in (("router pipeline (eth_classify -> ipv4_fwd)", "router"),
                         ("ipv4_fwd block alone", "ipv4_fwd")):
        native = NativeProgram(program, block, stages=stages, flat_stages=flat_stages)
        load_router(native, routes)
        rate, forwarded = median_rate(native, frames, runs, clock)
        rows.append(Row(f"forward, {title}", rate / 1e6, "Mpps", forwarded))
        del native  # the tries take ~60 MB per program
    # the probe's tiny loop overlaps its misses by itself; both batch drivers
    for prefetch, driver in ((False, "one pass"), (True, "prefetch pipeline")):
        probe = NativeProgram(compile_file(LPM_PROBE), "probe4", prefetch=prefetch)
        RouteTables.of(probe).load(routes.v4, {})
        rate, found = median_rate(probe, keys, runs, clock)
        rows.append(Row(f"lookup only (lpm_probe.mbl probe4), {driver}", rate / 1e6,
                        "M lookups/s", found))
        del probe
    return rows, compile_seconds


def cpu_model() -> str:
    """The CPU's model name (Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def report(rows: list[Row], compile_seconds: tuple[float, float], runs: int) -> None:
    print(f"\nmachine: {cpu_model()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, one thread; median of {runs} runs")
    print(f"{'measurement':<52} {'rate':>10}  {'unit':<12} {'forwarded':>9}")
    for r in rows:
        fwd = f"{r.forwarded:9.1%}" if r.forwarded is not None else ""
        print(f"{r.what:<52} {r.rate:10.2f}  {r.unit:<12} {fwd}")
    router = rows[0].rate
    print(f"\nIPv4 forwarding through the router: {router:.2f} Mpps per core = "
          f"{router / GOAL_MPPS:.2f} x the {GOAL_MPPS:.0f} Mpps goal")
    first, median = compile_seconds
    print(f"router compile (check + lower + optimize + JIT): {median:.2f} s median, "
          f"{first:.2f} s the first in this process (acceptance: under 2 s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npkit.bench.native_fwd",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=200_000, help="packets per batch")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--table", type=Path, default=REAL_TABLE, help="route file")
    parser.add_argument("--seed", type=int, default=1, help="destination seed")
    add_cpu_time_option(parser)
    parser.add_argument("--structure", choices=sorted(LPM_FILES), default=NATIVE_STRUCTURE,
                        help="the router's route-table walker (default %(default)s)")
    parser.add_argument("--stages", type=int, default=0,
                        help="the router's batch driver: 0 the prefetch pipeline (default), "
                             "N the depth-staged driver with N stages (NativeProgram(stages=N))")
    parser.add_argument("--branching-stages", action="store_true",
                        help="with --stages: each stage with the walk's branches, not "
                             "flattened (NativeProgram(flat_stages=False))")
    args = parser.parse_args(argv)
    if args.packets < 1 or args.runs < 1:
        parser.error("--packets and --runs must be at least 1")
    if not args.table.exists():
        print(f"error: no route table at {args.table}; give one with --table FILE (the real "
              f"table is ../shared/data/routes/full-table-2024.txt.gz next to the "
              f"repository)", file=sys.stderr)
        return 2
    clock = clock_of(args)
    rows, compile_seconds = measure(args.table, args.packets, args.runs, args.seed, clock,
                                    args.structure, args.stages, not args.branching_stages)
    report(rows, compile_seconds, args.runs)
    if args.cpu_time:
        print("(rates by thread CPU time; compile times are wall time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
