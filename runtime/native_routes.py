"""Route files into a program on the native target: ``npkit run X.mbl --routes FILE``.

Builds the program's IPv4/IPv6 tries (``fib4_trie``/``fib6_trie``, npkit.runtime.lpm) from
route files and, when the program has a ``nexthops`` array, gives every next hop the routes
use the default record of :func:`npkit.runtime.routes.default_next_hop`.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npkit.base.errors import NpkitError
from npkit.runtime.lpm import LpmError, RouteTables
from npkit.runtime.routes import RouteSet, default_next_hop, read_routes


class RouteLoadError(NpkitError):
    """Routes that do not fit the program's tables, or a next-hop record it cannot hold."""


@dataclass(frozen=True)
class LoadedRoutes:
    v4: int
    v6: int
    seconds: float
    sizes: str  # "IPv4 1.2 MB, IPv6 0.3 MB"

    def summary(self) -> str:
        return (f"routes: {self.v4} IPv4 + {self.v6} IPv6 built in {self.seconds:.2f} s "
                f"({self.sizes})")


def _show(network: int, length: int, v6: bool) -> str:
    address = ipaddress.IPv6Address(network) if v6 else ipaddress.IPv4Address(network)
    return f"{address}/{length}"


def load_route_files(native: Any, paths: Iterable[str | Path], seed: int, next_hops: int,
                     ports: int) -> LoadedRoutes:
    """Merge the route files (read_routes: ``prefix [next-hop]`` lines, optionally gzip;
    a RouteFileError names a bad file and line), load them into the native program's tries
    and fill ``nexthops`` for every next hop used."""
    merged = RouteSet()
    memory = native.program.memories.get("nexthops")
    for path in paths:
        routes = read_routes(path, seed, next_hops)
        if memory is not None:  # a next hop past the array is an error, never masked
            for table in (routes.v4, routes.v6):
                for (network, length), nh in table.items():
                    if not 0 <= nh < memory.size:
                        raise RouteLoadError(
                            f"{path}: the route to {_show(network, length, table is routes.v6)}"
                            f" has next hop {nh}, outside the program's nexthops array "
                            f"(0..{memory.size - 1}; next hops without one in the file are "
                            f"0..{next_hops - 1})")
        merged.v4.update(routes.v4)
        merged.v6.update(routes.v6)
    start = time.perf_counter()
    try:
        tables = RouteTables.of(native)
        tables.load(merged.v4, merged.v6)
    except LpmError as exc:
        raise RouteLoadError(f"cannot load the routes: {exc}") from None
    seconds = time.perf_counter() - start
    if "nexthops" in native.program.memories:
        used = {nh for routes in (merged.v4, merged.v6) for nh in routes.values()}
        for nh in sorted(used):
            try:
                native.write("nexthops", nh, default_next_hop(nh, ports))
            except (ValueError, IndexError) as exc:  # the program's next-hop struct differs
                raise RouteLoadError(f"cannot fill nexthops[{nh}]: {exc}") from None
    sizes = ", ".join(f"{name} {t.bytes_used / 2**20:.1f} MB"
                      for name, t in (("IPv4", tables.v4), ("IPv6", tables.v6)) if t)
    return LoadedRoutes(len(merged.v4), len(merged.v6), seconds, sizes)
