"""DPDK's rte_lpm / rte_lpm6 beside npkit's route tables, same table, same addresses.

    python -m npkit.bench.lpm_dpdk [--lookups 1000000] [--updates 2000] [--table PATH] [--router]

Needs Debian's dpdk-dev (pkg-config libdpdk) and a C compiler; DPDK runs without hugepages
or PCI (--no-huge --no-pci --in-memory).  The same seeded destinations (uniform inside
uniform prefixes of the real 2024 table) and the same update samples (per prefix-length
band: --updates table prefixes, each deleted then added back) go to:

* a small C program (written and compiled here) that builds rte_lpm (IPv4) and rte_lpm6
  (IPv6) from the table and times rte_lpm_lookup one by one, rte_lpm_lookup_bulk,
  rte_lpm_lookupx4, rte_lpm6_lookup_bulk_func, and the delete + add pairs per band;
* npkit, in the same process run right after it: the MBL Poptrie and 16-8-8 walkers,
  each as a lookup-only probe (a block whose packet is the key: bench/lpm_native_rate.py's
  driver, both batch drivers) and as the walker's MBL function (`fib4_lookup`,
  `fib6_lookup`) over the key array itself (NativeProgram.key_function: the like-for-like
  row beside rte_lpm_lookup_bulk, which also takes a key array; plain loop, slice
  pipeline and depth-staged driver), and the Poptrie / 16-8-8 updaters on the same
  samples; with --router also IPv4 forwarding through the MBL router (both structures,
  each with the prefetch pipeline and with 3 depth stages, 64-byte frames to the same
  destinations).

Host time, one thread, the median of --runs for lookups.  A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import random
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npkit.bench.lpm_native_rate import (
    DRIVERS,
    KEY_DRIVERS,
    PROBES,
    WALKER_FUNCTIONS,
    router_with,
)
from npkit.bench.native_fwd import (
    Batch,
    add_cpu_time_option,
    clock_of,
    key_rate,
    load_router,
    median_rate,
    udp_frame,
)
from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.native import KeyFunction, NativeProgram
from npkit.runtime.lpm import IPV4, IPV6, MultibitTrie, RouteTables
from npkit.runtime.poptrie import POPTRIE4, POPTRIE6, Poptrie
from npkit.runtime.routes import REAL_TABLE, read_routes

BANDS = {4: [(0, 15), (16, 24), (25, 32)], 6: [(0, 31), (32, 48), (49, 128)]}

# What both DPDK programs (this one's and update_bands.py's) start with: the headers, a file
# slurped whole, the packed prefix records pack4/pack6 write, and a comparison for qsort.
C_HEADERS = r"""
#include <rte_eal.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
"""
C_FILES_AND_RECORDS = r"""
static void *slurp(const char *path, size_t *bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(1); }
  fseek(f, 0, SEEK_END);
  *bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*bytes ? *bytes : 1);
  if (fread(p, 1, *bytes, f) != *bytes) { perror(path); exit(1); }
  fclose(f);
  return p;
}
struct r4 { uint32_t ip; uint8_t len, band; uint16_t nh; };
struct r6 { uint8_t ip[16]; uint8_t len, band; uint16_t nh; };
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
"""

C_SOURCE = C_HEADERS + r"""

static clockid_t lookup_clock = CLOCK_MONOTONIC;  /* or this thread's CPU time */
static double clock_now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double now(void) { return clock_now(CLOCK_MONOTONIC); }
static double lookup_now(void) { return clock_now(lookup_clock); }
""" + C_FILES_AND_RECORDS + r"""
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }

static void lookups(struct rte_lpm *lpm, const uint32_t *addrs4, size_t a4,
                    struct rte_lpm6 *lpm6, uint8_t (*addrs6)[16], size_t a6, int runs) {
  uint32_t *hops = malloc(a4 * 4);
  int32_t *hops6 = malloc(a6 * 4);
  double times[64], t;
  uint64_t sum = 0;
  for (int r = 0; r < runs; r++) {
    t = lookup_now();
    for (size_t i = 0; i < a4; i++) {
      uint32_t nh = 0;
      rte_lpm_lookup(lpm, addrs4[i], &nh);
      sum += nh;
    }
    times[r] = lookup_now() - t;
  }
  printf("rte_lpm_lookup one by one: %.1f M/s\n", a4 / median(times, runs) / 1e6);
  for (int r = 0; r < runs; r++) {
    t = lookup_now();
    for (size_t i = 0; i + 64 <= a4; i += 64) rte_lpm_lookup_bulk(lpm, addrs4 + i, hops + i, 64);
    times[r] = lookup_now() - t;
  }
  printf("rte_lpm_lookup_bulk (64): %.1f M/s\n", a4 / median(times, runs) / 1e6);
  for (int r = 0; r < runs; r++) {
    t = lookup_now();
    for (size_t i = 0; i + 4 <= a4; i += 4) {
      xmm_t ip = _mm_loadu_si128((const __m128i *)(addrs4 + i));
      rte_lpm_lookupx4(lpm, ip, hops + i, 0);
    }
    times[r] = lookup_now() - t;
  }
  printf("rte_lpm_lookupx4: %.1f M/s\n", a4 / median(times, runs) / 1e6);
  for (int r = 0; r < runs; r++) {
    t = lookup_now();
    for (size_t i = 0; i + 64 <= a6; i += 64)
      rte_lpm6_lookup_bulk_func(lpm6, addrs6 + i, hops6 + i, 64);
    times[r] = lookup_now() - t;
  }
  printf("rte_lpm6_lookup_bulk_func (64): %.1f M/s\n", a6 / median(times, runs) / 1e6);
  printf("(checksum %llu)\n", (unsigned long long)sum);
  fflush(stdout);
  free(hops);
  free(hops6);
}

