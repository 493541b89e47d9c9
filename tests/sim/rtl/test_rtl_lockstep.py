"""The RTL ME in lockstep with one ME of the running chip (sim/rtl/lockstep.py).

l2wire, router4 and the compiled router run under load with an ME of each kind (receive,
forwarding, transmit) mirrored by the RTL ME: every instruction it retires is replayed on
the RTL and the two must agree on cycle, context, PC, the command issued and the whole
architectural state after it.  A deliberately broken C++ semantic (the core's fault
injection flips a bit of one instruction's result) is caught and named.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from rtlprog import program

from npkit.bench import router4_load as r4l
from npkit.bench import sim_speed
from npkit.bench.compiled_load import ROUTER, tables
from npkit.bench.sim_speed import min_size_frames
from npkit.cli import main
from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.loader import load_manifest
from npkit.sim import isa
from npkit.sim.packets import ListSource, RxFrame
from npkit.sim.rtl import build
from npkit.sim.rtl.lockstep import Lockstep, LockstepMismatch
from npkit.sim.rtl.rtlme import MUTANTS

pytestmark = pytest.mark.skipif(build.verilator() is None,
                                reason="verilator is not installed (apt-get install verilator)")

CYCLES = 200_000  # issue 14's acceptance: at least this many cycles in lockstep under load


def l2wire_chip() -> Any:
    """The packaged l2wire with 64-byte frames at line rate on both ports."""
    chip = load_manifest(sim_speed.manifest_path()).chip
    for port in (0, 1):
        chip.attach_source(port, ListSource([RxFrame(f) for f in min_size_frames(3000, port)]))
    return chip


def router4_chip() -> Any:
    """The hand-written router4 with 64-byte frames at line rate."""
    workload = r4l.Workload.make(7, 300, 2000, 64)
    chip = r4l.load_router(workload).chip
    gap = r4l.frame_interval_s(64, 1.0)
    for port, frames in workload.frames.items():
        chip.attach_source(port, ListSource([RxFrame(f, i * gap) for i, f in enumerate(frames)]))
    return chip


@cache
def compiled_router() -> tuple[Any, Any]:
    """examples/router compiled and linked once for the module (each chip loads the
    manifest afresh; nothing writes to it)."""
    program = compile_file(ROUTER)
    return program, link(program, compile_me(program, "router"), fwd_mes_per_port=2)


def compiled_chip() -> Any:
    """The compiled examples/router (2 forwarding MEs per port), 64-byte frames."""
    program, linked = compiled_router()
    workload = r4l.Workload.make(3, 300, 1200, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    gap = r4l.frame_interval_s(64, 1.0) / 0.9
    for port, frames in workload.frames.items():
        run.chip.attach_source(port, ListSource([RxFrame(f, i * gap)
                                                 for i, f in enumerate(frames)]))
    return run.chip


PROGRAMS: dict[str, Callable[[], Any]] = {
    "l2wire": l2wire_chip, "router4": router4_chip, "compiled_router": compiled_chip,
}
KINDS = ("rx", "fwd", "tx")


def me_of_kind(chip: Any, kind: str) -> int:
    """The first loaded ME running the kind's microcode (rx*.uc, *fwd*.uc, tx*.uc)."""
    def source(me: int) -> str:
        lines = getattr(chip._images[me], "lines", None)
        return str(lines[0].file).rsplit("/", 1)[-1] if lines else ""
    for me in sorted(chip._images):
        name = source(me)
        if name.startswith(kind) or (kind == "fwd" and "fwd" in name):
            return me
    pytest.skip(f"no {kind} ME: the images are " +
                ", ".join(sorted({source(m) for m in chip._images})))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_lockstep_under_load(program: str, kind: str) -> None:
    chip = PROGRAMS[program]()
    me = me_of_kind(chip, kind)
    mirror = Lockstep.attach(chip, me)
    start = time.process_time()
    chip.run(cycles=CYCLES)
    took = time.process_time() - start
    assert chip.now >= CYCLES
    assert mirror.checked > 1000, f"ME {me} retired only {mirror.checked} instructions"
    print(f"{program} ME {me} ({chip.config.me_label(me)}): {mirror.checked:,} instructions, "
          f"{mirror.commands:,} commands, {mirror.deliveries:,} deliveries in {CYCLES:,} "
          f"cycles, {took:.1f} s CPU")


