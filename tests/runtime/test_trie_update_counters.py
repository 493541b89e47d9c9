"""What a 16-8-8 trie update counts (runtime/trie/trie.cpp: TrieCounters and the read
trace) and what the XScale cost model makes of it (npkit.runtime.xscale_update).

The expected counts are worked out here from the trie's geometry (a 2^16-slot root and
256-slot plies, leaves pushed into every slot a prefix covers), not read back from the
updater; the write log is the second reference for the words written."""

from __future__ import annotations

import random

import numpy as np

from npkit.runtime.lpm import IPV4, MultibitTrie
from npkit.runtime.xscale_update import UpdateCostModel, UpdateCosts

DEPTH_WORD = 1 << 63  # a traced depth byte: the index of the host word holding it
PLY = 256


def fresh() -> MultibitTrie:
    trie = MultibitTrie(IPV4, np.zeros(1 << 20, dtype=np.uint32), log=True)
    trie.trace(True)
    return trie


def counts(trie: MultibitTrie) -> dict[str, int]:
    return {k: v for k, v in trie.take_counters().items() if v}


def test_a_short_prefix_paints_its_root_slots() -> None:
    """10.0.0.0/8 covers root slots 0x0A00..0x0AFF: each depth compared and written."""
    trie = fresh()
    trie.core.add(0x0A000000, 8, 5)
    assert counts(trie) == {"updates": 1, "levels_walked": 1, "slots_scanned": PLY,
                            "words_written": PLY}
    trace = trie.take_trace()
    words = {int(w) for w in trace if not int(w) & DEPTH_WORD}
    depth_words = {int(w) & ~DEPTH_WORD for w in trace if int(w) & DEPTH_WORD}
    assert words == set(range(0x0A00, 0x0B00))
    assert depth_words == {slot >> 2 for slot in range(0x0A00, 0x0B00)}
    assert len(trie.take_log().indices) == PLY
    trie.core.add(0x0A000000, 8, 5)  # the same route again: every slot compared, none changed
    assert counts(trie) == {"updates": 1, "levels_walked": 1, "slots_scanned": PLY}
    assert len(trie.take_log().indices) == 0


def test_a_long_prefix_grows_a_ply_and_its_delete_collapses_it() -> None:
    trie = fresh()
    trie.core.add(0x0A000000, 8, 5)
    trie.take_counters()
    trie.take_log()
    route = 0x0A010200
    trie.core.add(route, 24, 6)  # a new ply under root slot 0x0A01: 256 words + the link
    assert counts(trie) == {"updates": 1, "levels_walked": 1, "words_written": PLY + 1,
                            "plies_allocated": 1}
    assert len(trie.take_log().indices) == PLY + 1
    trie.core.delete(route, 24)
    # the parent's depth, the /24's slot, its sibling (held by the /8: the covering route),
    # then the ply checked whole for a collapse: 256 words and depths
    assert counts(trie) == {"updates": 1, "levels_walked": 2, "slots_scanned": 3 + PLY,
                            "words_written": 2, "plies_retired": 1}
    assert len(trie.take_log().indices) == 2


def test_the_covering_route_is_found_by_depths_or_a_map_probe() -> None:
    """Deleting 18.48.0.0/12 (root slots 0x1230..0x123F) repaints them with the longest
    shorter route.  Its sibling block 0x1220..0x122F decides: held by a /4, its depths name
    the cover (16 slots compared, no probe); held by a /12 of its own, the depths only say
    "longer", so the route map is probed for a /11 (one probe, found)."""
    trie = fresh()
    trie.core.add(0x10000000, 4, 1)
    trie.core.add(0x12300000, 12, 2)
    trie.take_counters()
    trie.core.delete(0x12300000, 12)
    assert counts(trie) == {"updates": 1, "levels_walked": 1, "slots_scanned": 16 + 16,
                            "words_written": 16}
    trie.core.add(0x12200000, 11, 3)
    trie.core.add(0x12200000, 12, 4)
    trie.core.add(0x12300000, 12, 2)
    trie.take_counters()
    trie.core.delete(0x12300000, 12)
    assert counts(trie) == {"updates": 1, "levels_walked": 1, "map_probes": 1,
                            "slots_scanned": 16 + 16, "words_written": 16}


def test_counters_add_up_over_random_updates_to_the_write_log() -> None:
    rng = random.Random(7)
    trie = fresh()
    routes: dict[tuple[int, int], int] = {}
    for _ in range(300):
        if routes and rng.random() < 0.4:
            prefix = rng.choice(sorted(routes))
            del routes[prefix]
            trie.core.delete(*prefix)
        else:
            length = rng.choice((8, 12, 16, 20, 24, 28, 32))
            network = rng.getrandbits(length) << (32 - length)
            routes[(network, length)] = rng.randrange(1, 9)
            trie.core.add(network, length, routes[(network, length)])
        c = trie.take_counters()
        assert c["updates"] == 1
        assert c["words_written"] == len(trie.take_log().indices)
        trie.core.reclaim()


def test_cost_of_trie_work_from_the_costs_file() -> None:
    costs = UpdateCosts.load().trie
    model = UpdateCostModel(miss_cycles=175)
    trie = fresh()
    trie.core.add(0x0A000000, 8, 5)
    cost = model.cost(trie.take_counters(), trie.take_trace())
    assert cost.instructions == (costs.per_update + costs.per_level
                                 + PLY * (costs.per_slot_scanned + costs.per_word_written))
    # 256 words in 32 lines, 256 depth bytes in 8, and the route map's line
    assert cost.misses == 32 + 8 + 1
    assert cost.cycles == cost.instructions + 175 * cost.misses
    trie.core.add(0x0A000000, 8, 6)
    assert model.cost(trie.take_counters(), trie.take_trace()).misses == 1  # now cached


def test_the_chip_router_charges_the_counted_work() -> None:
    """ChipRouter (router4, IPv4) charges each update the model's cost of its counters:
    a second trie fed the same updates, costed by a second model, gives the same cycles."""
    from npkit.runtime.chip_router import ChipRouter

    router = ChipRouter()
    router.control.routes.reload({(0x0A000000, 8): 1}, None)
    router.load_tables()
    twin = MultibitTrie(IPV4, np.zeros_like(router.control.routes.trie(4).words), log=True)
    twin.core.add(0x0A000000, 8, 1)
    twin.take_counters()
    twin.trace(True)
    model = UpdateCostModel(router.cp.timing.dram_read_cycles)
    expected = []
    for i in range(6):
        network = 0x0A000000 | i << 12
        router.at(router.cp.now + 1000 * (i + 1), lambda c, n=network: c.routes.add(4, n, 20, 2))
        twin.core.add(network, 20, 2)
        expected.append(model.cost(twin.take_counters(), twin.take_trace()).cycles)
    router.run(cycles=2_000_000)
    assert [r.work for r in router.records] == expected
