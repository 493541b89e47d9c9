"""The simulator core's speed-ups change no result: fixed l2wire (64-byte and mixed sizes),
router4 and compiled-router runs give the same transmitted frames (port, first/last-bit
cycle, bytes, in order) and the same counters as the digests recorded in
tests/sim/data/identity.json (tests/sim/identity.py says how they are made); under the opt-in
quantum schedule, the same for two scenarios against identity_quantum.json."""

from __future__ import annotations

import pytest
from identity import QUANTUM_SCENARIOS, SCENARIOS, differences, stored

from npkit.sim.chip import SCHEDULE_ENV


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_results_identical_to_the_recorded_digests(name: str) -> None:
    want = stored()[name]
    got = SCENARIOS[name]()
    assert got.frames > 0
    diff = differences(want, got)
    assert not diff, f"{name}:\n  " + "\n  ".join(diff)


@pytest.mark.parametrize("name", QUANTUM_SCENARIOS)
def test_quantum_schedule_results_identical_to_its_digests(name: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SCHEDULE_ENV, "quantum")
    want = stored("quantum")[name]
    got = SCENARIOS[name]()
    assert got.frames > 0
    diff = differences(want, got)
    assert not diff, f"{name} (quantum):\n  " + "\n  ".join(diff)
