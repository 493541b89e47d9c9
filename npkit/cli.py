"""The ``npkit`` command.

    npkit asm FILE.uc [-o FILE.img] [-I DIR] [--listing FILE]
    npkit disasm FILE.img
    npkit run [MANIFEST.toml | IMAGE.uc | IMAGE.img ...] --in PORT=FILE.pcap --out PORT=FILE.pcap
              [--cycles N] [--packets K] [--trace FILE.json] [--chip NAME] [--seed N]
              [--me IMAGE=0,1]
    npkit run            (no arguments) / npkit demo: the l2wire demo with generated traffic

Every user error (missing or bad file, assembler error, simulator fault, bad manifest)
prints a clear message and exits non-zero; never a traceback.  See docs/cli.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from npkit.report import for_display, print_counters, print_leaks

DEMO_PACKAGE = "npkit.examples"
DEMO_MANIFEST = ("l2wire", "l2wire.toml")
DEMO_SIZES = (64, 128, 256, 512, 1024, 1518)


def _console() -> Console:
    # no automatic number/path colouring: the tables carry the emphasis
    return Console(highlight=False)


# --------------------------------------------------------------------------- errors
def _user_error_types() -> tuple[type[BaseException], ...]:
    from npkit.runtime.manifest import ManifestError
    from npkit.sim import ConfigError, LoadError, PacketIOError, SimFault

    types: list[type[BaseException]] = [ManifestError, ConfigError, LoadError, PacketIOError,
                                        SimFault, OSError, ValueError, RuntimeError]
    with contextlib.suppress(ImportError):
        from npkit.compiler.uc import AsmError, ImageError

        types += [AsmError, ImageError]
    return tuple(types)


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn every expected failure into a one-message, non-zero exit."""
    try:
        yield
    except click.ClickException:
        raise
    except ImportError as err:
        raise click.ClickException(f"npkit is not completely installed or built ({err}); "
                                   "reinstall it, or run `python setup.py build_ext "
                                   "--inplace` in a checkout") from None
    except _user_error_types() as err:
        message = str(err) or type(err).__name__
        if isinstance(err, OSError) and err.filename:
            message = f"{err.filename}: {err.strerror or err}"
        raise click.ClickException(message) from None


# --------------------------------------------------------------------------- option parsing
def _port_file(spec: str, option: str) -> tuple[int, Path]:
    port, sep, name = spec.partition("=")
    if not sep or not port.strip().isdigit() or not name:
        raise click.BadParameter(f"{spec!r}: expected PORT=FILE, e.g. 0=in.pcap",
                                 param_hint=option)
    return int(port), Path(name)


def _existing(files: dict[int, Path]) -> dict[int, Path]:
    """Check input files before the (slower) chip build, so a typo fails at once."""
    for port, path in files.items():
        if not path.is_file():
            raise click.ClickException(f"{path}: no such packet file (--in {port}={path})")
    return files


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


