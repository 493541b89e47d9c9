"""Why the native Poptrie IPv4 walk is slower than rte_lpm: the JIT walker beside two
references on the same image and destinations (issue 19, docs/performance.md section 3).

    python -m npkit.bench.poptrie_native_why [--lookups 300000] [--rounds 5] [--dpdk]
                                             [--stage-sweep]

* the probe of tests/runtime/programs/lpm_poptrie_probe.mbl over microblocks/lpm_poptrie.mbl
  (one-pass batch driver), as lpm_native_rate.py runs it, and the walker's fib4_lookup over
  the key array (plain loop; depth-staged driver, 3 stages, its stages branching as
  before 2026-11-28 and flat, stages.flatten; with --stage-sweep also 1, 2 and 3 flat
  stages 8, 16 and 32 keys apart);
* a plain C walk of the same image (cc -O2 -march=native), keys dense (as rte_lpm's bench
  reads them) and in the batch layout (one packet slot per key, 48 bytes of metadata
  written), so the cost of the packet batch is seen apart from the walk's code; the
  dense walk with 3 prefetch stages 16 keys apart written by hand (what the depth-staged
  key driver, KeyFunction(stages=3), generates from the walker: each stage re-walks from
  the root); and the hand-written ceiling: each key's state carried forward from stage to
  stage (one dependent read a key a stage, no re-walk), in groups of 16 keys and rolled
  into one loop 32 keys apart (the faster);
* with --dpdk, rte_lpm_lookup_bulk (64 keys a call, as lpm_dpdk.py) on the same table and
  keys, in the C walks' process (built with DPDK; rte_lpm's build takes minutes).

CPU time of the walk (thread time), median of --rounds, the rows taking turns (the box's
cache is shared: only rows measured in the same minutes compare); the C walks run in one
process started once, a round of all of them per round of the rows.  A benchmark, not a
test (tests/bench/test_poptrie_native_why.py checks the C walks against a brute-force LPM);
its C walk assumes the walker's 8-word node (per 32-bit half: vector, base1, leafvec,
base0), stops with a message if the walker file no longer describes that layout, and
checks every dense C walk's answers against the MBL walker's, key for key.  (The 6-word
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

from npkit.bench.lpm_dpdk import pack4
from npkit.bench.native_fwd import (
    REPO,
    Batch,
    destinations,
    key_rate,
    median_rate,
)
from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.native import NativeProgram
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import REAL_TABLE, read_routes

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
/* the ceiling by hand (issue 19, seventh round): groups of G keys, each key's state carried
   forward (no re-walk from the root), one dependent read a key a stage: the group g + 3 has
   its direct entries prefetched, g + 2 reads them and prefetches its node halves, g + 1
   reads the halves (child or leaf, picked without a branch) and prefetches the next line,
   g reads its leaves (the rare deeper walks finish there, unprefetched); one popcount per
   rank (a 64-bit one for the leaf runs, s + 1 bits) */
enum { G = 16, RING = 4 * G };
static void group_walk(const uint32_t *keys, size_t n, uint32_t *out) {
  static uint32_t P[RING], W[RING];
  size_t groups = (n + G - 1) / G;
  for (size_t g = 0; g < groups + 3; g++) {
    size_t b, e;
    if (g < groups)
      for (b = g * G, e = b + G < n ? b + G : n; b < e; b++)
        __builtin_prefetch(T + (keys[b] >> 14));
    if (g >= 1 && g - 1 < groups)
      for (b = (g - 1) * G, e = b + G < n ? b + G : n; b < e; b++) {
        uint32_t d = keys[b], w = T[d >> 14];
        uint32_t h = w >> 31 ? half_of(w, (d >> 8) & 63) : 0;
        __builtin_prefetch(T + h);
        P[b % RING] = h;
        W[b % RING] = w;
      }
    if (g >= 2 && g - 2 < groups)
      for (b = (g - 2) * G, e = b + G < n ? b + G : n; b < e; b++) {
        uint32_t d = keys[b];
        const uint32_t *h = T + P[b % RING];
        uint32_t s = (d >> 8) & 31, vec = h[0], lv = h[2];
        uint32_t c = h[1] + ((uint32_t)__builtin_popcount(vec & ((1u << s) - 1)) << 3);
        uint32_t leaf =
            (h[3] + (uint32_t)__builtin_popcountll((uint64_t)lv & ((2ull << s) - 1)) - 1) &
            2097151u;
        uint32_t child = (vec >> s) & 1, next = child ? half_of(c, (d >> 2) & 63) : leaf;
        __builtin_prefetch(T + next);
        P[b % RING] = child ? 0x80000000u | c : leaf;
      }
    if (g >= 3 && g - 3 < groups)
      for (b = (g - 3) * G, e = b + G < n ? b + G : n; b < e; b++) {
        uint32_t d = keys[b], w = W[b % RING], p = P[b % RING];
        if (!(w >> 31)) out[b] = w;
        else if (!(p >> 31)) out[b] = T[p];
        else out[b] = step(step(p, (d >> 2) & 63), (d & 3) << 4);  /* a child: deeper */
      }
  }
}
/* the same stages rolled into one loop (the faster form): step i prefetches key i's direct
   entry, reads key i - S's and prefetches its half, reads key i - 2S's half and prefetches
   the next line, finishes key i - 3S; S = 32 keys between stages (8-64 swept by hand: 32 to
   64 best, not told apart); the steps in the middle without bounds checks */
enum { S = 32, ROLL = 256 };
static uint32_t RP[ROLL], RW[ROLL];
static inline void roll_b(const uint32_t *keys, size_t j) {
  uint32_t d = keys[j], w = T[d >> 14], h = w >> 31 ? half_of(w, (d >> 8) & 63) : 0;
  __builtin_prefetch(T + h);
  RP[j % ROLL] = h;
  RW[j % ROLL] = w;
}
static inline void roll_c(const uint32_t *keys, size_t j) {
  uint32_t d = keys[j];
  const uint32_t *h = T + RP[j % ROLL];
  uint32_t s = (d >> 8) & 31, vec = h[0], lv = h[2];
  uint32_t c = h[1] + ((uint32_t)__builtin_popcount(vec & ((1u << s) - 1)) << 3);
  uint32_t leaf =
      (h[3] + (uint32_t)__builtin_popcountll((uint64_t)lv & ((2ull << s) - 1)) - 1) & 2097151u;
  uint32_t child = (vec >> s) & 1, next = child ? half_of(c, (d >> 2) & 63) : leaf;
  __builtin_prefetch(T + next);
  RP[j % ROLL] = child ? 0x80000000u | c : leaf;
}
static inline uint32_t roll_d(const uint32_t *keys, size_t j) {
  uint32_t d = keys[j], w = RW[j % ROLL], p = RP[j % ROLL];
  if (!(w >> 31)) return w;
  if (!(p >> 31)) return T[p];
  return step(step(p, (d >> 2) & 63), (d & 3) << 4);  /* a child: deeper */
}
static void rolling_walk(const uint32_t *keys, size_t n, uint32_t *out) {
  for (size_t i = 0; i < n + 3 * S; i++) {
    if (i >= 3 * S && i < n) {
      __builtin_prefetch(T + (keys[i] >> 14));
      roll_b(keys, i - S);
      roll_c(keys, i - 2 * S);
      out[i - 3 * S] = roll_d(keys, i - 3 * S);
      continue;
    }
    if (i < n) __builtin_prefetch(T + (keys[i] >> 14));
    if (i >= S && i - S < n) roll_b(keys, i - S);
    if (i >= 2 * S && i - 2 * S < n) roll_c(keys, i - 2 * S);
    if (i >= 3 * S && i - 3 * S < n) out[i - 3 * S] = roll_d(keys, i - 3 * S);
  }
}
#ifdef WITH_DPDK
#include <rte_eal.h>
#include <rte_lpm.h>
struct r4 { uint32_t ip; uint8_t len, band; uint16_t nh; };  /* lpm_dpdk.pack4's records */
static struct rte_lpm *lpm;
#endif
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
/* walk IMAGE KEYS WORDS N ROUNDS MODES ANSWERS [ROUTES]: MODES a comma-separated list of
   strides (0 dense, -1 dense with the 3 re-walking prefetch stages, -2 the group walk, -4
   the rolling walk, -3 rte_lpm_lookup_bulk (64) when built WITH_DPDK, > 0 the batch layout
   with that stride),
   taking turns each round; a line per round and mode: mode, seconds, keys found, answers
   that differ from ANSWERS (the MBL walker's; dense modes only; with WALK_DUMP set, their
   answers are written there too).  ROUNDS 0: "ready", then
   a round for each line read from stdin, each ended by "done" */
int main(int argc, char **argv) {
#ifdef WITH_DPDK
  int used = rte_eal_init(argc, argv);
  if (used < 0) { fprintf(stderr, "rte_eal_init failed\n"); return 1; }
  argc -= used; argv += used;
#endif
  (void)argc;
  size_t words = strtoul(argv[3], 0, 10), n = strtoul(argv[4], 0, 10);
  int rounds = atoi(argv[5]), modes[16], count = 0;
  for (char *m = strtok(argv[6], ","); m && count < 16; m = strtok(0, ","))
    modes[count++] = atoi(m);
  T = malloc(words * 4);
  uint32_t *keys = malloc(n * 4), *answers = malloc(n * 4);
  FILE *f = fopen(argv[1], "rb");
  if (fread(T, 4, words, f) != words) return 1;
  fclose(f);
  f = fopen(argv[2], "rb");
  if (fread(keys, 4, n, f) != n) return 1;
  fclose(f);
  f = fopen(argv[7], "rb");
  if (fread(answers, 4, n, f) != n) return 1;
  fclose(f);
#ifdef WITH_DPDK
  {
    f = fopen(argv[8], "rb");
    fseek(f, 0, SEEK_END);
    size_t bytes = ftell(f), routes = bytes / sizeof(struct r4);
    fseek(f, 0, SEEK_SET);
    struct r4 *r = malloc(bytes);
    if (fread(r, 1, bytes, f) != bytes) return 1;
    fclose(f);
    struct rte_lpm_config c4 = {.max_rules = 2 * routes, .number_tbl8s = 1 << 16, .flags = 0};
    lpm = rte_lpm_create("v4", 0, &c4);
    if (!lpm) { fprintf(stderr, "rte_lpm_create failed\n"); return 1; }
    for (size_t i = 0; i < routes; i++)
      if (rte_lpm_add(lpm, r[i].ip, r[i].len, r[i].nh) < 0) { fprintf(stderr, "add\n"); return 1; }
    free(r);
  }
#endif
  size_t widest = 4;
  for (int k = 0; k < count; k++) if (modes[k] > 0 && (size_t)modes[k] > widest) widest = modes[k];
  uint8_t *slots = calloc(n, widest);
  uint32_t *meta = calloc(n, 48);
  char line[64];
  if (!rounds) {
    printf("ready\n");
    fflush(stdout);
  }
  for (int r = 0; rounds ? r < rounds : fgets(line, sizeof line, stdin) != 0; r++) {
    for (int k = 0; k < count; k++) {
      int stride = modes[k];
      uint64_t found = 0, wrong = 0;
      if (stride > 0)
        for (size_t i = 0; i < n; i++) {
          uint32_t be = __builtin_bswap32(keys[i]);
          memcpy(slots + i * stride + 64, &be, 4);
        }
      double t = now();
      if (stride == -1) {
        for (size_t i = 0; i < n; i++) {
          if (i + 3 * D < n) __builtin_prefetch(T + (keys[i + 3 * D] >> 14));
          if (i + 2 * D < n) stage1(keys[i + 2 * D]);
          if (i + D < n) stage2(keys[i + D]);
          uint32_t w = lookup(keys[i]);
          meta[i] = w;
          found += w >> 30;
        }
      } else if (stride == -2) {
        group_walk(keys, n, meta);
        for (size_t i = 0; i < n; i++) found += meta[i] >> 30;
      } else if (stride == -4) {
        rolling_walk(keys, n, meta);
        for (size_t i = 0; i < n; i++) found += meta[i] >> 30;
      } else if (stride == -3) {
#ifdef WITH_DPDK
        for (size_t i = 0; i + 64 <= n; i += 64) rte_lpm_lookup_bulk(lpm, keys + i, meta + i, 64);
#else
        return 2;
#endif
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
      double seconds = now() - t;
      if (stride == -3)  /* RTE_LPM_LOOKUP_SUCCESS; the last n % 64 keys are not looked up */
        for (size_t i = 0; i < n - n % 64; i++) found += meta[i] >> 24 & 1;
      if (stride <= 0 && stride != -3) {
        for (size_t i = 0; i < n; i++) wrong += meta[i] != answers[i];
        const char *dump = getenv("WALK_DUMP");  /* the tests: DIR/<mode>.bin, the answers */
        if (dump) {
          char path[4096];
          snprintf(path, sizeof path, "%s/%d.bin", dump, stride);
          FILE *o = fopen(path, "wb");
          if (!o || fwrite(meta, 4, n, o) != n) return 1;
          fclose(o);
        }
      }
      printf("%d %.6f %llu %llu\n", stride, seconds, (unsigned long long)found,
             (unsigned long long)wrong);
      fflush(stdout);
    }
    if (!rounds) {
      printf("done\n");
      fflush(stdout);
    }
  }
  return 0;
}
"""


