"""The measured side of the line-rate verdict (docs/verdict.md): for one data path of the NPF
system (``dual-ixp2800-npf``) and each IPv4 size given, the ``--quick`` preset's confirmed
throughput search (0.1 ms trials confirmed by 2, 2 % resolution) and one trial at 100 % of
line rate with its busiest units (``unit_use.busiest_units``), its most occupied units
beyond what each is occupied in a trial at 0.1 % of line rate (an ME: busy + stalled; a
polling ME is busy without traffic), and losses by reason.

    python -m npkit.bench.lab.verdict_runs rings 40 64 128
    python -m npkit.bench.lab.verdict_runs pool-mbl 40 64 128    # or pool
    python -m npkit.bench.lab.verdict_runs --fwd-mes 2 rings 40 64   # rings, 2 forwarding MEs
    python -m npkit.bench.lab.verdict_runs --ipv6 --fwd-mes 4 rings 60   # IPv6 sizes

One line per size, the figures the verdict's test pins (tests/bench/lab/test_verdict.py).
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from npkit.bench.lab import npf
from npkit.bench.lab.search import search_throughput
from npkit.bench.lab.unit_use import busiest_units


def occupancy(counters: dict[str, float]) -> dict[str, float]:
    """Per unit, the share of cycles it was occupied: a channel's busy fraction; an ME's
    busy + stalled fraction (a taken branch's lost cycles and command-FIFO stalls hold the
    ME as an instruction does: the verdict's C counts them)."""
    out = {}
    for key, value in counters.items():
        if key.endswith(".busy_fraction") and ".fwd." not in f".{key}":
            unit = key.removesuffix(".busy_fraction")
            out[key] = float(value) + float(counters.get(f"{unit}.stall_fraction", 0.0))
    return out


def measure(data_path: str, size: int, fwd_mes: int | None = None,
            traffic: str = "ipv4") -> str:
    chosen = npf.preset("ixp2800-npf", quick=True, data_path=data_path)
    field = "sizes_v6" if traffic == "ipv6" else "sizes_v4"
    config = replace(chosen.config, **{field: (size,)})
    device = npf.chip_device(chosen, **({} if fwd_mes is None else {"chip_fwd_mes": fwd_mes}))
    sizes = dict(config.sizes(traffic, "pos"))[str(size)]
    trials = npf.make_trials(device, config, traffic, str(size), sizes)
    found = search_throughput(device, trials.at, config.lower_percent, 100.0,
                              config.resolution_percent, repeats=config.confirm_trials,
                              repeat_at=trials.repeat)
    full = device.run(trials.at(100.0))
    idle = device.run(trials.at(0.1)).counters
    worked = {k: v - occupancy(idle).get(k, 0.0) for k, v in occupancy(full.counters).items()}
    losses = {k: int(v) for k, v in full.counters.items()
              if (k.startswith("rx.") or k.startswith("drop.")) and v}
    name = data_path if fwd_mes is None else f"{data_path} fwd_mes={fwd_mes}"
    return (f"{name} {traffic} {size}: throughput {found.throughput_percent} %; at 100 %: "
            f"sent {full.report.total.sent} lost {full.report.total.lost} {losses}; busiest "
            f"{tuple((n, round(b, 3)) for n, b in busiest_units(full.counters, 6))}; beyond "
            f"idle (occupied) {tuple((n, round(b, 3)) for n, b in busiest_units(worked, 6))}")


def main(argv: list[str]) -> None:
    start = time.time()
    fwd_mes, traffic = None, "ipv4"
    if argv[:1] == ["--ipv6"]:
        traffic, argv = "ipv6", argv[1:]
    if argv[:1] == ["--fwd-mes"]:
        fwd_mes, argv = int(argv[1]), argv[2:]
    data_path, *sizes = argv or ["rings", "40", "64", "128"]
    for size in sizes:
        print(measure(data_path, int(size), fwd_mes, traffic), f"({time.time() - start:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
