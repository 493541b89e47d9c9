"""Compiled IPv4 forwarding against router4's hand-written microcode, per forwarded frame.

    python -m npkit.bench.compiled_vs_hand [--load 15] [--frames 3000] [--routes 3000]
        [--runs 3] [--seed 1] [--profile-cycles 150000] [--fwd-mes-per-port 2]

The same traffic through three builds on the simulated IXP2800 (chip preset ixp2800):

* ``hand``: examples/router4 (ipv4_fwd.uc on ME 2-5, an A/B pair per input port);
* ``ipv4_fwd``: microblocks/ipv4_fwd.mbl, entry ``ipv4_fwd``, compiled by the ME backend
  (dispatch/fwd.uc + body on MEs 2..5: a chain of --fwd-mes-per-port forwarding MEs per
  input port);
* ``router``: examples/router/router.mbl, entry ``router`` (eth_classify -> ipv4_fwd |
  ipv6_fwd), compiled the same way.

Like with like: by default the compiled builds get **2 forwarding MEs per input port**
(``link(..., fwd_mes_per_port=2)``), as many as router4's A/B pair, so both run the same
number of threads per port and their dispatch loops take the same number of turns per
frame.  Other N (1..4) are an option: with more MEs per port than the hand, a chain position
takes more idle turns at low load (each passes upstream records on), which is the chain's
cost at that load, not the code's.

Workload (bench/router4_load.py's, so the figures line up with docs/performance.md): run k
uses seed S + k, --routes random /16../24 IPv4 routes + a default route, 16 next hops, and
--frames 64-byte Ethernet + IPv4 + UDP frames per port to addresses inside the routes (every
frame is forwarded), timestamped at --load % of 10GbE line rate on both ports.  The load
must be one that every build carries without loss (the compiled router with 2 MEs per port:
~50 %, with 1: ~34 %); the script says when a run lost frames.

Two measurements per run, both on the forwarding MEs only:

1. **counters** (``chip.counters()`` deltas over 25..85 % of the traffic's span, as
   router4_load.py): instructions (= busy, executing cycles: one instruction per busy
   cycle in this simulator) and busy + stalled cycles, per frame transmitted in the
   window.  At a load this low both dispatch loops spend most of their time polling an
   empty RX ring, and those polls are counted here too.
2. **profile**: --profile-cycles cycles in the middle of the window are stepped one cycle
   at a time; every retired instruction is charged to its PC and every stalled cycle
   (taken-branch penalty, command-FIFO stall), read from the ME's stalled-cycle counter at
   each step, to the PCs that retired in that step (to the ME's last retired PC when none
   did), so the profile's instructions and cycles equal the counters' deltas over the
   same span (the "check" column: 1.000/1.000).  An ME runs ahead of the chip's clock in
   bursts; counting each step in which a context is executing but retires nothing as a
   stall (as this script did before) counted cycles the ME had already counted a second
   time, and made the profile's cycles 1.17-1.18x the counters'.  The PCs are grouped by
   the image's labels into regions, and the polling of an empty ring (or of an ordering
   wait) is taken out: what is left is the work per forwarded frame, the fair
   comparison.  For the compiled builds
   the body (body_entry .. body_exit) is also given alone; polling there is an idle turn
   with nothing to pass on and a wait for a neighbour (fwd.uc's ``empty`` and
   ``order_wait`` code); an idle turn that passes on or applies upstream records does
   work for other frames and counts in "put turn".  The profile charges the instructions
   a context retires in one step to the PC the step began at, so a label's count is not an
   exact count of its executions: the turn start's work is taken from the code (per
   frame: the hand 3.75 instructions, the compiled builds 3) and the rest of that region
   is polling.

Figures are medians of --runs runs.  This is a benchmark, not a test: it asserts nothing.
Results go to docs/performance.md ("Compiled vs hand-written IPv4 forwarding").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.bench import router4_load as r4l
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.sema import Program
from npkit.compiler.me import compile_me
from npkit.link import Manifest, link
from npkit.link.plan import MAX_FWD_MES_PER_PORT
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import RouteTables
from npkit.sim.chip import Chip

ROOT = Path(__file__).resolve().parents[1]
SIZE = 64
ROUTER_ADDRESS = 0x0A000001  # local4: never a destination of the traffic
HAND_MES_PER_PORT = 2  # router4: an A/B pair of forwarding MEs per input port


# --------------------------------------------------------------------------- the builds
@dataclass(frozen=True)
class Region:
    """PCs [start, end) of an image, named; ``poll`` regions are waiting, not work."""

    name: str
    start: int
    end: int
    poll: bool = False


@dataclass(frozen=True)
class Build:
    name: str
    fwd_mes: tuple[int, ...]
    regions: tuple[Region, ...]
    # (shared region, poll region, per): `per` instructions of the shared region per
    # execution of the poll region's first instruction are polling too (ring re-tests)
    poll_overheads: tuple[tuple[str, str, int], ...]
    load: Callable[[r4l.Workload], Chip]
    # "turn start" instructions per frame (counted from the code); the rest of the region
    # is the polls' (the profile charges a step's instructions to the PC it began at, so
    # a count at one label is not an exact count of its executions)
    turn_start_per_frame: float | None = None


def regions_from(symbols: dict[str, int], cuts: list[tuple[str, str, bool]],
                 end: int) -> tuple[Region, ...]:
    """Regions from label to next cut label (the last one to ``end``)."""
    starts = sorted(((name, symbols[label], poll) for name, label, poll in cuts
                     if label in symbols), key=lambda s: s[1])  # a label may be gone
    bounds = [s for _, s, _ in starts[1:]] + [end]
    return tuple(Region(name, start, stop, poll)
                 for (name, start, poll), stop in zip(starts, bounds, strict=True))


def hand_build() -> Build:
    probe = r4l.load_router(r4l.Workload.make(0, 1, 1, SIZE))
    image = probe.chip.image_on(2)
    sym = dict(image.symbols)
    cuts = [("turn start", "loop", False), ("get + header + checks", "get", False),
            ("route + rewrite", "checked", False), ("put turn", "put_turn", False),
            ("put A wait", "put_a_full", True), ("put B", "put_b", False),
            ("put B wait", "put_b_wait", True), ("put B", "put_b_a_none", False),
            ("idle turn", "idle", True)]
    regions = regions_from(sym, cuts, len(image.words))
    # a wait poll re-runs its ring-state test; a frame's turn start is ctx_arb, the jump,
    # its ring test and br[get#] (rings 0..2) or a fall-through (ring 3): 3.75 on average
    overheads = (("put turn", "put A wait", 1), ("put B", "put B wait", 1))
    return Build("hand", (2, 3, 4, 5), regions, overheads,
                 lambda w: r4l.load_router(w).chip, turn_start_per_frame=3.75)


def compiled_build(name: str, source: Path, entry: str, fwd_mes_per_port: int) -> Build:
    program = compile_file(source)
    linked = link(program, compile_me(program, entry), fwd_mes_per_port=fwd_mes_per_port)
    image = next(i.image for i in linked.images if 2 in i.mes)
    # dispatch/fwd.uc's layout: own_apply: the last ME's put turn end | loop, ring tests |
    # get | body | body_exit: the verdict and the put turn (own frame, upstream records,
    # other verdicts) | order_wait: waits for a neighbour, keeping the turn | empty: the
    # idle turn's start and, when it has nothing to pass on, its end (an idle turn that
    # passes on upstream records runs the put turn's code: that is work, other frames'
    # records)
    cuts = [("put turn", "own_apply", False), ("turn start", "loop", False),
            ("poll empty ring", "empty", True),
            ("get + window + meta", "get", False), ("body", "body_entry", False),
            ("put turn", "body_exit", False), ("put wait", "order_wait", True)]
    regions = regions_from(dict(image.symbols), cuts, len(image.words))
    # a frame's turn start is ctx_arb, the jump and the ring test (taken to get); every
    # wait (or idle look) at an empty next-neighbour ring ran its test in "put turn"
    return Build(name, tuple(linked.program.fwd_mes), regions,
                 (("put turn", "put wait", 1),), lambda w: load_compiled(linked, program, w),
                 turn_start_per_frame=3)


def load_compiled(linked: Manifest, program: Program, workload: r4l.Workload) -> Chip:
    native = NativeProgram(program)
    for index in range(1, r4l.NEXT_HOPS + 1):  # router4_load's next hops, port = index & 1
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 1500})
    RouteTables.of(native).load(workload.routes, {})
    native.table_add("local4", ROUTER_ADDRESS, 1)
    run = CompiledRun(linked)
    run.load_memories(native)
    return run.chip


# --------------------------------------------------------------------------- profiling
@dataclass
class Profile:
    """Per fwd ME image PC: instructions retired and stalled cycles charged to it."""

    instructions: Counter[int] = field(default_factory=Counter)
    stalls: Counter[int] = field(default_factory=Counter)


def step_profile(chip: Chip, mes: tuple[int, ...], cycles: int) -> Profile:
    """Step the core one cycle at a time (all MEs run the same image PCs).

    An ME runs ahead of the chip's clock in bursts: one step can retire several
    instructions and add a taken branch's penalty to the ME's stalled cycles, after which
    its context stays "executing" while the clock catches up with cycles the ME has already
    counted.  So stalls are read from the ME's own counter, step by step, and charged to the
    PCs that retired in that step (in proportion to their instructions) or, when none did
    (a command FIFO that drains), to the PC the ME last retired.  Counting an executing
    context that retires nothing in a step as a stall instead counted those caught-up
    cycles twice: 1.17-1.18x the counters' busy + stalled cycles."""
    core = chip._core  # the bench reads the core directly: Chip.run has no single step
    profile = Profile()
    contexts = [(me, ctx) for me in mes for ctx in range(8)]
    state = {key: core.context(*key) for key in contexts}
    last_pc = {me: state[(me, 0)]["pc"] for me in mes}
    stalled = me_stalls(core, mes)

    def charge(me: int, stall: int, retired: Counter[int]) -> None:
        total = sum(retired.values())
        if not total:
            profile.stalls[last_pc[me]] += stall
            return
        for pc, n in retired.items():
            profile.stalls[pc] += stall * n / total

    for _ in range(cycles):
        core.run(1)
        retired: dict[int, Counter[int]] = {me: Counter() for me in mes}
        for key in contexts:
            after = core.context(*key)
            before = state[key]
            if after["instructions"] > before["instructions"]:
                n = after["instructions"] - before["instructions"]
                profile.instructions[before["pc"]] += n
                retired[key[0]][before["pc"]] += n
                last_pc[key[0]] = before["pc"]
            state[key] = after
        if not any(retired.values()):
            continue  # stalls counted meanwhile are charged at the next step that retires
        now = me_stalls(core, mes)
        for me in mes:
            if now[me] > stalled[me]:
                charge(me, now[me] - stalled[me], retired[me])
        stalled = now
    now = me_stalls(core, mes)
    for me in mes:
        if now[me] > stalled[me]:
            charge(me, now[me] - stalled[me], Counter())
    return profile


