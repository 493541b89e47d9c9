"""Host time per frame of the tester's parts on one ``ixp2800-npf --quick`` trial.

    python -m npkit.bench.tester_profile [--size 40] [--traffic ipv4] [--runs 3] [--python]
                                        [--streaming] [--trial-us N] [--only held|offer]

builds the preset's device (2 x OC-192 POS, pos_router, the sampled tables), makes the
IPv4 40-byte trial at 100 % and times generation, the chip run (feed, ``Chip.run``, drain)
and the analysis separately (host CPU, ``time.process_time``: steadier than wall time
on a shared machine; mean of ``--runs``), printing each
part per trial and per frame sent (docs/performance.md, "Tester").  ``--python`` also
times the pure-Python generator and analyzer (``generate_python``, ``analyze_python``) on
the same trial; ``--streaming`` also runs the trial as ``chip.stream_trial`` does (C++
batches in through sources or ``Chip.offer_frames``, frames analysed as they leave,
nothing held) and checks its report equals the held one.  ``--only held|offer`` runs the
trial (``--trial-us`` long) one way only and prints the peak memory after it.
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
    parser.add_argument("--python", action="store_true")
    parser.add_argument("--streaming", action="store_true")
    parser.add_argument("--trial-us", type=int, default=None,
                        help="trial length (default: the --quick preset's 100 us)")
    parser.add_argument("--only", choices=("held", "offer"), default=None,
                        help="run one path only and print the peak memory (RSS) after it")
    args = parser.parse_args(argv)

    npf = preset(quick=True)
    device = chip_device(npf)
    device.prepare()
    sizes = Sizes.fixed(args.size) if args.size else Sizes.imix(clamp=True)
    trials = make_trials(device, npf.config, args.traffic, str(args.size), sizes)
    if args.trial_us is not None:
        trials = trials.with_length(args.trial_us * 1_000_000)
    trial = trials.at(100.0)
    spent: dict[str, float] = {}

    def clock(name: str, work: Callable[..., Any], *call: Any) -> Any:
        start = time.process_time()
        out = work(*call)
        spent[name] = spent.get(name, 0.0) + time.process_time() - start
        return out

    # the reference's tables for the C++ analysis are built on its first use (once per
    # device, as in a lab run): build them before the clock starts
    from npkit.bench.tester.fast_analysis import compiled

    compiled(device.reference, device.ports)
    if args.only is not None:
        _only(args.only, device, trial)
        return
    sent = received = 0
    for _ in range(args.runs):
        traffic = clock("generation", generate, trial.streams, device.ports)
        loaded = device._load()
        rx, _, _ = clock("run (feed + Chip.run + drain)", devices._run_trial, loaded, traffic,
                         trial.settle_ps, device.ports)
        analyzer = Analyzer(device.ports, device.reference, device.options.latency_bin_ps)
        report = clock("analysis", analyzer.analyze, traffic.records(), rx)
        sent, received = traffic.count(), len(rx)
        if args.python:
            from npkit.bench.tester.generator import generate_python

            clock("generation, pure Python", generate_python, trial.streams, device.ports)
            clock("analysis, pure Python", analyzer.analyze_python, traffic.records(), rx)
        if args.streaming:
            for offer, name in ((False, "streaming: whole trial, sources"),
                                (True, "streaming: whole trial, offer_frames")):
                streamed = clock(name, _streaming, device, trial, offer)
                if streamed != report:
                    raise SystemExit(f"{name}: the report differs from the held one")
    print(f"{args.traffic} {args.size or 'IMIX'} B at 100 %: {sent} frames sent, "
          f"{received} received; mean of {args.runs}")
    for name, seconds in spent.items():
        mean = seconds / args.runs
        print(f"  {name:32s} {mean * 1e3:8.1f} ms  {mean / max(1, sent) * 1e6:7.2f} us/frame")


def _only(path: str, device: Any, trial: Any) -> None:
    """One trial by one path (held records, or streamed through ``offer_frames``): frames,
    host CPU and the process's peak resident memory afterwards."""
    import resource

    from npkit.bench.lab import devices
    from npkit.bench.tester import Analyzer, generate

    start = time.process_time()
    if path == "held":
        traffic = generate(trial.streams, device.ports)
        rx, _, _ = devices._run_trial(device._load(), traffic, trial.settle_ps, device.ports)
        analyzer = Analyzer(device.ports, device.reference, device.options.latency_bin_ps)
        report = analyzer.analyze(traffic.records(), rx)
    else:
        report = _streaming(device, trial, offer=True)
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sent = report.total.sent
    print(f"{path}: {sent:,} frames sent, {report.total.received:,} received; host CPU "
          f"{cpu:.1f} s = {cpu / max(1, sent) * 1e6:.2f} us/frame; peak RSS {peak:,.0f} MB")


def _streaming(device: Any, trial: Any, offer: bool) -> Any:
    """The trial with ``stream_trial``: run in steps, flushing the sink after each, until
    the sources are done and ``settle_ps`` has passed after the last bit sent."""
    from npkit.bench.lab.devices import STEP_CYCLES
    from npkit.bench.tester.chip import stream_trial
    from npkit.bench.tester.media import PS_PER_S

    loaded = device._load()
    chip = loaded.chip
    streaming = stream_trial(chip, trial.streams, device.ports, device.reference,
                             device.options.latency_bin_ps, offer=offer)
    clock = chip.config.clock_hz
    deadline = None
    while deadline is None or chip.now < deadline:
        if offer:
            streaming.offer_until(chip, chip.now + STEP_CYCLES)
        loaded.step(STEP_CYCLES)
        loaded.drain()
        streaming.sink.flush(chip.now)
        fed = streaming.fed if offer else not _Feeds(chip).frames_left()
        if deadline is None and fed:
            end = streaming.exhausted_last_bit_ps + trial.settle_ps
            deadline = int(-(-end * clock // PS_PER_S))
    chip.close_sinks()
    return streaming.report()


class _Feeds:
    """Whether a chip's attached sources have all been taken to their end."""

    def __init__(self, chip: Any) -> None:
        self.chip = chip

    def frames_left(self) -> bool:
        return any(not feed.exhausted for feed in self.chip._feeds.values())


if __name__ == "__main__":
    main()
