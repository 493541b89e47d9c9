"""How fast the RTL microengine simulates under Verilator, beside the C++ model's ME.

    python -m npkit.bench.rtl_speed [--cycles N] [--model-cycles M] [--repeat 3]
        [--clock wall|cpu]

The program is the C++ core's ALU loop (tests/sim/core/bench_alu_loop.py): 7 ALU operations
and a taken branch whose defer[3] slots hide the penalty, 8 instructions in 8 cycles, on
all 8 contexts of one ME (context 0 loops; the others leave after their first branch, so
the ME is never idle).  It runs N cycles on the Verilated RTL (sim/rtl, built on demand
before any timing) and M cycles on one ME of the C++ model (much faster, so more cycles
for a measurable time), and prints the median simulated cycles per host second of each;
only ``run`` is timed (loading and building the chip are not).  The RTL is clocked cycle
by cycle from C++ (two evaluations per cycle), the model runs bursts.

``--lockstep N`` also runs the packaged l2wire (64-byte frames at line rate on both ports)
for N chip cycles three ways -- plain, with the debugger's instrumented loop on (coverage
counting, the same loop lockstep needs), and with its first ME mirrored by the RTL in
lockstep (sim/rtl/lockstep.py) -- and prints the chip cycles per host second of each.

``--clock cpu`` times with the process's CPU time instead of the wall clock (on a shared
host the wall clock counts other processes' time).  A benchmark, not a test: it asserts
nothing.  Results go to docs/rtl.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from npkit.sim import _core, isa
from npkit.sim.config import ChipConfig
from npkit.sim.rtl.rtlme import RtlME

A, B = 0x00, 0x20


def _alu(dest: int, a: int, op: str, b: int, shift: str = "<<", shamt: int = 0) -> int:
    return isa.encode(isa.BY_MNEMONIC["alu"].opcode,
                      {"op": isa.ALU_OPS[op], "dest": dest, "a": a, "b": b,
                       "shift": isa.SHIFT_TYPES[shift], "shamt": shamt})


def _br(target: int, defer: int) -> int:
    return isa.encode(isa.BY_MNEMONIC["br"].opcode,
                      {"cond": isa.CONDITIONS["br"], "target": target, "defer": defer})


def program() -> list[int]:
    """Context 0 loops at 1..8 for ever; the other contexts leave through ctx_arb[kill]."""
    loop = [_alu(A + 1, A + 1, "+", B + 1), _alu(A + 2, A + 1, "XOR", B + 2),
            _alu(A + 3, A + 2, "AND", B + 3), _alu(A + 4, A + 3, "OR", B + 4),
            _br(1, 3), _alu(A + 5, A + 4, "-", B + 5), _alu(A + 6, A + 5, "+", B + 6, "<<", 3),
            _alu(A + 7, A + 6, "B-A", B + 7)]
    br_ctx = isa.encode(isa.BY_MNEMONIC["br=ctx"].opcode,
                        {"ctx": 0, "ne": 1, "target": 1 + len(loop), "defer": 0})
    kill = isa.encode(isa.BY_MNEMONIC["ctx_arb"].opcode, {"mode": isa.CTX_ARB_MODES["kill"]})
    return [br_ctx, *loop, kill]


def _timed(clock: Callable[[], float], setup: Callable[[], Callable[[], int]]) -> float:
    """Cycles per second of the run that setup() returns (setup itself is not timed)."""
    run = setup()
    start = clock()
    cycles = run()
    return cycles / (clock() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=2_000_000, help="RTL cycles")
    parser.add_argument("--model-cycles", type=int, default=100_000_000, help="model cycles")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--lockstep", type=int, default=0, metavar="N",
                        help="also time N chip cycles of l2wire with an ME in lockstep")
    args = parser.parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    config = ChipConfig.load("ixp2800")
    words = program()
    rtl = RtlME.for_config(config)  # builds (or finds) the library before any timing

    def setup_rtl() -> Callable[[], int]:
        rtl.load(words)
        return lambda: rtl.run(args.cycles)

    def setup_model() -> Callable[[], int]:
        core = _core.Core(config.to_core_dict(), 1)
        core.load(0, words, 8)

        def run() -> int:
            core.run(args.model_cycles)
            return int(core.now)
        return run

    rtl_rates = [_timed(clock, setup_rtl) for _ in range(args.repeat)]
    model_rates = [_timed(clock, setup_model) for _ in range(args.repeat)]
    rtl_rate, model_rate = statistics.median(rtl_rates), statistics.median(model_rates)
    print(f"RTL ME (Verilator): {rtl_rate / 1e6:8.3f} M cycles/s")
    print(f"C++ model, one ME:  {model_rate / 1e6:8.3f} M cycles/s")
    print(f"model / RTL:        {model_rate / rtl_rate:8.1f} x  "
          f"({args.cycles} RTL / {args.model_cycles} model cycles, median of {args.repeat}, "
          f"{args.clock} clock)")
    if args.lockstep:
        for mode in ("plain", "instrumented", "lockstep"):
            rates = [_timed(clock, lambda mode=mode: _l2wire(mode, args.lockstep))
                     for _ in range(args.repeat)]
            print(f"l2wire chip, {mode:12s}: {statistics.median(rates) / 1e3:9.1f} k chip "
                  f"cycles/s (median of {args.repeat}, {args.clock} clock)")


def _l2wire(mode: str, cycles: int) -> Callable[[], int]:
    """A loaded l2wire chip with traffic; its run: plain, instrumented or in lockstep."""
    from npkit.bench import sim_speed
    from npkit.runtime.loader import load_manifest
    from npkit.sim.packets import ListSource, RxFrame
    from npkit.sim.rtl.lockstep import Lockstep

    chip = load_manifest(sim_speed.manifest_path()).chip
    for port in (0, 1):
        chip.attach_source(port, ListSource([RxFrame(f) for f in
                                             sim_speed.min_size_frames(3000, port)]))
    if mode == "instrumented":
        chip.enable_coverage()
    elif mode == "lockstep":
        Lockstep.attach(chip, min(chip._images))

    def run() -> int:
        chip.run(cycles=cycles)
        return int(chip.now)
    return run


if __name__ == "__main__":
    main()
