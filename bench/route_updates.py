"""How many route updates per second the control plane applies to the real table (host time).

    python -m npkit.bench.route_updates [--updates 30000] [--batch 1000 (--bands: 100)] [--runs 5]
                                        [--table PATH] [--seed 2024]
                                        [--structure poptrie|16-8-8|both]
                                        [--bands [--band-updates 2000] [--band-runs 3]
                                                 [--no-dpdk]]
                                        [--worst] [--family 4|6]

For IPv4 and IPv6 separately: the full real table (../shared/data/routes/
full-table-2024.txt.gz by default, next hops by the documented rule of npkit.runtime.routes)
is bulk-loaded through the route manager (npkit.runtime.route_manager, whose C++ updater
writes the trie words the microengines read), then a stream of --updates route updates is
applied, in equal parts:

* delete a prefix of the table, later add it back with its next hop;
* add a prefix from the seeded generator (npkit.runtime.routes.generate_routes) that the
  table lacks, later delete it;
* replace a prefix's next hop, later put the old one back.

The first halves of these pairs come first (shuffled), then the second halves (shuffled),
so every run starts from and ends at the same table.  Two ways to apply them:

* one update per call: `mgr.add`/`mgr.delete` then `mgr.reclaim()` (end of the grace
  period) each time;
* batched: one `mgr.apply(batch)` per --batch updates (one C++ call), one `reclaim()` each.

Reported: updates per second in host time, median of --runs, beside the IXP2800's published
figures and the issue's goal, also per CPU second of the process (robust on a shared box);
the single-update latency distribution of one more per-call pass (median, p99, p99.9,
max: on a loaded box the tail is the scheduler's time slices); and, from a manager with a
write log (the chip's shadow copy), the mean number of 32-bit words written to chip memory
per update; and the rate in modelled XScale time (`modelled_xscale_rate`: the stream
replayed through the control-processor model into a simulated chip; each update's cost
comes from its counted work, npkit.runtime.xscale_update).  After the runs
the trie is checked against a freshly built one on random addresses.  This is a benchmark,
not a test.  Results go to docs/performance.md, "Route updates".  By default it measures
the chip router's structure, the Poptries of microblocks/lpm_poptrie.mbl (8 MB memories:
the modelled chip keeps the preset's 8 MB SRAM channels), through PoptrieRouteManager;
`--structure 16-8-8` lpm.mbl's tries (their modelled chip on 64 MB channels, the HRM's
maximum, which only they need); `both`, each.
`--bands` instead runs bench/update_bands.py: updates/s per prefix-length band beside
DPDK's rte_lpm / rte_lpm6 on the same prefixes, each side and family in a fresh process of
its own, --band-runs times, medians and ranges (`fair_bands`); `--worst` the slowest
single updates.
`--family 4` or `6` measures that family's table only (the other is not loaded).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import ipaddress
import json
import pickle
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from npkit.bench.lpm_dpdk import BANDS
from npkit.bench.update_bands import (
    WORST_UP_TO,
    BandResult,
    band_samples,
    batches,
    dpdk_bands,
    npkit_bands,
    percentiles,
    worst_updates,
)
from npkit.runtime.lpm import IPV4, IPV6
from npkit.runtime.route_manager import (
    PoptrieRouteManager,
    RouteManager,
    RouteUpdate,
)
from npkit.runtime.routes import (
    DEFAULT_NEXT_HOPS,
    DEFAULT_SEED,
    REAL_TABLE,
    build_trie,
    generate_routes,
    read_routes,
    reference_histogram,
)
from npkit.runtime.xscale import ControlProcessor
from npkit.runtime.xscale_update import UpdateCostModel
from npkit.sim import Chip, ChipConfig

IXP2800_RATE = {4: 58_883, 6: 24_000}  # published route updates/s (issue 5)
GOAL_RATE = {4: 1_000_000, 6: 500_000}  # host time, issue 5
CHECK_ADDRESSES = 20_000

Prefix = tuple[int, int]


TRIE_WORDS = {4: 1 << 23, 6: 1 << 24}  # microblocks/lpm.mbl's fib4_trie / fib6_trie
POPTRIE_WORDS = 1 << 21                 # lpm_poptrie.mbl's fib4_poptrie / fib6_poptrie
STRUCTURES = ("16-8-8", "poptrie")
DEFAULT_STRUCTURE = "poptrie"  # the chip router's (microblocks/router_common.mbl)


def new_manager(family: int, log: bool = False, structure: str = DEFAULT_STRUCTURE
                ) -> RouteManager | PoptrieRouteManager:
    if structure == "poptrie":
        words = np.zeros(POPTRIE_WORDS, dtype=np.uint32)
        return PoptrieRouteManager(words if family == 4 else None,
                                   words if family == 6 else None, log)
    words = np.zeros(TRIE_WORDS[family], dtype=np.uint32)  # zero-filled lazily
    return RouteManager(words if family == 4 else None, words if family == 6 else None, log)


Row = tuple[int, int, int, int | None]  # family, network, length, next hop (None: delete)


def one_per_call(mgr: RouteManager, rows: list[Row], _batch: int) -> None:
    add, delete, reclaim = mgr.add, mgr.delete, mgr.reclaim
    for family, network, length, next_hop in rows:
        if next_hop is None:
            delete(family, network, length)
        else:
            add(family, network, length, next_hop)
        reclaim()


def rows_of(updates: list[RouteUpdate]) -> list[Row]:
    """The updates as the arguments of one call each, built before the clock starts, with
    their networks as new int objects made in stream order, as a caller that parses its
    updates has them.  (The table's own ints were made while reading 900 K routes and lie
    scattered over the Python heap: the interpreter's reference-count increment when the
    loop unpacks a row was then a cache miss per update, about 15 % of the one-per-call
    time on 2026-11-28 -- the benchmark's memory layout, not the update's work.)"""
    return [(u.family, _new_int(u.network), u.length, u.next_hop) for u in updates]


def _new_int(value: int) -> int:
    """An int equal to `value` in a new object (int(value) may return `value` itself)."""
    return int(str(value))


def batched(mgr: RouteManager, calls: list[Callable[[], int]], _batch: int) -> None:
    """The batches' calls (`batches`), one reclaim after each."""
    reclaim = mgr.reclaim
    for call in calls:
        call()
        reclaim()