# --------------------------------------------------------------------------- asm / disasm
class _Group(click.Group):
    """Last safety net: an unexpected exception is a bug in npkit, reported in one line
    (NPKIT_TRACEBACK=1 shows the traceback) instead of a wall of Python."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # `npkit run X.mbl ...` runs an MBL program natively; `npkit run` of images or a
        # manifest runs the simulated chip.
        name, cmd, rest = super().resolve_command(ctx, args)
        if name == "run" and any(a.endswith(".mbl") for a in rest):
            from npkit.compiler.mbl.cli import run as run_mbl

            return name, run_mbl, rest
        return name, cmd, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            raise click.ClickException("interrupted") from None
        except Exception as err:  # noqa: BLE001 -- the point is to catch everything else
            if os.environ.get("NPKIT_TRACEBACK"):
                raise
            raise click.ClickException(
                f"internal error: {type(err).__name__}: {err} (a bug in npkit: please "
                "report it; NPKIT_TRACEBACK=1 shows the traceback)") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="npkit")
def main() -> None:
    """npkit: tools for IXP-style network processors."""


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="image file to write (default: SOURCE with .img)")
@click.option("-I", "include_dirs", multiple=True, type=click.Path(path_type=Path),
              help="folder to search for #include files (repeatable)")
@click.option("--listing", type=click.Path(path_type=Path),
              help="also write an address/word/source listing here")
def asm(source: Path, output: Path | None, include_dirs: tuple[Path, ...],
        listing: Path | None) -> None:
    """Assemble microcode SOURCE (.uc) into an ME image."""
    if not source.is_file():
        raise click.ClickException(f"{source}: no such microcode file")
    with user_errors():
        from npkit.compiler.uc import assemble_file
        from npkit.compiler.uc import listing as make_listing

        dirs = tuple(str(d) for d in include_dirs) or (str(source.parent),)
        image = assemble_file(str(source), include_dirs=dirs)
        target = output or source.with_suffix(".img")
        image.save(target)
        if listing is not None:
            listing.write_text(make_listing(image), encoding="utf-8")
        mes = ", ".join(str(m) for m in image.mes)
        click.echo(f"{target}: {len(image.words)} instructions for ME {mes}, "
                   f"{image.ctx_mode} contexts")


@main.command()
@click.argument("image_file", type=click.Path(path_type=Path))
def disasm(image_file: Path) -> None:
    """Disassemble an ME image (.img) to microcode text."""
    with user_errors():
        from npkit.compiler.uc import Image, disassemble

        click.echo(disassemble(Image.load(image_file)), nl=False)


# --------------------------------------------------------------------------- run
@dataclass
class RunRequest:
    """Everything ``npkit run`` was asked to do, checked."""

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


def _split_targets(targets: tuple[Path, ...]) -> tuple[Path | None, list[Path]]:
    manifests = [t for t in targets if t.suffix == ".toml"]
    images = [t for t in targets if t.suffix != ".toml"]
    if len(manifests) > 1:
        raise click.UsageError("give at most one manifest (.toml)")
    for target in targets:
        if not target.is_file():
            raise click.ClickException(f"{target}: no such file")
    for image in images:
        if image.suffix not in (".uc", ".img"):
            raise click.ClickException(f"{image}: expected a manifest (.toml), microcode (.uc) "
                                       "or an image (.img)")
    return (manifests[0] if manifests else None), images


def _build(request: RunRequest) -> Any:
    """A LoadedRun for the request: the manifest's chip, or a bare chip with the images."""
    from npkit.runtime.loader import LoadedRun, build_from_manifest, load_images
    from npkit.runtime.manifest import parse_manifest
    from npkit.sim import Chip, ChipConfig, Port

    tracing = request.trace is not None
    if request.manifest is not None:
        manifest = parse_manifest(request.manifest)
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
        raise click.ClickException("nothing to run: give a manifest (.toml) or images "
                                   "(.uc/.img), or no arguments at all for the demo")
    return run


def _attach_files(run: Any, request: RunRequest) -> list[Any]:
    from npkit.sim import PcapSink, PcapSource

    ports = len(run.chip.config.ports)
    for port in [*request.inputs, *request.outputs]:
        if port >= ports:
            raise click.ClickException(f"port {port} does not exist: the chip has ports "
                                       f"0..{ports - 1}")
    for port, path in request.inputs.items():
        run.chip.attach_source(port, PcapSource(path, pace=request.pace))
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


def execute_run(request: RunRequest, console: Console,
                sources: dict[int, Any] | None = None,
                sink_wrap: Callable[[int, Any], Any] | None = None) -> tuple[Any, Any]:
    """Build, attach, run, report.  Returns (LoadedRun, RunResult)."""
    from npkit.runtime.loader import leak_check
    from npkit.sim import RunResult

    run = _build(request)
    sinks = _attach_files(run, request)
    for port, source in (sources or {}).items():
        run.chip.attach_source(port, source)
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
    return run, result


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
    if request.counters_json is not None:
        counters["leak_check"] = [{"channel": r.channel, "queue": r.queue,
                                   "initial": r.initial, "now": r.now} for r in leaks]
        request.counters_json.write_text(json.dumps(counters, indent=1, default=str),
                                         encoding="utf-8")


