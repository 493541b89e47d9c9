"""Offered load against forwarded load for router4, the hand-written IPv4 router on the chip.

    python -m npkit.bench.router4_load [--loads 60,70,80,90,92,100] [--frames 100000]
        [--routes 3000] [--size 64] [--runs 3] [--seed 1] [--resolution 2]

examples/router4 (rx_eth.uc on ME 0/1, ipv4_fwd.uc on ME 2-5 in A/B pairs, tx_eth.uc on
ME 6/7, chip preset ixp2800) is loaded as its manifest says and given a table of --routes
random IPv4 routes (prefix lengths /16../24, first octets 1..223 except 10 and 127) plus a
default route; 16 next hops, even ones on port 0, odd ones on port 1, drawn at random per
route.  Each port is offered --frames Ethernet + IPv4 + UDP frames of --size bytes (FCS
stand-in included, as the chip's tests do) to random addresses inside random routes of the
table (not the default), timestamped so that both ports carry exactly the offered load (% of
10GbE line rate, 20 bytes of preamble + inter-frame gap per frame).

Measured for each load (run k uses seed S + k: a different table and traffic; figures are
medians of --runs runs, loss is also given as the worst run):

* offered and forwarded Mpps per port and loss % (frames transmitted against frames
  offered, whole run; drops split into rx_no_buffer (the router's counter) and
  rx_dropped_rbuf_full (the media's));
* the highest lossless load: the highest load tried at which no run lost a frame, then
  refined by bisection towards the lowest lossy load above it, down to --resolution % of
  line rate (loss need not be monotonic in load, so a lower load may still lose frames);
* from ``chip.counters()`` deltas over a steady-state window -- the middle of the offered
  traffic, from 25 % to 85 % of its span, so fill-up and drain are left out: busy % of each
  DRAM channel, each SRAM channel and scratch; busy % and stalled % of the forwarding, rx
  and tx MEs; on the forwarding MEs instructions and busy + stalled cycles per frame (per
  role: frames taken = entries put on the role's RX rings in the window; and all four MEs
  against frames transmitted), SRAM channel-2 commands per frame (local4 + trie reads);
* the simulator's own speed on this workload: simulated instructions (all MEs) per host
  second of ``Chip.run``, whole run.

This is a benchmark, not a test: it asserts nothing.  Results go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npkit.base.headers import ipv4_header
from npkit.microblocks.uc import router4 as r4
from npkit.runtime.lpm import IPV4, MultibitTrie
from npkit.sim.loader import LoadedRun, load_manifest
from npkit.sim.packets import ListSource, RxFrame, TxFrame

LINE_BPS = 10e9
WIRE_OVERHEAD = 20  # preamble + SFD + inter-frame gap, bytes
NEXT_HOPS = 16
SOURCE = 0xC6120001  # 198.18.0.1: a valid (non-martian) source
WINDOW = (0.25, 0.85)  # steady-state window, as fractions of the offered traffic's span
DRAIN_CYCLES = 400_000  # after the last arrival: ample for the last frames to leave
QUIET_CYCLES = 20_000
MIN_SIZE, MAX_SIZE = 64, 1518  # Ethernet frames with FCS; next hops have MTU 1500
FIRST_OCTETS = [o for o in range(1, 224) if o not in (10, 127)]
FWD_MES = {"A": (2, 4), "B": (3, 5)}  # role -> MEs (port 0's pair, port 1's pair)
ROLE_RINGS = {"A": (0, 2), "B": (1, 3)}  # role -> RX rings it takes frames from
RX_MES, TX_MES = (0, 1), (6, 7)
TABLE_CHANNEL = r4.LAYOUT.table_channel


class CountingSink:
    """Counts frames; keeps nothing (the run is long, the bytes are not looked at)."""

    def __init__(self) -> None:
        self.frames = 0

    def write(self, frame: TxFrame) -> None:
        self.frames += 1

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- workload
def random_routes(count: int, rng: random.Random) -> dict[tuple[int, int], int]:
    """``count`` distinct /16../24 routes plus 0.0.0.0/0; next hops 1..NEXT_HOPS."""
    routes: dict[tuple[int, int], int] = {(0, 0): 1 + rng.randrange(NEXT_HOPS)}
    while len(routes) < count + 1:
        length = rng.randint(16, 24)
        address = rng.choice(FIRST_OCTETS) << 24 | rng.getrandbits(24)
        routes[(address >> (32 - length) << (32 - length), length)] = 1 + rng.randrange(NEXT_HOPS)
    return routes


def udp_frame(dst: int, size: int, ident: int) -> bytes:
    """``size`` bytes: Ethernet + IPv4 (TTL 64) + UDP + zeros + a 4-byte FCS stand-in."""
    ip_len = size - 14 - 4
    udp = struct.pack("!HHHH", 1024, 9, ip_len - 20, 0) + bytes(ip_len - 28)
    header = ipv4_header(SOURCE, dst, 17, ip_len - 20, ident=ident)
    eth = bytes.fromhex("02000000ff01" "02000000ff02" "0800")
    return eth + header + udp + bytes(4)


def destinations(routes: dict[tuple[int, int], int], count: int,
                 rng: random.Random) -> list[int]:
    """Addresses inside random routes of the table (random host bits; never the default)."""
    prefixes = sorted(r for r in routes if r[1] > 0)
    out = []
    for _ in range(count):
        value, length = rng.choice(prefixes)
        out.append(value | rng.getrandbits(32 - length))
    return out


def frame_interval_s(size: int, load: float) -> float:
    return (size + WIRE_OVERHEAD) * 8 / LINE_BPS / load


def line_rate_mpps(size: int) -> float:
    return LINE_BPS / ((size + WIRE_OVERHEAD) * 8) / 1e6


@dataclass(frozen=True)
class Workload:
    seed: int
    routes: dict[tuple[int, int], int]
    frames: dict[int, list[bytes]]  # port -> frames

    @classmethod
    def make(cls, seed: int, routes: int, frames: int, size: int) -> Workload:
        rng = random.Random(seed)
        table = random_routes(routes, rng)
        return cls(seed, table, {p: [udp_frame(d, size, i) for i, d in
                                     enumerate(destinations(table, frames, rng))]
                                 for p in range(r4.LAYOUT.ports)})


def load_router(workload: Workload) -> LoadedRun:
    run = load_manifest(r4.MANIFEST)
    chip = run.chip
    MultibitTrie(IPV4, r4.trie_view(chip)).build(workload.routes)
    for index in range(1, NEXT_HOPS + 1):
        r4.write_next_hop(chip, index, 0x02AA00000000 | index, 0x02BB00000000 | index,
                          index & 1, 1500)
    r4.local4_add(chip, 0x0A000001)  # 10.0.0.1: the router's address, never a destination
    return run


# --------------------------------------------------------------------------- one run
@dataclass(frozen=True)
class Window:
    """Figures from counter deltas over the steady-state window."""

    cycles: int
    dram_busy: list[float]  # fraction per channel
    sram_busy: list[float]
    scratch_busy: float
    me_busy: dict[int, float]
    me_stalled: dict[int, float]
    role_instructions: dict[str, float]  # per frame taken from the role's rings
    role_cycles: dict[str, float]  # busy + stalled cycles per frame taken
    fwd_instructions: float  # all forwarding MEs, per frame transmitted in the window
    fwd_cycles: float
    table_reads: float  # SRAM channel 2 commands per frame transmitted in the window
    tx_mpps: list[float]  # per port, in the window


@dataclass(frozen=True)
class Sample:
    offered: int  # frames per port
    forwarded: list[int]  # per output port
    rx_no_buffer: int
    rbuf_full: int
    other_drops: int  # anything else the router counted (none expected)
    window: Window
    instructions: int
    host_s: float

    @property
    def loss(self) -> float:
        total = self.offered * len(self.forwarded)
        return 1 - sum(self.forwarded) / total


def delta_window(a: dict[str, Any], b: dict[str, Any], clock_hz: float) -> Window:
    cycles = b["cycles"] - a["cycles"]

    def busy(unit: str, i: int | None = None) -> float:
        ua, ub = a["channels"][unit], b["channels"][unit]
        if i is not None:
            ua, ub = ua[i], ub[i]
        return (ub["busy_cycles"] - ua["busy_cycles"]) / cycles

    def me(i: int, key: str) -> int:
        return b["mes"][i][key] - a["mes"][i][key]

    def puts(ring: int) -> int:
        return b["rings"][ring]["puts"] - a["rings"][ring]["puts"]

    role_i, role_c = {}, {}
    for role, mes in FWD_MES.items():
        taken = max(1, sum(puts(r) for r in ROLE_RINGS[role]))
        role_i[role] = sum(me(m, "instructions") for m in mes) / taken
        role_c[role] = sum(me(m, "busy_cycles") + me(m, "stalled_cycles") for m in mes) / taken
    tx = [pb["tx_frames"] - pa["tx_frames"] for pa, pb in zip(a["ports"], b["ports"], strict=True)]
    sent = max(1, sum(tx))
    fwd = [m for mes in FWD_MES.values() for m in mes]
    table = b["channels"]["sram"][TABLE_CHANNEL]["commands"] - \
        a["channels"]["sram"][TABLE_CHANNEL]["commands"]
    return Window(
        cycles=cycles,
        dram_busy=[busy("dram", i) for i in range(len(b["channels"]["dram"]))],
        sram_busy=[busy("sram", i) for i in range(len(b["channels"]["sram"]))],
        scratch_busy=busy("scratch"),
        me_busy={m: me(m, "busy_cycles") / cycles for m in (*RX_MES, *fwd, *TX_MES)},
        me_stalled={m: me(m, "stalled_cycles") / cycles for m in (*RX_MES, *fwd, *TX_MES)},
        role_instructions=role_i, role_cycles=role_c,
        fwd_instructions=sum(me(m, "instructions") for m in fwd) / sent,
        fwd_cycles=sum(me(m, "busy_cycles") + me(m, "stalled_cycles") for m in fwd) / sent,
        table_reads=table / sent,
        tx_mpps=[n / (cycles / clock_hz) / 1e6 for n in tx])


def run_once(workload: Workload, load: float, size: int) -> Sample:
    run = load_router(workload)
    chip = run.chip
    clock = chip.config.clock_hz
    gap = frame_interval_s(size, load)
    sinks = {p: CountingSink() for p in workload.frames}
    for p, frames in workload.frames.items():
        chip.attach_source(p, ListSource([RxFrame(f, i * gap) for i, f in enumerate(frames)]))
        chip.attach_sink(p, sinks[p])
    count = len(workload.frames[0])
    span = count * gap * clock  # cycles from the first arrival to the last
    host = 0.0
    snapshots = []
    for mark in WINDOW:
        start = time.perf_counter()
        chip.run(cycles=int(mark * span) - chip.now)
        host += time.perf_counter() - start
        snapshots.append(chip.counters())
    total = count * len(workload.frames)
    start = time.perf_counter()
    # the rest of the traffic, then until every frame is out or nothing moves any more
    chip.run(packets=total - sum(s.frames for s in sinks.values()),
             cycles=int(span) - chip.now + DRAIN_CYCLES, until_idle=True,
             quiet_cycles=QUIET_CYCLES)
    host += time.perf_counter() - start
    counters = r4.counters(chip)
    ports = chip.counters()["ports"]
    named = {"rx_no_buffer0", "rx_no_buffer1", "ip_forwarded"}
    return Sample(
        offered=count,
        forwarded=[sinks[p].frames for p in sorted(sinks)],
        rx_no_buffer=sum(counters[f"rx_no_buffer{p}"] for p in sinks),
        rbuf_full=sum(p["rx_dropped_rbuf_full"] for p in ports),
        other_drops=sum(v for k, v in counters.items() if k not in named),
        window=delta_window(snapshots[0], snapshots[1], clock),
        instructions=chip.instructions_retired,
        host_s=host)


# --------------------------------------------------------------------------- report
@dataclass(frozen=True)
class LoadResult:
    load: float  # fraction of line rate
    samples: list[Sample]

    def median(self, figure: Any) -> float:
        return statistics.median(figure(s) for s in self.samples)

    @property
    def lossless(self) -> bool:
        return all(s.loss == 0 for s in self.samples)


def measure_load(workloads: list[Workload], load: float, size: int) -> LoadResult:
    samples = [run_once(w, load, size) for w in workloads]
    print(f"  {100 * load:g} %: worst loss {100 * max(s.loss for s in samples):.3f} % "
          f"({sum(s.host_s for s in samples):.1f} s host)", flush=True)
    return LoadResult(load, samples)


def search_lossless(workloads: list[Workload], results: list[LoadResult], size: int,
                    step: float) -> list[LoadResult]:
    """Bisect between the highest lossless load tried and the lowest lossy one above it
    until they are ``step`` apart (nothing to do when no load, or every load, was lossless)."""
    lossless = [r.load for r in results if r.lossless]
    if not lossless:
        return results
    low = max(lossless)
    above = [r.load for r in results if r.load > low]
    if not above:
        return results
    high = min(above)
    results = list(results)
    while high - low > step + 1e-9:
        mid = round((low + high) / 2 / step) * step
        if not low < mid < high:
            break
        result = measure_load(workloads, mid, size)
        results.append(result)
        low, high = (mid, high) if result.lossless else (low, mid)
    return sorted(results, key=lambda r: r.load)


def mean_of(values: dict[int, float], mes: tuple[int, ...]) -> float:
    return sum(values[m] for m in mes) / len(mes)


def pct(x: float) -> str:
    return f"{100 * x:.0f}"


def print_tables(results: list[LoadResult], size: int) -> None:
    line = line_rate_mpps(size)
    runs = len(results[0].samples)
    print(f"\nforwarding (median of {runs} runs; loss: median / worst run; forwarded Mpps per "
          f"output port over the window)")
    print(f"{'load':>6} {'offered':>8} {'fwd p0':>7} {'fwd p1':>7} {'fwd %':>5} "
          f"{'loss %':>13} {'rx_no_buffer':>12} {'rbuf_full':>9} {'other':>5}")
    for r in results:
        m = r.median
        loss = f"{100 * m(lambda s: s.loss):.2f} / {100 * max(s.loss for s in r.samples):.2f}"
        fwd = m(lambda s: sum(s.window.tx_mpps)) / (2 * line)
        print(f"{100 * r.load:5g}% {r.load * line:8.3f} "
              f"{m(lambda s: s.window.tx_mpps[0]):7.3f} {m(lambda s: s.window.tx_mpps[1]):7.3f} "
              f"{100 * fwd:5.1f} {loss:>13} {m(lambda s: s.rx_no_buffer):12.0f} "
              f"{m(lambda s: s.rbuf_full):9.0f} {m(lambda s: s.other_drops):5.0f}")
    lossless = [r.load for r in results if r.lossless]
    best = (f"{100 * max(lossless):g} % of line rate = {max(lossless) * line:.2f} Mpps per "
            f"port, {2 * max(lossless) * line:.2f} Mpps in all" if lossless else "none")
    print(f"highest lossless load tried (no frame lost in any run): {best}")
    print("fwd % = frames transmitted in the window against line rate on both ports")

    print(f"\nbusy % over the steady-state window ({pct(WINDOW[0])}..{pct(WINDOW[1])} % of "
          f"the traffic's span; ME: busy/stalled, mean of the role's MEs)")
    print(f"{'load':>6} {'DRAM 0/1/2':>11} {'SRAM 0/1/2/3':>13} {'scratch':>7} "
          f"{'rx 0,1':>7} {'fwd A 2,4':>9} {'fwd B 3,5':>9} {'tx 6,7':>7}")
    for r in results:
        m = r.median

        def me(mes: tuple[int, ...], m: Any = m) -> str:
            return (f"{pct(m(lambda s: mean_of(s.window.me_busy, mes)))}/"
                    f"{pct(m(lambda s: mean_of(s.window.me_stalled, mes)))}")

        dram = "/".join(pct(m(lambda s, i=i: s.window.dram_busy[i])) for i in range(3))
        sram = "/".join(pct(m(lambda s, i=i: s.window.sram_busy[i])) for i in range(4))
        print(f"{100 * r.load:5g}% {dram:>11} {sram:>13} "
              f"{pct(m(lambda s: s.window.scratch_busy)):>7} {me(RX_MES):>7} "
              f"{me(FWD_MES['A']):>9} {me(FWD_MES['B']):>9} {me(TX_MES):>7}")

    print("\nforwarding MEs per frame over the window (role: per frame taken from its RX "
          "rings; all: 4 MEs per frame transmitted; cycles = busy + stalled)")
    print(f"{'load':>6} {'instr A':>8} {'instr B':>8} {'instr all':>9} {'cyc A':>6} "
          f"{'cyc B':>6} {'cyc all':>7} {'ch2 reads':>9}")
    for r in results:
        m = r.median
        print(f"{100 * r.load:5g}% {m(lambda s: s.window.role_instructions['A']):8.1f} "
              f"{m(lambda s: s.window.role_instructions['B']):8.1f} "
              f"{m(lambda s: s.window.fwd_instructions):9.1f} "
              f"{m(lambda s: s.window.role_cycles['A']):6.1f} "
              f"{m(lambda s: s.window.role_cycles['B']):6.1f} "
              f"{m(lambda s: s.window.fwd_cycles):7.1f} {m(lambda s: s.window.table_reads):9.2f}")

    print("\nsimulator speed on this workload (whole run, median)")
    print(f"{'load':>6} {'host s':>7} {'sim MIPS':>8} {'sim kpps':>8}")
    for r in results:
        m = r.median
        print(f"{100 * r.load:5g}% {m(lambda s: s.host_s):7.2f} "
              f"{m(lambda s: s.instructions / s.host_s / 1e6):8.2f} "
              f"{m(lambda s: sum(s.forwarded) / s.host_s / 1e3):8.1f}")


def cpu_model() -> str:
    """The CPU's model name (Linux), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parse_loads(text: str) -> list[float]:
    try:
        loads = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--loads {text!r}: give percentages of line rate separated by commas, "
            f"e.g. 80,90,100") from None
    if not loads or any(not 0 < x <= 100 for x in loads):
        raise argparse.ArgumentTypeError(
            f"--loads {text!r}: every load must be above 0 and at most 100 (% of line rate)")
    return sorted(x / 100 for x in loads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npkit.bench.router4_load",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=parse_loads, default=parse_loads("60,70,80,90,92,100"),
                        help="offered loads, %% of 10GbE line rate on both ports")
    parser.add_argument("--frames", type=int, default=100_000, help="frames offered per port")
    parser.add_argument("--routes", type=int, default=3000, help="random /16../24 routes")
    parser.add_argument("--size", type=int, default=64,
                        help=f"frame size in bytes with FCS, {MIN_SIZE}..{MAX_SIZE}")
    parser.add_argument("--runs", type=int, default=3, help="runs per load (median)")
    parser.add_argument("--resolution", type=float, default=2.0,
                        help="bisect between the highest lossless and the next lossy load "
                             "down to this many %% of line rate (0: only the loads given)")
    parser.add_argument("--seed", type=int, default=1, help="seed of run 0 (run k: seed + k)")
    args = parser.parse_args(argv)
    if args.frames < 100:
        parser.error("--frames must be at least 100 (the window needs traffic to measure)")
    if not 1 <= args.routes <= 100_000:
        parser.error("--routes must be 1..100000")
    if not MIN_SIZE <= args.size <= MAX_SIZE:
        parser.error(f"--size must be {MIN_SIZE}..{MAX_SIZE} (bytes with FCS; MTU 1500)")
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    print(f"router4 on the simulated IXP2800: {args.size}-byte frames, {args.frames} per port "
          f"on both ports, {args.routes} random /16../24 routes + default, "
          f"{args.runs} run(s) per load, seeds {args.seed}..{args.seed + args.runs - 1}")
    print(f"line rate: {line_rate_mpps(args.size):.3f} Mpps per port; host: {cpu_model()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    workloads = [Workload.make(args.seed + k, args.routes, args.frames, args.size)
                 for k in range(args.runs)]
    results = [measure_load(workloads, load, args.size) for load in args.loads]
    if args.resolution > 0:
        results = search_lossless(workloads, results, args.size, args.resolution / 100)
    print_tables(results, args.size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
