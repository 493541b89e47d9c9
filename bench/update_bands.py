"""Route updates per prefix-length band, npkit beside DPDK's rte_lpm / rte_lpm6 (issue 19).

    python -m npkit.bench.route_updates --bands [--band-updates 2000] [--batch 1000]
                                        [--structure 16-8-8|poptrie|both] [--band-runs 3]
                                        [--no-dpdk]

Per family, up to --band-updates prefixes of the real table are sampled per band (IPv4
/0-/15, /16-/24, /25-/32; IPv6 /0-/31, /32-/48, /49-/128; bench/lpm_dpdk.py's BANDS), and
each is deleted, then added back with its next hop: 2 updates per prefix, the table the
same before and after.  The same samples, in the same order, go to:

* DPDK (Debian's dpdk-dev; a small C program compiled here, run without hugepages or PCI):
  the full table built into rte_lpm / rte_lpm6, then per band every rte_lpm_delete /
  rte_lpm_add timed on its own (clock_gettime), and the band's CPU time
  (CLOCK_PROCESS_CPUTIME_ID);
* npkit's route manager (npkit.runtime.route_manager) for each structure: one update per
  call (`mgr.delete` / `mgr.add` then `mgr.reclaim()`, each timed on its own), and batched:
  the same updates in the same order (each prefix deleted, then added back), --batch per
  call (`mgr.apply`; a Poptrie manager's `apply_columns`, the batches converted to columns
  before the clock starts), then `reclaim()`.  (Until 2026-11-27 the batches were --batch
  deletes, then the adds back: each add then found its prefix's lines cold again, which
  made batches look slower than single calls.)

Reported per band and side: updates/s of CPU time (the process's own time: robust on a
shared box where the scheduler takes the core away) and of wall time, from a pass without
clock calls; and from a second pass, each update timed on its own, the single-update
latency distribution (median, p99, p99.9, max of wall time).  On a loaded
box the tail is mostly the scheduler: a time slice taken away in the middle of one update
shows up as that update's time (Linux CFS slices are a few ms).  DPDK has no batch call,
so its "batched" column repeats the per-call rate.  Each row also carries a digest of the
prefixes it measured, in order (`prefix_digest`; the DPDK program computes the same over
its records), and the process id that measured it.

How it is run (route_updates.fair_bands, since 2026-11-28): every side and family in a
fresh process of its own -- DPDK's program given one family's table, and per structure a
new Python process (`route_updates.py --band-worker`) that loads only that family's table
-- repeated --band-runs times (the sides taking turns going first), and the medians over
the runs reported with the lowest and highest run and the per-run ratio to DPDK.  Before,
one process measured the IPv4 bands and then the IPv6 ones on both sides, and the IPv6
figures moved with what the IPv4 runs had built (rte_lpm's 64 MB table, the 900 K-route
trie): 0.88-0.91x rte_lpm6 in the full run against 1.63-1.71x with IPv6 alone (09:31-09:34
UTC on 28 Nov, docs/performance.md).  A benchmark, not a test.
"""

from __future__ import annotations

import functools
import os
import random
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npkit.bench.lpm_dpdk import BANDS, C_FILES_AND_RECORDS, C_HEADERS, pack4, pack6
from npkit.runtime.route_manager import RouteUpdate, update_columns

Prefix = tuple[int, int]

