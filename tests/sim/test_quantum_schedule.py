"""The opt-in quantum schedule (docs/sim-core.md, "The quantum schedule").

It is a model variant, so its results are not compared with the default schedule's here
(docs/performance.md, issue 13 fifth round, compares them).  What must hold:

* the default stays the default (no environment variable: ``Chip().schedule == "default"``);
* the quantum is the shortest issue-to-visible latency of the config, computed here from
  the toml's numbers;
* the units take a quantum's commands in (issue cycle, ME) order, not in the order the MEs
  ran: two MEs swap into one SRAM word in the same quantum, the later issue wins whatever
  the ME indices -- the reference is that rule applied by hand;
* an ME sees its own scratch-ring puts and gets in its ring-status tests at once, and its
  neighbour sees its next-neighbour writes from the next quantum on;
* the same run twice is the same, and a run sliced into calls of any length equals the run
  in one call (the slicing relation of tests/sim/test_run_slicing.py, on this schedule);
* a command's completion still pending when a run ends is part of the state: a snapshot
  holds it (a restored chip runs on as the chip ran on), and a switch to the default
  schedule delivers it (a guard for any other way of keeping completions, such as the
  records tried in issue 13's tenth round, docs/performance.md).
"""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from npkit.sim import Chip, isa
from npkit.sim.chip import SCHEDULE_ENV, default_schedule
from npkit.sim.config import ConfigError

REPO = Path(__file__).resolve().parents[2]


def load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


coreprog = load_module("coreprog_quantum", REPO / "tests/sim/core/coreprog.py")
slicing = load_module("run_slicing_quantum", REPO / "tests/sim/test_run_slicing.py")
snapshots = load_module("api_snapshot_quantum", REPO / "tests/sim/api/test_api_snapshot.py")


@pytest.fixture
def quantum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chip made in the test (manifests, routers) gets the quantum schedule."""
    monkeypatch.setenv(SCHEDULE_ENV, "quantum")


# --------------------------------------------------------------------------- the setting
def test_default_schedule_is_unchanged_without_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SCHEDULE_ENV, raising=False)
    assert default_schedule() == "default"
    assert Chip().schedule == "default"
    assert Chip()._core.schedule == "default"
    assert Chip(schedule="quantum")._core.schedule == "quantum"


def test_an_unknown_schedule_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="schedule 'fast'"):
        Chip(schedule="fast")


def test_the_quantum_is_the_shortest_latency_of_the_config() -> None:
    cfg = tomllib.loads((Path(isa.__file__).parent / "chips" / "ixp2800.toml").read_text())
    latencies = [cfg["sram"]["latency"], cfg["dram"]["latency"], cfg["scratch"]["latency"],
                 cfg["hash"]["latency"], cfg["msf"]["csr_latency"],
                 cfg["msf"]["autopush_latency"]]
    assert Chip(schedule="quantum")._core.quantum_cycles == min(latencies)


# --------------------------------------------------------------------------- arbitration
SWAP_WORD = 40  # SRAM channel 0, word 40


def swap_program(value: int, delay: int) -> list[int]:
    """Context 0: `delay` nops, then swap `value` into the word; $0 gets the old value."""
    body = [coreprog.nop()] * delay + [
        *coreprog.load_out(coreprog.X(0), value),
        coreprog.mem("sram", "swap", 0, coreprog.A(0), coreprog.NONE, sig=1, swap=True)]
    return coreprog.single_context(body)


@pytest.mark.parametrize("late_me", [0, 1])
def test_commands_of_one_quantum_reach_the_unit_in_issue_order(late_me: int) -> None:
    core = coreprog.make_core()
    core.set_schedule("quantum")
    assert core.quantum_cycles > 12  # both swaps issue inside the first quantum
    early_me = 1 - late_me
    core.load(early_me, swap_program(0xE, delay=0))
    core.load(late_me, swap_program(0x1A7E, delay=8))
    for me in (0, 1):
        core.write_reg(me, 0, coreprog.A(0), SWAP_WORD * 4)
    core.sram(0)[SWAP_WORD] = 0x0
    assert core.run(100_000, until_idle=True) == "idle"
    # by hand: the early swap finds 0 and leaves 0xE; the late one finds 0xE, leaves its own
    assert core.read_reg(early_me, 0, coreprog.X(0)) == 0x0
    assert core.read_reg(late_me, 0, coreprog.X(0)) == 0xE
    assert int(core.sram(0)[SWAP_WORD]) == 0x1A7E


def test_an_me_sees_its_own_ring_get_in_the_ring_status_at_once() -> None:
    """put one word on ring 3, get it, and test SCR_RING3_EMPTY right after (same quantum):
    the ring is empty for this ME although the unit takes the get at the quantum's end."""
    core = coreprog.make_core()
    core.set_schedule("quantum")
    core.configure_ring(3, 1024, 128)
    core.ring_put(3, [0x55])
    empty_state = isa.INP_STATES["SCR_Ring3_Empty"]
    body = [
        coreprog.mem("scratch", "get", 0, coreprog.A(2), coreprog.NONE, sig=1),
        coreprog.enc("br_inp_state", state=empty_state, target=coreprog.ORG + 4),
        coreprog.immed(coreprog.A(1), 0xBAD),   # not empty: wrong
        coreprog.kill(),
        coreprog.immed(coreprog.A(1), 0x600D),  # ORG + 4: empty, as it is for this ME
        coreprog.ctx_arb(1),
    ]
    core.load(0, coreprog.single_context(body))
    core.write_reg(0, 0, coreprog.A(2), 3)
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.read_reg(0, 0, coreprog.A(1)) == 0x600D
    assert core.read_reg(0, 0, coreprog.X(0)) == 0x55


