"""The compiled dual-stack POS router on 2 x OC-192 POS with the real route table: 40-byte
IPv4 packets at a sweep of loads up to 100 % of line rate, and which resource saturates.
Not a test: the figures of docs/performance.md ("Compiled router on 2 x OC-192 POS").

    .venv/bin/python -m npkit.bench.compiled_pos [--frames 20000] [--routes 2000]
        [--loads 25,50,75,100] [--per-port 4] [--search]

Program: examples/pos_router/pos_router.mbl (ppp_classify -> ipv4_pos_fwd | ipv6_pos_fwd,
examples/router's tables).  Tables: ../shared/data/routes/full-table-2024.txt.gz loaded
into the native target (RouteTables, next hops by docs/lpm.md's rule, seed 2024, 16 next
hops: next hop i leaves by port i & 1) and copied word for word to the chip
(CompiledRun.load_memories).
Traffic: the tester (npkit.bench.tester) builds 40-byte IPv4/UDP packets in PPP frames
(44 bytes; 24.45 Mpps per port at line rate) to addresses inside --routes prefixes of the
real table (pick_destinations: each address's longest match is its prefix), --frames per
port.  Every frame should be forwarded (the native program says where).

Per load: forwarded/lost per port and where the losses happen (MSF RBUF full, no buffer
on the freelist, body drops), and from chip.counters() deltas over the steady window
(25..85 % of the offered span): every used ME's busy/stalled/idle fraction and cycles per
frame, SRAM/DRAM channel and scratch utilisation, ring occupancy; then the budget: at line
rate a port's packet arrives every 57.3 ME cycles, so N forwarding MEs per port have
57.3 N cycles per packet each, against what they spend.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from npkit.bench.tester import Sizes, Stream, generate, pick_destinations
from npkit.bench.tester.media import port_model
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.sema import Program
from npkit.compiler.me import compile_me
from npkit.link import Manifest, link
from npkit.runtime.compiled import CompiledResult, CompiledRun
from npkit.runtime.loader import chip_config_for
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import (
    REAL_TABLE,
    ROUTES_DIR_ENV,
    RouteFileError,
    RouteSet,
    read_routes,
)

REPO = Path(__file__).resolve().parents[1]
POS_ROUTER = REPO / "examples" / "pos_router" / "pos_router.mbl"
SEED, NEXT_HOPS = 2024, 16
POS_KINDS = ("oc192pos", "oc192pos")
IP_BYTES = 40
WINDOW = (0.25, 0.85)

# --------------------------------------------------------------------------- set-up
def pos_program() -> tuple[Program, str]:
    """(program, its pipeline)."""
    program = compile_file(POS_ROUTER)
    return program, next(iter(program.pipelines))


def compile_pos(program: Program, entry: str, per_port: int) -> Manifest:
    return link(program, compile_me(program, entry), "ixp2800-2xoc192pos",
                fwd_mes_per_port=per_port)


def load_tables(program: Program, routes: RouteSet) -> NativeProgram:
    """The native program with the real table and 16 next hops (i leaves by port i & 1)."""
    native = NativeProgram(program)
    for index in range(NEXT_HOPS):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 4470})
    RouteTables.of(native).load(routes.v4, routes.v6)
    return native


def pos_frames(routes: RouteSet, prefixes: int, frames: int) -> dict[int, list[bytes]]:
    """The tester's 40-byte IPv4 packets in PPP frames, `frames` per port."""
    dests = {4: pick_destinations(routes.v4, 4, prefixes, seed=1)}
    streams = [Stream(id=p + 1, port=p, framing="pos", sizes=Sizes.fixed(IP_BYTES),
                      count=frames, destinations=dests, seed=p + 1) for p in (0, 1)]
    traffic = generate(streams, dict(enumerate(POS_KINDS)))
    return {p: [r.data for r in records] for p, records in traffic.ports.items()}


# --------------------------------------------------------------------------- figures
@dataclass(frozen=True)
class Steady:
    """chip.counters() deltas over the steady window."""

    cycles: int
    me: dict[int, tuple[float, float, float]]      # ME -> busy, stalled, idle fractions
    me_frames: dict[int, int]                      # ME -> frames it took (ring gets)
    me_busy_cycles: dict[int, int]
    sram: list[float]
    dram: list[float]
    scratch: float
    dram_bytes: int
    rx_mpps: list[float]
    tx_mpps: list[float]


