"""The WIR interpreter against hand-computed values, numpy's uint32 arithmetic and the native
target's hash unit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl.types import META_VERDICT
from npkit.compiler.me import wir
from npkit.compiler.me.interp import InterpError, Machine, run
from npkit.compiler.me.wir import (
    Bin,
    Block,
    Branch,
    Cmp,
    Copy,
    Fsh,
    Function,
    Hash,
    HdrRead,
    HdrWrite,
    Jump,
    Loc,
    MemAdd,
    MemRead,
    MemWrite,
    MetaRead,
    MetaWrite,
    PktLoad8,
    PktStore8,
    Reg,
    Ret,
    Select,
)

R = [Reg(i) for i in range(16)]
words = st.integers(0, 2**32 - 1)


def straight(*instrs: wir.Instr, window: int = 8) -> Function:
    """One block: the instructions, then ret."""
    return Function("f", [Block("entry", [*instrs, Ret()])], window_bytes=window)


def run_straight(*instrs: wir.Instr, packet: bytes = bytes(16), window: int = 8,
                 **machine) -> Machine:
    return run(straight(*instrs, window=window), Machine(bytearray(packet), **machine))


def result(*instrs: wir.Instr) -> int:
    """The value of R[0] after the instructions."""
    return run_straight(*instrs).registers[0]


# ---- arithmetic ----
@pytest.mark.parametrize("op, a, b, expected", [
    ("add", 0xFFFF_FFFF, 1, 0),
    ("add", 0x7FFF_FFFF, 1, 0x8000_0000),
    ("sub", 0, 1, 0xFFFF_FFFF),
    ("sub", 5, 3, 2),
    ("and", 0xF0F0_1234, 0x0FF0_FF00, 0x00F0_1200),
    ("or", 0xF000_0001, 0x0000_0F00, 0xF000_0F01),
    ("xor", 0xFFFF_0000, 0xFF00_FF00, 0x00FF_FF00),
    ("shl", 1, 31, 0x8000_0000),
    ("shl", 0x8000_0001, 1, 2),
    ("shl", 0xABCD, 0, 0xABCD),
    ("lshr", 0x8000_0000, 31, 1),
    ("lshr", 0xF000_0000, 4, 0x0F00_0000),   # logical: no sign fill
    ("mul", 0x1_0000, 0x1_0000, 0),
    ("mul", 0xFFFF_FFFF, 0xFFFF_FFFF, 1),
    ("mul", 0x1234_5678, 9, 0xA3D7_0A38),
    ("mul", 0x8000_0001, 3, 0x8000_0003),
])
def test_bin_with_constant_and_register_operands(op, a, b, expected):
    assert result(Bin(R[0], op, a, b)) == expected
    assert result(Copy(R[1], a), Copy(R[2], b), Bin(R[0], op, R[1], R[2])) == expected


@pytest.mark.parametrize("op", ["shl", "lshr"])
@pytest.mark.parametrize("amount", [32, 33, 64, 0xFFFF_FFFF])
def test_shift_by_a_register_amount_of_32_or_more_gives_zero(op, amount):
    assert result(Copy(R[1], amount), Bin(R[0], op, 0xFFFF_FFFF, R[1])) == 0


@pytest.mark.parametrize("op", ["shl", "lshr"])
def test_shift_by_a_constant_of_32_is_an_error(op):
    with pytest.raises(InterpError, match="shift amount 32"):
        result(Bin(R[0], op, 1, 32))


@settings(max_examples=60, deadline=None)
@given(words, words)
def test_wrapping_arithmetic_matches_numpy_uint32(a, b):
    x, y = np.uint32(a), np.uint32(b)
    with np.errstate(over="ignore"):
        expected = {"add": x + y, "sub": x - y, "mul": x * y, "and": x & y, "or": x | y,
                    "xor": x ^ y}
    ops = [Bin(R[k], op, R[14], R[15]) for k, op in enumerate(expected)]
    regs = run_straight(Copy(R[14], a), Copy(R[15], b), *ops).registers
    assert [regs[k] for k in range(len(expected))] == [int(v) for v in expected.values()]


@pytest.mark.parametrize("hi, lo, amount, expected", [
    (0x1234_5678, 0x9ABC_DEF0, 8, 0x789A_BCDE),
    (0x1234_5678, 0x9ABC_DEF0, 31, 0x2468_ACF1),
    (0x0000_0001, 0x0000_0000, 1, 0x8000_0000),
    (0xFFFF_FFFF, 0x0000_0000, 16, 0xFFFF_0000),
])
def test_funnel_shift(hi, lo, amount, expected):
    assert result(Fsh(R[0], hi, lo, amount)) == expected
    assert result(Copy(R[1], hi), Copy(R[2], lo), Fsh(R[0], R[1], R[2], amount)) == expected


@pytest.mark.parametrize("amount", [0, 32])
def test_funnel_shift_amount_out_of_range_is_an_error(amount):
    with pytest.raises(InterpError, match="funnel shift"):
        result(Fsh(R[0], 1, 2, amount))


# ---- predicates ----
NEG1, MIN, MAX = 0xFFFF_FFFF, 0x8000_0000, 0x7FFF_FFFF
PREDICATE_CASES = [
    ("eq", 7, 7, 1), ("eq", 7, 8, 0), ("ne", 7, 8, 1), ("ne", NEG1, NEG1, 0),
    ("ult", 1, 2, 1), ("ult", 2, 2, 0), ("ult", 1, NEG1, 1), ("ult", MIN, MAX, 0),
    ("ule", 2, 2, 1), ("ule", 3, 2, 0), ("ule", 0, NEG1, 1),
    ("ugt", NEG1, 0, 1), ("ugt", 2, 2, 0), ("ugt", MIN, MAX, 1),
    ("uge", 2, 2, 1), ("uge", 1, 2, 0), ("uge", NEG1, MIN, 1),
    ("slt", NEG1, 0, 1), ("slt", 0, NEG1, 0), ("slt", MIN, MAX, 1), ("slt", 3, 3, 0),
    ("sle", MIN, MIN, 1), ("sle", MAX, MIN, 0), ("sle", NEG1, 1, 1),
    ("sgt", 0, NEG1, 1), ("sgt", MIN, MAX, 0), ("sgt", MAX, MIN, 1), ("sgt", 5, 5, 0),
    ("sge", 5, 5, 1), ("sge", NEG1, 0, 0), ("sge", 0, MIN, 1),
]


@pytest.mark.parametrize("pred, a, b, expected", PREDICATE_CASES)
def test_cmp(pred, a, b, expected):
    assert result(Cmp(R[0], pred, a, b)) == expected


@pytest.mark.parametrize("pred, a, b, expected", PREDICATE_CASES)
def test_branch_takes_then_exactly_when_the_predicate_holds(pred, a, b, expected):
    fn = Function("f", [
        Block("entry", [Copy(R[1], a), Branch(pred, R[1], b, "yes", "no")]),
        Block("yes", [MetaWrite(META_VERDICT, 1), Ret()]),
        Block("no", [MetaWrite(META_VERDICT, 2), Ret()]),
    ], window_bytes=0)
    assert run(fn, Machine(bytearray(4))).meta[META_VERDICT] == (1 if expected else 2)


def test_every_predicate_is_covered_both_ways():
    outcomes = {(p, e) for p, _, _, e in PREDICATE_CASES}
    assert outcomes == {(p, e) for p in wir.PREDICATES for e in (0, 1)}


@pytest.mark.parametrize("cond, expected", [(0, 22), (1, 11), (0x8000_0000, 11)])
def test_select(cond, expected):
    assert result(Copy(R[1], cond), Select(R[0], R[1], 11, 22)) == expected


# ---- packet, metadata, memory ----
def test_header_reads_and_writes_are_big_endian_packet_words():
    packet = bytes(range(1, 21))
    m = run_straight(HdrRead(R[0], 1), Bin(R[1], "add", R[0], 1), HdrWrite(0, R[1]),
                     HdrRead(R[2], 0), packet=packet)
    assert m.registers[0] == 0x0506_0708 and m.registers[2] == 0x0506_0709
    assert m.packet == bytes([5, 6, 7, 9]) + packet[4:]


def test_window_past_a_short_packet_reads_zero_and_keeps_the_packet_length():
    m = run_straight(HdrRead(R[0], 1), HdrWrite(1, 0xAABB_CCDD), HdrRead(R[1], 1),
                     packet=bytes([1, 2, 3, 4, 5, 6]))
    assert m.registers[0] == 0x0506_0000 and m.registers[1] == 0xAABB_CCDD
    assert m.packet == bytes([1, 2, 3, 4, 0xAA, 0xBB])


def test_header_word_outside_the_window_is_an_error():
    with pytest.raises(InterpError, match="header word 2 outside the 8-byte window"):
        run_straight(HdrRead(R[0], 2))


def test_packet_bytes_past_the_window_and_at_variable_offsets():
    packet = bytearray(range(100, 140))
    m = run_straight(PktLoad8(R[0], 30), Copy(R[1], 3), PktLoad8(R[2], R[1]),
                     PktStore8(33, 0x1FF), PktStore8(R[1], 7), packet=packet)
    assert (m.registers[0], m.registers[2]) == (130, 103)
    expected = bytearray(range(100, 140))
    expected[33], expected[3] = 0xFF, 7
    assert m.packet == expected


@pytest.mark.parametrize("instr", [PktLoad8(R[0], 40), PktStore8(40, 1)])
def test_packet_byte_outside_the_packet_is_an_error(instr):
    with pytest.raises(InterpError, match="packet byte 40 outside the 40-byte packet"):
        run_straight(instr, packet=bytes(40))


def test_header_write_is_seen_by_byte_loads_and_byte_stores_by_header_reads():
    m = run_straight(HdrWrite(1, 0x1122_3344), PktLoad8(R[0], 5), PktStore8(0, 0x99),
                     HdrRead(R[1], 0))
    assert (m.registers[0], m.registers[1]) == (0x22, 0x9900_0000)


def test_metadata():
    meta = [0] * 16
    meta[0], meta[1] = 3, 60
    m = run_straight(MetaRead(R[0], 1), MetaRead(R[1], 0), MetaWrite(2, R[1]),
                     MetaWrite(META_VERDICT, 1), meta=meta)
    assert m.registers[0] == 60 and m.meta[2] == 3 and m.meta[META_VERDICT] == 1


def test_metadata_word_out_of_range_is_an_error():
    with pytest.raises(InterpError, match="metadata word 16"):
        run_straight(MetaWrite(16, 1))


def test_memory_reads_writes_and_atomic_add():
    memory = {wir.SRAM: {100: 7, 102: 9}, wir.SCRATCH: {5: 0xFFFF_FFFF}}
    m = run_straight(
        MemRead((R[0], R[1], R[2]), wir.SRAM, 100),        # 101 missing: 0
        MemWrite(wir.LOCAL, 20, (R[2], 0xABC)),
        MemRead((R[3], R[4]), wir.LOCAL, 20),
        MemAdd(R[5], wir.SCRATCH, 5, 2),                   # wraps, returns the old value
        Copy(R[6], 102),
        MemAdd(None, wir.SRAM, R[6], 1),
        memory=memory)
    assert [m.registers[k] for k in range(6)] == [7, 0, 9, 9, 0xABC, 0xFFFF_FFFF]
    assert m.memory == {wir.SRAM: {100: 7, 102: 10}, wir.SCRATCH: {5: 1},
                        wir.LOCAL: {20: 9, 21: 0xABC}}


def test_memory_command_of_nine_words_is_an_error():
    with pytest.raises(InterpError, match="9 words"):
        run_straight(MemRead(tuple(R[:9]), wir.SRAM, 0))


# ---- the hash unit, against the native target ----
HASH_PROGRAM = """
header keys_t { k48: bit<48>; k64: bit<64>; k128: bit<128>; }
block b {
    let k = packet<keys_t>(0) else drop(short);
    k.k48 = hash48(k.k48);
    k.k64 = hash64(k.k64);
    k.k128 = hash128(k.k128);
    forward(0);
}
"""
SECTION = {"polynomial_48": 0x1B, "multiplier_64": 0x1234_5678_9ABC_DEF1,
           "multiplier_128": 3, "polynomial_128": 0x4000_0000_0000_0000_0000_0000_0000_0021}


def _split(value: int, n: int) -> tuple[int, ...]:
    return tuple(value >> (32 * (n - 1 - k)) & 0xFFFF_FFFF for k in range(n))


def _join(ws: list[int]) -> int:
    v = 0
    for w in ws:
        v = v << 32 | w
    return v


def interp_hashes(k48: int, k64: int, k128: int, machine: Machine) -> tuple[int, int, int]:
    fn = straight(Hash((R[0], R[1]), 48, _split(k48, 2)),
                  Hash((R[2], R[3]), 64, _split(k64, 2)),
                  Copy(R[8], _split(k128, 4)[0]),             # a register source too
                  Hash((R[4], R[5], R[6], R[7]), 128, (R[8], *_split(k128, 4)[1:])))
    regs = run(fn, machine).registers
    return tuple(_join([regs[k] for k in ks]) for ks in ((0, 1), (2, 3), range(4, 8)))  # type: ignore[return-value]


@pytest.fixture(scope="module", params=[{}, SECTION], ids=["defaults", "configured"])
def native_hash(request):
    from npkit.compiler.mbl import HashUnit, NativeProgram, compile_source

    unit = HashUnit.from_config(request.param)
    return unit, NativeProgram(compile_source(HASH_PROGRAM, "hash.mbl"), "b", unit)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**48 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**128 - 1))
def test_hash_matches_the_native_target(native_hash, k48, k64, k128):
    unit, native = native_hash
    frame = k48.to_bytes(6, "big") + k64.to_bytes(8, "big") + k128.to_bytes(16, "big")
    (v,) = native.run([frame])
    expected = (int.from_bytes(v.data[:6], "big"), int.from_bytes(v.data[6:14], "big"),
                int.from_bytes(v.data[14:30], "big"))
    assert interp_hashes(k48, k64, k128, Machine(bytearray(8), hash_unit=unit)) == expected


def test_hash_of_one_is_the_multiplier():
    """K = 1: H = M mod (x^W + P) = M (docs/sim-core.md defaults)."""
    got = interp_hashes(1, 1, 1, Machine(bytearray(8)))
    assert got == (0x9E3779B97F4A, 0x9E3779B97F4A7C15, 0x9E3779B97F4A7C15F39CC0605CEDC835)


def test_hash48_ignores_key_bits_above_48():
    fn = straight(Hash((R[0], R[1]), 48, (0xFFFF_0000, 1)))
    regs = run(fn, Machine(bytearray(8))).registers
    assert (regs[0], regs[1]) == (0x9E37, 0x79B9_7F4A)


# ---- control flow ----
def sum_loop(n: int, max_trips: int | None = None) -> Function:
    """sum = 1 + 2 + ... + n, counting down; result in meta word 7."""
    i, total = Reg(0, "i"), Reg(1, "sum")
    return Function("sum", [
        Block("entry", [Copy(i, n), Copy(total, 0), Jump("head")]),
        Block("head", [Branch("eq", i, 0, "done", "body")], max_trips=max_trips),
        Block("body", [Bin(total, "add", total, i), Bin(i, "sub", i, 1), Jump("head")]),
        Block("done", [MetaWrite(7, total), Ret()]),
    ], window_bytes=0, next_reg=2)


def test_loop_with_a_back_edge():
    m = run(sum_loop(10, max_trips=11), Machine(bytearray(1)))
    assert m.meta[7] == 55
    assert m.steps == 3 + 10 * (1 + 3) + 1 + 2   # entry, 10 trips, the exit test, done


def test_loop_entered_more_than_max_trips_is_an_error():
    with pytest.raises(InterpError, match="max_trips=10"):
        run(sum_loop(10, max_trips=10), Machine(bytearray(1)))
    assert run(sum_loop(10, max_trips=10), Machine(bytearray(1)), check_trips=False).meta[7] \
        == 55


def test_step_limit():
    fn = Function("spin", [Block("entry", [Jump("entry")])], window_bytes=0)
    with pytest.raises(InterpError, match="step limit of 1000"):
        run(fn, Machine(bytearray(1)), max_steps=1000)


# ---- malformed programs ----
LOC = Loc("x.mbl", 3, 7)


@pytest.mark.parametrize("fn, message", [
    (Function("f", [Block("entry", [Jump("nowhere")])], 0), "undefined label 'nowhere'"),
    (Function("f", [Block("entry", [Branch("eq", 0, 0, "entry", "gone")])], 0),
     "undefined label 'gone'"),
    (Function("f", [Block("entry", [Copy(R[0], 1)])], 0), "does not end in jump"),
    (Function("f", [Block("entry", [])], 0), "does not end in jump"),
    (Function("f", [Block("entry", [Ret(), Copy(R[0], 1), Ret()])], 0),
     "terminator in the middle"),
    (Function("f", [Block("a", [Ret()]), Block("a", [Ret()])], 0), "duplicate block labels"),
    (Function("f", [], 0), "no blocks"),
    (Function("f", [Block("entry", [Ret()])], 12), "window of 12 bytes"),
])
def test_malformed_functions_are_rejected_before_running(fn, message):
    with pytest.raises(InterpError, match=message):
        run(fn, Machine(bytearray(64)))


@pytest.mark.parametrize("instr, message", [
    (Bin(R[0], "add", R[5], 1, loc=LOC), r"register %5 read before it was written .*x\.mbl:3:7"),
    (Bin(R[0], "sdiv", 1, 1, loc=LOC), "unknown operation 'sdiv'"),
    (Cmp(R[0], "lt", 1, 1), "unknown predicate 'lt'"),
    (Copy(R[0], -1), "constant -1 is not a word"),
    (Copy(R[0], 2**32), "is not a word"),
    (MemRead((R[0],), 7, 0), "unknown memory space 7"),
    (Hash((R[0],), 32, (1,)), "hash width 32"),
    (Hash((R[0],), 64, (1, 2)), "hash64 takes and gives 2 words"),
])
def test_bad_instructions_are_errors_naming_the_place(instr, message):
    with pytest.raises(InterpError, match=message):
        run_straight(instr)


def test_branch_with_an_unknown_predicate_on_the_taken_path():
    fn = Function("f", [Block("entry", [Branch("less", 1, 2, "x", "x")]), Block("x", [Ret()])],
                  0)
    with pytest.raises(InterpError, match="unknown predicate 'less'.*block 'entry'"):
        run(fn, Machine(bytearray(1)))


def test_register_written_on_one_path_only_is_caught_on_the_other():
    fn = Function("f", [
        Block("entry", [MetaRead(R[1], 0), Branch("eq", R[1], 0, "set", "join")]),
        Block("set", [Copy(R[0], 5), Jump("join")]),
        Block("join", [MetaWrite(3, R[0]), Ret()]),
    ], 0)
    assert run(fn, Machine(bytearray(1))).meta[3] == 5
    with pytest.raises(InterpError, match="register %0 read before"):
        run(fn, Machine(bytearray(1), meta=[1] + [0] * 15))
