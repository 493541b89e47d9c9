"""Running a manifest or images on the simulated chip: the part of ``npkit run`` shared by
manifests, images, ``--target chip`` MBL programs and the demos.

Heavy modules (the chip, the loader) are imported when a run starts, so ``npkit --help``
and the argument checks stay fast.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from npkit.base.errors import NpkitError
from npkit.report import for_display, print_counters, print_leaks

from . import packet_trace
from .app import CYCLES, SEED, writable


@dataclass
class RunRequest:
    """Everything a chip run was asked to do, checked."""

    manifest: Path | None = None
    images: list[Path] = field(default_factory=list)
    inputs: dict[int, Path] = field(default_factory=dict)
    outputs: dict[int, Path] = field(default_factory=dict)
    me_overrides: dict[str, list[int]] = field(default_factory=dict)
    chip: str | None = None
    seed: int | None = None
    pace: str = "line"
    cycles: int | None = None
    packets: int | None = None
    trace: Path | None = None
    counters_json: Path | None = None
    quiet_cycles: int = 200_000
    contexts: bool = False
    coverage: Path | None = None
    # per-packet traces and the utilisation view (packet_trace.py)
    packet_trace: Path | None = None
    trace_frames: str | None = None
    trace_ports: str | None = None
    trace_sample: int = 1
    trace_verdict: str | None = None
    trace_flow: str | None = None
    trace_cap: int | None = 10_000_000
    trace_commands: bool = True
    utilisation: Path | None = None
    # the RTL ME in lockstep with one ME of the chip (sim/rtl/lockstep.py, docs/rtl.md)
    rtl: int | None = None
    wave: Path | None = None

    def packet_trace_request(self) -> packet_trace.PacketTraceRequest:
        return packet_trace.PacketTraceRequest(
            self.packet_trace, self.trace_frames, self.trace_ports, self.trace_sample,
            self.trace_verdict, self.trace_flow, self.trace_cap, self.utilisation,
            self.trace_commands)


RUN_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--chip", help="chip preset (ixp2800, ixp2400) or chip .toml"),
    click.option("--seed", type=SEED, help="simulation seed (default: manifest's, or 1)"),
    click.option("--cycles", type=CYCLES, help="stop after N cycles"),
    click.option("--packets", type=CYCLES, help="stop after K frames have been transmitted"),
    click.option("--trace", type=click.Path(path_type=Path), callback=writable,
                 help="write the thread timeline (Chrome/Perfetto JSON) here"),
    click.option("--counters-json", type=click.Path(path_type=Path), callback=writable,
                 help="also write all counters as JSON here"),
    click.option("--contexts", is_flag=True, help="also print per-context counters"),
    click.option("--coverage", type=click.Path(path_type=Path), callback=writable,
                 help="write line coverage of the MBL sources and microcode (lcov) here"),
    click.option("--quiet-cycles", type=CYCLES, default=200_000, show_default=True,
                 help="stop once inputs are drained and nothing moved for this long"),
    *packet_trace.OPTIONS,
    click.option("--rtl", type=click.IntRange(min=0), metavar="ME",
                 help="mirror ME (index) by the RTL ME under Verilator, compared at every "
                      "instruction (docs/rtl.md)"),
    click.option("--wave", type=click.Path(path_type=Path), callback=writable,
                 help="with --rtl: write the RTL ME's VCD waveform here"),
]


def run_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with the chip-run options (the keys of RunRequest)."""
    for option in reversed(RUN_OPTIONS):
        func = option(func)
    return func


