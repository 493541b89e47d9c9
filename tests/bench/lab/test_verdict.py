"""The line-rate verdict (bench/lab/verdict.py, docs/verdict.md; issue 18 acceptance 4).

* Its queueing core against an independent model: the birth-death Markov chain of T threads
  sharing one ALU (exponential service C) and sleeping W each (exponential delay).
* Its static path walk (compiler/me/path_walk.py) against the simulator: one 44-byte frame
  on the idle chip, timed from the thread-state trace.
* Its predictions against MEASURED throughput and bottlenecks (below, with the command and
  commit that produced them): within 10 % and the same first bottleneck.
"""

from __future__ import annotations

from functools import cache

import pytest

from npkit.bench.lab import npf
from npkit.bench.lab.verdict import (
    READY_CYCLES,
    Verdict,
    chip_runs,
    idle_cost,
    line_pps,
    me_stages,
    mva_rate,
    run_verdict,
)
from npkit.compiler.me.path_walk import Waypoint, walk
from npkit.sim.config import ChipConfig

# Measured with `.venv/bin/python -m npkit.bench.lab.verdict_runs rings|pool 40 64 128`
# (the --quick NPF preset's confirmed throughput search on dual-ixp2800-npf: 0.1 ms trials
# confirmed by 2, 2 % resolution; then one trial at 100 % of line rate) at commit bef5aee
# and again, every figure identical, at e58fc80.  (At ce40a53, with another session's
# uncommitted back-end edits in the shared tree, rings 128 B read 96.91 % and rings 40 B
# lost 1,391 instead of 1,375 at 100 %; the same bottlenecks.)
# Bottleneck: the most occupied unit at 100 % beyond its occupancy at 0.1 % (an ME: busy +
# stalled; a polling ME is busy without traffic), as the verdict names it (rings me0 = the
# receive ME, the pool's MEs together, the three interleaved DRAM channels as "dram").
MEASURED = {
    # (data path, IPv4 bytes): (throughput % of line rate, first bottleneck, runner-up)
    # The Poptrie router, `verdict_runs rings 40 64 128` on branch poptrie-switch at 70c9610
    # (the 16-8-8 router's: 72.16 / 95.36 / 95.36 %, the same bottlenecks)
    ("rings", 40): (70.61, "rx ME", "me0 70.1 %, dram1 44.5 %; lost: rx_dropped_rbuf_full"),
    ("rings", 64): (92.27, "rx ME", "me0 65.0 %, dram2 51.1 %; lost: rx_no_buffer"),
    ("rings", 128): (95.36, "rx ME", "me0 61.1 %, dram2 43.6 %; lost: rx_dropped_rbuf_full"),
    # The Poptrie router (microblocks/router_common.mbl imports lpm_poptrie.mbl; its SRAM
    # memories placed from the top down, docs/link.md: fib4_poptrie on sram3, fib6_poptrie
    # on sram2, nexthops and local4/6 on sram1, port 0's buffer descriptors alone on sram0):
    # `verdict_runs pool 40 64 128` and `verdict_runs pool-mbl 40 64 128` on branch
    # poptrie-switch at 70c9610 (east chip, beyond idle; the 16-8-8 router's figures were
    # sram1 35.8 % / pool MEs / dram at pool, pool MEs at every pool-mbl size).
    ("pool", 40): (100.0, "sram3", "sram3 52.2 %, sram1 35.8 %"),
    ("pool", 64): (100.0, "sram3", "sram3 35.1 %, me4 28.7 %"),
    ("pool", 128): (100.0, "dram", "dram2 22.9 %, dram1 22.8 %"),
    ("pool-mbl", 40): (100.0, "sram3", "sram3 52.1 %, me0 42.0 %"),
    # a tie: me0 34.9 %, sram3 34.8 % (every pool ME 34.6-34.9 %); TIES below
    ("pool-mbl", 64): (100.0, "pool MEs", "sram3 34.8 %, me0 34.9 %"),
    ("pool-mbl", 128): (100.0, "pool MEs", "me0 34.8 %, me1 33.9 %"),
}
# Cases whose two most occupied units were measured within a point of each other: which
# leads is not a measured fact, so the verdict may name either, and must itself put them
# within TIE_POINTS of each other at line rate (its figure for each is the demand of that
# unit alone: pool-mbl 64 B sram3 44.0 %, pool MEs 43.4 %).
TIES = {("pool-mbl", 64): ("pool MEs", "sram3")}
TIE_POINTS = 0.02
# Where the verdict is known to miss (its RBUF elements and receive turns are not modelled,
# docs/verdict.md, "Not modelled"): no case at present.
MISSED: dict[tuple[str, int], str] = {}


