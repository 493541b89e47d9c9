"""The word format and write log shared by the route-table structures (npkit.runtime.lpm's
16-8-8 trie and npkit.runtime.poptrie's Poptrie; docs/lpm.md): leaf and pointer words, the
ordered write log the XScale model replays, and routes as columns for the C++ loaders."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npkit.runtime._trie import LpmError

CHILD = 1 << 31  # the low 31 bits point to a ply / node
ROUTE = 1 << 30  # a route: the low 16 bits are its next-hop index
NEXT_HOP_MASK = 0xFFFF
POINTER_MASK = CHILD - 1
LOW64 = (1 << 64) - 1


@dataclass(frozen=True)
class WriteLog:
    """Word writes in order (`indices[i]` gets `values[i]`); every write before log position
    `barriers[j]` must be visible before the write at that position (a new ply before the
    word that links it; a retired ply's unlinking before its reuse).  A barrier at 0 orders
    the writes of earlier logs."""

    indices: np.ndarray  # uint32 word offsets in the trie memory
    values: np.ndarray  # uint32
    barriers: np.ndarray  # int64 log positions, increasing


def route_columns(routes: dict[tuple[int, int], int],
                  bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The routes as columns for the C++ loader: network (high and low 64-bit halves),
    length, next hop.  The loader checks the prefixes and next hops."""
    n = len(routes)
    try:
        lengths = np.fromiter((length for _, length in routes), dtype=np.int64, count=n)
        hops = np.fromiter(routes.values(), dtype=np.int64, count=n)
        if bits <= 64:
            hi = np.zeros(n, dtype=np.uint64)
            lo = np.fromiter((v for v, _ in routes), dtype=np.uint64, count=n)
        else:
            hi = np.fromiter((v >> 64 for v, _ in routes), dtype=np.uint64, count=n)
            lo = np.fromiter((v & LOW64 for v, _ in routes), dtype=np.uint64, count=n)
    except (OverflowError, TypeError, ValueError):
        for (value, length), next_hop in routes.items():
            if not isinstance(value, int) or not 0 <= value < 1 << bits \
                    or not isinstance(length, int) or not 0 <= length <= bits:
                raise LpmError(f"bad prefix {value!r}/{length!r} for {bits}-bit keys") from None
            if not isinstance(next_hop, int) or not 0 <= next_hop <= NEXT_HOP_MASK:
                raise LpmError(f"next hop {next_hop!r} out of range 0..{NEXT_HOP_MASK}") \
                    from None
        raise
    return hi, lo, lengths, hops