def me_stalls(core: Any, mes: tuple[int, ...]) -> dict[int, int]:
    counters = core.counters()["mes"]
    return {me: counters[me]["stalled_cycles"] for me in mes}


@dataclass(frozen=True)
class RegionFigures:
    instructions: float  # per frame transmitted, polling taken out
    cycles: float  # busy + stalled
    poll_instructions: float
    poll_cycles: float


def per_region(build: Build, profile: Profile, frames: int) -> dict[str, RegionFigures]:
    raw: dict[str, list[float]] = {}
    for region in build.regions:
        pcs = range(region.start, region.end)
        ins = sum(profile.instructions[pc] for pc in pcs)
        stl = sum(profile.stalls[pc] for pc in pcs)
        entry = raw.setdefault(region.name, [0.0, 0.0, 0.0, 0.0])
        if region.poll:
            entry[2] += ins
            entry[3] += ins + stl
        else:
            entry[0] += ins
            entry[1] += ins + stl
    labels = {r.name: r.start for r in build.regions}
    for shared, label, per in build.poll_overheads:
        if label in labels and shared in raw:
            move_to_polling(raw[shared], profile.instructions[labels[label]] * per)
    if build.turn_start_per_frame is not None and "turn start" in raw:
        entry = raw["turn start"]
        move_to_polling(entry, max(0.0, entry[0] - build.turn_start_per_frame * frames))
    n = max(1, frames)
    return {name: RegionFigures(v[0] / n, v[1] / n, v[2] / n, v[3] / n)
            for name, v in raw.items()}


