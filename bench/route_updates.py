"""How many route updates per second the control plane applies to the real table (host time).

    python -m npkit.bench.route_updates [--updates 30000] [--batch 1000] [--runs 5]
                                        [--table PATH] [--seed 2024]
                                        [--structure 16-8-8|poptrie]

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
figures and the issue's goal; and, from a manager with a write log (the chip's shadow
copy), the mean number of 32-bit words written to chip memory per update, which is what
the XScale pays for; and the rate in modelled XScale time (`modelled_xscale_rate`: the
stream replayed through the control-processor model into a simulated chip).  After the runs
the trie is checked against a freshly built one on random addresses.  This is a benchmark,
not a test.  Results go to docs/performance.md, "Route updates".  `--structure poptrie`
measures the Poptries of microblocks/lpm_poptrie.mbl (8 MB memories, so the modelled chip
keeps the preset's 8 MB SRAM channels) through PoptrieRouteManager instead.
"""

from __future__ import annotations

import argparse
import copy
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from npkit.runtime.lpm import IPV4, IPV6
from npkit.runtime.route_manager import PoptrieRouteManager, RouteManager, RouteUpdate
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
from npkit.sim import Chip, ChipConfig

IXP2800_RATE = {4: 58_883, 6: 24_000}  # published route updates/s (issue 5)
GOAL_RATE = {4: 1_000_000, 6: 500_000}  # host time, issue 5
CHECK_ADDRESSES = 20_000

Prefix = tuple[int, int]


TRIE_WORDS = {4: 1 << 23, 6: 1 << 24}  # microblocks/lpm.mbl's fib4_trie / fib6_trie
POPTRIE_WORDS = 1 << 21                 # lpm_poptrie.mbl's fib4_poptrie / fib6_poptrie
STRUCTURES = ("16-8-8", "poptrie")


def new_manager(family: int, log: bool = False, structure: str = "16-8-8"
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
    """The updates as the arguments of one call each, built before the clock starts."""
    return [(u.family, u.network, u.length, u.next_hop) for u in updates]


def batched(mgr: RouteManager, updates: list[RouteUpdate], batch: int) -> None:
    for start in range(0, len(updates), batch):
        mgr.apply(updates[start:start + batch])
        mgr.reclaim()


def modelled_xscale_rate(family: int, table: dict[Prefix, int], updates: list[RouteUpdate],
                         chip_name: str = "ixp2800", structure: str = "16-8-8") -> float:
    """Updates/s in modelled time: the XScale model (npkit.runtime.xscale) applies the stream
    one update at a time to a chip whose SRAM channel 0 holds the trie -- the same path as
    npkit.runtime.chip_router: the route manager updates the host shadow, the XScale spends
    `[xscale] route_update_cycles`, then replays the update's write log into SRAM as posted
    writes (issue cost per word, at most `max_posted_writes` in flight, visible after the
    write latency, barriers kept).  Time runs from the first update to the last word
    visible.  For the 16-8-8 trie the channel is made 64 MB (the HRM's maximum) so the real
    table fits; a Poptrie fits the preset's channel."""
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

    def stream() -> Any:
        for update in updates:
            mgr.apply([update])
            mgr.reclaim()                       # no reader on this chip: no grace period
            log = mgr.take_log(family)  # type: ignore[arg-type]
            yield from cp.compute(cp.timing.route_update_cycles)
            if len(log.indices):
                last_visible[0] = yield from cp.sram_write(0, log.indices, log.values,
                                                           list(log.barriers))

    start = cp.now
    cp.process(stream())
    cp.run(until_idle=True)
    end = max(cp.now, last_visible[0])
    return len(updates) / ((end - start) / chip.config.clock_hz)


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
    modelled: float  # updates/s of simulated time on the modelled XScale
    check: str


def median_rate(mgr: RouteManager, work: list[Any], batch: int, runs: int,
                apply: Callable[[RouteManager, list[Any], int], None]) -> float:
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        apply(mgr, work, batch)
        rates.append(len(work) / (time.perf_counter() - start))
    return statistics.median(rates)


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


def load(family: int, table: dict[Prefix, int], log: bool, structure: str = "16-8-8"
         ) -> tuple[Any, float]:
    mgr = new_manager(family, log, structure)
    start = time.perf_counter()
    mgr.reload(table if family == 4 else None, table if family == 6 else None)
    return mgr, time.perf_counter() - start


def measure(family: int, table: dict[Prefix, int], count: int, batch: int, runs: int,
            seed: int, structure: str = "16-8-8") -> Result:
    mgr, load_seconds = load(family, table, log=False, structure=structure)
    updates = update_stream(table, family, count, seed)
    per_call = median_rate(mgr, rows_of(updates), batch, runs, one_per_call)
    in_batches = median_rate(mgr, updates, batch, runs, batched)
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
                  len(log.indices) / applied, len(log.barriers) / applied, modelled, check)


def report(results: list[Result], table: Path, batch: int, runs: int,
           structure: str = "16-8-8") -> None:
    print(f"route updates ({structure}) on {table.name}; Python {platform.python_version()}, "
          f"{platform.machine()}, one thread; host time, median of {runs} runs")
    print(f"{'':5} {'routes':>9} {'full load':>10} {'updates':>8} {'per call /s':>12} "
          f"{'batched /s':>11} {'logged /s':>10} {'IXP2800 /s':>11} {'goal /s':>10}")
    for r in results:
        print(f"IPv{r.family:<2} {r.routes:>9,} {r.load_seconds:>8.2f} s {r.updates:>8,} "
              f"{r.per_call:>12,.0f} {r.batched:>11,.0f} {r.per_call_logged:>10,.0f} "
              f"{IXP2800_RATE[r.family]:>11,} {GOAL_RATE[r.family]:>10,}")
    print(f"batched = {batch:,} updates per mgr.apply call and one reclaim per batch; "
          f"logged = one per call with the write log (chip shadow)")
    for r in results:
        print(f"IPv{r.family} words written per update: {r.words_per_update:.1f} "
              f"({r.barriers_per_update:.2f} barriers); modelled XScale (simulated time, "
              f"one update at a time): {r.modelled:,.0f} updates/s "
              f"(IXP2800 published: {IXP2800_RATE[r.family]:,})")
    for r in results:
        print(f"IPv{r.family} check: {r.check}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=30_000,
                        help="updates per family and run (default 30000)")
    parser.add_argument("--batch", type=int, default=1_000, help="updates per batched call")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--table", type=Path, default=REAL_TABLE)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--structure", choices=STRUCTURES, default="16-8-8",
                        help="lpm.mbl's 16-8-8 tries or lpm_poptrie.mbl's Poptries")
    args = parser.parse_args(argv)
    if not args.table.is_file():
        print(f"error: no route table at {args.table} (pass --table)", file=sys.stderr)
        return 1
    if min(args.updates, args.batch, args.runs) < 1:
        print("error: --updates, --batch and --runs must be at least 1", file=sys.stderr)
        return 1
    routes = read_routes(args.table)
    results = [measure(family, table, args.updates, args.batch, args.runs, args.seed,
                       args.structure)
               for family, table in ((4, routes.v4), (6, routes.v6)) if table]
    report(results, args.table, args.batch, args.runs, args.structure)
    return 0 if all(r.check.startswith("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