def steady(window: tuple[dict[str, Any], dict[str, Any]], linked: Manifest,
           clock_hz: float) -> Steady:
    a, b = window
    cycles = b["cycles"] - a["cycles"]

    def me_delta(m: int, key: str) -> int:
        return b["mes"][m][key] - a["mes"][m][key]

    def gets(ring: int) -> int:
        return b["rings"][ring]["gets"] - a["rings"][ring]["gets"]

    def util(unit: str) -> list[float]:
        return [(cb["busy_cycles"] - ca["busy_cycles"]) / cycles
                for ca, cb in zip(a["channels"][unit], b["channels"][unit], strict=True)]

    rt = linked.program
    frames_of = {}
    for p in range(len(linked.ports)):
        frames_of[rt.rx_mes[p]] = b["ports"][p]["rx_handed"] - a["ports"][p]["rx_handed"]
        for me, ring in zip(rt.chain(p), rt.rx_rings[p], strict=True):
            frames_of[me] = gets(ring)
    for q, me in enumerate(rt.tx_mes):
        frames_of[me] = gets(rt.layout.tx_ring(q))
    mes = sorted(frames_of)
    mpps = clock_hz / cycles / 1e6
    return Steady(
        cycles=cycles,
        me={m: tuple(me_delta(m, k) / cycles for k in ("busy_cycles", "stalled_cycles",
                                                       "idle_cycles")) for m in mes},
        me_frames=frames_of, me_busy_cycles={m: me_delta(m, "busy_cycles") for m in mes},
        sram=util("sram"), dram=util("dram"),
        scratch=(b["channels"]["scratch"]["busy_cycles"]
                 - a["channels"]["scratch"]["busy_cycles"]) / cycles,
        dram_bytes=sum(cb["bytes"] - ca["bytes"] for ca, cb in
                       zip(a["channels"]["dram"], b["channels"]["dram"], strict=True)),
        rx_mpps=[(pb["rx_frames"] - pa["rx_frames"]) * mpps
                 for pa, pb in zip(a["ports"], b["ports"], strict=True)],
        tx_mpps=[(pb["tx_frames"] - pa["tx_frames"]) * mpps
                 for pa, pb in zip(a["ports"], b["ports"], strict=True)])


def expected_out(native: NativeProgram, frames: dict[int, list[bytes]]
                 ) -> dict[int, Counter[bytes]]:
    """The frames the native program sends out of each port (exceptions and drops under
    -1)."""
    out: dict[int, Counter[bytes]] = {q: Counter() for q in (-1, 0, 1)}
    for p, port_frames in frames.items():
        for v in native.run(port_frames, in_ports=p):
            out[v.port if v.kind == "forward" else -1][v.data] += 1
    return out


def line_budget_cycles(clock_hz: float) -> Fraction:
    """ME cycles between two 40-byte packets of one port at OC-192 POS line rate."""
    return Fraction(clock_hz) / port_model("oc192pos").line_rate_fps(IP_BYTES + 4)


# --------------------------------------------------------------------------- one load
def run_load(linked: Manifest, native: NativeProgram, frames: dict[int, list[bytes]],
             load: float) -> tuple[CompiledResult, float, float]:
    """(result, seconds to copy the tables to the chip, host seconds of the run)."""
    run = CompiledRun(linked)
    start = time.perf_counter()
    run.load_memories(native)
    copy_s = time.perf_counter() - start
    start = time.perf_counter()
    result = run.run(frames, load=load, window=WINDOW)
    return result, copy_s, time.perf_counter() - start


def lossless(result: CompiledResult) -> bool:
    sent = sum(len(v) for v in result.out.values())
    return (sent == result.offered and not result.receive_drops and not result.drops
            and result.leak_free)


