"""The simulator core's speed-ups change no result: fixed l2wire (64-byte and mixed sizes),
router4 and compiled-router runs give the same transmitted frames (port, first/last-bit
cycle, bytes, in order) and the same counters as the digests recorded in
tests/sim/data/identity.json (tests/sim/identity.py says how they are made)."""

from __future__ import annotations

import pytest
from identity import SCENARIOS, differences, stored


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_results_identical_to_the_recorded_digests(name: str) -> None:
    want = stored()[name]
    got = SCENARIOS[name]()
    assert got.frames > 0
    diff = differences(want, got)
    assert not diff, f"{name}:\n  " + "\n  ".join(diff)
