"""Early reads (compiler/me/back/prefetch.py) and the return's overlapped waits: WIR built so
a read's address is known blocks before the read, with early exits, loops and other
commands in between, run on the chip and compared with the WIR interpreter (the
independent model) on every path; the harness checks no signal is left pending."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.back.prefetch import Collect, Drain, Prefetch, consistent, hoist_reads

from . import gen, harness
from .test_back_props import memories, packet_for, run_checked

R = wir.Reg
EARLY = settings(max_examples=40, deadline=None)
SIGNALS = tuple(range(1, 11))


def verdict(label: str, code: int) -> wir.Block:
    return wir.Block(label, [wir.MetaWrite(8, 2), wir.MetaWrite(9, code), wir.Jump("done")])


def early_read_fn(space: int, words: int, guard: int, exit_at: int, loop: bool,
                  inner_read: bool, write_space: int | None) -> wir.Function:
    """entry computes the address (from header word 0) and tests header word 1 (an early
    exit when its low byte is below `exit_at`); `mid` optionally loops (with its own read)
    and tests word 2; `use` reads.  `guard`: 1 = `mid` branches on the address's source,
    2 = on a value one constant operation from it; `write_space`: a store somewhere."""
    x, addr, h1, h2, b1, b2 = R(1), R(2), R(3), R(4), R(5), R(6)
    i, acc, got = R(7), R(8), R(20)
    dsts = tuple(R(10 + k) for k in range(words))
    entry = [wir.HdrRead(x, 0), wir.Bin(R(9), "and", x, 31),
             wir.Bin(addr, "add", R(9), gen.MEM_BASE),
             wir.HdrRead(h1, 1), wir.Bin(b1, "and", h1, 0xFF)]
    if write_space is not None:
        entry.append(wir.MemWrite(write_space, gen.MEM_BASE + 40, (h1,)))
    entry.append(wir.Branch("ult", b1, exit_at, "exit1", "mid" if not loop else "pre"))
    blocks = [wir.Block("entry", entry), verdict("exit1", 11)]
    mid_test: wir.Operand = {0: b2, 1: R(9), 2: R(21)}[guard]
    if loop:
        body = [wir.Bin(acc, "add", acc, i)]
        if inner_read:
            body += [wir.Bin(R(22), "add", i, gen.MEM_BASE + 50),
                     wir.MemRead((got,), space, R(22)), wir.Bin(acc, "xor", acc, got)]
        body += [wir.Bin(i, "add", i, 1), wir.Branch("ult", i, 3, "loop", "mid")]
        blocks += [wir.Block("pre", [wir.Copy(i, 0), wir.Copy(acc, 0), wir.Jump("loop")]),
                   wir.Block("loop", body, max_trips=3)]
    mid = [wir.HdrRead(h2, 2), wir.Bin(b2, "and", h2, 0xFF), wir.Bin(R(21), "add", R(9), 1)]
    mid.append(wir.Branch("ugt", mid_test, 0x7F if guard != 1 else 15, "exit2", "use"))
    blocks += [wir.Block("mid", mid), verdict("exit2", 12)]
    use = [wir.MemRead(dsts, space, addr)]
    use += [wir.MetaWrite(3 + k, d) for k, d in enumerate(dsts)]
    if loop:
        use.append(wir.MetaWrite(7, acc))
    use += [wir.MetaWrite(8, 1), wir.Jump("done")]
    blocks += [wir.Block("use", use), wir.Block("done", [wir.Ret()])]
    return wir.Function("early", blocks, window_bytes=16, next_reg=23,
                        loc=wir.Loc("early.mbl", 1, 1))


def prefetched(fn: wir.Function) -> bool:
    return any(isinstance(i, Prefetch) for b in hoist_reads(fn, SIGNALS).fn.blocks
               for i in b.instrs)


@EARLY
@given(st.sampled_from([wir.SRAM, wir.SCRATCH]), st.integers(1, 4), st.booleans(),
       st.booleans(), st.integers(0, 256), st.integers(0, 2**31))
def test_early_read_matches_the_interpreter_on_every_path(space: int, words: int, loop: bool,
                                                          inner: bool, exit_at: int,
                                                          seed: int) -> None:
    fn = early_read_fn(space, words, 0, exit_at, loop, inner, None)
    assert prefetched(fn)
    run_checked(fn, seed)


def test_the_read_is_issued_before_the_branches_and_waited_for_in_its_block() -> None:
    fn = early_read_fn(wir.SRAM, 2, 0, 0, True, True, None)
    uc = compile_body(fn).uc
    lines = [s.strip() for s in uc.splitlines()]
    issue = next(k for k, s in enumerate(lines) if s.startswith("sram[read, $14"))
    first_branch = next(k for k, s in enumerate(lines) if s.startswith("bcc["))
    assert issue < first_branch                  # issued in entry, before its exit test
    assert "sig_done[10]" in lines[issue]
    assert sum("ctx_arb[10]" in s for s in lines) == 3   # use, and each early exit's drain
    inner = [s for s in lines if s.startswith("sram[read, $0")]
    assert inner and all("sig_done[1]" in s for s in inner)   # the loop's read: its own


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1, 2]), st.integers(0, 2**31))
def test_a_branch_that_may_bound_the_address_keeps_the_read_in_place(guard: int, seed: int
                                                                     ) -> None:
    fn = early_read_fn(wir.SRAM, 1, guard, 3, False, False, None)
    assert not prefetched(fn)
    run_checked(fn, seed)


def test_a_space_the_function_writes_is_not_read_early() -> None:
    assert not prefetched(early_read_fn(wir.SRAM, 1, 0, 3, False, False, wir.SRAM))
    assert prefetched(early_read_fn(wir.SRAM, 1, 0, 3, False, False, wir.SCRATCH))


def test_a_read_inside_a_loop_or_in_its_address_block_stays() -> None:
    fn = early_read_fn(wir.SRAM, 1, 0, 3, True, True, None)
    out = hoist_reads(fn, SIGNALS).fn
    loop = out.block("loop")
    assert any(isinstance(i, wir.MemRead) for i in loop.instrs)
    assert [type(i) for i in out.block("use").instrs][0] is Collect
    assert all(consistent(out, slot) for slot in (0, 1))


def test_early_reads_hide_a_memory_latency() -> None:
    fn = early_read_fn(wir.SRAM, 1, 0, 0, True, False, None)
    packet = bytearray(packet_for(1))
    packet[11] = 0x10           # word 2's low byte <= 0x7F: on to the read
    cycles = []
    for early in (False, True):
        body = compile_body(fn, skip=() if early else {"prefetch"})
        image = harness.build(body.uc, fn.window_bytes)
        sram, scratch, local = memories(1)
        meta = [0, len(packet)] + [0] * 14
        result = harness.run(image, fn.window_bytes, [harness.Context(bytes(packet), meta)],
                             sram, scratch, local)
        result.check_clean()
        assert result.metas[0][8] == 1
        cycles.append(result.cycles)
    assert cycles[1] < cycles[0] - 20


def read_only(fn: wir.Function, space: int) -> wir.Function:
    """`fn` without its stores to `space` (an atomic add with a result becomes a copy)."""
    for b in fn.blocks:
        out: list[wir.Instr] = []
        for i in b.instrs:
            if isinstance(i, wir.MemWrite | wir.MemAdd) and i.space == space:
                if isinstance(i, wir.MemAdd) and i.dst is not None:
                    out.append(wir.Copy(i.dst, i.value, loc=i.loc))
                continue
            out.append(i)
        b.instrs = out
    return fn


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31))
def test_random_functions_with_read_only_memories_match_the_interpreter(seed: int) -> None:
    while True:         # the next seed whose function has a read to move (about 1 in 10)
        fn = gen.random_function(seed, control=True, memory=True)
        for space in random.Random(seed).sample((wir.SRAM, wir.SCRATCH), 2):
            fn = read_only(fn, space)
        hoisted = hoist_reads(fn, SIGNALS)
        if hoisted.slots:
            break
        seed += 1
    for slot in hoisted.slots:
        assert consistent(hoisted.fn, slot)
        assert any(isinstance(i, Drain | Collect) and i.slot == slot
                   for b in hoisted.fn.blocks for i in b.instrs)
    run_checked(fn, seed)
