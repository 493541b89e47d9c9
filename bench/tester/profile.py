"""Host time per frame of the tester's parts on one ``ixp2800-npf --quick`` trial.

    python -m npkit.bench.tester.profile [--size 40] [--traffic ipv4] [--runs 3]

builds the preset's device (2 x OC-192 POS, pos_router, the sampled tables), makes the
IPv4 40-byte trial at 100 % and times generation, the chip run (feed, ``Chip.run``, drain)
and the analysis separately (``time.perf_counter``, mean of ``--runs``), printing each
part per trial and per frame sent (docs/performance.md, "Tester").
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> None:
    from npkit.bench.lab import devices
    from npkit.bench.lab.npf import chip_device, make_trials, preset
    from npkit.bench.tester import Analyzer, Sizes, generate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=40, help="IP bytes (0: IMIX)")
    parser.add_argument("--traffic", default="ipv4", choices=("ipv4", "ipv6", "mixed"))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)

    npf = preset(quick=True)
    device = chip_device(npf)
    device.prepare()
    sizes = Sizes.fixed(args.size) if args.size else Sizes.imix(clamp=True)
    trial = make_trials(device, npf.config, args.traffic, str(args.size), sizes).at(100.0)
    spent: dict[str, float] = {}

    def clock(name: str, work: Callable[..., Any], *call: Any) -> Any:
        start = time.perf_counter()
        out = work(*call)
        spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return out

    sent = received = 0
    for _ in range(args.runs):
        traffic = clock("generation", generate, trial.streams, device.ports)
        loaded = device._load()
        rx, _, _ = clock("run (feed + Chip.run + drain)", devices._run_trial, loaded, traffic,
                         trial.settle_ps, device.ports)
        analyzer = Analyzer(device.ports, device.reference, device.options.latency_bin_ps)
        clock("analysis", analyzer.analyze, traffic.records(), rx)
        sent, received = traffic.count(), len(rx)
    print(f"{args.traffic} {args.size or 'IMIX'} B at 100 %: {sent} frames sent, "
          f"{received} received; mean of {args.runs}")
    for name, seconds in spent.items():
        mean = seconds / args.runs
        print(f"  {name:32s} {mean * 1e3:8.1f} ms  {mean / max(1, sent) * 1e6:7.2f} us/frame")


if __name__ == "__main__":
    main()
