"""Longest-prefix-match tries in chip memory, built and updated by the control plane.

The structure (docs/lpm.md): a leaf-pushed multibit trie of 32-bit words, a 64K-word root
indexed by the top 16 key bits, then plies of 256 words indexed by the next 8 bits
(IPv4 16-8-8: at most 3 dependent reads; IPv6 16-8-...-8: one more per 8 bits of prefix).
Word encoding, read by the MBL walker in microblocks/lpm.mbl:

    bit 31 CHILD  the low 31 bits are the word offset of a child ply
    bit 30 ROUTE  a route: the low 16 bits are its next-hop index
    0             no route

The words live in a memory the program declares (`array fib4_trie : bit<32> [N]`); this
module only writes them.  It keeps, host-side only, the route list and the prefix length
behind every leaf (`depth`), which single-route updates need.

Updates are safe for concurrent lookups: every change is a sequence of single-word writes
in which each word goes from its old meaning to its new one; a new ply is filled completely
before the one parent word that links it is written; a ply that an update unlinks is only
retired, and becomes reusable after `reclaim()`, which the caller invokes once every lookup
that started before the update has finished (the grace period).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

CHILD = 1 << 31
ROUTE = 1 << 30
NEXT_HOP_MASK = 0xFFFF
POINTER_MASK = CHILD - 1


class LpmError(ValueError):
    """A bad route, a missing route, or a trie that has run out of memory."""


@dataclass(frozen=True)
class TrieShape:
    """Key width and strides (root first); all strides after the root are equal so plies
    are interchangeable, and none crosses a 64-bit boundary (for the vectorized build)."""

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


def _chunk(value: int, key_bits: int, first: int, end: int) -> int:
    return (value >> (key_bits - end)) & ((1 << (end - first)) - 1)


def _leaf(next_hop: int) -> int:
    if not 0 <= next_hop <= NEXT_HOP_MASK:
        raise LpmError(f"next hop {next_hop} out of range 0..{NEXT_HOP_MASK}")
    return ROUTE | next_hop


@dataclass
class MultibitTrie:
    """One trie over `words`, a uint32 view of the chip memory (or any host array)."""

    shape: TrieShape
    words: np.ndarray
    routes: dict[tuple[int, int], int] = field(default_factory=dict)
    depth: np.ndarray = field(init=False, repr=False)  # 1 + prefix length of a leaf; 0 none
    _next_free: int = field(init=False, default=0)
    _free: list[int] = field(init=False, default_factory=list)
    _retired: list[int] = field(init=False, default_factory=list)
    _high_water: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.words.dtype != np.uint32 or len(self.words) < self.shape.root_words:
            raise LpmError(f"the trie needs a uint32 memory of at least "
                           f"{self.shape.root_words} words")
        self.depth = np.zeros(len(self.words), dtype=np.uint8)
        self.clear()

    # ---- sizes ----
    @property
    def words_used(self) -> int:
        """Words in use: the root plus every live ply."""
        plies = (self._next_free - self.shape.root_words) // self.shape.ply_words
        return self.shape.root_words + (plies - len(self._free) - len(self._retired)) \
            * self.shape.ply_words

    @property
    def bytes_used(self) -> int:
        return 4 * self.words_used

    # ---- whole-table operations ----
    def clear(self) -> None:
        end = max(self._high_water, self.shape.root_words)
        self.words[:end] = 0
        self.depth[:end] = 0
        self.routes = {}
        self._next_free = self._high_water = self.shape.root_words
        self._free, self._retired = [], []

    def build(self, routes: dict[tuple[int, int], int]) -> None:
        """Replace the table with `routes` ((network, length) -> next hop), vectorized
        level by level (the control plane's bulk load, not a concurrent update)."""
        self.clear()
        if not routes:
            return
        keys, lengths = _key_columns(routes, self.shape.key_bits)
        next_hops = np.fromiter(routes.values(), dtype=np.int64, count=len(routes))
        if (lengths > self.shape.key_bits).any() or _host_bits_set(keys, lengths).any():
            bad = next(k for k in routes if k[1] > self.shape.key_bits
                       or k[0] & ((1 << (self.shape.key_bits - k[1])) - 1))
            self._check_prefix(*bad)
        if ((next_hops < 0) | (next_hops > NEXT_HOP_MASK)).any():
            _leaf(int(next_hops[(next_hops < 0) | (next_hops > NEXT_HOP_MASK)][0]))
        self.routes = dict(routes)
        self._build_levels(keys, lengths, (ROUTE | next_hops).astype(np.uint32))

    def _build_levels(self, keys: np.ndarray, lengths: np.ndarray, leaves: np.ndarray):
        base = np.zeros(len(lengths), dtype=np.int64)  # each prefix's ply at this level
        for level in range(len(self.shape.strides)):
            first, end = self.shape.level_bits(level)
            slot = base + _chunks(keys, first, end)
            ending = lengths <= end
            for length in np.unique(lengths[ending]):
                sel = ending & (lengths == length)
                span = 1 << (end - int(length))
                index = (slot[sel][:, None] + np.arange(span)).ravel()
                self.words[index] = np.repeat(leaves[sel], span)
                self.depth[index] = length + 1
            deeper = ~ending
            if not deeper.any():
                return
            parents, inverse = np.unique(slot[deeper], return_inverse=True)
            children = self._alloc_plies(len(parents))
            cells = (children[:, None] + np.arange(self.shape.ply_words)).ravel()
            self.words[cells] = np.repeat(self.words[parents], self.shape.ply_words)
            self.depth[cells] = np.repeat(self.depth[parents], self.shape.ply_words)
            self.words[parents] = CHILD | children.astype(np.uint32)
            keys, lengths, leaves = keys[deeper], lengths[deeper], leaves[deeper]
            base = children[inverse.ravel()]

    def _alloc_plies(self, count: int) -> np.ndarray:
        start = self._next_free
        end = start + count * self.shape.ply_words
        if end > len(self.words):
            raise LpmError(f"the trie memory is full ({len(self.words)} words): "
                           f"declare a larger array")
        self._next_free = self._high_water = end
        return start + np.arange(count, dtype=np.int64) * self.shape.ply_words

    # ---- single-route updates ----
    def add(self, value: int, length: int, next_hop: int) -> None:
        """Add or replace one route."""
        self._check_prefix(value, length)
        leaf = _leaf(next_hop)
        self.routes[(value, length)] = next_hop
        self._update(0, 0, value, length, leaf, length + 1, replace_depth=None)

    def delete(self, value: int, length: int) -> None:
        """Remove one route; its addresses fall back to the next shorter covering route."""
        self._check_prefix(value, length)
        if self.routes.pop((value, length), None) is None:
            raise LpmError(f"no route {self._show(value, length)} to delete")
        leaf, depth = self._covering(value, length)
        self._update(0, 0, value, length, leaf, depth, replace_depth=length + 1)

    def reclaim(self) -> None:
        """End of a grace period: plies unlinked by earlier updates become reusable."""
        self._free += self._retired
        self._retired = []

    def _covering(self, value: int, length: int) -> tuple[int, int]:
        """The leaf and depth of the longest remaining route strictly shorter than length."""
        bits = self.shape.key_bits
        for shorter in range(length - 1, -1, -1):
            net = value & ~((1 << (bits - shorter)) - 1) & ((1 << bits) - 1)
            nh = self.routes.get((net, shorter))
            if nh is not None:
                return ROUTE | nh, shorter + 1
        return 0, 0

    def _update(self, level: int, base: int, value: int, length: int, leaf: int, depth: int,
                replace_depth: int | None) -> None:
        """Write `leaf` into the slots the prefix covers at this level and below: over
        shorter-or-equal prefixes when adding, over the deleted prefix's own slots when
        deleting (replace_depth)."""
        first, end = self.shape.level_bits(level)
        bits = self.shape.key_bits
        slot = base + _chunk(value, bits, first, end)
        if length <= end:
            self._paint(level, slot, 1 << (end - length), leaf, depth, replace_depth)
            return
        word = int(self.words[slot])
        if word & CHILD:
            child = word & POINTER_MASK
            self._update(level + 1, child, value, length, leaf, depth, replace_depth)
            if replace_depth is not None:
                self._collapse(slot, child, end)
            return
        if replace_depth is not None:
            return  # no ply below: nothing of the deleted route is stored here
        child = self._new_ply(word, int(self.depth[slot]))
        self._update(level + 1, child, value, length, leaf, depth, None)
        self.words[slot] = CHILD | child  # the one-word swap that publishes the new ply

    def _paint(self, level: int, first_slot: int, count: int, leaf: int, depth: int,
               replace_depth: int | None) -> None:
        slots = slice(first_slot, first_slot + count)
        words, depths = self.words[slots], self.depth[slots]
        take = depths <= depth if replace_depth is None else depths == replace_depth
        is_child = (words & CHILD) != 0
        for offset in np.flatnonzero(is_child):
            child = int(words[offset]) & POINTER_MASK
            self._paint(level + 1, child, self.shape.ply_words, leaf, depth, replace_depth)
        words[take & ~is_child] = leaf
        depths[take] = depth  # child slots keep the depth their ply inherited

    def _new_ply(self, word: int, depth: int) -> int:
        if self._free:
            child = self._free.pop()
        else:
            child = int(self._alloc_plies(1)[0])
        cells = slice(child, child + self.shape.ply_words)
        self.words[cells] = word
        self.depth[cells] = depth
        return child

    def _collapse(self, slot: int, child: int, child_first_bit: int) -> None:
        """Replace a ply by a leaf when one route shorter than the ply covers all of it."""
        cells = slice(child, child + self.shape.ply_words)
        words, depths = self.words[cells], self.depth[cells]
        if (words & CHILD).any() or (words != words[0]).any() or (depths != depths[0]).any():
            return
        if int(depths[0]) - 1 > child_first_bit:
            return  # several longer routes that happen to share a next hop
        self.depth[slot] = depths[0]
        self.words[slot] = words[0]
        self._retired.append(child)

    # ---- reading (host-side, for tools and debugging) ----
    def lookup(self, value: int) -> int | None:
        """The next hop for a key, walking the words as the MBL code does."""
        base = 0
        for level in range(len(self.shape.strides)):
            first, end = self.shape.level_bits(level)
            word = int(self.words[base + _chunk(value, self.shape.key_bits, first, end)])
            if not word & CHILD:
                return word & NEXT_HOP_MASK if word & ROUTE else None
            base = word & POINTER_MASK
        raise LpmError("corrupt trie: a child pointer below the last level")

    def max_reads(self) -> int:
        """Worst-case number of dependent reads over the routes present."""
        if not self.routes:
            return 1
        longest = max(length for _, length in self.routes)
        level = 0
        while self.shape.level_bits(level)[1] < longest:
            level += 1
        return level + 1

    def _check_prefix(self, value: int, length: int) -> None:
        bits = self.shape.key_bits
        if not 0 <= length <= bits or not 0 <= value < (1 << bits):
            raise LpmError(f"bad prefix {value:#x}/{length} for {bits}-bit keys")
        if value & ((1 << (bits - length)) - 1):
            raise LpmError(f"{self._show(value, length)} has host bits set")

    def _show(self, value: int, length: int) -> str:
        import ipaddress

        cls = ipaddress.IPv4Address if self.shape.key_bits == 32 else ipaddress.IPv6Address
        return f"{cls(value)}/{length}"


def _chunks(keys: np.ndarray, first: int, end: int) -> np.ndarray:
    """Bits [first, end) of 128-bit left-aligned keys (hi, lo uint64 columns) as int64."""
    limb = first // 64
    if end > 64 * (limb + 1):
        raise ValueError("a stride crosses a 64-bit boundary")
    shift = np.uint64(64 * (limb + 1) - end)
    mask = np.uint64((1 << (end - first)) - 1)
    return ((keys[:, limb] >> shift) & mask).astype(np.int64)


FIB4_MEMORY = "fib4_trie"  # the memory names microblocks/lpm.mbl declares
FIB6_MEMORY = "fib6_trie"


@dataclass
class RouteTables:
    """The IPv4 and IPv6 tries of one program (either may be absent)."""

    v4: MultibitTrie | None
    v6: MultibitTrie | None

    @classmethod
    def attach(cls, region: Callable[[str], np.ndarray | None]) -> RouteTables:
        """Bind to a program's trie memories; `region(name)` returns a memory's words or
        None when the program lacks it (NativeProgram.region(name, missing_ok=True))."""
        def trie(shape: TrieShape, name: str) -> MultibitTrie | None:
            words = region(name)
            return None if words is None else MultibitTrie(shape, words)
        return cls(trie(IPV4, FIB4_MEMORY), trie(IPV6, FIB6_MEMORY))

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
                               f"(import microblocks/lpm.mbl)")