def test_a_next_neighbour_write_is_seen_from_the_next_quantum_on() -> None:
    """ME 0 writes n$0 at cycle 1; ME 1 reads its NN register 0 at cycle ~4 (same quantum:
    the old 0) and after the quantum's end (the value)."""
    core = coreprog.make_core()
    core.set_schedule("quantum")
    q = core.quantum_cycles
    nn, a, none = coreprog.NN, coreprog.A, coreprog.NONE
    core.load(0, coreprog.single_context([coreprog.alu(nn(0), none, "B", a(0))]))
    reader = [coreprog.nop()] * 3 + [coreprog.alu(a(1), none, "B", nn(0))]
    reader += [coreprog.nop()] * q + [coreprog.alu(a(2), none, "B", nn(0))]
    core.load(1, coreprog.single_context(reader))
    core.write_reg(0, 0, a(0), 0xC0FFEE)
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.read_reg(1, 0, a(1)) == 0
    assert core.read_reg(1, 0, a(2)) == 0xC0FFEE


def test_an_me_passed_over_runs_when_a_signal_or_the_host_makes_it_runnable() -> None:
    """An ME that cannot run and has no event in a quantum is passed over (issue 13,
    twelfth round).  ME 1's only context sleeps on signal 2 while ME 0 runs 3 quanta of
    nops and then raises it with NEXT_NEIGHBOR_SIGNAL: ME 1 must wake and run on (by hand:
    a1 = 0x600D, and it was idle at least while ME 0's nops ran).  Then the host loads ME 2
    between runs: the next run must run it (a1 = 0xCAFE)."""
    core = coreprog.make_core()
    core.set_schedule("quantum")
    q = core.quantum_cycles
    a = coreprog.A
    signal_me1 = 0 | 2 << 3  # context 0, signal 2
    core.load(0, coreprog.single_context(
        [coreprog.nop()] * (3 * q)
        + [coreprog.immed(a(0), signal_me1), coreprog.csr_wr("NEXT_NEIGHBOR_SIGNAL", a(0))]))
    core.load(1, coreprog.single_context([coreprog.ctx_arb(2), coreprog.immed(a(1), 0x600D)]))
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.read_reg(1, 0, a(1)) == 0x600D
    assert core.counters()["mes"][1]["idle_cycles"] >= 2 * q
    core.load(2, coreprog.single_context([coreprog.immed(a(1), 0xCAFE)]))
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.read_reg(2, 0, a(1)) == 0xCAFE


