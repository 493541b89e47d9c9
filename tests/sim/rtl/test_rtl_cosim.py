"""The RTL microengine against the C++ model: directed programs, random programs, mutants.

The RTL (sim/rtl/npk_me.sv) and the model (sim/core) are two implementations of the ISA in
sim/isa.py.  Every program here runs on both, and cosim.compare checks the whole
architectural state and the cycle count.  Needs Debian's verilator (CI installs it); the
library is built once per machine into a cache (sim/rtl/build.py).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rtlprog import (
    NONE,
    OPND,
    SCRATCH,
    csr_rd,
    csr_wr,
    enc,
    immed,
    init_state,
    kill,
    nop,
    program,
)

from npkit.sim import isa
from npkit.sim.config import ChipConfig
from npkit.sim.rtl import build, cosim
from npkit.sim.rtl.rtlme import MUTANTS, RtlME

pytestmark = pytest.mark.skipif(build.verilator() is None,
                                reason="verilator is not installed (apt-get install verilator)")

A = OPND["gpr_a"]
B = OPND["gpr_b"]
IMM = OPND["imm"]


@pytest.fixture(scope="module")
def rtl() -> RtlME:
    me = RtlME.for_config(ChipConfig.load("ixp2800"))
    me.set_mutant(0)
    return me


def alu(dest: int, a: int, op: str, b: int, shift: str = "<<", shamt: int = 0) -> int:
    return enc("alu", op=isa.ALU_OPS[op], dest=dest, a=a, b=b, shift=isa.SHIFT_TYPES[shift],
               shamt=shamt)


def br(cond: str, target: int, defer: int = 0) -> int:
    return enc("br", cond=isa.CONDITIONS[cond], target=target, defer=defer)


def check(rtl: RtlME, words: list[int], ctx_mode: int = 8, init=None) -> cosim.Report:
    report = cosim.compare(words, ctx_mode=ctx_mode, rtl=rtl, init=init, max_cycles=50_000)
    assert report.ok, report.text()
    return report


# ---------------------------------------------------------------- directed programs
def test_alu_ops_and_flags(rtl):
    words = [immed(A + 1, 0xFFFF), immed(A + 1, 0x7FFF, "immed_w1"), immed(B + 1, 1)]
    for op in isa.ALU_OPS:
        words += [alu(A + 2, A + 1, op, B + 1, "<<rot", 3), br("bvs", len(words) + 2),
                  alu(B + 2, A + 2, "+carry", IMM + 5)]
    words.append(kill())
    check(rtl, words)


def test_defer_slots_penalty_and_swaps(rtl):
    # ctx 0 branches with 0..3 defer slots; every context swaps voluntarily and sleeps on a
    # signal it sends itself through SAME_ME_SIGNAL
    words = [
        enc("br=ctx", ctx=0, ne=1, target=9, defer=0),          # 0
        br("br", 4, defer=2), immed(A, 1), immed(A + 1, 2),     # 1..3
        br("br", 7, defer=1), immed(A + 2, 3), nop(),           # 4..6
        br("br", 9, defer=0), nop(),                            # 7..8
        enc("ctx_arb", mode=isa.CTX_ARB_MODES["voluntary"]),    # 9
        csr_rd("ACTIVE_CTX_STS"), immed(SCRATCH, 5 << 3),       # 10..11: ctx | sig 5
        csr_wr("SAME_ME_SIGNAL", SCRATCH),                      # 12
        enc("ctx_arb", mode=isa.CTX_ARB_MODES["all"], sigs=1 << 5, defer=1),  # 13
        csr_rd("TIMESTAMP_LOW"),                                # 14 (defer slot)
        immed(B + 3, 0), kill(),                                # 15..16
    ]
    check(rtl, words)


def test_local_memory_pointers_and_delay(rtl):
    words = [immed(SCRATCH, 64), csr_wr("ACTIVE_LM_ADDR_0", SCRATCH),
             alu(OPND["lm0_inc"], NONE, "B", IMM + 1),   # still the old address (0)
             alu(OPND["lm0_inc"], NONE, "B", IMM + 2),
             alu(OPND["lm0_inc"], NONE, "B", IMM + 3),
             alu(OPND["lm0"] + 2, OPND["lm0_inc"], "+", OPND["lm0_inc"]),  # the new one
             csr_rd("ACTIVE_LM_ADDR_0"), immed(A + 4, 0), kill()]
    check(rtl, words)


def test_units_crc_cam_mul(rtl):
    words = [immed(SCRATCH, 0xFFFF), immed(SCRATCH, 0xFFFF, "immed_w1"),
             csr_wr("CRC_REMAINDER", SCRATCH),
             enc("crc_be", kind=isa.CRC_KINDS["crc_32"], le=0, dest=A + 1, src=B + 2),
             enc("cam_clear", op=isa.CAM_OPS["cam_clear"], dest=NONE, src=NONE),
             enc("cam_write", op=isa.CAM_OPS["cam_write"], dest=IMM + 3, src=B + 2, state=9),
             enc("cam_lookup", op=isa.CAM_OPS["cam_lookup"], dest=A + 2, src=B + 2),
             enc("cam_lookup", op=isa.CAM_OPS["cam_lookup"], dest=A + 3, src=B + 3),
             enc("mul_step", step=isa.MUL_STEPS["32x32_start"], dest=NONE, a=B + 2, b=B + 3)]
    words += [enc("mul_step", step=isa.MUL_STEPS[s], dest=A + 5 if "last" in s else NONE,
                  a=NONE, b=NONE)
              for s in ("32x32_step1", "32x32_step2", "32x32_step3", "32x32_step4",
                        "32x32_last", "32x32_last2")]
    words.append(kill())
    check(rtl, words, init=init_state(7, 8, 16))


def test_next_neighbour_registers_and_ring(rtl):
    words = [alu(OPND["nn"] + 1, NONE, "B", A + 1), alu(OPND["nn_ring"], NONE, "B", A + 2),
             immed(OPND["nn"] + 1, 0x55, "immed_b2"),
             alu(A + 3, OPND["nn_ring"], "+", OPND["nn"] + 2),
             csr_rd("NN_GET"), immed(A + 4, 0), kill()]
    check(rtl, words, init=init_state(3, 8, 4))


def test_four_context_mode(rtl):
    words = [csr_rd("ACTIVE_CTX_STS"), immed(A + 20, 0), alu(B + 31, A + 20, "+", A + 31),
             csr_rd("CTX_ENABLES"), immed(A + 21, 0), kill()]
    check(rtl, words, ctx_mode=4, init=init_state(5, 4, 0))


def test_not_covered_is_reported_never_passed(rtl):
    sram = isa.BY_MNEMONIC["sram"]
    words = [isa.encode(sram.opcode, {"cmd": isa.SRAM_CMDS["read"], "xfer": 0, "a": A,
                                      "b": B, "count": 0, "sig": 1, "swap": 1}), kill()]
    # the RTL issues memory commands, but only the chip completes them (lockstep): the
    # standalone compare refuses them by name instead of comparing a run without memory
    report = cosim.compare(words, rtl=rtl)
    assert report.outcome == "not_covered"
    assert "sram" in report.rtl_end and "lockstep" in report.rtl_end


def test_signal_from_the_testbench_wakes_a_context(rtl):
    # RTL alone (the model has no way to raise a signal from outside): a signal delivered
    # in cycle t is pending from t + 1, and the sleeping context runs in that cycle
    words = [enc("br=ctx", ctx=0, ne=1, target=4),
             enc("ctx_arb", mode=isa.CTX_ARB_MODES["all"], sigs=1 << 3),
             csr_rd("TIMESTAMP_LOW"), immed(A + 1, 0), kill()]
    rtl.load(words)
    rtl.run(200, until_idle=True)
    assert rtl.context(0).state == "sleeping" and rtl.status().idle
    rtl.run(40)  # idle cycles: nothing wakes it
    assert rtl.context(0).state == "sleeping"
    signalled = rtl.status().cycle
    rtl.signal(0, 3)
    rtl.run(200, until_idle=True)
    assert rtl.context(0).state == "inactive"
    assert rtl.read("gpr_a", 1) == (signalled + 1) // 16  # TIMESTAMP_LOW = cycle / 16
    assert rtl.trace(3)[0] == (signalled + 1, 0, 2)


# ---------------------------------------------------------------- random programs
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prog=program(), seed=st.integers(0, 2**32 - 1))
def test_random_programs_agree(rtl, prog, seed):
    words, ctx_mode = prog
    check(rtl, words, ctx_mode, init_state(seed, ctx_mode, rtl.lm_words))


# ---------------------------------------------------------------- mutants
MUTANT_PROGRAMS = {
    # (mutant, program, what the report must name)
    "alu_xor_is_or": ([alu(A + 1, A + 2, "XOR", B + 2), kill()], "alu op=XOR"),
    "bge_inverted": ([alu(NONE, A + 2, "-", B + 2), br("bge", 3), immed(A + 3, 1), kill()],
                     "br cond=bge"),
    "lm_index0_inc_by_8": ([immed(SCRATCH, 256), csr_wr("ACTIVE_LM_ADDR_0", SCRATCH), nop(),
                            nop(), nop(), alu(A + 1, OPND["lm0_inc"], "+", OPND["lm0_inc"]),
                            csr_rd("ACTIVE_LM_ADDR_0"), immed(A + 2, 0), kill()],
                           "a=*l$index0++"),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught_and_named(rtl, name):
    words, named = MUTANT_PROGRAMS[name]
    random_regs = init_state(11, 8, 0).regs
    # local memory words all different, so that a wrong LM address shows in the result
    init = cosim.InitState(regs=random_regs,
                           lm=tuple((i, 0x1000_0000 + 7 * i) for i in range(rtl.lm_words)))
    assert cosim.compare(words, rtl=rtl, init=init).ok  # the clean RTL agrees
    rtl.set_mutant(MUTANTS[name])
    try:
        report = cosim.compare(words, rtl=rtl, init=init)
    finally:
        rtl.set_mutant(0)
    assert report.outcome == "mismatch", report.text()
    assert named in report.culprit, report.text()
    assert report.mismatches and "model" in report.text()


# ---------------------------------------------------------------- an assembled program
LOOP_UC = """\
.me 0
.reg i acc x ptr sts
    local_csr_rd[ACTIVE_CTX_STS]
    immed[sts, 0]
    alu[sts, sts, AND, 7]
    alu_shf[ptr, --, B, sts, <<6]
    local_csr_wr[ACTIVE_LM_ADDR_0, ptr]
    local_csr_wr[CRC_REMAINDER, sts]
    immed[i, 12]
    immed[acc, 0]
    nop
