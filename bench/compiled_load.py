"""The highest load (fraction of 10GbE line rate, both ports) the compiled dual-stack router
carries without losing a frame, per number of forwarding MEs per port.  Not a test: the
figures of docs/me-backend.md ("Dispatch and link").

    .venv/bin/python -m npkit.bench.compiled_load [--frames 3000] [--routes 3000] 1 2 3 4

Workload: bench/router4_load.py's (seed 1): --routes random /16../24 IPv4 routes + a
default, 16 next hops, --frames 64-byte IPv4/UDP frames per port, all forwarded.  A load
is lossless when every frame leaves (no receive drop, no body drop) and no buffer leaks;
the search bisects between 5 % and 100 % to 1 %.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from npkit.bench import router4_load as r4l
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.link import Manifest, link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import RouteTables

ROUTER = Path(__file__).resolve().parents[1] / "examples" / "router" / "router.mbl"


def tables(program, workload: r4l.Workload) -> NativeProgram:
    native = NativeProgram(program)
    for index in range(1, r4l.NEXT_HOPS + 1):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 1500})
    RouteTables.of(native).load(workload.routes, {})
    return native


def lossless(linked: Manifest, native: NativeProgram, frames: dict[int, list[bytes]],
             load: float) -> bool:
    run = CompiledRun(linked)
    run.load_memories(native)
    result = run.run(frames, load=load)
    sent = sum(len(v) for v in result.out.values())
    return (sent == result.offered and not result.receive_drops and not result.drops
            and result.leak_free)


def highest_lossless(linked: Manifest, native: NativeProgram,
                     frames: dict[int, list[bytes]], step: float = 0.01) -> float:
    low, high = 0.05, 1.0
    if lossless(linked, native, frames, high):
        return high
    while high - low > step:
        mid = round((low + high) / 2, 3)
        low, high = (mid, high) if lossless(linked, native, frames, mid) else (low, mid)
    return low


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("per_port", type=int, nargs="*", default=[1, 2, 3, 4])
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--routes", type=int, default=3000)
    args = parser.parse_args(argv)
    program = compile_file(ROUTER)
    build = compile_me(program, "router")
    workload = r4l.Workload.make(1, args.routes, args.frames, 64)
    native = tables(program, workload)
    for n in args.per_port:
        linked = link(program, build, fwd_mes_per_port=n)
        load = highest_lossless(linked, native, workload.frames)
        print(f"fwd_mes_per_port={n}: lossless up to {load:.1%} of line rate "
              f"({load * r4l.line_rate_mpps(64):.2f} Mpps per port)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
