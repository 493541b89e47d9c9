"""``npkit run`` with no arguments: the product in one command (bench/lab/showcase.py runs
it; this module prints what it measured and where the files are)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from rich.console import Console
from rich.table import Table

from npkit.base.errors import NpkitError

DEFAULT_OUT_DIR = "npkit-run"


def _drop_label(key: str) -> str:
    """A loss counter as a person reads it: the chip counts receive drops per port with the
    port number at the end (``rx.rx_dropped_rbuf_full1``: port 1)."""
    name = key.removeprefix("rx.")
    port = re.fullmatch(r"(rx_dropped_\w+?)(\d+)", name)
    return f"{port[1]} (port {port[2]})" if port else name


def _us(ps: float | None) -> str:
    return "-" if ps is None else f"{ps / 1e6:.2f} µs"


SHOWCASE_OPTIONS = ("--seed", "--trace", "--out-dir")


def check_options(given: list[str]) -> None:
    """The run options the showcase does not take (``given``: as typed, e.g. --cycles) must
    not be given: a user who gives --cycles to `npkit run` without a program is told, not
    ignored."""
    given = sorted(k for k in given if k not in SHOWCASE_OPTIONS)
    if given:
        names = ", ".join(given)
        raise NpkitError(f"{names}: npkit run without a program runs the showcase, which "
                         "takes only --out-dir, --seed and --trace; give a program to run")


def _unit(name: str) -> str:
    """me18 -> ME 0x12 (the counters name MEs by hardware number)."""
    if name.startswith("me") and name[2:].isdigit():
        return f"ME {int(name[2:]):#04x}"
    return name


def run_showcase(console: Console, out_dir: Path, seed: int | None = None,
                 trace: Path | None = None) -> None:
    """Run the showcase and print throughput, loss, latency, the busiest units and the
    files written."""
    from npkit.bench.lab.showcase import ShowcaseConfig
    from npkit.bench.lab.showcase import run_showcase as run_trial

    config = ShowcaseConfig(seed=seed or 1)
    console.print(
        "[bold]npkit[/bold]: the MBL dual-stack router (examples/pos_router) compiled for the "
        "simulated IXP2800, 2 x OC-192 POS, "
        f"{config.routes.v4_routes:,} IPv4 + {config.routes.v6_routes:,} IPv6 routes; "
        f"{config.frames_per_port:,} packets a port (Internet mix 40/576/1500 B, "
        f"{100 * (1 - config.v6_share):.0f} % IPv4) at {config.load_percent:g} % of line rate, "
        "both directions")
    with console.status("compiling, linking and simulating ..."):
        result = run_trial(out_dir, config)
    rate = result.rate
    table = Table(title="the router under load", show_header=False)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("offered", f"{rate.offered_ip_gbps:.2f} Gb/s of IP "
                             f"(line {result.line_gbps:.2f} Gb/s)")
    table.add_row("forwarded", f"{rate.forwarded_ip_gbps:.2f} Gb/s of IP, "
                               f"{rate.forwarded_pps / 1e6:.2f} Mpps")
    loss = 100 * rate.lost / rate.sent if rate.sent else 0.0
    table.add_row("packets", f"{rate.sent:,} sent, {rate.received:,} forwarded, "
                             f"{rate.lost:,} lost ({loss:.2f} %)")
    low, avg, high = result.latency_ps
    table.add_row("latency", f"min {_us(low)}, avg {_us(avg)}, max {_us(high)}")
    console.print(table)
    busy = ", ".join(f"{_unit(unit)} {100 * share:.0f} %" for unit, share in result.busiest)
    console.print(f"busiest units: {busy}")
    if result.drops:
        console.print("where packets went instead: " + ", ".join(
            f"{_drop_label(k)} {v:,.0f}" for k, v in sorted(result.drops.items())))
    files = result.files
    graph = _rendered(files.graph)
    console.print(f"files in {out_dir}/: in-port0/1.pcap (sent), out-port0/1.pcap (forwarded; "
                  "PPP in HDLC framing, open with Wireshark)"
                  + (f", {files.trace.name} (thread timeline of the first "
                     f"{config.trace_us:g} µs: https://ui.perfetto.dev)" if files.trace else "")
                  + f", {graph.name} (the pipeline on the MEs)")
    if trace is not None and files.trace is not None:
        shutil.copyfile(files.trace, trace)
    console.print("next: `npkit run --help`, `npkit build examples/pos_router/pos_router.mbl "
                  "--report`, docs/cli.md")


def _rendered(dot_file: Path) -> Path:
    """The graph as SVG when Graphviz is installed, else the DOT file."""
    dot = shutil.which("dot")
    if dot is None:
        return dot_file
    svg = dot_file.with_suffix(".svg")
    done = subprocess.run([dot, "-Tsvg", "-o", str(svg), str(dot_file)], check=False,
                          capture_output=True)
    return svg if done.returncode == 0 else dot_file
