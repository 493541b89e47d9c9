"""Route files: `prefix [next-hop]` text, optionally gzip-compressed.

Each non-empty line holds a prefix (`10.0.0.0/8`, `2001:db8::/32`) and, optionally, a next-hop
index; `#` starts a comment.  Files that carry prefixes only (such as the real table
`full-table-2024.txt.gz`) get next hops by the seeded rule of `assign_next_hop`, so a table
is reproducible from (file, seed, next-hop count) alone.

Route sources (issue 5, item 3): `load_routes` reads text files and Debian python3-pyasn's
RouteViews tables (`;` comment lines, then `prefix<TAB>asn`, usually gzip); `real_table_path`
finds the real table in $NPKIT_ROUTES_DIR or ../shared/data/routes/; `generate_routes` makes a
seeded table whose prefix-length distribution follows the real table's (`reference_histogram`:
computed from the real table when present, else the committed runtime/data/prefix_lengths.json).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import socket
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np

from npkit.base.errors import NpkitError
from npkit.runtime.lpm import IPV4, IPV6, LpmError, MultibitTrie

DEFAULT_SEED = 2024
DEFAULT_NEXT_HOPS = 16


class RouteFileError(NpkitError, ValueError):
    """A route file that cannot be read; the message names file:line."""


class RouteGenerationError(NpkitError, ValueError):
    """A table ``generate_routes`` cannot make (count out of range, lengths too few)."""


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


# A line parser: the words of one line -> (prefix text, next hop or None for the seeded rule).
LineParser = Callable[[list[str]], tuple[str, int | None]]


def _text_line(words: list[str]) -> tuple[str, int | None]:
    if len(words) > 2:
        raise ValueError("expected `prefix [next-hop]`")
    return words[0], int(words[1], 0) if len(words) == 2 else None


def _pyasn_line(words: list[str]) -> tuple[str, int | None]:
    if len(words) != 2 or not words[1].isdigit():
        raise ValueError("expected `prefix<TAB>asn` (a python3-pyasn RouteViews table)")
    return words[0], None  # the AS number is not a next hop: next hops follow the rule


def _read_lines(path: Path, comment: str, parse: LineParser, seed: int,
                next_hops: int) -> RouteSet:
    routes = RouteSet()
    try:
        with _open_text(path) as fh:
            for number, line in enumerate(fh, 1):
                words = line.split(comment, 1)[0].split()
                if not words:
                    continue
                try:
                    prefix, nh = parse(words)
                    bits, value, length = _parse_prefix(prefix)
                    if nh is None:
                        nh = assign_next_hop(prefix, seed, next_hops)
                    if nh < 0:
                        raise ValueError("negative next hop")
                except (ValueError, OSError) as exc:
                    raise RouteFileError(f"{path}:{number}: {line.strip()!r}: {exc}") from None
                (routes.v6 if bits == 128 else routes.v4)[(value, length)] = nh
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RouteFileError(f"cannot read route file {path}: {exc}") from None
    return routes


def read_routes(path: str | Path, seed: int = DEFAULT_SEED,
                next_hops: int = DEFAULT_NEXT_HOPS) -> RouteSet:
    """Read a route file; lines without a next hop get `assign_next_hop(prefix, seed, n)`."""
    return _read_lines(Path(path), "#", _text_line, seed, next_hops)


def read_pyasn(path: str | Path, seed: int = DEFAULT_SEED,
               next_hops: int = DEFAULT_NEXT_HOPS) -> RouteSet:
    """Read a python3-pyasn table (`;` comments, `prefix<TAB>asn`, plain or gzip); the AS
    numbers are dropped and next hops come from `assign_next_hop`, as for prefix-only text."""
    return _read_lines(Path(path), ";", _pyasn_line, seed, next_hops)


RouteFormat = Literal["text", "pyasn"]
ROUTE_FORMATS: tuple[RouteFormat, ...] = ("text", "pyasn")


def sniff_format(path: str | Path) -> RouteFormat:
    """`pyasn` for `*.dat[.gz]` files or files whose first non-blank line is a `;` comment."""
    path = Path(path)
    if path.name.endswith((".dat", ".dat.gz")):
        return "pyasn"
    try:
        with _open_text(path) as fh:
            for line in fh:
                if line.strip():
                    return "pyasn" if line.lstrip().startswith(";") else "text"
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RouteFileError(f"cannot read route file {path}: {exc}") from None
    return "text"


def load_routes(path: str | Path, fmt: RouteFormat | None = None, seed: int = DEFAULT_SEED,
                next_hops: int = DEFAULT_NEXT_HOPS) -> RouteSet:
    """Read any supported route file; `fmt` None picks the format with `sniff_format`."""
    fmt = fmt or sniff_format(path)
    reader = read_pyasn if fmt == "pyasn" else read_routes
    return reader(path, seed, next_hops)


# ---- where the real tables are ----
REPO = Path(__file__).resolve().parents[1]
ROUTES_DIR_ENV = "NPKIT_ROUTES_DIR"
REAL_TABLE_NAME = "full-table-2024.txt.gz"


def real_table_folder() -> Path:
    """Where the real table is looked for: $NPKIT_ROUTES_DIR, else ../shared/data/routes/
    next to the checkout (a copy of the tree elsewhere has no ../shared: set the variable)."""
    configured = os.environ.get(ROUTES_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return REPO.parent / "shared" / "data" / "routes"


REAL_TABLE = real_table_folder() / REAL_TABLE_NAME
PYASN_DATA = Path("/usr/lib/python3/dist-packages/data")
HISTOGRAM_FILE = Path(__file__).resolve().parent / "data" / "prefix_lengths.json"


def real_table_path(table: Path = REAL_TABLE) -> Path | None:
    """The real Internet table next to the repository, or None when it is absent."""
    return table if table.is_file() else None


def pyasn_tables(folder: Path = PYASN_DATA) -> list[Path]:
    """The RouteViews tables that Debian's python3-pyasn installs (empty when it is not)."""
    return sorted(folder.glob("*.dat.gz")) if folder.is_dir() else []


