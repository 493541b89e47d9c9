"""Forwarding-table update streams for the NPF update tests on a compiled router.

The measurement machinery is the runtime's (``npkit.runtime.compiled_router``: a
``CompiledRouter`` replays every update through the XScale model, ``update_rate`` times a
stream back to back, ``at_rate`` spreads one at a rate); what is here is the benchmark's
side: which updates, on which table.

A stream (``update_stream``) is pairs that leave the table as it was, as in
bench/route_updates.py: delete a loaded prefix then add it back; add a spare prefix (one
of the real table the device did not load, or a generated one for generated tables) then
delete it; replace a prefix's next hop then put it back.  First halves come first
(shuffled), then second halves (shuffled).

The NPF concurrent tests change routes the traffic does not use (our reading of the
agreement, and what ``reference_devices.UpdatingRouter`` models): no update touches a
``protected`` prefix (the exercised routes) or a prefix inside one, so every destination's
longest match is the same before, during and after the stream and the analyzer's single
``RouteReference`` is exact -- a frame on another port is a real misroute, never an
old-or-new ambiguity.  Half the deletes and next-hop changes are of prefixes *near* an
exercised one (a cover of it, or a prefix under the same first 16 / 32 bits), so their
writes land in trie words the traffic's lookups read, which is where a torn update would
show; the adds are random spare prefixes.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.bench.route_updates import update_stream as benchmark_stream
from npkit.runtime.compiled_router import CompiledRouter, UpdateRate, update_rate
from npkit.runtime.route_manager import RouteUpdate
from npkit.runtime.routes import REAL_TABLE, committed_histogram, generate_routes, read_routes

Prefix = tuple[int, int]
Routes = Mapping[Prefix, int]
BITS = {4: 32, 6: 128}


NEAR_BITS = {4: 16, 6: 32}  # "near" an exercised prefix: the same first 16 / 32 bits


class _Protection:
    """Whether a prefix equals or lies inside a protected one (networks kept per length)."""

    def __init__(self, protected: Iterable[Prefix], bits: int) -> None:
        self.bits = bits
        self.by_length: dict[int, set[int]] = {}
        for network, length in protected:
            self.by_length.setdefault(length, set()).add(network >> (bits - length))

    def __call__(self, prefix: Prefix) -> bool:
        network, length = prefix
        return any(network >> (self.bits - p_len) in tops
                   for p_len, tops in self.by_length.items() if p_len <= length)


class _Near:
    """Whether a prefix shares its first min(length, NEAR_BITS) bits with a protected
    prefix: a cover of it, or a neighbour under the same first-level trie entry."""

    def __init__(self, protected: Iterable[Prefix], family: int) -> None:
        self.bits, self.near = BITS[family], NEAR_BITS[family]
        self.tops: dict[int, set[int]] = {}
        for network, length in protected:
            for top in range(min(length, self.near) + 1):
                self.tops.setdefault(top, set()).add(network >> (self.bits - top))

    def __call__(self, prefix: Prefix) -> bool:
        network, length = prefix
        top = min(length, self.near)
        return network >> (self.bits - top) in self.tops.get(top, ())


def _sample(rng: random.Random, pool: list[Prefix], near: list[Prefix], count: int,
            near_count: int) -> list[Prefix]:
    """``count`` distinct prefixes of ``pool``, ``near_count`` of them (or all there are)
    from ``near`` (a subset of the pool)."""
    first = rng.sample(near, min(near_count, len(near)))
    taken = set(first)
    rest = [p for p in pool if p not in taken]
    return first + rng.sample(rest, count - len(first))


def update_stream(table: Routes, spare: Routes, family: int, count: int, seed: int,
                  protected: Iterable[Prefix] = (), next_hops: int = 16,
                  near_share: float = 0.5) -> list[RouteUpdate]:
    """``count`` updates (rounded down to a multiple of 6, at least 6) that leave ``table``
    as it was, touching no ``protected`` prefix nor any prefix inside one.  About
    ``near_share`` of the deletes and next-hop changes (as many as the table has) are of
    prefixes near a protected one (``_Near``), so their writes land in trie words the
    traffic's lookups read; the rest, and the adds, are random.  (``UpdateStreams`` gives
    the same streams and filters the table once per protected set.)"""
    return UpdateStreams(table, spare, family, next_hops).stream(count, seed, protected,
                                                                 near_share)


@dataclass
class _Candidates:
    """The prefixes a stream may pick for one protected set."""

    existing: list[Prefix]  # loaded, outside the protected prefixes
    fresh: list[Prefix]  # spare, not loaded, outside them
    near: list[Prefix]  # of ``existing``, near a protected prefix


@dataclass
class UpdateStreams:
    """``update_stream`` on one table and its spares: the filtering of the table (a
    Python test per route, ~0.4 s for 135,432 routes) done once per protected set and
    kept, the picking done per stream -- the same streams as ``update_stream``.  The
    table and spares must not change while the object is used."""

    table: Routes
    spare: Routes
    family: int
    next_hops: int = 16
    _candidates: dict[tuple[Prefix, ...], _Candidates] = field(default_factory=dict,
                                                                repr=False)

    def candidates(self, protected: Iterable[Prefix]) -> _Candidates:
        key = tuple(protected)
        found = self._candidates.get(key)
        if found is None:
            touches = _Protection(key, BITS[self.family])
            existing = [p for p in sorted(self.table) if not touches(p)]
            fresh = [p for p in sorted(self.spare) if p not in self.table and not touches(p)]
            near = []
            if key:
                is_near = _Near(key, self.family)
                near = [p for p in existing if is_near(p)]
            found = self._candidates[key] = _Candidates(existing, fresh, near)
        return found

    def stream(self, count: int, seed: int, protected: Iterable[Prefix] = (),
               near_share: float = 0.5) -> list[RouteUpdate]:
        """As ``update_stream`` on this table and spares."""
        family, table, spare, next_hops = self.family, self.table, self.spare, self.next_hops
        found = self.candidates(protected)
        existing, fresh = found.existing, found.fresh
        rng = random.Random(f"npkit-npf-updates:{family}:{seed}")
        pairs = max(1, count // 6)
        if len(existing) < 2 * pairs or len(fresh) < pairs:
            raise ValueError(f"{count} IPv{family} updates need {2 * pairs} loaded and "
                             f"{pairs} spare prefixes outside the exercised routes; there "
                             f"are {len(existing)} and {len(fresh)}")
        chosen = _sample(rng, existing, found.near, 2 * pairs, round(2 * pairs * near_share))
        rng.shuffle(chosen)
        deleted, replaced = chosen[:pairs], chosen[pairs:]
        added = rng.sample(fresh, pairs)

        def add(prefix: Prefix, hop: int) -> RouteUpdate:
            return RouteUpdate("add", family, *prefix, hop)  # type: ignore[arg-type]

        def delete(prefix: Prefix) -> RouteUpdate:
            return RouteUpdate("delete", family, *prefix)  # type: ignore[arg-type]

        first = ([delete(p) for p in deleted] + [add(p, spare[p]) for p in added]
                 + [add(p, (table[p] + 1) % next_hops) for p in replaced])
        second = ([add(p, table[p]) for p in deleted] + [delete(p) for p in added]
                  + [add(p, table[p]) for p in replaced])
        rng.shuffle(first)
        rng.shuffle(second)
        return first + second


def spare_routes(routes_config: Any, loaded: Mapping[int, Routes], count: int
                 ) -> dict[int, dict[Prefix, int]]:
    """Per family, up to ``count`` routes the device did not load, for a stream's adds:
    from the real table when the device's tables were sampled from it
    (``routes_config.full()``, or the file at ``routes_config.path()``), else generated
    with the committed prefix-length histogram and another seed."""
    seed, next_hops = routes_config.seed, routes_config.next_hops
    if hasattr(routes_config, "full"):  # npf.SampledRoutes: the file, read once
        full = routes_config.full()
    else:
        path = routes_config.path() if hasattr(routes_config, "path") else None
        full = read_routes(path, seed, next_hops) if isinstance(path, Path) else None
    out: dict[int, dict[Prefix, int]] = {}
    for family in (4, 6):
        table = loaded.get(family) or {}
        if full is not None:
            candidates = full.v4 if family == 4 else full.v6
        else:
            candidates = generate_routes(family, len(table) + count,  # type: ignore[arg-type]
                                         seed + 1, committed_histogram(family),  # type: ignore
                                         next_hops)
        rng = random.Random(f"npkit-npf-spares:{family}:{seed}")
        unused = [p for p in sorted(candidates) if p not in table]
        picked = rng.sample(unused, min(count, len(unused)))
        out[family] = {p: candidates[p] for p in sorted(picked)}
    return out


def max_update_rate(linked: Any, family: int, count: int = 600, seed: int = 2024,
                    table: Path | None = None) -> UpdateRate:
    """The maximum update rate of a compiled router, IPv4 or IPv6: the real table
    (../shared/data/routes, bench/route_updates.py's default) loaded at load time, then
    ``count`` updates of bench/route_updates.py's stream (deletes / adds / replaces of
    random real-table prefixes, then their undoing) back to back on the XScale."""
    routes = read_routes(table or REAL_TABLE)
    prefixes = routes.v4 if family == 4 else routes.v6
    router = CompiledRouter(linked=linked, exception_path=False)
    router.control.routes.reload(prefixes if family == 4 else None,
                                 prefixes if family == 6 else None)
    router.load_tables()
    return update_rate(router, benchmark_stream(prefixes, family, count, seed))


__all__ = ["UpdateStreams", "max_update_rate", "spare_routes", "update_stream"]