def move_to_polling(entry: list[float], polls: float) -> None:
    """Move `polls` instructions of a region's work (and their share of its cycles: stalls
    split in proportion to instructions) to its polling."""
    share = min(1.0, polls / entry[0]) if entry[0] else 0.0
    moved_cycles = entry[1] * share
    entry[0] -= polls
    entry[1] -= moved_cycles
    entry[2] += polls
    entry[3] += moved_cycles


# --------------------------------------------------------------------------- one run
@dataclass(frozen=True)
class Sample:
    offered: int
    transmitted: int
    window_instructions: float  # per frame, counters, polling included
    window_cycles: float
    regions: dict[str, RegionFigures]
    profile_check: float  # profile instructions / counter delta over the profiled span
    cycle_check: float  # profile instructions + stalls / busy + stalled delta, same span
    host_s: float

    @property
    def lost(self) -> int:
        return self.offered - self.transmitted

    @property
    def work_instructions(self) -> float:
        return sum(r.instructions for r in self.regions.values())

    @property
    def work_cycles(self) -> float:
        return sum(r.cycles for r in self.regions.values())


def tx_frames(counters: dict[str, Any]) -> int:
    return sum(p["tx_frames"] for p in counters["ports"])


def fwd_totals(counters: dict[str, Any], mes: tuple[int, ...]) -> tuple[int, int]:
    """(instructions, busy + stalled cycles) of the forwarding MEs."""
    return (sum(counters["mes"][m]["instructions"] for m in mes),
            sum(counters["mes"][m]["busy_cycles"] + counters["mes"][m]["stalled_cycles"]
                for m in mes))


