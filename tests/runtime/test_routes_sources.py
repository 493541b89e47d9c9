"""Route sources (npkit.runtime.routes): text and pyasn files, the real table, the seeded
generator.  Checked against ipaddress, brute-force counting and the figures of
../shared/data/routes/README.md."""

from __future__ import annotations

import gzip
import ipaddress
import math
import os
import random
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path

import pytest

from npkit.runtime.routes import (
    Histogram,
    RouteFileError,
    apportion,
    build_trie,
    committed_histogram,
    generate_routes,
    load_routes,
    pyasn_tables,
    read_routes,
    real_table_path,
    reference_histogram,
    sniff_format,
    write_routes,
)

PYASN_SAMPLE = """\
; IP-ASN32-DAT file
; Original source: rib.20151101.0600.bz2
; Converted on  : Sun Nov  1 10:00:00 2015
; Prefixes-v4   : 4
; Prefixes-v6   : 2

1.0.0.0/24\t15169
1.0.4.0/22\t56203
12.0.0.0/8\t7018
203.0.113.128/25\t4200000001
2001:db8::/32\t64496
2a00:1450::/29\t15169
"""


def _rule(text: str, seed: int = 2024, count: int = 16) -> int:
    """The documented next-hop rule, written again here."""
    return zlib.crc32(text.encode(), seed) % count


def _key(text: str) -> tuple[int, tuple[int, int]]:
    net = ipaddress.ip_network(text, strict=True)
    return net.version, (int(net.network_address), net.prefixlen)


def _families(texts_and_hops: list[tuple[str, int]]) -> dict[int, dict[tuple[int, int], int]]:
    expected: dict[int, dict[tuple[int, int], int]] = {4: {}, 6: {}}
    for text, nh in texts_and_hops:
        version, key = _key(text)
        expected[version][key] = nh
    return expected


# ---- files ----
@pytest.mark.parametrize("name", ["routes.txt", "routes.txt.gz"])
def test_text_files_with_and_without_next_hops(tmp_path: Path, name: str) -> None:
    body = ("# a comment\n10.0.0.0/8 3\n\n192.0.2.0/24   # prefix only\n"
            "2001:db8::/32 0x10\n10.0.0.0/8 5\n")
    path = tmp_path / name
    (gzip.open if name.endswith(".gz") else open)(path, "wt").write(body)
    routes = load_routes(path)
    expected = _families([("10.0.0.0/8", 5), ("192.0.2.0/24", _rule("192.0.2.0/24")),
                          ("2001:db8::/32", 16)])
    assert sniff_format(path) == "text"
    assert routes.v4 == expected[4] and routes.v6 == expected[6]


