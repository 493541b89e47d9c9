"""Why the native Poptrie IPv4 walk is slower than rte_lpm: the JIT walker beside two
references on the same image and destinations (issue 19, docs/performance.md section 3).

    python -m npkit.bench.poptrie_native_why [--lookups 300000] [--rounds 5]

* the probe of tests/runtime/programs/lpm_poptrie_probe.mbl over microblocks/lpm_poptrie.mbl
  (one-pass batch driver), as lpm_native_rate.py runs it, and the walker's fib4_lookup over
  the key array (plain loop; depth-staged driver, 3 stages, its stages branching as
  before 2026-11-28 and flat, stages.flatten);
* a plain C walk of the same image (cc -O2 -march=native), keys dense (as rte_lpm's bench
  reads them) and in the batch layout (one packet slot per key, 48 bytes of metadata
  written), so the cost of the packet batch is seen apart from the walk's code; and the
  dense walk with 3 prefetch stages 16 keys apart written by hand (what the depth-staged
  key driver, KeyFunction(stages=3), generates from the walker).

CPU time of the walk (thread time), median of --rounds, the rows taking turns (the box's
cache is shared: only rows measured in the same minutes compare).  A benchmark, not a test;
its C walk assumes the walker's 8-word node (per 32-bit half: vector, base1, leafvec, base0)
and stops with a message if the walker file no longer describes that layout.  (The 6-word
node's version of this script also ran the walker with each 64-bit bitmap as one bit<64>;
with a node read one half at a time that variant has nothing left to compare.)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from npkit.bench.native_fwd import (
    DEFAULT_TABLE,
    REPO,
    Batch,
    destinations,
    key_rate,
    median_rate,
)
from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.native import NativeProgram
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import read_routes

PROBE = REPO / "tests" / "runtime" / "programs" / "lpm_poptrie_probe.mbl"
WALKER = REPO / "microblocks" / "lpm_poptrie.mbl"
LAYOUT = "per 32-bit half of the bitmaps, the low half first: vector (children"

C_WALK = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static uint32_t *T;
static uint32_t step(uint32_t w, uint32_t v) {
  if (!(w & 0x80000000u)) return w;
  uint32_t half = (w & 0x7fffffffu) + ((v >> 3) & 4);
  if (half > 2097148u) half = 0;
  const uint32_t *n = T + half;
  uint32_t s = v & 31, vec = n[0], t = vec >> s;
  if (t & 1)
    return 0x80000000u |
           (n[1] + ((uint32_t)(__builtin_popcount(vec) - __builtin_popcount(t)) << 3));
  uint32_t lv = n[2];
  uint32_t runs = __builtin_popcount(lv) - __builtin_popcount((lv >> s) >> 1);
  return T[(n[3] + runs - 1) & 2097151u];
}
static uint32_t lookup(uint32_t d) {
  uint32_t w = T[d >> 14];
  w = step(w, (d >> 8) & 63);
  w = step(w, (d >> 2) & 63);
  return step(w, (d & 3) << 4);
}
/* the depth stages by hand (compiler/mbl/stages.py generates them from the walker):
   stage 1 reads the direct entry and prefetches the node's half; stage 2 reads both and
   prefetches the leaf (or the next node's half) */
enum { D = 16 };
static uint32_t half_of(uint32_t w, uint32_t v) {
  uint32_t half = (w & 0x7fffffffu) + ((v >> 3) & 4);
  return half > 2097148u ? 0 : half;
}
static void stage1(uint32_t d) {
  uint32_t w = T[d >> 14];
  if (w & 0x80000000u) __builtin_prefetch(T + half_of(w, (d >> 8) & 63));
}
static void stage2(uint32_t d) {
  uint32_t w = T[d >> 14], v = (d >> 8) & 63;
  if (!(w & 0x80000000u)) return;
  const uint32_t *n = T + half_of(w, v);
  uint32_t s = v & 31, vec = n[0], t = vec >> s;
  if (t & 1) {
    uint32_t c = n[1] + ((uint32_t)(__builtin_popcount(vec) - __builtin_popcount(t)) << 3);
    __builtin_prefetch(T + half_of(c, (d >> 2) & 63));
    return;
  }
  uint32_t lv = n[2], runs = __builtin_popcount(lv) - __builtin_popcount((lv >> s) >> 1);
  __builtin_prefetch(T + ((n[3] + runs - 1) & 2097151u));
}
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
  size_t words = strtoul(argv[3], 0, 10), n = strtoul(argv[4], 0, 10);
  int rounds = atoi(argv[5]), stride = atoi(argv[6]);
  T = malloc(words * 4);
  uint32_t *keys = malloc(n * 4);
  FILE *f = fopen(argv[1], "rb");
  if (fread(T, 4, words, f) != words) return 1;
  fclose(f);
  f = fopen(argv[2], "rb");
  if (fread(keys, 4, n, f) != n) return 1;
  fclose(f);
  int piped = stride < 0;  /* -1: dense keys, 3 prefetch stages D keys apart */
  if (piped) stride = 0;
  uint8_t *slots = calloc(n, stride ? stride : 4);
  uint32_t *meta = calloc(n, 48);
  for (size_t i = 0; i < n; i++) {
    uint32_t be = __builtin_bswap32(keys[i]);
    memcpy(slots + i * (stride ? stride : 4) + (stride ? 64 : 0), &be, 4);
  }
  for (int r = 0; r < rounds; r++) {
    uint64_t found = 0;
    double t = now();
    if (piped) {
      for (size_t i = 0; i < n; i++) {
        if (i + 3 * D < n) __builtin_prefetch(T + (keys[i + 3 * D] >> 14));
        if (i + 2 * D < n) stage1(keys[i + 2 * D]);
        if (i + D < n) stage2(keys[i + D]);
        uint32_t w = lookup(keys[i]);
        meta[i] = w;
        found += w >> 30;
      }
    } else if (!stride) {
      for (size_t i = 0; i < n; i++) {
        uint32_t w = lookup(keys[i]);
        meta[i] = w;
        found += w >> 30;
      }
    } else {
      for (size_t i = 0; i < n; i++) {
        uint32_t d;
        memcpy(&d, slots + i * stride + 64, 4);
        uint32_t w = lookup(__builtin_bswap32(d));
        meta[i * 12 + 2] = w & 0xffff;
        meta[i * 12 + 3] = 2;
        found += w >> 30;
      }
    }
    printf("%.6f %llu\n", now() - t, (unsigned long long)found);
  }
  return 0;
}
"""


