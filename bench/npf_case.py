"""One NPF case at one load on the preset's simulated system: the trials the throughput
search runs there (its own, then its confirmations), each with its loss and RBUF drops.

    python -m npkit.bench.npf_case ipv4 1280 [--load 100] [--trial-us 10000] [--repeats 3]

The case is ``npkit bench npf --preset ixp2800-npf``'s (traffic ipv4 | ipv6 | mixed, size an
NPF IP size or ``imix``; the preset's tables, system and data path), the trials are
``TrialMaker.at(load)`` and ``TrialMaker.repeat(load, k)`` for k = 1 .. repeats - 1 (other
stream seeds, each stream at its own phase): a load passes the search when all of them lose
nothing.  A quick way to check one case of the full preset (a 10 ms trial of a 1,280-byte
case takes ~40 s of host time) without its search, latency and update runs.  Prints one
line per trial (its loss, RBUF drops and average latency); asserts nothing
(docs/datapath.md, "Line rate with frames of several elements").
"""

from __future__ import annotations

import argparse
import sys
import time

from npkit.bench.lab.npf import chip_device, make_trials, preset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traffic", choices=("ipv4", "ipv6", "mixed"))
    parser.add_argument("size", help="an NPF IP size of the preset, or imix")
    parser.add_argument("--load", type=float, default=100.0, help="% of line rate")
    parser.add_argument("--trial-us", type=float, default=10_000.0)
    parser.add_argument("--repeats", type=int, default=3, help="the trial and k - 1 "
                        "confirmations")
    args = parser.parse_args(argv)
    npf = preset("ixp2800-npf", trial_ps=round(args.trial_us * 1e6))
    config = npf.config
    cases = dict(config.sizes(args.traffic, "pos"))
    if args.size not in cases:
        print(f"size {args.size}: the preset has {', '.join(cases)}", file=sys.stderr)
        return 2
    device = chip_device(npf)
    trials = make_trials(device, config, args.traffic, args.size, cases[args.size])
    lost_any = False
    for k in range(args.repeats):
        trial = trials.at(args.load) if k == 0 else trials.repeat(args.load, k)
        start = time.monotonic()
        result = device.run(trial)
        total = result.report.total
        drops = {name: int(v) for name, v in result.counters.items()
                 if name.startswith("rx.rx_dropped") and v}
        lost_any |= total.lost > 0
        latency = total.latency
        avg = f", latency avg {latency.total_ps / latency.count / 1e6:.2f} us" \
            if latency.count else ""
        print(f"{trial.label}: sent {total.sent}, received {total.received}, lost "
              f"{total.lost}{avg} {drops or ''} ({time.monotonic() - start:.0f} s)",
              flush=True)
    print(f"{args.traffic} {args.size} at {args.load:g} %: "
          f"{'loss' if lost_any else 'no loss'} in {args.repeats} trials of "
          f"{args.trial_us:g} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
