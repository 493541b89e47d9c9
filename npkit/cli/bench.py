"""``npkit bench``: the simulated test lab's suites from the command line (docs/lab.md).

    npkit bench rfc2544 [--preset rfc2544-10g] [--quick] [--sizes 64,128] [--out DIR]
                        [--seed N] [--device compiled|router4] [--tests throughput,latency]
                        [--scheduler local|ADDRESS] [--workers N] [--coverage FILE.info]
    npkit bench npf [--preset ixp2800-npf] [--quick] [--out DIR] [--seed N]
                    [--system dual-ixp2800-npf|single-ixp2800|FILE] [--threads N]
                    [--data-path pool|pool-mbl|rings]
                    [--scheduler local|ADDRESS] [--workers N] [--coverage FILE.info]
    npkit bench compare [--quick] [--apps l2fwd,router] [--sizes 64,1518]
                        [--parts chip,native,affinity] [--flows 10000,100000] [--out DIR]
    npkit bench report RESULTS.json [--out DIR]
    npkit bench verdict [--data-path pool|pool-mbl|rings] [--sizes 40,64,128] [--fwd-mes N]
                        [--family 4|6] [--json]

Each suite writes results.json, report.md, report.html and PNG charts to --out.
``--coverage FILE.info``: the line coverage (lcov) of every trial's chips, summed.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from npkit.base.errors import NpkitError

from .app import MAX_GENERATED, SEED, finite

TEN_GBE_PRESETS = ("rfc2544-10g", "rfc2544-1g", "rfc2544-10g-4port")


MAX_FRAME_SIZE = 9216  # bytes with FCS: the tester's largest (9,198 IP bytes + Ethernet)


def _sizes(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        sizes = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected frame sizes such as 64,128,1518",
                                 param_hint="--sizes") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise click.BadParameter(f"{text!r}: sizes must be positive", param_hint="--sizes")
    if any(s > MAX_FRAME_SIZE for s in sizes):
        raise click.BadParameter(f"{text!r}: the largest frame the tester sends is "
                                 f"{MAX_FRAME_SIZE} bytes (a jumbo frame)", param_hint="--sizes")
    return sizes


def _tests(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    return tuple(t.strip().replace("-", "_") for t in text.split(",") if t.strip())


def _command() -> str:
    return shlex.join(["npkit", *sys.argv[1:]])


class _ProgressDevice:
    """A device that shows each trial on a progress line (serial runs only: it holds the
    console, so it is never shipped to a dask worker)."""

    def __init__(self, device: Any, show: Callable[[str], None]) -> None:
        self._device = device
        self._show = show
        self.trials = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._device, name)

    @property
    def ports(self) -> Any:
        return self._device.ports

    def run(self, trial: Any) -> Any:
        self.trials += 1
        self._show(f"trial {self.trials}: {trial.label}")
        return self._device.run(trial)

    def describe(self) -> dict[str, Any]:
        return self._device.describe()


@contextmanager
def _progress(total: int, title: str) -> Iterator[tuple[Callable[[int, int], None],
                                                         Callable[[str], None]]]:
    """(tasks-done callback, trial-label callback) driving a rich progress bar on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True, highlight=False)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[trial]}"))
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(title, total=total, trial="")

        def done(count: int, _all: int) -> None:
            bar.update(task, completed=count)

        def trial(label: str) -> None:
            bar.update(task, trial=label)

        yield done, trial


WORKERS_HELP = ("dask workers: the size of a '--scheduler local' cluster (default 2); given "
                "alone, more than 1 starts such a cluster, 1 runs serially")
COVERAGE_HELP = ("write the line coverage (lcov) of the MBL sources and microcode of every "
                 "trial's chips, summed over all trials and workers, here (genhtml renders "
                 "it; workers must share this folder)")