C_SOURCE = C_HEADERS + r"""
#include <unistd.h>

static double clock_of(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double now(void) { return clock_of(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_of(CLOCK_PROCESS_CPUTIME_ID); }
static void check(int status, const char *what) {
  if (status < 0) { fprintf(stderr, "%s failed\n", what); exit(1); }
}
""" + C_FILES_AND_RECORDS + r"""
/* FNV-1a (64 bit) over the band's prefixes in the order measured: per prefix its address
   bytes, most significant first, then its length (update_bands.prefix_digest). */
static uint64_t fnv(uint64_t h, uint8_t byte) { return (h ^ byte) * 0x100000001b3ULL; }
static uint64_t digest4(const struct r4 *u, size_t n, int band) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    if (u[i].band != band) continue;
    for (int s = 24; s >= 0; s -= 8) h = fnv(h, (uint8_t)(u[i].ip >> s));
    h = fnv(h, u[i].len);
  }
  return h;
}
static uint64_t digest6(const struct r6 *u, size_t n, int band) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++) {
    if (u[i].band != band) continue;
    for (int b = 0; b < 16; b++) h = fnv(h, u[i].ip[b]);
    h = fnv(h, u[i].len);
  }
  return h;
}
/* One line per band: BAND family band count cpu_seconds wall_seconds p50 p99 p999 max (us)
   digest pid */
static void report(int family, int band, double *t, size_t n, double c, double w,
                   uint64_t digest) {
  if (!n) return;
  qsort(t, n, sizeof *t, cmp);
  printf("BAND %d %d %zu %.6f %.6f %.3f %.3f %.3f %.3f %016llx %ld\n", family, band, n, c, w,
         t[n / 2] * 1e6, t[(size_t)(n * 0.99)] * 1e6, t[(size_t)(n * 0.999)] * 1e6,
         t[n - 1] * 1e6, (unsigned long long)digest, (long)getpid());
  fflush(stdout);
}

int main(int argc, char **argv) {
  int used = rte_eal_init(argc, argv);
  if (used < 0) { fprintf(stderr, "rte_eal_init failed\n"); return 1; }
  argc -= used; argv += used;
  if (argc != 5) { fprintf(stderr, "usage: r4 u4 r6 u6\n"); return 1; }
  size_t b;
  struct r4 *routes4 = slurp(argv[1], &b); size_t n4 = b / sizeof *routes4;
  struct r4 *upd4 = slurp(argv[2], &b); size_t u4 = b / sizeof *upd4;
  struct r6 *routes6 = slurp(argv[3], &b); size_t n6 = b / sizeof *routes6;
  struct r6 *upd6 = slurp(argv[4], &b); size_t u6 = b / sizeof *upd6;
  double *t = malloc(2 * (u4 > u6 ? u4 : u6) * sizeof *t + 8);

  if (n4) {
    struct rte_lpm_config c4 = {.max_rules = 2 * n4, .number_tbl8s = 1 << 16, .flags = 0};
    double s = now();
    struct rte_lpm *lpm = rte_lpm_create("v4", 0, &c4);
    if (!lpm) { fprintf(stderr, "rte_lpm_create failed\n"); return 1; }
    for (size_t i = 0; i < n4; i++)
      if (rte_lpm_add(lpm, routes4[i].ip, routes4[i].len, routes4[i].nh) < 0) {
        fprintf(stderr, "rte_lpm_add failed\n"); return 1; }
    printf("BUILD 4 %.2f\n", now() - s);
    fflush(stdout);
    for (int band = 0; band < 3; band++) {
      size_t n = 0;
      double c0 = cpu(), w0 = now();  /* the rate: a pass without the clock calls */
      for (size_t i = 0; i < u4; i++) {
        if (upd4[i].band != band) continue;
        check(rte_lpm_delete(lpm, upd4[i].ip, upd4[i].len), "rte_lpm_delete");
        check(rte_lpm_add(lpm, upd4[i].ip, upd4[i].len, upd4[i].nh), "rte_lpm_add");
      }
      double c = cpu() - c0, w = now() - w0;
      for (size_t i = 0; i < u4; i++) {  /* the latencies: each update timed */
        if (upd4[i].band != band) continue;
        double a = now();
        check(rte_lpm_delete(lpm, upd4[i].ip, upd4[i].len), "rte_lpm_delete");
        double m = now();
        check(rte_lpm_add(lpm, upd4[i].ip, upd4[i].len, upd4[i].nh), "rte_lpm_add");
        double e = now();
        t[n++] = m - a;
        t[n++] = e - m;
      }
      report(4, band, t, n, c, w, digest4(upd4, u4, band));
    }
    rte_lpm_free(lpm);
  }
  if (n6) {
    struct rte_lpm6_config c6 = {.max_rules = 2 * n6, .number_tbl8s = 1 << 17, .flags = 0};
    double s = now();
    struct rte_lpm6 *lpm6 = rte_lpm6_create("v6", 0, &c6);
    if (!lpm6) { fprintf(stderr, "rte_lpm6_create failed\n"); return 1; }
    for (size_t i = 0; i < n6; i++)
      if (rte_lpm6_add(lpm6, routes6[i].ip, routes6[i].len, routes6[i].nh) < 0) {
        fprintf(stderr, "rte_lpm6_add failed\n"); return 1; }
    printf("BUILD 6 %.2f\n", now() - s);
    fflush(stdout);
    for (int band = 0; band < 3; band++) {
      size_t n = 0;
      double c0 = cpu(), w0 = now();  /* the rate: a pass without the clock calls */
      for (size_t i = 0; i < u6; i++) {
        if (upd6[i].band != band) continue;
        check(rte_lpm6_delete(lpm6, upd6[i].ip, upd6[i].len), "rte_lpm6_delete");
        check(rte_lpm6_add(lpm6, upd6[i].ip, upd6[i].len, upd6[i].nh), "rte_lpm6_add");
      }
      double c = cpu() - c0, w = now() - w0;
      for (size_t i = 0; i < u6; i++) {  /* the latencies: each update timed */
        if (upd6[i].band != band) continue;
        double a = now();
        check(rte_lpm6_delete(lpm6, upd6[i].ip, upd6[i].len), "rte_lpm6_delete");
        double m = now();
        check(rte_lpm6_add(lpm6, upd6[i].ip, upd6[i].len, upd6[i].nh), "rte_lpm6_add");
        double e = now();
        t[n++] = m - a;
        t[n++] = e - m;
      }
      report(6, band, t, n, c, w, digest6(upd6, u6, band));
    }
  }
  return 0;
}
"""


