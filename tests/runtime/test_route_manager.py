"""The route table manager (npkit.runtime.route_manager) and its C++ trie updater, against
references written here: a brute-force longest-prefix match, an independent walker of the
word format (docs/lpm.md), and a replay of the write log onto a second memory.

The concurrency property is tested, not claimed: the log of every update is replayed one
word at a time (in order, and shuffled within its barrier segments), and at every
intermediate memory state each sampled address must get the answer from before or after
that update."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lpm_reference import brute_force
from test_poptrie import walk as poptrie_walk

from npkit.runtime.lpm import IPV4, IPV6, LpmError
from npkit.runtime.poptrie import POPTRIE4, POPTRIE6
from npkit.runtime.route_manager import (
    PoptrieRouteManager,
    RouteManager,
    RouteUpdate,
    update_columns,
)

CHILD, ROUTE = 1 << 31, 1 << 30
PLIES = 400  # memory: the root plus this many 256-word plies
SHAPES = {4: IPV4, 6: IPV6}
BITS = {4: 32, 6: 128}


def walk(words: np.ndarray, bits: int, address: int) -> tuple[int | None, list[int]]:
    """The microengines' walk: 16 bits at the root, then 8 per ply.  Returns the next hop
    and the word offsets read."""
    index = address >> (bits - 16)
    path = [index]
    word = int(words[index])
    used = 16
    while word & CHILD:
        index = (word & (CHILD - 1)) + ((address >> (bits - used - 8)) & 0xFF)
        used += 8
        path.append(index)
        word = int(words[index])
    return (word & 0xFFFF if word & ROUTE else None), path


def new_manager(log: bool = True, plies: int = PLIES, structure: str = "16-8-8"
                ) -> RouteManager | PoptrieRouteManager:
    if structure == "poptrie":
        return PoptrieRouteManager(
            np.zeros(POPTRIE4.direct_words + plies * 100, dtype=np.uint32),
            np.zeros(POPTRIE6.direct_words + plies * 100, dtype=np.uint32), log=log,
            host_words=1 << 22)
    return RouteManager(np.zeros(IPV4.root_words + plies * 256, dtype=np.uint32),
                        np.zeros(IPV6.root_words + plies * 256, dtype=np.uint32), log=log)


STRUCTURES = ["16-8-8", "poptrie"]
POPTRIE_SHAPES = {4: POPTRIE4, 6: POPTRIE6}


def walker(structure: str, family: int):
    """(words, bits, address) -> (next hop, word offsets read) for the structure."""
    if structure == "16-8-8":
        return walk

    def walk_poptrie(words: np.ndarray, bits: int, address: int) -> tuple[int | None, list]:
        path: set[int] = set()
        answer, _ = poptrie_walk(words, POPTRIE_SHAPES[family], address, path)
        return answer, sorted(path)
    return walk_poptrie


def retired_blocks(mgr, family: int) -> list[tuple[int, int]]:
    """(first word, words) of every block in its grace period."""
    if mgr.structure == "poptrie":
        return [(offset, size) for offset, size, _ in mgr.trie(family).retired()]
    return [(ply, 256) for ply in mgr.trie(family).core.retired()[0].tolist()]


# Small key spaces: prefixes share a few bases, so they nest and overlap a lot; lengths
# straddle the stride boundaries (16, 24, 32, 40, ...).
BASES = {4: [0x0A000000, 0x0A010000, 0x0A01FF00, 0xC0000200],
         6: [0x20010DB8 << 96, (0x20010DB8 << 96) | (5 << 80), (0x20010DB8 << 96) | 0xFF]}
LENGTHS = {4: [0, 7, 8, 15, 16, 17, 23, 24, 25, 31, 32],
           6: [0, 16, 17, 24, 32, 40, 47, 48, 49, 64, 120, 127, 128]}


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


def probes(routes: dict[tuple[int, int], int], bits: int, extra: list[tuple[int, int]],
           rng: np.random.Generator) -> list[int]:
    """Both edges of every prefix, one address inside, just outside, and random ones."""
    out = set()
    for network, length in list(routes) + extra:
        host = (1 << (bits - length)) - 1
        last = network | host
        inside = network | (int.from_bytes(rng.bytes(bits // 8), "big") & host)
        out |= {network, last, inside, (last + 1) % 2**bits, (network - 1) % 2**bits}
    return sorted(out)


class Replica:
    """A second memory that receives the write log, one word at a time."""

    def __init__(self, size: int) -> None:
        self.words = np.zeros(size, dtype=np.uint32)


def replay_checking(replica: Replica, log, bits: int, addresses: list[int],
                    before: dict[int, int | None], after: dict[int, int | None],
                    order: np.ndarray, walk=walk) -> None:
    """Apply the log's writes in `order`; after each one, every address must answer as
    before or after the update.  Only addresses whose path read the written word can
    change, so only those are walked again."""
    paths = {}
    for a in addresses:
        answer, path = walk(replica.words, bits, a)
        assert answer == before[a]
        paths[a] = set(path)
    for k in order:
        index, value = int(log.indices[k]), int(log.values[k])
        replica.words[index] = value
        for a in addresses:
            if index in paths[a]:
                answer, path = walk(replica.words, bits, a)
                assert answer in (before[a], after[a]), \
                    f"address {a:#x} sees {answer} mid-update (before {before[a]}, after " \
                    f"{after[a]}) after write {k} of {len(log.indices)}"
                paths[a] = set(path)
    for a in addresses:
        assert walk(replica.words, bits, a)[0] == after[a]


def shuffled_within_segments(log, rng: np.random.Generator) -> np.ndarray:
    """A write order that keeps every barrier but permutes the writes between two."""
    edges = [0, *[int(b) for b in log.barriers], len(log.indices)]
    return np.concatenate([rng.permutation(np.arange(lo, hi))
                           for lo, hi in zip(edges, edges[1:], strict=False) if hi > lo]
                          or [np.zeros(0, dtype=np.int64)]).astype(np.int64)


def reachable_plies(words: np.ndarray, shape) -> list[int]:
    """Every ply offset reachable from the root (with repeats, if any)."""
    out, frontier = [], [int(w) & (CHILD - 1) for w in words[:shape.root_words]
                          if int(w) & CHILD]
    while frontier:
        ply = frontier.pop()
        out.append(ply)
        frontier += [int(w) & (CHILD - 1) for w in words[ply:ply + shape.ply_words]
                     if int(w) & CHILD]
    return out


def check_structure(mgr: RouteManager, family: int) -> None:
    trie = mgr.trie(family)
    stats = mgr.stats(family)
    plies = reachable_plies(trie.words, trie.shape)
    assert len(plies) == len(set(plies)) == stats["plies_live"]
    retired, _ = trie.core.retired()
    assert not set(plies) & set(retired.tolist())
    allocated = (stats["words_high_water"] - trie.shape.root_words) // trie.shape.ply_words
    assert stats["plies_live"] + stats["plies_retired"] + stats["plies_free"] == allocated


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("family", [4, 6])
def test_updates_match_brute_force_and_the_log_is_safe_to_replay(family, structure):
    bits = BITS[family]
    walk_words = walker(structure, family)

    @settings(max_examples=60 if structure == "16-8-8" else 30, deadline=None)
    @given(operations(family), st.integers(0, 2**32 - 1))
    def run(ops, seed):
        initial, steps = ops
        rng = np.random.default_rng(seed)
        mgr = new_manager(structure=structure)
        trie = mgr.trie(family)
        replica = Replica(len(trie.words))
        routes = dict(initial)
        mgr.reload(routes if family == 4 else None, routes if family == 6 else None)
        log = mgr.take_log(family)
        replica.words[log.indices] = log.values  # the bulk load, in order
        assert np.array_equal(replica.words, trie.words)
        for kind, arg in steps:
            if kind == "reclaim":
                mgr.reclaim(max(0, mgr.sequence - arg))
                continue
            old = dict(routes)
            if kind == "add":
                prefix, nh = arg
                update = RouteUpdate("add", family, *prefix, nh)
                routes[prefix] = nh
            elif routes:
                prefix = sorted(routes)[arg % len(routes)]
                update = RouteUpdate("delete", family, *prefix)
                del routes[prefix]
            else:
                continue
            retired_before = retired_blocks(mgr, family)
            sequence = mgr.sequence
            if update.op == "add":
                mgr.add(family, update.network, update.length, update.next_hop)
            else:
                mgr.delete(family, update.network, update.length)
            assert mgr.sequence == sequence + 1
            log = mgr.take_log(family)
            # one write per word and update; none into a ply still in its grace period
            assert len(set(log.indices.tolist())) == len(log.indices)
            for first, size in retired_before:
                assert not ((log.indices >= first) & (log.indices < first + size)).any()
            addresses = probes(old, bits, [prefix], rng)
            before = {a: brute_force(old, bits, a) for a in addresses}
            after = {a: brute_force(routes, bits, a) for a in addresses}
            shuffled = Replica(len(trie.words))
            shuffled.words[:] = replica.words
            replay_checking(replica, log, bits, addresses, before, after,
                            np.arange(len(log.indices)), walk_words)
            replay_checking(shuffled, log, bits, addresses, before, after,
                            shuffled_within_segments(log, rng), walk_words)
            assert np.array_equal(replica.words, trie.words)  # the shadow, exactly
            assert [mgr.lookup(family, a) for a in addresses] == [after[a] for a in addresses]
            if structure == "16-8-8":
                check_structure(mgr, family)
        assert mgr.routes(family) == routes
        # Delete everything, end the grace period: every ply comes back, nothing leaks.
        for prefix in sorted(routes, key=lambda p: rng.random()):
            mgr.delete(family, *prefix)
        mgr.reclaim()
        log = mgr.take_log(family)
        replica.words[log.indices] = log.values
        assert np.array_equal(replica.words, trie.words)
        stats = mgr.stats(family)
        if structure == "poptrie":
            direct = trie.shape.direct_words
            assert stats["routes"] == 0 and stats["words_retired"] == 0
            assert stats["words_used"] == direct
            assert stats["words_free"] == stats["words_high_water"] - direct
            assert not trie.words[:direct].any()
            return
        assert stats["routes"] == 0 and stats["plies_live"] == stats["plies_retired"] == 0
        assert stats["words_used"] == trie.shape.root_words
        assert (stats["words_high_water"] - trie.shape.root_words) // 256 == stats["plies_free"]
        # No word a lookup can reach is non-zero (freed plies keep stale words: a chip
        # write each to clear them would buy nothing).
        assert not trie.words[:trie.shape.root_words].any()

    run()


def test_a_retired_ply_is_reused_only_after_its_grace_period():
    mgr = new_manager()
    mgr.add(4, 0x0A000000, 24, 1)  # update 1: a ply under 10.0/16
    ply = int(mgr.take_log(4).indices[0]) & ~0xFF
    mgr.delete(4, 0x0A000000, 24)  # update 2: the ply is unlinked and retired
    assert mgr.stats(4)["plies_retired"] == 1
    retired, numbers = mgr.trie(4).core.retired()
    assert retired.tolist() == [ply] and numbers.tolist() == [2]
    mgr.take_log(4)
    mgr.add(4, 0x0B000000, 24, 1)  # update 3 must not reuse it
    written = mgr.take_log(4).indices
    assert not ((written >= ply) & (written < ply + 256)).any()
    mgr.reclaim(1)  # grace period of update 1 only: still retired
    assert mgr.stats(4)["plies_retired"] == 1
    mgr.reclaim(2)
    stats = mgr.stats(4)
    assert stats["plies_retired"] == 0 and stats["plies_free"] == 1
    mgr.add(4, 0x0C000000, 24, 2)  # now it may be reused
    log = mgr.take_log(4)
    assert log.barriers[0] == 0  # the reuse is ordered after the unlinking write
    assert ((log.indices >= ply) & (log.indices < ply + 256)).any()
    assert mgr.lookup(4, 0x0C000001) == 2 and mgr.lookup(4, 0x0B000001) == 1


@pytest.mark.parametrize("structure", STRUCTURES)
def test_one_sequence_numbers_both_families(structure):
    mgr = new_manager(structure=structure)
    mgr.add(4, 0x0A000000, 8, 1)
    mgr.add(6, 0x20010DB8 << 96, 32, 2)
    assert mgr.apply([RouteUpdate("add", 6, 0x20010DB8 << 96, 48, 3),
                      RouteUpdate("delete", 4, 0x0A000000, 8)]) == 2
    assert mgr.sequence == 4
    assert mgr.lookup(4, 0x0A000001) is None
    assert mgr.lookup(6, (0x20010DB8 << 96) | 1) == 3


@pytest.mark.parametrize("structure", STRUCTURES)
def test_batches_equal_single_updates(structure):
    rng = np.random.default_rng(5)
    updates = []
    table: dict[tuple[int, int], int] = {}
    for _ in range(300):
        family = int(rng.choice([4, 6]))
        bits = BITS[family]
        length = int(rng.choice(LENGTHS[family]))
        value = int(rng.choice(BASES[family])) ^ (int(rng.integers(0, 256)) << (bits - 24))
        value &= ~((1 << (bits - length)) - 1)
        key = (family, value, length)
        if key in table and rng.random() < 0.5:
            updates.append(RouteUpdate("delete", family, value, length))
            del table[key]
        else:
            table[key] = int(rng.integers(0, 9))
            updates.append(RouteUpdate("add", family, value, length, table[key]))
    batched, single = (new_manager(False, 4000, structure), new_manager(False, 4000, structure))
    assert batched.apply(updates) == len(updates)
    for u in updates:
        if u.op == "add":
            single.add(u.family, u.network, u.length, u.next_hop)
        else:
            single.delete(u.family, u.network, u.length)
    managers = [batched, single]
    if structure == "poptrie":  # and as columns, in two calls
        columns = new_manager(False, 4000, structure)
        assert columns.apply_columns(*update_columns(updates[:123])) == 123
        assert columns.apply_columns(*update_columns(updates[123:])) == len(updates) - 123
        assert columns.sequence == batched.sequence == len(updates)
        managers.append(columns)
    for family in (4, 6):
        expected = {(v, n): nh for (f, v, n), nh in table.items() if f == family}
        for mgr in managers:
            assert mgr.routes(family) == expected
            assert np.array_equal(mgr.trie(family).words, single.trie(family).words)
        for a in probes(expected, BITS[family], [], rng):
            assert batched.lookup(family, a) == brute_force(expected, BITS[family], a)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_reload_applies_the_difference(structure):
    rng = np.random.default_rng(3)

    def table(n: int) -> dict[tuple[int, int], int]:
        out = {}
        for _ in range(n):
            length = int(rng.choice(LENGTHS[4]))
            value = int(rng.choice(BASES[4])) ^ (int(rng.integers(0, 256)) << 8)
            out[(value & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF, length)] = \
                int(rng.integers(0, 4))
        return out

    first, second = table(60), table(60)
    mgr = new_manager(structure=structure)
    assert mgr.reload(first, None) == len(first)
    changed = sum(first.get(p) != nh for p, nh in second.items()) \
        + sum(p not in second for p in first)
    start = mgr.sequence
    assert mgr.reload(second, None) == changed == mgr.sequence - start
    assert mgr.routes(4) == second
    for a in probes(second, 32, list(first), rng):
        assert mgr.lookup(4, a) == brute_force(second, 32, a)
    mgr.reload({}, None)
    mgr.reclaim()
    root = POPTRIE4.direct_words if structure == "poptrie" else IPV4.root_words
    assert mgr.stats(4)["words_used"] == root


def test_column_batch_errors_name_the_update():
    mgr = new_manager(False, 4000, "poptrie")
    good = RouteUpdate("add", 4, 0x0C000000, 8, 1)
    for bad, message in [
            (RouteUpdate("add", 4, 0x0A000001, 24, 1), r"bad prefix 167772161/24 for 32-bit"),
            (RouteUpdate("add", 4, 0x0A000000, 33, 1), "bad prefix length /33 for 32-bit"),
            (RouteUpdate("add", 4, 0x0A000000, 8, 70000), "next hop 70000 out of range"),
            (RouteUpdate("delete", 4, 0x0A090000, 16), "no route 168361984/16 to delete"),
            (RouteUpdate("add", 5, 0, 0, 1), "family 5 is not 4 or 6")]:
        with pytest.raises(LpmError, match=r"update 1 of the batch: " + message +
                           r".* \(the 1 update\(s\) before it stay applied\)"):
            mgr.apply_columns(*update_columns([good, bad]))
        assert mgr.lookup(4, 0x0C000001) == 1
        mgr.delete(4, 0x0C000000, 8)
    with pytest.raises(LpmError, match="op 'drop' is not 'add' or 'delete'"):
        update_columns([RouteUpdate("drop", 4, 0, 0)])  # type: ignore[arg-type]
    with pytest.raises(LpmError, match="an add needs a next hop"):
        update_columns([RouteUpdate("add", 4, 0, 0)])
    ops, *rest = update_columns([good])
    with pytest.raises(LpmError, match="op 2 is not 1 \\(add\\) or 0 \\(delete\\)"):
        mgr.apply_columns(ops + 1, *rest)
    with pytest.raises(LpmError, match="the columns differ in length"):
        mgr.apply_columns(ops, *rest[:-1], np.zeros(2, dtype=np.int64))


def test_errors_name_the_problem():
    mgr = RouteManager(np.zeros(IPV4.root_words + 256, dtype=np.uint32), None)
    mgr.add(4, 0x0A000000, 24, 1)  # one ply fits
    for call, message in [
            (lambda: mgr.add(4, 0x0B000000, 24, 1), r"memory is full \(65792 words\)"),
            (lambda: mgr.add(4, 0x0A000001, 24, 1), "10.0.0.1/24 has host bits set"),
            (lambda: mgr.add(4, 0x0A000000, 33, 1), "bad prefix length /33 for 32-bit"),
            (lambda: mgr.add(4, 1 << 32, 8, 1), "bad prefix 0x100000000/8 for 32-bit"),
            (lambda: mgr.add(4, -5, 8, 1), "bad prefix -5/8"),
            (lambda: mgr.add(4, 0x0A000000, 8, 70000), "next hop 70000 out of range"),
            (lambda: mgr.delete(4, 0x0A090000, 16), "no route 10.9.0.0/16 to delete"),
            (lambda: mgr.add(6, 0, 0, 1), "no IPv6 table"),
            (lambda: mgr.lookup(5, 0), "family 5 is not 4 or 6"),
            (lambda: mgr.take_log(4), "no write log"),
            (lambda: mgr.reload(None, {(0, 0): 1}), "no IPv6 table"),
            (lambda: mgr.apply([RouteUpdate("add", 4, 0x0C000000, 8, 1),
                                RouteUpdate("drop", 4, 0, 0)]),  # type: ignore[arg-type]
             r"update 1 of the batch: op 'drop' is not 'add' or 'delete' \(the 1 update"),
            (lambda: mgr.apply([RouteUpdate("add", 4, 0x0D000000, 8)]), "needs a next hop"),
    ]:
        with pytest.raises(LpmError, match=message):
            call()
    assert mgr.lookup(4, 0x0C000001) == 1  # the batch's first update stayed applied
    v6 = RouteManager(None, np.zeros(IPV6.root_words, dtype=np.uint32))
    with pytest.raises(LpmError, match="2001:db8::1/32 has host bits set"):
        v6.add(6, (0x20010DB8 << 96) | 1, 32, 1)
    with pytest.raises(LpmError, match="bad prefix"):
        v6.add(6, 1 << 128, 0, 1)
    with pytest.raises(LpmError, match="host bits"):  # both families checked first
        RouteManager(np.zeros(IPV4.root_words, dtype=np.uint32), None).reload(
            {(0x0A000001, 8): 1}, None)
    with pytest.raises(LpmError, match="uint32"):
        RouteManager(np.zeros(IPV4.root_words, dtype=np.int64), None)
