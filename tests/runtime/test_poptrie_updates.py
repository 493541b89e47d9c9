"""What a Poptrie update touches and what it counts (runtime/trie/poptrie.cpp), and the
XScale cost model over those counts (npkit.runtime.xscale_update).

References written here: the write log (every word the update wrote, in order) for the
counters, a walk of the word format for which blocks an update may rewrite in place, and
a plain least-recently-filled list per set for the round-robin data cache."""

from __future__ import annotations

import random

import numpy as np
import pytest

from npkit.runtime._trie import Sequence, Trie
from npkit.runtime.poptrie import (
    BASE0_LO,
    BASE1_HI,
    BASE1_LO,
    NODE_WORDS,
    POPTRIE4,
    POPTRIE6,
    STRIDE,
    Poptrie,
)
from npkit.runtime.xscale_update import DataCache, UpdateCostModel, UpdateCosts

CHILD = 1 << 31


def table(family: int = 4) -> Poptrie:
    shape = POPTRIE4 if family == 4 else POPTRIE6
    return Poptrie(shape, np.zeros(shape.direct_words + 50_000, dtype=np.uint32), log=True,
                   host_words=1 << 22)


def root_of(t: Poptrie, address: int) -> int:
    entry = int(t.words[address >> (32 - POPTRIE4.direct_bits)])
    assert entry & CHILD
    return entry & ~CHILD


def test_a_next_hop_change_rewrites_one_leaf_in_place() -> None:
    """Same bitmaps, one changed leaf: one word written, in the live leaf block; nothing
    allocated, retired or relinked, and the counters say so."""
    t = table()
    t.build({(0x0A000000, 8): 1, (0x0A010100, 24): 2, (0x0A010300, 24): 3})
    t.take_log()
    t.take_counters()
    root = root_of(t, 0x0A010100)
    base0 = int(t.words[root + BASE0_LO])  # the node's first leaf
    t.add(0x0A010100, 24, 7)
    log = t.take_log()
    counters = t.take_counters()
    assert log.indices.tolist() == [base0 + 1] and log.values.tolist() == [(1 << 30) | 7]
    assert root_of(t, 0x0A010100) == root and not t.retired()
    assert counters["words_written"] == 1 and counters["blocks_allocated"] == 0
    assert counters["blocks_retired"] == 0 and counters["nodes_visited"] == 1
    assert counters["updates"] == 1 and counters["entries"] == 1
    assert t.lookup(0x0A010105) == 7 and t.lookup(0x0A010305) == 3


def test_a_new_leaf_run_copies_the_node_not_its_siblings_subtrees() -> None:
    """A route that splits a leaf run changes the node's leaf bitmap: a new leaf block and a
    new node header, linked by one direct-entry write; the child below (another /30) is
    not copied: its blocks stay where they were."""
    t = table()
    t.build({(0x0A000000, 8): 1, (0x0A010100, 30): 2})
    t.take_log()
    root = root_of(t, 0x0A010100)
    child_block = int(t.words[root + BASE1_LO])  # the first child
    grandchild_leaves = int(t.words[child_block + BASE0_LO])
    t.add(0x0A010300, 24, 5)
    log = t.take_log()
    written = set(log.indices.tolist())
    assert child_block not in written and grandchild_leaves not in written
    new_root = root_of(t, 0x0A010100)
    assert new_root != root and int(t.words[new_root + BASE1_LO]) == child_block
    assert log.indices[-1] == 0x0A010100 >> (32 - POPTRIE4.direct_bits)
    assert {(root, NODE_WORDS)} <= {(o, s) for o, s, _ in t.retired()}
    assert t.lookup(0x0A010305) == 5 and t.lookup(0x0A010101) == 2