@pytest.mark.parametrize("name", ["ipasn_test.dat.gz", "table.txt.gz", "ipasn.dat"])
def test_pyasn_tables(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    (gzip.open if name.endswith(".gz") else open)(path, "wt").write(PYASN_SAMPLE)
    assert sniff_format(path) == "pyasn"
    routes = load_routes(path, seed=7, next_hops=5)
    lines = [line.split("\t")[0] for line in PYASN_SAMPLE.splitlines()
             if line and not line.startswith(";")]
    expected = _families([(text, _rule(text, 7, 5)) for text in lines])
    assert routes.v4 == expected[4] and routes.v6 == expected[6]
    assert len(routes.v4) == 4 and len(routes.v6) == 2


@pytest.mark.parametrize("bad_line, fmt", [
    ("10.0.0.1/8\t1", "pyasn"),       # host bits set
    ("10.0.0.0/8\tAS1", "pyasn"),     # not an AS number
    ("10.0.0.0/33\t1", "pyasn"),      # length out of range
    ("10.0.0.0/8 1 2", "text"),       # too many words
    ("10.0.0.256/24 1", "text"),      # not an address
])
def test_bad_lines_name_file_and_line(tmp_path: Path, bad_line: str, fmt: str) -> None:
    path = tmp_path / "bad.dat"
    comment = ";" if fmt == "pyasn" else "#"
    good = "1.0.0.0/24\t1" if fmt == "pyasn" else "1.0.0.0/24 1"
    path.write_text(f"{comment} header\n{good}\n{bad_line}\n")
    with pytest.raises(RouteFileError, match=rf"{path}:3: "):
        load_routes(path, fmt)  # type: ignore[arg-type]


def test_unreadable_file_is_a_route_file_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.txt.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(RouteFileError, match="cannot read route file"):
        load_routes(path)


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    routes = generate_routes(6, 400, seed=3, histogram=committed_histogram(6))
    path = tmp_path / "six.txt.gz"
    write_routes(path, routes, 6, header="two\nlines")
    assert read_routes(path).v6 == routes
    assert gzip.open(path, "rt").read().startswith("# two\n# lines\n")


# ---- where tables are ----
def test_locations(tmp_path: Path) -> None:
    assert real_table_path(tmp_path / "absent.txt.gz") is None
    assert pyasn_tables(tmp_path / "absent") == []
    for name in ("ipasn_1.dat.gz", "ipasn6_2.dat.gz", "rib.x_firstMB.bz2"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in pyasn_tables(tmp_path)] == ["ipasn6_2.dat.gz", "ipasn_1.dat.gz"]


def test_the_routes_folder_variable_finds_a_table_anywhere(tmp_path: Path) -> None:
    """A checkout without ../shared (a copy under /tmp) finds the table through
    $NPKIT_ROUTES_DIR; without it, the lab says its tables are generated, not sampled."""
    write_routes(tmp_path / "full-table-2024.txt.gz", {(0x0A000000, 8): 1}, 4)
    probe = ("from npkit.runtime.routes import REAL_TABLE, real_table_path\n"
             "from npkit.bench.lab.npf import SampledRoutes\n"
             "print(REAL_TABLE); print(real_table_path()); print(SampledRoutes().origin())")

    def run(folder: Path) -> list[str]:
        env = {**os.environ, "NPKIT_ROUTES_DIR": str(folder)}
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              text=True, check=True)
        return done.stdout.splitlines()

    table = str(tmp_path / "full-table-2024.txt.gz")
    assert run(tmp_path) == [table, table, "sampled from full-table-2024.txt.gz"]
    absent = str(tmp_path / "absent" / "full-table-2024.txt.gz")
    assert run(tmp_path / "absent") == [absent, "None",
                                        "generated (full-table-2024.txt.gz not found)"]


def test_installed_pyasn_tables_load() -> None:
    tables = pyasn_tables()
    if not tables:
        pytest.skip("python3-pyasn is not installed")
    # route counts from ../shared/data/routes/README.md
    expected = {"ipasn_20080501_v12.dat.gz": (270_849, 0),
                "ipasn_20140513.dat.gz": (512_621, 0),
                "ipasn6_20151101.dat.gz": (606_138, 27_693)}
    checked = 0
    for table in tables:
        if table.name in expected:
            routes = load_routes(table)
            assert (len(routes.v4), len(routes.v6)) == expected[table.name], table.name
            checked += 1
    assert checked, f"none of {sorted(expected)} among {[t.name for t in tables]}"


# ---- distributions ----
README_TOTALS = {4: 901_899, 6: 160_147}
README_SHARES_V4 = {16: 1.50, 19: 2.76, 20: 4.72, 21: 5.63, 22: 12.04, 23: 10.70, 24: 59.62}


@pytest.mark.parametrize("family", [4, 6])
def test_committed_histogram_matches_the_readme(family: int) -> None:
    histogram = committed_histogram(family)  # type: ignore[arg-type]
    assert histogram.total == README_TOTALS[family]
    assert "full-table-2024" in histogram.source
    if family == 4:
        for length, share in README_SHARES_V4.items():
            assert round(100 * histogram.counts[length] / histogram.total, 2) == share
    else:
        assert round(100 * histogram.counts[48] / histogram.total) == 47


def test_real_table_histogram_is_the_committed_one() -> None:
    table = real_table_path()
    if table is None:
        pytest.skip("the real table is not in ../shared/data/routes/")
    for family in (4, 6):
        assert reference_histogram(family, table).counts == committed_histogram(family).counts


def test_apportion_moves_what_a_length_cannot_hold() -> None:
    # 224 IPv4 /8s lie below 224.0.0.0; the rest of the 500 must go to /24.
    assert apportion({8: 0.999, 24: 0.001}, 500, 4) == {8: 224, 24: 276}
    assert apportion({16: 0.5, 24: 0.5}, 7, 4) == {16: 4, 24: 3}  # ties: shorter first
    with pytest.raises(ValueError, match="cannot make 300 distinct"):
        apportion({8: 1.0}, 300, 4)