def run_once(build: Build, workload: r4l.Workload, load: float,
             profile_cycles: int) -> Sample:
    started = time.perf_counter()
    chip = build.load(workload)
    clock = chip.config.clock_hz
    gap = r4l.frame_interval_s(SIZE, load)
    for port, frames in workload.frames.items():  # all queued now: the profile steps the core
        chip._core.add_rx_frames(port, frames, [int(i * gap * clock) for i in range(len(frames))])
    count = len(workload.frames[0])
    span = count * gap * clock
    chip.run(cycles=int(r4l.WINDOW[0] * span))
    first = chip.counters()
    middle = int(sum(r4l.WINDOW) / 2 * span)
    chip.run(cycles=max(0, middle - chip.now))
    before = chip.counters()
    profile = step_profile(chip, build.fwd_mes, profile_cycles)
    after = chip.counters()
    chip.run(cycles=max(0, int(r4l.WINDOW[1] * span) - chip.now))
    last = chip.counters()
    chip.run(cycles=int(span) - chip.now + r4l.DRAIN_CYCLES)
    sent = max(1, tx_frames(last) - tx_frames(first))
    (i0, c0), (i1, c1) = fwd_totals(first, build.fwd_mes), fwd_totals(last, build.fwd_mes)
    (pi0, pc0), (pi1, pc1) = fwd_totals(before, build.fwd_mes), fwd_totals(after, build.fwd_mes)
    return Sample(
        offered=count * len(workload.frames), transmitted=tx_frames(chip.counters()),
        window_instructions=(i1 - i0) / sent, window_cycles=(c1 - c0) / sent,
        regions=per_region(build, profile, tx_frames(after) - tx_frames(before)),
        profile_check=sum(profile.instructions.values()) / max(1, pi1 - pi0),
        cycle_check=(sum(profile.instructions.values()) + sum(profile.stalls.values()))
        / max(1, pc1 - pc0),
        host_s=time.perf_counter() - started)


# --------------------------------------------------------------------------- report
def median(samples: list[Sample], figure: Callable[[Sample], float]) -> float:
    return statistics.median(figure(s) for s in samples)


