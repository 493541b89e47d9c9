"""NativeProgram.key_function: an MBL function JIT-compiled over an array of keys (the
route walkers' fib4_lookup / fib6_lookup, as rte_lpm_lookup_bulk), against the control
plane's own lookups (npkit.runtime.lpm's 16-8-8 trie, npkit.runtime.poptrie's walk, both
written separately from the MBL walkers), a brute-force longest-prefix match and the same
walker run as a packet probe; with the plain loop and with the slice pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import PROGRAMS
from hypothesis import given, settings
from hypothesis import strategies as st
from lpm_reference import brute_force

from npkit.compiler.mbl import NativeProgram, compile_file, compile_source
from npkit.compiler.mbl.native import KeyFunction, NativeError
from npkit.runtime.lpm import RouteTables

PROBES = {"16-8-8": PROGRAMS / "lpm_probe.mbl",
          "Poptrie": Path(__file__).parents[1] / "runtime" / "programs" /
          "lpm_poptrie_probe.mbl"}
ROUTE, NEXT_HOP = 0x40000000, 0xFFFF  # the walkers' leaf word (microblocks/lpm.mbl)
# key drivers: the plain loop, the default slice pipeline, and a deeper one (two slice runs,
# the first only prefetching) so that a walk's reads are split across runs; the depth-staged
# driver as the benches run it, and deeper and shallower ones with short distances (so the
# hypothesis arrays, tens to hundreds of keys, run its checked ends and its middle)
DRIVERS = {"plain": {}, "slice": {"prefetch": True},
           "slice-0-1-2": {"prefetch": True, "budgets": (0, 1, 2), "distance": 3},
           "staged": {"stages": 3},
           "staged-branching": {"stages": 3, "flat_stages": False},
           "staged-5-1": {"stages": 5, "stage_distance": 1},
           "staged-1-7": {"stages": 1, "stage_distance": 7}}


@dataclass
class Walker:
    bits: int
    probe: NativeProgram
    table: object  # MultibitTrie or Poptrie
    functions: dict[str, KeyFunction]

    def next_hops(self, driver: str, keys: list[int]) -> list[int | None]:
        function = self.functions[driver]
        words = function.unpack(function(function.pack(keys)))
        return [w & NEXT_HOP if w & ROUTE else None for w in words]

    def probe_hops(self, keys: list[int]) -> list[int | None]:
        verdicts = self.probe.run([k.to_bytes(self.bits // 8, "big") for k in keys])
        return [v.port if v.kind == "forward" else None for v in verdicts]


@pytest.fixture(scope="module")
def walkers() -> dict[tuple[str, int], Walker]:
    out = {}
    for structure, path in PROBES.items():
        program = compile_file(path)
        for bits, block, fn in ((32, "probe4", "fib4_lookup"), (128, "probe6", "fib6_lookup")):
            probe = NativeProgram(program, block, prefetch=False)
            tables = RouteTables.of(probe)
            functions = {name: probe.key_function(fn, **kw) for name, kw in DRIVERS.items()}
            out[structure, bits] = Walker(bits, probe, tables.v4 if bits == 32 else tables.v6,
                                          functions)
    return out


# prefixes nest under a few bases; lengths straddle both structures' level boundaries
BASES = {32: [0x0A000000, 0x0A010000, 0xC0000200], 128: [0x20010DB8 << 96, 0x2A000000 << 96]}
LENGTHS = {32: [0, 8, 15, 16, 17, 18, 19, 23, 24, 25, 30, 31, 32],
           128: [0, 16, 20, 21, 24, 32, 47, 48, 49, 64, 127, 128]}


@st.composite
def routes(draw, bits: int) -> dict[tuple[int, int], int]:
    out = {}
    for _ in range(draw(st.integers(0, 30))):
        length = draw(st.one_of(st.sampled_from(LENGTHS[bits]), st.integers(0, bits)))
        base = draw(st.one_of(st.sampled_from(BASES[bits]), st.integers(0, 2**bits - 1)))
        noise = draw(st.integers(0, 2**bits - 1)) >> draw(st.integers(0, bits))
        value = (base ^ noise) & ~((1 << (bits - length)) - 1) & ((1 << bits) - 1)
        out[value, length] = draw(st.integers(0, 3))
    return out


def keys_around(table: dict[tuple[int, int], int], bits: int,
                rng: np.random.Generator) -> list[int]:
    """Both edges of every prefix, just outside them, one address inside, random ones."""
    def random() -> int:
        return int.from_bytes(rng.bytes(bits // 8), "big")

    out = [0, 2**bits - 1] + [random() for _ in range(40)]
    for network, length in table:
        last = network | ((1 << (bits - length)) - 1)
        out += [network, last, (last + 1) % 2**bits, (network - 1) % 2**bits,
                network | (random() & ((1 << (bits - length)) - 1))]
    return out


@pytest.mark.parametrize("structure", list(PROBES))
@pytest.mark.parametrize("bits", [32, 128])
def test_key_array_lookups_match_the_reference_walks(walkers, structure, bits):
    walker = walkers[structure, bits]

    @settings(max_examples=40, deadline=None)
    @given(routes(bits), st.integers(0, 2**32 - 1))
    def run(table, seed):
        walker.table.build(table)
        keys = keys_around(table, bits, np.random.default_rng(seed))
        expected = [walker.table.lookup(k) for k in keys]
        assert expected == [brute_force(table, bits, k) for k in keys]
        for driver in DRIVERS:
            assert walker.next_hops(driver, keys) == expected, driver
        assert walker.probe_hops(keys) == expected

    run()


def test_key_array_sees_updates_of_the_program_memories(walkers):
    walker = walkers["16-8-8", 32]
    walker.table.build({(0x0A000000, 8): 1})
    keys = [0x0A010203, 0x0B000000]
    assert walker.next_hops("slice", keys) == [1, None]
    walker.table.add(0x0A010200, 24, 2)
    assert walker.next_hops("slice", keys) == [2, None]
    assert walker.next_hops("plain", []) == []
    assert walker.next_hops("staged", []) == []
    assert walker.next_hops("staged", keys) == [2, None]


WIDE = """
fn mix(x: bit<128>) -> bit<96> { return (x ^ (x >> 64)) as bit<96>; }
fn pair(a: bit<32>, b: bit<32>) -> bit<32> { return a + b; }
header k_t { k: bit<32>; }
block b { let k = packet<k_t>(0) else drop(runt); forward(0); }
"""


def test_wide_keys_and_results_round_trip():
    native = NativeProgram(compile_source(WIDE), "b")
    mix = native.key_function("mix")
    assert (mix.key_words, mix.result_words) == (4, 3)
    keys = [0, 1, (1 << 128) - 1, 0x0123456789ABCDEF_FEDCBA9876543210, 5 << 64]
    packed = mix.pack(keys)
    assert packed.shape == (5, 4) and int(packed[3, 0]) == 0x76543210  # low word first
    assert mix.unpack(mix(packed)) == [(k ^ (k >> 64)) & ((1 << 96) - 1) for k in keys]
    staged = native.key_function("mix", stages=2, stage_distance=2)  # no memory: no prefetch
    assert staged.unpack(staged(packed)) == mix.unpack(mix(packed))


def test_what_a_key_function_refuses():
    native = NativeProgram(compile_source(WIDE), "b")
    with pytest.raises(NativeError, match="no function"):
        native.key_function("nope")
    with pytest.raises(NativeError, match="one integer"):
        native.key_function("pair")
    with pytest.raises(NativeError, match="stages"):
        native.key_function("mix", stages=9)
    with pytest.raises(NativeError, match="stages"):
        native.key_function("mix", stages=2, prefetch=True)
    with pytest.raises(NativeError, match="stages"):
        NativeProgram(compile_source(WIDE), "b", stages=-1)
    mix = native.key_function("mix")
    with pytest.raises(NativeError, match="uint32"):
        mix(np.zeros((4, 4), dtype=np.int64))
    with pytest.raises(NativeError, match="uint32"):
        mix(np.zeros(4, dtype=np.uint32))  # 128-bit keys take 4 words each
