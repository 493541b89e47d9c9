"""The lab's tester and chips for a simulated second: host time and peak memory of one
streamed NPF trial (issue 13: "a 1-simulated-second run of the lab's tester + chip stays
under 4 GB").

    python -m npkit.bench.lab_second [--seconds 1] [--size 40] [--threads 2] [--held]

builds the NPF preset's device (``npf.chip_device``: the two-chip ``dual-ixp2800-npf``
system, the compiled POS router on the sampled 135,432 + 1,200-route tables, ``--threads``
host threads), its chips loaded and snapshotted and the C++ analysis's route tables built
(the set-up), then runs one trial (``SystemChipDevice.run``: streamed, nothing held per
frame) of the preset's IPv4 ``--size``-byte traffic at 100 % of 2 x OC-192 POS for
``--seconds``; prints the set-up's and the trial's host time, the report's counts and the
peak resident memory after each.  ``--held``: the trial holds its frames
(``streamed=False``: ``generate``, sources, sinks, ``Analyzer.analyze``), as before.
The tester side alone (no chip): ``python -m npkit.bench.tester.second``.
"""

from __future__ import annotations

import argparse
import resource
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--size", type=int, default=40, help="IP bytes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--held", action="store_true", help="hold the frames (as before)")
    args = parser.parse_args(argv)
    _through_chips(args.seconds, args.size, args.threads, not args.held)


def _through_chips(seconds: float, size: int, threads: int, streamed: bool) -> None:
    """One NPF trial of ``seconds`` on the preset's device."""
    from npkit.bench.lab import npf
    from npkit.bench.tester import Sizes
    from npkit.bench.tester.fast_analysis import compiled
    from npkit.bench.tester.media import PS_PER_S

    start, wall = time.process_time(), time.perf_counter()
    chosen = npf.preset("ixp2800-npf", threads=threads)
    device = npf.chip_device(chosen, streamed=streamed)
    config = chosen.config
    trials = npf.make_trials(device, config, "ipv4", str(size), Sizes((size,), None, "ip"))
    trial = trials.with_length(int(seconds * PS_PER_S)).at(100.0)
    device.prepare()
    device.restored()  # every chip loaded and snapshotted, as before a lab run's 2nd trial
    compiled(device.reference, device.ports)  # the C++ analysis's route tables, once
    set_up, set_up_wall = time.process_time() - start, time.perf_counter() - wall
    peak_set_up = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = device.run(trial)
    cpu, wall = time.process_time() - start - set_up, time.perf_counter() - wall - set_up_wall
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = result.report.total
    how = "streamed" if streamed else "held"
    print(f"chips ({device.name}, {threads} threads, {how}): {seconds:g} s of 2 x OC-192 POS, "
          f"IPv4 {size} B at 100 %: {total.sent:,} frames sent, {total.received:,} "
          f"received, {total.lost:,} lost, {result.report.errors - total.lost} other errors")
    print(f"  set-up {set_up:.1f} s CPU ({set_up_wall:.1f} s wall), peak RSS after it "
          f"{peak_set_up:,.0f} MB")
    print(f"  trial {cpu:.1f} s CPU ({wall:.1f} s wall) = "
          f"{cpu / max(1, total.sent) * 1e6:.2f} us CPU per frame; peak RSS {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
