"""How many forwarding MEs a chip of the dual system needs (docs/link.md, "One receive
port"): the ``--quick`` NPF preset's confirmed throughput search at IPv4 40 B and IPv6
60 B on ``dual-ixp2800-npf`` for each N given, and one trial at 100 % of line rate.

    python -m npkit.bench.lab.fwd_mes_sweep 4 6 8
"""

from __future__ import annotations

import sys
import time

from npkit.bench.lab import npf
from npkit.bench.lab.search import search_throughput
from npkit.bench.lab.unit_use import busiest_units, dram_bytes_per_packet

CASES = (("ipv4", "40"), ("ipv6", "60"))


def sweep_line(n: int, traffic: str, label: str) -> str:
    chosen = npf.preset("ixp2800-npf", quick=True)
    device = npf.chip_device(chosen, chip_fwd_mes=n)
    config = chosen.config
    sizes = dict(config.sizes(traffic, "pos"))[label]
    trials = npf.make_trials(device, config, traffic, label, sizes)
    found = search_throughput(device, trials.at, config.lower_percent, 100.0,
                              config.resolution_percent, repeats=config.confirm_trials,
                              repeat_at=trials.repeat)
    full = device.run(trials.at(100.0))
    per_packet = dram_bytes_per_packet(full.counters)
    return (f"N={n} {traffic} {label}: throughput {found.throughput_percent} %; at 100 %: "
            f"sent {full.report.total.sent} lost {full.report.total.lost}, DRAM B/pkt "
            f"{per_packet if per_packet is None else round(per_packet, 1)}, busiest "
            f"{busiest_units(full.counters, 4)}")


def main(argv: list[str]) -> None:
    start = time.time()
    for n in (int(a) for a in argv or ["4", "6", "8"]):
        for traffic, label in CASES:
            print(sweep_line(n, traffic, label), flush=True)
    print(f"wall {time.time() - start:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
