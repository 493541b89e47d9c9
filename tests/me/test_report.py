"""The compile report (compiler/me/report.py) against hand-counted bodies, the simulator
(one thread runs the body: its executing and sleeping cycles), and a brute-force longest
path over randomly generated branchy bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me.report import (
    ReportError,
    abi_violations,
    analyze,
    analyze_body,
    render_report,
    report_command_text,
    to_json,
    wrap_body,
)
from npkit.compiler.uc import assemble_file, assemble_text
from npkit.microblocks.uc.router4 import mapping as router4_mapping
from npkit.sim.chip import Chip
from npkit.sim.config import ChipConfig

ROOT = Path(__file__).resolve().parents[2]
CLOCK = 1.4e9           # ixp2800.toml me.clock_hz
PENALTY = 3             # ixp2800.toml me.branch_taken_penalty

STRAIGHT = """
body_entry#:
    alu[a0, a1, +, b1]
    immed[a2, 0x1234]
    alu_shf[b3, --, B, a0, <<4]
    br[body_exit#]
"""

DEFERRED = """
body_entry#:
    alu[a0, a1, +, b1]
    br[body_exit#], defer[2]
    alu[a2, a0, +, 1]
    alu[a3, a0, +, 2]
"""

# a0 - b0 != 0 at run time (a0 = 1, b0 = 0), so the simulator takes the long arm too
DIAMOND = """
body_entry#:
    immed[a0, 1]
    alu[--, a0, -, b0]
    beq[b_short#]
    alu[a1, a1, +, 1]
    alu[a1, a1, +, 2]
    alu[a1, a1, +, 3]
    br[b_join#]
b_short#:
    alu[a2, a2, +, 1]
b_join#:
    alu[a3, a1, +, b2]
    br[body_exit#]
"""

LOOP = """
body_entry#:
    immed[a0, 4]
b_loop#:
    alu[a1, a1, +, b1]
    alu[a0, a0, -, 1]
    bne[b_loop#]
    br[body_exit#]
"""

NESTED = """
body_entry#:
    immed[a0, 2]
b_outer#:
    immed[a1, 3]
b_inner#:
    alu[a1, a1, -, 1]
    bne[b_inner#]
    alu[a0, a0, -, 1]
    bne[b_outer#]
    br[body_exit#]
"""

MEMORY = """
body_entry#:
    sram[read, $0, a0, 0, 2], ctx_swap[1]
    scratch[get, $2, a1, 0, 1], sig_done[2]
    dram[read, $$0, a2, 0, 2], sig_done[3]
    msf[read, $4, a3, 0, 1], sig_done[4]
    hash_48[$5, 1], sig_done[5]
    ctx_arb[2, 3, 4, 5]
    scratch[incr, --, a4, 0]
    sram[write, $7, a0, 4, 1], sig_done[6]
    br[body_exit#]
"""

# memory the simulator can run without rings or media set up (addresses 0)
SIM_MEMORY = """
body_entry#:
    immed[a0, 0]
    immed[a1, 0]
    immed[a2, 0]
    sram[read, $0, a0, 0, 2], ctx_swap[1]
    scratch[read, $2, a1, 0, 1], sig_done[2]
    dram[read, $$0, a2, 0, 2], sig_done[3]
    hash_48[$5, 1], sig_done[5]
    ctx_arb[2, 3, 5]
    sram[read, $3, a0, 8, 1], sig_done[4]
    alu[a3, a0, +, 1]
    alu[a3, a3, +, 1]
    ctx_arb[4]
    br[body_exit#]
"""


def round_chip() -> ChipConfig:
    """The ixp2800 preset with round memory numbers, for latencies counted by hand."""
    raw = copy.deepcopy(ChipConfig.load("ixp2800").raw)
    raw["sram"].update(latency=100, read_bytes_per_cycle=1.0, write_bytes_per_cycle=1.0)
    raw["scratch"].update(latency=50, bytes_per_cycle=4.0)
    raw["dram"].update(latency=200, bytes_per_cycle=2.0, min_access_bytes=16)
    raw["msf"]["csr_latency"] = 30
    raw["hash"].update(latency=40, occupancy=5)
    return ChipConfig(raw=raw)


# ------------------------------------------------------------------ the simulator's count
# Harness: context 0 branches over the kill (br=ctx taken: 1 + 3 cycles), lets the others
# kill themselves (ctx_arb[voluntary]: 1), runs the body, then ctx_arb[kill] (1).
SIM_HARNESS_CYCLES = 1 + PENALTY + 1 + 1


def simulate_one_thread(body: str) -> tuple[int, int]:
    """(executing, sleeping) cycles of context 0 running the body once on ME 0."""
    text = "    br=ctx[0, go#]\n    ctx_arb[kill]\ngo#:\n    ctx_arb[voluntary]\n" + wrap_body(body)
    chip = Chip(ChipConfig.load("ixp2800"))
    chip.load(assemble_text(text), mes=[0])
    assert chip.run(cycles=100_000, until_idle=True).reason == "idle"
    ctx0 = chip.counters()["mes"][0]["contexts"][0]
    return ctx0["executing_cycles"] - SIM_HARNESS_CYCLES, ctx0["sleeping_cycles"]


# ------------------------------------------------------------------ hand counts
def test_straight_line() -> None:
    s = analyze_body(STRAIGHT)
    assert s.instructions == 4
    assert s.path_instructions == 4
    assert s.path_cycles == 4 + PENALTY
    assert s.branch_penalty_cycles == PENALTY
    assert not s.lower_bound
    assert s.memory_commands == {} and s.memory_wait_cycles == 0
    assert s.registers["gpr_a"] == ("a0", "a1", "a2")
    assert s.registers["gpr_b"] == ("b1", "b3")
    assert s.threads == 8
    assert s.pps_per_me == pytest.approx(CLOCK / 7) and s.pps_bound == "alu"
    assert simulate_one_thread(STRAIGHT) == (7, 0)


def test_defer_slots_shorten_the_penalty() -> None:
    s = analyze_body(DEFERRED)
    assert s.instructions == 4
    assert s.path_cycles == 4 + (PENALTY - 2)
    assert simulate_one_thread(DEFERRED) == (5, 0)


def test_diamond_takes_the_long_arm() -> None:
    s = analyze_body(DIAMOND)
    assert s.instructions == 10
    # immed, alu, beq (not taken), 3 alu, br (+3), join alu, br (+3)
    assert s.path_instructions == 9
    assert s.path_cycles == 9 + 2 * PENALTY
    image = assemble_text(wrap_body(DIAMOND))
    assert image.symbols["b_short"] not in s.path
    assert simulate_one_thread(DIAMOND) == (15, 0)


def test_bounded_loop() -> None:
    s = analyze_body(LOOP, loop_trips={"b_loop": 4})
    # immed + 4 x 3 body + 3 taken back edges x 3 + br (1 + 3)
    assert s.path_cycles == 1 + 12 + 9 + 4
    assert s.path_instructions == 1 + 12 + 1
    assert not s.lower_bound
    assert simulate_one_thread(LOOP) == (26, 0)


def test_loop_of_one_trip_never_takes_its_back_edge() -> None:
    s = analyze_body(LOOP, loop_trips={"b_loop#": 1})
    assert s.path_cycles == 1 + 3 + 4 and not s.lower_bound


def test_unbounded_loop_is_a_lower_bound_per_iteration() -> None:
    s = analyze_body(LOOP)
    assert s.path_cycles == 1 + 3 + 4
    assert s.lower_bound
    assert any("b_loop#" in n and "per iteration" in n for n in s.notes)
    assert "per iteration" in render_report({"loop": s})
    assert ">= 8" in render_report({"loop": s})


def test_nested_loops_restart_the_inner_count() -> None:
    s = analyze_body(NESTED, loop_trips={"b_outer": 2, "b_inner": 3})
    inner = 3 * 2 + 2 * PENALTY                  # 3 iterations of 2, 2 back edges
    outer_iteration = 1 + inner + 2
    assert s.path_cycles == 1 + 2 * outer_iteration + PENALTY + (1 + PENALTY)
    assert s.path_cycles == 38
    assert simulate_one_thread(NESTED) == (38, 0)


def test_memory_commands_of_each_unit() -> None:
    s = analyze_body(MEMORY, chip=round_chip())
    assert s.memory_commands == {"sram": 2, "scratch": 2, "dram": 1, "msf": 1, "hash": 1}
    assert s.memory_detail == {"dram read": 1, "hash hash_48": 1, "msf read": 1,
                               "scratch get": 1, "scratch incr": 1, "sram read": 1,
                               "sram write": 1}
    assert s.path_cycles == 9 + PENALTY
    # sram read 8 B: issued at 0, done 0 + 8 + 100 = 108; asleep from 1: 107.
    # scratch get issued at 108 (done 108 + 1 + 50 = 159), dram 2 quadwords at 109
    # (109 + 8 + 200 = 317), msf at 110 (140), hash at 111 (111 + 40 + 5 = 156);
    # ctx_arb ends at 113 and sleeps until 317: 204.
    assert s.memory_wait_cycles == 107 + 204
    assert s.thread_cycles == 12 + 311
    assert s.signals_waited == (1, 2, 3, 4, 5)
    assert s.signals_pending_at_exit == (6,)       # the sram write nobody waited for
    assert s.pps_per_me == pytest.approx(8 * CLOCK / 323) and s.pps_bound == "latency"
    assert s.registers["xfer"] == ("$0", "$1", "$2", "$4", "$5", "$6", "$7",
                                   "$$0", "$$1", "$$2", "$$3")
    assert abi_violations(s) == ["leaves with signals pending: 6"]


def test_memory_wait_matches_the_simulator() -> None:
    s = analyze_body(SIM_MEMORY)
    executing, sleeping = simulate_one_thread(SIM_MEMORY)
    assert (s.path_cycles, s.memory_wait_cycles) == (executing, sleeping)
    assert sleeping > 400       # the DRAM read dominates: not a vacuous match


def test_abi_violations_name_dispatch_registers_and_signals() -> None:
    s = analyze_body("body_entry#:\n    alu[a12, a0, +, b13]\n    ctx_arb[11]\n"
                     "    br[body_exit#]\n")
    assert abi_violations(s) == ["uses dispatch registers a12", "uses dispatch registers b13",
                                 "waits for dispatch signals 11"]


def test_clear_errors() -> None:
    image = assemble_text(wrap_body(STRAIGHT))
    with pytest.raises(ReportError, match="entry label nowhere# is not in the image"):
        analyze(image, entry="nowhere")
    stuck = assemble_text(wrap_body("body_entry#:\n    ctx_arb[kill]\n    br[body_exit#]\n"))
    with pytest.raises(ReportError, match="no path from body_entry# reaches body_exit#"):
        analyze(stuck)
    with pytest.raises(ReportError, match="at least 1"):
        analyze_body(LOOP, loop_trips={"b_loop": 0})


# ------------------------------------------------------------------ random bodies
@st.composite
def branchy_bodies(draw: st.DrawFn) -> list[tuple[int, str, int, int]]:
    """Blocks (ALU instructions, terminator, target block, defer): forward branches only;
    target == len(blocks) is body_exit."""
    n = draw(st.integers(1, 7))
    blocks = []
    for k in range(n):
        size = draw(st.integers(1 if k == 0 else 0, 4))
        term = draw(st.sampled_from(("fall", "br", "beq")))
        target = draw(st.integers(k + 1, n))
        defer = draw(st.integers(0, 3)) if term != "fall" else 0
        blocks.append((size, term, target, defer))
    return blocks


def _body_text(blocks: list[tuple[int, str, int, int]]) -> str:
    lines = ["body_entry#:"]
    for k, (size, term, target, defer) in enumerate(blocks):
        lines.append(f"b_{k}#:")
        lines += ["    alu[a1, a1, +, 1]"] * size
        label = "body_exit#" if target == len(blocks) else f"b_{target}#"
        if term != "fall":
            lines.append(f"    {term}[{label}]" + (f", defer[{defer}]" if defer else ""))
            lines += ["    alu[a2, a2, +, 1]"] * defer
    return "\n".join(lines) + "\n"


def _reference_longest(blocks: list[tuple[int, str, int, int]]) -> int:
    """Longest cycles from block 0 to the exit, by recursion over the block list."""
    cost = [0] * (len(blocks) + 1)
    for k in reversed(range(len(blocks))):
        size, term, target, defer = blocks[k]
        taken = max(0, PENALTY - defer) + cost[target]
        if term == "fall":
            cost[k] = size + cost[k + 1]
        elif term == "br":
            cost[k] = size + 1 + defer + taken
        else:
            cost[k] = size + 1 + defer + max(taken, cost[k + 1])
    return cost[0]


def _reference_static(blocks: list[tuple[int, str, int, int]]) -> int:
    """Instructions of the blocks reachable from block 0."""
    reached, todo = set(), [0]
    while todo:
        k = todo.pop()
        if k == len(blocks) or k in reached:
            continue
        reached.add(k)
        _, term, target, _ = blocks[k]
        todo += [target] if term == "br" else [k + 1] if term == "fall" else [target, k + 1]
    return sum(blocks[k][0] + (blocks[k][1] != "fall") + blocks[k][3] for k in reached)


@settings(max_examples=60, deadline=None)
@given(branchy_bodies())
def test_worst_path_equals_brute_force(blocks: list[tuple[int, str, int, int]]) -> None:
    s = analyze_body(_body_text(blocks))
    assert s.path_cycles == _reference_longest(blocks)
    assert s.instructions == _reference_static(blocks)
    assert s.path_cycles == s.path_instructions + s.branch_penalty_cycles


# ------------------------------------------------------------------ output
def test_json_and_text_reports() -> None:
    stats = {"straight": analyze_body(STRAIGHT), "memory": analyze_body(MEMORY)}
    data = json.loads(to_json(stats))
    assert data["straight"]["path_cycles"] == 7
    assert data["memory"]["memory_commands"]["sram"] == 2
    assert data["memory"]["thread_cycles"] == (data["memory"]["path_cycles"]
                                               + data["memory"]["memory_wait_cycles"])
    text = render_report(stats)
    assert "straight" in text and "memory" in text and "est. pps/ME" in text
    assert "signals still pending at the exit: 6" in text
    with_mapping = report_command_text(stats, mapping=router4_mapping())
    assert "4 forwarding MEs" in with_mapping and "not done yet" in with_mapping
    assert json.loads(report_command_text(stats, json_output=True)) == data


# ------------------------------------------------------------------ router4's forwarding
def test_router4_ipv4_fwd_sanity() -> None:
    """The hand-written forwarding loop, from loop# back to loop#: loose bounds only."""
    image = assemble_file(ROOT / "microblocks" / "uc" / "ipv4_fwd.uc",
                          include_dirs=(ROOT / "microblocks" / "uc",))
    s = analyze(image, entry="loop", exits=("loop",), loop_trips={"probe_next": 15})
    print(render_report({"ipv4_fwd.uc loop": s}, width=140))
    # README "Order": ~100 instructions a frame; the worst path adds the slow path's
    # re-checks and 15 local4 probes
    assert 150 < s.instructions < 400
    assert 100 < s.path_cycles < 600
    assert s.lower_bound                       # the NN wait loops have no bound
    assert s.memory_commands["dram"] == 2      # header read and write-back
    assert s.memory_commands["sram"] >= 4      # local4, trie root, next hop, probes
    assert 1e6 < s.pps_per_me < CLOCK / 100
