"""Control-plane programming of Flow Director (microblocks/flow_director.mbl,
docs/steering.md): perfect-match filters inserted into and deleted from the hash buckets of
fd_table while traffic flows.

An insert writes the entry's key and action words first and its header word (with the valid
bit) last; a delete clears the header word first.  A packet that reads the table meanwhile sees
either no filter or the whole filter, never half of one (one 32-bit word write is atomic on
both targets).  Filters never move between slots, so the other filters of a bucket are never
disturbed."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

import numpy as np

from npkit.base.errors import NpkitError

SLOTS = 4  # FD_SLOTS in flow_director.mbl
ENTRIES = 8192  # fd_table's size
MAX_BUCKETS = ENTRIES // SLOTS
COUNTERS = 512
ENTRY_WORDS = 6  # header, 4 key words, mark value
VALID, DISCARD, COUNT, MARK = 1 << 31, 1 << 30, 1 << 29, 1 << 28


class L4(IntEnum):
    OTHER = 0
    TCP = 1
    UDP = 2


class FlowDirectorError(NpkitError):
    """A filter that cannot be added (bucket full, bad action) or a bad table size."""


class MemoryWriter(Protocol):
    def region(self, name: str) -> np.ndarray: ...
    def write(self, name: str, index: int, value: int) -> None: ...
    def read(self, name: str, index: int) -> int: ...


@dataclass(frozen=True)
class FlowKey:
    """An IPv4 flow as the filter matches it.  An OTHER flow's ports are not part of its key
    (two OTHER keys that differ only in ports are the same filter)."""

    src: int
    dst: int
    sport: int = 0
    dport: int = 0
    l4: L4 = L4.TCP

    def words(self) -> tuple[int, int, int, int]:
        ports = 0 if self.l4 == L4.OTHER else (self.sport << 16 | self.dport)
        return (self.src, self.dst, ports, 4 << 8 | int(self.l4))

    def bucket(self, buckets: int) -> int:
        data = b"".join(w.to_bytes(4, "big") for w in self.words())
        return zlib.crc32(data) & (buckets - 1)


@dataclass(frozen=True)
class Action:
    """What a hit does: drop, or steer to queue; optionally count in counter and report mark
    in meta.flow_id (instead of the RSS hash)."""

    queue: int = 0
    drop: bool = False
    counter: int | None = None
    mark: int | None = None

    def header(self) -> int:
        if not 0 <= self.queue <= 255:
            raise FlowDirectorError(f"queue {self.queue}: 0..255")
        if self.counter is not None and not 0 <= self.counter < COUNTERS:
            raise FlowDirectorError(f"counter {self.counter}: 0..{COUNTERS - 1}")
        if self.mark is not None and not 0 <= self.mark <= 0xFFFFFFFF:
            raise FlowDirectorError(f"mark {self.mark}: a 32-bit value")
        word = VALID | self.queue << 8
        if self.drop:
            word |= DISCARD
        if self.counter is not None:
            word |= COUNT | self.counter << 16
        if self.mark is not None:
            word |= MARK
        return word


class FlowDirector:
    """The filters of one fd_table, mirrored on the host to find free slots."""

    def __init__(self, target: MemoryWriter, buckets: int = MAX_BUCKETS) -> None:
        if buckets < 1 or buckets > MAX_BUCKETS or buckets & (buckets - 1):
            raise FlowDirectorError(f"{buckets} buckets: a power of two up to {MAX_BUCKETS}")
        self.target = target
        self.buckets = buckets
        self.table = target.region("fd_table")
        self.table[:] = 0
        self.slots: dict[tuple[int, ...], int] = {}  # by key words: OTHER ignores ports
        self._used: set[int] = set()
        target.write("fd_config", 0, buckets - 1)

    def __len__(self) -> int:
        return len(self.slots)

    def __contains__(self, key: FlowKey) -> bool:
        return key.words() in self.slots

    def insert(self, key: FlowKey, action: Action) -> None:
        """Add a filter, or change the action of an existing one (in place)."""
        header = action.header()
        words = key.words()
        slot = self.slots.get(words)
        if slot is None:
            first = key.bucket(self.buckets) * SLOTS
            free = [s for s in range(first, first + SLOTS) if s not in self._used]
            if not free:
                raise FlowDirectorError(f"bucket {first // SLOTS} is full ({SLOTS} filters)")
            slot = free[0]
        base = slot * ENTRY_WORDS
        if slot in self._used:  # an update: invalidate, rewrite, validate
            self.table[base] = 0
        self.table[base + 1:base + ENTRY_WORDS] = [*words, action.mark or 0]
        self.table[base] = header
        self.slots[words] = slot
        self._used.add(slot)

    def delete(self, key: FlowKey) -> bool:
        """Remove a filter; False if there was none."""
        slot = self.slots.pop(key.words(), None)
        if slot is None:
            return False
        self.table[slot * ENTRY_WORDS] = 0
        self._used.discard(slot)
        return True

    def reset_counters(self) -> None:
        """Zero fd_counters and fd_stats."""
        self.target.region("fd_counters")[:] = 0
        self.target.region("fd_stats")[:] = 0

    def counter(self, index: int) -> int:
        """fd_counters[index]: packets counted by filters with that counter."""
        return self.target.read("fd_counters", index)

    def hits_and_misses(self) -> tuple[int, int]:
        """Packets that matched a filter, packets that went to RSS (fd_stats)."""
        return self.target.read("fd_stats", 0), self.target.read("fd_stats", 1)