def print_summary(results: dict[str, list[Sample]]) -> None:
    hand = results["hand"]
    print("\nper frame transmitted on the forwarding MEs (median of runs; cycles = busy + "
          "stalled; instructions = busy cycles)")
    print(f"{'build':>9} {'lost':>5} {'instr':>7} {'cycles':>7} {'| work instr':>12} "
          f"{'work cyc':>8} {'instr x':>7} {'cyc x':>6} {'| polls instr':>13} {'check':>6}")
    for name, samples in results.items():
        wi, wc = median(samples, lambda s: s.work_instructions), median(samples,
                                                                           lambda s: s.work_cycles)
        hi, hc = median(hand, lambda s: s.work_instructions), median(hand, lambda s: s.work_cycles)
        polls = median(samples, lambda s: sum(r.poll_instructions for r in s.regions.values()))
        print(f"{name:>9} {max(s.lost for s in samples):5d} "
              f"{median(samples, lambda s: s.window_instructions):7.1f} "
              f"{median(samples, lambda s: s.window_cycles):7.1f} {wi:12.1f} {wc:8.1f} "
              f"{wi / hi:7.2f} {wc / hc:6.2f} {polls:13.1f} "
              f"{median(samples, lambda s: s.profile_check):5.3f}/"
              f"{median(samples, lambda s: s.cycle_check):5.3f}")
    print("instr/cycles: counters over the window, polling included; work: profile, polling "
          "taken out; x: work / hand's work; check: profiled instructions / cycles against "
          "the counters' deltas")
    for name, samples in results.items():
        print(f"\n{name}: work per frame by region (profile, median)")
        for region in samples[0].regions:
            ins = median(samples, lambda s, r=region: s.regions[r].instructions)
            cyc = median(samples, lambda s, r=region: s.regions[r].cycles)
            if ins or cyc:
                print(f"  {region:<24} {ins:7.1f} instr {cyc:7.1f} cycles")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npkit.bench.compiled_vs_hand",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", type=float, default=15.0, help="%% of 10GbE line rate")
    parser.add_argument("--frames", type=int, default=3000, help="frames per port")
    parser.add_argument("--routes", type=int, default=3000, help="random /16../24 routes")
    parser.add_argument("--runs", type=int, default=3, help="runs per build (median)")
    parser.add_argument("--seed", type=int, default=1, help="seed of run 0 (run k: seed + k)")
    parser.add_argument("--profile-cycles", type=int, default=150_000,
                        help="cycles stepped one at a time in the middle of the window")
    parser.add_argument("--builds", default="hand,ipv4_fwd,router",
                        help="which builds, comma-separated (hand is always measured)")
    parser.add_argument("--fwd-mes-per-port", type=int, default=HAND_MES_PER_PORT,
                        choices=range(1, MAX_FWD_MES_PER_PORT + 1), metavar="N",
                        help="forwarding MEs per input port of the compiled builds (1..4; "
                        "default 2, router4's A/B pair)")
    args = parser.parse_args(argv)
    if not 0 < args.load <= 100:
        parser.error("--load must be above 0 and at most 100 (% of line rate)")
    if args.frames < 100 or args.runs < 1 or args.profile_cycles < 1000:
        parser.error("--frames >= 100, --runs >= 1, --profile-cycles >= 1000")
    span = args.frames * r4l.frame_interval_s(SIZE, args.load / 100) * 1.4e9
    if args.profile_cycles > (r4l.WINDOW[1] - r4l.WINDOW[0]) * span:
        parser.error(f"--profile-cycles must fit in the window ({int(0.6 * span)} cycles "
                     f"with these --frames and --load)")
    print("command: python -m npkit.bench.compiled_vs_hand " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    print(f"{SIZE}-byte frames, {args.frames} per port on both ports at {args.load:g} % of "
          f"line rate, {args.routes} routes + default, {args.runs} run(s), seeds "
          f"{args.seed}..{args.seed + args.runs - 1}; compiled builds: "
          f"{args.fwd_mes_per_port} forwarding ME(s) per port (hand: {HAND_MES_PER_PORT})")
    wanted = {"hand", *args.builds.split(",")}
    makers = {"hand": hand_build,
              "ipv4_fwd": lambda: compiled_build("ipv4_fwd", ROOT / "microblocks" /
                                                 "ipv4_fwd.mbl", "ipv4_fwd",
                                                 args.fwd_mes_per_port),
              "router": lambda: compiled_build("router", ROOT / "examples" / "router" /
                                               "router.mbl", "router", args.fwd_mes_per_port)}
    workloads = [r4l.Workload.make(args.seed + k, args.routes, args.frames, SIZE)
                 for k in range(args.runs)]
    # every build first: the runs then measure one snapshot of the sources
    builds = {name: make() for name, make in makers.items() if name in wanted}
    results: dict[str, list[Sample]] = {}
    for name, build in builds.items():
        results[name] = [run_once(build, w, args.load / 100, args.profile_cycles)
                         for w in workloads]
        print(f"  {name}: lost {[s.lost for s in results[name]]} "
              f"({sum(s.host_s for s in results[name]):.1f} s host)", flush=True)
    print_summary(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