def c_walk(image: np.ndarray, keys: np.ndarray, answers: np.ndarray, tmp: Path,
           routes: bytes | None = None) -> list[str]:
    """The C walk, built, with its image, keys and the MBL walker's answers written: the
    command line without the rounds, modes and answers arguments.  With `routes`
    (lpm_dpdk.pack4's records) it is built with DPDK and builds rte_lpm from them first (its
    lookups then run as mode -3, beside the walks, in the same process)."""
    (tmp / "walk.c").write_text(C_WALK)
    build = ["cc", "-O2", "-o", str(tmp / "walk"), str(tmp / "walk.c")]
    prefix: list[str] = []
    if routes is not None:
        def flags(kind: str) -> list[str]:
            return subprocess.run(["pkg-config", kind, "libdpdk"], check=True,
                                  capture_output=True, text=True).stdout.split()

        # DPDK's cflags name a -march: the walk's own comes after them
        build = ["cc", "-O2", "-DWITH_DPDK", *flags("--cflags"), "-march=native", "-o",
                 str(tmp / "walk"), str(tmp / "walk.c"), *flags("--libs")]
        (tmp / "routes.bin").write_bytes(routes)
        prefix = ["-l", "0", "--no-huge", "--no-pci", "--no-shconf", "-m", "1024",
                  "--log-level=1", "--"]
    else:
        build.insert(2, "-march=native")
    subprocess.run(build, check=True)
    image.tofile(tmp / "image.bin")
    keys.tofile(tmp / "keys.bin")
    answers.astype(np.uint32).tofile(tmp / "answers.bin")
    return [str(tmp / "walk"), *prefix, str(tmp / "image.bin"), str(tmp / "keys.bin"),
            str(image.size), str(keys.size)]