@contextmanager
def _coverage(path: Path | None) -> Iterator[str | None]:
    """A folder next to ``path`` for the trials' per-trial lcov files (None: no coverage);
    afterwards their sum written to ``path`` and the folder removed."""
    if path is None:
        yield None
        return
    if path.is_dir():
        raise click.BadParameter(f"{path}: is a folder", param_hint="--coverage")
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        yield folder
        from npkit.runtime.coverage import Coverage, CoverageSpool

        merged = CoverageSpool(folder).merged()  # a linker's temporary .uc is gone: left out
        cov = Coverage({f: n for f, n in merged.lines.items() if Path(f).is_file()})
        cov.write_lcov(path)
        hit = sum(h for h, _ in cov.summary().values())
        total = sum(n for _, n in cov.summary().values())
        click.echo(f"coverage: {path} ({hit:,} of {total:,} source lines executed)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _where(scheduler: str | None, workers: int | None) -> Any:
    from npkit.bench.lab.sweep import Where

    return Where.parse(scheduler, workers)


def _rfc_device(config: Any, device: str, fwd_mes: int, v4_routes: int, v6_routes: int
                ) -> Any:
    from npkit.bench.lab.devices import (
        ChipOptions,
        CompiledChipDevice,
        RouteConfig,
        Router4Device,
    )

    routes = RouteConfig(v4_routes, v6_routes)
    options = ChipOptions(port_kinds=(config.port_kind,) * len(config.ports), routes=routes)
    if device == "router4":
        return Router4Device(options)
    return CompiledChipDevice(options, fwd_mes_per_port=fwd_mes)


def _summary(result: Any, files: Any) -> None:
    for s in result.sizes:
        t = s.throughput
        pct = "–" if t is None or t.throughput_percent is None else \
            f"{t.throughput_percent:.2f} %"
        lat = s.latency
        avg = "" if lat is None or lat.avg_ps is None else \
            f", latency avg {lat.avg_ps / 1e6:.2f} µs"
        click.echo(f"  {s.frame_bytes:>5} B: throughput {pct}{avg}")
    click.echo(f"results: {files.json}\nreport:  {files.markdown}"
               + (f" (+ {files.html.name})" if files.html else ""))


@click.group()
def bench() -> None:
    """The simulated test lab: RFC 2544 and NPF IP Forwarding suites (docs/lab.md)."""


@bench.command()
@click.option("--preset", type=click.Choice(TEN_GBE_PRESETS), default="rfc2544-10g",
              show_default=True, help="port pair configuration")
@click.option("--quick", is_flag=True, help="short trials, coarse searches: minutes")
@click.option("--sizes", help="frame sizes in bytes (FCS included), e.g. 64,512,1518")
@click.option("--tests", help="throughput,latency,frame_loss,back_to_back (default: all)")
@click.option("--family", type=click.Choice(["4", "6"]), default="4", show_default=True)
@click.option("--device", type=click.Choice(["compiled", "router4"]), default="compiled",
              show_default=True, help="compiled examples/router/router.mbl, or the "
              "hand-written examples/router4")
@click.option("--fwd-mes", type=click.IntRange(1, 4), default=4, show_default=True,
              help="forwarding MEs per port (compiled device)")
@click.option("--trial-us", type=finite(min=1, max=1e6), help="simulated µs per trial")
@click.option("--v4-routes", type=click.IntRange(1, MAX_GENERATED), default=2000,
              show_default=True)
@click.option("--v6-routes", type=click.IntRange(1, MAX_GENERATED), default=400,
              show_default=True)
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              default=Path("lab-results/rfc2544"), show_default=True)
@click.option("--seed", type=SEED, default=1, show_default=True)
@click.option("--scheduler", help="run sizes as dask tasks: 'local' (a LocalCluster) or a "
              "scheduler address tcp://host:8786")
@click.option("--workers", type=click.IntRange(min=1), help=WORKERS_HELP)
@click.option("--coverage", type=click.Path(path_type=Path), help=COVERAGE_HELP)
def rfc2544(preset: str, quick: bool, sizes: str | None, tests: str | None, family: str,
            device: str, fwd_mes: int, trial_us: float | None, v4_routes: int,
            v6_routes: int, out_dir: Path, seed: int, scheduler: str | None,
            workers: int | None, coverage: Path | None) -> None:
    """RFC 2544 throughput, latency, frame loss rate and back-to-back on the simulated chip."""
    from npkit.bench.lab import rfc2544 as rfc
    from npkit.bench.lab.report import write_report

    changes: dict[str, Any] = {"sizes": _sizes(sizes), "family": int(family),
                               "seed": seed}
    if _tests(tests) is not None:
        changes["tests"] = _tests(tests)
    if trial_us is not None:
        changes["trial_ps"] = round(trial_us * 1e6)
    config = rfc.preset(preset, quick, **changes)
    dut = _rfc_device(config, device, fwd_mes, v4_routes, v6_routes)
    where = _where(scheduler, workers)
    title = f"RFC 2544 {config.preset} ({len(config.frame_sizes())} sizes)"
    with _coverage(coverage) as folder, \
            _progress(len(config.frame_sizes()), title) as (done, trial):
        dut.record_coverage(folder)
        runner = dut if where.kind != "serial" else _ProgressDevice(dut, trial)
        result = rfc.run_rfc2544(runner, config, where, done)
    files = write_report(result, out_dir, _command())
    _summary(result, files)


