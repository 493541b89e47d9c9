"""bench/poptrie_native_why.py's C walks (the plain walk, the re-walking prefetch stages, and
the group and rolling walks that carry each key's state forward) over images the MBL Poptrie updater
built from random tables: every answer against a brute-force longest-prefix match."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest
from lpm_reference import brute_force

from npkit.bench.poptrie_native_why import PROBE, c_walk
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.runtime.lpm import RouteTables

ROUTE, NEXT_HOP = 0x40000000, 0xFFFF  # the walkers' leaf word (microblocks/lpm.mbl)
MODES = (0, -1, -2, -4)  # dense, re-walking stages, state carried forward: groups, rolling
LENGTHS = [0, 1, 8, 15, 16, 17, 18, 19, 20, 23, 24, 25, 26, 29, 30, 31, 32]


def random_table(rng: np.random.Generator, count: int) -> dict[tuple[int, int], int]:
    """Prefixes nested under a few bases (so that nodes reach the deepest level), and
    random ones; lengths on both sides of the levels' boundaries (18, 24, 30)."""
    bases = [0x0A000000, 0x0A0B0C00, 0xC0A80000, int(rng.integers(0, 2**32))]
    out = {}
    for _ in range(count):
        length = int(rng.choice(LENGTHS)) if rng.random() < 0.7 else int(rng.integers(0, 33))
        base = int(rng.choice(bases)) if rng.random() < 0.7 else int(rng.integers(0, 2**32))
        base ^= int(rng.integers(0, 2**32)) >> int(rng.integers(8, 33))
        network = base & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF
        out[network, length] = int(rng.integers(0, 4000))
    return out


def keys_for(table: dict[tuple[int, int], int], rng: np.random.Generator) -> list[int]:
    out = [0, 2**32 - 1] + [int(k) for k in rng.integers(0, 2**32, 200)]
    for network, length in table:
        last = network | ((1 << (32 - length)) - 1)
        out += [network, last, (last + 1) % 2**32, (network - 1) % 2**32,
                network | (int(rng.integers(0, 2**32)) & ((1 << (32 - length)) - 1))]
    return out


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("seed", range(6))
def test_c_walks_match_brute_force(tmp_path, seed):
    rng = np.random.default_rng(seed)
    table = random_table(rng, [0, 3, 40, 150, 400, 900][seed])
    native = NativeProgram(compile_file(PROBE), "probe4", prefetch=False)
    RouteTables.of(native).load(table, {})
    keys = keys_for(table, rng)
    keys += keys[:37]  # not a whole number of groups (16) or stage distances (32)
    key_array = np.array(keys, dtype=np.uint32)
    expected = [brute_force(table, 32, k) for k in keys]
    walker = native.key_function("fib4_lookup")(key_array)  # the bench's answers file
    command = c_walk(native.region("fib4_poptrie"), key_array, walker, tmp_path)
    dump = tmp_path / "out"
    dump.mkdir()
    subprocess.run(command + ["1", ",".join(map(str, MODES)), str(tmp_path / "answers.bin")],
                   check=True, capture_output=True, env={**os.environ, "WALK_DUMP": str(dump)})
    for mode in MODES:
        words = np.fromfile(dump / f"{mode}.bin", dtype=np.uint32)
        got = [int(w) & NEXT_HOP if w & ROUTE else None for w in words]
        assert got == expected, f"mode {mode}"