def test_a_broken_model_instruction_is_caught_and_named() -> None:
    chip = l2wire_chip()
    me = me_of_kind(chip, "rx")
    image = chip._images[me]
    # the first ALU instruction writing a GPR: the core flips bit 0 of its result
    pc = next(pc for pc, w in enumerate(image.words)
              if isa.decode(w)[0].name == "alu"
              and isa.operand_class(isa.decode(w)[1]["dest"]).name in ("gpr_a", "gpr_b"))
    mirror = Lockstep.attach(chip, me)
    chip._core.lockstep_corrupt(me, pc)
    with pytest.raises(LockstepMismatch) as err:
        chip.run(cycles=CYCLES)
    report = err.value.report
    assert f"pc {pc}: alu" in report
    assert "state after it differs" in report
    assert "gpr_" in report
    assert mirror.checked < CYCLES


def test_lockstep_needs_a_fresh_chip() -> None:
    chip = l2wire_chip()
    chip.run(cycles=100)
    with pytest.raises(Exception, match="before the first run"):
        Lockstep.attach(chip, min(chip._images))


def test_a_broken_rtl_instruction_is_caught_in_the_chip() -> None:
    # router4's receive ME XORs (a flag in local memory): the RTL mutant computing OR for
    # XOR is caught at that instruction, with the differing local memory word
    chip = router4_chip()
    me = me_of_kind(chip, "rx")
    mirror = Lockstep.attach(chip, me)
    mirror.rtl.set_mutant(MUTANTS["alu_xor_is_or"])
    with pytest.raises(LockstepMismatch) as err:
        chip.run(cycles=CYCLES)
    first = err.value.report.splitlines()[1]
    assert first.startswith("first difference after:") and "alu op=XOR" in first


def test_cli_rtl_and_wave(tmp_path: Path) -> None:
    wave = tmp_path / "me2.vcd"
    result = CliRunner().invoke(main, ["run", str(sim_speed.manifest_path()), "--cycles",
                                       "3000", "--rtl", "2", "--wave", str(wave)])
    assert result.exit_code == 0, result.output
    assert "RTL lockstep: ME 2" in result.output and "no mismatch" in result.output
    assert wave.read_text().startswith("$") and "$enddefinitions" in wave.read_text()
    result = CliRunner().invoke(main, ["run", str(sim_speed.manifest_path()), "--cycles",
                                       "3000", "--wave", str(wave)])
    assert result.exit_code != 0 and "needs --rtl" in result.output


def test_a_mismatch_in_compiled_code_names_the_mbl_line() -> None:
    chip = compiled_chip()
    me = me_of_kind(chip, "fwd")
    image = chip._images[me]
    # the first GPR-writing alu compiled from ipv4_fwd.mbl (every IPv4 frame runs it)
    pc = next(pc for pc, w in enumerate(image.words)
              if isa.decode(w)[0].name == "alu"
              and isa.operand_class(isa.decode(w)[1]["dest"]).name in ("gpr_a", "gpr_b")
              and str(image.lines[pc].file).endswith("ipv4_fwd.mbl"))
    Lockstep.attach(chip, me)
    chip._core.lockstep_corrupt(me, pc)
    with pytest.raises(LockstepMismatch) as err:
        chip.run(cycles=CYCLES)
    first = err.value.report.splitlines()[1]
    assert f"pc {pc}: alu" in first and "ipv4_fwd.mbl:" in first