def markov_rate(threads: int, alu: float, wait: float) -> float:
    """Packets per cycle: the stationary birth-death chain over n = threads at the ALU
    (n -> n+1 at (T - n) / W, n -> n-1 at 1 / C); throughput = P(n > 0) / C."""
    weights = [1.0]
    for n in range(threads):
        weights.append(weights[-1] * ((threads - n) / wait) / (1.0 / alu))
    busy = 1.0 - weights[0] / sum(weights)
    return busy / alu


@pytest.mark.parametrize("threads", [1, 2, 4, 8])
@pytest.mark.parametrize(("alu", "wait"), [(67.0, 499.0), (329.0, 938.0), (50.0, 5.0),
                                           (400.0, 4000.0)])
def test_mva_is_the_markov_chain(threads: int, alu: float, wait: float) -> None:
    assert mva_rate(threads, alu, wait) == pytest.approx(markov_rate(threads, alu, wait),
                                                         rel=1e-9)


def test_mva_stays_under_both_bounds() -> None:
    for threads in range(1, 9):
        rate = mva_rate(threads, 67.0, 499.0)
        assert rate <= min(1 / 67.0, threads / (67.0 + 499.0)) + 1e-12
    assert mva_rate(1, 67.0, 499.0) == pytest.approx(1 / 566.0)
    assert mva_rate(64, 67.0, 499.0) == pytest.approx(1 / 67.0, rel=1e-3)


def test_line_rate_is_facts_oc192_pos() -> None:
    # FACTS.md §2: OC-192 POS (FCS-32) 24.451 / 16.412 / 8.745 Mpps at 40 / 64 / 128 B
    assert [round(line_pps(n) / 1e6, 3) for n in (40, 64, 128)] == [24.451, 16.412, 8.745]


@cache
def _device(data_path: str):  # noqa: ANN202
    return npf.chip_device(npf.preset("ixp2800-npf", quick=True, data_path=data_path))


def test_the_static_walk_is_one_frame_on_the_idle_chip() -> None:
    """rx_eth.uc's path for a 44-byte frame (one mpacket), walked statically, against the
    receive ME's thread on the idle chip: the same memory wait, the ALU cycles within 3."""
    device = _device("rings")
    manifest = device.chip_linked("east")
    rx = next(s for s in manifest.images if s.path.name == "rx.uc")
    static = walk(rx.image, [Waypoint("rx_loop"), Waypoint("eop"), Waypoint("last_table", 4),
                             Waypoint("wait_eop"), Waypoint("rx_loop")])
    idle = idle_cost(chip_runs(device, "east", 40, frames=10)[0].spans, set(rx.mes),
                     READY_CYCLES)
    assert idle.visits == 1
    assert static.memory_wait_cycles == idle.wait
    assert abs(static.cycles - idle.cycles) <= 3
    stage = me_stages("rings", manifest, ChipConfig.load("ixp2800"), 44)[0]
    assert stage.name == "rx ME" and stage.cycles == static.cycles


@cache
def _verdicts(data_path: str) -> dict[int, Verdict]:
    return {v.ip_bytes: v for v in run_verdict(data_path, (40, 64, 128))}


def _unit(name: str) -> str:
    return "dram" if name.startswith("dram") else name


@pytest.mark.parametrize(("data_path", "size"), [
    pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=MISSED[case]))
    if case in MISSED else case for case in sorted(MEASURED)])
def test_the_verdict_predicts_the_measured_throughput_and_bottleneck(data_path: str,
                                                                     size: int) -> None:
    measured, bottleneck, _ = MEASURED[(data_path, size)]
    verdict = _verdicts(data_path)[size]
    print(f"{data_path} {size} B: predicted {verdict.predicted_percent:.1f} % "
          f"({verdict.first_bottleneck.name}), measured {measured} % ({bottleneck})")
    assert abs(verdict.predicted_percent - measured) <= 0.10 * measured
    tied = TIES.get((data_path, size))
    if tied is None:
        assert _unit(verdict.first_bottleneck.name) == bottleneck
        return
    assert _unit(verdict.first_bottleneck.name) in tied
    use = {r.name: r.utilization for r in verdict.resources}
    assert abs(use[tied[0]] - use[tied[1]]) <= TIE_POINTS