def role_of(linked: Manifest) -> dict[int, str]:
    rt = linked.program
    roles = {me: f"rx port {p}" for p, me in enumerate(rt.rx_mes[:len(linked.ports)])}
    for p in range(len(linked.ports)):
        roles.update({me: f"fwd port {p} #{i}" for i, me in enumerate(rt.chain(p))})
    roles.update({me: f"tx port {q}" for q, me in enumerate(rt.tx_mes)})
    return roles


def report_load(linked: Manifest, result: CompiledResult,
                want: dict[int, Counter[bytes]],
                load: float, host_s: float) -> None:
    clock = chip_config_for(linked).clock_hz
    forwarded = len(result.out[0]) + len(result.out[1])
    print(f"\n=== load {load:.0%} of line rate "
          f"({load * float(port_model('oc192pos').line_rate_fps(44)) / 1e6:.2f} Mpps per "
          f"port), host {host_s:.1f} s ===")
    for q in (0, 1):
        got = Counter(result.frames(q))
        same = "same bytes" if got == want[q] else f"{sum((got - want[q]).values())} not " \
            "in the native output"
        print(f"  out port {q}: {len(result.out[q])} frames, native {want[q].total()} "
              f"({same})")
    print(f"  forwarded {forwarded} of {result.offered}, lost {result.offered - forwarded}: "
          f"receive {result.receive_drops or '-'}, body drops {result.drops or '-'}, "
          f"exceptions {len(result.exceptions)}, leak-free {result.leak_free}")
    rings = result.counters["rings"]
    print("  rings (high water / size words): " + ", ".join(
        f"{r.number} {r.what.split(',')[0].replace('RX ring of ', 'rx ')}"
        f"{'' if 'RX' not in r.what else '/' + r.what.split()[-1]} "
        f"{rings[r.number]['high_water']}/{r.size_words}" for r in linked.rings))
    if result.window is None:
        print("  (no steady window: the run ended early)")
        return
    s = steady(result.window, linked, clock)
    print(f"  steady window {s.cycles} cycles: rx {', '.join(f'{x:.2f}' for x in s.rx_mpps)}"
          f" Mpps, tx {', '.join(f'{x:.2f}' for x in s.tx_mpps)} Mpps")
    for line in demand_lines(linked, s, float(line_budget_cycles(clock))):
        print(line)


def demand_lines(linked: Manifest, s: Steady, budget: float) -> list[str]:
    """Every resource's use in the window and what 100 % line rate on both ports would
    need of it: the use per frame it handled x the frames it would handle at line rate.
    An ME's use is busy + stalled (branch penalties, command FIFO full): its pipeline."""
    roles = role_of(linked)
    rt = linked.program
    line_frames = s.cycles / budget                     # one port's frames at line rate
    forwarded = max(1, sum(s.me_frames[m] for m in rt.tx_mes))
    share = {m: 1.0 for m in rt.rx_mes[:len(linked.ports)]}
    share.update({m: 1 / rt.fwd_mes_per_port for m in rt.fwd_mes})
    share.update({m: len(linked.ports) * s.me_frames[m] / forwarded for m in rt.tx_mes})
    # an ME that is not saturated also spends busy cycles polling an empty ring: its
    # per-frame figures are upper bounds, exact only when it is saturated
    lines = ["  ME  role            busy  stall  idle  frames  cyc/frame (busy+stall)  "
             "need at line rate"]
    worst: tuple[float, str] = (0.0, "")
    for me, (busy, stall, idle) in s.me.items():
        n = s.me_frames[me]
        per = (busy + stall) * s.cycles / n if n else 0.0
        need = per * line_frames * share[me] / s.cycles
        worst = max(worst, (need, f"ME {me} ({roles[me]})"))
        lines.append(f"  {me:2d}  {roles[me]:14s} {busy:5.1%} {stall:6.1%} {idle:5.1%} "
                     f"{n:7d}  {per:8.1f}                {need:7.0%}")
    scale = len(linked.ports) * line_frames / forwarded     # line-rate frames per forwarded one
    units = [(f"SRAM channel {i}", u) for i, u in enumerate(s.sram)]
    units += [(f"DRAM channel {i}", u) for i, u in enumerate(s.dram)]
    units.append(("scratch", s.scratch))
    lines.append("  " + "; ".join(f"{name} {u:.1%} (need {u * scale:.0%})" for name, u in units))
    for name, u in units:
        worst = max(worst, (u * scale, name))
    lines.append(f"  DRAM: {s.dram_bytes / forwarded:.0f} bytes per forwarded frame")
    fwd_per = [(s.me[m][0] + s.me[m][1]) * s.cycles / max(1, s.me_frames[m])
               for m in rt.fwd_mes]
    lines.append(f"  budget: a port's 40-byte packet every {budget:.1f} cycles at line rate; "
                 f"{rt.fwd_mes_per_port} forwarding MEs per port -> "
                 f"{budget * rt.fwd_mes_per_port:.0f} cycles per packet per ME; they use "
                 f"{min(fwd_per):.0f}..{max(fwd_per):.0f} (busy+stall), "
                 f"{max(fwd_per) / (budget * rt.fwd_mes_per_port):.2f}x at the worst")
    lines.append(f"  most demanded: {worst[1]}, {worst[0]:.0%} of it at line rate")
    return lines