@bench.command()
@click.option("--preset", default="ixp2800-npf", show_default=True)
@click.option("--quick", is_flag=True, help="short trials, coarse searches: minutes")
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              default=Path("lab-results/npf"), show_default=True)
@click.option("--seed", type=SEED, default=1, show_default=True)
@click.option("--scheduler", help="'local' (a LocalCluster) or a scheduler address")
@click.option("--workers", type=click.IntRange(min=1), help=WORKERS_HELP)
@click.option("--system", "system", default="dual-ixp2800-npf", show_default=True,
              help="simulated system: a sim/systems name or a system TOML "
                   "(single-ixp2800: both ports on one chip)")
@click.option("--threads", type=click.IntRange(1, 64), default=2, show_default=True,
              help="host threads for the chips of a system (the same results as 1)")
@click.option("--data-path", "data_path", type=click.Choice(["pool", "pool-mbl", "rings"]),
              help="the chips' data path: pool-mbl (the compiled IXA-class path, "
                   "docs/datapath.md, with the receive and transmit written in MBL: "
                   "examples/pos_router/media_pos_router.mbl; the default on a system whose "
                   "chips receive one port each), pool (the same with pool.uc's hand-written "
                   "receive and transmit) or rings (receive ME, forwarding chains, transmit "
                   "ME; the single chip's)")
@click.option("--trial-us", type=finite(min=1, max=1e6),
              help="simulated µs per case trial (default: the preset's, 10,000 for the full "
                   "preset); the convergence search keeps its own lengths, and trials under "
                   "10 ms are reported as short")
@click.option("--coverage", type=click.Path(path_type=Path), help=COVERAGE_HELP)
def npf(preset: str, quick: bool, out_dir: Path, seed: int, scheduler: str | None,
        workers: int | None, system: str, threads: int, data_path: str | None,
        trial_us: float | None, coverage: Path | None) -> None:
    """The NPF IP Forwarding benchmark (IPv4, IPv6) on the simulated system."""
    from npkit.bench.lab import npf as suite
    from npkit.bench.lab.report import write_report

    changes: dict[str, Any] = {}
    if trial_us is not None:
        changes["trial_ps"] = round(trial_us * 1e6)
    setup = suite.preset(preset, quick, seed=seed, system=system, threads=threads,
                         data_path=data_path, **changes)
    total = len(suite.cases(suite.chip_device(setup), setup.config))
    where = _where(scheduler, workers)
    with _coverage(coverage) as folder, \
            _progress(total, f"NPF {setup.config.preset}") as (done, _trial):
        result = suite.run_preset(preset, quick, seed, where, done, system=system,
                                  threads=threads, data_path=data_path,
                                  coverage_dir=folder, **changes)
    files = write_report(result, out_dir, _command())
    click.echo(f"results: {files.json}\nreport:  {files.markdown}"
               + (f" (+ {files.html.name})" if files.html else ""))


@bench.command()
@click.option("--quick", is_flag=True, help="short chip trials, fewer native runs: minutes")
@click.option("--apps", default="l2fwd,router", show_default=True, help="l2fwd,router")
@click.option("--sizes", help="frame sizes in bytes (FCS included), e.g. 64,512,1518")
@click.option("--parts", default="chip,native,affinity", show_default=True,
              help="chip,native,affinity")
@click.option("--trial-us", type=finite(min=1, max=1e6), help="simulated µs per chip trial")
@click.option("--flows", help="flow counts of the affinity experiment, e.g. 10000,100000")
@click.option("--workers", type=click.IntRange(min=1),
              help="native workers on all cores (default: the host's CPU count)")