@pytest.mark.parametrize("family", [4, 6])
def test_counters_match_the_write_log(family: int) -> None:
    """words_written counts exactly the logged writes; the host trie's painted words and
    the reads are counted; take_counters zeroes them."""
    rng = random.Random(family)
    bits = 32 if family == 4 else 128
    t = table(family)
    routes = {}
    for _ in range(300):
        length = rng.choice([8, 16, 20, 24, 28, 32] if family == 4 else [24, 32, 40, 48, 64])
        value = rng.getrandbits(length) << (bits - length) if length else 0
        routes[(value, length)] = rng.randrange(16)
    t.build(routes)
    t.take_log()
    t.take_counters()
    t.trace(True)
    written = updates = 0
    for (value, length), hop in list(routes.items())[:100]:
        t.delete(value, length)
        t.add(value, length, (hop + 1) % 16)
        written += len(t.take_log().indices)
        updates += 2
    counters = t.take_counters()
    assert counters["words_written"] == written
    assert counters["updates"] == updates
    assert counters["host_words_written"] > 0 and counters["image_words_read"] > 0
    # a node scans its 64 slots, or (an ancestor of the prefix's node) reads one; before
    # that, the subtree minimum of its host ply: one word, or 16 (64 depth bytes) if unknown
    assert counters["nodes_visited"] <= counters["host_words_read"] \
        <= (64 + 16) * counters["nodes_visited"]
    trace = t.take_trace()
    assert len(trace) >= counters["image_words_read"]
    assert t.take_counters()["updates"] == 0 and len(t.take_trace()) == 0


@pytest.mark.parametrize("family", [4, 6])
def test_updates_without_the_log_write_and_count_as_with_it(family: int) -> None:
    """Without the write log, a copied children block is moved four words per step (not
    word by word through the logged write): the same updates leave the same words and
    count the same work as the logged table, whose writes the test above checks."""
    rng = random.Random(100 + family)
    bits = 32 if family == 4 else 128
    shape = POPTRIE4 if family == 4 else POPTRIE6
    tables = [Poptrie(shape, np.zeros(shape.direct_words + 200_000, dtype=np.uint32), log=log,
                      host_words=1 << 22) for log in (True, False)]
    # Routes under one direct entry, dense enough that nodes have siblings to copy.
    top = shape.direct_bits
    routes = {}
    for _ in range(400):
        length = rng.randrange(top + 1, min(top + 21, bits + 1))
        entry = 0x2A5 << (top - 10)  # the direct entry's key bits
        value = (entry << (length - top) | rng.getrandbits(length - top)) << (bits - length)
        routes[(value, length)] = rng.randrange(16)
    for t in tables:
        t.build(routes)
        t.take_counters()
    for (value, length), hop in list(routes.items())[:150]:
        for t in tables:
            t.delete(value, length)
            t.add(value, length, (hop + 1) % 16)
            t.reclaim()  # new blocks then reuse old ones: some words are already equal
    logged, plain = tables
    counts = [t.take_counters() for t in tables]
    assert counts[0] == counts[1] and counts[0]["words_written"] > 0
    assert counts[0]["host_words_written"] > 0
    assert np.array_equal(logged.words, plain.words)
    assert len(logged.take_log().indices) > 0


@pytest.mark.parametrize("log", [True, False])
@pytest.mark.parametrize("family", [4, 6])
def test_host_words_written_counts_the_host_tries_writes(family: int, log: bool) -> None:
    """host_words_written is the number of words the host-side trie changed, with or
    without the write log: the reference is a twin of the host trie (same geometry, same
    updates) that logs its writes."""
    rng = random.Random(200 + family)
    shape = POPTRIE4 if family == 4 else POPTRIE6
    bits = shape.key_bits
    t = Poptrie(shape, np.zeros(shape.direct_words + 100_000, dtype=np.uint32), log=log,
                host_words=1 << 22)
    twin = Trie(shape.expanded_bits, shape.direct_bits, STRIDE,
                np.zeros(1 << 22, dtype=np.uint32), True, Sequence())
    routes = {}
    for _ in range(200):
        length = rng.choice([8, 16, 20, 24, 28, 32] if family == 4 else [16, 24, 32, 48, 64])
        routes[(rng.getrandbits(length) << (bits - length), length)] = rng.randrange(16)
    t.build(routes)
    for (value, length), hop in routes.items():
        twin.add(value << shape.pad, length, hop)
    twin.take_log()
    t.take_counters()
    written = 0
    for (value, length), hop in list(routes.items())[:80]:
        for op in ("delete", "add"):
            if op == "delete":
                t.delete(value, length)
                twin.delete(value << shape.pad, length)
            else:
                t.add(value, length, (hop + 1) % 16)
                twin.add(value << shape.pad, length, (hop + 1) % 16)
            t.reclaim()
            twin.reclaim()
            written += len(twin.take_log()[0])
    assert written > 0
    assert t.take_counters()["host_words_written"] == written


