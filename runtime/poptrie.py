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
    a node, 8 words            vector[31:0]  base1_lo leafvec[31:0]  base0_lo
                               vector[63:32] base1_hi leafvec[63:32] base0_hi
                               base1_lo: word offset of the first child (8 words each),
                               base0_lo: of the first leaf (1 word each); base1_hi and
                               base0_hi: of the first child / leaf of the high half
                               (base_lo + the low half's popcount), so the chip's walker
                               reads one half's [vector, base1] for a step to a child,
                               [leafvec, base0] for a step to a leaf (2 adjacent words,
                               one SRAM command, whatever the key), or all 4 at once;
                               key bits v find their half at node + ((v >> 3) & 4)
    a leaf word                ROUTE | next hop, or 0 (no route): as in the 16-8-8 trie

Keys shorter than direct_bits + k * 6 are padded with zero bits at the end (IPv4: 32 + 4
bits = 18 + 3 * 6), so every level is a full stride.

The control plane keeps, host-side only, the same routes in a leaf-pushed multibit trie
with the Poptrie's geometry (the C++ updater npkit.runtime._trie with root direct_bits and
6-bit plies, in host memory): an update changes that trie, then rebuilds the Poptrie
subtree of every direct entry the prefix covers (copy on write: new nodes and leaves are
written into free memory, then one word, the direct entry, switches to them) and retires
the old blocks, which become reusable after `reclaim()` (the grace period). Only what
changes is touched: a node whose words stay the same keeps its blocks; a node whose bitmaps
stay the same has its changed leaves rewritten in place (one word each), and its base words
too if a block below it moved (one word per half: a lookup's step reads one); a node whose
bitmaps change is copied with its sibling block, which its parent's base words (or, for a
root, the direct entry) then switch to. So a lookup running during an update sees, for its
address, the old or the new answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npkit.runtime._trie import LpmError, PoptrieImage, Sequence, Trie
from npkit.runtime.lpm_format import (
    CHILD,
    NEXT_HOP_MASK,
    POINTER_MASK,
    ROUTE,
    WriteLog,
    route_columns,
)

__all__ = ["BASE0_HI", "BASE0_LO", "BASE1_HI", "BASE1_LO", "LEAFVEC_HI", "LEAFVEC_LO",
           "NODE_WORDS", "POPTRIE4", "POPTRIE6", "Poptrie", "PoptrieShape", "STRIDE",
           "VECTOR_HI", "VECTOR_LO"]

