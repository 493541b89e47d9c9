"""What chip snapshots cost on the NPF preset's chip (docs/sim-core.md, "Snapshot and
restore"): the compiled POS router with the ixp2800-npf tables loaded, then

- ``fresh``: loading the program and tables on a new chip and running one IPv4 40-byte
  trial at 90 % of line rate (``--trial-us`` of traffic) on it -- what every trial paid
  before snapshots (the second load, after one that may build what the device caches),
- ``snapshot``: Chip.snapshot() of another loaded chip, once,
- ``trial`` and ``restore``: the same trial on that chip and Chip.restore() after it
  (medians of ``--repeat`` pairs); every trial must give the fresh chip's frames.

    python -m npkit.bench.snapshot_cost [--trial-us 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from npkit.bench.lab.npf import chip_device, make_trials, preset
from npkit.bench.tester.stream import Sizes


@dataclass(frozen=True)
class Costs:
    fresh_s: float
    fresh_trial_s: float
    snapshot_s: float
    snapshot_held_bytes: int
    trial_s: list[float]
    restore_s: list[float]
    frames_per_trial: int
    max_rss_bytes: int


def _frames(result: Any) -> list[tuple[int, int, bytes]]:
    return [(r.port, r.time_ps, r.data) for r in result.received]


def measure(trial_us: float, repeat: int) -> Costs:
    npf = preset("ixp2800-npf", quick=True, trial_ps=int(trial_us * 1e6))
    device: Any = chip_device(npf)
    device.prepare()  # program, tables, reference: built once, not measured here
    device._load()  # the first load may still build what the device caches (not measured)
    trial = make_trials(device, npf.config, "ipv4", "40 B", Sizes.fixed(40)).at(90.0)
    # before snapshots: every trial on a fresh chip (twice: the first trial also warms the
    # tester's caches; the second is timed)
    for _ in range(2):
        start = time.perf_counter()
        fresh = device._load()
        fresh_s = time.perf_counter() - start
        start = time.perf_counter()
        first = _frames(device._trial_on(fresh, trial, _traffic(device, trial)))
        fresh_trial_s = time.perf_counter() - start
        del fresh
    # with snapshots: one chip, restored after every trial
    loaded = device._load()
    chip = loaded.chip
    start = time.perf_counter()
    snap = chip.snapshot()
    snapshot_s = time.perf_counter() - start
    trial_s, restore_s = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        result = device._trial_on(loaded, trial, _traffic(device, trial))
        trial_s.append(time.perf_counter() - start)
        if _frames(result) != first:
            raise SystemExit("snapshot_cost: a trial on the restored chip gave other frames")
        start = time.perf_counter()
        chip.restore(snap)
        restore_s.append(time.perf_counter() - start)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return Costs(fresh_s, fresh_trial_s, snapshot_s, snap.held_bytes, trial_s, restore_s,
                 len(first), rss)


def _traffic(device: Any, trial: Any) -> Any:
    from npkit.bench.tester.generator import generate

    return generate(trial.streams, device.ports)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trial-us", type=float, default=20.0,
                        help="simulated microseconds of traffic per trial (default 20)")
    parser.add_argument("--repeat", type=int, default=5, help="trial + restore pairs")
    args = parser.parse_args(argv)
    c = measure(args.trial_us, args.repeat)
    ms = 1e3
    trial, restore = statistics.median(c.trial_s), statistics.median(c.restore_s)
    print(f"fresh chip with the tables:                 {c.fresh_s * ms:9.1f} ms")
    print(f"trial ({args.trial_us:g} us, {c.frames_per_trial} frames received) on it:"
          f"          {c.fresh_trial_s * ms:9.1f} ms")
    print(f"snapshot of a loaded chip (once):           {c.snapshot_s * ms:9.1f} ms"
          f"  (holds {c.snapshot_held_bytes / 2**20:.1f} MiB)")
    print(f"trial on the snapshotted chip, median of {len(c.trial_s)}: {trial * ms:9.1f} ms"
          f"  (same frames as on the fresh chip)")
    print(f"restore after a trial, median of {len(c.restore_s)}:        {restore * ms:9.2f} ms"
          f"  (min {min(c.restore_s) * ms:.2f}, max {max(c.restore_s) * ms:.2f})")
    print(f"per trial: fresh chip + trial {(c.fresh_s + c.fresh_trial_s) * ms:.1f} ms, "
          f"trial + restore {(trial + restore) * ms:.1f} ms")
    print(f"peak resident memory of the process:        {c.max_rss_bytes / 2**20:9.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