@dataclass(frozen=True)
class Modelled:
    """The stream in modelled XScale time and the counted work per update."""

    rate: float  # updates/s of simulated time
    instructions: float = 0.0  # mean per update, from the counters
    misses: float = 0.0  # data-cache misses per update (line fills from DRAM)
    work_cycles: float = 0.0  # XScale cycles of work per update, writes not included
    counters: dict[str, float] | None = None  # mean counters per update


def modelled_xscale_rate(family: int, table: dict[Prefix, int], updates: list[RouteUpdate],
                         chip_name: str = "ixp2800", structure: str = DEFAULT_STRUCTURE
                         ) -> Modelled:
    """Updates/s in modelled time: the XScale model (npkit.runtime.xscale) applies the stream
    one update at a time to a chip whose SRAM channel 0 holds the trie -- the same path as
    npkit.runtime.chip_router: the route manager updates the host shadow, the XScale spends
    the update's work, then replays the update's write log into SRAM as posted writes
    (issue cost per word, at most `max_posted_writes` in flight, visible after the write
    latency, barriers kept).  Time runs from the first update to the last word visible.

    The work: costed from what the updater counted (a Poptrie: nodes visited, slots
    scanned, words read and written, blocks allocated and retired; the 16-8-8 trie: levels
    walked, route-map probes, slot depths compared, words written, plies allocated and
    retired) and the data-cache misses of the addresses it read
    (npkit.runtime.xscale_update, parameters in runtime/data/xscale_update.toml).  For the
    16-8-8 trie the channel is
    made 64 MB (the HRM's maximum) so the real table fits; a Poptrie fits the preset's
    channel."""
    config = ChipConfig.load(chip_name)
    if structure == "16-8-8":
        raw = copy.deepcopy(config.raw)
        raw["sram"]["channel_bytes"] = 1 << 26
        config = ChipConfig(raw=raw, source=f"{config.source} with 64 MB SRAM channels")
    chip = Chip(config)
    mgr, _ = load(family, table, log=True, structure=structure)
    mgr.take_log(family)  # type: ignore[arg-type]  # the bulk load: copied at load time
    shadow = mgr.trie(family).words  # type: ignore[arg-type]
    chip.sram(0)[:len(shadow)] = shadow
    cp = ControlProcessor(chip)
    last_visible = [0]
    model = UpdateCostModel(cp.timing.dram_read_cycles)
    totals: dict[str, float] = {}
    work = [0, 0, 0]  # instructions, misses, cycles
    trie = mgr.trie(family)  # type: ignore[arg-type]
    trie.take_counters()
    trie.trace(True)

    def stream() -> Any:
        for update in updates:
            mgr.apply([update])
            mgr.reclaim()                       # no reader on this chip: no grace period
            log = mgr.take_log(family)  # type: ignore[arg-type]
            counters = trie.take_counters()
            cost = model.cost(counters, trie.take_trace())
            for key, value in counters.items():
                totals[key] = totals.get(key, 0) + value
            work[0] += cost.instructions
            work[1] += cost.misses
            work[2] += cost.cycles
            yield from cp.compute(cost.cycles)
            if len(log.indices):
                last_visible[0] = yield from cp.sram_write(0, log.indices, log.values,
                                                           list(log.barriers))

    start = cp.now
    cp.process(stream())
    cp.run(until_idle=True)
    end = max(cp.now, last_visible[0])
    rate = len(updates) / ((end - start) / chip.config.clock_hz)
    n = len(updates)
    return Modelled(rate, work[0] / n, work[1] / n, work[2] / n,
                    {k: v / n for k, v in totals.items()})


