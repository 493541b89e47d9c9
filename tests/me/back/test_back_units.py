"""Targeted back-end tests: latency hiding measured in cycles, MBL lines of instructions,
instruction selection idioms, the bank rule, and hand-computed results."""

from __future__ import annotations

import re

from npkit.compiler.me import wir
from npkit.compiler.me.abi import BodyABI
from npkit.compiler.me.back import compile_body
from npkit.compiler.uc import assemble_text

from . import harness

LOC = wir.Loc("prog.mbl", 7, 3)
SRAM_LATENCY = harness.small_config().raw["sram"]["latency"]


def function(instrs: list[wir.Instr], window: int = 16, n_regs: int = 100) -> wir.Function:
    return wir.Function("t", [wir.Block("entry", [*instrs, wir.Ret()])], window, n_regs)


def regs(n: int) -> list[wir.Reg]:
    return [wir.Reg(i) for i in range(n)]


def cycles_of(fn: wir.Function, sram: dict[int, int]) -> tuple[int, list[int]]:
    body = compile_body(fn)
    result = harness.run(harness.build(body.uc, fn.window_bytes), fn.window_bytes,
                         [harness.Context(bytes(range(32)))], sram=sram)
    result.check_clean()
    return result.cycles, result.metas[0]


def test_independent_sram_reads_overlap() -> None:
    r = regs(6)
    empty = function([wir.MetaWrite(2, 1)])
    independent = function([
        wir.MemRead((r[0],), wir.SRAM, 0x40),
        wir.MemRead((r[1],), wir.SRAM, 0x50),
        wir.Bin(r[2], "xor", r[0], r[1]),
        wir.MetaWrite(2, r[2]),
    ])
    dependent = function([       # the second address needs the first result
        wir.MemRead((r[0],), wir.SRAM, 0x40),
        wir.Bin(r[3], "and", r[0], 0),
        wir.Bin(r[4], "add", r[3], 0x50),
        wir.MemRead((r[1],), wir.SRAM, r[4]),
        wir.Bin(r[2], "xor", r[0], r[1]),
        wir.MetaWrite(2, r[2]),
    ])
    sram = {0x40: 0x1234_5678, 0x50: 0x0F0F_0F0F}
    base, _ = cycles_of(empty, sram)
    one, meta1 = cycles_of(independent, sram)
    two, meta2 = cycles_of(dependent, sram)
    assert meta1[2] == meta2[2] == 0x1234_5678 ^ 0x0F0F_0F0F
    assert one - base < 1.3 * SRAM_LATENCY, (base, one, two)
    assert two - base > 1.8 * SRAM_LATENCY, (base, one, two)
    text = compile_body(independent).uc
    assert len(re.findall(r"ctx_arb\[\d+, \d+\]", text)) == 1
    # both issued before the wait
    assert text.index("sram[read", text.index("sram[read") + 1) < text.index("ctx_arb")


def test_wait_is_placed_at_first_use_not_at_issue() -> None:
    r = regs(5)
    fn = function([
        wir.HdrRead(r[1], 0),
        wir.MemRead((r[0],), wir.SRAM, 0x40),
        wir.Bin(r[2], "add", r[1], 5),       # independent work in the shadow
        wir.MetaWrite(3, r[2]),
        wir.Bin(r[3], "add", r[0], r[2]),    # first use
        wir.MetaWrite(2, r[3]),
    ])
    lines = [x.strip() for x in compile_body(fn).uc.splitlines()]
    issue = next(i for i, x in enumerate(lines) if x.startswith("sram[read"))
    wait = next(i for i, x in enumerate(lines) if x.startswith("ctx_arb"))
    # r2 = hdr + 5 is computed in the shadow (its meta write may go to a defer slot)
    assert any(x.startswith("alu[") and "$$0, +, 5]" in x for x in lines[issue:wait])
    _, meta = cycles_of(fn, {0x40: 100})
    assert meta[2] == 100 + 0x00010203 + 5 and meta[3] == 0x00010203 + 5


def test_instructions_carry_their_mbl_lines() -> None:
    r = regs(4)
    mul_loc, add_loc = wir.Loc("prog.mbl", 12, 9), wir.Loc("prog.mbl", 13, 5)
    fn = function([
        wir.HdrRead(r[0], 0),
        wir.HdrRead(r[1], 1),
        wir.Bin(r[2], "mul", r[0], r[1], loc=mul_loc),
        wir.Bin(r[3], "add", r[2], r[0], loc=add_loc),
        wir.MetaWrite(2, r[3], loc=LOC),
        wir.MetaWrite(3, r[3], loc=LOC),    # two readers: the sum is not computed into one
    ])
    body = compile_body(fn)
    image = assemble_text(harness.dispatch(body.uc, 16, 1), "harness.uc")
    words = {pc: str(image.lines[pc]) for pc in range(len(image.words))}
    mul_pcs = [pc for pc, where in words.items() if where == "prog.mbl:12:9"]
    assert len(mul_pcs) == 6            # the whole mul_step sequence
    assert "prog.mbl:13:5" in words.values() and "prog.mbl:7:3" in words.values()
    assert image.source_of(image.symbols["body_exit"]).startswith("harness.uc:")
    _, meta = cycles_of(fn, {})
    a, b = 0x00010203, 0x04050607
    assert meta[2] == (a * b + a) & wir.MASK32


