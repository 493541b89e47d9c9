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

import ipaddress
import json
import random
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "examples" / "router4" / "control.toml"
LINE_BPS = 10e9
SETTLE_CYCLES = 400_000        # after the last frame: exceptions polled, replies sent


@dataclass(frozen=True)
class TimedChange:
    line: int
    time_us: float
    op: str
    prefix: str
    gateway: str | None


def parse_updates(path: Path) -> list[TimedChange]:
    """The update file; errors name the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"cannot read {path}: {exc}") from None
    changes: list[TimedChange] = []
    for number, text in enumerate(lines, 1):
        words = text.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        try:
            time_us = float(words[0])
        except ValueError:
            raise click.ClickException(f"{where}: {words[0]!r} is not a time in µs "
                                       "(lines are: TIME_US add PREFIX via GATEWAY | "
                                       "TIME_US delete PREFIX)") from None
        if time_us < 0 or (changes and time_us < changes[-1].time_us):
            raise click.ClickException(f"{where}: times must be >= 0 and in order")
        if len(words) == 5 and words[1] == "add" and words[3] == "via":
            change = TimedChange(number, time_us, "add", words[2], words[4])
        elif len(words) == 3 and words[1] == "delete":
            change = TimedChange(number, time_us, "delete", words[2], None)
        else:
            raise click.ClickException(f"{where}: expected 'TIME_US add PREFIX via GATEWAY' "
                                       f"or 'TIME_US delete PREFIX', got {text.strip()!r}")
        try:
            ipaddress.ip_network(change.prefix, strict=True)
            if change.gateway is not None:
                ipaddress.ip_address(change.gateway)
        except ValueError as exc:
            raise click.ClickException(f"{where}: {exc}") from None
        changes.append(change)
    return changes


def _ipv4_frame(src_mac: bytes, dst_mac: bytes, src: int, dst: int, ttl: int, ident: int,
                payload: bytes, protocol: int = 17) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0, ttl,
                         protocol, 0, src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    total = sum(struct.unpack("!10H", header))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    frame = dst_mac + src_mac + b"\x08\x00" + header + payload
    return frame + bytes(max(0, 60 - len(frame)))


def demo_traffic(router: Any, config: Any, count: int, seed: int = 1) -> dict[int, list[bytes]]:
    """Frames for each port, from a configured IPv4 neighbour on it (so ICMP finds its way
    back): UDP to routed destinations, every 50th with TTL 1, and every 50th (offset) an
    ICMP echo request to the router's address on that port."""
    rng = random.Random(seed)
    frames: dict[int, list[bytes]] = {}
    for port in router.control.ports:
        mac = port.mac.to_bytes(6, "big")
        own = int(port.ipv4[0].ip) if port.ipv4 else None
        peers = [n for n in config.neighbours if n.port == port.port and n.ip.version == 4]
        source = int(peers[0].ip) if peers else 0xC6120001
        peer = (peers[0].mac if peers else 0x020000EE0000 | port.port).to_bytes(6, "big")
        out = []
        for i in range(count):
            if own is not None and i % 50 == 25:
                echo = struct.pack("!BBHHH", 8, 0, 0, i, 1) + b"npkit ping"
                echo = echo[:2] + struct.pack("!H", _checksum(echo)) + echo[4:]
                out.append(_ipv4_frame(peer, mac, source, own, 64, i, echo, protocol=1))
                continue
            dst = rng.choice((0x0A000000, 0x14000000, 0x2D000000)) | rng.getrandbits(24)
            ttl = 1 if i % 50 == 0 else 64
            out.append(_ipv4_frame(peer, mac, source, dst, ttl, i,
                                   struct.pack("!HHHH", 1024 + i, 9, 26, 0) + bytes(18)))
        frames[port.port] = out
    return frames


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data[:len(data) // 2 * 2]))
    if len(data) % 2:
        total += data[-1] << 8
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _load_config(path: Path) -> Any:
    from npkit.runtime.router_config import RouterConfig, RouterConfigError

    try:
        return RouterConfig.load(path)
    except RouterConfigError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def router() -> None:
    """The IPv4 router microcode on the simulated chip, with its control plane."""


@router.command()
@click.argument("config", type=click.Path(dir_okay=False, path_type=Path),
                default=DEFAULT_CONFIG)
def check(config: Path) -> None:
    """Check a router config and print its ports, neighbours and routes."""
    cfg = _load_config(config)
    console = Console()
    table = Table(title=f"ports ({config})")
    for column in ("port", "MAC", "IPv4", "IPv6", "MTU"):
        table.add_column(column)
    from npkit.runtime.neighbours import mac_to_str

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
@click.option("--count", type=click.IntRange(min=1), default=500, show_default=True,
              help="generated frames per port (without --in)")
@click.option("--load", type=click.FloatRange(1, 90), default=50.0, show_default=True,
              help="generated traffic's load, %% of 10GbE line rate")
@click.option("--cycles", type=click.IntRange(min=1),
              help="simulate this many cycles (default: until the traffic has left)")
@click.option("--counters-json", type=click.Path(dir_okay=False, path_type=Path),
              help="write every counter as JSON")
def run(config: Path, updates: Path | None, inputs: tuple[str, ...], outputs: tuple[str, ...],
        count: int, load: float, cycles: int | None, counters_json: Path | None) -> None:
    """Run the router with its control plane in simulated time and print the counters."""
    from npkit.runtime.chip_router import ChipRouter
    from npkit.runtime.loader import leak_check
    from npkit.sim import ListSource, PcapSink, PcapSource, RxFrame

    cfg = _load_config(config)
    changes = parse_updates(updates) if updates is not None else []
    chip_router = ChipRouter()
    try:
        chip_router.configure(cfg)
    except ValueError as exc:
        raise click.ClickException(f"{config}: {exc}") from None
    chip, ports = chip_router.chip, len(chip_router.chip.config.ports)
    in_files = dict(_port_file(s, "--in", ports) for s in inputs)
    out_files = dict(_port_file(s, "--out", ports) for s in outputs)
    frames_in = 0
    if in_files:
        for port, path in in_files.items():
            chip.attach_source(port, PcapSource(path))
    else:
        gap = (64 + 20) * 8 / LINE_BPS / (load / 100)
        for port, frames in demo_traffic(chip_router, cfg, count).items():
            chip.attach_source(port, ListSource([RxFrame(f, time_s=i * gap)
                                                 for i, f in enumerate(frames)]))
            frames_in += len(frames)
    sinks = {}
    for port, path in out_files.items():
        sinks[port] = PcapSink(path)
        chip.attach_sink(port, sinks[port])
    clock = chip.config.clock_hz
    for change in changes:
        chip_router.at(int(change.time_us * 1e-6 * clock), _change_fn(change, config),
                       label=f"line {change.line}")
    console = Console()
    try:
        if cycles is not None:
            chip_router.run(cycles)
        else:
            last_change = int(changes[-1].time_us * 1e-6 * clock) if changes else 0
            while True:
                chip_router.run(200_000)
                fed = chip.frames_fed
                drained = all(chip.ring_state(r)["count"] == 0 for r in range(8)
                              if chip.ring_state(r)["configured"])
                if chip.now > last_change and drained and (
                        not frames_in or sum(fed.values()) >= frames_in) and _idle(chip):
                    break
            chip_router.run(SETTLE_CYCLES)
    except ValueError as exc:  # a change the control plane refuses (e.g. unknown route)
        raise click.ClickException(str(exc)) from None
    finally:
        chip.close_sinks()
        for sink in sinks.values():
            sink.close()
    counters = chip_router.counters()
    _print(console, chip_router, counters)
    leaks = [r for r in leak_check(chip_router.loaded) if not r.ok]
    for report in leaks:
        console.print(f"[yellow]{report.describe()}[/yellow]")
    if counters_json is not None:
        counters["changes"] = [r.__dict__ for r in chip_router.records]
        counters_json.write_text(json.dumps(counters, indent=1, default=str), encoding="utf-8")


def _idle(chip: Any) -> bool:
    ports = chip.counters()["ports"]
    return all(int(p.get("tbuf_elements_queued", 0)) == 0 for p in ports)


def _port_file(spec: str, option: str, ports: int) -> tuple[int, Path]:
    port, sep, path = spec.partition("=")
    if not sep or not port.isdigit() or not path:
        raise click.BadParameter(f"{spec!r}: expected PORT=FILE, e.g. 0=in.pcap",
                                 param_hint=option)
    if int(port) >= ports:
        raise click.BadParameter(f"port {port} does not exist: the router has ports "
                                 f"0..{ports - 1}", param_hint=option)
    if option == "--in" and not Path(path).is_file():
        raise click.BadParameter(f"{path}: no such file", param_hint=option)
    return int(port), Path(path)


def _change_fn(change: TimedChange, config: Path) -> Any:
    def apply(control: Any) -> None:
        try:
            if change.op == "delete":
                control.delete_route(change.prefix)
                return
            ports = control.ports.connected(change.gateway)
            if not ports:
                raise ValueError(f"gateway {change.gateway} is on none of the ports' subnets")
            control.add_route(change.prefix,
                              control.neighbours.next_hop_for(ports[0], change.gateway))
        except ValueError as exc:
            raise ValueError(f"update line {change.line}: {exc}") from None
    return apply


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
