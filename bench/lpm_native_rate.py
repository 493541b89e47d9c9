"""Native lookup and forwarding rates per core: 16-8-8 trie against Poptrie, real table.

    python -m npkit.bench.lpm_native_rate [--packets 1000000] [--runs 5] [--table PATH]

The same seeded destinations (uniform inside uniform prefixes of the real 2024 table) go
through, one JIT batch call each (bench/native_fwd.py's driver), median of --runs:

* lookup only: tests/mbl/programs/lpm_probe.mbl (16-8-8, microblocks/lpm.mbl) and
  tests/runtime/programs/lpm_poptrie_probe.mbl (microblocks/lpm_poptrie.mbl), IPv4 and IPv6,
  with each batch driver (one pass; the prefetch pipeline, NativeProgram(prefetch=True));
  and the walker's function (fib4_lookup, fib6_lookup) over the key array itself, with
  each key driver (NativeProgram.key_function: plain loop; slice pipeline; depth-staged,
  3 stages);
* forwarding, IPv4, the router pipeline (examples/router/router.mbl) with each: the
  router's sources with both LPM files holding the structure's walker (in a temporary
  copy), so it is the same forwarding code over either structure.

A benchmark, not a test.  Results go to docs/performance.md, "Route lookup structures".
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
from pathlib import Path

from npkit.bench.native_fwd import (
    REPO,
    ROUTER,
    Batch,
    destinations,
    key_rate,
    load_router,
    median_rate,
    udp_frame,
)
from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.native import NativeProgram
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import REAL_TABLE, read_routes

PROBES = {"16-8-8": REPO / "tests" / "mbl" / "programs" / "lpm_probe.mbl",
          "Poptrie": REPO / "tests" / "runtime" / "programs" / "lpm_poptrie_probe.mbl"}
# the two batch drivers (compiler/mbl/native.py): packets one after the other, and the
# prefetch pipeline (slice runs ahead of each block)
DRIVERS = ((False, "one pass"), (True, "prefetch pipeline"))
# the key drivers of a walker's function (NativeProgram.key_function's arguments): the
# plain loop, the slice pipeline and the depth-staged driver (3 stages: a walk's first
# three dependent lines prefetched)
KEY_DRIVERS: tuple[tuple[dict, str], ...] = (
    ({}, "key array, plain loop"), ({"prefetch": True}, "key array, slice pipeline"),
    ({"stages": 3}, "key array, staged (3)"),
    ({"stages": 3, "flat_stages": False}, "key array, staged (3), branching stages"),
    ({"stages": 2}, "key array, staged (2)"))
WALKER_FUNCTIONS = {"IPv4": "fib4_lookup", "IPv6": "fib6_lookup"}


WALKERS = {"16-8-8": "lpm.mbl", "Poptrie": "lpm_poptrie.mbl"}


def router_with(structure: str, root: Path) -> Path:
    """examples/router under `root` with `structure`'s walker under both LPM file names
    (as tests/router_structures.py): the same forwarding code whatever router_common.mbl
    imports by default."""
    shutil.copytree(REPO / "microblocks", root / "microblocks")
    for name in WALKERS.values():
        shutil.copy(REPO / "microblocks" / WALKERS[structure], root / "microblocks" / name)
    (root / "examples" / "router").mkdir(parents=True)
    shutil.copy(ROUTER, root / "examples" / "router")
    return root / "examples" / "router" / "router.mbl"


def poptrie_router(root: Path) -> Path:
    return router_with("Poptrie", root)


def v6_destinations(routes, count: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    prefixes = sorted(routes.v6)
    out = []
    for _ in range(count):
        net, length = prefixes[rng.randrange(len(prefixes))]
        out.append(net | (rng.getrandbits(128) & ((1 << (128 - length)) - 1)))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(REAL_TABLE))
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    routes = read_routes(args.table)
    dsts = destinations(routes, args.packets, args.seed)
    keys4 = Batch.of([d.to_bytes(4, "big") for d in dsts])
    dsts6 = v6_destinations(routes, args.packets, args.seed)
    keys6 = Batch.of([d.to_bytes(16, "big") for d in dsts6])
    frames = Batch.of([udp_frame(d) for d in dsts])
    print(f"{args.packets} destinations in random prefixes, median of {args.runs} runs")
    for name, path in PROBES.items():
        program = compile_file(path)
        for block, batch, label in (("probe4", keys4, "IPv4"), ("probe6", keys6, "IPv6")):
            for prefetch, driver in DRIVERS:
                probe = NativeProgram(program, block, prefetch=prefetch)
                RouteTables.of(probe).load(routes.v4 if label == "IPv4" else {},
                                           routes.v6 if label == "IPv6" else {})
                rate, found = median_rate(probe, batch, args.runs)
                print(f"lookup only, {label}, {name}, {driver}: {rate / 1e6:.1f} M lookups/s "
                      f"({100 * found:.1f} % found)", flush=True)
            for options, driver in KEY_DRIVERS:  # on the last probe's tables
                function = probe.key_function(WALKER_FUNCTIONS[label], **options)
                keys = function.pack(dsts if label == "IPv4" else dsts6)
                rate = key_rate(function, keys, args.runs)
                print(f"lookup only, {label}, {name}, {WALKER_FUNCTIONS[label]}, {driver}: "
                      f"{rate / 1e6:.1f} M lookups/s", flush=True)
            del probe
    for name in WALKERS:
        with tempfile.TemporaryDirectory() as tmp:
            native = NativeProgram(compile_file(router_with(name, Path(tmp))), "router")
            load_router(native, routes)
            rate, forwarded = median_rate(native, frames, args.runs)
            print(f"forward IPv4, router pipeline, {name}: {rate / 1e6:.1f} Mpps "
                  f"({100 * forwarded:.1f} % forwarded)", flush=True)
            del native


if __name__ == "__main__":
    main()