# ---- prefix-length distributions ----
Family = Literal[4, 6]
FAMILY_BITS: dict[int, int] = {4: 32, 6: 128}
NPF_COUNTS: dict[int, tuple[int, int]] = {4: (1_000, 1_000_000), 6: (400, 1_200)}
MAX_GENERATED = 4_000_000  # a host-memory bound well above any real table


@dataclass(frozen=True)
class Histogram:
    """Routes per prefix length of one family, and where the counts come from."""

    counts: dict[int, int]
    source: str

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def shares(self) -> dict[int, float]:
        total = self.total
        return {length: n / total for length, n in sorted(self.counts.items()) if n}


def prefix_length_histogram(routes: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Routes per prefix length of (network, length) keys, sorted by length."""
    return dict(sorted(Counter(length for _, length in routes).items()))


def file_histograms(path: Path) -> dict[int, dict[int, int]]:
    """Prefix-length counts per family ({4: ..., 6: ...}) of a text route file, counted from
    the text alone (fast: no address parsing, so use it on trusted files only)."""
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise RouteFileError(f"cannot read route file {path}: {exc}") from None
    counted = _file_histograms(str(path), stat.st_mtime_ns, stat.st_size)
    return {family: dict(c) for family, c in counted.items()}  # the caller's own copy


@lru_cache(maxsize=8)
def _file_histograms(name: str, mtime_ns: int, size: int) -> dict[int, dict[int, int]]:
    """file_histograms of one version of a file (the key holds its time and size): the real
    table is a million lines and every generated table without a histogram counts it."""
    del mtime_ns, size  # the cache key only
    counts: dict[int, Counter[int]] = {4: Counter(), 6: Counter()}
    path = Path(name)
    try:
        with _open_text(path) as fh:
            for number, line in enumerate(fh, 1):
                words = line.split("#", 1)[0].split()
                if not words:
                    continue
                addr, _, length = words[0].partition("/")
                if not length.isdigit():
                    raise RouteFileError(f"{path}:{number}: {line.strip()!r}: no /length")
                counts[6 if ":" in addr else 4][int(length)] += 1
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RouteFileError(f"cannot read route file {path}: {exc}") from None
    return {family: dict(sorted(c.items())) for family, c in counts.items()}


def committed_histogram(family: Family, path: Path = HISTOGRAM_FILE) -> Histogram:
    """The histogram shipped with npkit (measured once from the real table)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    counts = {int(length): int(n) for length, n in data[f"ipv{family}"].items()}
    return Histogram(counts, f"{path.name}: {data['source']}")


def reference_histogram(family: Family, table: Path | None = None) -> Histogram:
    """The real table's prefix-length histogram: computed from `table` (default: the real
    table next to the repository) when present, else the committed one."""
    path = table or real_table_path()
    if path is None:
        return committed_histogram(family)
    counts = file_histograms(path)[family]
    if not counts:
        raise RouteFileError(f"{path} has no IPv{family} routes to take a distribution from")
    return Histogram(counts, str(path))


# ---- the seeded generator ----
def _unicast_space(family: int, length: int) -> tuple[int, int]:
    """(first-bits value count, fixed top bits) of the space generated prefixes come from:
    IPv4 below 224.0.0.0 (no multicast or class E), IPv6 in 2000::/3 (global unicast).
    Prefixes shorter than /3 would cover other space, so none are generated."""
    if length < 3:
        return 0, 0
    return (7, 3) if family == 4 else (1, 3)


def prefix_capacity(family: int, length: int) -> int:
    """How many distinct /length prefixes the generator can make."""
    choices, fixed = _unicast_space(family, length)
    return choices << (length - fixed) if choices else 0


def apportion(shares: dict[int, float], count: int, family: int) -> dict[int, int]:
    """Split `count` over prefix lengths in proportion to `shares` (largest remainder), moving
    whatever a length cannot hold to the others; equal remainders favour the shorter length."""
    room = {length: prefix_capacity(family, length) for length in shares}
    if count > sum(room.values()):
        raise RouteGenerationError(f"cannot make {count} distinct IPv{family} prefixes with "
                                   "these lengths")
    result = {length: 0 for length in shares}
    open_lengths = {length for length in shares if room[length] > 0}
    left = count
    while left:
        total = sum(shares[length] for length in open_lengths)
        exact = {length: left * shares[length] / total for length in open_lengths}
        grant = {length: min(int(exact[length]), room[length] - result[length])
                 for length in open_lengths}
        spare = left - sum(grant.values())
        by_remainder = sorted(open_lengths, key=lambda n: (grant[n] - exact[n], n))
        for length in by_remainder:
            if spare and result[length] + grant[length] < room[length]:
                grant[length] += 1
                spare -= 1
        for length, n in grant.items():
            result[length] += n
            left -= n
        open_lengths = {n for n in open_lengths if result[n] < room[n]}
    return {length: n for length, n in sorted(result.items()) if n}


def _random_prefix(rng: random.Random, family: int, length: int) -> int:
    bits = FAMILY_BITS[family]
    choices, fixed = _unicast_space(family, length)
    top = rng.randrange(choices) if family == 4 else 0b001
    network = (top << (length - fixed)) | rng.getrandbits(length - fixed)
    return network << (bits - length)


def format_prefix(value: int, length: int, family: int) -> str:
    """`a.b.c.d/n` or the compressed IPv6 form, as inet_ntop writes it."""
    af = socket.AF_INET if family == 4 else socket.AF_INET6
    return f"{socket.inet_ntop(af, value.to_bytes(FAMILY_BITS[family] // 8, 'big'))}/{length}"


def generate_routes(family: Family, count: int, seed: int = DEFAULT_SEED,
                    histogram: Histogram | None = None,
                    next_hops: int = DEFAULT_NEXT_HOPS) -> dict[tuple[int, int], int]:
    """`count` distinct, valid (host bits zero) unicast prefixes whose lengths follow
    `histogram` (default: `reference_histogram(family)`), reproducible from `seed`; next hops
    by `assign_next_hop` on the prefix text, as if the table were a prefix-only file.
    NPF-style tables have 1k-1M IPv4 or 400-1,200 IPv6 routes (NPF_COUNTS)."""
    if family not in FAMILY_BITS:
        raise ValueError(f"family must be 4 or 6, not {family}")
    if not 1 <= count <= MAX_GENERATED:
        raise RouteGenerationError(f"count must be 1..{MAX_GENERATED:,}, not {count:,}")
    histogram = histogram or reference_histogram(family)
    rng = random.Random(f"npkit-routes:{family}:{seed}")  # str seeds are stable (SHA-512)
    routes: dict[tuple[int, int], int] = {}
    for length, n in apportion(histogram.shares(), count, family).items():
        chosen: set[int] = set()
        while len(chosen) < n:
            chosen.add(_random_prefix(rng, family, length))
        for value in sorted(chosen):
            text = format_prefix(value, length, family)
            routes[(value, length)] = assign_next_hop(text, seed, next_hops)
    return routes


def write_routes(path: str | Path, routes: dict[tuple[int, int], int], family: Family,
                 header: str = "") -> None:
    """Write `prefix next-hop` lines (gzip when the name ends in .gz); `header` becomes
    `#` comment lines."""
    path = Path(path)
    lines = [f"# {line}\n" for line in header.splitlines()]
    lines += [f"{format_prefix(value, length, family)} {nh}\n"
              for (value, length), nh in routes.items()]
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="ascii") as fh:
        fh.writelines(lines)


def default_next_hop(index: int, ports: int) -> dict[str, int]:
    """The next-hop record `npkit run --routes` gives next hop `index` (fields of
    microblocks/router_common.mbl's nexthop_t): output port index mod ports, destination MAC
    02:00:00:01:hh:ll (hh ll = the index), source MAC 02:00:00:00:00:<port>, MTU 1500."""
    port = index % ports
    return {"dmac": 0x0200_0001_0000 | (index & 0xFFFF), "smac": 0x0200_0000_0000 | port,
            "port": port, "mtu": 1500}


def build_trie(routes: dict[tuple[int, int], int], family: Family,
               words: int | None = None) -> MultibitTrie:
    """A host trie (runtime/lpm.py) holding `routes`, in a memory that grows until they fit;
    the default size is lpm.mbl's fib4_trie / fib6_trie (numpy zero-fills it lazily)."""
    shape = IPV4 if family == 4 else IPV6
    size = words or (1 << 23 if family == 4 else 1 << 24)
    while True:
        trie = MultibitTrie(shape, np.zeros(size, dtype=np.uint32))
        try:
            trie.build(routes)
            return trie
        except LpmError as exc:
            if "memory is full" not in str(exc):
                raise
            size *= 2