@dataclass(frozen=True)
class BandResult:
    """One side's figures for one band."""

    side: str
    family: int
    band: int
    updates: int
    cpu_rate: float  # updates per CPU second (one per call)
    wall_rate: float
    batched_cpu_rate: float
    p50_us: float
    p99_us: float
    p999_us: float
    max_us: float
    digest: str = ""  # prefix_digest of the band's prefixes as this side measured them
    pid: int = 0  # the process that measured them
    run: int = 0  # which of the fresh-process runs (fair_bands)


FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3


def prefix_digest(family: int, prefixes: list[Prefix]) -> str:
    """FNV-1a (64 bit) over the prefixes in order: per prefix its address bytes, most
    significant first, then its length -- what the DPDK program computes over the records it
    measured (digest4 / digest6), so the two sides' rows can be compared."""
    h = FNV_OFFSET
    for value, length in prefixes:
        for byte in value.to_bytes(4 if family == 4 else 16, "big") + bytes([length]):
            h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def batches(mgr: Any, updates: list[RouteUpdate], batch: int) -> list[Callable[[], int]]:
    """One call per `batch` updates, made ready to run: `mgr.apply(slice)`, or with a
    Poptrie manager `mgr.apply_columns(*columns)` (no Python object read per update)."""
    chunks = [updates[start:start + batch] for start in range(0, len(updates), batch)]
    if hasattr(mgr, "apply_columns"):
        return [functools.partial(mgr.apply_columns, *update_columns(c)) for c in chunks]
    return [functools.partial(mgr.apply, c) for c in chunks]


def band_samples(table: dict[Prefix, int], family: int, count: int,
                 seed: int) -> dict[Prefix, int]:
    """prefix -> band index, up to `count` table prefixes per band, in a seeded order."""
    rng = random.Random(seed)
    out: dict[Prefix, int] = {}
    for band, (low, high) in enumerate(BANDS[family]):
        keys = sorted(k for k in table if low <= k[1] <= high)
        out.update({k: band for k in rng.sample(keys, min(count, len(keys)))})
    return out


