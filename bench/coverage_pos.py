"""Line coverage of the compiled POS router under the NPF traffic mix (docs/debugging.md,
"Coverage"): which MBL and microcode lines the NPF workload runs, as an lcov tracefile.

    .venv/bin/python -m npkit.bench.coverage_pos [--frames 3000] [--routes 2000]
        [--out router-npf.info]

The set-up of bench/compiled_pos.py (examples/pos_router/pos_router.mbl on 2 x OC-192 POS,
the real table ../shared/data/routes/full-table-2024.txt.gz, 16 next hops), with the NPF
benchmark's traffic: the tester's Internet mix (IMIX sizes and weights of bench/tester;
IPv6 packets below the tester's 60-byte signature are sent at 60), IPv4 and IPv6 mixed half
and half (the NPF "mixed" case), to addresses inside --routes prefixes of the table,
--frames per port at 50 % of line rate.  Coverage is on for the whole
run (Chip.enable_coverage); the lcov file renders with `genhtml FILE -o DIR`.
"""

from __future__ import annotations

import argparse
import time

from npkit.bench.compiled_pos import (
    NEXT_HOPS,
    POS_KINDS,
    REAL_TABLE,
    REPO,
    SEED,
    compile_pos,
    load_tables,
    pos_program,
)
from npkit.bench.tester import Sizes, Stream, generate, pick_destinations
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.coverage import Coverage
from npkit.runtime.routes import read_routes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=3000, help="per port")
    parser.add_argument("--routes", type=int, default=2000, help="prefixes exercised")
    parser.add_argument("--per-port", type=int, default=4, help="forwarding MEs per port")
    parser.add_argument("--out", default="router-npf.info", help="the lcov file")
    args = parser.parse_args(argv)

    program, entry = pos_program()
    routes = read_routes(REAL_TABLE, SEED, NEXT_HOPS)
    native = load_tables(program, routes)
    linked = compile_pos(program, entry, args.per_port)
    dests = {4: pick_destinations(routes.v4, 4, args.routes, seed=1),
             6: pick_destinations(routes.v6, 6, args.routes, seed=1)}
    streams = [Stream(id=p + 1, port=p, framing="pos", family="mixed", sizes=Sizes.imix(clamp=True),
                      count=args.frames, destinations=dests, seed=p + 1) for p in (0, 1)]
    traffic = generate(streams, dict(enumerate(POS_KINDS)))
    frames = {p: [r.data for r in records] for p, records in traffic.ports.items()}

    run = CompiledRun(linked)
    run.load_memories(native)
    run.chip.enable_coverage()
    start = time.perf_counter()
    result = run.run(frames, load=0.5)
    host_s = time.perf_counter() - start
    cov = Coverage.of_chip(run.chip)
    cov.write_lcov(args.out)
    out = sum(len(v) for v in result.out.values())
    print(f"{result.offered} frames offered (IMIX, IPv4/IPv6 mixed, 50 % of line rate), "
          f"{out} forwarded, {result.cycles:,} cycles, {host_s:.1f} s with coverage on")
    print("| file | lines executed / with code |\n|---|---|")
    for file, (hit, total) in cov.summary().items():
        name = file.removeprefix(str(REPO) + "/")
        print(f"| `{name}` | {hit} / {total} |")
    print(f"lcov: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
