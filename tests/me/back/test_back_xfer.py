"""Read transfer registers used in place (xfer.py) and their readers in defer slots
(defer.py): compiled and run on the chip, compared with the WIR interpreter."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import interp, wir
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.back.defer import fill_defer_slots
from npkit.compiler.me.back.mir import MBlock, MFunction, MInstr

from . import gen, harness
from .test_back_props import memories, packet_for

R = wir.Reg
OPT = settings(max_examples=30, deadline=None)
COPY_TO_GPR = re.compile(r"alu\[[ab]\d+, --, B, \$\d+\]")


def read_then_use(second_read: bool, bit: int, word: int, use_first: bool = False
                  ) -> wir.Function:
    """v, w read from SRAM; v's bit tested; on one path v and w go into metadata, after
    (or, `use_first`, before) another read when `second_read`: that read reuses the
    transfer registers, and its result is stored first (so it is waited for)."""
    later = [wir.MemRead((R(4), R(5)), wir.SRAM, gen.MEM_BASE + 6),
             wir.MetaWrite(4, R(4))] if second_read else [wir.MetaWrite(4, 7)]
    uses = [wir.Bin(R(6), "add", R(1), 5), wir.MetaWrite(3, R(6)),
            wir.Bin(R(7), "lshr", R(2), 16), wir.MetaWrite(5, R(7))]
    return wir.Function("xfer", [
        wir.Block("entry", [wir.MemRead((R(1), R(2)), wir.SRAM, gen.MEM_BASE + word),
                            wir.Bin(R(3), "and", R(1), 1 << bit),
                            wir.Branch("ne", R(3), 0, "set", "clear")]),
        wir.Block("set", [*(uses + later if use_first else later + uses),
                          wir.MetaWrite(8, 1), wir.Ret()]),
        wir.Block("clear", [wir.MetaWrite(3, R(2)), wir.MetaWrite(8, 2), wir.Ret()]),
    ], window_bytes=8, next_reg=8)


def run_with(fn: wir.Function, seed: int, skip: frozenset[str] = frozenset()) -> None:
    """The chip's metadata against the interpreter's."""
    body = compile_body(fn, skip=skip)
    sram, scratch, local = memories(seed)
    packet = packet_for(seed)
    meta = [3, len(packet)] + [0] * 14
    result = harness.run(harness.build(body.uc, fn.window_bytes), fn.window_bytes,
                         [harness.Context(packet, list(meta))], sram, scratch, local)
    result.check_clean()
    want = interp.run(fn, interp.Machine(bytearray(packet), list(meta), {
        wir.SRAM: dict(sram), wir.SCRATCH: dict(scratch), wir.LOCAL: dict(local)}))
    assert result.metas[0][:12] == want.meta[:12], f"{fn}\n{body.uc}"


@OPT
@given(st.booleans(), st.integers(0, 31), st.sampled_from([0, 3, 9, 12]), st.booleans(),
       st.booleans(), st.integers(0, 2**31))
def test_transfer_registers_read_in_place_match_the_interpreter(
        second_read: bool, bit: int, word: int, use_first: bool, early: bool, seed: int
) -> None:
    run_with(read_then_use(second_read, bit, word, use_first), seed,
             frozenset() if early else frozenset({"prefetch"}))


def test_without_a_later_read_nothing_is_copied_out_of_transfer_registers() -> None:
    uc = compile_body(read_then_use(False, 31, 0)).uc
    assert not COPY_TO_GPR.search(uc), uc
    assert "br_bset[$0, 31" in uc or "br_bclr[$0, 31" in uc
    plain = compile_body(read_then_use(False, 31, 0), skip={"xfer"})
    assert COPY_TO_GPR.search(plain.uc)


def test_a_value_a_later_read_could_overwrite_is_copied() -> None:
    uc = compile_body(read_then_use(True, 31, 0), skip={"prefetch"}).uc
    assert COPY_TO_GPR.search(uc), uc


def defer_block(refill: bool) -> MBlock:
    """`alu[..., $2, +, 5]`, a command (a read into $0..$2, or a counter increment), its
    wait, the return."""
    command = "sram[read, $0, a0, 0, 3], sig_done[1]" if refill else \
        "scratch[incr, --, 0, 0, 1], sig_done[1]"
    return MBlock("b_x#", [
        MInstr("alu[*l$index1[3], {0}, +, 5]", ["$2"], uses=(0,)),
        MInstr(command, [], kind="mem", signals=(1,)),
        MInstr("ctx_arb[1]", [], kind="wait", signals=(1,)),
        MInstr("br[body_exit#]", [], kind="branch", targets=("body_exit#",))])


def test_a_read_of_a_transfer_register_passes_a_wait_unless_a_command_may_refill_it() -> None:
    for refill in (False, True):
        block = defer_block(refill)
        fill_defer_slots(MFunction("d", [block], 8), {})
        assert (block.instrs[-1].template.startswith("alu[*l$index1[3]")) == (not refill)