STRIDE = 6  # bits per internal node: 64-bit bitmaps
FANOUT = 1 << STRIDE
NODE_WORDS = 8
# Word offsets inside a node (runtime/trie/poptrie.hpp, PoptrieImage::kVectorLo ...): the
# low half's four words, then the high half's.
VECTOR_LO, BASE1_LO, LEAFVEC_LO, BASE0_LO, VECTOR_HI, BASE1_HI, LEAFVEC_HI, BASE0_HI = \
    range(NODE_WORDS)


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
    image: PoptrieImage = field(init=False, repr=False)

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
        # With a log (the chip's shadow) the host trie logs too: its writes are counted
        # as the update's work (take_counters), and the log is dropped after each update.
        self.core = Trie(self.shape.expanded_bits, self.shape.direct_bits, STRIDE,
                         self._host, self.log, Sequence())
        self.image = PoptrieImage(self.words, self._host, self.shape.direct_bits, self.log,
                                  self.core, self.shape.key_bits)

    # ---- sizes ----
    @property
    def words_used(self) -> int:
        """The direct array plus every live node and leaf block."""
        return self.shape.direct_words + self.image.stats()["live_words"]

    @property
    def bytes_used(self) -> int:
        return 4 * self.words_used

    def stats(self) -> dict[str, int]:
        """routes, words_used, words_retired (in their grace period), words_free (reusable),
        words_high_water (the first word never used)."""
        image = self.image.stats()
        return {"routes": self.core.route_count, "words_used": self.words_used,
                "words_retired": image["retired_words"], "words_free": image["free_words"],
                "words_high_water": image["next_free"]}

    def retired(self) -> list[tuple[int, int, int]]:
        """Blocks in their grace period: (word offset, words, update number)."""
        return self.image.retired()

    @property
    def routes(self) -> dict[tuple[int, int], int]:
        """The routes, (network, length) -> next hop (a copy, built on each call)."""
        hi, lo, lengths, hops = self.core.routes()
        pad = self.shape.pad
        values = [((h << 64) | low) >> pad for h, low in zip(hi.tolist(), lo.tolist(),
                                                                strict=True)]
        return dict(zip(zip(values, lengths.tolist(), strict=True), hops.tolist(), strict=True))

    @property
    def number(self) -> int:
        """Updates applied so far (the retired blocks carry these numbers)."""
        return self.image.number

    # ---- whole-table operations ----
    def clear(self) -> None:
        """Empty the table (not safe for concurrent lookups)."""
        self.core.clear()
        self.image.clear()
        if self.log:
            self.core.take_log()

    def build(self, routes: dict[tuple[int, int], int]) -> None:
        """Replace the table with `routes`: the bulk load (not a concurrent update)."""
        route_columns(routes, self.shape.key_bits)  # validates before clearing
        self.clear()
        pad = self.shape.pad
        self.core.load(*route_columns({(v << pad, n): h for (v, n), h in routes.items()},
                                      self.shape.expanded_bits))
        self.core.reclaim(None)
        if self.log:
            self.core.take_log()  # the host trie's bulk writes are not chip writes
        self.image.build()

    def load(self, routes: dict[tuple[int, int], int]) -> int:
        """Make the table `routes` by single updates, each safe for concurrent lookups (adds
        and replaces shortest first, then deletes); returns how many updates it took."""
        route_columns(routes, self.shape.key_bits)
        present = self.routes
        count = 0
        for (value, length), hop in sorted(routes.items(), key=lambda r: r[0][1]):
            if present.get((value, length)) != hop:
                self.image.add(value, length, hop)
                count += 1
        for value, length in sorted(set(present) - set(routes), key=lambda r: -r[1]):
            self.image.delete(value, length)
            count += 1
        return count

    # ---- single-route updates (one call into C++ each) ----
    def add(self, value: int, length: int, next_hop: int) -> None:
        """Add or replace one route."""
        self.image.add(value, length, next_hop)

    def delete(self, value: int, length: int) -> None:
        """Remove one route; its addresses fall back to the next shorter covering route."""
        self.image.delete(value, length)

    def reclaim(self, upto: int | None = None) -> None:
        """End of a grace period: blocks retired by updates numbered <= upto (default: all
        so far) become reusable; a barrier orders their reuse after the unlinking."""
        self.image.reclaim(upto)

    def take_counters(self) -> dict[str, int]:
        """The updates' work since the last take (then zeroed): updates, entries (direct
        entries refreshed), nodes_visited, host_words_read (slots scanned, child slots
        read, one per node known unchanged from the host trie's writes), image_words_read,
        words_written, blocks_allocated, blocks_retired, host_words_written (the words
        the host-side trie changed; with or without the write log)."""
        return self.image.take_counters()

    def trace(self, on: bool) -> None:
        """Record every word the updates read (take_trace), for the XScale cache model."""
        self.image.set_trace(on)

    def take_trace(self) -> np.ndarray:
        """The words read since the last take, as uint64: a word index, bit 63 set for the
        host trie's words (else the image's)."""
        return self.image.take_trace()

    def take_log(self) -> WriteLog:
        """The word writes since the last take (log=True), and restart the log."""
        if not self.log:
            raise LpmError("this Poptrie keeps no write log (create it with log=True)")
        return WriteLog(*self.image.take_log())

    # ---- reading ----
    def lookup(self, value: int) -> int | None:
        """The next hop for a key, walking the words as the MBL code does."""
        word, _ = walk(self.words, self.shape, value)
        return word & NEXT_HOP_MASK if word & ROUTE else None

    def max_reads(self) -> int:
        """Worst-case number of dependent reads over the routes present."""
        return self.shape.reads(max(self.core.max_length, 0))


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
        half = at + (v >> 3 & 4)  # this half's 4 words: vector, base1, leafvec, base0
        s = v & 31
        vector = int(words[half])
        if vector >> s & 1:
            rank = (vector & ((2 << s) - 1)).bit_count()
            word = CHILD | (int(words[half + BASE1_LO]) + NODE_WORDS * (rank - 1))
            continue
        leafvec = int(words[half + LEAFVEC_LO])
        reads += 1
        runs = (leafvec & ((2 << s) - 1)).bit_count()
        word = int(words[int(words[half + BASE0_LO]) + runs - 1])
    return word, reads
