"""Destination addresses that exercise N routes of a loaded table.

``pick_destinations`` chooses N prefixes of a route table (seeded) and, for each, the address
ranges inside it whose longest match in the table *is that prefix*: the prefix minus every
more-specific prefix of the table and minus addresses a router must not forward (RFC 1812
§5.3.7 / RFC 4291: 0/8, 127/8, 224/4 and 240/4 incl. limited broadcast; ::/128, ::1,
ff00::/8, fe80::/10) and any ``exclude`` prefixes (e.g. the router's own addresses).  Prefixes
with nothing left are skipped.  Packet *k* goes to prefix ``k mod N`` of a seeded order (so
any N consecutive packets cover every prefix) at a uniformly drawn address of its free
ranges; every drawn address is checked against a longest-prefix match over the table.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Routes = Mapping[tuple[int, int], int]  # (network, length) -> next hop
BITS = {4: 32, 6: 128}
MARTIANS: dict[int, tuple[tuple[int, int], ...]] = {
    4: ((0x00000000, 8), (0x7F000000, 8), (0xE0000000, 4), (0xF0000000, 4)),
    6: ((0, 128), (1, 128), (0xFF << 120, 8), (0xFE8 << 116, 10)),
}


@dataclass(frozen=True)
class Prefix:
    family: int
    network: int
    length: int

    @property
    def last(self) -> int:
        return self.network | ((1 << (BITS[self.family] - self.length)) - 1)

    def __str__(self) -> str:
        import ipaddress

        kind = ipaddress.IPv4Network if self.family == 4 else ipaddress.IPv6Network
        return str(kind((self.network, self.length)))


def lpm_prefix(routes: Routes, lengths: Iterable[int], address: int, bits: int
               ) -> tuple[int, int] | None:
    """The longest (network, length) of ``routes`` containing ``address`` (lengths: those
    present in the table, longest first)."""
    for length in lengths:
        network = address >> (bits - length) << (bits - length) if length else 0
        if (network, length) in routes:
            return network, length
    return None


def _span(network: int, length: int, bits: int) -> tuple[int, int]:
    return network, network | ((1 << (bits - length)) - 1)


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _free_ranges(lo: int, hi: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[lo, hi] minus the merged, sorted ``covered`` intervals."""
    free, cursor = [], lo
    for c_lo, c_hi in covered:
        if c_hi < cursor or c_lo > hi:
            continue
        if c_lo > cursor:
            free.append((cursor, c_lo - 1))
        cursor = max(cursor, c_hi + 1)
    if cursor <= hi:
        free.append((cursor, hi))
    return free


@dataclass(frozen=True)
class DestinationSet:
    """N prefixes, each with the address ranges that the table maps to it."""

    family: int
    prefixes: tuple[Prefix, ...]
    free: tuple[tuple[tuple[int, int], ...], ...]  # per prefix: inclusive ranges
    routes: Routes
    lengths: tuple[int, ...]  # prefix lengths in the table, longest first

    def __len__(self) -> int:
        return len(self.prefixes)

    def address(self, index: int, rng: random.Random) -> int:
        """A uniformly drawn address of prefix ``index`` that the table maps to it."""
        ranges = self.free[index]
        pick = rng.randrange(sum(hi - lo + 1 for lo, hi in ranges))
        for lo, hi in ranges:
            if pick <= hi - lo:
                address = lo + pick
                break
            pick -= hi - lo + 1
        prefix = self.prefixes[index]
        found = lpm_prefix(self.routes, self.lengths, address, BITS[self.family])
        if found != (prefix.network, prefix.length):  # a bug here, never the user's
            raise AssertionError(f"address {address:#x} maps to {found}, not {prefix}")
        return address

    def draw(self, k: int, rng: random.Random) -> tuple[int, int]:
        """(prefix index, address) for packet ``k``."""
        index = k % len(self.prefixes)
        return index, self.address(index, rng)


def pick_destinations(routes: Routes, family: int, count: int, seed: int = 1,
                      exclude: Iterable[tuple[int, int]] = ()) -> DestinationSet:
    """``count`` prefixes of ``routes`` (one family) with addresses that really use them."""
    if family not in BITS:
        raise ValueError(f"family must be 4 or 6, not {family}")
    bits = BITS[family]
    keys = sorted(routes)
    if count < 1:
        raise ValueError("count must be at least 1")
    blocked = _merge([_span(n, length, bits) for n, length in (*MARTIANS[family], *exclude)])
    rng = random.Random(f"npkit-destinations:{family}:{seed}")
    order = rng.sample(range(len(keys)), len(keys)) if count * 4 >= len(keys) else None
    seen: set[int] = set()
    chosen: list[Prefix] = []
    free: list[tuple[tuple[int, int], ...]] = []
    while len(chosen) < count and len(seen) < len(keys):
        i = order[len(seen)] if order is not None else rng.randrange(len(keys))
        if i in seen:
            continue
        seen.add(i)
        network, length = keys[i]
        ranges = _prefix_free(keys, i, bits, blocked)
        if ranges:
            chosen.append(Prefix(family, network, length))
            free.append(tuple(ranges))
    if len(chosen) < count:
        raise ValueError(f"the table has only {len(chosen)} IPv{family} prefixes with "
                         f"forwardable addresses of their own; asked for {count}")
    lengths = tuple(sorted({length for _, length in keys}, reverse=True))
    return DestinationSet(family, tuple(chosen), tuple(free), routes, lengths)


def _prefix_free(keys: list[tuple[int, int]], i: int, bits: int,
                 blocked: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The free ranges of prefix ``keys[i]``: the more specifics inside it are the keys
    after it in sorted order whose network is within its span."""
    network, length = keys[i]
    lo, hi = _span(network, length, bits)
    end = bisect.bisect_right(keys, (hi, bits + 1), lo=i + 1)
    inner = [_span(n, m, bits) for n, m in keys[i + 1:end] if m > length]
    return _free_ranges(lo, hi, _merge(inner + blocked))