# --------------------------------------------------------------------------- main
def highest_lossless(linked: Manifest, native: NativeProgram,
                     frames: dict[int, list[bytes]], low: float, high: float) -> float:
    while high - low > 0.01:
        mid = round((low + high) / 2, 3)
        result, _, _ = run_load(linked, native, frames, mid)
        low, high = (mid, high) if lossless(result) else (low, mid)
        print(f"  search: {mid:.1%} {'lossless' if low == mid else 'lossy'}", flush=True)
    return low


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=20_000, help="per port")
    parser.add_argument("--routes", type=int, default=2000, help="prefixes exercised")
    parser.add_argument("--loads", default="25,50,75,100", help="percent of line rate")
    parser.add_argument("--per-port", type=int, default=4, help="forwarding MEs per port")
    parser.add_argument("--search", action="store_true", help="bisect the lossless load")
    args = parser.parse_args(argv)

    program, entry = pos_program()
    print(f"program: {POS_ROUTER.relative_to(REPO)}, pipeline {entry}")
    start = time.perf_counter()
    try:
        routes = read_routes(REAL_TABLE, SEED, NEXT_HOPS)
    except RouteFileError as exc:
        print(f"compiled_pos: {exc}; set {ROUTES_DIR_ENV} to the folder that holds "
              f"{REAL_TABLE.name}", file=sys.stderr)
        return 2
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    native = load_tables(program, routes)
    build_s = time.perf_counter() - start
    print(f"real table: {len(routes.v4)} IPv4 + {len(routes.v6)} IPv6 prefixes, read "
          f"{read_s:.1f} s, tries built {build_s:.1f} s")
    start = time.perf_counter()
    linked = compile_pos(program, entry, args.per_port)
    print(f"header window {linked.program.window_bytes} bytes")
    print(f"compiled + linked in {time.perf_counter() - start:.1f} s; SRAM channels "
          f"{linked.overrides.get('sram', {}).get('channel_bytes', 0) >> 20 or 'preset'}"
          f" MB; MEs: " + ", ".join(f"{m} {r}" for m, r in role_of(linked).items())
          + f" ({len(role_of(linked))} of 16)")
    frames = pos_frames(routes, args.routes, args.frames)
    want = expected_out(native, frames)
    print(f"traffic: {args.frames} frames per port of {len(frames[0][0])} bytes to "
          f"{args.routes} prefixes; native: out port 0 {want[0].total()}, 1 "
          f"{want[1].total()}, not forwarded {want[-1].total()}")
    best_lossless, first_lossy = 0.0, None
    for load in sorted(float(x) / 100 for x in args.loads.split(",")):
        result, copy_s, host_s = run_load(linked, native, frames, load)
        print(f"(tables copied to the chip in {copy_s:.1f} s)")
        report_load(linked, result, want, load, host_s)
        if lossless(result):
            best_lossless = load
        elif first_lossy is None:
            first_lossy = load
    if args.search and first_lossy is not None:
        load = highest_lossless(linked, native, frames, best_lossless, first_lossy)
        rate = load * float(port_model("oc192pos").line_rate_fps(44)) / 1e6
        print(f"\nhighest lossless load: {load:.1%} of line rate ({rate:.2f} Mpps per port)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