def test_data_cache_is_round_robin_per_set() -> None:
    """Against a plain model: per set, a list of lines filled in order; a miss replaces the
    oldest fill (round robin is fill order when nothing is invalidated)."""
    cache = DataCache(total_bytes=4 * 2 * 32, ways=2, line_bytes=32)  # 4 sets, 2 ways
    assert cache.sets == 4
    reference: dict[int, list[int]] = {s: [] for s in range(4)}
    rng = random.Random(1)
    for _ in range(2000):
        line = rng.randrange(24)
        ways = reference[line % 4]
        expected = line in ways
        if not expected:
            if len(ways) == 2:
                ways.pop(0)
            ways.append(line)
        assert cache.access(line) == expected


def test_cost_model_adds_instructions_and_line_fills() -> None:
    costs = UpdateCosts.load()
    model = UpdateCostModel(miss_cycles=100)
    counters = dict.fromkeys(["updates", "entries", "nodes_visited", "host_words_read",
                              "image_words_read", "words_written", "blocks_allocated",
                              "blocks_retired", "host_words_written"], 0)
    counters.update(updates=1, nodes_visited=2, host_words_read=128, image_words_read=10)
    trace = np.array([0, 1, 7, 8, (1 << 63) | 5], dtype=np.uint64)  # lines 0, 0, 0, 1, host
    cost = model.cost(counters, trace)
    instructions = (costs.per_update + 2 * costs.per_node + 128 * costs.per_host_slot
                    + 10 * costs.per_image_read)
    assert cost.instructions == instructions
    assert cost.misses == 3 + costs.route_map_misses
    assert cost.cycles == instructions + 100 * cost.misses
    assert model.cost(counters, trace).misses == costs.route_map_misses  # now cached


def test_a_changed_grandchild_relinks_its_parent_in_place() -> None:
    """A new leaf run two levels below the root: the bottom node (new bitmaps) is copied
    with its sibling block, and its parent, whose bitmaps stay, gets its two base1 words
    (one per half) rewritten in place after a barrier; the root and the direct entry keep
    their words, and every other write lands in a newly allocated block."""
    t = table()
    t.build({(0x0A000000, 8): 1, (0x0A010100, 32): 2})
    t.take_log()
    root = root_of(t, 0x0A010100)
    root_words = t.words[root:root + NODE_WORDS].copy()
    parent = int(t.words[root + BASE1_LO])  # the root's only child (slot 1, low half)
    old_children = int(t.words[parent + BASE1_LO])
    entry = int(t.words[0x0A010100 >> (32 - POPTRIE4.direct_bits)])
    high_water = t.stats()["words_high_water"]  # no free blocks yet: new ones start here
    t.add(0x0A010102, 31, 3)
    log = t.take_log()
    pairs = list(zip(log.indices.tolist(), log.values.tolist(), strict=True))
    new_children = int(t.words[parent + BASE1_LO])
    assert new_children != old_children
    links = {parent + BASE1_LO, parent + BASE1_HI}
    assert {i for i, _ in pairs[-2:]} == links  # the linking writes come last ...
    assert log.barriers.tolist()[-1] == len(pairs) - 2  # ... after a barrier
    assert all(i >= high_water for i, _ in pairs[:-2])
    assert all(int(t.words[i]) == v for i, v in pairs)
    assert int(t.words[0x0A010100 >> (32 - POPTRIE4.direct_bits)]) == entry
    assert (t.words[root:root + NODE_WORDS] == root_words).all()
    assert (old_children, NODE_WORDS) in {(o, s) for o, s, _ in t.retired()}
    assert t.lookup(0x0A010100) == 2 and t.lookup(0x0A010102) == 3
    assert t.lookup(0x0A010103) == 3 and t.lookup(0x0A010101) == 1
