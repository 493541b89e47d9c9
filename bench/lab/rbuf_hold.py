"""How long the receive path holds RBUF elements in one NPF trial (docs/link.md, "SRAM
placement"): a frame lost to a full RBUF means the elements of the frames before it were
still allocated when it came.

    python -m npkit.bench.lab.rbuf_hold pool-mbl mixed 128 100      # load % (":k" = the
    python -m npkit.bench.lab.rbuf_hold pool-mbl mixed 128 100:1    #  k-th confirmation)

Runs the full ``ixp2800-npf`` preset's trial (10 ms) with the core's frame log following
port 0 of the first chip (observation only: the simulated results are the trial's), then
per frame of two or more elements: the cycles from its first element to its last element
freed (percentiles), the frames lost to a full RBUF, each SRAM channel's mean command
latency inside those spans, and the trial's busiest units (busy fraction; the NPF run's
``counters_at_full_load`` at 100 %).  The budget is the port's elements times the frame interval at
line rate over the elements a frame takes."""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from npkit.bench.lab import npf
from npkit.bench.lab.unit_use import busiest_units
from npkit.sim.packet_trace import Journey, Selection, journeys


@dataclass(frozen=True)
class HoldStats:
    frames: int
    percentiles: dict[str, float]       # "p50", "p99", "p99.9", "max" -> cycles
    rbuf_drops: int
    unit_latency: dict[str, float]      # "sram2:sram[dequeue]" -> mean cycles


def hold_stats(frames: dict[int, Journey]) -> HoldStats:
    """Element hold times of ``frames`` (journeys of one port)."""
    holds = []
    latency: dict[str, list[int]] = defaultdict(list)
    drops = 0
    for j in frames.values():
        drops += j.rbuf_drop
        allocated = [h.cycle for h in j.hops if h.kind == "element"]
        freed = [h.cycle for h in j.hops if h.kind == "element_free"]
        if len(allocated) < 2 or len(freed) != len(allocated):
            continue
        start, end = allocated[0], max(freed)
        holds.append(end - start)
        for h in j.hops:
            if h.kind == "command" and h.unit.startswith("sram") and start <= h.cycle < end:
                latency[f"{h.unit}:{h.op}"].append(h.end - h.cycle)
    spans = np.array(holds or [0])
    cuts = {"p50": 50.0, "p99": 99.0, "p99.9": 99.9}
    out = {k: float(np.percentile(spans, q)) for k, q in cuts.items()}
    out["max"] = float(spans.max())
    return HoldStats(len(holds), out, drops,
                     {k: float(np.mean(v)) for k, v in sorted(latency.items())})


def trial_journeys(data_path: str, traffic: str, size: str, spec: str
                   ) -> tuple[dict[int, Journey], Any]:
    """The journeys of the first chip's port 0 in one trial, and the trial's result."""
    chosen = npf.preset("ixp2800-npf", data_path=data_path)
    device = npf.chip_device(chosen)
    sizes = dict(chosen.config.sizes(traffic, "pos"))[size]
    trials = npf.make_trials(device, chosen.config, traffic, size, sizes)
    load, _, k = spec.partition(":")
    trial = trials.repeat(float(load), int(k)) if k and int(k) else trials.at(float(load))
    kept: dict[str, Any] = {}
    watch, take = device.coverage_watch, device.coverage_take

    def watching(chips: list[Any]) -> None:
        kept["chip"] = chips[0]
        kept["log"] = chips[0].enable_frame_log(Selection(ports=(0,), max_events=1 << 24))
        watch(chips)

    def taking(chips: list[Any]) -> None:
        take(chips)
        log = kept["log"]
        kept["frames"] = journeys(log.events(), list(log.status()["units"]))
        kept["chip"].disable_frame_log()

    device.coverage_watch, device.coverage_take = watching, taking
    try:
        result = device.run(trial)
    finally:
        device.coverage_watch, device.coverage_take = watch, take
    return kept["frames"], result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_path", choices=("pool", "pool-mbl", "rings"))
    parser.add_argument("traffic", choices=("ipv4", "ipv6", "mixed"))
    parser.add_argument("size", help="an IP size of the preset, or imix")
    parser.add_argument("load", help="% of line rate, ':k' for the k-th confirmation")
    args = parser.parse_args(argv)
    start = time.time()
    frames, result = trial_journeys(args.data_path, args.traffic, args.size, args.load)
    stats = hold_stats(frames)
    print(f"{args.data_path} {args.traffic} {args.size} at {args.load}: sent "
          f"{result.report.total.sent} lost {result.report.total.lost}; first chip port 0: "
          f"{stats.rbuf_drops} lost to a full RBUF; element hold over {stats.frames:,} frames "
          + ", ".join(f"{k} {v:,.0f}" for k, v in stats.percentiles.items()) + " cycles")
    print("busiest units: " + ", ".join(f"{n} {b:.3f}"
                                        for n, b in busiest_units(result.counters, 8)))
    for unit, cycles in stats.unit_latency.items():
        print(f"  {unit:24s} mean latency {cycles:.1f} cycles")
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