def update_stream(table: dict[Prefix, int], family: int, count: int,
                  seed: int) -> list[RouteUpdate]:
    """`count` updates (rounded down to a multiple of 6) that leave `table` as it was."""
    rng = random.Random(seed)
    pairs = max(1, count // 6)
    existing = rng.sample(sorted(table), 2 * pairs)
    deleted, replaced = existing[:pairs], existing[pairs:]
    histogram = reference_histogram(family)  # type: ignore[arg-type]
    fresh = generate_routes(family, 2 * pairs + len(table) // 10, seed + 1,  # type: ignore
                            histogram)
    added = [p for p in fresh if p not in table][:pairs]

    def add(prefix: Prefix, next_hop: int) -> RouteUpdate:
        return RouteUpdate("add", family, *prefix, next_hop)  # type: ignore[arg-type]

    def delete(prefix: Prefix) -> RouteUpdate:
        return RouteUpdate("delete", family, *prefix)  # type: ignore[arg-type]

    first = ([delete(p) for p in deleted]
             + [add(p, fresh[p]) for p in added]
             + [add(p, (table[p] + 1) % DEFAULT_NEXT_HOPS) for p in replaced])
    second = ([add(p, table[p]) for p in deleted]
              + [delete(p) for p in added]
              + [add(p, table[p]) for p in replaced])
    rng.shuffle(first)
    rng.shuffle(second)
    return first + second


@dataclass
class Result:
    family: int
    routes: int
    load_seconds: float
    updates: int
    per_call: float  # median updates/s
    batched: float
    per_call_logged: float  # one per call, with the write log (the chip's shadow)
    words_per_update: float  # mean words written per update (write log)
    barriers_per_update: float
    modelled: Modelled  # the stream on the modelled XScale, simulated time
    check: str
    per_call_cpu: float = 0.0  # updates per CPU second of the process, one per call
    tail_us: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # p50 p99 p99.9 max
    structure: str = DEFAULT_STRUCTURE
    batched_cpu: float = 0.0  # updates per CPU second, batched


def median_rate(mgr: RouteManager, work: list[Any], batch: int, runs: int,
                apply: Callable[[RouteManager, list[Any], int], None],
                clock: Callable[[], float] = time.perf_counter,
                count: int | None = None) -> float:
    """Median over `runs` of `count` (default len(work)) updates per second of `clock`."""
    rates = []
    for _ in range(runs):
        start = clock()
        apply(mgr, work, batch)
        rates.append((len(work) if count is None else count) / (clock() - start))
    return statistics.median(rates)


def latency_tail(mgr: RouteManager, rows: list[Row]) -> tuple[float, float, float, float]:
    """One per call, each update (with its reclaim) timed on its own: p50, p99, p99.9 and
    max in microseconds of wall time."""
    add, delete, reclaim = mgr.add, mgr.delete, mgr.reclaim
    clock = time.perf_counter_ns
    times = []
    for family, network, length, next_hop in rows:
        start = clock()
        if next_hop is None:
            delete(family, network, length)
        else:
            add(family, network, length, next_hop)
        reclaim()
        times.append(clock() - start)
    return percentiles(times)


def check_against_rebuild(mgr: RouteManager, table: dict[Prefix, int], family: int,
                          seed: int) -> str:
    """Compare lookups with a trie built from scratch, on addresses inside table prefixes."""
    if mgr.routes(family) != table:  # type: ignore[arg-type]
        return "FAILED: the route set differs from the table after the runs"
    fresh = build_trie(table, family)  # type: ignore[arg-type]
    rng = random.Random(seed)
    bits = (IPV4 if family == 4 else IPV6).key_bits
    for value, length in rng.sample(sorted(table), min(CHECK_ADDRESSES, len(table))):
        address = value | rng.getrandbits(bits - length) if length < bits else value
        if mgr.lookup(family, address) != fresh.lookup(address):  # type: ignore[arg-type]
            return f"FAILED at address {address:#x}"
    return f"ok ({min(CHECK_ADDRESSES, len(table)):,} addresses agree with a rebuilt trie)"


def load(family: int, table: dict[Prefix, int], log: bool, structure: str = DEFAULT_STRUCTURE
         ) -> tuple[Any, float]:
    mgr = new_manager(family, log, structure)
    start = time.perf_counter()
    mgr.reload(table if family == 4 else None, table if family == 6 else None)
    return mgr, time.perf_counter() - start


def measure(family: int, table: dict[Prefix, int], count: int, batch: int, runs: int,
            seed: int, structure: str = DEFAULT_STRUCTURE) -> Result:
    mgr, load_seconds = load(family, table, log=False, structure=structure)
    updates = update_stream(table, family, count, seed)
    per_call = median_rate(mgr, rows_of(updates), batch, runs, one_per_call)
    per_call_cpu = median_rate(mgr, rows_of(updates), batch, runs, one_per_call,
                               time.process_time)
    tail = latency_tail(mgr, rows_of(updates))
    calls = batches(mgr, updates, batch)
    in_batches = median_rate(mgr, calls, batch, runs, batched, count=len(updates))
    in_batches_cpu = median_rate(mgr, calls, batch, runs, batched, time.process_time,
                                 count=len(updates))
    check = check_against_rebuild(mgr, table, family, seed)
    del mgr
    shadow, _ = load(family, table, log=True, structure=structure)
    shadow.take_log(family)  # type: ignore[arg-type]  # the bulk load's writes
    logged = median_rate(shadow, rows_of(updates), batch, runs, one_per_call)
    log = shadow.take_log(family)  # type: ignore[arg-type]
    applied = runs * len(updates)
    del shadow
    modelled = modelled_xscale_rate(family, table, updates, structure=structure)
    return Result(family, len(table), load_seconds, len(updates), per_call, in_batches, logged,
                  len(log.indices) / applied, len(log.barriers) / applied, modelled, check,
                  per_call_cpu, tail, structure, in_batches_cpu)


def report(results: list[Result], table: Path, batch: int, runs: int) -> None:
    for structure in dict.fromkeys(r.structure for r in results):
        rows = [r for r in results if r.structure == structure]
        print(f"route updates ({structure}) on {table.name}; Python "
              f"{platform.python_version()}, {platform.machine()}, one thread; host time, "
              f"median of {runs} runs")
        print(f"{'':5} {'routes':>9} {'full load':>10} {'updates':>8} {'per call /s':>12} "
              f"{'(CPU) /s':>10} {'batched /s':>11} {'(CPU) /s':>10} {'logged /s':>10} "
              f"{'IXP2800 /s':>11} {'goal /s':>10}")
        for r in rows:
            print(f"IPv{r.family:<2} {r.routes:>9,} {r.load_seconds:>8.2f} s {r.updates:>8,} "
                  f"{r.per_call:>12,.0f} {r.per_call_cpu:>10,.0f} {r.batched:>11,.0f} "
                  f"{r.batched_cpu:>10,.0f} {r.per_call_logged:>10,.0f} "
                  f"{IXP2800_RATE[r.family]:>11,} {GOAL_RATE[r.family]:>10,}")
        print(f"batched = {batch:,} updates per mgr.apply call (Poptrie: apply_columns) and "
              f"one reclaim per batch; "
              f"(CPU) = per CPU second of the process; logged = one per call with the write "
              f"log (chip shadow)")
        for r in rows:
            p50, p99, p999, worst = r.tail_us
            print(f"IPv{r.family} one update, wall time: median {p50:.2f} us, p99 {p99:.1f}, "
                  f"p99.9 {p999:.1f}, max {worst:.1f} us")
        for r in rows:
            m = r.modelled
            print(f"IPv{r.family} words written per update: {r.words_per_update:.1f} "
                  f"({r.barriers_per_update:.2f} barriers); modelled XScale (simulated time, "
                  f"one update at a time): {m.rate:,.0f} updates/s "
                  f"(IXP2800 published: {IXP2800_RATE[r.family]:,})")
            if m.counters:
                counted = ", ".join(f"{key.replace('_', ' ')} {value:,.2f}"
                                    for key, value in m.counters.items() if key != "updates")
                print(f"  counted per update: {m.instructions:,.0f} instructions, "
                      f"{m.misses:.1f} D-cache misses, {m.work_cycles:,.0f} cycles of work "
                      f"besides the SRAM writes; {counted}")
        for r in rows:
            print(f"IPv{r.family} check: {r.check}")


# Updates per batched call (one reclaim after each).  The bands' batches are smaller: their
# IPv4 /0-/15 band is short prefixes only, and 1,000 of those changed before one reclaim
# retire more Poptrie blocks than the IPv4 table's 8 MB channel has free (1.33 MiB with the
# 8-word node), so `apply` stops with "the Poptrie memory is full".
MIX_BATCH = 1_000
BAND_BATCH = 100


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=30_000,
                        help="updates per family and run (default 30000)")
    parser.add_argument("--batch", type=int, default=None,
                        help=f"updates per batched call (default {MIX_BATCH}; with --bands "
                             f"{BAND_BATCH})")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--table", type=Path, default=REAL_TABLE)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--structure", choices=(*STRUCTURES, "both"), default=DEFAULT_STRUCTURE,
                        help="lpm_poptrie.mbl's Poptries (the chip router's; default), "
                             "lpm.mbl's 16-8-8 tries, or both")
    parser.add_argument("--bands", action="store_true",
                        help="updates/s per prefix-length band beside DPDK (update_bands.py)")
    parser.add_argument("--band-updates", type=int, default=2_000,
                        help="table prefixes per band, each deleted and added back")
    parser.add_argument("--no-dpdk", action="store_true", help="--bands without DPDK")
    parser.add_argument("--band-runs", type=int, default=3,
                        help="--bands: runs, each side and family in a fresh process "
                             "(default 3; medians and the range are reported)")
    parser.add_argument("--band-worker", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worst", action="store_true",
                        help="the slowest single updates: every short table prefix (IPv4 up "
                             "to /12, IPv6 to /20) deleted and added back, min of 3 tries")
    parser.add_argument("--family", type=int, choices=(4, 6), default=None,
                        help="one family's table only (default: both)")
    args = parser.parse_args(argv)
    if args.band_worker is not None:  # one side of --bands, started by fair_bands
        return band_worker(args.band_worker)
    if args.batch is None:
        args.batch = BAND_BATCH if args.bands else MIX_BATCH
    if not args.table.is_file():
        print(f"error: no route table at {args.table} (pass --table)", file=sys.stderr)
        return 1
    if min(args.updates, args.batch, args.runs, args.band_runs) < 1:
        print("error: --updates, --batch, --runs and --band-runs must be at least 1",
              file=sys.stderr)
        return 1
    routes = read_routes(args.table)
    v4 = routes.v4 if args.family in (None, 4) else {}
    v6 = routes.v6 if args.family in (None, 6) else {}
    structures = STRUCTURES if args.structure == "both" else (args.structure,)
    if args.bands:
        return bands(v4, v6, structures, args)
    if args.worst:
        return worst(v4, v6, structures)
    results = [measure(family, table, args.updates, args.batch, args.runs, args.seed,
                       structure)
               for structure in structures
               for family, table in ((4, v4), (6, v6)) if table]
    report(results, args.table, args.batch, args.runs)
    return 0 if all(r.check.startswith("ok") for r in results) else 1