def test_idioms_are_selected() -> None:
    r = regs(12)
    fn = function([
        wir.HdrRead(r[0], 0),
        wir.HdrRead(r[1], 1),
        wir.Bin(r[2], "lshr", r[0], 16),
        wir.Bin(r[3], "and", r[2], 0xFF),            # byte field: ld_field_w_clr
        wir.Bin(r[4], "shl", r[1], 3),
        wir.Bin(r[5], "add", r[3], r[4]),           # shift folded: alu_shf
        wir.Fsh(r[6], r[0], r[1], 16),              # dbl_shf
        wir.Bin(r[7], "xor", r[5], r[6]),
        wir.MetaWrite(2, r[7]),
        wir.Bin(r[8], "and", r[0], 1 << 9),
        wir.Branch("ne", r[8], 0, "yes", "no"),     # br_bset
    ])
    fn.blocks[0].instrs.pop()                       # the Ret of function()
    fn.blocks += [wir.Block("yes", [wir.MetaWrite(3, 1), wir.Ret()]),
                  wir.Block("no", [wir.MetaWrite(3, 2), wir.Ret()])]
    text = compile_body(fn).uc
    assert "ld_field_w_clr[" in text and ", >>16]" in text
    assert re.search(r"alu_shf\[[\w$]+, [\w$]+, \+, [\w$]+, <<3\]", text)
    assert "dbl_shf[" in text and re.search(r"br_b(set|clr)\[\$\$0, 9,", text)
    a, b = 0x00010203, 0x04050607
    _, meta = cycles_of(fn, {})
    assert meta[2] == (((a >> 16) & 0xFF) + (b << 3 & wir.MASK32)) & wir.MASK32 ^ (
        ((a << 32 | b) >> 16) & wir.MASK32)
    assert meta[3] == (1 if a & (1 << 9) else 2)


def test_bank_rule_holds_with_few_registers() -> None:
    """Three values pairwise combined (an odd cycle of the pair graph) with 2 + 2 GPRs."""
    r = regs(8)
    fn = function([
        wir.HdrRead(r[0], 0), wir.HdrRead(r[1], 1),
        wir.Bin(r[2], "add", r[0], 1), wir.Bin(r[3], "add", r[1], 2),
        wir.Bin(r[4], "add", r[0], r[1]),
        wir.Bin(r[5], "xor", r[2], r[3]), wir.Bin(r[6], "sub", r[3], r[4]),
        wir.Bin(r[7], "or", r[4], r[2]),
        wir.MetaWrite(2, r[5]), wir.MetaWrite(3, r[6]), wir.MetaWrite(4, r[7]),
    ])
    abi = BodyABI(gprs_a=(0, 1), gprs_b=(0, 1))
    body = compile_body(fn, abi)
    assert set(body.gprs_used) <= {"a0", "a1", "b0", "b1"}
    result = harness.run(harness.build(body.uc, 16), 16, [harness.Context(bytes(range(32)))])
    a, b = 0x00010203, 0x04050607
    c, d, e = a + 1, b + 2, a + b
    assert result.metas[0][2:5] == [c ^ d, (d - e) & wir.MASK32, e | c]


def test_body_reports_its_resources() -> None:
    r = regs(3)
    fn = function([wir.MemRead((r[0], r[1]), wir.SCRATCH, 0x10),
                   wir.HdrWrite(1, r[0]), wir.MetaWrite(2, r[1])])
    body = compile_body(fn)
    assert body.window_bytes == 16 and body.instructions > 0
    assert body.signals_used and set(body.signals_used) <= set(range(1, 11))
    assert body.uc.count("body_entry#:") == 1 and "br[body_exit#]" in body.uc
    assert body.block_labels == {"entry": "b_entry"}
    result = harness.run(harness.build(body.uc, 16), 16, [harness.Context(bytes(range(32)))],
                         scratch={0x10: 0xAABBCCDD, 0x11: 7})
    result.check_clean()
    assert result.packets[0][4:8] == bytes.fromhex("AABBCCDD")
    assert result.packets[0][:4] == bytes(range(4)) and result.metas[0][2] == 7