class CWalk:
    """The C walk running as a server (ROUNDS 0): one round of all `modes` per call, in one
    process, so that rte_lpm (mode -3) is built once.  Each walk must find a route for
    `routed` keys, as the MBL walker does, and the dense ones give its answers key for key."""

    def __init__(self, command: list[str], modes: list[int], routed: int,
                 routes: bool = False) -> None:
        answers = Path(command[-3]).with_name("answers.bin")
        tail = [str(answers)] + ([str(answers.with_name("routes.bin"))] if routes else [])
        self.modes, self.routed = modes, routed
        self.process = subprocess.Popen(command + ["0", ",".join(map(str, modes)), *tail],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        assert self.process.stdin and self.process.stdout
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        if self.stdout.readline().strip() != "ready":
            raise SystemExit("the C walk did not start")

    def round(self) -> dict[int, float]:
        """{mode: seconds} of one round."""
        self.stdin.write("go\n")
        self.stdin.flush()
        times = {}
        while (line := self.stdout.readline().strip()) != "done":
            if not line:
                raise SystemExit("the C walk stopped")
            mode, seconds, found, wrong = line.split()
            if mode != "-3" and (int(found) != self.routed or int(wrong)):
                raise SystemExit(f"the C walk (mode {mode}) found routes for {found} keys, "
                                 f"the MBL walker for {self.routed}, {wrong} answers differ: "
                                 "C_WALK no longer reads the walker's layout")
            times[int(mode)] = float(seconds)
        return times

    def close(self) -> None:
        self.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(REAL_TABLE))
    parser.add_argument("--lookups", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--dpdk", action="store_true",
                        help="also rte_lpm_lookup_bulk (64) on the same table and keys, in "
                             "the C walk's process (needs dpdk-dev; its build takes minutes)")
    parser.add_argument("--stage-sweep", action="store_true",
                        help="also the staged key driver with 1, 2 and 3 flat stages, 8, 16 "
                             "and 32 keys apart")
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
        # the walker's answers: the C walks must give the same (and find as many routes)
        answers = native.key_function("fib4_lookup")(keys)
        routed = int(np.count_nonzero(answers >> 30))
        command = c_walk(native.region("fib4_poptrie"), keys, answers, tmp,
                         pack4(routes.v4) if args.dpdk else None)
        c_rows = {"C walk of the same image, dense keys": 0,
                  "C walk of the same image, dense keys, 3 prefetch stages": -1,
                  "C walk of the same image, dense keys, groups of 16, state carried "
                  "forward": -2,
                  "C walk of the same image, dense keys, rolling, state carried forward, "
                  "32 keys between stages": -4,
                  "C walk of the same image, batch layout": batch.buf.shape[1]}
        if args.dpdk:
            c_rows["rte_lpm_lookup_bulk (64), same table and keys, same process"] = -3
        label = "MBL walker (JIT)"
        key_rows = {"MBL fib4_lookup, key array, plain loop": native.key_function("fib4_lookup"),
                    "MBL fib4_lookup, key array, staged (3), branching stages":
                        native.key_function("fib4_lookup", stages=3, flat_stages=False),
                    "MBL fib4_lookup, key array, staged (3), flat stages":
                        native.key_function("fib4_lookup", stages=3)}
        if args.stage_sweep:
            for stages in (1, 2, 3):
                for distance in (8, 16, 32):
                    key_rows[f"MBL fib4_lookup, key array, staged ({stages}) at {distance}, "
                             "flat"] = native.key_function("fib4_lookup", stages=stages,
                                                           stage_distance=distance)
        walk = CWalk(command, list(c_rows.values()), routed, routes=args.dpdk)
        rates: dict[str, list[float]] = {name: [] for name in [label, *key_rows, *c_rows]}
        for _ in range(args.rounds):  # interleaved: every row sees the same load
            rates[label].append(median_rate(native, batch, 1, clock=time.thread_time)[0])
            for name, function in key_rows.items():
                rates[name].append(key_rate(function, keys, 1, time.thread_time))
            times = walk.round()
            for name, mode in c_rows.items():
                rates[name].append(len(dsts) / times[mode])
        walk.close()
        for name, values in rates.items():
            print(f"{name}: {statistics.median(values) / 1e6:.1f} M lookups/s "
                  f"({', '.join(f'{v / 1e6:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
