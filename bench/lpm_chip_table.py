"""The full real table in Poptrie form on the simulated IXP2800: does it fit, does it forward.

    python -m npkit.bench.lpm_chip_table [--frames 2000] [--table PATH]

The router (examples/router/router.mbl) with microblocks/lpm_poptrie.mbl in place of lpm.mbl
(in a temporary copy of the sources) is compiled, linked for ixp2800-2x10gbe and loaded with
the full 2024 table (IPv4 and IPv6, next hops by the documented rule).  Reported: the
program's SRAM memories and how much of each table is used, against the preset's 4 x 8 MB,
the SRAM channel size the link chose, then --frames IPv4/IPv6 frames to destinations in
random prefixes through the chip and the native target: the frames each port sends must
be the same.  A benchmark, not a test (tests/runtime/test_poptrie_router.py is the test).
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections import Counter
from pathlib import Path

from npkit.bench.lpm_native_rate import poptrie_router
from npkit.bench.native_fwd import udp_frame
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.link.plan import memory_map
from npkit.link.sram import CHANNEL_SHIFT
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import REAL_TABLE, default_next_hop, read_routes
from npkit.sim.config import ChipConfig

PORTS = 2


def v6_frame(dst: int) -> bytes:
    payload = bytes(18)
    udp = (1024).to_bytes(2, "big") + (9).to_bytes(2, "big") + (26).to_bytes(2, "big") + \
        bytes(2) + payload
    header = bytes.fromhex("60000000") + len(udp).to_bytes(2, "big") + bytes([17, 64]) + \
        bytes.fromhex("20010db8000000000000000000000009") + dst.to_bytes(16, "big")
    return bytes.fromhex("02000000ff01" "02000000ff02" "86dd") + header + udp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(REAL_TABLE))
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    routes = read_routes(args.table)
    cfg = ChipConfig.load("ixp2800")
    print(f"IXP2800 preset SRAM: {cfg.sram_channels} x {cfg.sram_channel_bytes / 2**20:.0f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        program = compile_file(poptrie_router(Path(tmp)))
    sram = [m for m in memory_map(program) if m.space == "sram"]
    print(f"router SRAM memories: {sum(m.bytes for m in sram) / 2**20:.2f} MB "
          f"({', '.join(f'{m.name} {m.bytes / 2**20:.2f} MB' for m in sram if m.bytes)})")
    native = NativeProgram(program)
    start = time.perf_counter()
    tables = RouteTables.of(native)
    tables.load(routes.v4, routes.v6)
    print(f"routes: {len(routes.v4)} IPv4 + {len(routes.v6)} IPv6 built in "
          f"{time.perf_counter() - start:.2f} s; used: IPv4 {tables.v4.bytes_used / 2**20:.2f} "
          f"MB, IPv6 {tables.v6.bytes_used / 2**20:.2f} MB of 8 MB each")
    for nh in sorted(set(routes.v4.values()) | set(routes.v6.values())):
        native.write("nexthops", nh, default_next_hop(nh, PORTS))
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    channel = linked.overrides.get("sram", {}).get("channel_bytes")
    print("link: SRAM channels as the preset" if channel is None else
          f"link: SRAM channels of {channel / 2**20:.0f} MB (the program's memories do not "
          f"fit the preset's {cfg.sram_channel_bytes / 2**20:.0f} MB channels)")
    placed = sorted((m for m in linked.program.memories if m.space == "sram" and m.bytes),
                    key=lambda m: m.address)
    print("placement: " + ", ".join(
        f"{m.name} channel {m.address >> CHANNEL_SHIFT} at {m.address & 0x3FFFFFF:#x}"
        for m in placed))
    rng = random.Random(args.seed)
    v4, v6 = sorted(routes.v4), sorted(routes.v6)
    frames = []
    for _ in range(args.frames):
        if rng.random() < 0.8:
            net, length = v4[rng.randrange(len(v4))]
            frames.append(udp_frame(net | rng.getrandbits(32) & ((1 << (32 - length)) - 1)))
        else:
            net, length = v6[rng.randrange(len(v6))]
            frames.append(v6_frame(net | rng.getrandbits(128) & ((1 << (128 - length)) - 1)))
    want = native.run(frames, in_ports=0)
    chip = CompiledRun(linked)
    chip.load_memories(native)
    result = chip.run({0: frames}, load=0.2)
    kinds = Counter(v.kind for v in want)
    same = all(sorted(result.frames(p)) == sorted(v.data for v in want
                                                   if v.kind == "forward" and v.port == p)
               for p in range(PORTS))
    print(f"{args.frames} frames: native {dict(kinds)}; chip sent "
          f"{sum(len(result.frames(p)) for p in range(PORTS))}; same frames per port: {same}")


if __name__ == "__main__":
    main()
