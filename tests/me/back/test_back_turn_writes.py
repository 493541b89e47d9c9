"""The receive stage's scratch writes left in flight past its turn (compiler/me/back/buffers.py:
turn_write_blocks, turn_write_step, plan_turn_writes) on hand-made WIR functions: which
blocks may defer a write, which slots each block finds in flight and leaves in flight, the
expected sets worked out by hand from the rule (a block starts with what every predecessor
leaves; it leaves what all its successors expect; passing the turn or returning leaves
nothing).  The code these plans give for frame_rx is tests/me/back/test_back_buffers.py's,
its behaviour on the chip tests/me/link/test_pool_media.py's.

    .venv/bin/python -m pytest -q tests/me/back/test_back_turn_writes.py
"""

from __future__ import annotations

from npkit.compiler.me import wir
from npkit.compiler.me.back.buffers import (
    blocks_in_turn,
    plan_turn_writes,
    turn_write_blocks,
    turn_write_step,
)

SLOTS = (8, 9)
R0 = wir.Reg(0, "x")


def write(word: int) -> wir.MemWrite:
    return wir.MemWrite(wir.SCRATCH, word, (1,))


def function(*blocks: wir.Block) -> wir.Function:
    return wir.Function("stage", list(blocks), 0, next_reg=1)


def plan(fn: wir.Function) -> dict[str, tuple[set[int], set[int]]]:
    only = turn_write_blocks(fn, blocks_in_turn(fn))
    got = plan_turn_writes(fn, only, SLOTS)
    assert got is not None
    return {label: (set(start), set(leave)) for label, (start, leave) in got.items()}


def test_slots_are_taken_in_order_and_the_busy_one_waited_for() -> None:
    assert turn_write_step(frozenset(), SLOTS) == (8, False)
    assert turn_write_step(frozenset({8}), SLOTS) == (9, False)
    assert turn_write_step(frozenset({9}), SLOTS) == (8, False)
    assert turn_write_step(frozenset({8, 9}), SLOTS) == (8, True)


def test_a_path_that_writes_meets_one_that_does_not_with_nothing_in_flight() -> None:
    fn = function(
        wir.Block("entry", [wir.Branch("eq", R0, 0, "w", "n")]),
        wir.Block("w", [write(8), wir.Jump("done")]),
        wir.Block("n", [wir.Jump("done")]),
        wir.Block("done", [wir.RxTurnDone(), wir.Ret()]))
    assert plan(fn) == {"entry": (set(), set()), "w": (set(), set()), "n": (set(), set()),
                        "done": (set(), set())}


def test_paths_that_both_write_hand_their_write_on_to_the_join() -> None:
    fn = function(
        wir.Block("entry", [wir.Branch("eq", R0, 0, "a", "b")]),
        wir.Block("a", [write(8), wir.Jump("j")]),
        wir.Block("b", [write(9), wir.Jump("j")]),
        wir.Block("j", [write(10), wir.Jump("done")]),
        wir.Block("done", [wir.RxTurnDone(), wir.Ret()]))
    # ... and the join both of its writes to the block that passes the turn, which waits
    # for them after passing it
    assert plan(fn) == {"entry": (set(), set()), "a": (set(), {8}), "b": (set(), {8}),
                        "j": ({8}, {8, 9}), "done": ({8, 9}, set())}


def test_a_branch_leaves_only_what_both_successors_expect() -> None:
    # c is reached from entry (nothing in flight) and from a (one write): a waits for it
    fn = function(
        wir.Block("entry", [wir.Branch("eq", R0, 0, "a", "c")]),
        wir.Block("a", [write(8), wir.Branch("eq", R0, 1, "c", "d")]),
        wir.Block("c", [wir.Jump("done")]),
        wir.Block("d", [write(9), wir.Jump("done")]),
        wir.Block("done", [wir.RxTurnDone(), wir.Ret()]))
    got = plan(fn)
    assert got["a"] == (set(), set()) and got["c"] == (set(), set())
    assert got["d"] == (set(), set())


def test_writes_after_the_turn_are_not_deferred() -> None:
    fn = function(
        wir.Block("entry", [write(8), wir.Jump("x")]),
        wir.Block("x", [wir.RxTurnDone(), wir.Jump("y")]),
        wir.Block("y", [write(9), wir.Ret()]))
    assert turn_write_blocks(fn, blocks_in_turn(fn)) == {"entry", "x"}
    # a stage without a scratch write in its turn keeps no slots
    quiet = function(
        wir.Block("entry", [wir.Jump("x")]),
        wir.Block("x", [wir.RxTurnDone(), wir.Jump("y")]),
        wir.Block("y", [write(9), wir.Ret()]))
    assert turn_write_blocks(quiet, blocks_in_turn(quiet)) == set()
    # nor does a body without a receive stage
    plain = function(wir.Block("entry", [write(8), wir.Ret()]))
    assert turn_write_blocks(plain, blocks_in_turn(plain)) == set()