def loaded_run(request: RunRequest, manifest: Any = None) -> Any:
    """A LoadedRun for the request: ``manifest`` (an in-memory Manifest, e.g. a compiled MBL
    program's), the request's manifest file, or a bare chip with the images."""
    from npkit.link.manifest import parse_manifest
    from npkit.runtime.loader import LoadedRun, build_from_manifest, load_images
    from npkit.sim import Chip, ChipConfig, Port

    tracing = request.trace is not None
    if request.chip is not None:  # named as the user gave it, before any manifest's path
        try:
            ChipConfig.load(request.chip)
        except NpkitError as err:
            raise NpkitError(f"--chip {request.chip}: {err}") from None
    if manifest is None and request.manifest is not None:
        manifest = parse_manifest(request.manifest)
    _check_me_overrides(request, manifest)
    if manifest is not None:
        run = build_from_manifest(manifest, chip=request.chip, seed=request.seed,
                                  trace=tracing, me_overrides=request.me_overrides)
    else:
        cfg = ChipConfig.load(request.chip or "ixp2800")
        wanted = max([1, *(p + 1 for p in request.inputs), *(p + 1 for p in request.outputs)])
        cfg.ports = [Port.ethernet_10g() for _ in range(max(2, wanted))]
        chip = Chip(cfg, seed=1 if request.seed is None else request.seed, trace=tracing)
        run = LoadedRun(chip, None)
    extra = [(p, request.me_overrides.get(p.name, request.me_overrides.get(str(p))))
             for p in request.images]
    run.images.extend(load_images(run.chip, extra))
    if not run.images:
        raise NpkitError("nothing to run: give a manifest (.toml), images (.uc/.img) "
                               "or an MBL program (.mbl), or no arguments for the demo")
    return run


def _check_me_overrides(request: RunRequest, manifest: Any) -> None:
    """Every --me names an image of the run (by file name or as given): never ignored."""
    images = [*(s.path for s in (manifest.images if manifest is not None else ())),
              *request.images]
    known = {name for path in images for name in (path.name, str(path))}
    for name, mes in request.me_overrides.items():
        if name not in known:
            shown = ", ".join(sorted({p.name for p in images})) or "none"
            raise NpkitError(f"--me {name}={','.join(map(str, mes))}: no image named "
                             f"{name!r} in this run (images: {shown})")


def _attach_files(run: Any, request: RunRequest,
                  wrap: Callable[[int, Any], Any] = lambda port, source: source) -> list[Any]:
    from npkit.sim import PcapSink, PcapSource

    ports = len(run.chip.config.ports)
    for port in [*request.inputs, *request.outputs]:
        if port >= ports:
            raise NpkitError(f"port {port} does not exist: the chip has ports "
                                   f"0..{ports - 1}")
    for port, path in request.inputs.items():
        run.chip.attach_source(port, wrap(port, PcapSource(path, pace=request.pace)))
    sinks = []
    for port, path in request.outputs.items():
        sink = PcapSink(path)
        run.chip.attach_sink(port, sink)
        sinks.append(sink)
    return sinks