int main(int argc, char **argv) {
  int used = rte_eal_init(argc, argv);
  if (used < 0) { fprintf(stderr, "rte_eal_init failed\n"); return 1; }
  argc -= used; argv += used;
  if (argc != 10) { fprintf(stderr, "usage\n"); return 1; }
  int runs = atoi(argv[7]);
  if (atoi(argv[8])) lookup_clock = CLOCK_THREAD_CPUTIME_ID;
  int serve = atoi(argv[9]);  /* then lookups again for each line on stdin */
  size_t b;
  struct r4 *routes4 = slurp(argv[1], &b); size_t n4 = b / sizeof *routes4;
  uint32_t *addrs4 = slurp(argv[2], &b); size_t a4 = b / 4;
  struct r6 *routes6 = slurp(argv[3], &b); size_t n6 = b / sizeof *routes6;
  uint8_t (*addrs6)[16] = slurp(argv[4], &b); size_t a6 = b / 16;
  struct r4 *upd4 = slurp(argv[5], &b); size_t u4 = b / sizeof *upd4;
  struct r6 *upd6 = slurp(argv[6], &b); size_t u6 = b / sizeof *upd6;

  struct rte_lpm_config c4 = {.max_rules = 2 * n4, .number_tbl8s = 1 << 16, .flags = 0};
  double t = now();
  struct rte_lpm *lpm = rte_lpm_create("v4", 0, &c4);
  if (!lpm) { fprintf(stderr, "rte_lpm_create failed\n"); return 1; }
  for (size_t i = 0; i < n4; i++)
    if (rte_lpm_add(lpm, routes4[i].ip, routes4[i].len, routes4[i].nh) < 0) {
      fprintf(stderr, "rte_lpm_add failed\n"); return 1; }
  printf("rte_lpm build: %.2f s\n", now() - t);
  for (int band = 0; band < 3; band++) {
    size_t count = 0; double worst = 0;
    t = now();
    for (size_t i = 0; i < u4; i++) {
      if (upd4[i].band != band) continue;
      double s = now();
      rte_lpm_delete(lpm, upd4[i].ip, upd4[i].len);
      double m = now();
      rte_lpm_add(lpm, upd4[i].ip, upd4[i].len, upd4[i].nh);
      double e = now();
      if (m - s > worst) worst = m - s;
      if (e - m > worst) worst = e - m;
      count += 2;
    }
    if (count) printf("rte_lpm updates band %d: %.0f/s (%zu, worst %.1f us)\n", band,
                      count / (now() - t), count, worst * 1e6);
  }

  struct rte_lpm6_config c6 = {.max_rules = 2 * n6, .number_tbl8s = 1 << 17, .flags = 0};
  t = now();
  struct rte_lpm6 *lpm6 = rte_lpm6_create("v6", 0, &c6);
  if (!lpm6) { fprintf(stderr, "rte_lpm6_create failed\n"); return 1; }
  for (size_t i = 0; i < n6; i++)
    if (rte_lpm6_add(lpm6, routes6[i].ip, routes6[i].len, routes6[i].nh) < 0) {
      fprintf(stderr, "rte_lpm6_add failed\n"); return 1; }
  printf("rte_lpm6 build: %.2f s\n", now() - t);
  for (int band = 0; band < 3; band++) {
    size_t count = 0; double worst = 0;
    t = now();
    for (size_t i = 0; i < u6; i++) {
      if (upd6[i].band != band) continue;
      double s = now();
      rte_lpm6_delete(lpm6, upd6[i].ip, upd6[i].len);
      double m = now();
      rte_lpm6_add(lpm6, upd6[i].ip, upd6[i].len, upd6[i].nh);
      double e = now();
      if (m - s > worst) worst = m - s;
      if (e - m > worst) worst = e - m;
      count += 2;
    }
    if (count) printf("rte_lpm6 updates band %d: %.0f/s (%zu, worst %.1f us)\n", band,
                      count / (now() - t), count, worst * 1e6);
  }
  fflush(stdout);
  if (!serve) {
    lookups(lpm, addrs4, a4, lpm6, addrs6, a6, runs);
    return 0;
  }
  char line[64];
  printf("ready\n");
  fflush(stdout);
  while (fgets(line, sizeof line, stdin)) {
    lookups(lpm, addrs4, a4, lpm6, addrs6, a6, runs);
    printf("done\n");
    fflush(stdout);
  }
  return 0;
}
"""


def pack4(routes: dict, band_of: dict | None = None) -> bytes:
    return b"".join(struct.pack("<IBBH", v, n, (band_of or {}).get((v, n), 0), h)
                    for (v, n), h in routes.items())


def pack6(routes: dict, band_of: dict | None = None) -> bytes:
    bands = band_of or {}
    return b"".join(v.to_bytes(16, "big") + struct.pack("<BBH", n, bands.get((v, n), 0), h)
                    for (v, n), h in routes.items())


def samples(routes: dict, family: int, count: int, rng: random.Random) -> dict:
    """(prefix -> band) for --updates table prefixes per band."""
    out = {}
    for band, (low, high) in enumerate(BANDS[family]):
        keys = sorted(k for k in routes if low <= k[1] <= high)
        out.update({k: band for k in rng.sample(keys, min(count, len(keys)))})
    return out


def destinations(routes: dict, bits: int, count: int, rng: random.Random) -> list[int]:
    keys = sorted(routes)
    out = []
    for _ in range(count):
        net, length = keys[rng.randrange(len(keys))]
        out.append(net | (rng.getrandbits(bits) & ((1 << (bits - length)) - 1)))
    return out


def npkit_updates(table, routes: dict, picked: dict, family: int) -> None:
    for band, (low, high) in enumerate(BANDS[family]):
        keys = [k for k, b in picked.items() if b == band]
        worst = 0.0
        start = time.perf_counter()
        for key in keys:
            s = time.perf_counter()
            table.delete(*key)
            table.reclaim()
            m = time.perf_counter()
            table.add(*key, routes[key])
            table.reclaim()
            e = time.perf_counter()
            worst = max(worst, m - s, e - m)
        seconds = time.perf_counter() - start
        print(f"  {type(table).__name__} updates /{low}-/{high}: "
              f"{2 * len(keys) / seconds:,.0f}/s (worst {worst * 1e6:.1f} us)")


# the router's batch drivers: stages flat (stages.flatten, the default) and branching
ROUTER_DRIVERS: tuple[tuple[dict, str], ...] = (
    ({"stages": 0}, "prefetch pipeline"), ({"stages": 3}, "staged (3)"),
    ({"stages": 3, "flat_stages": False}, "staged (3), branching stages"),
    ({"stages": 2}, "staged (2)"))


@dataclass
class Subject:
    """One npkit measurement: a loaded program and its batch."""

    label: str
    native: NativeProgram
    batch: Batch
    unit: str

    def rate(self, runs: int, clock) -> float:
        return median_rate(self.native, self.batch, runs, clock)[0]


@dataclass
class KeySubject:
    """One npkit measurement: an MBL function over a key array (one call, after a warm-up
    call; the median of `runs`)."""

    label: str
    function: KeyFunction
    keys: np.ndarray
    unit: str = "M lookups/s"

    def rate(self, runs: int, clock) -> float:
        return key_rate(self.function, self.keys, runs, clock)


def subjects(routes, dst4: list[int], dst6: list[int], router: bool,
             tmp: Path) -> list[Subject | KeySubject]:
    """The MBL walkers (lookup-only probes, both batch drivers; the walker's function over
    the key array, both key drivers) and, with `router`, the IPv4 router pipeline over each
    structure (64-byte frames to the same destinations)."""
    keys4 = Batch.of([a.to_bytes(4, "big") for a in dst4])
    keys6 = Batch.of([a.to_bytes(16, "big") for a in dst6])
    out: list[Subject | KeySubject] = []
    for name, path in PROBES.items():
        program = compile_file(path)
        for block, batch, label in (("probe4", keys4, "IPv4"), ("probe6", keys6, "IPv6")):
            for prefetch, driver in DRIVERS:
                probe = NativeProgram(program, block, prefetch=prefetch)
                RouteTables.of(probe).load(routes.v4 if label == "IPv4" else {},
                                           routes.v6 if label == "IPv6" else {})
                out.append(Subject(f"MBL walker, {label}, {name}, packet probe, {driver}",
                                   probe, batch, "M lookups/s"))
            for options, driver in KEY_DRIVERS:  # on the last probe's tables
                function = probe.key_function(WALKER_FUNCTIONS[label], **options)
                keys = function.pack(dst4 if label == "IPv4" else dst6)
                out.append(KeySubject(f"MBL walker, {label}, {name}, "
                                      f"{WALKER_FUNCTIONS[label]}, {driver}", function, keys))
    if router:
        frames = Batch.of([udp_frame(d) for d in dst4])
        for name in ("16-8-8", "Poptrie"):     # whichever router_common.mbl imports
            program = compile_file(router_with(name, tmp / name))
            for options, driver in ROUTER_DRIVERS:
                native = NativeProgram(program, "router", **options)
                load_router(native, routes)
                out.append(Subject(f"forward IPv4, router pipeline, {name}, {driver}", native,
                                   frames, "Mpps"))
    return out


def measure(items: list[Subject | KeySubject], runs: int, clock) -> None:
    for item in items:
        print(f"  {item.label}: {item.rate(runs, clock) / 1e6:.1f} {item.unit}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(REAL_TABLE))
    parser.add_argument("--lookups", type=int, default=1_000_000)
    parser.add_argument("--updates", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--router", action="store_true",
                        help="also forward IPv4 through the MBL router (16-8-8 and Poptrie), "
                             "64-byte frames to the same destinations")
    parser.add_argument("--rounds", type=int, default=1,
                        help="lookup measurements, DPDK's and npkit's taking turns (the "
                             "tables built once): on a shared box, same-minutes pairs")
    add_cpu_time_option(parser)
    args = parser.parse_args(argv)
    routes = read_routes(args.table)
    rng = random.Random(args.seed)
    dst4 = destinations(routes.v4, 32, args.lookups, rng)
    dst6 = destinations(routes.v6, 128, args.lookups, rng)
    up4 = samples(routes.v4, 4, args.updates, rng)
    up6 = samples(routes.v6, 6, args.updates, rng)
    clock = clock_of(args)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "r4").write_bytes(pack4(routes.v4))
        (d / "a4").write_bytes(np.array(dst4, dtype=np.uint32).tobytes())
        (d / "r6").write_bytes(pack6(routes.v6))
        (d / "a6").write_bytes(b"".join(a.to_bytes(16, "big") for a in dst6))
        (d / "u4").write_bytes(pack4({k: routes.v4[k] for k in up4}, up4))
        (d / "u6").write_bytes(pack6({k: routes.v6[k] for k in up6}, up6))
        (d / "lpm.c").write_text(C_SOURCE)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libdpdk"], check=True,
                               capture_output=True, text=True).stdout.split()
        subprocess.run(["cc", "-O3", "-march=native", "-o", str(d / "lpm"), str(d / "lpm.c"),
                        *flags], check=True)
        print(f"DPDK (rte_lpm, rte_lpm6) and npkit, {args.lookups} lookups, median of "
              f"{args.runs}, {'CPU' if args.cpu_time else 'wall'} time, {args.rounds} "
              f"round(s):", flush=True)
        files = [str(d / f) for f in ("r4", "a4", "r6", "a6", "u4", "u6")]
        dpdk = subprocess.Popen(
            [str(d / "lpm"), "-l", "0", "--no-huge", "--no-pci", "--no-shconf", "-m", "1024",
             "--log-level=1", "--", *files, str(args.runs), str(int(args.cpu_time)), "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        # npkit's tables build while DPDK builds its own
        items = subjects(routes, dst4, dst6, args.router, d)
        assert dpdk.stdin is not None and dpdk.stdout is not None
        for line in dpdk.stdout:
            if line.strip() == "ready":
                break
            print(line, end="", flush=True)
        for round_number in range(1, args.rounds + 1):
            print(f"round {round_number}:", flush=True)
            dpdk.stdin.write("lookups\n")
            dpdk.stdin.flush()
            for line in dpdk.stdout:
                if line.strip() == "done":
                    break
                print("  " + line, end="", flush=True)
            measure(items, args.runs, clock)
        dpdk.stdin.close()
        if dpdk.wait():
            raise SystemExit(f"the DPDK program failed ({dpdk.returncode})")
        del items
    if not args.updates:
        return
    for family, v, shape, pshape in ((4, routes.v4, IPV4, POPTRIE4),
                                     (6, routes.v6, IPV6, POPTRIE6)):
        picked = up4 if family == 4 else up6
        pop = Poptrie(pshape, np.zeros(1 << 23, dtype=np.uint32))
        pop.build(v)
        npkit_updates(pop, v, picked, family)
        del pop
        trie = MultibitTrie(shape, np.zeros(1 << 24, dtype=np.uint32))
        trie.build(v)
        npkit_updates(trie, v, picked, family)


if __name__ == "__main__":
    main()