def worst(v4: dict[Prefix, int], v6: dict[Prefix, int], structures: tuple[str, ...]) -> int:
    """The slowest single updates per structure and family (update_bands.worst_updates)."""
    for structure in structures:
        for family, table in ((4, v4), (6, v6)):
            if not table:
                continue
            mgr, _ = load(family, table, log=False, structure=structure)
            shown = worst_updates(mgr, table, family)
            count = sum(1 for _, n in table if n <= WORST_UP_TO[family])
            print(f"{structure} IPv{family}, {count} prefixes up to /{WORST_UP_TO[family]}, "
                  f"slowest (min of 3 tries, wall): " + "; ".join(
                      f"{op} {prefix_text(family, p)} {us:.1f} us" for us, op, p in shown))
    return 0


def prefix_text(family: int, prefix: Prefix) -> str:
    value, length = prefix
    return f"{ipaddress.ip_address(value) if family == 4 else ipaddress.IPv6Address(value)}" \
        f"/{length}"


def bands(v4: dict[Prefix, int], v6: dict[Prefix, int], structures: tuple[str, ...],
          args: argparse.Namespace) -> int:
    """The per-band comparison (bench/update_bands.py), each side and family in fresh
    processes (`fair_bands`), then the medians over the runs (`report_band_runs`)."""
    picked = {4: band_samples(v4, 4, args.band_updates, args.seed),
              6: band_samples(v6, 6, args.band_updates, args.seed + 1)}
    tables = {family: table for family, table in ((4, v4), (6, v6)) if table}
    results, builds = fair_bands(tables, picked, structures, args.batch, args.band_runs,
                                 not args.no_dpdk)
    report_band_runs(results, builds, args.batch, args.band_runs)
    return 0