RUN_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--chip", help="chip preset (ixp2800, ixp2400) or chip .toml"),
    click.option("--seed", type=int, help="simulation seed (default: manifest's, or 1)"),
    click.option("--cycles", type=click.IntRange(min=1), help="stop after N cycles"),
    click.option("--packets", type=click.IntRange(min=1),
                 help="stop after K frames have been transmitted"),
    click.option("--trace", type=click.Path(path_type=Path),
                 help="write the thread timeline (Chrome/Perfetto JSON) here"),
    click.option("--counters-json", type=click.Path(path_type=Path),
                 help="also write all counters as JSON here"),
    click.option("--contexts", is_flag=True, help="also print per-context counters"),
    click.option("--quiet-cycles", type=click.IntRange(min=1), default=200_000,
                 show_default=True,
                 help="stop once inputs are drained and nothing moved for this long"),
]


def _run_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(RUN_OPTIONS):
        func = option(func)
    return func


@main.command()
@click.argument("targets", nargs=-1, type=click.Path(path_type=Path))
@click.option("--in", "inputs", multiple=True, metavar="PORT=FILE.pcap",
              help="feed a pcap/pcapng into a port (repeatable)")
@click.option("--out", "outputs", multiple=True, metavar="PORT=FILE.pcap",
              help="write a port's transmitted frames to a pcap (repeatable)")
@click.option("--me", "mes", multiple=True, metavar="IMAGE=ME[,ME]",
              help="load IMAGE on these MEs instead of its .me list (repeatable)")
@click.option("--pace", type=click.Choice(["line", "timestamps"]), default="line",
              show_default=True, help="input pacing: back to back at line rate, or the "
              "pcap's timestamps")
@_run_options
def run(targets: tuple[Path, ...], inputs: tuple[str, ...], outputs: tuple[str, ...],
        mes: tuple[str, ...], pace: str, **options: Any) -> None:
    """Run a manifest or images on the simulated chip (no arguments: the demo)."""
    console = _console()
    if not targets and not inputs and not outputs and not mes:
        _demo(console, out_dir=None, count=200, **options)
        return
    with user_errors():
        manifest, images = _split_targets(targets)
        request = RunRequest(
            manifest=manifest, images=images,
            inputs=_existing(dict(_port_file(s, "--in") for s in inputs)),
            outputs=dict(_port_file(s, "--out") for s in outputs),
            me_overrides=dict(_me_override(s) for s in mes), pace=pace, **options)
        execute_run(request, console)


# --------------------------------------------------------------------------- demo
@dataclass
class _TagCounter:
    """Passes frames to an optional inner sink and counts the generator tags it sees."""

    inner: Any
    seen: Counter[tuple[int, int]] = field(default_factory=Counter)
    foreign: int = 0

    def write(self, frame: Any) -> None:
        from npkit.sim import parse_tag

        tag = parse_tag(frame.data)
        if tag is None:
            self.foreign += 1
        else:
            self.seen[tag] += 1
        if self.inner is not None:
            self.inner.write(frame)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def demo_manifest() -> Path:
    """The packaged l2wire manifest."""
    entry = resources.files(DEMO_PACKAGE).joinpath(*DEMO_MANIFEST)
    path = Path(str(entry))
    if not path.is_file():
        raise click.ClickException(f"the demo manifest {'/'.join(DEMO_MANIFEST)} is not "
                                   f"installed (looked for {path})")
    return path


def _write_inputs(generators: dict[int, Any], out_dir: Path) -> None:
    """Save the generated traffic as pcaps, so the user can look at what went in."""
    from npkit.sim import PcapSink, TxFrame

    for port, gen in generators.items():
        sink = PcapSink(out_dir / f"in-port{port}.pcap")
        for i, frame in enumerate(gen.frames()):
            sink.write(TxFrame(port, 0, 0, frame.data, i * 1000))
        sink.close()


