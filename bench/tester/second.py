"""The tester's side of a simulated second: host time per frame and peak memory.

    python -m npkit.bench.tester.second [--seconds 1] [--size 40] [--held [--python]]

generates ``--seconds`` of 2 x OC-192 POS at 100 % of line rate (IPv4 ``--size`` bytes, 2,000
destinations of a generated table, as the NPF preset sends them) with the C++ generator in
bounded batches, registers every frame with the C++ analysis and hands the same frames back
as a perfect wire would deliver them (the other port, 5 us later, ``PassThrough``), so the
analysis does its whole per-frame work; no chip.  Prints frames, host CPU seconds, CPU per
frame, the report's counts and the process's peak resident memory.  ``--held`` does the
same the way a trial held it before issue 13: ``generate`` into ``TxRecord`` lists, then
``Analyzer.analyze`` over the held records (use a short ``--seconds``); with ``--python``
by the pure-Python generator and analyzer, the tester as it was before the C++ one.

The same second through the NPF preset's chips: ``python -m npkit.bench.lab_second``.
"""

from __future__ import annotations

import argparse
import resource
import time

DELAY_PS = 5_000_000


def main(argv: list[str] | None = None) -> None:
    from npkit.bench.tester import Analyzer, PassThrough, RxRecord, Sizes, Stream, generate
    from npkit.bench.tester.destinations import pick_destinations
    from npkit.bench.tester.fast import batches
    from npkit.bench.tester.fast_analysis import FastAnalysis, compiled
    from npkit.bench.tester.media import PS_PER_S, port_model
    from npkit.runtime.routes import committed_histogram, generate_routes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--size", type=int, default=40, help="IP bytes")
    parser.add_argument("--held", action="store_true")
    parser.add_argument("--python", action="store_true", help="with --held: pure Python")
    args = parser.parse_args(argv)

    routes = generate_routes(4, 20_000, 2024, committed_histogram(4), 16)
    dests = {4: pick_destinations(routes, 4, 2_000, seed=1)}
    duration = int(args.seconds * PS_PER_S)
    streams = [Stream(id=p + 1, port=p, destinations=dests, framing="pos",
                      sizes=Sizes.fixed(args.size), duration_ps=duration) for p in (0, 1)]
    ports = {0: "oc192pos", 1: "oc192pos"}
    models = {p: port_model(k) for p, k in ports.items()}
    wire = PassThrough({0: 1, 1: 0})
    start = time.process_time()
    if args.held:
        from npkit.bench.tester.generator import generate_python

        traffic = (generate_python if args.python else generate)(streams, ports)
        sent = traffic.records()
        back = [RxRecord(r.port ^ 1, r.time_ps + DELAY_PS, r.data) for r in sent]
        analyzer = Analyzer(ports, wire)
        report = (analyzer.analyze_python if args.python else analyzer.analyze)(sent, back)
    else:
        analysis = FastAnalysis(models, compiled(wire, models), 100_000)
        per_port = batches(streams, models)
        live = dict(per_port)
        while live:
            ports_out, times, datas = [], [], []
            for port in sorted(live):
                batch = next(live[port], None)
                if batch is None:
                    del live[port]
                    continue
                analysis.sent_batch(port, batch.times_ps, batch.datas, batch.streams,
                                    batch.seqs)
                ports_out += [port ^ 1] * len(batch)
                times += (batch.times_ps + DELAY_PS).tolist()
                datas += batch.datas
            analysis.received(ports_out, times, datas)
        report = analysis.report()
    cpu = time.process_time() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    frames = report.total.sent
    how = ("held, pure Python" if args.python else "held") if args.held else "streamed"
    print(f"{how}: {args.seconds:g} s of 2 x OC-192 POS, "
          f"{args.size} B: {frames:,} frames sent, {report.total.received:,} received, "
          f"{report.errors} errors")
    print(f"  host CPU {cpu:.1f} s = {cpu / max(1, frames) * 1e6:.2f} us per frame; "
          f"peak RSS {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
