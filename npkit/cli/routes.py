"""`npkit routes`: generate route tables and describe route files.

    npkit routes gen --family 4|6 --count N [--seed S] [--next-hops K] [--table FILE] -o FILE
    npkit routes stats FILE [--format auto|text|pyasn] [--no-trie]

`gen` writes `prefix next-hop` lines whose prefix lengths follow the real table's
distribution (npkit.runtime.routes.generate_routes).  `stats` prints, per family, the route
count, the prefix-length histogram and, built with npkit.runtime.lpm, the trie's memory and
worst-case number of dependent reads.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from npkit.runtime.lpm import LpmError
from npkit.runtime.routes import (
    DEFAULT_NEXT_HOPS,
    DEFAULT_SEED,
    NPF_COUNTS,
    ROUTE_FORMATS,
    Histogram,
    RouteSet,
    build_trie,
    generate_routes,
    load_routes,
    prefix_length_histogram,
    reference_histogram,
    write_routes,
)

from .app import writable


@click.group()
def routes() -> None:
    """Route tables: generate seeded tables, describe route files."""


@routes.command()
@click.option("--family", type=click.Choice(["4", "6"]), required=True,
              help="IPv4 or IPv6")
@click.option("--count", type=click.IntRange(min=1), required=True,
              help="routes to generate (NPF-style: IPv4 1,000-1,000,000, IPv6 400-1,200)")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True,
              help="the same seed gives the same table")
@click.option("--next-hops", type=click.IntRange(1, 65536), default=DEFAULT_NEXT_HOPS,
              show_default=True, help="next hops are spread over 0..K-1")
@click.option("--table", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="take the prefix-length distribution from this text route file "
                   "(default: the real table in ../shared/data/routes/, else the "
                   "committed histogram)")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              required=True, callback=writable,
              help="the route file to write (gzip if it ends in .gz)")
def gen(family: str, count: int, seed: int, next_hops: int, table: Path | None,
        output: Path) -> None:
    """Generate a seeded route table with the real table's prefix-length distribution."""
    fam = int(family)
    low, high = NPF_COUNTS[fam]
    histogram = reference_histogram(fam, table)
    table_routes = generate_routes(fam, count, seed, histogram, next_hops)
    header = (f"npkit routes gen --family {fam} --count {count} --seed {seed} "
              f"--next-hops {next_hops}\nprefix lengths from {histogram.source}")
    write_routes(output, table_routes, fam, header)
    note = "" if low <= count <= high else f" (outside the NPF range {low:,}-{high:,})"
    click.echo(f"wrote {count:,} IPv{fam} routes to {output}{note}")


@routes.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["auto", *ROUTE_FORMATS]), default="auto",
              show_default=True, help="text (`prefix [next-hop]`) or pyasn "
                                      "(`;` comments, `prefix<TAB>asn`)")
@click.option("--trie/--no-trie", default=True, show_default=True,
              help="build the lpm trie to report its memory and worst-case reads")
def stats(file: Path, fmt: str, trie: bool) -> None:
    """Route counts, prefix-length histogram and trie footprint of a route file."""
    table = load_routes(file, None if fmt == "auto" else fmt)  # type: ignore[arg-type]
    click.echo(f"{file}: {len(table.v4):,} IPv4 + {len(table.v6):,} IPv6 routes")
    for family in (4, 6):
        _family_stats(table, family, trie)


def _family_stats(table: RouteSet, family: int, with_trie: bool) -> None:
    family_routes = table.v4 if family == 4 else table.v6
    if not family_routes:
        return
    histogram = Histogram(prefix_length_histogram(family_routes), "")
    click.echo(f"\nIPv{family}: {histogram.total:,} routes, "
               f"{len(set(family_routes.values())):,} distinct next hops")
    click.echo("  length      routes        %")
    for length, n in histogram.counts.items():
        click.echo(f"  /{length:<5} {n:>11,} {100 * n / histogram.total:>8.2f}")
    if with_trie:
        _trie_stats(family_routes, family)


def _trie_stats(family_routes: dict[tuple[int, int], int], family: int) -> None:
    start = time.perf_counter()
    try:
        trie = build_trie(family_routes, family)  # type: ignore[arg-type]
    except LpmError as exc:  # raised by the C++ trie, which cannot be an NpkitError
        raise click.ClickException(f"cannot build the IPv{family} trie: {exc}") from None
    seconds = time.perf_counter() - start
    plies = (trie.words_used - trie.shape.root_words) // trie.shape.ply_words
    click.echo(f"  trie {'-'.join(map(str, trie.shape.strides[:3]))}"
               f"{'-...' if family == 6 else ''}: {trie.bytes_used / 2**20:.1f} MiB "
               f"({trie.shape.root_words:,}-word root + {plies:,} plies of "
               f"{trie.shape.ply_words} words), worst case {trie.max_reads()} dependent "
               f"reads, built in {seconds:.2f} s")
