"""Raw speed of the core on a tight ALU loop (not a test: run it by hand).

    python tests/sim/core/bench_alu_loop.py [burst_cycles]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coreprog import A, B, alu, br, make_core  # noqa: E402

# 7 ALU ops + a taken branch whose defer[3] slots hide the penalty: 8 instructions, 8 cycles
LOOP = [alu(A(1), A(1), "+", B(1)), alu(A(2), A(1), "XOR", B(2)), alu(A(3), A(2), "AND", B(3)),
        alu(A(4), A(3), "OR", B(4)), br("br", 0, defer=3), alu(A(5), A(4), "-", B(5)),
        alu(A(6), A(5), "+", B(6), "<<", 3), alu(A(7), A(6), "B-A", B(7))]


def measure(mes: int, instructions: int, burst: int) -> tuple[float, float]:
    """(instructions per host second, chip cycles per host second)."""
    core = make_core(run__burst_cycles=burst)
    for me in range(mes):
        core.load(me, LOOP)
    core.run(1000)
    start_n, start_t = core.instructions_retired, time.perf_counter()
    start_cycles = core.now
    core.run(instructions // mes)
    elapsed = time.perf_counter() - start_t
    return ((core.instructions_retired - start_n) / elapsed, (core.now - start_cycles) / elapsed)


def main() -> None:
    burst = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    for mes in (1, 16):
        ips, cps = measure(mes, 100_000_000, burst)
        print(f"{mes:2d} ME(s): {ips / 1e6:6.1f} M instructions/s, {cps / 1e6:6.1f} M cycles/s")


if __name__ == "__main__":
    main()