@contextlib.contextmanager
def _progress(console: Console, request: RunRequest,
              total_frames: int | None) -> Iterator[Callable[[Any], None] | None]:
    """A transient rich progress bar on a terminal (None otherwise): against the cycle
    budget, the packet budget or the known input frames; a pulsing bar with counts when
    the end is not known in advance (pcaps are not read twice to count them)."""
    if not console.is_terminal:
        yield None
        return
    if request.cycles is not None:
        total, unit, measure = request.cycles, "cycles", "cycle"
    elif request.packets is not None:
        total, unit, measure = request.packets, "frames out", "frames_out"
    else:
        total, unit, measure = total_frames, "frames in", "frames_in"
    columns = [TextColumn("[bold]simulating"), BarColumn(),
               TextColumn("{task.completed:,.0f}" + ("/{task.total:,.0f}" if total else "")
                          + f" {unit}"),
               TextColumn("{task.fields[status]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("run", total=total, status="")

        def update(p: Any) -> None:
            status = f"{p.cycle:,} cycles, {p.frames_in:,} in, {p.frames_out:,} out"
            bar.update(task, completed=getattr(p, measure), status=status)

        yield update


def execute_run(request: RunRequest, console: Console, *, manifest: Any = None,
                sources: dict[int, Any] | None = None,
                sink_wrap: Callable[[int, Any], Any] | None = None) -> tuple[Any, Any]:
    """Build, attach, run, report.  Returns (LoadedRun, RunResult)."""
    from npkit.runtime.loader import leak_check
    from npkit.sim import RunResult

    run = loaded_run(request, manifest)
    mirror = _attach_rtl(run, request)
    if request.coverage is not None:
        run.chip.enable_coverage()
    traced = packet_trace.start(run, request.packet_trace_request())
    sinks = _attach_files(run, request, lambda p, s: packet_trace.wrap_source(traced, p, s))
    for port, source in (sources or {}).items():
        run.chip.attach_source(port, packet_trace.wrap_source(traced, port, source))
    if sink_wrap is not None:
        for port in range(len(run.chip.config.ports)):
            wrapped = sink_wrap(port, run.chip.sink(port))
            if wrapped is not None:
                run.chip.attach_sink(port, wrapped)
    total = sum(getattr(s, "count", 0) for s in (sources or {}).values()
                if isinstance(getattr(s, "count", None), int)) or None
    start = run.chip.now
    try:
        with _progress(console, request, total) as callback:
            # always stop at idle too: --cycles/--packets are limits, not quotas
            result = run.chip.run(cycles=request.cycles, packets=request.packets,
                                  until_idle=True, quiet_cycles=request.quiet_cycles,
                                  progress=callback)
    except KeyboardInterrupt:  # Ctrl-C: report what was simulated so far
        result = RunResult("interrupted", run.chip.now - start,
                           sum(run.chip.frames_out.values()))
    finally:
        run.chip.close_sinks()
        for sink in sinks:
            sink.close()
    _report(console, run, result, request, leak_check(run))
    if mirror is not None:
        console.print(f"RTL lockstep: ME {mirror.me} ({run.chip.config.me_label(mirror.me)}), "
                      f"{mirror.checked:,} instructions, {mirror.commands:,} commands and "
                      f"{mirror.deliveries:,} deliveries compared, no mismatch"
                      + (f"; waveform {request.wave}" if request.wave else ""))
        mirror.detach()  # closes the waveform
    packet_trace.finish(traced, run.chip, console)
    return run, result


def _attach_rtl(run: Any, request: RunRequest) -> Any:
    """The RTL lockstep mirror the request asks for (--rtl ME [--wave FILE]), or None."""
    if request.rtl is None:
        if request.wave is not None:
            raise NpkitError("--wave writes the RTL ME's waveform: it needs --rtl ME")
        return None
    from npkit.sim.rtl.lockstep import Lockstep

    return Lockstep.attach(run.chip, request.rtl, wave=request.wave)


def _report(console: Console, run: Any, result: Any, request: RunRequest,
            leaks: list[Any]) -> None:
    chip = run.chip
    counters = chip.counters()
    print_counters(console, for_display(counters, chip.config.me_numbers, request.contexts))
    leaks_ok = print_leaks(console, leaks)
    time_us = result.cycles / chip.config.clock_hz * 1e6
    console.print(f"stopped: [bold]{result.reason}[/bold] after {result.cycles:,} cycles "
                  f"({time_us:,.3f} µs simulated), {result.frames_out:,} frames out")
    if not leaks_ok:
        console.print("[yellow]buffers missing from freelists: in flight when the run "
                      "stopped, or leaked[/yellow]")
    if request.trace is not None:
        spans = chip.write_trace(request.trace)
        console.print(f"thread timeline: {request.trace} ({spans:,} spans; open in "
                      "https://ui.perfetto.dev)")
    if request.coverage is not None:
        from npkit.runtime.coverage import Coverage

        cov = Coverage.of_chip(chip)
        cov.write_lcov(request.coverage)
        hit = sum(h for h, _ in cov.summary().values())
        total = sum(t for _, t in cov.summary().values())
        console.print(f"coverage: {request.coverage} ({hit:,} of {total:,} source lines "
                      "executed; genhtml renders it)")
    if request.counters_json is not None:
        counters["leak_check"] = [{"channel": r.channel, "queue": r.queue,
                                   "initial": r.initial, "now": r.now} for r in leaks]
        request.counters_json.write_text(json.dumps(counters, indent=1, default=str),
                                         encoding="utf-8")
