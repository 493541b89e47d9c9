"""The ME backend's part of the command line: `npkit build --emit wir|uc|images`,
`npkit build --report` and `npkit graph` (registered by compiler/mbl/cli.py and npkit/cli.py).
Thin wrappers: the work is in compiler/me/{front,back,link,report,graph}.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ..mbl.sema import Program
from . import MEBuild, compile_me
from .abi import LABEL_PREFIX

ME_EMIT_KINDS = ("wir", "uc")


def entry_names(program: Program, entry: str | None) -> list[str]:
    """The entry to compile, then (for a pipeline) its stages' blocks, for the report."""
    build_entry = entry or _default_entry(program)
    names = [build_entry]
    pipeline = next((p for p in program.pipelines.values() if p.name == build_entry), None)
    if pipeline is not None:
        names += list(dict.fromkeys(st.block for st in pipeline.stages))
    return names


def _default_entry(program: Program) -> str:
    from .front import to_wir
    return to_wir(program, None).name


def emit_text(program: Program, kind: str, entry: str | None) -> str:
    build = compile_me(program, entry)
    return str(build.wir) if kind == "wir" else build.body.uc


def _trips(build: MEBuild) -> dict[str, int]:
    """WIR loop bounds by the body's labels (the back end's: it may enter a loop past its
    header, compiler/me/back/thread.py)."""
    return {f"{LABEL_PREFIX}{b.label}": b.max_trips for b in build.wir.blocks
            if b.max_trips} | build.body.loop_trips


def report_text(program: Program, entry: str | None, json_output: bool) -> str:
    """Per block and for the whole entry: instructions, worst path, memory commands,
    registers, estimated packets per second per ME (compiler/me/report.py)."""
    from .report import analyze_body, report_command_text

    stats = {}
    mapping = None
    for name in entry_names(program, entry):
        build = compile_me(program, name)
        if mapping is None:
            mapping = build.link().mapping
        stats[name] = analyze_body(build.body.uc, filename=f"{name}.uc",
                                   loop_trips=_trips(build))
    return report_command_text(stats, mapping, json_output=json_output)


def write_images(program: Program, entry: str | None, out_dir: str) -> list[Path]:
    """Link and write every ME image (.img), the layout header, the memory map (JSON)."""
    linked = compile_me(program, entry).link()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for linked_image in linked.images:
        path = out / f"{linked_image.name}.img"
        linked_image.image.save(path)
        written.append(path)
    header = out / "layout.h"
    header.write_text(linked.header, encoding="utf-8")
    memory_map = out / "memory_map.json"
    memory_map.write_text(json.dumps([dataclasses.asdict(m) for m in linked.memory_map],
                                     indent=2) + "\n", encoding="utf-8")
    return [*written, header, memory_map]


@click.command("graph")
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--entry", help="pipeline or block to map (default: the file's pipeline)")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="render to this file (.svg, .png, .pdf) with Graphviz; .dot writes DOT text;"
                   " default: DOT text on stdout")
def graph(source: str, entry: str | None, output: str | None) -> None:
    """Draw the pipeline of an MBL file mapped onto the chip's MEs (Graphviz)."""
    from ..mbl.cli import checked_program, me_errors
    from .graph import render, to_dot

    program = checked_program(source)
    with me_errors():
        mapping = compile_me(program, entry).link().mapping
    if output is None:
        click.echo(to_dot(mapping))
        return
    path = Path(output)
    if path.suffix == ".dot":
        path.write_text(to_dot(mapping), encoding="utf-8")
    else:
        with me_errors():
            render(mapping, path, format=path.suffix.lstrip(".") or "svg")
    click.echo(f"wrote {path}")
