"""An independent reference for forwarding during live route updates.

The route table goes through versions: version 0 before any update, version k after update
k.  Update k starts when the control processor issues its first write (`start`) and ends
when its last write is visible to the microengines (`end`).  While an update is in
progress either version may be seen, so version k is *possibly current* from start_k to
end_(k+1).  A packet whose lookup happened somewhere between its arrival (last bit in) and
its departure (last bit out) may legally leave by the port of any version possibly current
in that window.  The lookup itself is a brute-force longest-prefix match over a plain dict,
written separately from the trie code it checks.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


def brute_force_lpm(routes: dict[tuple[int, int], int], address: int, bits: int = 32
                    ) -> int | None:
    for length in range(bits, -1, -1):
        network = address & ~((1 << (bits - length)) - 1) & ((1 << bits) - 1)
        hop = routes.get((network, length))
        if hop is not None:
            return hop
    return None


@dataclass
class VersionHistory:
    """Route-table versions with the cycle windows in which each may be seen."""

    initial: dict[tuple[int, int], int]
    tables: list[dict[tuple[int, int], int]] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)   # start of update k (k = 1..)
    ends: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tables = [dict(self.initial)]

    def record(self, table_after: dict[tuple[int, int], int], start: int, end: int) -> None:
        if end < start or (self.starts and start < self.starts[-1]):
            raise ValueError("updates must be recorded in order, each with start <= end")
        self.tables.append(dict(table_after))
        self.starts.append(start)
        self.ends.append(end)

    def possible_versions(self, first: int, last: int) -> range:
        """Versions possibly current at some cycle in [first, last]."""
        # version k (k >= 1) may be seen from starts[k-1]; version k stops being possible
        # once update k+1 has ended (ends[k]).
        latest = bisect.bisect_right(self.starts, last)          # started by `last`
        earliest = bisect.bisect_left(self.ends, first)          # updates ended before first
        return range(earliest, latest + 1)

    def allowed_next_hops(self, address: int, first: int, last: int) -> set[int | None]:
        return {brute_force_lpm(self.tables[v], address)
                for v in self.possible_versions(first, last)}