@click.option("--commit", default="", help="the commit measured, written into the report")
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              default=Path("lab-results/compare"), show_default=True)
@click.option("--seed", type=SEED, default=1, show_default=True)
def compare(quick: bool, apps: str, sizes: str | None, parts: str, trial_us: float | None,
            flows: str | None, workers: int | None, commit: str, out_dir: Path,
            seed: int) -> None:
    """x86 vs NPU: l2fwd and the IPv4 router natively (1 core, all cores) and on the
    simulated IXP2800, beside the published figures; flow affinity under RSS and Flow
    Director (docs/lab.md)."""
    from npkit.bench.lab import compare as suite
    from npkit.bench.lab.compare_report import write_compare

    changes: dict[str, Any] = {"seed": seed, "apps": _names(apps, "--apps"),
                               "parts": _names(parts, "--parts")}
    if sizes:
        changes["sizes"] = _sizes(sizes)
    if trial_us is not None:
        changes["trial_ps"] = round(trial_us * 1e6)
    if flows:
        changes["flows"] = tuple(int(f) for f in _names(flows, "--flows"))
    if workers is not None:
        changes["workers"] = workers
    config = suite.preset(quick, **changes)
    def show(label: str) -> None:  # one progress line on stderr
        click.echo(f"\r\x1b[K{label}", nl=False, err=True)

    result = suite.run_compare(config, show, commit)
    click.echo("\r\x1b[K", nl=False, err=True)
    files = write_compare(result, out_dir, _command())
    for p in result.chip:
        pct = "–" if p.throughput_percent is None else f"{p.throughput_percent:.1f} %"
        click.echo(f"  chip {p.app:>6} {p.frame_bytes:>5} B: {pct} of line rate")
    for r in result.native:
        click.echo(f"  host {r.app:>6} {r.frame_bytes:>5} B: {r.mpps_one:.2f} Mpps on 1 core, "
                   f"{r.mpps_all:.2f} on {r.workers}")
    click.echo(f"results: {files.json}\nreport:  {files.markdown}")


def _names(text: str, option: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    if not names:
        raise click.BadParameter(f"{text!r}: give a comma-separated list", param_hint=option)
    if option == "--flows" and not all(n.isdigit() and int(n) > 0 for n in names):
        raise click.BadParameter(f"{text!r}: flow counts such as 10000,100000",
                                 param_hint=option)
    return names


@bench.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              help="folder for the report (default: next to RESULTS)")
def report(results: Path, out_dir: Path | None) -> None:
    """Redraw the report of a results.json."""
    if not results.is_file():
        raise click.ClickException(f"{results}: no such results file")
    from npkit.bench.lab.report import load_result, write_report

    try:
        result = load_result(results)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # JSON errors too
        if str(exc).startswith(f"{results}:"):
            raise NpkitError(str(exc)) from None
        raise NpkitError(f"{results}: not a lab results file "
                         f"({type(exc).__name__}: {str(exc)[:200]})") from None
    if out_dir is not None and out_dir.exists() and not out_dir.is_dir():
        raise NpkitError(f"--out {out_dir}: is a file, not a folder")
    try:
        files = write_report(result, out_dir or results.parent)
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        # load_result checks the suite, not every field: a hand-edited file lands here
        raise NpkitError(f"{results}: not a complete lab results file "
                         f"({type(exc).__name__}: {str(exc)[:200]})") from None
    click.echo(f"report: {files.markdown}")


@bench.command()
@click.option("--data-path", "data_path", type=click.Choice(["pool", "pool-mbl", "rings"]),
              default="pool-mbl", show_default=True,
              help="the chip's data path (docs/datapath.md)")
@click.option("--sizes", default="40,64,128", show_default=True,
              help="IP packet sizes in bytes (IP header included), e.g. 40,64,128")
@click.option("--fwd-mes", type=click.IntRange(1, 8),
              help="forwarding MEs of the rings mapping (default 8)")
@click.option("--family", type=click.Choice(["4", "6"]), default="4", show_default=True,
              help="IPv4 or IPv6 packets")
@click.option("--json", "json_output", is_flag=True, help="the figures as JSON")
def verdict(data_path: str, sizes: str, fwd_mes: int | None, family: str,
            json_output: bool) -> None:
    """The line-rate verdict (docs/verdict.md): per resource of a chip of the NPF system
    (dual-ixp2800-npf, the ixp2800-npf preset's tables), what it can carry at each IPv4
    size, the predicted throughput and the first bottleneck."""
    from npkit.bench.lab.verdict import render, run_verdict, to_json

    if fwd_mes is not None and data_path != "rings":
        raise click.BadParameter("only with --data-path rings (the pool has no forwarding "
                                 "stage of its own)", param_hint="--fwd-mes")
    verdicts = run_verdict(data_path, _sizes(sizes), fwd_mes=fwd_mes, family=int(family))
    click.echo(to_json(verdicts) if json_output else render(verdicts), nl=not json_output)
