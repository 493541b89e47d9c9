"""How much the NPF Internet-mix latency moves when a guessed (U-tagged) parameter is halved
or doubled (issue 12, acceptance 2: "where a parameter had to be guessed, the report says
which and by how much it moves the result").

Each variant is the system file with one value scaled: a framer delay of every external
port (``sim/systems/*.toml``) or a chip-config value (``sim/chips/ixp2800.toml``) applied
as the system's chip overrides.  Every variant runs the same trial (same streams, seeds,
routes) on a fresh device; the table gives the average latency, the store-and-forward
average and the fastest frame, and how far the average moved from the base.

    python -m npkit.bench.lab.latency_sensitivity --load 95 --trial-us 1000
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from npkit.runtime.system import SystemSpec

# (name, chip-config section or "framer", key, the value in the shipped files)
U_PARAMETERS: tuple[tuple[str, str, str], ...] = (
    ("framer", "framer", "rx_delay_ns+tx_delay_ns"),
    ("sram.latency", "sram", "latency"),
    ("dram.latency", "dram", "latency"),
    ("scratch.latency", "scratch", "latency"),
    ("msf.autopush_latency", "msf", "autopush_latency"),
    ("msf.csr_latency", "msf", "csr_latency"),
    ("me.branch_taken_penalty", "me", "branch_taken_penalty"),
)
FACTORS = (0.5, 2.0)


@dataclass(frozen=True)
class Variant:
    """One parameter scaled by ``factor`` (``name`` as in ``U_PARAMETERS``)."""

    name: str
    factor: float


@dataclass(frozen=True)
class Outcome:
    variant: Variant | None  # None: the system as shipped
    value: str  # the parameter's value in this run
    avg_ps: float
    lifo_avg_ps: float
    min_ps: float
    received: int
    lost: int


def varied(spec: SystemSpec, variant: Variant) -> tuple[SystemSpec, str]:
    """``spec`` with ``variant`` applied, and the value it ran with (for the table)."""
    _, section, key = next(p for p in U_PARAMETERS if p[0] == variant.name)
    if section == "framer":
        ports = [dataclasses.replace(p, framer=dataclasses.replace(
            p.framer, rx_delay_ns=p.framer.rx_delay_ns * variant.factor,
            tx_delay_ns=p.framer.tx_delay_ns * variant.factor)) for p in spec.ports]
        framer = ports[0].framer
        return (dataclasses.replace(spec, ports=ports),
                f"{framer.rx_delay_ns:g} + {framer.tx_delay_ns:g} ns")
    chips = []
    value = None
    for chip in spec.chips:
        base = spec.chip_config(chip.name).raw[section][key]
        value = type(base)(base * variant.factor) if isinstance(base, int) else \
            base * variant.factor
        overrides = {s: dict(v) for s, v in chip.overrides.items()}
        overrides.setdefault(section, {})[key] = value
        chips.append(dataclasses.replace(chip, overrides=overrides))
    return dataclasses.replace(spec, chips=chips), f"{value:g}"


def run_variant(variant: Variant | None, *, traffic: str = "ipv4", load: float = 95.0,
                trial_ps: int = 1_000_000_000, system: str = "dual-ixp2800-npf",
                routes: tuple[int, int] | None = None) -> Outcome:
    """The Internet-mix trial at ``load`` % of line rate on ``system`` with ``variant``;
    the ``--quick`` NPF preset's route tables, or ``routes`` = (IPv4, IPv6) routes
    generated instead (faster to set up)."""
    from npkit.bench.lab import npf

    chosen = npf.preset("ixp2800-npf", quick=True, system=system)
    if routes is not None:
        chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(*routes, source=""))
    config = dataclasses.replace(chosen.config, trial_ps=trial_ps)
    device: Any = npf.chip_device(chosen)
    value = "as shipped"
    if variant is not None:
        device.spec, value = varied(device.spec, variant)
    label, sizes = next(s for s in config.sizes(traffic, "pos") if s[0] == "imix")
    trials = npf.make_trials(device, config, traffic, label, sizes)
    result = device.run(trials.at(load))
    total = result.report.total
    lat = total.latency
    return Outcome(variant, value, float(lat.avg_ps), float(lat.lifo_avg_ps),
                   float(lat.min_ps), total.received, total.sent - total.received)


def sensitivity(names: Sequence[str] | None = None, **trial: Any) -> list[Outcome]:
    """The base run, then every parameter of ``names`` (default all) halved and doubled."""
    chosen = [p[0] for p in U_PARAMETERS if names is None or p[0] in names]
    out = [run_variant(None, **trial)]
    for name in chosen:
        for factor in FACTORS:
            out.append(run_variant(Variant(name, factor), **trial))
    return out


def markdown(outcomes: Sequence[Outcome]) -> str:
    """The table: per run the value, average / S&F average / fastest, and the move."""
    base = outcomes[0]
    rows = []
    for o in outcomes:
        what = "(as shipped)" if o.variant is None else \
            f"{o.variant.name} × {o.variant.factor:g}"
        rows.append((what, o.value, f"{o.avg_ps / 1e6:.3f}", f"{o.lifo_avg_ps / 1e6:.3f}",
                     f"{o.min_ps / 1e6:.3f}", f"{(o.avg_ps - base.avg_ps) / 1e6:+.3f}",
                     f"{100 * (o.avg_ps / base.avg_ps - 1):+.1f} %", f"{o.lost:,}"))
    header = ("run", "value", "avg µs", "S&F avg µs", "min µs", "avg moved µs",
              "avg moved", "lost")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traffic", default="ipv4", choices=("ipv4", "ipv6", "mixed"))
    parser.add_argument("--load", type=float, default=95.0, help="%% of line rate")
    parser.add_argument("--trial-us", type=float, default=1000.0)
    parser.add_argument("--only", nargs="*", help="parameters to vary (default: all)")
    args = parser.parse_args(argv)
    outcomes = sensitivity(args.only, traffic=args.traffic, load=args.load,
                           trial_ps=int(args.trial_us * 1e6))
    print(markdown(outcomes), end="")


if __name__ == "__main__":
    main()


__all__ = ["FACTORS", "U_PARAMETERS", "Outcome", "Variant", "markdown", "run_variant",
           "sensitivity", "varied"]
