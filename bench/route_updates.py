"""How many route updates per second the control plane applies to the real table (host time).

    python -m npkit.bench.route_updates [--updates 30000] [--batch 1000] [--runs 5]
                                        [--table PATH] [--seed 2024]

For IPv4 and IPv6 separately: the full real table (../shared/data/routes/
full-table-2024.txt.gz by default, next hops by the documented rule of npkit.runtime.routes)
is bulk-loaded into a host trie (npkit.runtime.lpm, the structure the microengines read),
then a stream of --updates route updates is applied, in equal parts:

* delete a prefix of the table, later add it back with its next hop;
* add a prefix from the seeded generator (npkit.runtime.routes.generate_routes) that the
  table lacks, later delete it;
* replace a prefix's next hop, later put the old one back.

The first halves of these pairs come first (shuffled), then the second halves (shuffled),
so every run starts from and ends at the same table.  Two ways to apply them:

* one update per call: `add`/`delete` then `reclaim()` (end of the grace period) each time;
* batched: one call per --batch updates, one `reclaim()` per batch.  runtime/lpm.py has no
  bulk-update path yet (issue 5 item 2, the route table manager), so the batched figure
  differs only by call and grace-period overhead.

Reported: updates per second in host time, median of --runs, beside the IXP2800's published
figures and the issue's goal.  Modelled XScale time is not available yet: there is no
control-processor model (issue 5 item 1).  After the runs the trie is checked against a
freshly built one on random addresses.  This is a benchmark, not a test.  Results go to
docs/performance.md, "Route updates (host time)".
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from npkit.runtime.lpm import MultibitTrie
from npkit.runtime.routes import (
    DEFAULT_NEXT_HOPS,
    DEFAULT_SEED,
    REAL_TABLE,
    build_trie,
    generate_routes,
    read_routes,
    reference_histogram,
)

IXP2800_RATE = {4: 58_883, 6: 24_000}  # published route updates/s (issue 5)
GOAL_RATE = {4: 1_000_000, 6: 500_000}  # host time, issue 5
CHECK_ADDRESSES = 20_000

Prefix = tuple[int, int]


@dataclass(frozen=True)
class Update:
    """One route update: next_hop None deletes the prefix, else adds or replaces it."""

    prefix: Prefix
    next_hop: int | None


def apply_update(trie: MultibitTrie, update: Update) -> None:
    if update.next_hop is None:
        trie.delete(*update.prefix)
    else:
        trie.add(*update.prefix, update.next_hop)


def one_per_call(trie: MultibitTrie, updates: list[Update], _batch: int) -> None:
    for update in updates:
        apply_update(trie, update)
        trie.reclaim()


def batched(trie: MultibitTrie, updates: list[Update], batch: int) -> None:
    for start in range(0, len(updates), batch):
        apply_batch(trie, updates[start:start + batch])


def apply_batch(trie: MultibitTrie, updates: list[Update]) -> None:
    for update in updates:
        apply_update(trie, update)
    trie.reclaim()


def update_stream(table: dict[Prefix, int], family: int, count: int,
                  seed: int) -> list[Update]:
    """`count` updates (rounded down to a multiple of 6) that leave `table` as it was."""
    rng = random.Random(seed)
    pairs = max(1, count // 6)
    existing = rng.sample(sorted(table), 2 * pairs)
    deleted, replaced = existing[:pairs], existing[pairs:]
    histogram = reference_histogram(family)  # type: ignore[arg-type]
    fresh = generate_routes(family, 2 * pairs + len(table) // 10, seed + 1,  # type: ignore
                            histogram)
    added = [p for p in fresh if p not in table][:pairs]
    first = ([Update(p, None) for p in deleted]
             + [Update(p, fresh[p]) for p in added]
             + [Update(p, (table[p] + 1) % DEFAULT_NEXT_HOPS) for p in replaced])
    second = ([Update(p, table[p]) for p in deleted]
              + [Update(p, None) for p in added]
              + [Update(p, table[p]) for p in replaced])
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
    check: str


def median_rate(trie: MultibitTrie, updates: list[Update], batch: int, runs: int,
                apply: Callable[[MultibitTrie, list[Update], int], None]) -> float:
    rates = []
    for _ in range(runs):
        start = time.perf_counter()
        apply(trie, updates, batch)
        rates.append(len(updates) / (time.perf_counter() - start))
    return statistics.median(rates)


def check_against_rebuild(trie: MultibitTrie, table: dict[Prefix, int], family: int,
                          seed: int) -> str:
    """Compare lookups with a trie built from scratch, on addresses inside table prefixes."""
    if trie.routes != table:
        return "FAILED: the route set differs from the table after the runs"
    fresh = build_trie(table, family)  # type: ignore[arg-type]
    rng = random.Random(seed)
    bits = trie.shape.key_bits
    for value, length in rng.sample(sorted(table), min(CHECK_ADDRESSES, len(table))):
        address = value | rng.getrandbits(bits - length) if length < bits else value
        if trie.lookup(address) != fresh.lookup(address):
            return f"FAILED at address {address:#x}"
    return f"ok ({min(CHECK_ADDRESSES, len(table)):,} addresses agree with a rebuilt trie)"


def measure(family: int, table: dict[Prefix, int], count: int, batch: int, runs: int,
            seed: int) -> Result:
    start = time.perf_counter()
    trie = build_trie(table, family)  # type: ignore[arg-type]
    load = time.perf_counter() - start
    updates = update_stream(table, family, count, seed)
    per_call = median_rate(trie, updates, batch, runs, one_per_call)
    in_batches = median_rate(trie, updates, batch, runs, batched)
    check = check_against_rebuild(trie, table, family, seed)
    return Result(family, len(table), load, len(updates), per_call, in_batches, check)


def report(results: list[Result], table: Path, batch: int, runs: int) -> None:
    print(f"route updates on {table.name}; Python {platform.python_version()}, "
          f"{platform.machine()}, one thread; host time, median of {runs} runs")
    print("modelled XScale time: not available yet (no control-processor model, "
          "issue 5 item 1)")
    print(f"{'':5} {'routes':>9} {'full load':>10} {'updates':>8} {'per call /s':>12} "
          f"{'batched /s':>11} {'IXP2800 /s':>11} {'goal /s':>10}")
    for r in results:
        print(f"IPv{r.family:<2} {r.routes:>9,} {r.load_seconds:>8.2f} s {r.updates:>8,} "
              f"{r.per_call:>12,.0f} {r.batched:>11,.0f} {IXP2800_RATE[r.family]:>11,} "
              f"{GOAL_RATE[r.family]:>10,}")
    print(f"batched = {batch:,} updates per call and one reclaim per batch")
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
    args = parser.parse_args(argv)
    if not args.table.is_file():
        print(f"error: no route table at {args.table} (pass --table)", file=sys.stderr)
        return 1
    if min(args.updates, args.batch, args.runs) < 1:
        print("error: --updates, --batch and --runs must be at least 1", file=sys.stderr)
        return 1
    routes = read_routes(args.table)
    results = [measure(family, table, args.updates, args.batch, args.runs, args.seed)
               for family, table in ((4, routes.v4), (6, routes.v6)) if table]
    report(results, args.table, args.batch, args.runs)
    return 0 if all(r.check.startswith("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