# --------------------------------------------------------------------------- determinism
def test_the_same_run_twice_is_the_same(quantum: None) -> None:
    make = slicing.l2wire(None)
    first = slicing.run_sliced(make, slicing.L2WIRE_CYCLES, slicing.L2WIRE_CYCLES)
    assert sum(len(v) for v in first.departures.values()) > 200
    slicing.assert_same(slicing.run_sliced(make, slicing.L2WIRE_CYCLES, slicing.L2WIRE_CYCLES),
                        first)


@pytest.mark.parametrize("step", [1_000, 7, slicing.RANDOM])
def test_l2wire_gives_the_same_run_for_any_slicing(quantum: None, step: int | str) -> None:
    make = slicing.l2wire(None)
    total = 12_000 if step == 7 else slicing.L2WIRE_CYCLES
    want = slicing.run_sliced(make, total, total)
    assert sum(len(v) for v in want.departures.values()) > 0
    slicing.assert_same(slicing.run_sliced(make, total, step), want)


@pytest.mark.parametrize("step", [997, slicing.RANDOM])
def test_router4_gives_the_same_run_for_any_slicing(quantum: None, step: int | str) -> None:
    want = slicing.run_sliced(slicing.router4, slicing.ROUTER4_CYCLES, slicing.ROUTER4_CYCLES)
    assert sum(len(v) for v in want.departures.values()) > 1_000
    slicing.assert_same(slicing.run_sliced(slicing.router4, slicing.ROUTER4_CYCLES, step), want)


# --------------------------------------------------------------------------- pending completions
READ_WORD = 52  # SRAM channel 0, word 52


def test_a_completion_pending_at_a_switch_to_the_default_schedule_is_delivered() -> None:
    """Context 0 reads an SRAM word with ctx_swap and copies it to a1.  The run stops after
    the first quantum, before the read completes (a1 still 0: the completion is pending);
    the default schedule runs on and must deliver it: by hand, a1 = the word."""
    core = coreprog.make_core()
    core.set_schedule("quantum")
    q = core.quantum_cycles
    a, x, none = coreprog.A, coreprog.X, coreprog.NONE
    body = [coreprog.mem("sram", "read", 0, a(0), none, sig=1, swap=True),
            coreprog.alu(a(1), none, "B", x(0))]
    core.load(0, coreprog.single_context(body))
    core.write_reg(0, 0, a(0), READ_WORD * 4)
    core.sram(0)[READ_WORD] = 0xFEED5
    assert core.run(q) == "cycles"
    assert core.read_reg(0, 0, a(1)) == 0  # not there yet: issued at ~1, due >= 1 + Q
    core.set_schedule("default")
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.read_reg(0, 0, x(0)) == 0xFEED5
    assert core.read_reg(0, 0, a(1)) == 0xFEED5


def test_a_restored_chip_runs_on_as_it_ran_with_completions_pending(quantum: None) -> None:
    """tests/sim/api/test_api_snapshot.py's relation on this schedule: router4 at line rate
    keeps memory commands in flight at every cycle, so the snapshot holds pending
    completions; after other work and a restore, the chip runs on as it did the first time."""
    chip = snapshots.loaded_router()
    assert chip._core.schedule == "quantum"
    chip.run(cycles=snapshots.N_CYCLES)
    at_snapshot = snapshots.state(chip)
    snap = chip.snapshot()
    frames, after = snapshots.run_m(chip)
    assert len(frames) > 100  # the router forwards during M: the comparison means something
    chip.run(cycles=100_000)  # other work: other completions pending
    chip.restore(snap)
    assert snapshots.state(chip) == at_snapshot
    assert snapshots.run_m(chip) == (frames, after)
