"""The route table manager of the control plane (docs/control-plane.md, "Route manager").

IPv4 and IPv6 routes in the tries of npkit.runtime.lpm, updated in place and safe for
concurrent lookups (docs/lpm.md, "Safety"): add (also replace), delete, batches, full
reloads, grace-period reclaim.  The updates run in C++ (npkit.runtime._trie); the calls
that must be cheap (`add`, `delete`, `reclaim`, `apply`) are the C++ base class's own
methods, so one update costs one call into C++ and no Python frame.

`PoptrieRouteManager` has the same calls over Poptries (npkit.runtime.poptrie, the
memories of microblocks/lpm_poptrie.mbl); `attach(regions, log)` picks the structure by the
memories the program declares.

With `log=False` the word arrays are the live memory the lookups read (native target).
With `log=True` they are the control plane's host shadow of chip memory, and every word
write is also appended, in order, to the family's write log, which the XScale model
replays into the chip's SRAM (`take_log`).  The shadow must start equal to the chip memory
(both zero).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import numpy as np

from npkit.runtime._trie import PoptrieTables, Sequence, Tables
from npkit.runtime.lpm import (
    FIB4_MEMORY,
    FIB6_MEMORY,
    IPV4,
    IPV6,
    POPTRIE4_MEMORY,
    POPTRIE6_MEMORY,
    LpmError,
    MultibitTrie,
    WriteLog,
    route_columns,
)
from npkit.runtime.poptrie import POPTRIE4, POPTRIE6, Poptrie

Family = Literal[4, 6]
Routes = dict[tuple[int, int], int]  # (network, length) -> next hop
T = TypeVar("T", MultibitTrie, Poptrie)


@dataclass(frozen=True, slots=True)
class RouteUpdate:
    """One update: add (or replace) a route with its next hop, or delete it."""

    op: Literal["add", "delete"]
    family: Family
    network: int
    length: int
    next_hop: int | None = None


def update_columns(updates: list[RouteUpdate]) -> tuple[np.ndarray, ...]:
    """A batch as the columns of `PoptrieRouteManager.apply_columns`: ops (1 add, 0
    delete), families, networks as right-aligned uint64 halves hi and lo, lengths, next
    hops (0 for a delete).  Converting once outside a timed loop keeps Python objects out
    of the updates themselves."""
    n = len(updates)
    ops = np.empty(n, dtype=np.int64)
    families = np.empty(n, dtype=np.int64)
    hi = np.empty(n, dtype=np.uint64)
    lo = np.empty(n, dtype=np.uint64)
    lengths = np.empty(n, dtype=np.int64)
    hops = np.zeros(n, dtype=np.int64)
    low_mask = (1 << 64) - 1
    for i, u in enumerate(updates):
        if u.op not in ("add", "delete"):
            raise LpmError(f"update {i}: op {u.op!r} is not 'add' or 'delete'")
        if u.op == "add" and u.next_hop is None:
            raise LpmError(f"update {i}: an add needs a next hop")
        if not 0 <= u.network < 1 << 128:
            raise LpmError(f"update {i}: bad prefix {u.network!r}/{u.length}")
        ops[i] = u.op == "add"
        families[i] = u.family
        hi[i] = u.network >> 64
        lo[i] = u.network & low_mask
        lengths[i] = u.length
        if u.next_hop is not None:
            hops[i] = u.next_hop
    return ops, families, hi, lo, lengths, hops


class _FamilyReads(Generic[T]):
    """The reading calls both route managers share, over their per-family tables
    (`self._tries`: family -> MultibitTrie or Poptrie)."""

    _tries: dict[Family, T]

    def lookup(self, family: Family, address: int) -> int | None:
        """The next hop for an address, walking the words as the microengines do."""
        return self.trie(family).lookup(address)

    def take_log(self, family: Family) -> WriteLog:
        """The family's word writes since the last take, in order (log=True)."""
        return self.trie(family).take_log()

    def stats(self, family: Family) -> dict[str, int]:
        """The family's table counters: routes, words used / retired / free, high water
        (16-8-8 counts plies: plies_live / plies_retired / plies_free)."""
        return self.trie(family).stats()

    def routes(self, family: Family) -> Routes:
        """A copy of the family's routes."""
        return self.trie(family).routes

    def tries(self) -> list[T]:
        """The tables present, IPv4 first."""
        return [self._tries[family] for family in sorted(self._tries)]

    def trie(self, family: Family) -> T:
        """The family's table (npkit.runtime.lpm's trie or npkit.runtime.poptrie's)."""
        try:
            return self._tries[family]
        except KeyError:
            raise LpmError(_no_table(family)) from None


def _no_table(family: object) -> str:
    if family in (4, 6):
        return f"there is no IPv{family} table (no trie memory was given for it)"
    return f"family {family!r} is not 4 or 6"


