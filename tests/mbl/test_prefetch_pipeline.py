"""The native batch driver's prefetch pipeline (compiler/mbl/native.py, _batch_driver): slice
runs PREFETCH_DISTANCE packets apart, PREFETCH_PASSES per packet, then the block.  Batches
shorter than, equal to and longer than the pipeline's depth, over walks deeper than the
number of passes (IPv4 /25-/32 routes, IPv6 down to /128; 16-8-8 and Poptrie), must give the
next hops of a brute-force longest-prefix match, the same as the one-pass driver and as the
build without LLVM's -O3."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import PROGRAMS
from lpm_reference import brute_force

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.native import PREFETCH_DISTANCE, PREFETCH_PASSES
from npkit.runtime.lpm import RouteTables

POPTRIE_PROBE = Path(__file__).parents[1] / "runtime" / "programs" / "lpm_poptrie_probe.mbl"
DEPTH = PREFETCH_PASSES * PREFETCH_DISTANCE  # packets between a packet's first run and block
SIZES = sorted({0, 1, PREFETCH_DISTANCE - 1, PREFETCH_DISTANCE, PREFETCH_DISTANCE + 1,
                DEPTH - 1, DEPTH, DEPTH + 1, 3 * DEPTH + 5, 257})


def nested_routes(bits: int, rng: random.Random) -> dict[tuple[int, int], int]:
    """Prefixes nested under a few bases, every length from /8 to /bits, so walks end at
    every level (deeper than PREFETCH_PASSES cache lines for the long ones)."""
    routes = {}
    for _ in range(4):
        base = rng.getrandbits(bits)
        for length in range(8, bits + 1, 1 if bits == 32 else 5):
            network = base >> (bits - length) << (bits - length)
            routes[(network, length)] = rng.randrange(1, 1000)
    return routes


def addresses(routes: dict[tuple[int, int], int], bits: int, count: int,
              rng: random.Random) -> list[int]:
    """Inside random prefixes of the table (random host bits), a few outside any."""
    keys = sorted(routes)
    out = []
    for _ in range(count):
        if rng.random() < 0.1:
            out.append(rng.getrandbits(bits))
            continue
        network, length = keys[rng.randrange(len(keys))]
        out.append(network | (rng.getrandbits(bits) & ((1 << (bits - length)) - 1)))
    return out


@pytest.mark.parametrize("probe", [PROGRAMS / "lpm_probe.mbl", POPTRIE_PROBE],
                         ids=["16-8-8", "poptrie"])
@pytest.mark.parametrize("bits", [32, 128])
def test_pipeline_matches_brute_force_at_every_batch_size(probe: Path, bits: int) -> None:
    rng = random.Random(bits * 7 + len(probe.name))
    routes = nested_routes(bits, rng)
    program = compile_file(probe)
    block = "probe4" if bits == 32 else "probe6"
    builds = {}
    for name, options in (("pipeline", {}), ("one pass", {"prefetch": False}),
                          ("no -O3", {"host_o3": False})):
        native = NativeProgram(program, block, **options)
        RouteTables.of(native).load(routes if bits == 32 else {}, routes if bits == 128 else {})
        builds[name] = native
    sram = builds["pipeline"].memory["sram"].copy()
    for size in SIZES:
        batch = addresses(routes, bits, size, rng)
        expected = [brute_force(routes, bits, a) for a in batch]
        packets = [a.to_bytes(bits // 8, "big") for a in batch]
        for name, native in builds.items():
            got = [v.port if v.kind == "forward" else None for v in native.run(packets)]
            assert got == expected, (name, size)
    assert (builds["pipeline"].memory["sram"] == sram).all()  # the slices wrote nothing
