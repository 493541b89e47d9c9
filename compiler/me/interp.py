"""A WIR interpreter: runs one `wir.Function` on one packet (the front end's test oracle,
independent of the back end).

    from npkit.compiler.me.interp import Machine, run
    m = run(fn, Machine(bytearray(frame), meta=[in_port, len(frame)] + [0] * 14))
    m.packet, m.meta[META_VERDICT], m.memory[wir.SRAM][addr], m.steps

Semantics are wir.py's docstrings (the operations on words are compiler/me/fold.py's, shared
with the optimisers):
- every value is a word; arithmetic is mod 2**32; a shift by a register amount >= 32 gives
  0, a constant shift amount must be 0..31; `mul` keeps the low 32 bits; s* predicates
  compare as two's complement;
- `HdrRead`/`HdrWrite` read/write packet bytes 4*word .. 4*word+3 big-endian (the dispatch
  writes dirty words back, so header writes land in `packet`).  Window bytes past the end
  of a short packet read 0 and writes to them are dropped when the run ends (on the chip
  they are buffer bytes nobody transmits).  `PktLoad8`/`PktStore8` address the same bytes;
  an offset outside the packet is an error;
- memory words missing from `Machine.memory` read 0; `MemAdd` returns the old value;
- `Hash` is the chip's hash unit (docs/sim-core.md "Hash function") with the parameters in
  `Machine.hash_unit`, the same as the native target's npu.hashW.

A program the back end could not be given is an `InterpError` naming the block, the
instruction and its MBL location: an undefined label, a block without a terminator (or one
in its middle), a read of a register never written, a bad constant, an unknown op or
predicate, a header word outside the window, a step limit, a loop header entered more than
its `max_trips`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npkit.compiler.mbl.native import HashUnit

from . import fold, wir
from .wir import MASK32

META_WORDS = 16
HASH_WIDTHS = {48: 0, 64: 1, 128: 2}     # width -> index into HashUnit's tuples


class InterpError(Exception):
    """A WIR program that is malformed or misbehaves on this packet."""


@dataclass
class Machine:
    """The state a function runs against; `run` updates it in place and returns it."""

    packet: bytearray                                   # the whole packet
    meta: list[int] = field(default_factory=lambda: [0] * META_WORDS)
    memory: dict[int, dict[int, int]] = field(default_factory=dict)  # space -> word -> value
    hash_unit: HashUnit = field(default_factory=HashUnit)
    registers: dict[int, int] = field(default_factory=dict)  # Reg.id -> value, after a run
    steps: int = 0                                      # instructions the last run executed


def chip_hash(unit: HashUnit, width: int, key: int) -> int:
    """H(K) = (K (x) M) mod (x^W + P) over GF(2), by Horner's rule over the key bits, most
    significant first (as sim/core/units.cpp and the native target compute it)."""
    k = HASH_WIDTHS[width]
    mask = (1 << width) - 1
    poly, mult = unit.polynomial[k] & mask, unit.multiplier[k] & mask
    r = 0
    for bit in range(width - 1, -1, -1):
        carry = r >> (width - 1)
        r = ((r << 1) & mask) ^ (poly if carry else 0)
        if key >> bit & 1:
            r ^= mult
    return r


def _where(block: wir.Block, instr: wir.Instr) -> str:
    at = f" ({instr.loc})" if instr.loc else ""
    return f"in block '{block.label}', '{instr}'{at}"


def validate(fn: wir.Function) -> None:
    """Structural checks, on every path (taken or not): labels unique and defined, every
    block non-empty and ending in its only terminator."""
    if not fn.blocks:
        raise InterpError(f"function '{fn.name}' has no blocks")
    if fn.window_bytes % 8 or not 0 <= fn.window_bytes <= 56:
        raise InterpError(f"function '{fn.name}': window of {fn.window_bytes} bytes "
                          "(0..56, a multiple of 8)")
    labels = [b.label for b in fn.blocks]
    if len(set(labels)) != len(labels):
        raise InterpError(f"function '{fn.name}': duplicate block labels")
    for b in fn.blocks:
        if not b.instrs or not isinstance(b.instrs[-1], wir.TERMINATORS):
            raise InterpError(f"block '{b.label}' does not end in jump, branch or ret")
        for i in b.instrs[:-1]:
            if isinstance(i, wir.TERMINATORS):
                raise InterpError(f"terminator in the middle of the block: {_where(b, i)}")
        for target in b.successors():
            if target not in labels:
                raise InterpError(f"undefined label '{target}' {_where(b, b.terminator)}")


class _Run:
    """One execution of a function on a machine."""

    def __init__(self, fn: wir.Function, m: Machine) -> None:
        self.fn, self.m = fn, m
        self.regs: dict[int, int] = {}
        # the window over a short packet: pad with zeros, cut back when the run ends
        self.bytes = bytearray(m.packet) + bytes(max(0, fn.window_bytes - len(m.packet)))
        self.block = fn.blocks[0]
        self.instr: wir.Instr = wir.Ret()

    def fail(self, message: str) -> InterpError:
        return InterpError(f"{message} {_where(self.block, self.instr)}")

    # ---- operands ----
    def val(self, o: wir.Operand) -> int:
        if isinstance(o, wir.Reg):
            if o.id not in self.regs:
                raise self.fail(f"register {o} read before it was written")
            return self.regs[o.id]
        if not isinstance(o, int) or not 0 <= o <= MASK32:
            raise self.fail(f"constant {o!r} is not a word")
        return o

    def set(self, r: wir.Reg, v: int) -> None:
        self.regs[r.id] = v & MASK32

    # ---- packet, metadata, memory ----
    def hdr_offset(self, word: int) -> int:
        if not 0 <= word < self.fn.window_bytes // 4:
            raise self.fail(f"header word {word} outside the {self.fn.window_bytes}-byte window")
        return 4 * word

    def pkt_offset(self, o: wir.Operand) -> int:
        off = self.val(o)
        if off >= len(self.m.packet):
            raise self.fail(f"packet byte {off} outside the {len(self.m.packet)}-byte packet")
        return off

    def meta_word(self, word: int) -> int:
        if not 0 <= word < len(self.m.meta):
            raise self.fail(f"metadata word {word} does not exist")
        return word

    def space(self, space: int) -> dict[int, int]:
        if space not in (wir.SRAM, wir.SCRATCH, wir.LOCAL):
            raise self.fail(f"unknown memory space {space}")
        return self.m.memory.setdefault(space, {})

    # ---- execution ----
    def execute(self, i: wir.Instr) -> str | None:
        """Run one instruction; a terminator returns the next label ('' for ret)."""
        handler = getattr(self, "op_" + type(i).__name__, None)
        if handler is None:
            raise self.fail(f"unknown instruction {type(i).__name__}")
        return handler(i)

    def op_Bin(self, i: wir.Bin) -> None:
        if i.op not in fold.BIN_FNS:
            raise self.fail(f"unknown operation '{i.op}'")
        a, b = self.val(i.a), self.val(i.b)
        if i.op in ("shl", "lshr") and isinstance(i.b, int) and b > 31:
            raise self.fail(f"constant shift amount {b} (0..31)")
        self.set(i.dst, fold.evaluate_bin(i.op, a, b))

    def op_Fsh(self, i: wir.Fsh) -> None:
        if not 1 <= i.amount <= 31:
            raise self.fail(f"funnel shift amount {i.amount} (1..31)")
        self.set(i.dst, fold.funnel_shift(self.val(i.hi), self.val(i.lo), i.amount))

    def op_PopCount(self, i: wir.PopCount) -> None:
        self.set(i.dst, fold.pop_count(self.val(i.src)))

    def op_OnesSum(self, i: wir.OnesSum) -> None:
        if not 2 <= len(i.srcs) <= 16:
            raise self.fail(f"{len(i.srcs)} sources of a ones-complement sum (2..16)")
        self.set(i.dst, fold.ones_sum([self.val(s) for s in i.srcs]))

    def predicate(self, pred: str, a: wir.Operand, b: wir.Operand) -> bool:
        if pred not in fold.PREDICATE_FNS:
            raise self.fail(f"unknown predicate '{pred}'")
        return fold.compare(pred, self.val(a), self.val(b))

    def op_Cmp(self, i: wir.Cmp) -> None:
        self.set(i.dst, int(self.predicate(i.pred, i.a, i.b)))

    def op_Select(self, i: wir.Select) -> None:
        self.set(i.dst, fold.select(self.val(i.cond), self.val(i.a), self.val(i.b)))

    def op_Copy(self, i: wir.Copy) -> None:
        self.set(i.dst, self.val(i.src))

    def op_HdrRead(self, i: wir.HdrRead) -> None:
        at = self.hdr_offset(i.word)
        self.set(i.dst, int.from_bytes(self.bytes[at:at + 4], "big"))

    def op_HdrWrite(self, i: wir.HdrWrite) -> None:
        at = self.hdr_offset(i.word)
        self.bytes[at:at + 4] = self.val(i.src).to_bytes(4, "big")

    def op_PktLoad8(self, i: wir.PktLoad8) -> None:
        self.set(i.dst, self.bytes[self.pkt_offset(i.offset)])

    def op_PktStore8(self, i: wir.PktStore8) -> None:
        self.bytes[self.pkt_offset(i.offset)] = self.val(i.src) & 0xFF

    def op_MetaRead(self, i: wir.MetaRead) -> None:
        self.set(i.dst, self.m.meta[self.meta_word(i.word)])

    def op_MetaWrite(self, i: wir.MetaWrite) -> None:
        self.m.meta[self.meta_word(i.word)] = self.val(i.src)

    def mem_count(self, n: int) -> None:
        if not 1 <= n <= 8:
            raise self.fail(f"{n} words in one memory command (1..8)")

    def op_MemRead(self, i: wir.MemRead) -> None:
        self.mem_count(len(i.dsts))
        words, addr = self.space(i.space), self.val(i.addr)
        for k, d in enumerate(i.dsts):
            self.set(d, words.get(addr + k, 0))

    def op_MemWrite(self, i: wir.MemWrite) -> None:
        self.mem_count(len(i.srcs))
        words, addr = self.space(i.space), self.val(i.addr)
        for k, s in enumerate(i.srcs):
            words[addr + k] = self.val(s)

    def op_MemAdd(self, i: wir.MemAdd) -> None:
        words, addr = self.space(i.space), self.val(i.addr)
        old = words.get(addr, 0)
        words[addr] = fold.evaluate_bin("add", old, self.val(i.value))
        if i.dst is not None:
            self.set(i.dst, old)

    def op_Hash(self, i: wir.Hash) -> None:
        if i.width not in HASH_WIDTHS:
            raise self.fail(f"hash width {i.width} (48, 64 or 128)")
        n = (i.width + 31) // 32
        if len(i.srcs) != n or len(i.dsts) != n:
            raise self.fail(f"hash{i.width} takes and gives {n} words")
        key = 0
        for s in i.srcs:
            key = key << 32 | self.val(s)
        h = chip_hash(self.m.hash_unit, i.width, key & ((1 << i.width) - 1))
        for k, d in enumerate(i.dsts):
            self.set(d, h >> (32 * (n - 1 - k)))

    def op_Jump(self, i: wir.Jump) -> str:
        return i.target

    def op_Branch(self, i: wir.Branch) -> str:
        return i.then_ if self.predicate(i.pred, i.a, i.b) else i.else_

    def op_Ret(self, i: wir.Ret) -> str:
        return ""

    def go(self, max_steps: int, check_trips: bool) -> None:
        blocks = {b.label: b for b in self.fn.blocks}
        entries: dict[str, int] = {}
        steps = 0
        while True:
            b = self.block
            entries[b.label] = entries.get(b.label, 0) + 1
            if check_trips and b.max_trips is not None and entries[b.label] > b.max_trips:
                raise InterpError(f"loop header '{b.label}' entered more than its "
                                  f"max_trips={b.max_trips} times")
            for self.instr in b.instrs:
                steps += 1
                if steps > max_steps:
                    raise self.fail(f"step limit of {max_steps} instructions reached")
                target = self.execute(self.instr)
            self.m.steps = steps
            if not target:
                return
            self.block = blocks[target]

    def finish(self) -> None:
        self.m.packet[:] = self.bytes[:len(self.m.packet)]
        self.m.registers = self.regs


def run(fn: wir.Function, m: Machine, max_steps: int = 1_000_000,
        check_trips: bool = True) -> Machine:
    """Run `fn` on `m` until `Ret`; update `m` (packet, meta, memory, registers, steps) and
    return it.  check_trips: a loop header entered more than its `max_trips` is an error."""
    validate(fn)
    r = _Run(fn, m)
    r.go(max_steps, check_trips)
    r.finish()
    return m
