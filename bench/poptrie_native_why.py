"""Why the native Poptrie IPv4 walk is slower than rte_lpm: the JIT walker beside two
references on the same image and destinations (issue 19, docs/performance.md section 3).

    python -m npkit.bench.poptrie_native_why [--lookups 300000] [--rounds 5]

* the probe of tests/runtime/programs/lpm_poptrie_probe.mbl over microblocks/lpm_poptrie.mbl
  (one-pass batch driver), as lpm_native_rate.py runs it;
* the same probe over a copy of the walker whose fib4_step takes each 64-bit bitmap as one
  bit<64> value (one shift and one pop_count per rank, no branch on which 32-bit half holds
  the key's bit), the answers checked identical to the first's;
* a plain C walk of the same image (cc -O2 -march=native), keys dense (as rte_lpm's bench
  reads them) and in the batch layout (one packet slot per key, 48 bytes of metadata
  written), so the cost of the packet batch is seen apart from the walk's code.

CPU time of the walk (thread time), median of --rounds, the rows taking turns (the box's
cache is shared: only rows measured in the same minutes compare).  A benchmark, not a test;
it assumes main's node layout (vector lo, hi, leafvec lo, hi, base1, base0) and says so if
the walker file no longer has it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from npkit.bench.native_fwd import DEFAULT_TABLE, REPO, Batch, destinations, median_rate
from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.native import NativeProgram
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import read_routes

PROBE = REPO / "tests" / "runtime" / "programs" / "lpm_poptrie_probe.mbl"
WALKER = REPO / "microblocks" / "lpm_poptrie.mbl"
LAYOUT = "vector lo/hi (64 children bits), leafvec lo/hi (64 leaf-run bits)"

STEP64 = """fn fib4_step(word: bit<32>, v: bit<32>) -> bit<32> {
    if (word & LPM_CHILD) == 0 { return word; }
    var node = word & LPM_POINTER;
    if node > LPM_LAST_NODE { node = LPM_LAST_NODE; }
    let vec = ((fib4_poptrie[node + 1] as bit<64>) << 32) | (fib4_poptrie[node] as bit<64>);
    let s = ((63 as bit<32>) - v) as bit<64>;
    if ((vec >> (v as bit<64>)) & 1) != 0 {
        let k = pop_count(vec << s) as bit<32> - 1;
        return LPM_CHILD | (fib4_poptrie[node + 4] + (k << 2) + (k << 1));
    }
    let lv = ((fib4_poptrie[node + 3] as bit<64>) << 32) | (fib4_poptrie[node + 2] as bit<64>);
    return fib4_poptrie[fib4_poptrie[node + 5] + (pop_count(lv << s) as bit<32>) - 1];
}

"""

C_WALK = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static uint32_t *T;
static uint32_t step(uint32_t w, uint32_t v) {
  if (!(w & 0x80000000u)) return w;
  uint32_t node = w & 0x7fffffffu;
  if (node > 2097146u) node = 2097146u;
  const uint32_t *n = T + node;
  uint64_t vec = (uint64_t)n[1] << 32 | n[0], lv = (uint64_t)n[3] << 32 | n[2];
  if ((vec >> v) & 1)
    return 0x80000000u | (n[4] + 6 * (uint32_t)(__builtin_popcountll(vec << (63 - v)) - 1));
  return T[(n[5] + __builtin_popcountll(lv << (63 - v)) - 1) & 2097151u];
}
static uint32_t lookup(uint32_t d) {
  uint32_t w = T[d >> 14];
  w = step(w, (d >> 8) & 63);
  w = step(w, (d >> 2) & 63);
  return step(w, (d & 3) << 4);
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
  uint8_t *slots = calloc(n, stride ? stride : 4);
  uint32_t *meta = calloc(n, 48);
  for (size_t i = 0; i < n; i++) {
    uint32_t be = __builtin_bswap32(keys[i]);
    memcpy(slots + i * (stride ? stride : 4) + (stride ? 64 : 0), &be, 4);
  }
  for (int r = 0; r < rounds; r++) {
    uint64_t found = 0;
    double t = now();
    if (!stride) {
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


def variant(root: Path) -> Path | None:
    """A copy of the probe and the walker with fib4_step in bit<64>; None if the walker's
    node layout is not the one STEP64 reads."""
    text = WALKER.read_text()
    if LAYOUT not in text:
        return None
    start, end = text.index("fn fib4_step"), text.index("// One IPv6 level")
    (root / "microblocks").mkdir()
    (root / "microblocks" / WALKER.name).write_text(text[:start] + STEP64 + text[end:])
    probe = root / "tests" / "runtime" / "programs" / PROBE.name
    probe.parent.mkdir(parents=True)
    shutil.copy(PROBE, probe)
    return probe


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


def c_rate(command: list[str], lookups: int, stride: int) -> float:
    """The C walk's lookups/s, median of 3 (stride 0: dense keys)."""
    out = subprocess.run(command + ["3", str(stride)], check=True, capture_output=True,
                         text=True).stdout.split("\n")
    return lookups / statistics.median(float(line.split()[0]) for line in out if line)


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
        probes = {"MBL walker (JIT)": PROBE}
        other = variant(tmp)
        if other is None:
            print("walker node layout changed: the bit<64> variant is skipped")
        else:
            probes["MBL walker, fib4_step in bit<64> (JIT)"] = other
        natives = {}
        for label, path in probes.items():
            native = NativeProgram(compile_file(path), "probe4", prefetch=False)
            RouteTables.of(native).load(routes.v4, {})
            natives[label] = native
        first = next(iter(natives.values()))
        answers = {label: _metas(native, batch) for label, native in natives.items()}
        reference = answers[next(iter(answers))]
        image = first.region("fib4_poptrie")
        command = c_walk(image, np.array(dsts, dtype=np.uint32), tmp)
        c_rows = {"C walk of the same image, dense keys": 0,
                  "C walk of the same image, batch layout": batch.buf.shape[1]}
        rates: dict[str, list[float]] = {label: [] for label in [*natives, *c_rows]}
        for _ in range(args.rounds):  # interleaved: every row sees the same load
            for label, native in natives.items():
                rates[label].append(median_rate(native, batch, 1, clock=time.thread_time)[0])
            for label, stride in c_rows.items():
                rates[label].append(c_rate(command, len(dsts), stride))
        for label, values in rates.items():
            same = "  ANSWERS DIFFER" if label in answers and not np.array_equal(
                answers[label], reference) else ""
            print(f"{label}: {statistics.median(values) / 1e6:.1f} M lookups/s "
                  f"({', '.join(f'{v / 1e6:.1f}' for v in values)}){same}")

def _metas(native: NativeProgram, batch: Batch) -> np.ndarray:
    work = batch.fresh()
    mem = native.memory
    native._run(work.buf.ctypes.data, work.buf.shape[1], work.lens.ctypes.data,
                work.metas.ctypes.data, len(work.lens), mem["sram"].ctypes.data,
                mem["scratch"].ctypes.data, mem["local"].ctypes.data)
    return work.metas


if __name__ == "__main__":
    main()
