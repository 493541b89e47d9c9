"""``npkit run``: one command for every way of running a program.

    npkit run                                    the product showcase (showcase.py)
    npkit run X.mbl [--target chip|native]       an MBL program: compiled, linked and run on
                                                 the simulated chip, or JIT-compiled (native)
    npkit run MANIFEST.toml | IMAGE.uc|.img ...  microcode on the simulated chip
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from npkit.base.errors import NpkitError
from npkit.base.portspec import parse_port_files

from . import packet_trace
from .app import console as make_console
from .app import reject_unused
from .chip_run import RunRequest, execute_run, run_options
from .mbl import (
    DEFAULT_NATIVE_PORTS,
    PLATFORM_OPTION,
    TABLE_PARAMS,
    checked_program,
    native_tables,
    platform_ports,
    table_options,
)
from .showcase import DEFAULT_OUT_DIR, check_options, run_showcase

DEFAULT = ParameterSource.DEFAULT


def _me_override(spec: str) -> tuple[str, list[int]]:
    name, sep, mes = spec.partition("=")
    try:
        numbers = [int(m, 0) for m in mes.split(",") if m.strip()]
    except ValueError:
        numbers = []
    if not sep or not name or not numbers:
        raise click.BadParameter(f"{spec!r}: expected IMAGE=ME[,ME...], e.g. rx.uc=0,1",
                                 param_hint="--me")
    return name, numbers


MBL_ONLY = {"entry", "platform", *TABLE_PARAMS}
CHIP_ONLY = {"mes", "pace", "chip", "seed", "cycles", "packets", "trace", "counters_json",
             "contexts", "quiet_cycles", "packet_trace", "trace_frames", "trace_ports",
             "trace_verdict", "trace_flow", "trace_sample", "trace_cap", "trace_commands",
             "utilisation", "coverage", "rtl", "wave"}


def _split_targets(targets: tuple[Path, ...]) -> tuple[Path | None, Path | None, list[Path]]:
    """(MBL program, manifest, images), each file checked to exist."""
    for target in targets:
        if not target.is_file():
            raise NpkitError(f"{target}: no such file")
    programs = [t for t in targets if t.suffix == ".mbl"]
    manifests = [t for t in targets if t.suffix == ".toml"]
    images = [t for t in targets if t.suffix in (".uc", ".img")]
    other = [t for t in targets if t not in programs + manifests + images]
    if other:
        raise NpkitError(f"{other[0]}: expected an MBL program (.mbl), a manifest "
                               "(.toml), microcode (.uc) or an image (.img)")
    if programs and (len(programs) > 1 or manifests or images):
        raise NpkitError("an MBL program (.mbl) runs alone: give no other files")
    if len(manifests) > 1:
        raise NpkitError("give at most one manifest (.toml)")
    return (programs[0] if programs else None, manifests[0] if manifests else None, images)


@click.command()
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--target", "target_kind", type=click.Choice(["chip", "native"]), default="chip",
              show_default=True, help="for an .mbl program: compile, link and run it on the "
              "simulated chip, or run it natively (LLVM JIT, verdicts only)")
@click.option("--in", "inputs", multiple=True, metavar="PORT=FILE.pcap",
              help="feed a pcap/pcapng into a port (repeatable)")
@click.option("--out", "outputs", multiple=True, metavar="PORT=FILE.pcap",
              help="write a port's transmitted frames to a pcap (repeatable)")
@click.option("--me", "mes", multiple=True, metavar="IMAGE=ME[,ME]",
              help="load IMAGE on these MEs instead of its .me list (repeatable)")
@click.option("--pace", type=click.Choice(["line", "timestamps"]), default="line",
              show_default=True, help="input pacing on the chip: back to back at line rate, "
              "or the pcap's timestamps")
@click.option("--entry", "--block", "entry",
              help="MBL: the pipeline or block to run (default: the file's pipeline, else "
                   "its first block)")
@PLATFORM_OPTION
@table_options
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path),
              help="with no program (the showcase): folder for its pcaps, trace and graph "
                   f"(default ./{DEFAULT_OUT_DIR})")
@run_options
def run(targets: tuple[Path, ...], target_kind: str, inputs: tuple[str, ...],
        outputs: tuple[str, ...], mes: tuple[str, ...], pace: str, entry: str | None,
        platform: str | None, tables: tuple[str, ...], route_files: tuple[str, ...],
        route_seed: int, next_hop_count: int, port_count: int | None,
        out_dir: Path | None, **options: Any) -> None:
    """Run a program: no arguments runs the MBL router on the simulated IXP2800 under a
    2 x OC-192 POS load; X.mbl runs an MBL program (--target chip or native); a manifest
    (.toml) or images (.uc/.img) run microcode on the simulated chip."""
    console = make_console()
    ctx = click.get_current_context()
    given = {p.name for p in ctx.command.params
             if p.name and ctx.get_parameter_source(p.name) not in (None, DEFAULT)}
    if not targets and not inputs and not outputs and not mes:
        check_options([p.opts[0] for p in ctx.command.params if p.name in given])
        run_showcase(console, out_dir or Path(DEFAULT_OUT_DIR), options["seed"],
                     options["trace"])
        return
    program_path, manifest_path, images = _split_targets(targets)
    in_files = parse_port_files(inputs, "--in", must_exist=True)
    out_files = parse_port_files(outputs, "--out", writes=True)
    # an option the run would not use is an error, never silently ignored
    reject_unused({"out_dir"}, "only for `npkit run` without a program (the showcase)")
    if program_path is None:
        if target_kind == "native":
            raise NpkitError("--target native runs an MBL program (.mbl)")
        reject_unused(MBL_ONLY, "only for an MBL program (.mbl)")
        request = RunRequest(manifest=manifest_path, images=images, inputs=in_files,
                             outputs=out_files, me_overrides=dict(map(_me_override, mes)),
                             pace=pace, **options)
        execute_run(request, console)
        return
    program = checked_program(program_path)
    table_args = (tables, route_files, route_seed, next_hop_count)
    if target_kind == "native":
        reject_unused(CHIP_ONLY - packet_trace.NATIVE_OPTIONS,
                      "only for the simulated chip (--target chip)")
        native = native_tables(program, entry, *table_args, port_count or DEFAULT_NATIVE_PORTS)
        # the journeys first: their line-trace build copies the tables as the run finds them
        packet_trace.native_trace(native, in_files, options, console)
        _run_native(native, in_files, out_files)
        return
    from npkit.link import DEFAULT_PLATFORM, chip_manifest

    filled = native_tables(program, entry, *table_args, port_count or platform_ports(platform))
    manifest = chip_manifest(program, platform or DEFAULT_PLATFORM, entry=entry, tables=filled)
    request = RunRequest(inputs=in_files, outputs=out_files,
                         me_overrides=dict(map(_me_override, mes)), pace=pace, **options)
    execute_run(request, console, manifest=manifest)


def _run_native(native: Any, in_files: dict[int, Path], out_files: dict[int, Path]) -> None:
    """Every input frame through the JIT-compiled program in timestamp order (ports in the
    order given when times tie); print the verdicts and write the forwarded frames as they
    come.  Streamed: files whose records are in time order (a first pass checks) are merged
    as they are read, and NativeProgram.run_stream runs batches of bounded size, so memory
    does not grow with the input; a file out of order is sorted in memory."""
    from npkit.base.packetfile import PcapWriter, read_packets

    def records(port: int, path: Path) -> Iterator[tuple[float, int, bytes]]:
        return ((ts, port, data) for ts, data in read_packets(path))

    if all(_in_time_order(path) for path in in_files.values()):
        packets: Iterable[tuple[float, int, bytes]] = heapq.merge(
            *(records(port, path) for port, path in in_files.items()), key=lambda p: p[0])
    else:
        packets = sorted((p for port, path in in_files.items() for p in records(port, path)),
                         key=lambda p: p[0])
    times: deque[float] = deque()

    def frames() -> Iterator[tuple[bytes, int]]:
        for ts, port, data in packets:
            times.append(ts)
            yield data, port

    writers = {port: PcapWriter(path) for port, path in out_files.items()}
    tally: Counter[str] = Counter()
    count = 0
    try:
        for v in native.run_stream(frames()):
            ts = times.popleft()
            count += 1
            if v.kind == "forward":
                tally[f"forward port {v.port}"] += 1
                if v.port in writers:
                    writers[v.port].write(v.data, ts)
            elif v.kind == "drop":
                tally[f"drop {v.reason}"] += 1
            elif v.kind == "exception":
                tally[f"exception code {v.code}"] += 1
            else:
                tally[f"{v.kind} {v.reason}".strip()] += 1
    finally:
        for writer in writers.values():
            writer.close()
    click.echo(f"{count} packets")
    for key, number in sorted(tally.items()):
        click.echo(f"  {key}: {number}")


def _in_time_order(path: Path) -> bool:
    """Whether a capture's timestamps never go backwards (a first pass over the file)."""
    from npkit.base.packetfile import read_packets

    last = float("-inf")
    for ts, _ in read_packets(path):
        if ts < last:
            return False
        last = ts
    return True
