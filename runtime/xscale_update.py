"""The XScale's cost of a route update, from the work the updater counted.

The Poptrie updater (runtime/trie/poptrie.cpp) counts per update the nodes it visits, the
host trie slots it scans, the shadow words it reads, the words it writes, the blocks it
allocates and retires (`Poptrie.take_counters`); the 16-8-8 trie's (runtime/trie/trie.cpp)
the levels it walks, the route-map probes for covering routes, the slot depths it compares,
the words it writes, the plies it allocates and retires (`MultibitTrie.take_counters`).
Both can trace the addresses they read (`trace`).  This module turns them into XScale
cycles with the parameters of runtime/data/xscale_update.toml (each tagged V/D/U with its
source): instructions per counted event at one cycle each, plus one DRAM line fill per
data-cache miss, the misses found by running the traced reads through a model of the
XScale's data cache (32 KB, 32-way, 32-byte lines, round-robin replacement: IXP2800 HRM
3.6.1.1).  The word writes to SRAM are not costed here: the control-processor model
(runtime/xscale.py) replays them as posted writes.  docs/performance.md, "Route updates:
the XScale cost from counted work".
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["COSTS_FILE", "DataCache", "TrieUpdateCosts", "UpdateCost", "UpdateCostModel",
           "UpdateCosts"]

COSTS_FILE = Path(__file__).parent / "data" / "xscale_update.toml"
HOST_TRACE = 1 << 63  # a traced word of the host trie (else of the Poptrie shadow)
HOST_BASE = 1 << 40   # byte address of the host trie's words in the model's address space


@dataclass(frozen=True)
class TrieUpdateCosts:
    """Instructions per counted event of the 16-8-8 trie's updater."""

    per_update: int
    per_level: int
    per_map_probe: int
    per_slot_scanned: int
    per_word_written: int
    per_ply_allocated: int
    per_ply_retired: int

    def instructions(self, counters: dict[str, int]) -> int:
        return (self.per_update * counters["updates"]
                + self.per_level * counters["levels_walked"]
                + self.per_map_probe * counters["map_probes"]
                + self.per_slot_scanned * counters["slots_scanned"]
                + self.per_word_written * counters["words_written"]
                + self.per_ply_allocated * counters["plies_allocated"]
                + self.per_ply_retired * counters["plies_retired"])


@dataclass(frozen=True)
class UpdateCosts:
    """Instructions per counted event (Poptrie; `trie`: the 16-8-8 trie) and the data
    cache's geometry."""

    cache_bytes: int
    cache_ways: int
    line_bytes: int
    route_map_misses: int
    per_update: int
    per_entry: int
    per_node: int
    per_host_slot: int
    per_image_read: int
    per_word_written: int
    per_block_allocated: int
    per_block_retired: int
    per_host_word_written: int
    trie: TrieUpdateCosts

    @classmethod
    def load(cls, path: Path = COSTS_FILE) -> UpdateCosts:
        raw = tomllib.loads(path.read_text())
        cache, ins = raw["dcache"], raw["instructions"]
        trie = TrieUpdateCosts(**{k: int(v) for k, v in raw["instructions_trie"].items()})
        return cls(cache_bytes=int(cache["bytes"]), cache_ways=int(cache["ways"]),
                   line_bytes=int(cache["line_bytes"]),
                   route_map_misses=int(cache["route_map_misses"]), trie=trie,
                   **{k: int(v) for k, v in ins.items()})

    def instructions(self, counters: dict[str, int]) -> int:
        """The instructions of the counted work: a Poptrie's counters, or the 16-8-8
        trie's (they have `slots_scanned`)."""
        if "slots_scanned" in counters:
            return self.trie.instructions(counters)
        return (self.per_update * counters["updates"]
                + self.per_entry * counters["entries"]
                + self.per_node * counters["nodes_visited"]
                + self.per_host_slot * counters["host_words_read"]
                + self.per_image_read * counters["image_words_read"]
                + self.per_word_written * counters["words_written"]
                + self.per_block_allocated * counters["blocks_allocated"]
                + self.per_block_retired * counters["blocks_retired"]
                + self.per_host_word_written * counters["host_words_written"])


class DataCache:
    """A set-associative cache with round-robin replacement per set, allocating on a read
    miss (the XScale's data cache); `access(line)` says whether the line was present."""

    def __init__(self, total_bytes: int, ways: int, line_bytes: int) -> None:
        self.ways = ways
        self.sets = total_bytes // (ways * line_bytes)
        self._slots = [-1] * (self.sets * ways)
        self._next = [0] * self.sets
        self._where: dict[int, int] = {}

    def access(self, line: int) -> bool:
        if line in self._where:
            return True
        s = line % self.sets
        slot = s * self.ways + self._next[s]
        victim = self._slots[slot]
        if victim >= 0:
            del self._where[victim]
        self._slots[slot] = line
        self._where[line] = slot
        self._next[s] = (self._next[s] + 1) % self.ways
        return False


@dataclass(frozen=True)
class UpdateCost:
    """One update's modelled work on the XScale."""

    instructions: int
    misses: int
    cycles: int  # instructions at one cycle each plus the misses' line fills


@dataclass
class UpdateCostModel:
    """Costs updates one after another (the cache stays warm between them)."""

    miss_cycles: int  # a line fill from DRAM: the chip file's [xscale] dram_read_cycles
    costs: UpdateCosts = field(default_factory=UpdateCosts.load)
    cache: DataCache = field(init=False)

    def __post_init__(self) -> None:
        c = self.costs
        self.cache = DataCache(c.cache_bytes, c.cache_ways, c.line_bytes)

    def misses(self, trace: np.ndarray) -> int:
        """Data-cache misses of the traced word reads (uint64: a word index, bit 63 set for
        the host trie's words)."""
        words = trace.astype(np.uint64)
        host = (words & np.uint64(HOST_TRACE)) != 0
        index = words & np.uint64(HOST_TRACE - 1)
        addresses = np.where(host, np.uint64(HOST_BASE) + index * np.uint64(4),
                             index * np.uint64(4))
        lines = (addresses // np.uint64(self.costs.line_bytes)).tolist()
        access = self.cache.access
        return sum(1 for line in lines if not access(line))

    def cost(self, counters: dict[str, int], trace: np.ndarray) -> UpdateCost:
        """The cost of the work in `counters` (`take_counters` of a Poptrie or a 16-8-8
        trie, one or more updates) whose reads are `trace` (its `take_trace`)."""
        c = self.costs
        instructions = c.instructions(counters)
        misses = self.misses(trace) + c.route_map_misses * counters["updates"]
        return UpdateCost(instructions, misses, instructions + misses * self.miss_cycles)
