"""The trie's painting loops (runtime/trie/trie.hpp, Trie::paint_slots): untraced, they
compare 16 depth bytes per SSE2 step and visit only the slots of depth <= the painted one;
traced, they compare slot by slot.  Checked here: both give the same words, write log and
counters, update after update, and every answer is the brute-force longest match over the
routes (tests/lpm_reference.py).  The routes put short prefixes over ranges of 4 to 256
root slots (the 16-slot steps and the tail of a range shorter than one step), more-specific
routes in plies below them, some with the short prefix's own next hop (equal leaf words
that only the depths tell apart)."""

from __future__ import annotations

import random

import numpy as np
from lpm_reference import brute_force

from npkit.runtime.lpm import IPV4, MultibitTrie

SHORT = [(0x0A000000, 8), (0x0A000000, 9), (0x0A400000, 12), (0x0A500000, 14),
         (0x0A560000, 15)]


def table(seed: int) -> dict[tuple[int, int], int]:
    rng = random.Random(seed)
    routes = {prefix: rng.randrange(1, 6) for prefix in SHORT}
    for _ in range(300):
        length = rng.choice([16, 18, 20, 22, 24, 24, 26, 28, 30])
        network = (0x0A000000 | rng.getrandbits(24)) >> (32 - length) << (32 - length)
        routes[(network, length)] = rng.randrange(1, 6)  # often a short prefix's hop too
    return routes


def fresh(routes: dict[tuple[int, int], int], traced: bool) -> MultibitTrie:
    trie = MultibitTrie(IPV4, np.zeros(1 << 20, dtype=np.uint32), log=True)
    trie.load(routes)
    trie.take_log()
    trie.take_counters()
    trie.trace(traced)
    return trie


def probes(routes: dict[tuple[int, int], int], rng: random.Random) -> list[int]:
    """Every route's first and last address, their neighbours, and random ones in 10/8."""
    out = [0x0A000000 | rng.getrandbits(24) for _ in range(300)]
    for network, length in routes:
        last = network | ((1 << (32 - length)) - 1)
        out += [network, last, (network - 1) & 0xFFFFFFFF, (last + 1) & 0xFFFFFFFF]
    return out


def test_sse_and_slot_by_slot_painting_agree_with_brute_force() -> None:
    for seed in range(3):
        routes = table(seed)
        fast, slow = fresh(routes, False), fresh(routes, True)
        rng = random.Random(100 + seed)
        for _ in range(24):
            network, length = rng.choice(SHORT)
            before = fast.words.copy()
            if (network, length) in routes and rng.random() < 0.6:
                del routes[(network, length)]
                for trie in (fast, slow):
                    trie.delete(network, length)
            else:
                routes[(network, length)] = rng.randrange(1, 6)
                for trie in (fast, slow):
                    trie.add(network, length, routes[(network, length)])
            for trie in (fast, slow):
                trie.reclaim()
            fast_log, slow_log = fast.take_log(), slow.take_log()
            assert np.array_equal(fast.words, slow.words)
            assert list(fast_log.indices) == list(slow_log.indices)
            assert list(fast_log.values) == list(slow_log.values)
            assert list(fast_log.barriers) == list(slow_log.barriers)
            assert fast.take_counters() == slow.take_counters()
            slow.take_trace()
            # the writes are exactly the words that changed (the arrays are the reference)
            assert set(np.flatnonzero(before != fast.words).tolist()) == \
                set(int(i) for i in fast_log.indices)
            for address in probes(routes, rng):
                assert fast.lookup(address) == brute_force(routes, 32, address), hex(address)
