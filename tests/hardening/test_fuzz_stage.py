"""The fuzz stage (issue 20, acceptance 2): generated MBL programs and microcode programs,
bit-flipped images and malformed frames through the native router and through the compiled
router on the simulated chip.  Zero internal errors, zero aborts, zero hangs, every frame
accounted for.

Everything runs in a worker process (fuzz_worker.py), so an abort of LLVM or of the C++
core, or a hang, is seen and reported with the input that caused it instead of ending the
test run.  Sizes (CI): STAGE below, the acceptance's.  Measured on the shared 2-core build
machine (one core each): the MBL programs 320 s (about 160 ms a program that reaches the
back end: check 35 ms, native JIT 65 ms, ME back end 55 ms), microcode programs 7 s, images
12 s, 100,000 frames natively 2 s, 5,000 on the chip 3 s: under 6 minutes in all.
`scripts/fuzz --minutes N` runs the same tests for N minutes with new random inputs
(NPKIT_FUZZ_MINUTES), in rounds, and reports every failure.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from fuzz_gen import mbl_programs, uc_images, uc_programs
from fuzz_worker import Failure, Worker
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow

# the acceptance's sizes: programs, images, frames (native in requests of NATIVE_BATCH)
STAGE = {"mbl": 2000, "uc": 1000, "img": 1000, "native": 100_000, "chip": 5000}
NATIVE_BATCH = 10_000
CHIP_BATCH = 1000
TIMEOUT_S = {"mbl": 60, "uc": 30, "img": 30, "native": 300, "chip": 300}
# a campaign (scripts/fuzz) splits its minutes over the tests in these shares
CAMPAIGN_MINUTES = float(os.environ.get("NPKIT_FUZZ_MINUTES", "0") or 0)
SHARE = {"mbl": 0.45, "uc": 0.15, "img": 0.1, "native": 0.15, "chip": 0.15}
# test_mbl_programs in this many pieces, so that pytest-xdist places them on both workers
# (in one piece it kept one worker busy for 9 of the suite's 25 minutes).  In the CI stage
# every piece draws the same 2,000 programs and sends every MBL_PIECES-th of them, so the
# pieces together send exactly the programs one test sent; a campaign's piece sends all it
# draws (new random ones) for its part of the mbl share.
MBL_PIECES = 4


class Share:
    """A piece's view of the worker: of the inputs drawn, every `count`-th from the
    `index`-th is asked; the others are answered "another piece" without being sent."""

    def __init__(self, worker: Worker, index: int, count: int) -> None:
        self.worker, self.index, self.count, self.drawn = worker, index, count, 0

    def ask(self, request: dict[str, Any],
            timeout_s: float | None = None) -> tuple[dict[str, Any] | None, Failure | None]:
        mine = self.drawn % self.count == self.index
        self.drawn += 1
        if not mine:
            return {"outcome": "another piece"}, None
        return self.worker.ask(request, timeout_s)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


def fuzz(worker: Worker | Share, name: str, strategy: st.SearchStrategy[Any],
         request: Callable[[Any], dict[str, Any]], examples: int,
         piece: tuple[int, int] = (0, 1)) -> Counter[str]:
    """Send `examples` inputs drawn from `strategy` (rounds until the campaign's share of
    time is used, with NPKIT_FUZZ_MINUTES); fail with every Failure seen.  `piece` (index,
    count): in the CI stage, send only that piece's share of the inputs (Share); in a
    campaign, use 1/count of the test's share of the minutes.  The inputs drawn are the same
    whatever the piece (`one` below, whose source seeds the derandomized draw, is unchanged)."""
    failures: list[Failure] = []
    outcomes: Counter[str] = Counter()
    if piece[1] > 1 and not CAMPAIGN_MINUTES:
        worker = Share(worker, *piece)

    # The CI stage draws the same inputs every run (a stage that passes today passes
    # tomorrow on the same code); a campaign (NPKIT_FUZZ_MINUTES, scripts/fuzz) draws new ones.
    @settings(max_examples=examples, deadline=None, database=None,
              derandomize=not CAMPAIGN_MINUTES,
              phases=[Phase.explicit, Phase.generate],  # no shrinking: bounded time
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def one(value: Any) -> None:
        reply, failure = worker.ask(request(value), TIMEOUT_S[name])
        outcomes["inputs"] += 1
        if reply is not None:
            outcomes[reply["outcome"]] += 1
            outcomes["frames"] += reply.get("frames", 0)
        if failure is not None:
            failures.append(failure)

    end = time.monotonic() + CAMPAIGN_MINUTES * 60 * SHARE[name] / piece[1]
    one()
    while CAMPAIGN_MINUTES and time.monotonic() < end and len(failures) < 20:
        one()
    outcomes["inputs"] -= outcomes.pop("another piece", 0)  # this piece's own inputs
    print(f"fuzz {name}{'' if piece[1] == 1 else f' piece {piece[0]}/{piece[1]}'}: "
          f"{dict(outcomes)}")
    distinct: dict[str, list[Failure]] = {}
    for failure in failures:  # one example of each kind of failure, with its count
        distinct.setdefault(f"{failure.kind}: {failure.detail.splitlines()[0]}",
                            []).append(failure)
    assert not failures, f"{len(failures)} failures, {len(distinct)} distinct:\n" + "\n".join(
        f"[{len(same)} x] {same[0]}" for same in distinct.values())
    return outcomes


@pytest.mark.parametrize("piece", range(MBL_PIECES), ids=lambda i: f"piece{i}of{MBL_PIECES}")
def test_mbl_programs(worker: Worker, piece: int) -> None:
    """Programs of the grammar (most check cleanly and go through the LLVM lowering, the
    native JIT with malformed frames and the ME back end to microcode) and mutated ones:
    every MBL_PIECES-th of the STAGE's programs from the `piece`-th."""
    out = fuzz(worker, "mbl", mbl_programs(), lambda text: {"kind": "mbl", "text": text},
               STAGE["mbl"], (piece, MBL_PIECES))
    assert out["inputs"] >= STAGE["mbl"] // MBL_PIECES
    assert out["ok"] >= STAGE["mbl"] // MBL_PIECES // 4, out  # they reach the back end


