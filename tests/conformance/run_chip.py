"""Every probe of at most 1,514 bytes through the compiled router on the chip and through
Linux (CI runs a quarter): prints the differences by rule, every unexplained one, and the
chip's receive drops and exception-path counters.

    .venv/bin/python tests/conformance/run_chip.py [--load 0.005] [--every 1]

Needs root and `ip netns`, as the CI test.  docs/conformance.md ("Not covered yet") has
the figures of a run."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # as a script

from probes import probes  # noqa: E402
from run_both import CHIP_MAX_FRAME, CONFIG, chip_side, differences, linux_side  # noqa: E402
from test_linux_differential import explain  # noqa: E402

from npkit.runtime.router_config import RouterConfig  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=0.005,
                        help="offered load per port, x line rate (default 0.005)")
    parser.add_argument("--every", type=int, default=1, help="every n-th probe (CI: 4)")
    args = parser.parse_args(argv)
    from scapy.layers.l2 import Ether

    config = RouterConfig.load(CONFIG)
    items = [p for p in probes() if len(p.frame) <= CHIP_MAX_FRAME][::args.every]
    start = time.monotonic()
    linux = linux_side(config, items)
    counters: dict = {}
    ours = chip_side(config, items, load=args.load, counters=counters)
    diffs = differences(items, linux, ours)
    print(f"{len(items)} probes at {args.load:g} x line rate, {len(diffs)} differences "
          f"({time.monotonic() - start:.0f} s)")
    for rule, count in Counter(explain(d) or "UNEXPLAINED" for d in diffs).most_common():
        print(f"  {count:4d}  {rule}")
    print("receive drops:", counters.get("receive_drops"))
    print("drops:", counters.get("drops"))
    unexplained = [d for d in diffs if explain(d) is None]
    for d in unexplained:
        print(f"[{d.probe.cls}] port {d.probe.port} {Ether(d.probe.frame).summary()}\n"
              f"    {d.describe()}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
