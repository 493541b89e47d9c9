"""The Poptrie route tables (npkit.runtime.poptrie) against references written here: a
brute-force longest-prefix match over a plain dict, an independent walker of the word
format (docs/lpm.md, "Poptrie"), and a replay of the write log onto a second memory.

The concurrency property is tested, not claimed: the log of every update is replayed one
word at a time (in order, and shuffled within its barrier segments), and at every
intermediate memory state each sampled address must get the answer from before or after
that update.  No write may land in a block that is retired and not yet reclaimed, and
deleting every route and reclaiming returns every block."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lpm_reference import brute_force

from npkit.runtime.lpm import LpmError
from npkit.runtime.poptrie import POPTRIE4, POPTRIE6, Poptrie, PoptrieShape

CHILD, ROUTE = 1 << 31, 1 << 30
SHAPES = {4: POPTRIE4, 6: POPTRIE6}
BITS = {4: 32, 6: 128}
BLOCK_WORDS = 40_000  # memory for nodes and leaves beyond the direct array


def walk(words: np.ndarray, shape: PoptrieShape, address: int,
         path: set[int] | None = None) -> tuple[int | None, int]:
    """The lookup from the paper's pseudo-code (Asai & Ohara 2015, Algorithm 2), over this
    layout: a node is 8 words, the low half's [vector, base1, leafvec, base0] then the high
    half's, each half's bases counting its first child / leaf (so a 6-bit index v is
    looked up in one half only, as the chip does).  Returns (next hop, reads); the word
    offsets it reads go into `path`."""
    seen = path if path is not None else set()
    total = shape.direct_bits + shape.node_levels * 6
    key = address << (total - shape.key_bits)

    def read(index: int) -> int:
        seen.add(index)
        return int(words[index])

    word = read(key >> (total - shape.direct_bits))
    reads, offset = 1, shape.direct_bits
    if not word & CHILD:
        return (word & 0xFFFF if word & ROUTE else None), reads
    node = word & (CHILD - 1)
    while True:
        reads += 1
        v = (key >> (total - offset - 6)) & 63
        half = node + 4 if v >= 32 else node
        bit = v % 32
        below = [b for b in range(bit + 1) if (read(half) >> b) & 1]
        if below[-1:] != [bit]:
            break
        node = read(half + 1) + 8 * (len(below) - 1)
        offset += 6
    runs = sum((read(half + 2) >> b) & 1 for b in range(bit + 1))
    leaf = read(read(half + 3) + runs - 1)
    return (leaf & 0xFFFF if leaf & ROUTE else None), reads + 1


def new_table(family: int, log: bool = True, blocks: int = BLOCK_WORDS) -> Poptrie:
    shape = SHAPES[family]
    return Poptrie(shape, np.zeros(shape.direct_words + blocks, dtype=np.uint32), log=log,
                   host_words=1 << 22)


# Small, nested key spaces; lengths straddle the direct and stride boundaries
# (IPv4: 18, 24, 30; IPv6: 20, 26, 32, ..., 50).
BASES = {4: [0x0A000000, 0x0A010000, 0x0A01FF00, 0xC0000200],
         6: [0x20010DB8 << 96, (0x20010DB8 << 96) | (5 << 80), (0x20010DB8 << 96) | 0xFF]}
LENGTHS = {4: [0, 7, 8, 17, 18, 19, 23, 24, 25, 29, 30, 31, 32],
           6: [0, 16, 19, 20, 21, 32, 44, 48, 49, 64, 120, 127, 128]}


@st.composite
def prefixes(draw, family: int) -> tuple[int, int]:
    bits = BITS[family]
    length = draw(st.sampled_from(LENGTHS[family]))
    base = draw(st.sampled_from(BASES[family]))
    noise = draw(st.integers(0, 255)) << draw(st.sampled_from([0, 5, bits - 24, bits - 8]))
    value = (base ^ noise) & ~((1 << (bits - length)) - 1) & ((1 << bits) - 1)
    return value, length


def operations(family: int):
    route = st.tuples(prefixes(family), st.integers(0, 3))  # few next hops: equal leaves
    step = st.one_of(st.tuples(st.just("add"), route),
                     st.tuples(st.just("delete"), st.integers(0, 10**6)),
                     st.tuples(st.just("reclaim"), st.integers(0, 3)))
    return st.tuples(st.lists(route, max_size=12), st.lists(step, min_size=1, max_size=25))


def samples(routes: dict[tuple[int, int], int], bits: int) -> list[int]:
    """Addresses at and around every prefix's edges."""
    out = {0, (1 << bits) - 1}
    for network, length in routes:
        last = network | ((1 << (bits - length)) - 1)
        out.update({network, last, (network - 1) % (1 << bits), (last + 1) % (1 << bits),
                    network | ((1 << (bits - length)) >> 1)})
    return sorted(out)


