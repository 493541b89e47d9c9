"""Compact LPM candidates on the real table (issue 19; docs/lpm.md, "Choosing a compact LPM").

    python -m npkit.bench.lpm_candidates [--table PATH] [--traffic 100000] [--updates 2000]
                                         [--seed 2024]

For IPv4 and IPv6 separately, from the real 2024 table (next hops by the documented rule):

* memory and bytes per prefix of: the 16-8-8 leaf-pushed trie (npkit.runtime.lpm, built),
  Poptrie (npkit.runtime.poptrie, built), and, counted from the built leaf-pushed tries'
  words as the papers lay them out: DIR-24-8 (rte_lpm: 16 M x 4 B tbl24 + 256-entry tbl8
  groups of 4 B), SAIL_L (Yang et al., SIGCOMM 2014: 16/24/32 pivot-pushed arrays of 2-byte
  entries (1 byte at 32); its on-chip bitmaps need 2^24 bits, which the IXP2800 lacks, so
  each level is a dependent off-chip read), DXR (Zec et al., 2012: D18R, a 2^18 direct
  table of 4 B and 4-byte range entries (16-bit start, 16-bit hop), a binary search per
  lookup);
* dependent memory reads per lookup, by prefix (a lookup of each prefix's first address,
  walking the built words; counted for the analytic ones) and by traffic (destinations
  drawn uniformly inside uniformly drawn prefixes), as the share at <= 1, 2, 3, ... reads;
* build time (host), and updates per second per prefix-length band for the built ones
  (delete and re-add --updates prefixes of the band, each followed by reclaim; both keep
  a write log, as the chip's shadow does) with the mean 32-bit words written to chip memory
  per update.

Reported as text; docs/lpm.md quotes it.  A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections import Counter
from collections.abc import Callable

import numpy as np

from npkit.runtime.lpm import CHILD, IPV4, IPV6, POINTER_MASK, MultibitTrie
from npkit.runtime.poptrie import POPTRIE4, POPTRIE6, Poptrie, walk
from npkit.runtime.routes import REAL_TABLE, read_routes

Routes = dict[tuple[int, int], int]
BANDS = {32: [(0, 15), (16, 24), (25, 32)], 128: [(0, 31), (32, 48), (49, 128)]}


def trie_reads(trie: MultibitTrie, bits: int, address: int) -> int:
    words, shape = trie.words, trie.shape
    word = int(words[address >> (bits - shape.strides[0])])
    reads, used = 1, shape.strides[0]
    while word & CHILD:
        used += shape.strides[1]
        word = int(words[(word & POINTER_MASK) + ((address >> (bits - used)) & 0xFF)])
        reads += 1
    return reads


def share(counts: Counter[int]) -> str:
    total = sum(counts.values())
    out, running = [], 0
    for reads in sorted(counts):
        running += counts[reads]
        out.append(f"<={reads}: {100 * running / total:.2f}%")
    return ", ".join(out)


def traffic(routes: Routes, bits: int, count: int, rng: random.Random) -> list[int]:
    keys = list(routes)
    out = []
    for _ in range(count):
        network, length = rng.choice(keys)
        out.append(network | rng.getrandbits(bits - length) if length < bits else network)
    return out


def ply_levels(trie: MultibitTrie) -> list[int]:
    """Plies per level (level 1 = under the root) of a built 16-8-...-8 trie."""
    words = trie.words
    level = [int(w) & POINTER_MASK for w in words[:trie.shape.root_words] if w & CHILD]
    counts = []
    while level:
        counts.append(len(level))
        rows = words[np.add.outer(np.array(level, dtype=np.int64), np.arange(256))]
        level = (rows[(rows & CHILD) != 0] & POINTER_MASK).astype(np.int64).tolist()
    return counts


def dxr_ranges(pop: Poptrie) -> tuple[int, Counter[int]]:
    """D18R from the Poptrie's host expansion (same 18-bit direct split): per direct entry
    with a subtree, the number of ranges (runs of equal leaves over its addresses)."""
    host = pop._host  # noqa: SLF001 - the bench reads the expansion it was built from
    total, searches = 0, Counter()

    def runs(ply: int, last: int) -> tuple[int, int]:
        count = 0
        for word in host[ply:ply + 64].tolist():
            if word & CHILD:
                inner, last = runs(word & POINTER_MASK, last)
                count += inner
            elif word != last:
                count, last = count + 1, word
        return count, last

    for index in np.flatnonzero(host[:pop.shape.direct_words] & CHILD).tolist():
        n, _ = runs(int(host[index]) & POINTER_MASK, -1)
        total += n
        searches[math.ceil(math.log2(n + 1))] += 1
    return total, searches


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def update_rates(table, routes: Routes, bits: int, count: int, rng: random.Random) -> str:
    out = []
    for low, high in BANDS[bits]:
        band = [k for k in routes if low <= k[1] <= high]
        picked = rng.sample(band, min(count, len(band)))
        start = time.perf_counter()
        for key in picked:
            table.delete(*key)
            table.reclaim()
            table.add(*key, routes[key])
            table.reclaim()
        seconds = time.perf_counter() - start
        words = len(table.take_log().indices) / (2 * len(picked))
        out.append(f"/{low}-/{high}: {2 * len(picked) / seconds:,.0f}/s, {words:.1f} words")
    return ", ".join(out)


def family(name: str, routes: Routes, bits: int, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    n = len(routes)
    print(f"== {name}: {n} prefixes")
    shape = IPV4 if bits == 32 else IPV6
    trie = MultibitTrie(shape, np.zeros(1 << 24, dtype=np.uint32), log=True)
    seconds = timed(lambda: trie.build(routes))
    trie.take_log()
    pshape = POPTRIE4 if bits == 32 else POPTRIE6
    pop = Poptrie(pshape, np.zeros(1 << 23, dtype=np.uint32), log=True)
    pseconds = timed(lambda: pop.build(routes))
    pop.take_log()
    addresses = traffic(routes, bits, args.traffic, rng)

    def report(label: str, size: float, by_prefix: Counter[int], by_traffic: Counter[int],
               note: str) -> None:
        print(f"{label}: {size / 2**20:.2f} MB, {size / n:.1f} B/prefix; {note}")
        print(f"   reads by prefix:  {share(by_prefix)}")
        print(f"   reads by traffic: {share(by_traffic)}")

    starts = [network for network, _ in routes]
    report("16-8-8 leaf-pushed (lpm.py)", trie.bytes_used,
           Counter(trie_reads(trie, bits, a) for a in starts),
           Counter(trie_reads(trie, bits, a) for a in addresses), f"build {seconds:.2f} s")
    report(f"Poptrie D{pshape.direct_bits} k=6 (poptrie.py)", pop.bytes_used,
           Counter(walk(pop.words, pshape, a)[1] for a in starts),
           Counter(walk(pop.words, pshape, a)[1] for a in addresses),
           f"build {pseconds:.2f} s")
    plies = ply_levels(trie)
    if bits == 32:
        sail = 2 * 65536 + 2 * 256 * plies[0] + 256 * (plies[1] if len(plies) > 1 else 0)
        long24 = {network >> 8 for network, length in routes if length > 24}
        dir24 = 4 * (1 << 24) + 4 * 256 * len(long24)
        report("DIR-24-8 (rte_lpm), counted", dir24,
               Counter(2 if network >> 8 in long24 else 1 for network in starts),
               Counter(2 if a >> 8 in long24 else 1 for a in addresses),
               f"{len(long24)} tbl8 groups")
        report("SAIL_L without on-chip bitmaps, counted", sail,
               Counter(trie_reads(trie, bits, a) for a in starts),
               Counter(trie_reads(trie, bits, a) for a in addresses),
               f"chunks {plies[0]} at /24, {plies[1] if len(plies) > 1 else 0} at /32")
    ranges, searches = dxr_ranges(pop)
    dxr = 4 * pshape.direct_words + 4 * ranges
    print(f"DXR D{pshape.direct_bits}R, counted: {dxr / 2**20:.2f} MB, {dxr / n:.1f} B/prefix; "
          f"{ranges} ranges; binary-search reads per direct entry with ranges (+1 direct): "
          f"{share(searches)}")
    print(f"Poptrie updates (delete + add, reclaim each): "
          f"{update_rates(pop, routes, bits, args.updates, rng)}")
    print(f"16-8-8 updates (delete + add, reclaim each): "
          f"{update_rates(trie, routes, bits, args.updates, rng)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(REAL_TABLE))
    parser.add_argument("--traffic", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    routes = read_routes(args.table)
    family("IPv4", routes.v4, 32, args)
    family("IPv6", routes.v6, 128, args)


if __name__ == "__main__":
    main()
