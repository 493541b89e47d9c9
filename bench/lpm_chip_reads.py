"""Dependent SRAM reads per IPv4 lookup of the chip's Poptrie walker (issue 19, acceptance 2's
first half: at most 3 for at least 99 % of the table's prefixes, by prefix and by traffic).

    python -m npkit.bench.lpm_chip_reads [--table PATH] [--traffic 100000] [--check 3000]

The real 2024 IPv4 table (next hops by the documented rule) is built as a Poptrie
(npkit.runtime.poptrie) in a native program's memory.  For every prefix (a lookup of its
first address) and for --traffic destinations drawn uniformly inside uniformly drawn
prefixes, the host walk (`poptrie.walk`, the walker's steps) gives the dependent reads:
the direct entry, one per node, the leaf.  Reported as the share at <= 1, 2, 3, ... reads.

The count is held to the compiled code: microblocks/lpm_poptrie.mbl's fib4_lookup is
compiled by the ME front end to WIR and run on the WIR interpreter for --check of the
prefixes and of the traffic; each run's executed memory reads (commands) must equal the
host count, its leaf word the native target's, and the words those commands read are
reported.  On the ME each WIR read is one SRAM command and each depends on the one before
(its address comes from the word read), so commands per lookup are dependent reads.
A benchmark, not a test (tests/runtime/test_poptrie_router.py tests the walker).
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from pathlib import Path

import numpy as np

import npkit.microblocks
from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.compiler.mbl.lower import SPACE_IDS
from npkit.compiler.mbl.sema import Program
from npkit.compiler.mbl.types import META_FIELDS
from npkit.compiler.me import wir
from npkit.compiler.me.front import to_wir
from npkit.compiler.me.interp import Machine, run
from npkit.runtime.lpm import RouteTables
from npkit.runtime.poptrie import POPTRIE4, walk
from npkit.runtime.routes import REAL_TABLE, read_routes

WALKER = Path(npkit.microblocks.__path__[0]) / "lpm_poptrie.mbl"
PROBE = """
import "{walker}";
header key4_t {{ addr: bit<32>; }}
block probe4 {{
    let key = packet<key4_t>(0) else drop(runt);
    meta.user = fib4_lookup(key.addr);
    drop(done);
}}
"""


def traffic(prefixes: list[tuple[int, int]], count: int, rng: random.Random) -> list[int]:
    out = []
    for _ in range(count):
        network, length = rng.choice(prefixes)
        out.append(network | rng.getrandbits(32 - length) if length < 32 else network)
    return out


def share(counts: Counter[int]) -> str:
    total = sum(counts.values())
    running, parts = 0, []
    for reads in sorted(counts):
        running += counts[reads]
        parts.append(f"<= {reads}: {100 * running / total:.2f} %")
    return ", ".join(parts)


class CompiledWalker:
    """fib4_lookup as the ME front end compiles it, on the WIR interpreter."""

    def __init__(self, native: NativeProgram, program: Program) -> None:
        self.fn = to_wir(program, "probe4")
        self.reads = [i for b in self.fn.blocks for i in b.instrs
                      if isinstance(i, wir.MemRead)]
        sram = native.memory["sram"]
        nz = np.nonzero(sram)[0]
        self.sram = dict(zip(nz.tolist(), sram[nz].tolist(), strict=True))

    def lookup(self, address: int) -> tuple[int, int, int]:
        """(leaf word, commands, words) of one lookup."""
        m = run(self.fn, Machine(bytearray(address.to_bytes(4, "big")),
                                 meta=_meta(4), memory={SPACE_IDS["sram"]: self.sram}))
        done = [i for i in self.reads if i.dsts[0].id in m.registers]
        return m.meta[META_FIELDS["user"].word], len(done), sum(len(i.dsts) for i in done)


def _meta(length: int) -> list[int]:
    meta = [0] * 16
    meta[META_FIELDS["len"].word] = length
    return meta


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", default=str(REAL_TABLE))
    parser.add_argument("--traffic", type=int, default=100_000)
    parser.add_argument("--check", type=int, default=3000,
                        help="lookups of each kind run through the compiled walker")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    routes = read_routes(args.table)
    v4 = routes.v4
    program = compile_source(PROBE.format(walker=WALKER), "lpm_chip_reads.mbl")
    native = NativeProgram(program, "probe4", prefetch=False)
    tables = RouteTables.of(native)
    tables.load(v4, {})
    words = native.region("fib4_poptrie")
    print(f"IPv4: {len(v4):,} prefixes, Poptrie {tables.v4.bytes_used / 2**20:.2f} MiB "
          f"(D{POPTRIE4.direct_bits} + 6-bit nodes)")

    prefixes = sorted(v4)
    by_prefix = Counter(walk(words, POPTRIE4, network)[1] for network, _ in prefixes)
    dests = traffic(prefixes, args.traffic, rng)
    by_traffic = Counter(walk(words, POPTRIE4, d)[1] for d in dests)
    print(f"dependent reads by prefix  ({len(prefixes):,}): {share(by_prefix)}")
    print(f"dependent reads by traffic ({len(dests):,}): {share(by_traffic)}")

    walker = CompiledWalker(native, program)
    for label, sample in (("prefixes", [n for n, _ in rng.sample(prefixes, args.check)]),
                          ("traffic", rng.sample(dests, args.check))):
        commands, words_read = Counter(), Counter()
        for address in sample:
            leaf, n_commands, n_words = walker.lookup(address)
            want_leaf, want_reads = walk(words, POPTRIE4, address)
            if leaf != want_leaf or n_commands != want_reads:
                raise SystemExit(f"{address:#010x}: compiled walker {leaf:#x} in {n_commands} "
                                 f"reads, host walk {want_leaf:#x} in {want_reads}")
            commands[n_commands] += 1
            words_read[n_words] += 1
        mean_words = sum(k * v for k, v in words_read.items()) / len(sample)
        print(f"compiled fib4_lookup on {len(sample):,} {label}: the host count in every "
              f"lookup; SRAM commands {share(commands)}; words per lookup {mean_words:.2f}")


if __name__ == "__main__":
    main()
