"""Random WIR functions compiled by the back end and run on the simulated chip must give
what the WIR interpreter (compiler/me/interp.py, an independent model) gives."""

from __future__ import annotations

import random
from collections.abc import Collection

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl import CompileError
from npkit.compiler.me import interp, wir
from npkit.compiler.me.abi import BodyABI
from npkit.compiler.me.back import DEFAULT_ABI, compile_body

from . import gen, harness

TINY_ABI = BodyABI(gprs_a=(0, 1, 2), gprs_b=(5, 6, 7))
SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def packet_for(seed: int, length: int = 96) -> bytes:
    return random.Random(seed ^ 0x5EED).randbytes(length)


def memories(seed: int) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    rng = random.Random(seed ^ 0xABCD)
    sram = {gen.MEM_BASE + k: rng.randrange(1 << 32) for k in range(0, 64, 3)}
    scratch = {gen.MEM_BASE + k: rng.randrange(1 << 32) for k in range(1, 64, 3)}
    local = {gen.LOCAL_BASE + k: rng.randrange(1 << 32) for k in range(0, 64, 2)}
    return sram, scratch, local


def check(fn: wir.Function, seed: int, threads: int = 1,
          abi: BodyABI = DEFAULT_ABI, skip: Collection[str] = ()) -> harness.Result:
    """Compile (without the optional passes in `skip`), run on the chip (each context on its
    own packet), compare with the interpreter: packet bytes, metadata words 0..11 and the
    memories touched."""
    body = compile_body(fn, abi, skip=skip)
    image = harness.build(body.uc, fn.window_bytes, threads)
    sram, scratch, local = memories(seed)
    packets = [packet_for(seed + c) for c in range(threads)]
    metas = [[3 + c, len(p)] + [0] * 14 for c, p in enumerate(packets)]
    result = harness.run(image, fn.window_bytes,
                         [harness.Context(p, m) for p, m in zip(packets, metas, strict=True)],
                         sram, scratch, local)
    result.check_clean()
    if threads > 1:     # memories are shared: only the single-thread run is compared
        for c in range(threads):
            want = interp.run(fn, interp.Machine(bytearray(packets[c]), list(metas[c])))
            assert result.packets[c] == bytes(want.packet), f"context {c}: packet"
            assert result.metas[c][:12] == want.meta[:12], f"context {c}: meta"
        return result
    want = interp.run(fn, interp.Machine(bytearray(packets[0]), list(metas[0]), {
        wir.SRAM: dict(sram), wir.SCRATCH: dict(scratch), wir.LOCAL: dict(local)}))
    assert result.packets[0] == bytes(want.packet), "packet bytes differ"
    assert result.metas[0][:12] == want.meta[:12], "metadata differs"
    for space, words in ((wir.SRAM, result.sram), (wir.SCRATCH, result.scratch),
                         (wir.LOCAL, result.local)):
        for w, v in want.memory.get(space, {}).items():
            assert int(words[w]) == v, f"memory space {space} word {w:#x}"
    return result


def explain(fn: wir.Function, abi: BodyABI, skip: Collection[str] = ()) -> str:
    return str(fn) + "\n" + compile_body(fn, abi, skip=skip).uc


def run_checked(fn: wir.Function, seed: int, threads: int = 1,
                abi: BodyABI = DEFAULT_ABI, skip: Collection[str] = ()) -> None:
    try:
        check(fn, seed, threads, abi, skip)
    except AssertionError as e:
        raise AssertionError(f"{e}\n{explain(fn, abi, skip)}") from None


@SETTINGS
@given(st.integers(0, 2**31))
def test_straight_line_code_matches_interpreter(seed: int) -> None:
    run_checked(gen.random_function(seed, size=30), seed)


@SETTINGS
@given(st.integers(0, 2**31))
def test_branches_and_loops_match_interpreter(seed: int) -> None:
    run_checked(gen.random_function(seed, control=True), seed)


@SETTINGS
@given(st.integers(0, 2**31))
def test_memory_commands_match_interpreter(seed: int) -> None:
    run_checked(gen.random_function(seed, control=seed % 2 == 0, memory=True), seed)


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**31))
def test_eight_threads_each_get_their_own_result(seed: int) -> None:
    run_checked(gen.random_function(seed, control=True), seed, threads=8)


@SETTINGS
@given(st.integers(0, 2**31))
def test_three_plus_three_registers_spill_to_local_memory(seed: int) -> None:
    """A budget of 3 + 3 GPRs: bank conflicts and spills on every function."""
    fn = gen.random_function(seed, control=seed % 2 == 1, memory=seed % 3 == 0, size=30)
    try:
        compile_body(fn, TINY_ABI)
    except CompileError:
        assume(False)       # more live values than 6 registers + 16 spill words
    run_checked(fn, seed, abi=TINY_ABI)


@pytest.mark.parametrize("count", [20, 30, 36])
def test_many_live_values_spill_and_still_compute(count: int) -> None:
    fn = gen.many_live(count, seed=count)
    body = compile_body(fn)
    if count > 24:
        assert body.spill_words > 0
    run_checked(fn, count)


def test_too_many_live_values_is_a_compile_error_with_location() -> None:
    fn = gen.many_live(60)
    with pytest.raises(CompileError) as err:
        compile_body(fn)
    text = str(err.value)
    assert "live.mbl:" in text and "too many values live" in text
    assert err.value.kinds() == ["me-registers"]
