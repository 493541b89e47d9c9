"""`npkit build`, `npkit check` and `npkit run` for MBL (click commands registered by
npkit/cli.py)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from ..me.cli import ME_EMIT_KINDS
from . import EMIT_KINDS, CompileError, emit
from .sema import check_file


def checked_program(path: str):
    program, bag = check_file(path)
    if bag.items:
        click.echo(bag.render(program.sources), err=True)
    if bag.errors:
        n = len(bag.errors)
        click.echo(f"{n} error{'s' if n > 1 else ''} in {path}", err=True)
        sys.exit(1)
    return program


@contextlib.contextmanager
def me_errors() -> Iterator[None]:
    """ME backend failures as one clear message and exit 1: diagnostics at MBL source
    locations, or the linker's / assembler's message."""
    from ..me.errors import backend_error_types

    try:
        yield
    except CompileError as e:
        click.echo(e.render(), err=True)
        sys.exit(1)
    except backend_error_types() as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)


@click.command("build")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--emit", "emit_kind", type=click.Choice(EMIT_KINDS + ME_EMIT_KINDS),
              default="llvm-opt", show_default=True,
              help="which stage to print: the AST, LLVM IR, optimized LLVM IR, the ME "
                   "backend's word IR (wir) or the compiled microcode body (uc)")
@click.option("--entry", help="pipeline or block to compile for the MEs "
                              "(default: the file's pipeline, or its only block)")
@click.option("--report", is_flag=True,
              help="print the ME compile report (per block: instructions, worst path, "
                   "memory commands, registers, estimated packets/s per ME)")
@click.option("--json", "json_output", is_flag=True, help="with --report: JSON")
@click.option("--images", "images_dir", type=click.Path(file_okay=False),
              help="link for the chip and write the ME images, layout.h and the memory map "
                   "into this folder")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here, not stdout")
def build(source: str, emit_kind: str, entry: str | None, report: bool, json_output: bool,
          images_dir: str | None, output: str | None) -> None:
    """Compile an MBL file: print a stage (AST, LLVM IR, optimized IR, WIR, microcode), the
    ME compile report, or link the ME images."""
    from ..me import cli as me_cli

    program = checked_program(source)
    with me_errors():
        if images_dir:
            for path in me_cli.write_images(program, entry, images_dir):
                click.echo(f"wrote {path}")
            return
        if report:
            text = me_cli.report_text(program, entry, json_output)
        elif emit_kind in ME_EMIT_KINDS:
            text = me_cli.emit_text(program, emit_kind, entry)
        else:
            text = emit(program, emit_kind)
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)


@click.command("check")
@click.argument("source", type=click.Path(dir_okay=False))
def check(source: str) -> None:
    """Check an MBL file and report every error (exit 1 when there are errors)."""
    checked_program(source)
    click.echo(f"{source}: ok")


def _port_files(specs: tuple[str, ...], what: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for spec in specs:
        port, sep, path = spec.partition("=")
        if not sep or not port.isdigit() or not path:
            raise click.BadParameter(f"{spec!r}: expected PORT=FILE, e.g. 0=in.pcap",
                                     param_hint=what)
        out[int(port)] = path
    return out


def _load_table(native, spec: str) -> None:
    """NAME=FILE; lines `prefix/len value` (lpm) or `key value` (hash), # comments."""
    import ipaddress

    name, sep, path = spec.partition("=")
    if not sep:
        raise click.BadParameter(f"{spec!r}: expected NAME=FILE", param_hint="--table")
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}",
                                 param_hint="--table") from None
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].split()
        if not text:
            continue
        try:
            key_text, value_text = text
            value = int(value_text, 0)
            if "/" in key_text:
                net = ipaddress.ip_network(key_text, strict=False)
                native.table_add(name, int(net.network_address), value, net.prefixlen)
            else:
                native.table_add(name, int(key_text, 0), value)
        except ValueError as exc:
            raise click.BadParameter(f"{path}:{number}: {exc or 'expected KEY VALUE'}",
                                     param_hint="--table") from None