def fair_bands(tables: dict[int, dict[Prefix, int]], picked: dict[int, dict[Prefix, int]],
               structures: tuple[str, ...], batch: int, runs: int, dpdk: bool = True
               ) -> tuple[list[BandResult], dict[int, list[float]]]:
    """`runs` rounds; in each, per family, DPDK (its C program on that family's table only)
    and each structure's manager (`band_worker`: a new Python process that loads only that
    family's table) measure the same sampled prefixes in the same order, each in a process
    of its own, so no figure depends on what another measurement built before it.  The
    sides take turns going first from round to round.  Returns every row (`run` set) and
    DPDK's build seconds per family."""
    results: list[BandResult] = []
    builds: dict[int, list[float]] = {}
    for run in range(runs):
        for family, table in tables.items():
            sides: list[Callable[[], list[BandResult]]] = [
                functools.partial(_worker_rows, family, table, picked[family], s, batch)
                for s in structures]
            if dpdk:
                sides.insert(0, functools.partial(_dpdk_rows, family, table, picked[family],
                                                  builds))
            if run % 2:
                sides.reverse()
            for side in sides:
                results += [dataclasses.replace(r, run=run) for r in side()]
    return results, builds


def _dpdk_rows(family: int, table: dict[Prefix, int], picked: dict[Prefix, int],
               builds: dict[int, list[float]]) -> list[BandResult]:
    rows, built = (dpdk_bands(table, {}, picked, {}) if family == 4
                   else dpdk_bands({}, table, {}, picked))
    builds.setdefault(family, []).append(built[family])
    return rows