def _demo(console: Console, out_dir: Path | None, count: int, load: float = 100.0,
          **options: Any) -> None:
    from npkit.sim import Generator

    with user_errors():
        manifest = demo_manifest()
        folder = out_dir or Path(tempfile.mkdtemp(prefix="npkit-demo-"))
        folder.mkdir(parents=True, exist_ok=True)
        # below 100 % the frames are spaced as if sent at that share of the 10 Gb/s line
        pace = None if load >= 100 else 10e9 * load / 100
        generators = {port: Generator(sizes=DEMO_SIZES, count=count, seed=port + 1,
                                      stream=port, flows=8, pace_bps=pace,
                                      src_mac=f"02:00:00:00:00:{port + 1:02x}",
                                      dst_mac=f"02:00:00:00:01:{port + 1:02x}")
                      for port in (0, 1)}
        _write_inputs(generators, folder)
        console.print(f"[bold]npkit demo[/bold]: {manifest.name} with {count} generated "
                      f"frames ({', '.join(map(str, DEMO_SIZES))} B) on each of ports 0 and 1"
                      f" at {min(load, 100):g} % of line rate")
        request = RunRequest(manifest=manifest,
                             outputs={p: folder / f"out-port{p}.pcap" for p in (0, 1)},
                             **options)
        counters: dict[int, _TagCounter] = {}

        def wrap(port: int, inner: Any) -> _TagCounter:
            counters[port] = _TagCounter(inner)
            return counters[port]

        run, _ = execute_run(request, console, sources=dict(generators), sink_wrap=wrap)
        console.print(f"pcaps in {folder}: in-port0/1.pcap (generated), out-port0/1.pcap")
        drops = _drop_note(run.chip.counters().get("ports", []))
        if not _all_arrived(console, generators, counters, drops):
            sys.exit(1)


def _drop_note(port_counters: list[dict[str, Any]]) -> str:
    """Where the ports say frames were dropped, e.g. ' (ports dropped: 1 rx_dropped_rbuf_full
    on port 0)'."""
    notes = [f"{v} {k} on port {i}" for i, p in enumerate(port_counters)
             for k, v in p.items() if "dropped" in k and v]
    return f" (ports dropped: {', '.join(notes)})" if notes else ""


def _all_arrived(console: Console, generators: dict[int, Any],
                 counters: dict[int, _TagCounter], drops: str = "") -> bool:
    expected = {(gen.stream, seq) for gen in generators.values() for seq in range(gen.count)}
    seen: Counter[tuple[int, int]] = Counter()
    for c in counters.values():
        seen.update(c.seen)
    missing = len(expected - set(seen))
    duplicated = sum(n - 1 for tag, n in seen.items() if n > 1)
    unexpected = sum(n for tag, n in seen.items() if tag not in expected)
    if not missing and not duplicated and not unexpected:
        console.print(f"[green]all {len(expected)} packets arrived[/green]")
        return True
    console.print(f"[red]{missing} of {len(expected)} packets missing, {duplicated} "
                  f"duplicated, {unexpected} unexpected[/red]{drops}")
    return False


@main.command()
@click.option("--out-dir", type=click.Path(path_type=Path),
              help="folder for the demo's pcaps (default: a new temporary folder)")
@click.option("--count", type=click.IntRange(min=1), default=200, show_default=True,
              help="generated frames per port")
@click.option("--load", type=click.FloatRange(min=0.1, max=100), default=100.0,
              show_default=True, help="offered load per port, percent of line rate")
@_run_options
def demo(out_dir: Path | None, count: int, load: float, **options: Any) -> None:
    """Run the l2wire demo: generated traffic on ports 0 and 1 through l2wire microcode."""
    _demo(_console(), out_dir, count, load, **options)


def _register_mbl_commands() -> None:
    from npkit.bench.lab.cli import bench
    from npkit.compiler.mbl.cli import build, check
    from npkit.compiler.me.cli import graph
    from npkit.runtime.router_cli import router
    from npkit.runtime.routes_cli import routes

    main.add_command(build)
    main.add_command(check)
    main.add_command(graph)
    main.add_command(routes)
    main.add_command(router)
    main.add_command(bench)


_register_mbl_commands()

if __name__ == "__main__":  # pragma: no cover
    main()