def _load_routes(native, paths: tuple[str, ...], seed: int, next_hops: int, ports: int) -> str:
    """Build the program's IPv4/IPv6 tries from route files (npkit.runtime.lpm) and, when
    the program has a `nexthops` array, give next hop i the default record of
    npkit.runtime.routes.default_next_hop.  Returns a one-line summary."""
    import time

    from npkit.runtime.lpm import LpmError, RouteTables
    from npkit.runtime.routes import RouteFileError, RouteSet, default_next_hop, read_routes

    merged = RouteSet()
    try:
        for path in paths:
            routes = read_routes(path, seed, next_hops)
            merged.v4.update(routes.v4)
            merged.v6.update(routes.v6)
        start = time.perf_counter()
        tables = RouteTables.of(native)
        tables.load(merged.v4, merged.v6)
    except (RouteFileError, LpmError) as exc:
        raise click.ClickException(str(exc)) from None
    elapsed = time.perf_counter() - start
    if "nexthops" in native.program.memories:
        used = {nh for routes in (merged.v4, merged.v6) for nh in routes.values()}
        for nh in sorted(used):
            try:
                native.write("nexthops", nh, default_next_hop(nh, ports))
            except ValueError as exc:  # the program's next-hop struct differs
                raise click.ClickException(f"cannot fill nexthops[{nh}]: {exc}") from None
    sizes = ", ".join(f"{name} {t.bytes_used / 2**20:.1f} MB"
                      for name, t in (("IPv4", tables.v4), ("IPv6", tables.v6)) if t)
    return (f"routes: {len(merged.v4)} IPv4 + {len(merged.v6)} IPv6 built in "
            f"{elapsed:.2f} s ({sizes})")


@click.command("run")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--target", type=click.Choice(["native"]), default="native", show_default=True)
@click.option("--block", "block_name",
              help="block or pipeline to run (default: first pipeline, else first block)")
@click.option("--in", "inputs", multiple=True, metavar="PORT=PCAP", help="input port and pcap")
@click.option("--out", "outputs", multiple=True, metavar="PORT=PCAP",
              help="write packets forwarded to PORT into PCAP")
@click.option("--table", "tables", multiple=True, metavar="NAME=FILE",
              help="fill a table: lines `prefix/len value` (lpm) or `key value` (hash)")
@click.option("--routes", "route_files", multiple=True, metavar="FILE",
              help="load the fib4_trie/fib6_trie route tables: lines `prefix [next-hop]`, "
                   "optionally .gz (docs/lpm.md)")
@click.option("--route-seed", default=2024, show_default=True,
              help="seed of the next-hop rule for prefixes without a next hop")
@click.option("--next-hops", "next_hop_count", default=16, show_default=True,
              type=click.IntRange(1, 65536), help="next hops the seeded rule spreads over")
@click.option("--ports", "port_count", default=4, show_default=True,
              type=click.IntRange(1, 65536), help="output ports of the default next hops")
def run(source: str, target: str, block_name: str | None, inputs: tuple[str, ...],
        outputs: tuple[str, ...], tables: tuple[str, ...], route_files: tuple[str, ...],
        route_seed: int, next_hop_count: int, port_count: int) -> None:
    """Run an MBL block on packets from pcap files and report the verdicts."""
    from collections import Counter

    import dpkt

    from .native import NativeError, NativeProgram

    program = checked_program(source)
    try:
        native = NativeProgram(program, block_name)
    except NativeError as exc:
        raise click.ClickException(str(exc)) from None
    for spec in tables:
        try:
            _load_table(native, spec)
        except Exception as exc:  # NativeError (unknown/full table) or bad file
            raise click.ClickException(str(exc)) from None
    if route_files:
        click.echo(_load_routes(native, route_files, route_seed, next_hop_count, port_count))
    packets: list[tuple[float, bytes, int]] = []
    for port, path in _port_files(inputs, "--in").items():
        try:
            with open(path, "rb") as fh:
                packets += [(ts, bytes(buf), port) for ts, buf in dpkt.pcap.Reader(fh)]
        except (OSError, ValueError, dpkt.Error) as exc:  # dpkt.Error: not a pcap file
            raise click.ClickException(f"cannot read pcap {path}: {exc or type(exc).__name__}; "
                                       "give a pcap file (not pcapng)") from None
    packets.sort(key=lambda p: p[0])
    verdicts = native.run([p[1] for p in packets], [p[2] for p in packets])
    sinks = {port: open(path, "wb") for port, path in _port_files(outputs, "--out").items()}
    writers = {port: dpkt.pcap.Writer(fh) for port, fh in sinks.items()}
    tally: Counter[str] = Counter()
    for (ts, _, _), v in zip(packets, verdicts, strict=True):
        if v.kind == "forward":
            tally[f"forward port {v.port}"] += 1
            if v.port in writers:
                writers[v.port].writepkt(v.data, ts)
        elif v.kind == "drop":
            tally[f"drop {v.reason}"] += 1
        elif v.kind == "exception":
            tally[f"exception code {v.code}"] += 1
        else:
            tally[f"{v.kind} {v.reason}".strip()] += 1
    for fh in sinks.values():
        fh.close()
    click.echo(f"{len(packets)} packets")
    for key, count in sorted(tally.items()):
        click.echo(f"  {key}: {count}")


COMMANDS = (build, check, run)
