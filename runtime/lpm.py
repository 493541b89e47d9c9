"""Longest-prefix-match tries in chip memory, built and updated by the control plane.

The structure (docs/lpm.md): a leaf-pushed multibit trie of 32-bit words, a 64K-word root
indexed by the top 16 key bits, then plies of 256 words indexed by the next 8 bits
(IPv4 16-8-8: at most 3 dependent reads; IPv6 16-8-...-8: one more per 8 bits of prefix).
Word encoding, read by the MBL walker in microblocks/lpm.mbl:

    bit 31 CHILD  the low 31 bits are the word offset of a child ply
    bit 30 ROUTE  a route: the low 16 bits are its next-hop index
    0             no route

The words live in a memory the program declares (`array fib4_trie : bit<32> [N]`); this
module only writes them, through the C++ updater `npkit.runtime._trie` (runtime/trie/),
which also keeps, host-side only, the route map and the prefix length behind every slot.

Updates are safe for concurrent lookups: every change is a sequence of single-word writes
in which each word goes from its old meaning to its new one; a new ply is filled completely
before the one parent word that links it is written; a ply that an update unlinks is only
retired, and becomes reusable after `reclaim()`, which the caller invokes once every lookup
that started before the update has finished (the grace period).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npkit.runtime._trie import LpmError, Sequence, Trie
from npkit.runtime.lpm_format import (  # noqa: F401 - re-exported: the word format
    CHILD,
    LOW64,
    NEXT_HOP_MASK,
    POINTER_MASK,
    ROUTE,
    WriteLog,
    route_columns,
)

__all__ = ["CHILD", "IPV4", "IPV6", "LpmError", "MultibitTrie", "RouteTables", "TrieShape",
           "WriteLog", "route_columns"]

@dataclass(frozen=True)
class TrieShape:
    """Key width and strides (root first); all strides after the root are equal so plies
    are interchangeable."""

    key_bits: int
    strides: tuple[int, ...]

    def __post_init__(self) -> None:
        if sum(self.strides) != self.key_bits or len(set(self.strides[1:])) > 1:
            raise ValueError(f"bad strides {self.strides} for {self.key_bits}-bit keys")

    @property
    def root_words(self) -> int:
        return 1 << self.strides[0]

    @property
    def ply_words(self) -> int:
        return 1 << self.strides[1]

    def level_bits(self, level: int) -> tuple[int, int]:
        """[first, end) key bits, counted from the most significant, that a level indexes."""
        first = sum(self.strides[:level])
        return first, first + self.strides[level]


IPV4 = TrieShape(32, (16, 8, 8))
IPV6 = TrieShape(128, (16,) + (8,) * 14)


@dataclass
class MultibitTrie:
    """One trie over `words`, a uint32 view of the chip memory (or any host array).  The
    updates run in C++ (`core`, a `npkit.runtime._trie.Trie`); with `log` every word write
    is also appended to a write log (`take_log`).  Tries that share a `sequence` number
    their updates together (RouteManager)."""

    shape: TrieShape
    words: np.ndarray
    log: bool = False
    sequence: Sequence | None = None
    core: Trie = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.words, np.ndarray) or self.words.dtype != np.uint32 \
                or len(self.words) < self.shape.root_words:
            raise LpmError(f"the trie needs a uint32 memory of at least "
                           f"{self.shape.root_words} words")
        if self.sequence is None:
            self.sequence = Sequence()
        strides = self.shape.strides
        self.core = Trie(self.shape.key_bits, strides[0], strides[1] if len(strides) > 1 else 1,
                         self.words, self.log, self.sequence)

    # ---- sizes ----
    @property
    def words_used(self) -> int:
        """Words in use: the root plus every live ply (not the retired or free ones)."""
        return self.core.words_used

    @property
    def bytes_used(self) -> int:
        return 4 * self.words_used

    def stats(self) -> dict[str, int]:
        """routes, words_used, plies_live / plies_retired / plies_free, words_high_water."""
        return self.core.stats()

    @property
    def routes(self) -> dict[tuple[int, int], int]:
        """The routes, (network, length) -> next hop (a copy, built on each call)."""
        hi, lo, lengths, hops = self.core.routes()
        if self.shape.key_bits <= 64:
            values = lo.tolist()
        else:
            values = [(h << 64) | low for h, low in zip(hi.tolist(), lo.tolist(), strict=True)]
        return dict(zip(zip(values, lengths.tolist(), strict=True), hops.tolist(), strict=True))

    # ---- the updates' work (the XScale cost model, npkit.runtime.xscale_update) ----
    def take_counters(self) -> dict[str, int]:
        """The single updates' work since the last take (then zeroed): updates,
        levels_walked, map_probes (beyond each update's own), slots_scanned, words_written,
        plies_allocated, plies_retired."""
        return self.core.take_counters()

    def trace(self, on: bool) -> None:
        """Record every trie word and depth byte the updates read (take_trace)."""
        self.core.set_trace(on)

    def take_trace(self) -> np.ndarray:
        """The reads since the last take, as uint64: a trie word's index, or with bit 63 set
        the index of the 4-byte host word holding a slot's depth byte."""
        return self.core.take_trace()

    # ---- whole-table operations ----
    def clear(self) -> None:
        """Empty the table (not safe for concurrent lookups)."""
        self.core.clear()

    def build(self, routes: dict[tuple[int, int], int]) -> None:
        """Replace the table with `routes` ((network, length) -> next hop): the control
        plane's bulk load, not a concurrent update."""
        columns = route_columns(routes, self.shape.key_bits)  # validates before clearing
        self.core.clear()
        self.core.load(*columns)

    def load(self, routes: dict[tuple[int, int], int]) -> int:
        """Make the table `routes` by single updates, each safe for concurrent lookups (adds
        and replaces shortest first, then deletes); returns how many updates it took."""
        return self.core.load(*route_columns(routes, self.shape.key_bits))

    # ---- single-route updates ----
    def add(self, value: int, length: int, next_hop: int) -> None:
        """Add or replace one route."""
        self.core.add(value, length, next_hop)

    def delete(self, value: int, length: int) -> None:
        """Remove one route; its addresses fall back to the next shorter covering route."""
        self.core.delete(value, length)

    def reclaim(self, upto: int | None = None) -> None:
        """End of a grace period: plies unlinked by updates numbered <= upto (default: all so
        far) become reusable."""
        self.core.reclaim(upto)

    def take_log(self) -> WriteLog:
        """The word writes since the last take (log=True), and restart the log."""
        if not self.log:
            raise LpmError("this trie keeps no write log (create it with log=True)")
        return WriteLog(*self.core.take_log())

    # ---- reading (host-side, for tools and debugging) ----
    def lookup(self, value: int) -> int | None:
        """The next hop for a key, walking the words as the MBL code does."""
        return self.core.lookup(value)

    def max_reads(self) -> int:
        """Worst-case number of dependent reads over the routes present."""
        longest = self.core.max_length
        if longest < 0:
            return 1
        level = 0
        while self.shape.level_bits(level)[1] < longest:
            level += 1
        return level + 1


FIB4_MEMORY = "fib4_trie"  # the memory names microblocks/lpm.mbl declares
FIB6_MEMORY = "fib6_trie"
POPTRIE4_MEMORY = "fib4_poptrie"  # microblocks/lpm_poptrie.mbl: npkit.runtime.poptrie
POPTRIE6_MEMORY = "fib6_poptrie"
# (IPv4, IPv6) memory names of each structure, the router's default first
# (microblocks/router_common.mbl imports lpm.mbl or lpm_poptrie.mbl)
ROUTE_MEMORIES = ((FIB4_MEMORY, FIB6_MEMORY), (POPTRIE4_MEMORY, POPTRIE6_MEMORY))


def route_memories(declared: Iterable[str]) -> tuple[str, ...]:
    """The route-table memories among a program's memory names (`program.memories`), IPv4
    first: the ones RouteTables.attach binds, whichever structure the program imports.
    Tests and tools that zero, size or place the tables take the names from here."""
    names = set(declared)
    found: list[str] = []
    for family in zip(*ROUTE_MEMORIES, strict=True):     # per family, as attach binds them
        found += [n for n in family if n in names][:1]
    return tuple(found)


@dataclass
class RouteTables:
    """The IPv4 and IPv6 tables of one program (either may be absent): 16-8-8 tries
    (MultibitTrie, memories fib4_trie / fib6_trie) or Poptries (npkit.runtime.poptrie.Poptrie,
    memories fib4_poptrie / fib6_poptrie); both have build, add, delete, lookup, bytes_used."""

    v4: Any
    v6: Any

    @classmethod
    def attach(cls, region: Callable[[str], np.ndarray | None]) -> RouteTables:
        """Bind to a program's trie memories; `region(name)` returns a memory's words or
        None when the program lacks it (NativeProgram.region(name, missing_ok=True))."""
        from npkit.runtime.poptrie import POPTRIE4, POPTRIE6, Poptrie  # it builds on this

        def trie(shape: TrieShape, name: str, poptrie_shape, poptrie_name: str):
            words = region(name)
            if words is not None:
                return MultibitTrie(shape, words)
            words = region(poptrie_name)  # microblocks/lpm_poptrie.mbl
            return None if words is None else Poptrie(poptrie_shape, words)
        return cls(trie(IPV4, FIB4_MEMORY, POPTRIE4, POPTRIE4_MEMORY),
                   trie(IPV6, FIB6_MEMORY, POPTRIE6, POPTRIE6_MEMORY))

    @classmethod
    def of(cls, native) -> RouteTables:
        """The route tables of a NativeProgram."""
        return cls.attach(lambda name: native.region(name, missing_ok=True))

    def load(self, v4: dict[tuple[int, int], int], v6: dict[tuple[int, int], int]) -> None:
        """Bulk-load both families (routes of a family the program lacks are an error)."""
        for trie, routes, name in ((self.v4, v4, FIB4_MEMORY), (self.v6, v6, FIB6_MEMORY)):
            if trie is not None:
                trie.build(routes)
            elif routes:
                raise LpmError(f"the program has no {name} memory for these routes "
                               f"(import microblocks/lpm.mbl or lpm_poptrie.mbl)")