class RouteManager(_FamilyReads[MultibitTrie], Tables):
    """The IPv4 and IPv6 route tables over two uint32 word arrays (either may be None).

    Inherited from the C++ base (npkit.runtime._trie.Tables), with LpmError on bad input:
    `add(family, network, length, next_hop)` adds or replaces a route;
    `delete(family, network, length)` deletes one; `apply(updates)` applies a batch of
    RouteUpdate in order in one call and returns how many (on an error, the updates before
    it stay applied); `reclaim(upto=None)` ends the grace period of the updates numbered
    <= upto (default: all so far): the plies they unlinked become reusable.  Call it only
    once every lookup that started before update `upto` has finished (with a log: once the
    log up to that update is on the chip and a lookup's worth of time has passed)."""

    structure = "16-8-8"

    def __init__(self, v4_words: np.ndarray | None, v6_words: np.ndarray | None,
                 log: bool = False) -> None:
        self._sequence = Sequence()  # one numbering for the updates of both families
        self._tries: dict[int, MultibitTrie] = {}
        for family, shape, words in ((4, IPV4, v4_words), (6, IPV6, v6_words)):
            if words is not None:
                self._tries[family] = MultibitTrie(shape, words, log, self._sequence)
        super().__init__(*(t.core if (t := self._tries.get(f)) else None for f in (4, 6)))
        self.log = log

    def reload(self, v4: Routes | None, v6: Routes | None) -> int:
        """Make the tables exactly `v4` and `v6` (None: leave that family alone) while
        lookups run: the difference is applied as single updates (adds and replaces
        shortest first, then deletes); into an empty table that is a plain bulk build.
        Both families are checked before either changes.  Returns how many updates."""
        columns = {}
        for family, routes in ((4, v4), (6, v6)):
            if routes is None:
                continue
            if family not in self._tries:
                if routes:
                    raise LpmError(_no_table(family))
                continue
            columns[family] = route_columns(routes, self._tries[family].shape.key_bits)
            self._tries[family].core.check(*columns[family])
        return sum(self._tries[family].core.load(*cols) for family, cols in columns.items())

    # ---- reading ----
    @property
    def sequence(self) -> int:
        """How many updates have been applied (numbered 1, 2, ...)."""
        return self._sequence.value


class PoptrieRouteManager(_FamilyReads[Poptrie], PoptrieTables):
    """RouteManager's calls over the IPv4 and IPv6 Poptries of microblocks/lpm_poptrie.mbl
    (either may be None): add, delete, apply, reload, reclaim, sequence, lookup, take_log,
    stats, routes, trie.  As in RouteManager the cheap calls (`add`, `delete`, `apply`,
    `reclaim`, `sequence`) are the C++ base class's (npkit.runtime._trie.PoptrieTables):
    one update costs one call into C++ and no Python frame.  Also from the base:
    `apply_columns(*update_columns(updates))`, a batch as numpy columns (no Python object
    read per update: faster than `apply`, which reads five attributes of each RouteUpdate).

    One numbering for the updates of both families, as RouteManager's: each Poptrie numbers
    its own updates (its retired blocks carry those numbers), so the C++ base remembers,
    per family, which of its numbers each global update number ended at, and
    `reclaim(upto)` ends the grace period of each family's updates up to the last one
    numbered <= upto."""

    structure = "poptrie"

    def __init__(self, v4_words: np.ndarray | None, v6_words: np.ndarray | None,
                 log: bool = False, host_words: int = 1 << 25) -> None:
        self._tries: dict[int, Poptrie] = {}
        for family, shape, words in ((4, POPTRIE4, v4_words), (6, POPTRIE6, v6_words)):
            if words is not None:  # host_words: each host-side trie (lazily zeroed)
                self._tries[family] = Poptrie(shape, words, log, host_words=host_words)
        super().__init__(*(t.image if (t := self._tries.get(f)) else None for f in (4, 6)))
        self.log = log

    def reload(self, v4: Routes | None, v6: Routes | None) -> int:
        """As RouteManager.reload: both families checked first; into an empty table a bulk
        build (counted as one update per route)."""
        wanted = {}
        for family, routes in ((4, v4), (6, v6)):
            if routes is None:
                continue
            if family not in self._tries:
                if routes:
                    raise LpmError(_no_table(family))
                continue
            route_columns(routes, self._tries[family].shape.key_bits)  # checks them
            wanted[family] = routes
        count = 0
        for family, routes in wanted.items():
            table = self._tries[family]
            before = table.number
            counted = -1  # load: as many as the Poptrie numbered
            try:
                if table.core.route_count == 0 and routes:
                    table.build(routes)
                    counted = len(routes)
                else:
                    table.load(routes)
            finally:  # a failed load's applied updates are numbered too
                self.record(family, counted)
            count += table.number - before if counted < 0 else counted
        return count


Manager = RouteManager | PoptrieRouteManager


def attach(regions: Callable[[str], np.ndarray | None], log: bool = False) -> Manager:
    """The route manager of a program's route memories (`regions(name)`: a memory's words,
    or None when the program lacks it): the 16-8-8 tries of microblocks/lpm.mbl
    (fib4_trie / fib6_trie) or the Poptries of microblocks/lpm_poptrie.mbl."""
    v4, v6 = regions(FIB4_MEMORY), regions(FIB6_MEMORY)
    if v4 is not None or v6 is not None:
        return RouteManager(v4, v6, log=log)
    p4, p6 = regions(POPTRIE4_MEMORY), regions(POPTRIE6_MEMORY)
    if p4 is not None or p6 is not None:
        return PoptrieRouteManager(p4, p6, log=log)
    return RouteManager(None, None, log=log)