def _worker_rows(family: int, table: dict[Prefix, int], picked: dict[Prefix, int],
                 structure: str, batch: int) -> list[BandResult]:
    """One `band_worker` process's rows."""
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.pickle"
        job.write_bytes(pickle.dumps((family, table, picked, structure, batch)))
        run = subprocess.run([sys.executable, "-m", "npkit.bench.route_updates",
                              "--band-worker", str(job)], capture_output=True, text=True)
    if run.returncode:
        raise RuntimeError(f"the IPv{family} {structure} band worker failed "
                           f"(exit {run.returncode}): {run.stderr.strip()}")
    return [BandResult(**json.loads(line[len("ROW "):]))
            for line in run.stdout.splitlines() if line.startswith("ROW ")]


def band_worker(job: Path) -> int:
    """The process `fair_bands` starts per structure and family: load that family's table
    into a new manager, measure the bands (npkit_bands), print one `ROW {json}` per band."""
    family, table, picked, structure, batch = pickle.loads(job.read_bytes())
    mgr, _ = load(family, table, log=False, structure=structure)
    rows = npkit_bands(mgr, structure, table, family, picked, batch)
    if mgr.routes(family) != table:
        print(f"error: the {structure} IPv{family} table differs after the bands",
              file=sys.stderr)
        return 1
    for row in rows:
        print("ROW " + json.dumps(dataclasses.asdict(row)))
    return 0


