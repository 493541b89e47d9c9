"""Route files: `prefix [next-hop]` text, optionally gzip-compressed.

Each non-empty line holds a prefix (`10.0.0.0/8`, `2001:db8::/32`) and, optionally, a next-hop
index; `#` starts a comment.  Files that carry prefixes only (such as the real table
`full-table-2024.txt.gz`) get next hops by the seeded rule of `assign_next_hop`, so a table
is reproducible from (file, seed, next-hop count) alone.
"""

from __future__ import annotations

import gzip
import socket
import zlib
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SEED = 2024
DEFAULT_NEXT_HOPS = 16


class RouteFileError(ValueError):
    """A route file that cannot be read; the message names file:line."""


def assign_next_hop(prefix_text: str, seed: int = DEFAULT_SEED,
                    count: int = DEFAULT_NEXT_HOPS) -> int:
    """The documented rule for prefix-only tables: CRC-32 (zlib) of the prefix text as
    written in the file, started from `seed`, modulo the number of next hops."""
    return zlib.crc32(prefix_text.encode("ascii"), seed & 0xFFFFFFFF) % count


@dataclass
class RouteSet:
    """Routes of one file, split by family: (network address as int, length) -> next hop.
    A prefix listed twice keeps its last next hop."""

    v4: dict[tuple[int, int], int] = field(default_factory=dict)
    v6: dict[tuple[int, int], int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.v4) + len(self.v6)


def _parse_prefix(text: str) -> tuple[int, int, int]:
    """(family bits, network as int, length); host bits must be zero."""
    addr, slash, length_text = text.partition("/")
    bits = 128 if ":" in addr else 32
    packed = socket.inet_pton(socket.AF_INET6 if bits == 128 else socket.AF_INET, addr)
    value = int.from_bytes(packed, "big")
    length = int(length_text) if slash else bits
    if not 0 <= length <= bits:
        raise ValueError(f"prefix length {length} out of range 0..{bits}")
    if value & ((1 << (bits - length)) - 1):
        raise ValueError(f"{text} has host bits set (did you mean the network address?)")
    return bits, value, length


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="ascii")
    return open(path, encoding="ascii")


def read_routes(path: str | Path, seed: int = DEFAULT_SEED,
                next_hops: int = DEFAULT_NEXT_HOPS) -> RouteSet:
    """Read a route file; lines without a next hop get `assign_next_hop(prefix, seed, n)`."""
    path = Path(path)
    routes = RouteSet()
    try:
        with _open_text(path) as fh:
            for number, line in enumerate(fh, 1):
                words = line.split("#", 1)[0].split()
                if not words:
                    continue
                try:
                    if len(words) > 2:
                        raise ValueError("expected `prefix [next-hop]`")
                    bits, value, length = _parse_prefix(words[0])
                    nh = (int(words[1], 0) if len(words) == 2
                          else assign_next_hop(words[0], seed, next_hops))
                    if nh < 0:
                        raise ValueError("negative next hop")
                except (ValueError, OSError) as exc:
                    raise RouteFileError(f"{path}:{number}: {line.strip()!r}: {exc}") from None
                (routes.v6 if bits == 128 else routes.v4)[(value, length)] = nh
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RouteFileError(f"cannot read route file {path}: {exc}") from None
    return routes


def default_next_hop(index: int, ports: int) -> dict[str, int]:
    """The next-hop record `npkit run --routes` gives next hop `index` (fields of
    microblocks/router_common.mbl's nexthop_t): output port index mod ports, destination MAC
    02:00:00:01:hh:ll (hh ll = the index), source MAC 02:00:00:00:00:<port>, MTU 1500."""
    port = index % ports
    return {"dmac": 0x0200_0001_0000 | (index & 0xFFFF), "smac": 0x0200_0000_0000 | port,
            "port": port, "mtu": 1500}