def c_walk(image: np.ndarray, keys: np.ndarray, tmp: Path) -> list[str]:
    """The C walk, built, with its image and keys written: the command line without the
    rounds and stride arguments."""
    (tmp / "walk.c").write_text(C_WALK)
    subprocess.run(["cc", "-O2", "-march=native", "-o", str(tmp / "walk"), str(tmp / "walk.c")],
                   check=True)
    image.tofile(tmp / "image.bin")
    keys.tofile(tmp / "keys.bin")
    return [str(tmp / "walk"), str(tmp / "image.bin"), str(tmp / "keys.bin"), str(image.size),
            str(keys.size)]


def c_rate(command: list[str], lookups: int, stride: int, routed: int) -> float:
    """The C walk's lookups/s, median of 3 (stride 0: dense keys); it must find a route for
    `routed` keys, as the MBL walker does."""
    out = subprocess.run(command + ["3", str(stride)], check=True, capture_output=True,
                         text=True).stdout.split()
    times, founds = out[0::2], out[1::2]
    if any(int(f) != routed for f in founds):
        raise SystemExit(f"the C walk found routes for {founds} keys, the MBL walker for "
                         f"{routed}: C_WALK no longer reads the walker's layout")
    return lookups / statistics.median(float(t) for t in times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(DEFAULT_TABLE))
    parser.add_argument("--lookups", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    routes = read_routes(args.table)
    dsts = destinations(routes, args.lookups, args.seed)
    batch = Batch.of([d.to_bytes(4, "big") for d in dsts])
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if LAYOUT not in WALKER.read_text():
            raise SystemExit(f"{WALKER.name} no longer describes the 8-word node this "
                             "script's C walk reads: update C_WALK")
        native = NativeProgram(compile_file(PROBE), "probe4", prefetch=False)
        RouteTables.of(native).load(routes.v4, {})
        keys = np.array(dsts, dtype=np.uint32)
        # keys with a route, by the walker itself: the C walk must find as many
        routed = int(np.count_nonzero(native.key_function("fib4_lookup")(keys) >> 30))
        command = c_walk(native.region("fib4_poptrie"), keys, tmp)
        c_rows = {"C walk of the same image, dense keys": 0,
                  "C walk of the same image, dense keys, 3 prefetch stages": -1,
                  "C walk of the same image, batch layout": batch.buf.shape[1]}
        label = "MBL walker (JIT)"
        key_rows = {"MBL fib4_lookup, key array, plain loop": native.key_function("fib4_lookup"),
                    "MBL fib4_lookup, key array, staged (3), branching stages":
                        native.key_function("fib4_lookup", stages=3, flat_stages=False),
                    "MBL fib4_lookup, key array, staged (3), flat stages":
                        native.key_function("fib4_lookup", stages=3)}
        rates: dict[str, list[float]] = {name: [] for name in [label, *key_rows, *c_rows]}
        for _ in range(args.rounds):  # interleaved: every row sees the same load
            rates[label].append(median_rate(native, batch, 1, clock=time.thread_time)[0])
            for name, function in key_rows.items():
                rates[name].append(key_rate(function, keys, 1, time.thread_time))
            for name, stride in c_rows.items():
                rates[name].append(c_rate(command, len(dsts), stride, routed))
        for name, values in rates.items():
            print(f"{name}: {statistics.median(values) / 1e6:.1f} M lookups/s "
                  f"({', '.join(f'{v / 1e6:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