def _key_columns(routes: dict[tuple[int, int], int], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys left-aligned in 128 bits as (hi, lo) uint64 columns, and the prefix lengths."""
    n = len(routes)
    lengths = np.fromiter((length for _, length in routes), dtype=np.int64, count=n)
    keys = np.zeros((n, 2), dtype=np.uint64)
    if bits <= 64:
        keys[:, 0] = np.fromiter((v for v, _ in routes), dtype=np.uint64, count=n) \
            << np.uint64(64 - bits)
    else:
        keys[:, 0] = np.fromiter((v >> (bits - 64) for v, _ in routes), dtype=np.uint64,
                                 count=n)
        low = (1 << (bits - 64)) - 1
        keys[:, 1] = np.fromiter(((v & low) << (128 - bits) for v, _ in routes),
                                 dtype=np.uint64, count=n)
    return keys, lengths


def _host_bits_set(keys: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Which left-aligned keys have bits set beyond their prefix length."""
    ones = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
    hi_host = np.where(lengths >= 64, np.uint64(0),
                       ones >> np.minimum(lengths, 63).astype(np.uint64))
    lo_host = np.where(lengths <= 64, ones,
                       np.where(lengths >= 128, np.uint64(0),
                                ones >> (np.clip(lengths, 64, 127) - 64).astype(np.uint64)))
    return ((keys[:, 0] & hi_host) | (keys[:, 1] & lo_host)) != 0