def test_microcode_programs(worker: Worker) -> None:
    """Template programs (every mnemonic), edited: assembled, disassembled back, run."""
    out = fuzz(worker, "uc", uc_programs(), lambda text: {"kind": "uc", "text": text},
               STAGE["uc"])
    assert out["inputs"] >= STAGE["uc"] and out["ok"] > 0, out


def test_bit_flipped_images(worker: Worker) -> None:
    """Legal images with flipped bits: the loader or the core rejects or runs them."""
    out = fuzz(worker, "img", uc_images(), lambda image: {"kind": "img", **image},
               STAGE["img"])
    assert out["inputs"] >= STAGE["img"], out


def test_malformed_frames_through_the_native_router(worker: Worker) -> None:
    """examples/router/router.mbl natively, with routes: a verdict for every frame."""
    out = fuzz(worker, "native", st.integers(0, 2**32 - 1),
               lambda seed: {"kind": "native_frames", "seed": seed, "count": NATIVE_BATCH},
               STAGE["native"] // NATIVE_BATCH)
    assert out["frames"] >= STAGE["native"], out


def test_malformed_frames_through_the_compiled_router_on_the_chip(worker: Worker) -> None:
    """The same router compiled, linked and run on the simulated IXP2800: every frame
    transmitted, dropped, excepted or dropped by receive, and no buffer leaked."""
    out = fuzz(worker, "chip", st.integers(0, 2**32 - 1),
               lambda seed: {"kind": "chip_frames", "seed": seed, "count": CHIP_BATCH},
               STAGE["chip"] // CHIP_BATCH)
    assert out["frames"] >= STAGE["chip"], out


def test_the_worker_reports_aborts_and_hangs() -> None:
    """The harness itself: a worker that dies or stops answering is a Failure, and the
    next request gets a fresh worker."""
    w = Worker()
    try:
        _, hang = w.ask({"kind": "sleep", "seconds": 30}, 2)
        assert hang is not None and hang.kind == "hang", hang
        _, crash = w.ask({"kind": "abort"}, 60)
        assert crash is not None and crash.kind == "abort", crash
        reply, again = w.ask({"kind": "uc", "text": ".me 0\nl#:\n br[l#]\n"}, 60)
        assert again is None and reply is not None and reply["outcome"] == "ok", again
    finally:
        w.close()
