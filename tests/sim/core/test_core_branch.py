"""Branches, defer slots, the taken-branch penalty and context arbitration."""

from __future__ import annotations

import pytest
from coreprog import (
    MASK32,
    NONE,
    ORG,
    A,
    B,
    alu,
    br,
    chip_config,
    csr_wr,
    ctx_arb,
    enc,
    immed,
    kill,
    make_core,
    mem,
    nop,
    single_context,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_core_alu import ref_alu

from npkit.sim import isa
from npkit.sim._core import SimFault

COVERED = frozenset(
    set(isa.CONDITIONS) | {"br=ctx", "br!=ctx", "br_bset", "br_bclr", "br=byte", "br!=byte",
                           "br_signal", "br_!signal", "br_inp_state", "br_!inp_state", "jump",
                           "rtn", "ctx_arb"}
    | {f"INP_STATES:{k}" for k in isa.INP_STATES}
    | {f"CTX_ARB_MODES:{k}" for k in isa.CTX_ARB_MODES}
    | {"LOCAL_CSRS:SAME_ME_SIGNAL", "LOCAL_CSRS:NEXT_NEIGHBOR_SIGNAL"}
)

u32 = st.integers(0, MASK32)


@pytest.fixture(scope="module")
def core():
    return make_core()


def run(core, words, regs=None, ctx=0):
    core.load(0, single_context(words))
    for code, value in (regs or {}).items():
        core.write_reg(0, ctx, code, value)
    assert core.run(100_000, until_idle=True) == "idle"
    return core


def taken_program(branch_word_at_1: int) -> list[int]:
    """body: [flags] [branch -> 4] [A1=1] [br end] [A1=2]; A1 tells which way it went."""
    return [alu(NONE, A(0), "-", B(0)), branch_word_at_1, immed(A(1), 1), br("br", ORG + 5),
            immed(A(1), 2)]


def ref_condition(cond: str, a: int, b: int) -> bool:
    r, c, v = ref_alu("-", a, b, False)
    z, n = r == 0, bool(r >> 31)
    return {
        "br": True, "beq": z, "bne": not z, "blt": n != v, "bge": n == v, "bmi": n, "bpl": not n,
        "bcs": c, "bcc": not c, "bvs": v, "bvc": not v, "bgt": not z and n == v,
        "ble": z or n != v, "bhi": c and not z, "bls": not c or z,
    }[cond]


@settings(max_examples=300, deadline=None)
@given(a=st.one_of(u32, st.sampled_from([0, 1, 0x7FFFFFFF, 0x80000000, MASK32])),
       b=st.one_of(u32, st.sampled_from([0, 1, 0x7FFFFFFF, 0x80000000, MASK32])),
       cond=st.sampled_from(sorted(isa.CONDITIONS)))
def test_conditional_branches(core, a, b, cond):
    run(core, taken_program(br(cond, ORG + 4)), {A(0): a, B(0): b})
    assert core.read_reg(0, 0, A(1)) == (2 if ref_condition(cond, a, b) else 1)


def test_signed_compare_examples(core):
    # independent hand-computed cases: -1 < 1 signed, but 0xFFFFFFFF > 1 unsigned
    for cond, taken in (("blt", True), ("bgt", False), ("bhi", True), ("bls", False)):
        run(core, taken_program(br(cond, ORG + 4)), {A(0): MASK32, B(0): 1})
        assert core.read_reg(0, 0, A(1)) == (2 if taken else 1), cond


@settings(max_examples=60, deadline=None)
@given(value=u32, bit=st.integers(0, 31), clr=st.booleans())
def test_br_bset_bclr(core, value, bit, clr):
    word = enc("br_bit", reg=B(0), bit=bit, clr=int(clr), target=ORG + 4)
    run(core, taken_program(word), {B(0): value, A(0): 0})
    is_set = bool(value >> bit & 1)
    assert core.read_reg(0, 0, A(1)) == (2 if is_set != clr else 1)


@settings(max_examples=60, deadline=None)
@given(value=u32, byte=st.integers(0, 3), cmp=st.integers(0, 255), ne=st.booleans(),
       force_equal=st.booleans())
def test_br_byte(core, value, byte, cmp, ne, force_equal):
    if force_equal:
        cmp = value >> (8 * byte) & 0xFF
    word = enc("br_byte", reg=B(0), byte=byte, value=cmp, ne=int(ne), target=ORG + 4)
    run(core, taken_program(word), {B(0): value, A(0): 0})
    equal = (value >> (8 * byte) & 0xFF) == cmp
    assert core.read_reg(0, 0, A(1)) == (2 if equal != ne else 1)


@pytest.mark.parametrize("ne", [0, 1])
def test_br_ctx(core, ne):
    words = [enc("br_ctx", ctx=3, ne=ne, target=3), immed(A(1), 1), kill(), immed(A(1), 2), kill()]
    core.load(0, words)
    assert core.run(10_000, until_idle=True) == "idle"
    for ctx in range(8):
        assert core.read_reg(0, ctx, A(1)) == (2 if (ctx == 3) != bool(ne) else 1)


def test_br_signal_consumes_the_signal(core):
    sig = 5
    words = [csr_wr("SAME_ME_SIGNAL", B(0)), nop(), nop(),
             enc("br_signal", sig=sig, target=ORG + 5),        # taken, clears
             immed(A(1), 1),
             enc("br_signal", sig=sig, target=ORG + 8),        # not taken now
             enc("br_signal", sig=sig, **{"not": 1}, target=ORG + 9),  # taken: not set
             immed(A(2), 1), immed(A(3), 9), immed(A(4), 7)]
    run(core, words, {B(0): 0 | (sig << 3)})
    assert core.read_reg(0, 0, A(1)) == 0          # skipped by the first branch
    assert core.read_reg(0, 0, A(2)) == 0          # skipped by br_!signal
    assert core.read_reg(0, 0, A(3)) == 0
    assert core.read_reg(0, 0, A(4)) == 7
    assert core.context(0, 0)["pending_signals"] == 0


@pytest.mark.parametrize("state", sorted(isa.INP_STATES))
def test_br_inp_state_on_an_empty_chip(core, state):
    ring = int(state[len("SCR_Ring"):].split("_")[0]) if state.startswith("SCR_Ring") else 0
    if state.startswith("SCR_Ring"):
        core.configure_ring(ring, 1024, 128)
    expected = state.endswith("Empty") or state == "NN_EMPTY"  # rings and NN ring start empty
    for negate in (0, 1):
        word = enc("br_inp_state", state=isa.INP_STATES[state], **{"not": negate},
                   target=ORG + 4)
        run(core, taken_program(word), {A(0): 0, B(0): 0})
        assert core.read_reg(0, 0, A(1)) == (2 if expected != bool(negate) else 1)


def test_br_inp_state_sees_a_full_ring():
    core = make_core()
    core.configure_ring(2, 0, 128)
    # 8 puts of 16 words fill the 128-word ring
    words = [mem("scratch", "put", 0, NONE, B(0), count=16, sig=1, swap=True)] * 8
    words += [enc("br_inp_state", state=isa.INP_STATES["SCR_Ring2_Full"], target=ORG + 11),
              immed(A(1), 1), br("br", ORG + 12), immed(A(1), 2)]
    run(core, words, {B(0): 2})
    assert core.ring_state(2)["count"] == 128
    assert core.read_reg(0, 0, A(1)) == 2


@pytest.mark.parametrize("rtn", [0, 1])
def test_jump_and_rtn(core, rtn):
    words = [immed(A(0), ORG + 4, "load_addr"), enc("jump", reg=A(0), rtn=rtn, target=0),
             immed(A(1), 1), kill(), immed(A(1), 2)]
    run(core, words)
    assert core.read_reg(0, 0, A(1)) == 2


@pytest.mark.parametrize("defer", [0, 1, 2, 3])
def test_defer_slots_run_before_the_branch(core, defer):
    # br[end], defer[n] followed by 3 immeds: exactly the first n run
    words = [br("br", ORG + 4, defer), immed(A(1), 1), immed(A(2), 1), immed(A(3), 1)]
    run(core, words)
    assert [core.read_reg(0, 0, A(i)) for i in (1, 2, 3)] == [int(i < defer) for i in range(3)]


def executing_cycles(core, ctx=0):
    return core.counters()["mes"][0]["contexts"][ctx]["executing_cycles"]


@pytest.mark.parametrize("defer", [0, 1, 2, 3])
def test_taken_branch_penalty(defer):
    penalty = chip_config()["me"]["branch_taken_penalty"]
    core = make_core()
    words = [br("br", ORG + 1 + defer, defer)] + [nop()] * defer
    core.load(0, single_context(words))
    core.run(10_000, until_idle=True)
    instructions = core.context(0, 0)["instructions"]
    assert executing_cycles(core) == instructions + max(0, penalty - defer)


def test_not_taken_branch_costs_nothing():
    core = make_core()
    core.load(0, single_context([br("beq", ORG + 2), nop()]))
    core.write_reg(0, 0, A(0), 1)
    core.run(10_000, until_idle=True)
    # Z is clear after load, so beq falls through
    assert executing_cycles(core) == core.context(0, 0)["instructions"]


def test_ctx_arb_voluntary_passes_to_the_next_context():
    core = make_core()
    core.load(0, [ctx_arb(mode="voluntary"), immed(A(1), 1), kill()])
    core.run(1)
    assert core.context(0, 0)["state"] == "ready" and core.context(0, 0)["pc"] == 1
    core.run(1)
    assert core.context(0, 1)["instructions"] == 1
    assert core.context(0, 0)["instructions"] == 1


def test_ctx_arb_kill_stops_the_context():
    core = make_core()
    core.load(0, [kill(), immed(A(1), 1)])
    assert core.run(1000, until_idle=True) == "idle"
    assert all(core.context(0, c)["state"] == "inactive" for c in range(8))
    assert core.read_reg(0, 0, A(1)) == 0


def sleep_cycles(words):
    core = make_core()
    core.load(0, single_context(words))
    core.run(100_000, until_idle=True)
    return core.counters()["mes"][0]["contexts"][0]["sleeping_cycles"]


@pytest.mark.parametrize("mode", ["all", "any"])
def test_ctx_arb_all_waits_for_every_signal_any_for_one(mode):
    cfg = chip_config()
    scratch_done = cfg["scratch"]["latency"] + 4 / cfg["scratch"]["bytes_per_cycle"]
    sram_done = cfg["sram"]["latency"] + 4 / cfg["sram"]["read_bytes_per_cycle"]
    # issue at cycles 0 and 1 (relative to the body), sleep from cycle 2
    words = [mem("scratch", "read", 0, NONE, NONE, sig=1),
             mem("sram", "read", 1, NONE, NONE, sig=2), ctx_arb(1, 2, mode=mode)]
    slept = sleep_cycles(words)
    start = 1 + 3  # br!=ctx, two issues, ctx_arb: the sleep starts after 4 cycles (time 4)
    # the scratch command was issued at time 1, the SRAM one at time 2
    expected = (2 + -(-sram_done // 1)) if mode == "all" else (1 + -(-scratch_done // 1))
    assert slept == expected - start


def test_next_neighbor_signal_wakes_a_context_on_the_next_me():
    core = make_core()
    sig = 3
    core.load(1, [ctx_arb(sig), immed(A(1), 42), kill()])
    core.load(0, single_context([csr_wr("NEXT_NEIGHBOR_SIGNAL", B(0))]))
    core.write_reg(0, 0, B(0), 2 | (sig << 3))  # context 2 of ME 1
    # the other seven contexts of ME 1 wait forever: a deadlock, reported with who waits
    with pytest.raises(SimFault) as info:
        core.run(10_000)
    assert info.value.kind == "deadlock" and "waits for all of signals {3}" in info.value.message
    assert core.read_reg(1, 2, A(1)) == 42
    assert core.context(1, 2)["state"] == "inactive"
    assert core.context(1, 0)["state"] == "sleeping"


def test_ctx_arb_defer_runs_the_slots_before_sleeping():
    core = make_core()
    words = [mem("scratch", "read", 0, NONE, NONE, sig=1), ctx_arb(1, defer=2),
             immed(A(1), 1), immed(A(2), 2), immed(A(3), 3)]
    core.load(0, single_context(words))
    core.run(3 + 1)  # br!=ctx, read, ctx_arb, first slot
    assert core.context(0, 0)["state"] == "executing"
    core.run(1)      # second slot: then the context sleeps
    assert core.context(0, 0)["state"] == "sleeping"
    assert core.read_reg(0, 0, A(2)) == 2 and core.read_reg(0, 0, A(3)) == 0
    core.run(10_000, until_idle=True)
    assert core.read_reg(0, 0, A(3)) == 3
