"""ALU-class instructions against a small reference model written here (not the C++ code)."""

from __future__ import annotations

import pytest
from coreprog import (
    MASK32,
    NONE,
    A,
    B,
    X,
    alu,
    csr_rd,
    csr_wr,
    enc,
    immed,
    make_core,
    single_context,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.sim import isa

u32 = st.integers(0, MASK32)

COVERED = frozenset(
    {"alu", "alu_shf", "dbl_shf", "ld_field", "ld_field_w_clr", "byte_align_be", "byte_align_le",
     "ffs", "pop_count", "nop"}
    | {f"ALU_OPS:{k}" for k in isa.ALU_OPS}
    | {f"SHIFT_TYPES:{k}" for k in isa.SHIFT_TYPES}
    | set(isa.IMMED_VARIANTS)
    | {"LOCAL_CSRS:BYTE_INDEX"}
)


@pytest.fixture(scope="module")
def core():
    return make_core()


def run(core, words, regs=None):
    core.load(0, single_context(words))
    for code, value in (regs or {}).items():
        core.write_reg(0, 0, code, value)
    assert core.run(10_000, until_idle=True) == "idle"
    return core


# ---------------------------------------------------------------- reference model
def ref_shift(v: int, kind: str, n: int) -> int:
    if n == 0:
        return v
    if kind == "<<":
        return (v << n) & MASK32
    if kind == ">>":
        return v >> n
    if kind == "<<rot":
        return ((v << n) | (v >> (32 - n))) & MASK32
    return ((v >> n) | (v << (32 - n))) & MASK32


def signed(v: int) -> int:
    return v - (1 << 32) if v >> 31 else v


def ref_alu(op: str, a: int, b: int, carry: bool) -> tuple[int, bool | None, bool | None]:
    """(result, C, V); C/V None = cleared (logical ops)."""
    logical = {"B": b, "~B": ~b, "AND": a & b, "~AND": ~a & b, "AND~": a & ~b, "OR": a | b,
               "XOR": a ^ b}
    if op in logical:
        return logical[op] & MASK32, None, None
    adds = {"+": (a, b, 0), "+carry": (a, b, int(carry)), "+8": (a, b & 0xFF, 0),
            "+16": (a, b & 0xFFFF, 0), "+4": (a, b & 0xF, 0)}
    if op in adds:
        x, y, cin = adds[op]
        total = x + y + cin
        r = total & MASK32
        return r, total > MASK32, signed(x) + signed(y) + cin != signed(r)
    subs = {"-": (a, b, 0), "B-A": (b, a, 0), "-carry": (a, b, 0 if carry else 1)}
    x, y, bin_ = subs[op]
    r = (x - y - bin_) & MASK32
    return r, x >= y + bin_, signed(x) - signed(y) - bin_ != signed(r)


@settings(max_examples=400, deadline=None)
@given(a=u32, b=u32, op=st.sampled_from(sorted(isa.ALU_OPS)),
       shift=st.sampled_from(sorted(isa.SHIFT_TYPES)), shamt=st.integers(0, 31),
       carry=st.booleans())
def test_alu_result_and_condition_codes(core, a, b, op, shift, shamt, carry):
    # set C first: 0xFFFFFFFF + 1 carries, 0 + 0 does not
    set_c = alu(NONE, A(2), "+", B(2))
    words = [set_c, alu(A(1), A(0), op, B(0), shift, shamt)]
    run(core, words, {A(0): a, B(0): b, A(2): MASK32 if carry else 0, B(2): 1 if carry else 0})
    r, c, v = ref_alu(op, a, ref_shift(b, shift, shamt), carry)
    assert core.read_reg(0, 0, A(1)) == r
    z, n, cc, vv = core.context(0, 0)["condition_codes"]
    assert (z, n) == (r == 0, bool(r >> 31))
    assert (cc, vv) == (bool(c), bool(v))


@settings(max_examples=100, deadline=None)
@given(a=u32, b=u32, n=st.integers(0, 31), indirect=st.booleans())
def test_dbl_shf(core, a, b, n, indirect):
    words = [alu(NONE, NONE, "B", B(2)),  # previous ALU result = n (for indirect)
             enc("dbl_shf", dest=A(1), a=A(0), b=B(0), shamt=0 if indirect else n,
                 indirect=int(indirect))]
    run(core, words, {A(0): a, B(0): b, B(2): n})
    assert core.read_reg(0, 0, A(1)) == (((a << 32) | b) >> n) & MASK32


@settings(max_examples=200, deadline=None)
@given(old=u32, value=st.integers(0, 0xFFFF), shift=st.integers(0, 3), invert=st.booleans(),
       variant=st.sampled_from(sorted(isa.IMMED_VARIANTS)))
def test_immed_family(core, old, value, shift, invert, variant):
    word = immed(A(1), value, variant, shift if variant == "immed" else 0, int(invert))
    run(core, [word], {A(1): old})
    v = (~value & MASK32) if invert else value
    expected = {
        "immed": (~(value << (8 * shift)) & MASK32) if invert else (value << (8 * shift)) & MASK32,
        "immed_w0": (old & 0xFFFF0000) | (v & 0xFFFF),
        "immed_w1": (old & 0x0000FFFF) | ((v & 0xFFFF) << 16),
        "immed_b0": (old & ~0xFF & MASK32) | (v & 0xFF),
        "immed_b1": (old & ~0xFF00 & MASK32) | ((v & 0xFF) << 8),
        "immed_b2": (old & ~0xFF0000 & MASK32) | ((v & 0xFF) << 16),
        "immed_b3": (old & 0x00FFFFFF) | ((v & 0xFF) << 24),
        "load_addr": value,
    }[variant]
    assert core.read_reg(0, 0, A(1)) == expected


def test_local_csr_rd_is_ored_into_the_next_immed(core):
    words = [csr_wr("MAILBOX2", B(0)), csr_rd("MAILBOX2"), alu(A(2), NONE, "B", B(0)),
             immed(A(1), 0x0F00), immed(A(3), 0x0F00)]
    run(core, words, {B(0): 0x1230_0001})
    assert core.read_reg(0, 0, A(1)) == 0x1230_0F01  # the pending value, once
    assert core.read_reg(0, 0, A(3)) == 0x0F00


@settings(max_examples=150, deadline=None)
@given(old=u32, src=u32, mask=st.integers(0, 15), shift=st.sampled_from(sorted(isa.SHIFT_TYPES)),
       shamt=st.integers(0, 31), clr=st.booleans(), load_cc=st.booleans())
def test_ld_field(core, old, src, mask, shift, shamt, clr, load_cc):
    words = [alu(NONE, NONE, "B", B(3)),  # Z=1 N=0 before
             enc("ld_field", dest=A(1), mask=mask, src=B(0), shift=isa.SHIFT_TYPES[shift],
                 shamt=shamt, clr=int(clr), load_cc=int(load_cc))]
    run(core, words, {A(1): old, B(0): src, B(3): 0})
    bytes_mask = sum(0xFF << (8 * i) for i in range(4) if mask >> i & 1)
    base = 0 if clr else old
    r = (base & ~bytes_mask & MASK32) | (ref_shift(src, shift, shamt) & bytes_mask)
    assert core.read_reg(0, 0, A(1)) == r
    z, n, _, _ = core.context(0, 0)["condition_codes"]
    assert (z, n) == ((r == 0, bool(r >> 31)) if load_cc else (True, False))


@settings(max_examples=100, deadline=None)
@given(a=u32, b=u32, index=st.integers(0, 3), le=st.booleans())
def test_byte_align(core, a, b, index, le):
    words = [csr_wr("BYTE_INDEX", B(2)), enc("byte_align", le=int(le), dest=A(1), a=A(0), b=B(0))]
    run(core, words, {A(0): a, B(0): b, B(2): index})
    if le:
        stream = a.to_bytes(4, "little") + b.to_bytes(4, "little")
        expected = int.from_bytes(stream[index:index + 4], "little")
    else:
        stream = a.to_bytes(4, "big") + b.to_bytes(4, "big")
        expected = int.from_bytes(stream[index:index + 4], "big")
    assert core.read_reg(0, 0, A(1)) == expected


@settings(max_examples=100, deadline=None)
@given(src=st.one_of(st.just(0), u32))
def test_ffs_and_pop_count(core, src):
    words = [enc("bitop", op=isa.BITOPS["pop_count"], dest=A(2), src=B(0)),
             enc("bitop", op=isa.BITOPS["ffs"], dest=A(1), src=B(0))]
    run(core, words, {B(0): src})
    first = (src & -src).bit_length() - 1 if src else 0
    assert core.read_reg(0, 0, A(1)) == first
    assert core.read_reg(0, 0, A(2)) == bin(src).count("1")
    assert core.context(0, 0)["condition_codes"][0] == (src == 0)


def test_nop_only_takes_a_cycle(core):
    run(core, [immed(A(1), 5), enc("nop"), enc("nop")])
    assert core.read_reg(0, 0, A(1)) == 5
    assert core.context(0, 0)["instructions"] == 1 + 3 + 1  # br!=ctx, 3 body words, kill


def test_merging_into_a_transfer_register_uses_the_out_register(core):
    # immed_w0 then immed_w1 on $3 build one 32-bit value in the *out* register
    words = [immed(X(3), 0x5678, "immed_w0"), immed(X(3), 0x1234, "immed_w1")]
    run(core, words, {X(3): 0xAAAA_AAAA})
    assert core.read_xfer_out(0, 0, 0, 3) == 0x1234_5678
    assert core.read_reg(0, 0, X(3)) == 0xAAAA_AAAA  # the in register is untouched