def command_program() -> list[int]:
    """Every context: SRAM, scratch and DRAM writes and reads with ctx_swap, an atomic, a
    hash, 20 SRAM increments back to back (more than the 16-entry command FIFO: the ME
    stalls), a sig_done command waited for with ctx_arb, then kill."""
    from rtlprog import OPND, csr_rd, enc, immed, kill
    a, b, x, xd, imm = OPND["gpr_a"], OPND["gpr_b"], OPND["xfer_s"], OPND["xfer_d"], OPND["imm"]
    none = isa.XFER_NONE

    def alu(dest: int, op: str, src: int, shamt: int = 0, first: int = isa.OPERAND_NONE) -> int:
        return enc("alu", op=isa.ALU_OPS[op], dest=dest, a=first, b=src, shift=0, shamt=shamt)

    def mem(unit: str, cmd: str, xfer: int, first: int, second: int, count: int, sig: int,
            swap: int) -> int:
        cmds = isa.BY_MNEMONIC[unit].cmds
        return enc(unit, cmd=cmds[cmd], xfer=xfer, a=first, b=second, count=count - 1,
                   sig=sig, swap=swap)

    words = [csr_rd("ACTIVE_CTX_STS"), immed(a + 0, 0),  # a0 = ACTIVE_CTX_STS
             alu(a + 1, "AND", imm + 7, first=a + 0),
             alu(a + 2, "B", a + 1, shamt=6),              # a2 = ctx * 64
             alu(x + 0, "B", a + 2), alu(x + 1, "~B", a + 2),
             mem("sram", "write", 0, a + 2, imm + 0, 2, 1, 1),
             mem("sram", "read", 2, a + 2, imm + 0, 2, 2, 1),
             alu(a + 3, "+", x + 3, first=x + 2),
             alu(x + 4, "B", a + 3),
             mem("scratch", "test_and_add", 4, a + 2, imm + 8, 1, 3, 1),
             alu(xd + 0, "B", x + 4), alu(xd + 1, "B", a + 3),
             mem("dram", "write", 0, a + 2, imm + 0, 1, 4, 1),
             mem("dram", "read", 2, a + 2, imm + 0, 1, 5, 1),
             alu(x + 6, "B", xd + 2), alu(x + 7, "B", xd + 3),
             enc("hash_48", size=isa.HASH_SIZES["hash_48"], xfer=6, count=0, sig=6, swap=1),
             *[mem("sram", "incr", none, a + 2, imm + 12, 1, 0, 0) for _ in range(20)],
             mem("scratch", "read", 8, a + 2, imm + 8, 1, 7, 0),
             enc("ctx_arb", mode=isa.CTX_ARB_MODES["all"], sigs=1 << 7),
             alu(b + 0, "+", x + 8, first=x + 6),
             kill()]
    return words


def test_every_command_kind_and_a_full_command_fifo_in_lockstep() -> None:
    from npkit.compiler.uc.image import Image
    from npkit.sim import Chip

    chip = Chip("ixp2800")
    chip.load(Image(mes=(0,), ctx_mode=8, words=command_program()))
    mirror = Lockstep.attach(chip, 0)
    chip.run(cycles=20_000, until_idle=True)
    assert mirror.checked == 8 * len(command_program())
    assert mirror.commands == 8 * 27  # 2 sram, 1 atomic, 2 dram, hash, 20 incr, 1 read
    assert chip._core.lockstep_state(0)  # the run ended in agreement


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prog=program(max_blocks=16, commands=True))
def test_random_programs_with_commands_agree_in_lockstep(prog: tuple[list[int], int]) -> None:
    """Random programs over the whole covered ISA, memory and hash commands included, on ME 0
    of a chip whose model serves the commands: the RTL issues the same commands with the same
    operands and ends every instruction in the model's state.  A context may sleep for good on
    a signal nothing sends, and a random LM_ADDR may point past local memory: the model stops
    there (a deadlock or a fault), after every earlier instruction agreed."""
    from npkit.compiler.uc.image import Image
    from npkit.sim import Chip
    from npkit.sim.chip import SimFault

    words, ctx_mode = prog
    chip = Chip("ixp2800")
    chip.load(Image(mes=(0,), ctx_mode=ctx_mode, words=words))
    mirror = Lockstep.attach(chip, 0)
    try:
        chip.run(cycles=20_000, until_idle=True)
    except SimFault as fault:
        assert fault.kind in ("bad_address", "deadlock"), str(fault)
    assert mirror.checked > 0
