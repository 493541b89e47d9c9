"""Poptrie route tables in chip memory (docs/lpm.md, "Poptrie"): the compact LPM that fits
the full 2024 table in the IXP2800's SRAM.

The structure follows Asai and Ohara, "Poptrie: A Compressed Trie with Population Count
for Fast and Scalable Software IP Routing Table Lookup" (SIGCOMM 2015): a direct-pointing
array indexed by the top `direct_bits` of the key, then internal nodes of stride 6, each a
64-bit child bitmap (`vector`), a 64-bit leaf bitmap (`leafvec`, leaf compression: a bit
marks where a run of equal leaves starts) and the bases of its contiguous children and
leaves; the popcount of a bitmap below the key's 6 bits gives the index into them.
All of it lives in one 32-bit word memory (`fib4_poptrie` / `fib6_poptrie`,
microblocks/lpm_poptrie.mbl):

    words [0, 2^direct_bits)   direct entries: CHILD | node offset, or a leaf word
    a node, 6 words            vector[31:0] vector[63:32] leafvec[31:0] leafvec[63:32]
                               base1 (word offset of the children, 6 words each)
                               base0 (word offset of the leaves, 1 word each)
    a leaf word                ROUTE | next hop, or 0 (no route): as in the 16-8-8 trie

Keys shorter than direct_bits + k * 6 are padded with zero bits at the end (IPv4: 32 + 4
bits = 18 + 3 * 6), so every level is a full stride.

The control plane keeps, host-side only, the same routes in a leaf-pushed multibit trie
with the Poptrie's geometry (the C++ updater npkit.runtime._trie with root direct_bits and
6-bit plies, in host memory): an update changes that trie, then rebuilds the Poptrie
subtree of every direct entry the prefix covers (copy on write: new nodes and leaves are
written into free memory, then one word, the direct entry, switches to them) and retires
the old subtree's blocks, which become reusable after `reclaim()` (the grace period). So a
lookup running during an update sees the old or the new subtree, never a mixture.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from npkit.runtime._trie import LpmError, Sequence, Trie
from npkit.runtime.lpm import CHILD, NEXT_HOP_MASK, POINTER_MASK, ROUTE, WriteLog, route_columns

__all__ = ["NODE_WORDS", "POPTRIE4", "POPTRIE6", "Poptrie", "PoptrieShape", "STRIDE"]

STRIDE = 6  # bits per internal node: 64-bit bitmaps
FANOUT = 1 << STRIDE
NODE_WORDS = 6
_BIT = np.left_shift(np.uint64(1), np.arange(FANOUT, dtype=np.uint64))


@dataclass(frozen=True)
class PoptrieShape:
    """Key width and direct-pointing bits; the internal nodes take 6 bits each."""

    key_bits: int
    direct_bits: int

    @property
    def pad(self) -> int:
        """Zero bits appended to a key so that the levels below the direct array are full."""
        return -(self.key_bits - self.direct_bits) % STRIDE

    @property
    def expanded_bits(self) -> int:
        return self.key_bits + self.pad

    @property
    def direct_words(self) -> int:
        return 1 << self.direct_bits

    @property
    def node_levels(self) -> int:
        return (self.expanded_bits - self.direct_bits) // STRIDE

    def reads(self, length: int) -> int:
        """Dependent reads for an address whose longest match has `length` bits: the direct
        entry, one per node, one for the leaf."""
        if length <= self.direct_bits:
            return 1
        return 2 + -(-(length - self.direct_bits) // STRIDE)


POPTRIE4 = PoptrieShape(32, 18)   # 1 MB direct array; a /19-/24 route: 3 reads
POPTRIE6 = PoptrieShape(128, 20)  # 4 MB direct array; a /32 route: 4 reads, /48: 7


@dataclass
class BlockAllocator:
    """Variable-size blocks of words in [start, end): a bump pointer, exact-size free lists
    and a retired list tagged with update numbers (reusable after the grace period)."""

    start: int
    end: int
    next_free: int = field(init=False)
    live_words: int = 0
    free: dict[int, list[int]] = field(default_factory=dict)
    retired: deque[tuple[int, int, int]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self.next_free = self.start

    def alloc(self, size: int) -> int:
        spare = self.free.get(size)
        if spare:
            offset = spare.pop()
        elif self.next_free + size <= self.end:
            offset = self.next_free
            self.next_free += size
        else:
            raise LpmError(f"the Poptrie memory is full ({self.end} words)")
        self.live_words += size
        return offset

    def release(self, offset: int, size: int) -> None:
        """Give back a block that nothing has linked (an update that failed)."""
        self.live_words -= size
        self.free.setdefault(size, []).append(offset)

    def retire(self, offset: int, size: int, number: int) -> None:
        self.live_words -= size
        self.retired.append((offset, size, number))

    def reclaim(self, upto: int) -> None:
        while self.retired and self.retired[0][2] <= upto:
            offset, size, _ = self.retired.popleft()
            self.free.setdefault(size, []).append(offset)

    def reset(self) -> None:
        self.next_free = self.start
        self.live_words = 0
        self.free.clear()
        self.retired.clear()

    @property
    def retired_words(self) -> int:
        return sum(size for _, size, _ in self.retired)

    @property
    def free_words(self) -> int:
        return sum(size * len(offsets) for size, offsets in self.free.items())


@dataclass
class Poptrie:
    """One family's Poptrie over `words` (a uint32 view of the chip memory, or a host shadow
    of it with `log=True`: every word write is then also appended to a write log).  Same
    calls as npkit.runtime.lpm.MultibitTrie: build, load, add, delete, reclaim, take_log,
    lookup, bytes_used, stats."""

    shape: PoptrieShape
    words: np.ndarray
    log: bool = False
    sequence: Sequence | None = None
    host_words: int = 1 << 25  # the host-side expansion trie (lazily zeroed)
    core: Trie = field(init=False, repr=False)
    blocks: BlockAllocator = field(init=False, repr=False)
    _routes: dict[tuple[int, int], int] = field(init=False, repr=False, default_factory=dict)
    _log: list[tuple[int, int]] = field(init=False, repr=False, default_factory=list)
    _barriers: list[int] = field(init=False, repr=False, default_factory=list)
    _number: int = field(init=False, repr=False, default=0)

    def __post_init__(self) -> None:
        if not isinstance(self.words, np.ndarray) or self.words.dtype != np.uint32 \
                or len(self.words) < self.shape.direct_words:
            raise LpmError(f"the Poptrie needs a uint32 memory of at least "
                           f"{self.shape.direct_words} words")
        if len(self.words) > 1 << 31:
            raise LpmError("a Poptrie memory holds at most 2^31 words (31-bit offsets)")
        if self.sequence is None:
            self.sequence = Sequence()
        self._host = np.zeros(max(self.host_words, 2 * self.shape.direct_words),
                              dtype=np.uint32)
        self.core = Trie(self.shape.expanded_bits, self.shape.direct_bits, STRIDE,
                         self._host, False, Sequence())
        self.blocks = BlockAllocator(self.shape.direct_words, len(self.words))

    # ---- sizes ----
    @property
    def words_used(self) -> int:
        """The direct array plus every live node and leaf block."""
        return self.shape.direct_words + self.blocks.live_words

    @property
    def bytes_used(self) -> int:
        return 4 * self.words_used

    def stats(self) -> dict[str, int]:
        return {"routes": len(self._routes), "words_used": self.words_used,
                "words_retired": self.blocks.retired_words,
                "words_free": self.blocks.free_words,
                "words_high_water": self.blocks.next_free}

    @property
    def routes(self) -> dict[tuple[int, int], int]:
        return dict(self._routes)

    @property
    def number(self) -> int:
        """Updates applied so far (the retired blocks carry these numbers)."""
        return self._number

    # ---- whole-table operations ----
    def clear(self) -> None:
        """Empty the table (not safe for concurrent lookups)."""
        self.core.clear()
        self.words[:self.blocks.next_free] = 0
        self.blocks.reset()
        self._routes.clear()

    def build(self, routes: dict[tuple[int, int], int]) -> None:
        """Replace the table with `routes`: the bulk load (not a concurrent update)."""
        route_columns(routes, self.shape.key_bits)  # validates before clearing
        self.clear()
        pad = self.shape.pad
        self.core.load(*route_columns({(v << pad, n): h for (v, n), h in routes.items()},
                                      self.shape.expanded_bits))
        self.core.reclaim(None)
        self._routes = dict(routes)
        direct = self._host[:self.shape.direct_words]
        leaves = (direct & CHILD) == 0
        self.words[:self.shape.direct_words][leaves] = direct[leaves]
        shift = self.shape.expanded_bits - self.shape.direct_bits
        for index in np.flatnonzero(~leaves).tolist():
            writes, root, _ = self._subtree(int(direct[index]) & POINTER_MASK, index << shift,
                                            self.shape.direct_bits, None, 0, 0)
            for offset, values in writes:
                self.words[offset:offset + len(values)] = values
            self.words[index] = CHILD | root
        if self.log:  # the bulk image as one log (a chip that starts from zero)
            used = np.flatnonzero(self.words[:self.blocks.next_free])
            self._log.extend(zip(used.tolist(), self.words[used].tolist(), strict=True))

    def load(self, routes: dict[tuple[int, int], int]) -> int:
        """Make the table `routes` by single updates, each safe for concurrent lookups (adds
        and replaces shortest first, then deletes); returns how many updates it took."""
        route_columns(routes, self.shape.key_bits)
        count = 0
        for (value, length), hop in sorted(routes.items(), key=lambda r: r[0][1]):
            if self._routes.get((value, length)) != hop:
                self.add(value, length, hop)
                count += 1
        for value, length in sorted(set(self._routes) - set(routes), key=lambda r: -r[1]):
            self.delete(value, length)
            count += 1
        return count

    # ---- single-route updates ----
    def add(self, value: int, length: int, next_hop: int) -> None:
        """Add or replace one route."""
        self._check(value, length)
        if not isinstance(next_hop, int) or not 0 <= next_hop <= NEXT_HOP_MASK:
            raise LpmError(f"next hop {next_hop!r} out of range 0..{NEXT_HOP_MASK}")
        old = self._routes.get((value, length))
        self.core.add(value << self.shape.pad, length, next_hop)
        try:
            self._refresh(value, length)
        except LpmError:  # a full memory: undo the host change, nothing was linked
            if old is None:
                self.core.delete(value << self.shape.pad, length)
            else:
                self.core.add(value << self.shape.pad, length, old)
            self.core.reclaim(None)
            raise
        self._routes[(value, length)] = next_hop

    def delete(self, value: int, length: int) -> None:
        """Remove one route; its addresses fall back to the next shorter covering route."""
        self._check(value, length)
        if (value, length) not in self._routes:
            raise LpmError(f"no route {value:#x}/{length} to delete")
        old = self._routes[(value, length)]
        self.core.delete(value << self.shape.pad, length)
        try:
            self._refresh(value, length)
        except LpmError:
            self.core.add(value << self.shape.pad, length, old)
            self.core.reclaim(None)
            raise
        del self._routes[(value, length)]

    def reclaim(self, upto: int | None = None) -> None:
        """End of a grace period: blocks retired by updates numbered <= upto (default: all
        so far) become reusable; a barrier orders their reuse after the unlinking."""
        self.blocks.reclaim(self._number if upto is None else upto)
        self._barrier()

    def take_log(self) -> WriteLog:
        """The word writes since the last take (log=True), and restart the log."""
        if not self.log:
            raise LpmError("this Poptrie keeps no write log (create it with log=True)")
        pairs, self._log = self._log, []
        barriers, self._barriers = self._barriers, []
        indices = np.array([i for i, _ in pairs], dtype=np.uint32)
        values = np.array([v for _, v in pairs], dtype=np.uint32)
        return WriteLog(indices, values, np.array(barriers, dtype=np.int64))

    # ---- reading ----
    def lookup(self, value: int) -> int | None:
        """The next hop for a key, walking the words as the MBL code does."""
        word, _ = walk(self.words, self.shape, value)
        return word & NEXT_HOP_MASK if word & ROUTE else None

    def max_reads(self) -> int:
        longest = max((length for _, length in self._routes), default=0)
        return self.shape.reads(longest)

    # ---- internals ----
    def _check(self, value: int, length: int) -> None:
        bits = self.shape.key_bits
        if not isinstance(value, int) or not isinstance(length, int) \
                or not 0 <= length <= bits or not 0 <= value < 1 << bits \
                or value & ((1 << (bits - length)) - 1):
            raise LpmError(f"bad prefix {value!r}/{length!r} for {bits}-bit keys")

    def _refresh(self, value: int, length: int) -> None:
        """After the host trie changed for value/length: bring every direct entry it covers
        up to date, one update number for the whole change."""
        self.core.reclaim(None)  # the host trie has no concurrent readers
        self._number += 1
        shape = self.shape
        low = value << shape.pad
        high = low + (1 << (shape.expanded_bits - length))
        shift = shape.expanded_bits - shape.direct_bits
        for index in range(low >> shift, ((high - 1) >> shift) + 1):
            self._refresh_entry(index, low, high)

    def _refresh_entry(self, index: int, low: int, high: int) -> None:
        """Direct entry `index` after a change of the keys in [low, high) (padded keys)."""
        host = int(self._host[index])
        old = int(self.words[index])
        if host & CHILD:
            shift = self.shape.expanded_bits - self.shape.direct_bits
            old_root = old & POINTER_MASK if old & CHILD else None
            writes, root, retire = self._subtree(host & POINTER_MASK, index << shift,
                                                 self.shape.direct_bits, old_root, low, high)
            for offset, values in writes:
                self._write_block(offset, values)
            self._barrier()
            self._write(index, CHILD | root)
            for offset, size in retire:
                self.blocks.retire(offset, size, self._number)
            if old_root is not None:
                self.blocks.retire(old_root, NODE_WORDS, self._number)
        else:
            self._write(index, host)
            if old & CHILD:
                self._retire(old & POINTER_MASK, root=True)

    def _subtree(self, ply: int, key: int, used: int, old: int | None, low: int,
                 high: int) -> tuple[list[tuple[int, np.ndarray]], int, list[tuple[int, int]]]:
        """New Poptrie blocks for the host ply `ply` (its keys start at `key`; `used` key bits
        lie above it) whose old node, if any, is at `old`, after the keys in [low, high)
        changed.  Children whose keys lie outside [low, high) are unchanged: their node words
        are copied and keep their blocks; the rest is built anew (path copying).  Returns the
        blocks to write (allocated, not written), the root node's offset and the old blocks
        to retire once the new subtree is linked.  On a full memory every new block goes
        back and LpmError is raised."""
        taken: list[tuple[int, int]] = []
        writes: list[tuple[int, np.ndarray]] = []
        retire: list[tuple[int, int]] = []
        bits = self.shape.expanded_bits
        words = self.words

        def alloc(size: int) -> int:
            offset = self.blocks.alloc(size)
            taken.append((offset, size))
            return offset

        def node(ply: int, key: int, used: int, old: int | None, at: int) -> None:
            row = self._host[ply:ply + FANOUT]
            child = (row & CHILD) != 0
            kids = np.flatnonzero(child).tolist()
            below = bits - used - STRIDE  # key bits under one slot of this node
            old_vector = old_base1 = 0
            if old is not None:
                old_vector = int(words[old]) | int(words[old + 1]) << 32
                old_base1 = int(words[old + 4])
                old_leafvec = int(words[old + 2]) | int(words[old + 3]) << 32
                if old_leafvec:
                    retire.append((int(words[old + 5]), old_leafvec.bit_count()))
                if old_vector:
                    retire.append((old_base1, NODE_WORDS * old_vector.bit_count()))

            def old_child(k: int) -> int | None:
                if not old_vector >> k & 1:
                    return None
                return old_base1 + NODE_WORDS * ((old_vector & ((2 << k) - 1)).bit_count() - 1)

            base1 = alloc(NODE_WORDS * len(kids)) if kids else 0
            for i, k in enumerate(kids):
                start = key | k << below
                previous = old_child(k)
                if previous is not None and (start + (1 << below) <= low or start >= high):
                    writes.append((base1 + NODE_WORDS * i,
                                   words[previous:previous + NODE_WORDS].copy()))
                else:
                    node(int(row[k]) & POINTER_MASK, start, used + STRIDE, previous,
                         base1 + NODE_WORDS * i)
            for k in range(FANOUT):  # old children that became leaves
                if old_vector >> k & 1 and not child[k]:
                    self._retire_into(old_child(k), retire)
            places = np.flatnonzero(~child)
            leaves = row[places]
            starts = np.ones(len(leaves), dtype=bool)
            starts[1:] = leaves[1:] != leaves[:-1]
            base0 = alloc(int(starts.sum())) if len(leaves) else 0
            if len(leaves):
                writes.append((base0, leaves[starts]))
            vector = int(_BIT[kids].sum()) if kids else 0
            leafvec = int(_BIT[places[starts]].sum())
            writes.append((at, np.array([vector & 0xFFFFFFFF, vector >> 32,
                                         leafvec & 0xFFFFFFFF, leafvec >> 32, base1, base0],
                                        dtype=np.uint32)))

        try:
            root = alloc(NODE_WORDS)
            node(ply, key, used, old, root)
        except LpmError:
            for offset, size in taken:
                self.blocks.release(offset, size)
            raise
        return writes, root, retire

    def _retire_into(self, at: int, retire: list[tuple[int, int]]) -> None:
        """The blocks under the node at `at` (not its own words), into `retire`."""
        vector = int(self.words[at]) | int(self.words[at + 1]) << 32
        leafvec = int(self.words[at + 2]) | int(self.words[at + 3]) << 32
        kids = vector.bit_count()
        if kids:
            base1 = int(self.words[at + 4])
            for i in range(kids):
                self._retire_into(base1 + NODE_WORDS * i, retire)
            retire.append((base1, NODE_WORDS * kids))
        if leafvec:
            retire.append((int(self.words[at + 5]), leafvec.bit_count()))

    def _retire(self, at: int, root: bool) -> None:
        """Retire the blocks of the node at `at` and everything below it."""
        retire: list[tuple[int, int]] = [(at, NODE_WORDS)] if root else []
        self._retire_into(at, retire)
        for offset, size in retire:
            self.blocks.retire(offset, size, self._number)

    def _write(self, index: int, value: int) -> None:
        if int(self.words[index]) == value:
            return
        self.words[index] = value
        if self.log:
            self._log.append((index, value))

    def _write_block(self, offset: int, values: np.ndarray) -> None:
        """A new block's words (nothing reads them before the barrier that links them)."""
        target = self.words[offset:offset + len(values)]
        if self.log:
            changed = np.flatnonzero(target != values)
            self._log.extend(zip((changed + offset).tolist(), values[changed].tolist(),
                                 strict=True))
        target[:] = values

    def _barrier(self) -> None:
        if self.log and (not self._barriers or self._barriers[-1] != len(self._log)):
            self._barriers.append(len(self._log))


def walk(words: np.ndarray, shape: PoptrieShape, value: int) -> tuple[int, int]:
    """The lookup as microblocks/lpm_poptrie.mbl does it: the leaf word and the number of
    dependent reads."""
    key = value << shape.pad
    bits = shape.expanded_bits
    word = int(words[key >> (bits - shape.direct_bits)])
    reads = 1
    used = shape.direct_bits
    while word & CHILD:
        at = word & POINTER_MASK
        reads += 1
        v = (key >> (bits - used - STRIDE)) & (FANOUT - 1)
        used += STRIDE
        vector = int(words[at]) | int(words[at + 1]) << 32
        mask = (2 << v) - 1
        if vector >> v & 1:
            word = CHILD | (int(words[at + 4]) + NODE_WORDS * ((vector & mask).bit_count() - 1))
            continue
        leafvec = int(words[at + 2]) | int(words[at + 3]) << 32
        reads += 1
        word = int(words[int(words[at + 5]) + (leafvec & mask).bit_count() - 1])
    return word, reads