def segments(log) -> list[list[tuple[int, int]]]:
    cuts = [0, *log.barriers.tolist(), len(log.indices)]
    pairs = list(zip(log.indices.tolist(), log.values.tolist(), strict=True))
    return [pairs[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


def retired_words(table: Poptrie) -> set[int]:
    return {w for offset, size, _ in table.retired() for w in range(offset, offset + size)}


@pytest.mark.parametrize("family", [4, 6])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_updates_give_old_or_new_answer_at_every_step(family: int, data) -> None:
    bits, shape = BITS[family], SHAPES[family]
    initial, steps = data.draw(operations(family))
    shuffle = data.draw(st.booleans())
    rng = random.Random(data.draw(st.integers(0, 1000)))
    table = new_table(family)
    reference: dict[tuple[int, int], int] = {}
    replica = np.zeros_like(table.words)
    for (value, length), nh in initial:
        reference[(value, length)] = nh
    table.build(reference)
    for segment in segments(table.take_log()):
        for index, value in segment:
            replica[index] = value
    assert np.array_equal(replica, table.words)
    for op, arg in steps:
        before = dict(reference)
        retired = retired_words(table)
        if op == "add":
            (value, length), nh = arg
            table.add(value, length, nh)
            reference[(value, length)] = nh
        elif op == "delete":
            if not reference:
                with pytest.raises(LpmError):
                    table.delete(0, 0)
                continue
            key = sorted(reference)[arg % len(reference)]
            table.delete(*key)
            del reference[key]
        else:
            table.reclaim(max(0, table.number - arg))
        log = table.take_log()
        # An answer depends only on the words its walk reads: after each write, re-walk
        # the probes whose last walk read that word.
        answers = {a: (brute_force(before, bits, a), brute_force(reference, bits, a))
                   for a in samples(before | reference, bits)}
        paths: dict[int, set[int]] = {}
        for address in answers:
            paths[address] = set()
            walk(replica, shape, address, paths[address])
        for segment in segments(log):
            if shuffle:
                rng.shuffle(segment)
            for index, value in segment:
                assert index not in retired, "a write into a block still in its grace period"
                replica[index] = value
                for address, path in paths.items():
                    if index in path:
                        path.clear()
                        got = walk(replica, shape, address, path)[0]
                        assert got in answers[address], hex(address)
        assert np.array_equal(replica, table.words)
        for address, (_, after) in answers.items():
            assert table.lookup(address) == after
    for key in sorted(reference, key=lambda k: -k[1]):
        table.delete(*key)
    table.reclaim()
    stats = table.stats()
    assert stats["words_retired"] == 0 and not table.retired()
    assert table.words_used == shape.direct_words
    assert not table.words[:shape.direct_words].any()
    assert stats["words_free"] == stats["words_high_water"] - shape.direct_words


@pytest.mark.parametrize("family", [4, 6])
def test_full_memory_changes_nothing(family: int) -> None:
    bits = BITS[family]
    table = new_table(family, log=False, blocks=60)
    base = BASES[family][0]
    table.add(base, 24 if family == 4 else 32, 1)
    words = table.words.copy()
    with pytest.raises(LpmError, match="full"):
        for i in range(1, 64):
            table.add(base | i << 5 if family == 4 else base | i << 100, bits - 3, 2)
            words = table.words.copy()
    assert np.array_equal(words, table.words)
    for (network, _), nh in table.routes.items():
        assert table.lookup(network) == nh


def test_reads_per_prefix_length() -> None:
    table = new_table(4, log=False)
    for length in (8, 18, 19, 24, 25, 30, 31, 32):
        table.add(0x0A000000 & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF, length, length)
        assert walk(table.words, POPTRIE4, 0x0A000000)[1] == POPTRIE4.reads(length)


def test_bad_input() -> None:
    table = new_table(4, log=False)
    with pytest.raises(LpmError):
        table.add(0x0A000001, 24, 1)
    with pytest.raises(LpmError):
        table.add(0x0A000000, 33, 1)
    with pytest.raises(LpmError):
        table.add(0x0A000000, 8, 1 << 16)
    with pytest.raises(LpmError):
        table.delete(0x0A000000, 8)


def test_the_replay_check_catches_a_link_written_before_its_blocks() -> None:
    """The intermediate-state check has teeth: one update's log with the linking write
    (the direct entry, last in the log) moved to the front gives a third answer on the way."""
    table = new_table(4)
    before = {(0x0A000000, 8): 1}
    table.build(before)
    table.take_log()
    replica = table.words.copy()
    table.add(0x0A010100, 24, 2)
    log = table.take_log()
    pairs = list(zip(log.indices.tolist(), log.values.tolist(), strict=True))
    assert pairs[-1][0] < POPTRIE4.direct_words

    def answers(order: list[tuple[int, int]]) -> set[int | None]:
        words = replica.copy()
        seen = set()
        for index, value in order:
            words[index] = value
            seen.add(walk(words, POPTRIE4, 0x0A010105)[0])
        return seen

    assert answers(pairs) == {1, 2}
    assert answers([pairs[-1], *pairs[:-1]]) - {1, 2}
