"""`npkit router`: a router with its control plane, driven from the command line.

    npkit router check [CONFIG.toml] [--program router|router4] [--target native|chip]
    npkit router run [CONFIG.toml] [--program router|router4] [--target native|chip]
                     [--updates FILE] [--in PORT=FILE.pcap ...] [--out PORT=FILE.pcap ...]
                     [--count N] [--load PCT] [--cycles N] [--counters-json FILE]

`--program router` (the default) is the MBL dual-stack router (examples/router/router.mbl,
config examples/router/control.toml) on the native target or compiled for the simulated
chip (runtime/router_targets.py); `--program router4` is the hand-written IPv4 microcode
(examples/router4, chip only), the baseline.  One config drives both targets.

`run` without `--in` offers generated traffic on every port: frames to routed destinations,
plus a few with TTL 1 and pings to the router, so the exception path shows.  `--updates`
applies route changes at simulated times while the traffic runs; each line is

    TIME_US add PREFIX via GATEWAY        (the gateway must be a configured neighbour)
    TIME_US delete PREFIX

It prints the per-port counters (received, transmitted, injected by the control plane,
exceptions by code), drops by reason, the exception path's outcomes and, on the chip, the
XScale's load.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from npkit.base.errors import NpkitError
from npkit.base.portspec import MAX_PORT, parse_port_files

from .app import CYCLES, finite, reject_unused, writable

CONFIGS = {
    "router": Path(str(resources.files("npkit.examples").joinpath("router", "control.toml"))),
    "router4": Path(str(resources.files("npkit.examples").joinpath("router4",
                                                                   "control.toml"))),
}
DEFAULT_CONFIG = CONFIGS["router4"]
LINE_BPS = 10e9
MAX_COUNT = 1_000_000  # generated frames per port (held in memory)

PROGRAM = click.option("--program", type=click.Choice(["router", "router4"]), default="router",
                       show_default=True,
                       help="router: the MBL dual-stack router (examples/router); router4: "
                            "the hand-written IPv4 microcode (examples/router4, chip only)")
TARGET = click.option("--target", type=click.Choice(["native", "chip"]), default="chip",
                      show_default=True, help="where the router runs (router4: chip only)")
CONFIG = click.argument("config", type=click.Path(dir_okay=False, path_type=Path),
                        required=False)


def _config_path(program: str, config: Path | None, option: Path | None = None) -> Path:
    if config is not None and option is not None and config != option:
        raise NpkitError(f"CONFIG {config} and --config {option}: give the config once")
    return config or option or CONFIGS[program]


def _load_config(path: Path, program: str = "router4", target: str = "chip") -> Any:
    """The one config check of `check` and `run`: against what the program holds on the
    target (errors name file:line)."""
    if program == "router4":
        if target != "chip":
            raise NpkitError(f"--target {target}: router4 is microcode; it runs on the chip "
                             "only (use --program router for the native target)")
        from npkit.runtime.router_run import load_config

        return load_config(path)
    from npkit.runtime.router_targets import load_config

    return load_config(path, target)


@click.group()
def router() -> None:
    """A router (the MBL dual-stack router or router4) with its control plane."""


@router.command()
@CONFIG
@PROGRAM
@TARGET
def check(config: Path | None, program: str, target: str) -> None:
    """Check a router config and print its ports, neighbours and routes."""
    config = _config_path(program, config)
    cfg = _load_config(config, program, target)
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
                  + f": {config} is ok for {program} on the {target}")


@router.command()
@CONFIG
@PROGRAM
@TARGET
@click.option("--config", "config_option", type=click.Path(dir_okay=False, path_type=Path),
              help="the same as CONFIG")
@click.option("--updates", type=click.Path(dir_okay=False, path_type=Path),
              help="route changes to apply at simulated times while traffic runs")
@click.option("--in", "inputs", multiple=True, metavar="PORT=FILE.pcap",
              help="feed a pcap into a port (default: generated traffic on every port)")
@click.option("--out", "outputs", multiple=True, metavar="PORT=FILE.pcap",
              help="write what a port transmits")
@click.option("--count", type=click.IntRange(1, MAX_COUNT), default=500, show_default=True,
              help="generated frames per port (without --in)")
@click.option("--load", type=finite(1, 90), default=50.0, show_default=True,
              help="generated traffic's load, %% of 10GbE line rate")
@click.option("--cycles", type=CYCLES,
              help="chip: simulate this many cycles (default: until the traffic has left "
                   "and every route change was applied)")
@click.option("--counters-json", type=click.Path(dir_okay=False, path_type=Path),
              callback=writable, help="write every counter as JSON")
def run(config: Path | None, program: str, target: str, config_option: Path | None,
        updates: Path | None, inputs: tuple[str, ...], outputs: tuple[str, ...], count: int,
        load: float, cycles: int | None, counters_json: Path | None) -> None:
    """Run the router with its control plane on the traffic and print the counters."""
    if inputs:
        reject_unused({"count", "load"}, "only for the generated traffic (without --in)")
    path = _config_path(program, config, config_option)
    if program == "router4":
        _load_config(path, program, target)      # --target native is refused here
        _run_router4(path, updates, inputs, outputs, count, load, cycles, counters_json)
    else:
        _run_router(path, target, updates, inputs, outputs, count, load, cycles,
                    counters_json)


def _run_router(path: Path, target: str, updates: Path | None, inputs: tuple[str, ...],
                outputs: tuple[str, ...], count: int, load: float, cycles: int | None,
                counters_json: Path | None) -> None:
    """router.mbl with its control plane on `target` (runtime/router_targets.py)."""
    from npkit.runtime import router_run
    from npkit.runtime import router_targets as rt

    if target == "native" and cycles is not None:
        raise NpkitError("--cycles: only for --target chip (the native target runs until "
                         "the traffic is done)")
    cfg = _load_config(path, "router", target)
    changes = router_run.parse_updates(updates) if updates is not None else []
    in_files = parse_port_files(inputs, "--in", ports=MAX_PORT + 1, must_exist=True)
    out_files = parse_port_files(outputs, "--out", ports=MAX_PORT + 1, writes=True)
    rt.check_ports(in_files, cfg, path, "--in")
    rt.check_ports(out_files, cfg, path, "--out")
    frames = rt.read_inputs(in_files)
    chip_router = rt.build_chip_router(cfg, path) if target == "chip" else None
    if not in_files:
        gap = (64 + 20) * 8 / LINE_BPS / (load / 100)
        shape = chip_router or _PortsOnly(cfg)
        frames = sorted((rt.TimedFrame(i * gap, port, data)
                         for port, datas in router_run.demo_traffic(shape, cfg, count).items()
                         for i, data in enumerate(datas)),
                        key=lambda f: (f.time_s, f.port))
    if chip_router is not None:
        result = rt.run_chip(chip_router, frames, changes, cycles)
    else:
        result = rt.run_native(cfg, frames, changes)
    rt.write_outputs(result, out_files)
    console = Console()
    _print_router(console, target, result.counters)
    if target == "chip":
        for report in rt.buffer_leaks(chip_router):
            console.print(f"[yellow]{report.describe()}[/yellow]")
        missing = router_run.unapplied(chip_router, changes)
        if missing:
            console.print(f"[yellow]{missing}[/yellow]")
        if chip_router.records:
            clock = chip_router.chip.config.clock_hz
            worst = max(r.end - r.start for r in chip_router.records) / clock * 1e6
            console.print(f"{len(chip_router.records)} route changes applied, slowest "
                          f"visible after {worst:.2f} µs")
        result.counters["changes"] = [r.__dict__ for r in chip_router.records]
    elif changes:
        console.print(f"{result.counters['changes_applied']} route changes applied")
    if counters_json is not None:
        counters_json.write_text(json.dumps(result.counters, indent=1, default=str),
                                 encoding="utf-8")


class _PortsOnly:
    """What demo_traffic needs of a router (its control plane's ports: number, MAC, IPv4
    interfaces) without building one: the native target builds its router in run_native."""

    def __init__(self, config: Any) -> None:
        self.control = SimpleNamespace(ports=config.ports)


def _print_router(console: Console, target: str, counters: dict[str, Any]) -> None:
    table = Table(title=f"ports (router.mbl, {target})")
    for column in ("port", "rx", "tx", "injected", "exceptions"):
        table.add_column(column, justify="right")
    drops: dict[str, int] = dict(counters.get("drops", {}))
    for port, c in sorted(counters["ports"].items()):
        exceptions = ", ".join(f"{k} {v}" for k, v in sorted(c["exceptions"].items())) or "0"
        for reason, n in c.get("drops", {}).items():
            drops[reason] = drops.get(reason, 0) + n
        table.add_row(str(port), f"{c['rx']:,}", f"{c['tx']:,}", f"{c['injected']:,}",
                      exceptions)
    console.print(table)
    drops.update({k: v for k, v in counters.get("receive_drops", {}).items() if v})
    console.print("dropped: " + (", ".join(f"{k} {v}" for k, v in sorted(drops.items()))
                                 or "none"))
    outcomes = {k: v for k, v in counters["exception_path"].items()
                if not k.startswith("rx.") and v}
    console.print("exception path: " + (", ".join(f"{k} {v}" for k, v in
                                                   sorted(outcomes.items())) or "nothing"))
    if "xscale" in counters:
        console.print(f"XScale: {100 * counters['xscale'].get('utilisation', 0):.1f} % busy")


def _run_router4(config: Path, updates: Path | None, inputs: tuple[str, ...],
                 outputs: tuple[str, ...], count: int, load: float, cycles: int | None,
                 counters_json: Path | None) -> None:
    """The hand-written IPv4 router (router4) on the chip: the baseline."""
    from npkit.runtime import router_run
    from npkit.runtime.chip_router import ChipRouter
    from npkit.runtime.loader import leak_check
    from npkit.sim import ListSource, PcapSink, PcapSource, RxFrame

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