def _chi_square_limit(dof: int, z: float = 3.09) -> float:
    """The chi-square quantile at p = 0.001 (Wilson-Hilferty)."""
    k = 2 / (9 * dof)
    return dof * (1 - k + z * math.sqrt(k)) ** 3


def _chi_square(observed: Counter[int], histogram: Histogram, count: int) -> tuple[float, int]:
    """Pearson's statistic, lengths expecting fewer than 5 routes pooled into one bin."""
    bins: dict[int | str, list[float]] = {}
    for length, share in histogram.shares().items():
        key: int | str = length if count * share >= 5 else "rare"
        cell = bins.setdefault(key, [0.0, 0.0])
        cell[0] += observed.pop(length, 0)
        cell[1] += count * share
    assert not observed, f"lengths outside the distribution: {observed}"
    stat = sum((o - e) ** 2 / e for o, e in bins.values() if e > 0)
    return stat, len(bins) - 1


@pytest.mark.parametrize("family, count, seed", [
    (4, 1_000, 1), (4, 100_000, 2), (6, 400, 3), (6, 1_200, 4)])
def test_generated_tables_are_valid_unique_and_follow_the_distribution(
        family: int, count: int, seed: int) -> None:
    histogram = committed_histogram(family)  # type: ignore[arg-type]
    routes = generate_routes(family, count, seed, histogram)  # type: ignore[arg-type]
    networks = [ipaddress.ip_network(key, strict=True) for key in routes]  # host bits zero
    assert len(routes) == count and len(set(networks)) == count
    assert all(n.version == family for n in networks)
    space = (ipaddress.ip_network("0.0.0.0/1"), ipaddress.ip_network("128.0.0.0/2"),
             ipaddress.ip_network("192.0.0.0/3")) if family == 4 else \
        (ipaddress.ip_network("2000::/3"),)
    assert all(any(n.subnet_of(s) for s in space) for n in networks)  # type: ignore[arg-type]
    stat, dof = _chi_square(Counter(n.prefixlen for n in networks), histogram, count)
    assert stat < _chi_square_limit(dof), (stat, dof)
    for network in random.Random(seed).sample(networks, 200):
        key = (int(network.network_address), network.prefixlen)
        assert routes[key] == _rule(str(network), seed)


def test_generator_is_seeded() -> None:
    histogram = committed_histogram(4)
    first = generate_routes(4, 2_000, 11, histogram)
    assert generate_routes(4, 2_000, 11, histogram) == first
    assert list(generate_routes(4, 2_000, 11, histogram)) == list(first)
    assert set(generate_routes(4, 2_000, 12, histogram)) != set(first)


@pytest.mark.parametrize("family, count", [(4, 0), (5, 10), (4, 10**9)])
def test_generator_rejects_impossible_requests(family: int, count: int) -> None:
    with pytest.raises(ValueError):
        generate_routes(family, count, histogram=committed_histogram(4))  # type: ignore


def _brute_force_lookup(routes: dict[tuple[int, int], int], bits: int, address: int) -> int | None:
    best = None
    for (value, length), nh in routes.items():
        if address >> (bits - length) == value >> (bits - length) and \
                (best is None or length > best[0]):
            best = (length, nh)
    return None if best is None else best[1]


@pytest.mark.parametrize("family, count", [(4, 1_000), (6, 400)])
def test_generated_table_builds_into_a_trie_that_grows(family: int, count: int) -> None:
    routes = generate_routes(family, count, 9, committed_histogram(family))  # type: ignore
    bits = 32 if family == 4 else 128
    trie = build_trie(routes, family, words=65_536 + 256)  # type: ignore[arg-type]
    assert len(trie.words) > 65_536 + 256  # it had to grow
    rng = random.Random(5)
    keys = list(routes)
    for _ in range(500):
        value, length = rng.choice(keys)
        address = value | rng.getrandbits(bits - length)
        assert trie.lookup(address) == _brute_force_lookup(routes, bits, address)
    for _ in range(100):
        address = rng.getrandbits(bits)
        assert trie.lookup(address) == _brute_force_lookup(routes, bits, address)
