"""SRAM, scratch and DRAM commands against reference semantics written here."""

from __future__ import annotations

import numpy as np
import pytest
from coreprog import (
    MASK32,
    NONE,
    XD,
    A,
    B,
    X,
    immed,
    load_out,
    make_core,
    mem,
    single_context,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.sim import isa
from npkit.sim._core import SimFault

COVERED = frozenset(
    {"sram", "scratch", "dram"}
    | {f"sram.{c}" for c in isa.SRAM_CMDS}
    | {f"scratch.{c}" for c in isa.SCRATCH_CMDS}
    | {"dram.read", "dram.write"}
)

u32 = st.integers(0, MASK32)

# reference read-modify-write: (new memory word, returns the old value in $x)
ATOMICS = {
    "swap": (lambda old, x: x, True),
    "set": (lambda old, x: old | x, False),
    "clr": (lambda old, x: old & ~x & MASK32, False),
    "incr": (lambda old, x: (old + 1) & MASK32, False),
    "decr": (lambda old, x: (old - 1) & MASK32, False),
    "add": (lambda old, x: (old + x) & MASK32, False),
    "test_and_set": (lambda old, x: old | x, True),
    "test_and_clr": (lambda old, x: old & ~x & MASK32, True),
    "test_and_add": (lambda old, x: (old + x) & MASK32, True),
    "test_and_incr": (lambda old, x: (old + 1) & MASK32, True),
    "test_and_decr": (lambda old, x: (old - 1) & MASK32, True),
}


@pytest.fixture(scope="module")
def core():
    return make_core()


def run(core, words, regs=None):
    core.load(0, single_context(words))
    for code, value in (regs or {}).items():
        core.write_reg(0, 0, code, value)
    assert core.run(1_000_000, until_idle=True) == "idle"


def sram_address(channel: int, word: int) -> int:
    return (channel << 26) | (word * 4)


@settings(max_examples=120, deadline=None)
@given(cmd=st.sampled_from(sorted(ATOMICS)), old=u32, operand=u32, channel=st.integers(0, 3),
       word=st.integers(1, 1000))
def test_sram_atomics(core, cmd, old, operand, channel, word):
    core.sram(channel)[word] = old
    needs_xfer = cmd not in ("incr", "decr")
    words = [*load_out(X(0), operand),
             mem("sram", cmd, 0 if needs_xfer else None, A(0), NONE, sig=1, swap=True)]
    run(core, words, {A(0): sram_address(channel, word), X(0): 0xDEAD})
    new, returns_old = ATOMICS[cmd]
    assert int(core.sram(channel)[word]) == new(old, operand)
    assert core.read_reg(0, 0, X(0)) == (old if returns_old else 0xDEAD)


@settings(max_examples=60, deadline=None)
@given(cmd=st.sampled_from(sorted(ATOMICS)), old=u32, operand=u32, word=st.integers(0, 4000))
def test_scratch_atomics(core, cmd, old, operand, word):
    core.scratch()[word] = old
    needs_xfer = cmd not in ("incr", "decr")
    words = [*load_out(X(0), operand),
             mem("scratch", cmd, 0 if needs_xfer else None, A(0), NONE, sig=1, swap=True)]
    run(core, words, {A(0): word * 4, X(0): 0xDEAD})
    new, returns_old = ATOMICS[cmd]
    assert int(core.scratch()[word]) == new(old, operand)
    assert core.read_reg(0, 0, X(0)) == (old if returns_old else 0xDEAD)


@settings(max_examples=40, deadline=None)
@given(unit=st.sampled_from(["sram", "scratch"]), count=st.integers(1, 16),
       data=st.lists(u32, min_size=16, max_size=16), word=st.integers(0, 2000))
def test_read_and_write_bursts(core, unit, count, data, word):
    memory = core.sram(1) if unit == "sram" else core.scratch()
    base = sram_address(1, word) if unit == "sram" else word * 4
    memory[word:word + 16] = 0
    writes = [w for k in range(count) for w in load_out(X(k), data[k])]
    words = writes + [mem(unit, "write", 0, A(0), NONE, count=count, sig=1, swap=True),
                      mem(unit, "read", 0, A(0), NONE, count=count, sig=2, swap=True)]
    run(core, words, {A(0): base})
    assert list(memory[word:word + count]) == data[:count]
    assert [core.read_reg(0, 0, X(k)) for k in range(count)] == data[:count]


@settings(max_examples=40, deadline=None)
@given(count=st.integers(1, 8), data=st.binary(min_size=64, max_size=64),
       quad=st.integers(0, 1 << 20))
def test_dram_read_is_big_endian(core, count, data, quad):
    addr = quad * 8
    core.dram()[addr:addr + 64] = np.frombuffer(data, dtype=np.uint8)
    run(core, [mem("dram", "read", 0, A(0), NONE, count=count, sig=1, swap=True)], {A(0): addr})
    got = [core.read_reg(0, 0, XD(k)) for k in range(2 * count)]
    assert got == [int.from_bytes(data[4 * k:4 * k + 4], "big") for k in range(2 * count)]


@settings(max_examples=30, deadline=None)
@given(count=st.integers(1, 8), data=st.lists(u32, min_size=16, max_size=16),
       quad=st.integers(0, 1 << 20))
def test_dram_write_is_big_endian(core, count, data, quad):
    addr = quad * 8
    writes = [w for k in range(2 * count) for w in load_out(XD(k), data[k])]
    run(core, writes + [mem("dram", "write", 0, A(0), NONE, count=count, sig=1, swap=True)],
        {A(0): addr})
    expected = b"".join(v.to_bytes(4, "big") for v in data[:2 * count])
    assert bytes(core.dram()[addr:addr + 8 * count]) == expected


def test_sram_q_array_enqueue_dequeue_is_a_linked_list(core):
    channel, queue = 2, 5
    handles = [sram_address(channel, 100 + 8 * i) for i in range(4)]
    qaddr = (channel << 26) | queue
    enq = [w for h in handles[:3] for w in
           (*load_out(X(0), h), mem("sram", "enqueue", 0, A(0), NONE, sig=1, swap=True))]
    deq = [mem("sram", "dequeue", k, A(0), NONE, sig=2, swap=True) for k in range(1, 5)]
    run(core, enq + deq[:1], {A(0): qaddr})
    assert core.read_reg(0, 0, X(1)) == handles[0]
    state = core.queue_state(channel, queue)
    assert state == {"count": 2, "head": handles[1], "tail": handles[2]}
    # word 0 of a descriptor links to the next one
    assert int(core.sram(channel)[handles[1] % (1 << 26) // 4]) == handles[2]
    # the host side uses the same queue
    core.enqueue(channel, queue, handles[3])
    assert core.dequeue(channel, queue) == handles[1]
    run(core, deq[1:4], {A(0): qaddr})
    assert [core.read_reg(0, 0, X(k)) for k in (2, 3, 4)] == [handles[2], handles[3], 0]
    assert core.queue_state(channel, queue)["count"] == 0


def test_scratch_rings_put_get_and_high_water(core):
    ring = 7
    core.configure_ring(ring, 2048, 128)
    values = [11, 22, 33, 44, 55]
    puts = [w for k, v in enumerate(values) for w in load_out(X(k), v)]
    puts += [mem("scratch", "put", 0, B(0), NONE, count=3, sig=1, swap=True),
             mem("scratch", "put", 3, B(0), NONE, count=2, sig=1, swap=True),
             mem("scratch", "get", 0, B(0), NONE, count=2, sig=2, swap=True),
             mem("scratch", "get", 2, B(0), NONE, count=4, sig=2, swap=True)]  # only 3 left
    run(core, puts, {B(0): ring})
    assert [core.read_reg(0, 0, X(k)) for k in range(6)] == [11, 22, 0, 0, 0, 0]
    state = core.ring_state(ring)
    assert state["count"] == 3 and state["high_water"] == 5
    assert state["puts"] == 2 and state["gets"] == 2
    assert list(core.scratch()[2048:2053]) == values


def test_ring_overflow_is_a_fault():
    core = make_core()
    core.configure_ring(1, 0, 128)
    words = [mem("scratch", "put", 0, B(0), NONE, count=16, sig=1, swap=True)] * 9
    core.load(0, single_context(words))
    core.write_reg(0, 0, B(0), 1)
    with pytest.raises(SimFault) as info:
        core.run(100_000)
    f = info.value
    assert (f.kind, f.me, f.ctx, f.pc) == ("ring_overflow", 0, 0, 9)


def test_immed_writes_transfer_out_not_in(core):
    run(core, [immed(X(3), 77)], {X(3): 5})
    assert core.read_reg(0, 0, X(3)) == 5
    assert core.read_xfer_out(0, 0, 0, 3) == 77
