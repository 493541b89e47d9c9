"""The `pop_count` intrinsic against Python's int.bit_count(): natively (llvm.ctpop) and on
the chip (the ME's pop_count instruction per word, compiled through the ME back end)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.compiler.mbl.diagnostics import CompileError
from npkit.compiler.me import front

from . import harness

# Counts of an 8-, 32-, 64- and 128-bit field written back over the fields themselves.
PROGRAM = """
header keys_t { k8: bit<8>; k32: bit<32>; k64: bit<64>; k128: bit<128>; }
block b {
    let k = packet<keys_t>(0) else drop(short);
    k.k8 = pop_count(k.k8);
    k.k32 = pop_count(k.k32);
    k.k64 = pop_count(k.k64);
    k.k128 = pop_count(k.k128);
    forward(0);
}
"""
WIDTHS = (8, 32, 64, 128)
KEYS = st.tuples(*(st.integers(0, 2**w - 1) for w in WIDTHS))


def frame(keys: tuple[int, ...]) -> bytes:
    data = b"".join(k.to_bytes(w // 8, "big") for k, w in zip(keys, WIDTHS, strict=True))
    return data + bytes(64 - len(data))


def expected(keys: tuple[int, ...]) -> bytes:
    return frame(tuple(k.bit_count() for k in keys))


@pytest.fixture(scope="module")
def native() -> NativeProgram:
    return NativeProgram(compile_source(PROGRAM, "pop.mbl"), "b")


@pytest.fixture(scope="module")
def chip_image():
    from npkit.compiler.me.back import compile_body

    fn = front.to_wir(compile_source(PROGRAM, "pop.mbl"))
    body = compile_body(fn)
    assert "pop_count[" in body.uc      # the instruction, not an ALU sequence
    return harness.build(body.uc, fn.window_bytes, threads=THREADS), fn.window_bytes


THREADS = 4                             # contexts per run: the image starts this many
EDGES = [(0, 0, 0, 0), (0xFF, 0xFFFF_FFFF, 2**64 - 1, 2**128 - 1), (1, 1 << 31, 1 << 63, 1),
         (0x80, 0x8000_0001, 2**63 + 2**32, 2**127 + 2**96 + 2**64 + 2**32)]


@settings(max_examples=50, deadline=None)
@given(KEYS)
def test_native_pop_count_is_bit_count(native, keys):
    (v,) = native.run([frame(keys)])
    assert v.data[:31] == expected(keys)[:31]


@pytest.mark.parametrize("keys", EDGES)
def test_native_pop_count_edges(native, keys):
    (v,) = native.run([frame(keys)])
    assert v.data[:31] == expected(keys)[:31]


@settings(max_examples=15, deadline=None)
@given(st.lists(KEYS, min_size=THREADS, max_size=THREADS))
def test_chip_pop_count_is_bit_count(chip_image, batch):
    image, window = chip_image
    contexts = [harness.Context(frame(k), [1, 64] + [0] * 14) for k in batch]
    got = harness.run(image, window, contexts)
    got.check_clean()
    for keys, packet in zip(batch, got.packets, strict=True):
        assert packet[:31] == expected(keys)[:31]


def test_chip_pop_count_edges(chip_image):
    image, window = chip_image
    got = harness.run(image, window, [harness.Context(frame(k), [1, 64] + [0] * 14)
                                      for k in EDGES])
    got.check_clean()
    assert [p[:31] for p in got.packets] == [expected(k)[:31] for k in EDGES]


@pytest.mark.parametrize("arg, code", [("5", "needs-width"), ("true", "type-mismatch")])
def test_pop_count_needs_a_bit_value(arg, code):
    src = f"block b {{ let n = pop_count({arg}); forward(0); }}"
    with pytest.raises(CompileError) as e:
        compile_source(src, "bad.mbl")
    assert code in str(e.value)
