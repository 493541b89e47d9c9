"""Issue 18's acceptance, through the debugger: the compiled router stepped through one
packet by MBL line (`Debugger.step_line`, from the pipeline's first line to the end of the
frame's body), and at every line each MBL variable the debugger can read
(`Debugger.variable_values`: the image's variable debug info) equals the value the native
target's line trace (npkit.compiler.mbl.linetrace: the program JIT-compiled with a call-back
per statement, an independent build) has for it at that line."""

from __future__ import annotations

from pathlib import Path

import pytest
from mbl_variables import compare
from scapy.all import IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import compile_file
from npkit.compiler.mbl.linetrace import LineTracer
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.debugger import Debugger
from npkit.runtime.lpm import RouteTables

ROUTER = Path(__file__).parents[2] / "examples" / "router" / "router.mbl"
ROUTES4 = {(0x0A000000, 8): 1, (0x0A010000, 16): 2}
ROUTES6 = {(0x20010DB8 << 96, 32): 1}
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 0, 600)}
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}
FIRST_LINE = "microblocks/router.mbl:7"   # eth_classify's first statement
MAX_LINES = 400


def v4(dst: str, payload: int = 18, **kw) -> bytes:
    return raw(Ether(**MACS) / IP(src="198.18.0.1", dst=dst, **kw) / UDP(sport=1, dport=2)
               / (b"p" * payload))


FRAMES = {
    "forward": v4("10.1.2.3", ttl=9),
    "too big": v4("10.1.9.9", payload=700, ttl=5),          # next hop 2's MTU is 600
    "ipv6": raw(Ether(**MACS) / IPv6(src="2001:db8:ffff::1", dst="2001:db8:1::5")
                / UDP() / (b"q" * 18)),
}


@pytest.fixture(scope="module")
def router():
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    tracer = LineTracer(program)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        tracer.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(tracer).load(ROUTES4, ROUTES6)
    return linked, tracer


def walk(dbg: Debugger) -> list[tuple[str, int, list]]:
    """(file, line, [(VariableAt, value)]) at each MBL line the frame's context reaches,
    stepping line by line from the pipeline's first line until the body is done."""
    dbg.break_line(FIRST_LINE)
    stop = dbg.cont()
    assert stop.reason == "breakpoint", stop.describe()
    me, ctx = stop.me, stop.ctx
    for bp in list(dbg.breakpoints):
        dbg.delete(bp)
    info = dbg.info(me)
    stops = []
    for _ in range(MAX_LINES):
        file, line = info.line_of(dbg.context(me, ctx)["pc"])
        stops.append((file, line, dbg.variable_values(me, ctx)))
        stop = dbg.step_line(me, ctx)
        if stop.reason != "step":      # no MBL line any more: the body is done
            break
    return stops


@pytest.mark.parametrize("case", sorted(FRAMES))
def test_step_by_line_with_variables_equal_to_the_native_target(router, case: str) -> None:
    linked, tracer = router
    frame = FRAMES[case]
    native = tracer.trace(frame, 0)
    run = CompiledRun(linked)
    run.load_memories(tracer)
    dbg = Debugger(run.chip, run.program)
    dbg.offer(0, [frame])
    stops = walk(dbg)
    lines = [(f, n) for f, n, _ in stops]
    # most lines the native target ran are lines the chip's thread stopped at (a line
    # whose code the compiler merged into another's has no instruction of its own)
    ran = {(s.loc.file, s.loc.line) for s in native.states}
    assert len(ran & set(lines)) >= len(ran) // 2, (case, sorted(ran - set(lines)))
    agreed, wrong = compare(
        [(file, line, {(var.variable.name, var.variable.decl): value for var, value in values})
         for file, line, values in stops], native)
    assert not wrong, "\n".join(wrong)
    assert agreed >= 3, f"{case}: only {agreed} values compared"


def counts() -> list[str]:
    """docs/debugging.md's figures: `.venv/bin/python tests/runtime/test_debugger_variables.py`
    (from outside the checkout's root, as the other scripts)."""
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    tracer = LineTracer(program)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        tracer.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(tracer).load(ROUTES4, ROUTES6)
    out = []
    for case, frame in sorted(FRAMES.items()):
        run = CompiledRun(linked)
        run.load_memories(tracer)
        dbg = Debugger(run.chip, run.program)
        dbg.offer(0, [frame])
        stops = walk(dbg)
        values = [v for _, _, vs in stops for _, v in vs]
        out.append(f"{case}: {len(stops)} lines, {len(values)} variables in scope, "
                   f"{sum(v is not None for v in values)} located")
    return out


if __name__ == "__main__":
    print("\n".join(counts()))
