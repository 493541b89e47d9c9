"""The runs behind docs/system.md, "Latency": one frame of each size through the idle
two-chip system split by component, and the Internet mix at % of line rate split by
component (``latency_parts``), as Markdown tables.

    python -m npkit.bench.lab.latency_runs frames --traffic ipv4 --sizes 40 576 1500
    python -m npkit.bench.lab.latency_runs rows --trial-us 1000

Both use the ``--quick`` NPF preset on ``dual-ixp2800-npf``; ``frames`` with 3,000 IPv4 /
400 IPv6 generated routes (one frame needs one route), ``rows`` with the preset's tables.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from npkit.bench.lab.latency_parts import FrameParts, latency_parts, line_wait_ps, one_frame
from npkit.bench.lab.report_parts import table

LOADS = (100.0, 95.0, 90.0, 50.0)


def _device(routes: tuple[int, int] | None) -> tuple[Any, Any]:
    from npkit.bench.lab import npf

    chosen = npf.preset("ixp2800-npf", quick=True)
    if routes is not None:
        chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(*routes, source=""))
    return chosen, npf.chip_device(chosen)


def frames(traffic: str, sizes: Sequence[int]) -> list[FrameParts]:
    """One frame of each size (IP bytes) from pos0 through the idle system."""
    from npkit.bench.lab import npf
    from npkit.bench.tester import Sizes

    chosen, device = _device((3_000, 400))
    out = []
    for size in sizes:
        trials = npf.make_trials(device, chosen.config, traffic, str(size),
                                 Sizes.fixed(size), flows=((0, 1),))
        stream = dataclasses.replace(trials.at(1).streams[0], count=1, duration_ps=None,
                                     start_ps=20_000_000)
        out.append(one_frame(device, stream))
    return out


def frames_markdown(traffic: str, parts: Sequence[FrameParts]) -> str:
    def us(ps: float) -> str:
        return f"{ps / 1e6:.3f}"

    rows = [(traffic, p.size, us(p.line_in), us(p.framer_rx), us(p.rbuf),
             us(p.me_executing), us(p.me_waiting), us(p.framer_tx), us(p.line_out),
             us(p.chip), us(p.total()), us(p.measured)) for p in parts]
    return table(("family", "frame bytes", "line in", "framer rx", "RBUF", "ME executing",
                  "ME waiting", "framer tx", "line out", "chip", "total", "measured"), rows)


def rows(trial_ps: int, traffics: Sequence[str] = ("ipv4", "ipv6"),
         loads: Sequence[float] = LOADS) -> str:
    """The Internet mix at each load: the measured latency and its parts (µs)."""
    from npkit.bench.lab import npf
    from npkit.bench.tester import generate

    chosen, device = _device(None)
    config = dataclasses.replace(chosen.config, trial_ps=trial_ps)
    described = device.describe()
    out = []
    for traffic in traffics:
        label, sizes = next(s for s in config.sizes(traffic, "pos") if s[0] == "imix")
        trials = npf.make_trials(device, config, traffic, label, sizes)
        for load in loads:
            trial = trials.at(load)
            total = device.run(trial).report.total
            lat = total.latency
            # the traffic's own wait for the output line (the trial's frames, regenerated)
            line = line_wait_ps(generate(trial.streams, device.ports).records(),
                                device.ports, dict(trials.flows)) / 1e6
            point = SimpleNamespace(load_percent=load, avg_ps=lat.avg_ps,
                                    lifo_avg_ps=lat.lifo_avg_ps, lifo_min_ps=lat.lifo_min_ps)
            parts = latency_parts(described, point)
            if parts is None:
                continue
            out.append((traffic, f"{load:g} %", f"{parts.average:.2f}",
                        f"{lat.min_ps / 1e6:.2f}", f"{lat.max_ps / 1e6:.2f}",
                        f"{parts.line:.2f}", f"{parts.framer:.2f}", f"{parts.link:.2f}",
                        f"{parts.chip:.2f}", f"{parts.queueing:.2f}", f"{line:.2f}",
                        f"{parts.queueing - line:.2f}",
                        f"{total.sent - total.received:,} of {total.sent:,}"))
    return table(("family", "of line rate", "avg", "min", "max", "line", "framer", "link",
                  "chip", "queueing", "of it: output line (ideal S&F)", "of it: in the chip",
                  "lost"), out)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    one = sub.add_parser("frames", help="one idle frame per size")
    one.add_argument("--traffic", default="ipv4", choices=("ipv4", "ipv6"))
    one.add_argument("--sizes", type=int, nargs="+", default=[40, 576, 1500])
    mix = sub.add_parser("rows", help="the Internet mix at 100/95/90/50 %% of line rate")
    mix.add_argument("--trial-us", type=float, default=1000.0)
    args = parser.parse_args(argv)
    if args.what == "frames":
        print(frames_markdown(args.traffic, frames(args.traffic, args.sizes)), end="")
    else:
        print(rows(int(args.trial_us * 1e6)), end="")


if __name__ == "__main__":
    main()


__all__ = ["LOADS", "frames", "frames_markdown", "main", "rows"]