loop#:
    alu[acc, acc, +, i]
    alu[*l$index0++, --, B, acc]
    crc_be[crc_32, x, acc]
    local_csr_rd[CRC_REMAINDER]
    immed[x, 0]
    alu_shf[acc, x, XOR, acc, >>rot3]
    alu[i, i, -, 1]
    bne[loop#], defer[1]
    alu[ptr, ptr, +, 4]
    ctx_arb[voluntary]
    local_csr_rd[CRC_REMAINDER]
    immed[x, 0]
    ctx_arb[kill]
"""


def test_assembled_image_with_loops(rtl):
    from npkit.compiler.uc import assemble_text

    image = assemble_text(LOOP_UC, "loop.uc")
    report = cosim.compare(image.words, ctx_mode=image.ctx_mode, rtl=rtl,
                           source_of=image.source_of)
    assert report.ok, report.text()
    rtl.set_mutant(MUTANTS["alu_xor_is_or"])
    try:
        broken = cosim.compare(image.words, ctx_mode=image.ctx_mode, rtl=rtl,
                               source_of=image.source_of)
    finally:
        rtl.set_mutant(0)
    assert broken.outcome == "mismatch"
    assert "op=XOR" in broken.culprit and "loop.uc" in broken.culprit, broken.text()


def test_waveform_of_a_mismatch(rtl, tmp_path):
    words, _ = MUTANT_PROGRAMS["alu_xor_is_or"]
    init = init_state(11, 8, 0)
    rtl.set_mutant(MUTANTS["alu_xor_is_or"])
    try:
        report = cosim.compare(words, rtl=rtl, init=init, wave=tmp_path / "me.vcd")
    finally:
        rtl.set_mutant(0)
    assert report.outcome == "mismatch"
    vcd = (tmp_path / "me.vcd").read_text()
    assert "$enddefinitions" in vcd and "retire_pc" in vcd
    # the run up to the first difference: the last time stamp is about twice its cycles
    last_time = max(int(line[1:]) for line in vcd.splitlines() if line.startswith("#"))
    assert last_time >= 2 * report.cycles
