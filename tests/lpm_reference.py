"""The reference longest-prefix match the route-structure tests check against: every route
tried, the longest that covers the address wins (no structure, nothing shared with
runtime/lpm.py, runtime/poptrie.py or the MBL walkers)."""

from __future__ import annotations


def brute_force(routes: dict[tuple[int, int], int], bits: int, address: int) -> int | None:
    """The next hop of the longest of `routes` ((network, length) -> next hop, `bits`-bit
    addresses) covering `address`, or None."""
    best = None
    for (network, length), nh in routes.items():
        if address >> (bits - length) == network >> (bits - length) \
                and (best is None or length > best[0]):
            best = (length, nh)
    return None if best is None else best[1]