def report_band_runs(results: list[BandResult], builds: dict[int, list[float]], batch: int,
                     runs: int) -> None:
    """Per band and side the median over the runs (and the lowest and highest run) of the
    CPU-time rates; beside DPDK the median of the runs' ratios (each run's npkit figure over
    the same run's DPDK figure) and their range."""
    print("route updates per prefix-length band: each sampled table prefix deleted, then "
          "added back (2 updates), the same prefixes in the same order on every side")
    print(f"each side and family measured in a fresh process of its own, {runs} runs "
          "(sides alternate which goes first); figures are medians over the runs "
          "[lowest-highest run]; rates per CPU second of the process (wall in brackets); "
          f"batched = mgr.apply (Poptrie: apply_columns) of {batch:,}; latency of one "
          "update, wall time, us (medians over the runs)")
    for family, seconds in sorted(builds.items()):
        print(f"  (DPDK full-table build, IPv{family}: "
              f"{', '.join(f'{s:.1f}' for s in seconds)} s)")
    median = statistics.median
    groups: dict[tuple[int, int, str], list[BandResult]] = {}
    for r in results:
        groups.setdefault((r.family, r.band, r.side), []).append(r)
    print(f"{'band':<13} {'side':<9} {'runs':>4} {'per call /s':>27} {'(wall /s)':>11} "
          f"{'batched /s':>27} {'vs DPDK, per call':>25} {'batched':>20} {'p50':>6} "
          f"{'p99':>6} {'max':>7}")

    def spread(values: list[float]) -> str:
        return f"{median(values):,.0f} [{min(values):,.0f}-{max(values):,.0f}]"

    def ratios(values: list[float]) -> str:
        return f"{median(values):.2f}x [{min(values):.2f}-{max(values):.2f}]"

    def dpdk_side(family: int) -> str:
        return "rte_lpm" if family == 4 else "rte_lpm6"

    for (family, band, side), rows in sorted(
            groups.items(), key=lambda kv: (*kv[0][:2], kv[0][2] != dpdk_side(kv[0][0]))):
        low, high = BANDS[family][band]
        dpdk = {r.run: r for r in groups.get((family, band, dpdk_side(family)), [])}
        paired = [(r, dpdk[r.run]) for r in rows if r.run in dpdk and r.side != dpdk[r.run].side]
        vs_call = ratios([r.cpu_rate / d.cpu_rate for r, d in paired]) if paired else ""
        vs_batch = (ratios([r.batched_cpu_rate / d.cpu_rate for r, d in paired])
                    if paired else "")
        print(f"{f'IPv{family} /{low}-/{high}':<13} {side:<9} {len(rows):>4} "
              f"{spread([r.cpu_rate for r in rows]):>27} "
              f"{f'({median([r.wall_rate for r in rows]):,.0f})':>11} "
              f"{spread([r.batched_cpu_rate for r in rows]):>27} {vs_call:>25} "
              f"{vs_batch:>20} {median([r.p50_us for r in rows]):>6.2f} "
              f"{median([r.p99_us for r in rows]):>6.1f} "
              f"{median([r.max_us for r in rows]):>7.1f}")
    print("DPDK has no batch call: its batched column repeats its per-call rate")


if __name__ == "__main__":
    sys.exit(main())
