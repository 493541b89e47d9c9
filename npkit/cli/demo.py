"""``npkit demo``: the l2wire microcode (a wire, RX -> scratch ring -> TX) with generated
traffic on ports 0 and 1, checking that every frame arrived exactly once."""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from .app import MAX_GENERATED, finite
from .app import console as make_console
from .chip_run import RunRequest, execute_run, run_options

DEMO_PACKAGE = "npkit.examples"
DEMO_MANIFEST = ("l2wire", "l2wire.toml")
DEMO_SIZES = (64, 128, 256, 512, 1024, 1518)


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
    path = Path(str(resources.files(DEMO_PACKAGE).joinpath(*DEMO_MANIFEST)))
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


def run_demo(console: Console, out_dir: Path | None, count: int, load: float = 100.0,
             **options: Any) -> bool:
    """Run the demo; True when every packet arrived exactly once."""
    from npkit.sim import Generator

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
    return _all_arrived(console, generators, counters, drops)


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


@click.command()
@click.option("--out-dir", type=click.Path(path_type=Path),
              help="folder for the demo's pcaps (default: a new temporary folder)")
@click.option("--count", type=click.IntRange(1, MAX_GENERATED), default=200,
              show_default=True, help="generated frames per port")
@click.option("--load", type=finite(min=0.1, max=100), default=100.0,
              show_default=True, help="offered load per port, percent of line rate")
@run_options
@click.pass_context
def demo(ctx: click.Context, out_dir: Path | None, count: int, load: float,
         **options: Any) -> None:
    """Run the l2wire demo: generated traffic on ports 0 and 1 through l2wire microcode
    (a wire, not a router: `npkit run` with no arguments shows the router)."""
    if not run_demo(make_console(), out_dir, count, load, **options):
        ctx.exit(1)
