"""`npkit build`, `npkit check` and `npkit run` for MBL (click commands registered by
npkit/cli.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import EMIT_KINDS, emit
from .sema import check_file


def _checked(path: str):
    program, bag = check_file(path)
    if bag.items:
        click.echo(bag.render(program.sources), err=True)
    if bag.errors:
        n = len(bag.errors)
        click.echo(f"{n} error{'s' if n > 1 else ''} in {path}", err=True)
        sys.exit(1)
    return program


@click.command("build")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--emit", "emit_kind", type=click.Choice(EMIT_KINDS), default="llvm-opt",
              show_default=True, help="which stage to print")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="write here, not stdout")
def build(source: str, emit_kind: str, output: str | None) -> None:
    """Compile an MBL file and print a stage (AST, LLVM IR, optimized LLVM IR)."""
    program = _checked(source)
    text = emit(program, emit_kind)
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        click.echo(text)


@click.command("check")
@click.argument("source", type=click.Path(dir_okay=False))
def check(source: str) -> None:
    """Check an MBL file and report every error (exit 1 when there are errors)."""
    _checked(source)
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
def run(source: str, target: str, block_name: str | None, inputs: tuple[str, ...],
        outputs: tuple[str, ...], tables: tuple[str, ...]) -> None:
    """Run an MBL block on packets from pcap files and report the verdicts."""
    from collections import Counter

    import dpkt

    from .native import NativeError, NativeProgram

    program = _checked(source)
    try:
        native = NativeProgram(program, block_name)
    except NativeError as exc:
        raise click.ClickException(str(exc)) from None
    for spec in tables:
        try:
            _load_table(native, spec)
        except Exception as exc:  # NativeError (unknown/full table) or bad file
            raise click.ClickException(str(exc)) from None
    packets: list[tuple[float, bytes, int]] = []
    for port, path in _port_files(inputs, "--in").items():
        try:
            with open(path, "rb") as fh:
                packets += [(ts, bytes(buf), port) for ts, buf in dpkt.pcap.Reader(fh)]
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"cannot read pcap {path}: {exc}") from None
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
