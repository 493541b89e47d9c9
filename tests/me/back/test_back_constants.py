"""Constants `k << s` (and, for + and -, their negatives) as a shifted immediate of one
`alu_shf`: compiled and run on the chip, compared with the WIR interpreter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import BackOptions, compile_body

from . import gen
from .test_back_props import run_checked

R = wir.Reg
OPT = settings(max_examples=40, deadline=None)


def const_fn(op: str, c: int) -> wir.Function:
    """Header word 0 `op` c into metadata word 3 and header word 1."""
    return wir.Function("k", [wir.Block("entry", [
        wir.HdrRead(R(1), 0), wir.Bin(R(2), op, R(1), c), wir.MetaWrite(3, R(2)),
        wir.HdrWrite(1, R(2)), wir.MetaWrite(8, 1), wir.Ret()])], window_bytes=8, next_reg=3)


@st.composite
def shifted(draw: st.DrawFn) -> int:
    k, s = draw(st.integers(1, 63)), draw(st.integers(0, 31))
    c = (k << s) & wir.MASK32
    return c if draw(st.booleans()) else -c & wir.MASK32


@OPT
@given(st.sampled_from(["add", "sub", "and", "or", "xor"]), shifted() | st.integers(0, wir.MASK32),
       st.integers(0, 2**31))
def test_shifted_constants_match_the_interpreter(op: str, c: int, seed: int) -> None:
    run_checked(const_fn(op, c), seed)


def test_minus_256_is_one_alu_shf_without_immed() -> None:
    uc = compile_body(const_fn("add", 0xFFFFFF00)).uc
    assert "alu_shf[" in uc and ", -, 1, <<8]" in uc and "immed" not in uc
    plain = compile_body(const_fn("add", 0xFFFFFF00),
                         options=BackOptions(shifted_constants=False)).uc
    assert "immed" in plain


def merge_fn(mask: int, swap: bool, base_live: bool) -> wir.Function:
    """`(hdr0 & mask) | ((hdr1 + 5) & ~mask)` into header word 2 (operands of the `or` in
    either order); `base_live`: the sum is read again afterwards (its register survives)."""
    parts = [wir.Bin(R(4), "and", R(1), mask), wir.Bin(R(5), "and", R(3), ~mask & wir.MASK32)]
    a, b = (R(5), R(4)) if swap else (R(4), R(5))
    return wir.Function("merge", [wir.Block("entry", [
        wir.HdrRead(R(1), 0), wir.HdrRead(R(2), 1), wir.Bin(R(3), "add", R(2), 5),
        *(parts[::-1] if swap else parts), wir.Bin(R(6), "or", a, b), wir.HdrWrite(2, R(6)),
        *([wir.MetaWrite(3, R(3))] if base_live else []),
        wir.MetaWrite(8, 1), wir.Ret()])], window_bytes=16, next_reg=7)


BYTE_MASKS = [sum(0xFF << 8 * k for k in range(4) if bits >> k & 1) for bits in range(1, 15)]


@OPT
@given(st.sampled_from(BYTE_MASKS), st.booleans(), st.booleans(), st.integers(0, 2**31))
def test_byte_merges_match_the_interpreter(mask: int, swap: bool, base_live: bool,
                                           seed: int) -> None:
    fn = merge_fn(mask, swap, base_live)
    assert "ld_field[" in compile_body(fn).uc
    run_checked(fn, seed)


def test_a_merge_is_one_ld_field_and_switches_off() -> None:
    fn = merge_fn(0xFFFF, False, False)
    uc = compile_body(fn).uc
    assert "ld_field_w_clr" not in uc and " OR, " not in uc
    assert " OR, " in compile_body(fn, options=BackOptions(field_merges=False)).uc


def field_address_fn(inner: int, shift: int, outer: int) -> wir.Function:
    """n = hdr0 & inner into metadata word 5; SRAM word ((n << shift) & outer) + base
    read (the next hop's `(route & 0xFFFF) << 2 & 0xFFC`) into metadata word 3."""
    return wir.Function("fld", [wir.Block("entry", [
        wir.HdrRead(R(1), 0), wir.Bin(R(2), "and", R(1), inner), wir.MetaWrite(5, R(2)),
        wir.Bin(R(3), "shl", R(2), shift), wir.Bin(R(4), "and", R(3), outer),
        wir.Bin(R(6), "add", R(4), gen.MEM_BASE),
        wir.MemRead((R(7),), wir.SRAM, R(6)), wir.MetaWrite(3, R(7)),
        wir.MetaWrite(8, 1), wir.Ret()])], window_bytes=8, next_reg=8)


@OPT
@given(st.sampled_from([0xFFFF, 0xFF, 0x3F, 0xF0, 0xFFF0]), st.integers(2, 4),
       st.sampled_from([0xFC, 0x7C, 0xF0, 0x1FC]), st.integers(0, 2**31))
def test_address_fields_of_masked_values_match_the_interpreter(inner: int, shift: int,
                                                               outer: int, seed: int) -> None:
    run_checked(field_address_fn(inner, shift, outer), seed)


def test_the_field_reads_the_unmasked_word_and_the_mask_goes_to_metadata() -> None:
    uc = compile_body(field_address_fn(0xFFFF, 2, 0xFC)).uc
    assert "ld_field_w_clr[*l$index1[5], 0011, $$0]" in uc, uc
    assert "alu_shf[a0, --, B, $$0, <<" in uc or "alu_shf[b0, --, B, $$0, <<" in uc, uc
