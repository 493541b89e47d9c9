"""The waypoint walk (compiler/me/path_walk.py) against a hand count on a small loop with
a branch, a subroutine called through load_addr / rtn, a jump table and a memory wait.
(Against the simulator: tests/bench/lab/test_verdict.py walks rx_eth.uc and times one
frame on the idle chip.)"""

from __future__ import annotations

import pytest

from npkit.compiler.me.path_walk import Waypoint, walk
from npkit.compiler.me.report import ReportError
from npkit.compiler.uc import assemble_text

PENALTY = 3          # ixp2800.toml me.branch_taken_penalty
SRAM_READ_4B = 7 + 150   # ceil(4 B / 0.64 B a cycle) + [sram] latency, ixp2800.toml

LOOP = """
start:
    immed[a0, 1]
    alu[--, a0, -, 0]
    beq[skip#]
    sram[read, $0, a0, 0, 1], sig_done[1]
    load_addr[a1, back#]
    br[sub#]
back:
    ctx_arb[1]
    br[start#]
skip:
    immed[a3, 3]
    jump[a3, table#]
table:
    br[start#]
    br[start#]
    br[start#]
sub:
    alu[a2, a2, +, 1]
    rtn[a1]
"""


def test_the_walk_counts_what_a_hand_count_gives() -> None:
    image = assemble_text(LOOP, filename="loop.uc")
    cost = walk(image, [Waypoint("start"), Waypoint("back"), Waypoint("start")])
    # immed, alu, beq (falls through), sram, load_addr, br sub (+3), alu, rtn (+3),
    # ctx_arb, br start (+3)
    assert cost.instructions == 10
    assert cost.cycles == 10 + 3 * PENALTY
    # the read is issued at cycle 3 and completes at 3 + 157; ctx_arb runs at 14 -> 15
    assert cost.memory_wait_cycles == 3 + SRAM_READ_4B - 15
    assert cost.commands == {"sram read": 1}
    assert cost.thread_cycles == cost.cycles + cost.memory_wait_cycles


def test_a_waypoint_takes_the_branch_and_the_table_entry() -> None:
    image = assemble_text(LOOP, filename="loop.uc")
    cost = walk(image, [Waypoint("start"), Waypoint("skip"), Waypoint("table", 2),
                        Waypoint("start")])
    # immed, alu, beq taken (+3), immed, jump (+3) to entry 2, br start (+3)
    assert cost.instructions == 6
    assert cost.cycles == 6 + 3 * PENALTY
    assert cost.memory_wait_cycles == 0
    image_pcs = image.symbols
    assert cost.path[-1] == image_pcs["table"] + 2


def test_worst_takes_the_longer_arm() -> None:
    image = assemble_text(LOOP, filename="loop.uc")
    fall = walk(image, [Waypoint("start"), Waypoint("back")])
    worst = walk(image, [Waypoint("start"), Waypoint("back", how="worst")])
    assert worst.cycles >= fall.cycles


STUCK = """
spin:
    br[spin#]
stop:
    ctx_arb[kill]
after:
    alu[a0, a0, +, 1]
"""


def test_a_waypoint_the_path_cannot_reach_is_an_error() -> None:
    image = assemble_text(STUCK, filename="stuck.uc")
    with pytest.raises(ReportError, match="loops at"):
        walk(image, [Waypoint("spin"), Waypoint("after")])
    with pytest.raises(ReportError, match="ends at"):
        walk(image, [Waypoint("stop"), Waypoint("after")])
    with pytest.raises(ReportError, match="at least two"):
        walk(image, [Waypoint("spin")])
