"""MBL on the command line: ``npkit check``, ``npkit build``, ``npkit graph``, and the
options and helpers ``npkit run X.mbl`` shares with them (tables, routes, platform).

Thin wrappers: the work is in compiler/mbl (checks, LLVM, native target, table files),
compiler/me (back end, report, graph), npkit.link (linking, manifests) and
runtime/native_routes.py (route files into the tries).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from npkit.base.errors import NpkitError
from npkit.compiler.me import EMIT_KINDS, PASSES

from .app import reject_unused, writable

DEFAULT_NATIVE_PORTS = 4


def checked_program(path: str | Path) -> Any:
    """The checked program.  Every diagnostic (with its source line) goes to stderr; errors
    then end the command with "N errors in FILE"."""
    from npkit.compiler.mbl.sema import check_file

    program, bag = check_file(path)
    if bag.items:
        click.echo(bag.render(program.sources), err=True)
    if bag.errors:
        n = len(bag.errors)
        raise NpkitError(f"{n} error{'s' if n > 1 else ''} in {path}")
    return program


TABLE_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--table", "tables", multiple=True, metavar="NAME=FILE",
                 help="fill a table: lines `prefix/len value` (lpm) or `key value` (hash)"),
    click.option("--routes", "route_files", multiple=True, metavar="FILE",
                 help="load the fib4_trie/fib6_trie route tables: lines `prefix [next-hop]`, "
                      "optionally .gz (docs/lpm.md)"),
    click.option("--route-seed", default=2024, show_default=True,
                 help="seed of the next-hop rule for prefixes without a next hop"),
    click.option("--next-hops", "next_hop_count", default=16, show_default=True,
                 type=click.IntRange(1, 65536), help="next hops the seeded rule spreads over"),
    click.option("--ports", "port_count", type=click.IntRange(1, 65536),
                 help="output ports of the default next hops (default: the platform's "
                      f"ports with --target chip, else {DEFAULT_NATIVE_PORTS})"),
]

PLATFORM_OPTION = click.option(
    "--platform", help="what the program is linked for: chip, ports, media microblocks "
                       "(default ixp2800-2x10gbe; also ixp2800-4x10gbe, ixp2800-2xoc192pos, "
                       "ixp2800-4xoc192pos, or a platform folder)")


TABLE_PARAMS = {"tables", "route_files", "route_seed", "next_hop_count", "port_count"}


def table_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(TABLE_OPTIONS):
        func = option(func)
    return func


def native_tables(program: Any, block: str | None, tables: tuple[str, ...],
                  route_files: tuple[str, ...], route_seed: int, next_hop_count: int,
                  port_count: int) -> Any:
    """A NativeProgram of ``program`` with the tables and routes filled (its memories are
    what the chip gets too)."""
    from npkit.compiler.mbl.native import NativeProgram
    from npkit.compiler.mbl.table_file import load_table_file, parse_table_spec
    from npkit.runtime.native_routes import load_route_files

    native = NativeProgram(program, block)
    for spec in tables:
        load_table_file(native, *parse_table_spec(spec))
    if route_files:
        loaded = load_route_files(native, route_files, route_seed, next_hop_count, port_count)
        click.echo(loaded.summary())
    return native


def platform_ports(platform: str | None) -> int:
    from npkit.link import DEFAULT_PLATFORM, load_platform

    return len(load_platform(platform or DEFAULT_PLATFORM).ports)


def entry_mapping(program: Any, entry: str | None, platform: str | None) -> Any:
    """The program linked for the platform, as the ME mapping (report, graph)."""
    from npkit.link import DEFAULT_PLATFORM, chip_manifest, mapping

    return mapping(chip_manifest(program, platform or DEFAULT_PLATFORM, entry=entry))


@click.command("check")
@click.argument("source", type=click.Path(dir_okay=False))
def check(source: str) -> None:
    """Check an MBL file and report every error (exit 1 when there are errors)."""
    checked_program(source)
    click.echo(f"{source}: ok")


@click.command("build")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--emit", "emit_kind", type=click.Choice(EMIT_KINDS), default="llvm-opt",
              show_default=True,
              help="which IR to print: the AST, LLVM IR, optimized LLVM IR, the ME back end's "
                   "word IR (wir), machine IR after register allocation (mir) or the "
                   "compiled microcode body (uc)")
@click.option("--print-after", "print_after", multiple=True, metavar="PASS",
              help="print the IR after each run of PASS to stderr (repeatable; 'all' for "
                   f"every pass): {', '.join(PASSES)}")
@click.option("--entry", help="pipeline or block to compile for the MEs "
                              "(default: the file's pipeline, or its only block)")
@click.option("--report", is_flag=True,
              help="print the ME compile report (per block: instructions, worst path, "
                   "memory commands, registers, estimated packets/s per ME)")
@click.option("--json", "json_output", is_flag=True, help="with --report: JSON")
@click.option("--images", "images_dir", type=click.Path(file_okay=False),
              help="link for the platform and write manifest.toml, the ME images and the "
                   "tables' memory into this folder (`npkit run DIR/manifest.toml` runs it)")
@PLATFORM_OPTION
@table_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=writable,
              help="write here, not stdout")
def build(source: str, emit_kind: str, print_after: tuple[str, ...], entry: str | None,
          report: bool, json_output: bool, images_dir: str | None, platform: str | None,
          tables: tuple[str, ...], route_files: tuple[str, ...], route_seed: int,
          next_hop_count: int, port_count: int | None, output: str | None) -> None:
    """Compile an MBL file: print an IR (AST, LLVM IR, optimized IR, WIR, MIR, microcode),
    the IR after passes, the ME compile report, or link it into a runnable folder."""
    from npkit.compiler.me import check_pass_names, compile_me, emit_text

    check_pass_names(print_after)
    if images_dir and Path(images_dir).exists() and not Path(images_dir).is_dir():
        raise NpkitError(f"--images {images_dir}: is a file, not a folder")
    if not images_dir:
        reject_unused(TABLE_PARAMS, "only with --images (the tables go into the folder)")
    if not (images_dir or report):
        reject_unused({"platform"}, "only with --images or --report")
    if json_output and not report:
        reject_unused({"json_output"}, "only with --report")
    program = checked_program(source)
    if images_dir:
        from npkit.link import DEFAULT_PLATFORM, build_images

        filled = None
        if tables or route_files:
            ports = port_count or platform_ports(platform)
            filled = native_tables(program, entry, tables, route_files, route_seed,
                                   next_hop_count, ports)
        manifest = build_images(program, platform or DEFAULT_PLATFORM, images_dir,
                                entry=entry, tables=filled)
        click.echo(f"wrote {manifest} (run it: npkit run {manifest} --in 0=FILE.pcap)")
        return
    if print_after:
        compile_me(program, entry, print_after=print_after)
        if not report and emit_kind == "llvm-opt" and output is None:
            return  # only the dumps were asked for
    if report:
        from npkit.compiler.me.block_report import block_stats
        from npkit.compiler.me.report import report_command_text

        stats = block_stats(program, entry)
        mapping = None if json_output else entry_mapping(program, entry, platform)
        text = report_command_text(stats, mapping, json_output=json_output)
    else:
        text = emit_text(program, emit_kind, entry)
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)


@click.command("graph")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--entry", help="pipeline or block to map (default: the file's pipeline)")
@PLATFORM_OPTION
@click.option("-o", "--output", type=click.Path(dir_okay=False), callback=writable,
              help="render to this file (.svg, .png, .pdf) with Graphviz; .dot writes DOT text;"
                   " default: DOT text on stdout")
def graph(source: str, entry: str | None, platform: str | None, output: str | None) -> None:
    """Draw the pipeline of an MBL file mapped onto the chip's MEs (Graphviz)."""
    from npkit.compiler.me.graph import render, to_dot

    mapping = entry_mapping(checked_program(source), entry, platform)
    if output is None:
        click.echo(to_dot(mapping))
        return
    path = Path(output)
    if path.suffix == ".dot":
        path.write_text(to_dot(mapping), encoding="utf-8")
    else:
        render(mapping, path, format=path.suffix.lstrip(".") or "svg")
    click.echo(f"wrote {path}")
