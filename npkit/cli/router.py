"""`npkit router`: the IPv4 router (router4 microcode) on the simulated chip with its
control plane in the XScale model.

    npkit router check [CONFIG.toml]
    npkit router run [--config CONFIG.toml] [--updates FILE] [--in PORT=FILE.pcap ...]
                     [--out PORT=FILE.pcap ...] [--count N] [--load PCT] [--cycles N]
                     [--counters-json FILE]

`run` without `--in` offers generated traffic on both ports: frames to routed destinations,
plus a few with TTL 1 and pings to the router, so the exception path shows.  `--updates`
applies route changes at simulated times while the traffic runs; each line is

    TIME_US add PREFIX via GATEWAY        (the gateway must be a configured neighbour)
    TIME_US delete PREFIX

It prints the per-port counters (received, transmitted, injected by the control plane,
exceptions by code), drops by reason, the exception path's outcomes and the XScale's load.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from npkit.base.portspec import parse_port_files

from .app import CYCLES, finite, reject_unused, writable

DEFAULT_CONFIG = Path(str(resources.files("npkit.examples").joinpath("router4", "control.toml")))
LINE_BPS = 10e9
MAX_COUNT = 1_000_000  # generated frames per port (held in memory)


def _load_config(path: Path) -> Any:
    """The one config check of `check` and `run`: against what router4 can hold."""
    from npkit.runtime.router_run import load_config

    return load_config(path)


@click.group()
def router() -> None:
    """The IPv4 router microcode on the simulated chip, with its control plane."""


@router.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path),
                default=DEFAULT_CONFIG)
def check(config: Path) -> None:
    """Check a router config and print its ports, neighbours and routes."""
    cfg = _load_config(config)
    from npkit.runtime.neighbours import mac_to_str

    console = Console()
    table = Table(title=f"ports ({config})")
    for column in ("port", "MAC", "IPv4", "IPv6", "MTU"):
        table.add_column(column)
    for p in cfg.ports:
        table.add_row(str(p.port), mac_to_str(p.mac), " ".join(map(str, p.ipv4)),
                      " ".join(map(str, p.ipv6)), str(p.mtu))
    console.print(table)
    console.print(f"{len(cfg.neighbours)} neighbours, {len(cfg.routes)} routes"
                  + (f", route file {cfg.route_file}" if cfg.route_file else "")
                  + f": {config} is ok")


@router.command()
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path),
              default=DEFAULT_CONFIG, show_default="examples/router4/control.toml",
              help="router config: ports, neighbours, routes (docs/control-plane.md)")
@click.option("--updates", type=click.Path(dir_okay=False, path_type=Path),
              help="route changes to apply at simulated times while traffic runs")
@click.option("--in", "inputs", multiple=True, metavar="PORT=FILE.pcap",
              help="feed a pcap into a port (default: generated traffic on both ports)")
@click.option("--out", "outputs", multiple=True, metavar="PORT=FILE.pcap",
              help="write what a port transmits")
@click.option("--count", type=click.IntRange(1, MAX_COUNT), default=500, show_default=True,
              help="generated frames per port (without --in)")
@click.option("--load", type=finite(1, 90), default=50.0, show_default=True,
              help="generated traffic's load, %% of 10GbE line rate")
@click.option("--cycles", type=CYCLES,
              help="simulate this many cycles (default: until the traffic has left and "
                   "every route change was applied)")
@click.option("--counters-json", type=click.Path(dir_okay=False, path_type=Path),
              callback=writable, help="write every counter as JSON")
def run(config: Path, updates: Path | None, inputs: tuple[str, ...], outputs: tuple[str, ...],
        count: int, load: float, cycles: int | None, counters_json: Path | None) -> None:
    """Run the router with its control plane in simulated time and print the counters."""
    from npkit.runtime import router_run
    from npkit.runtime.chip_router import ChipRouter
    from npkit.sim import ListSource, PcapSink, PcapSource, RxFrame
    from npkit.sim.loader import leak_check

    if inputs:
        reject_unused({"count", "load"}, "only for the generated traffic (without --in)")
    cfg = _load_config(config)
    changes = router_run.parse_updates(updates) if updates is not None else []
    ports = router_run.ROUTER4.ports
    in_files = parse_port_files(inputs, "--in", ports=ports, must_exist=True)
    out_files = parse_port_files(outputs, "--out", ports=ports, writes=True)
    chip_router = ChipRouter()
    router_run.configure(chip_router, cfg, config)
    chip = chip_router.chip
    frames_in = 0
    if in_files:
        for port, path in in_files.items():
            chip.attach_source(port, PcapSource(path))
    else:
        gap = (64 + 20) * 8 / LINE_BPS / (load / 100)
        for port, frames in router_run.demo_traffic(chip_router, cfg, count).items():
            chip.attach_source(port, ListSource([RxFrame(f, time_s=i * gap)
                                                 for i, f in enumerate(frames)]))
            frames_in += len(frames)
    sinks = {}
    for port, path in out_files.items():
        sinks[port] = PcapSink(path)
        chip.attach_sink(port, sinks[port])
    clock = chip.config.clock_hz
    for change in changes:
        chip_router.at(int(change.time_us * 1e-6 * clock), router_run.change_function(change),
                       label=f"line {change.line}")
    console = Console()
    try:
        if cycles is not None:
            chip_router.run(cycles)
        else:
            last_change = int(changes[-1].time_us * 1e-6 * clock) if changes else 0
            router_run.run_until_drained(chip_router, frames_in, last_change, len(changes))
    finally:
        chip.close_sinks()
        for sink in sinks.values():
            sink.close()
    counters = chip_router.counters()
    _print(console, chip_router, counters)
    leaks = [r for r in leak_check(chip_router.loaded) if not r.ok]
    for report in leaks:
        console.print(f"[yellow]{report.describe()}[/yellow]")
    missing = router_run.unapplied(chip_router, changes)
    if missing:
        console.print(f"[yellow]{missing}[/yellow]")
    if counters_json is not None:
        counters["changes"] = [r.__dict__ for r in chip_router.records]
        counters_json.write_text(json.dumps(counters, indent=1, default=str), encoding="utf-8")


def _print(console: Console, chip_router: Any, counters: dict[str, Any]) -> None:
    table = Table(title="ports")
    for column in ("port", "rx", "tx", "injected", "exceptions", "rx dropped"):
        table.add_column(column, justify="right")
    for port, c in counters["ports"].items():
        exceptions = ", ".join(f"{k} {v}" for k, v in sorted(c["exceptions"].items())) or "0"
        dropped = sum(c["rx_dropped"].values())
        table.add_row(str(port), f"{c['rx']:,}", f"{c['tx']:,}", f"{c['injected']:,}",
                      exceptions, f"{dropped:,}")
    console.print(table)
    drops = {k: v for k, v in counters["drops"].items() if k != "ip_forwarded"}
    console.print(f"forwarded by the microcode: {counters['drops'].get('ip_forwarded', 0):,}; "
                  "dropped: " + (", ".join(f"{k} {v}" for k, v in drops.items()) or "none"))
    outcomes = {k: v for k, v in counters["exception_path"].items()
                if not k.startswith("rx.") and v}
    console.print("exception path: " + (", ".join(f"{k} {v}" for k, v in
                                                   sorted(outcomes.items())) or "nothing"))
    xs = counters["xscale"]
    records = chip_router.records
    line = f"XScale: {100 * xs.get('utilisation', 0):.1f} % busy"
    if records:
        clock = chip_router.chip.config.clock_hz
        worst = max(r.end - r.start for r in records) / clock * 1e6
        line += f"; {len(records)} route changes applied, slowest visible after {worst:.2f} µs"
    console.print(line)