# Fewer forwarding MEs on the rings path (`verdict_runs --fwd-mes N rings 40 128`): throughput
# % of line rate; the losses at 100 % are rx_no_buffer (frames wait in the RX rings for the
# forwarding ME, holding their buffers) and the forwarding ME is the busiest unit.  The
# Poptrie router, on branch poptrie-switch at 70c9610: 22.66 % / 62.88 % (lost to
# rx_no_buffer); the 16-8-8 router's were 24.20 % / 70.61 % (at 5f37370), with 2 forwarding
# MEs 44.31 % at 40 B (the verdict said 51.4 %: outside 10 %, docs/verdict.md) and 98.45 %
# at 128 B.
ONE_FWD_ME = {40: 22.66, 128: 62.88}
# Where the one-ME prediction misses by more than 10 %: the forwarding ME's frame from one
# frame on the idle chip, C 236 + W 1,573 cycles (16-8-8: C 184 + W 1,400), through MVA
# gives 20.4 % at 40 B (128 B: 57.0 %, within 10 %); the ALU bound alone would say 24.3 %.
# Not explained yet (docs/verdict.md, "Fewer forwarding MEs").
ONE_FWD_ME_MISSED = {40: "predicted 20.4 % against 22.66 % measured (10.0 % low)"}


@cache
def _one_fwd_me() -> dict[int, Verdict]:
    return {v.ip_bytes: v for v in run_verdict("rings", tuple(ONE_FWD_ME), fwd_mes=1)}


@pytest.mark.parametrize("size", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ONE_FWD_ME_MISSED[n]))
    if n in ONE_FWD_ME_MISSED else n for n in sorted(ONE_FWD_ME)])
def test_one_forwarding_me_is_the_bound(size: int) -> None:
    verdict = _one_fwd_me()[size]
    print(f"rings, 1 fwd ME, {size} B: predicted {verdict.predicted_percent:.1f} % "
          f"({verdict.bound.name}), measured {ONE_FWD_ME[size]} %")
    assert verdict.bound.name == "fwd MEs"
    assert abs(verdict.predicted_percent - ONE_FWD_ME[size]) <= 0.10 * ONE_FWD_ME[size]


# The full NPF run's busiest channel at 100 % offered load (east chip; the MEs, busy +
# stalled, lower in every case): `npkit bench npf --preset ixp2800-npf --data-path pool`'s
# trial at 100 % of each case, 10 ms, run alone with the same seed (`python -m
# npkit.bench.lab.rbuf_hold pool ipv4 40 100` etc.: the preset's `make_trials(...).at(100)`;
# its "busiest units" line), the Poptrie router on branch poptrie-switch at 70c9610.
# The 16-8-8 router's (docs/lab/npf-ixp2800 at e44d56b): sram1 0.436, dram2 0.279,
# sram1 0.541, dram2 0.279.  With Poptrie the IPv6 table's channel leads at 128 B too
# (dram2 0.279 there).
FULL_RUN = {
    (4, 40): ("sram3", 0.637), (4, 128): ("dram2", 0.279),
    (6, 60): ("sram2", 0.948), (6, 128): ("sram2", 0.478),
}


@cache
def _pool_v6() -> dict[int, Verdict]:
    return {v.ip_bytes: v for v in run_verdict("pool", (60, 128), family=6)}


@pytest.mark.parametrize(("family", "size"), sorted(FULL_RUN))
def test_the_busiest_channel_is_as_busy_as_in_the_full_run(family: int, size: int) -> None:
    verdict = (_verdicts("pool") if family == 4 else _pool_v6())[size]
    unit, busy = FULL_RUN[(family, size)]
    assert verdict.predicted_percent == 100.0
    assert verdict.first_bottleneck.name == unit
    assert verdict.first_bottleneck.utilization == pytest.approx(busy, rel=0.05)


def test_the_rings_verdict_is_not_trivially_line_rate() -> None:
    assert _verdicts("rings")[40].predicted_percent < 80.0
