"""l2wire with mixed sizes (scapy, 60..1514 B) back to back at 100 % on both ports: frames
lost, RBUF counters and DRAM load -- the before/after figures of docs/performance.md
("Mixed sizes").  Not a test; run from outside the repository root:

    python tests/sim/media/run_l2wire_mixed.py TREE [COUNT [SEED]]

TREE is the repository whose tests/examples/test_l2wire.py supplies the traffic and the
runner (so an older tree can be measured with its own helpers)."""

from __future__ import annotations

import importlib.util
import sys
import time


def main(tree: str, count: int = 10_000, seed: int = 21) -> None:
    sys.path.append(tree)
    spec = importlib.util.spec_from_file_location("l2wire_tests",
                                                  f"{tree}/tests/examples/test_l2wire.py")
    assert spec is not None and spec.loader is not None
    t = importlib.util.module_from_spec(spec)
    sys.modules["l2wire_tests"] = t
    spec.loader.exec_module(t)
    frames = t.scapy_frames(2 * count, seed=seed)
    offered = {0: frames[:count], 1: frames[count:]}
    sinks = {p: t.ListSink() for p in (0, 1)}
    sources = {p: t.ListSource([t.RxFrame(f) for f in offered[p]]) for p in (0, 1)}
    budget = int(sum(t.wire_cycles(len(f)) for f in frames) * 1.5)
    start = time.time()
    out = t.run_l2wire(sources, sinks, 2 * count, budget)
    cycles = max(sinks[p].frames[-1].last_bit_cycle for p in (0, 1))
    dram = [ch["busy_cycles"] / cycles for ch in out.counters["channels"]["dram"]]
    for p in (0, 1):
        c = out.port(p)
        got = [f.data for f in sinks[1 - p].frames]
        print(f"port {p}: offered {count} forwarded {len(got)} "
              f"rx_dropped_rbuf_full {c['rx_dropped_rbuf_full']} "
              f"rbuf_high_water_elements {c['rbuf_high_water_elements']} "
              f"rx_flow_control_stalls {c.get('rx_flow_control_stalls', '-')} "
              f"in order {t.is_subsequence(got, offered[p])}")
    print(f"DRAM busy {[round(d, 3) for d in dram]}, l2wire drop counters "
          f"{out.drop_counters()}, {time.time() - start:.1f} host s")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
