"""`npkit routes gen` and `npkit routes stats`, checked with ipaddress and brute-force counts."""

from __future__ import annotations

import gzip
import ipaddress
from collections import Counter
from pathlib import Path

import pytest
from cli_invoke import invoke


def _route_lines(path: Path) -> list[tuple[str, int]]:
    text = (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)).read()
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    return [(prefix, int(nh)) for prefix, nh in rows]


@pytest.mark.parametrize("family, count, name", [
    ("4", 2_000, "v4.txt"), ("6", 400, "v6.txt.gz")])
def test_gen_writes_valid_unique_prefixes(tmp_path: Path, family: str, count: int,
                                          name: str) -> None:
    out = tmp_path / name
    code, output = invoke("routes", "gen", "--family", family, "--count", str(count),
                           "--seed", "5", "--next-hops", "4", "-o", str(out))
    assert code == 0, output
    assert f"wrote {count:,} IPv{family} routes" in output
    rows = _route_lines(out)
    networks = [ipaddress.ip_network(prefix, strict=True) for prefix, _ in rows]
    assert len(networks) == count == len(set(networks))
    assert {n.version for n in networks} == {int(family)}
    assert {nh for _, nh in rows} <= set(range(4))
    again = tmp_path / ("again" + name)
    invoke("routes", "gen", "--family", family, "--count", str(count), "--seed", "5",
            "--next-hops", "4", "-o", str(again))
    assert _route_lines(again) == rows


def test_gen_outside_the_npf_range_says_so(tmp_path: Path) -> None:
    code, output = invoke("routes", "gen", "--family", "6", "--count", "50",
                           "-o", str(tmp_path / "x.txt"))
    assert code == 0 and "outside the NPF range 400-1,200" in output


def test_stats_counts_lengths_and_sizes_the_trie(tmp_path: Path) -> None:
    prefixes = ["10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.128/25",
                "192.0.2.0/24", "2001:db8::/32", "2001:db8:1::/48"]
    path = tmp_path / "t.txt"
    path.write_text("".join(f"{p} {i}\n" for i, p in enumerate(prefixes)))
    code, output = invoke("routes", "stats", str(path))
    assert code == 0, output
    assert "5 IPv4 + 2 IPv6 routes" in output
    lengths = Counter(ipaddress.ip_network(p).prefixlen for p in prefixes if ":" not in p)
    for length, n in lengths.items():
        assert f"/{length:<5} {n:>11,} {100 * n / 5:>8.2f}" in output
    # IPv4: 10.1.2.0/24 needs a ply under 10.1, 10.1.2.128/25 one under 10.1.2;
    # 192.0.2.0/24 one under 192.0: 3 plies, and a /25 takes 3 reads.
    assert "65,536-word root + 3 plies of 256 words), worst case 3 dependent reads" in output
    # IPv6: /32 -> 2 plies below the root, /48 -> 2 more: reads 1 + 4 = 5.
    assert "65,536-word root + 4 plies of 256 words), worst case 5 dependent reads" in output


def test_stats_reads_pyasn_tables(tmp_path: Path) -> None:
    path = tmp_path / "ipasn_x.dat.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("; IP-ASN32-DAT file\n; Prefixes-v4: 2\n1.0.0.0/24\t15169\n"
                 "12.0.0.0/8\t7018\n")
    code, output = invoke("routes", "stats", "--no-trie", str(path))
    assert code == 0, output
    assert "2 IPv4 + 0 IPv6 routes" in output and "trie" not in output


@pytest.mark.parametrize("body, fragment", [
    ("10.0.0.0/8 1\n10.0.0.1/8 2\n", "t.txt:2: "),
    ("# c\n\n300.0.0.0/8\n", "t.txt:3: "),
])
def test_stats_bad_line_names_file_and_line(tmp_path: Path, body: str, fragment: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text(body)
    code, output = invoke("routes", "stats", str(path))
    assert code == 1 and fragment in output and output.startswith("Error: ")


@pytest.mark.parametrize("args, fragment", [
    (["routes", "stats", "/nonexistent/routes.txt"], "does not exist"),
    (["routes", "gen", "--family", "5", "--count", "10", "-o", "x"], "'5' is not one of"),
    (["routes", "gen", "--family", "4", "--count", "0", "-o", "x"], "--count"),
    (["routes", "gen", "--family", "4", "--count", "99999999", "-o", "x"], "count must be"),
])
def test_bad_arguments_are_clear_errors(args: list[str], fragment: str) -> None:
    code, output = invoke(*args)
    assert code != 0 and fragment in output


def test_gen_with_a_table_that_cannot_hold_the_count(tmp_path: Path) -> None:
    table = tmp_path / "eights.txt"
    table.write_text("10.0.0.0/8\n11.0.0.0/8\n")
    code, output = invoke("routes", "gen", "--family", "4", "--count", "300", "--table",
                           str(table), "-o", str(tmp_path / "o.txt"))
    assert code == 1 and "cannot make 300 distinct IPv4 prefixes" in output


def test_routes_group_is_registered() -> None:
    code, output = invoke("routes", "--help")
    assert code == 0 and "gen" in output and "stats" in output