def percentiles(times_ns: list[int]) -> tuple[float, float, float, float]:
    t = sorted(times_ns)
    n = len(t)
    return (t[n // 2] / 1e3, t[int(n * 0.99)] / 1e3, t[int(n * 0.999)] / 1e3, t[-1] / 1e3)


def npkit_bands(mgr, side: str, table: dict[Prefix, int], family: int,
                picked: dict[Prefix, int], batch: int) -> list[BandResult]:
    """One manager's figures per band (the table loaded; it is the same afterwards)."""
    out = []
    add, delete, reclaim = mgr.add, mgr.delete, mgr.reclaim
    clock = time.perf_counter_ns
    for band in range(len(BANDS[family])):
        keys = [k for k, b in picked.items() if b == band]
        if not keys:
            continue
        rows = [(family, v, n, table[(v, n)]) for v, n in keys]
        c0, w0 = time.process_time(), time.perf_counter()  # the rate: no clock calls
        for f, v, n, hop in rows:
            delete(f, v, n)
            reclaim()
            add(f, v, n, hop)
            reclaim()
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        times: list[int] = []  # the latencies: a second pass, each update timed
        record = times.append
        for f, v, n, hop in rows:
            a = clock()
            delete(f, v, n)
            reclaim()
            m = clock()
            add(f, v, n, hop)
            reclaim()
            e = clock()
            record(m - a)
            record(e - m)
        pairs = [u for v, n in keys for u in (  # the per-call passes' order
            RouteUpdate("delete", family, v, n),  # type: ignore[arg-type]
            RouteUpdate("add", family, v, n, table[(v, n)]))]  # type: ignore[arg-type]
        calls = batches(mgr, pairs, batch)
        c0 = time.process_time()
        for call in calls:
            call()
            reclaim()
        batched = time.process_time() - c0
        out.append(BandResult(side, family, band, len(times), len(times) / cpu,
                              len(times) / wall, 2 * len(keys) / batched, *percentiles(times),
                              prefix_digest(family, keys), os.getpid()))
    return out


def dpdk_bands(v4: dict[Prefix, int], v6: dict[Prefix, int], up4: dict[Prefix, int],
               up6: dict[Prefix, int]) -> tuple[list[BandResult], dict[int, float]]:
    """rte_lpm / rte_lpm6 on the same table and samples: per band figures and build
    seconds per family.  Needs pkg-config libdpdk and a C compiler."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "r4").write_bytes(pack4(v4))
        (d / "u4").write_bytes(pack4({k: v4[k] for k in up4}, up4))
        (d / "r6").write_bytes(pack6(v6))
        (d / "u6").write_bytes(pack6({k: v6[k] for k in up6}, up6))
        (d / "upd.c").write_text(C_SOURCE)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"], check=True,
                               capture_output=True, text=True).stdout.split()
        subprocess.run(["cc", "-O3", "-march=native", "-o", str(d / "upd"), str(d / "upd.c"),
                        *flags], check=True)
        run = subprocess.run([str(d / "upd"), "-l", "0", "--no-huge", "--no-pci",
                              "--no-shconf", "-m", "1024", "--log-level=1", "--",
                              *(str(d / f) for f in ("r4", "u4", "r6", "u6"))],
                             check=True, capture_output=True, text=True)
    results, builds = [], {}
    for line in run.stdout.splitlines():
        words = line.split()
        if words[:1] == ["BUILD"]:
            builds[int(words[1])] = float(words[2])
        elif words[:1] == ["BAND"]:
            family, band, n = int(words[1]), int(words[2]), int(words[3])
            cpu, wall = float(words[4]), float(words[5])
            p50, p99, p999, worst = map(float, words[6:10])
            side = "rte_lpm" if family == 4 else "rte_lpm6"
            results.append(BandResult(side, family, band, n, n / cpu, n / wall, n / cpu,
                                      p50, p99, p999, worst, words[10], int(words[11])))
    return results, builds


WORST_UP_TO = {4: 12, 6: 20}  # the prefixes whose updates can take longest: the short ones


def worst_updates(mgr, table: dict[Prefix, int], family: int, tries: int = 3,
                  show: int = 3) -> list[tuple[float, str, Prefix]]:
    """Every table prefix up to WORST_UP_TO[family] deleted and added back, each update
    timed `tries` times (undone in between) and the minimum kept, so that a try the
    scheduler preempted does not count: the `show` slowest as (microseconds, op, prefix).
    The table is the same afterwards."""
    clock = time.perf_counter_ns
    out = []
    for value, length in sorted(k for k in table if k[1] <= WORST_UP_TO[family]):
        hop = table[(value, length)]
        for op in ("delete", "add"):
            best = None
            for attempt in range(tries):
                start = clock()
                if op == "delete":
                    mgr.delete(family, value, length)
                else:
                    mgr.add(family, value, length, hop)
                mgr.reclaim()
                spent = clock() - start
                best = spent if best is None else min(best, spent)
                if attempt < tries - 1:  # undo, to time the same update again
                    if op == "delete":
                        mgr.add(family, value, length, hop)
                    else:
                        mgr.delete(family, value, length)
                    mgr.reclaim()
            out.append((best / 1e3, op, (value, length)))
    return sorted(out)[-show:]
