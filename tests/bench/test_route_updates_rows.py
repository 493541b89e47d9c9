"""bench/route_updates.py's one-per-call rows: the same updates as the stream, their networks
in new int objects, and applied one per call they leave the table a Python dict says."""

from __future__ import annotations

import random

from npkit.bench.route_updates import new_manager, one_per_call, rows_of
from npkit.runtime.route_manager import RouteUpdate


def small_table(seed: int) -> dict[tuple[int, int], int]:
    rng = random.Random(seed)
    table: dict[tuple[int, int], int] = {}
    while len(table) < 300:
        length = rng.randint(8, 32)
        value = rng.getrandbits(length) << (32 - length)
        table[(value, length)] = rng.randrange(16)
    return table


def test_rows_hold_the_updates_with_new_network_objects() -> None:
    updates = [RouteUpdate("add", 4, (10 << 24) + (i << 8), 24, i % 7) for i in range(50)]
    updates += [RouteUpdate("delete", 4, (10 << 24) + (i << 8), 24) for i in range(50)]
    rows = rows_of(updates)
    assert rows == [(u.family, u.network, u.length, u.next_hop) for u in updates]
    assert all(row[1] is not u.network for row, u in zip(rows, updates, strict=True))


def test_rows_applied_one_per_call_match_a_dict() -> None:
    table = small_table(7)
    mgr = new_manager(4, structure="poptrie")
    mgr.reload(table, None)
    rng = random.Random(8)
    expected = dict(table)
    updates = []
    for value, length in rng.sample(sorted(table), 100):
        updates.append(RouteUpdate("delete", 4, value, length))
        del expected[(value, length)]
    for value, length in rng.sample(sorted(expected), 50):
        updates.append(RouteUpdate("add", 4, value, length, 99))
        expected[(value, length)] = 99
    one_per_call(mgr, rows_of(updates), 0)
    assert mgr.routes(4) == expected
