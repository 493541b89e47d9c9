"""The native target: MBL blocks JIT-compiled for the host with LLVM (MCJIT).

The npu.* chip operations get host bodies here (packet bytes in a batch buffer, memories in
numpy uint32 arrays laid out word for word as on the chip), then the whole module goes
through the fixed pass pipeline and MCJIT.  Packets run in batches: one call per batch.
An MBL function of one integer runs over a key array the same way (KeyFunction, e.g. a
route walker's fib4_lookup as rte_lpm_lookup_bulk).
"""

from __future__ import annotations

import copy
import ctypes
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from npkit.base.errors import NpkitError

from .lower import (
    I1,
    I8,
    I32,
    PTR,
    SPACE_IDS,
    VOID,
    WIDE_BYTES,
    LineTable,
    hoist_allocas,
    lower,
    wide_load_name,
    wide_store_name,
)
from .passes import HOST_UNROLL_THRESHOLD, optimize, set_unroll_threshold
from .sema import Program
from .slice_guards import KEEP_MARK, drop_prefetch_guards
from .stages import COLD_READ, flatten, stage_text
from .types import (
    MEDIA_EOP,
    MEDIA_SOP,
    META_CODE,
    META_FIELDS,
    META_HEAD,
    META_MEDIA,
    META_VERDICT,
    META_WORDS,
    VERDICT_CONSUMED,
    VERDICT_DROP,
    VERDICT_EXCEPTION,
    VERDICT_FORWARD,
    VERDICT_NEXT,
    Bits,
    FieldInfo,
    MemoryInfo,
    View,
)

I128 = ir.IntType(128)
# Host context: 8-byte slots: packet, metadata record, sram, scratch, local memory,
# packet length; two more for the prefetch slice: how many new cache lines of large
# memories it may still read (-1: it has stopped at a prefetch), and the line it read last.
CTX = ir.ArrayType(ir.IntType(64), 8)
CTX_PKT, CTX_META, CTX_SRAM, CTX_LEN, CTX_READS, CTX_LINE = 0, 1, 2, 5, 6, 7
VALID = 0x8000_0000
EXACT_HASH_MULTIPLIER = 0x9E3779B1  # 2^32 / golden ratio (Fibonacci hashing)
HEADROOM = 64  # bytes before each packet in the batch buffer, room for packet.push
# a batch of packets: at most this many, in at most this much buffer (one slot a packet,
# as wide as the batch's largest); a packet of up to MAX_PACKET_BYTES always fits alone
BATCH_FRAMES = 4096
BATCH_BYTES = 8 << 20
MAX_PACKET_BYTES = 65535
KEYS_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32,
                                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_void_p)
BATCH_SIGNATURE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                   ctypes.c_void_p, ctypes.c_void_p)


@dataclass(frozen=True)
class BufferPool:
    """The packet buffers of receive blocks on the native target (docs/datapath.md): `count`
    buffers of `buffer_bytes` each, handles 1..count (0 is never a buffer), on a freelist."""

    count: int = 256
    buffer_bytes: int = 2048

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 1 << 20 or not 64 <= self.buffer_bytes <= MAX_PACKET_BYTES:
            raise NativeError(f"a buffer pool of {self.count} x {self.buffer_bytes} bytes: "
                              f"1..{1 << 20} buffers of 64..{MAX_PACKET_BYTES} bytes")


BUFFERS_GLOBAL, FREELIST_GLOBAL = "mbl.media.buffers", "mbl.media.freelist"
MEMCPY = "llvm.memcpy.p0.p0.i64"


@dataclass(frozen=True)
class HashUnit:
    """Parameters of the chip's hash unit (docs/sim-core.md, "Hash function"):
    H(K) = (K (x) M) mod (x^W + P) over GF(2), W = 48, 64 or 128.  The defaults are the
    simulator's (sim/core/config.cpp); a chip config may override them (hash.polynomial_W,
    hash.multiplier_W), and then the same values must be given here."""

    polynomial: tuple[int, int, int] = (0x291, 0x42F0E1EBA9EA3693, 0x87)
    multiplier: tuple[int, int, int] = (0x9E3779B97F4A, 0x9E3779B97F4A7C15,
                                        0x9E3779B97F4A7C15F39CC0605CEDC835)

    @classmethod
    def from_config(cls, hash_section: dict) -> HashUnit:
        """From a chip config's [hash] table (missing keys keep the defaults)."""
        widths = (48, 64, 128)
        poly = tuple(int(hash_section.get(f"polynomial_{w}", d))
                     for w, d in zip(widths, cls.polynomial, strict=True))
        mult = tuple(int(hash_section.get(f"multiplier_{w}", d))
                     for w, d in zip(widths, cls.multiplier, strict=True))
        return cls(poly, mult)  # type: ignore[arg-type]


class NativeError(NpkitError):
    """A program the native target cannot run (e.g. an intrinsic it does not implement)."""


@dataclass(frozen=True)
class Verdict:
    kind: str  # "forward" | "drop" | "exception" | "next" | "consumed" | "none"
    port: int = 0
    queue: int = 0
    reason: str = ""  # drop reason or next label
    code: int = 0  # exception code
    data: bytes = b""  # the packet after the block (rewritten in place)
    next_hop: int = 0  # meta.next_hop: exceptions name the next hop (e.g. whose MTU failed)


def exact_hash(key: int, key_words: int) -> int:
    """The home-slot hash of an exact-match (`hash`) table key, before masking to the table
    size: h = (h ^ w) * 0x9E3779B1 mod 2^32 over the key words MSB first, then h ^ h >> 16.
    Both the control plane (table_add) and the native lookup use it."""
    h = 0
    for k in range(key_words):
        w = (key >> (32 * (key_words - 1 - k))) & 0xFFFFFFFF
        h = ((h ^ w) * EXACT_HASH_MULTIPLIER) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _counted_loop(b: ir.IRBuilder, fn: ir.Function, first: ir.Value, end: ir.Value,
                  body: Callable[[ir.Value], None]) -> None:
    """for i in first..end: body(i), in fn at b's position (the drivers' loops)."""
    i_slot = b.alloca(I32)
    b.store(first, i_slot)
    head, inner, done = (fn.append_basic_block(x) for x in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.load(i_slot, typ=I32)
    b.cbranch(b.icmp_unsigned("<", i, end), inner, done)
    b.position_at_end(inner)
    body(i)
    b.store(b.add(i, ir.Constant(I32, 1)), i_slot)
    b.branch(head)
    b.position_at_end(done)


def _slot(b: ir.IRBuilder, ctx: ir.Value, index: int) -> ir.Value:
    return b.gep(ctx, [ir.Constant(I32, 8 * index)], source_etype=I8)


class _HostOps:
    """Bodies of the npu.* functions for the host."""

    def __init__(self, module: ir.Module, hash_unit: HashUnit,
                 pool: BufferPool | None = None) -> None:
        self.m = module
        self.hash_unit = hash_unit
        self.pool = pool or BufferPool()

    def fn(self, name: str) -> tuple[ir.Function, ir.IRBuilder]:
        f = self.m.get_global(name)
        f.linkage = "internal"
        f.attributes.add("alwaysinline")
        return f, ir.IRBuilder(f.append_basic_block("entry"))

    def field_ptr(self, b: ir.IRBuilder, ctx: ir.Value, index: int) -> ir.Value:
        return _slot(b, ctx, index)

    def load_field(self, b: ir.IRBuilder, ctx: ir.Value, index: int) -> ir.Value:
        return b.load(self.field_ptr(b, ctx, index), typ=PTR if index != CTX_LEN else I32)

    def word_ptr(self, b: ir.IRBuilder, ctx: ir.Value, space: ir.Value, word: ir.Value):
        # space is a constant after inlining: the selects fold away
        bases = [self.load_field(b, ctx, CTX_SRAM + k) for k in range(3)]
        base = b.select(b.icmp_unsigned("==", space, ir.Constant(I32, 0)), bases[0],
                        b.select(b.icmp_unsigned("==", space, ir.Constant(I32, 1)),
                                 bases[1], bases[2]))
        return b.gep(base, [word], source_etype=I32)

    def build(self) -> None:
        self.packet_ops()
        self.adjust()
        self.memory_ops()
        self.crc32()
        self.lpm("npu.lpm32.lookup", 1)
        self.lpm("npu.lpm128.lookup", 4)
        self.hash_lookup()
        for k, width in enumerate((48, 64, 128)):
            self.hash_function(width, self.hash_unit.polynomial[k],
                               self.hash_unit.multiplier[k])
        if any(name.startswith("npu.buf.") for name in self.m.globals):
            self.buffer_ops()
        self.turn_ops()

    def has(self, name: str) -> bool:
        return name in self.m.globals

    def pool_base(self, b: ir.IRBuilder, name: str) -> ir.Value:
        """The host address of the buffers or the freelist (a global the loader sets)."""
        try:
            g = self.m.get_global(name)
        except KeyError:
            g = ir.GlobalVariable(self.m, PTR, name)
            g.initializer = ir.Constant(PTR, None)
        return b.load(g, typ=PTR)

    def turn_ops(self) -> None:
        """npu.rx.turn_take / turn_done (media.turn_begin / turn_end): nothing natively,
        where each mpacket runs to completion before the next."""
        for name in ("npu.rx.turn_take", "npu.rx.turn_done"):
            if self.has(name):
                self.fn(name)[1].ret_void()

    def buffer_ops(self) -> None:
        """npu.buf.*: buffers in host memory, a stack of free handles (word 0 = how many)."""
        i64 = ir.IntType(64)
        count, size = self.pool.count, self.pool.buffer_bytes
        memcpy = ir.Function(self.m, ir.FunctionType(VOID, [PTR, PTR, i64, I1]), MEMCPY)

        def valid(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
            return b.icmp_unsigned("<", b.sub(h, ir.Constant(I32, 1)), ir.Constant(I32, count))

        def data(b: ir.IRBuilder, h: ir.Value, at: ir.Value) -> ir.Value:
            start = b.mul(b.zext(b.sub(h, ir.Constant(I32, 1)), i64), ir.Constant(i64, size))
            return b.gep(self.pool_base(b, BUFFERS_GLOBAL), [b.add(start, b.zext(at, i64))],
                         source_etype=I8)

        def push(b: ir.IRBuilder, h: ir.Value) -> None:
            fl = self.pool_base(b, FREELIST_GLOBAL)
            top = b.load(fl, typ=I32)
            room = b.icmp_unsigned("<", top, ir.Constant(I32, count))
            with b.if_then(b.and_(valid(b, h), room)):
                new = b.add(top, ir.Constant(I32, 1))
                b.store(h, b.gep(fl, [new], source_etype=I32))
                b.store(new, fl)

        if self.has("npu.buf.alloc"):
            f, b = self.fn("npu.buf.alloc")
            _, out = f.args
            fl = self.pool_base(b, FREELIST_GLOBAL)
            top = b.load(fl, typ=I32)
            ok = b.icmp_unsigned("!=", top, ir.Constant(I32, 0))
            with b.if_then(ok):
                b.store(b.load(b.gep(fl, [top], source_etype=I32), typ=I32), out)
                b.store(b.sub(top, ir.Constant(I32, 1)), fl)
            b.ret(ok)
        if self.has("npu.buf.free"):
            f, b = self.fn("npu.buf.free")
            push(b, f.args[1])
            b.ret_void()
        if self.has("npu.buf.store"):
            f, b = self.fn("npu.buf.store")
            ctx, h, at, frm, out = f.args
            length = self.load_field(b, ctx, CTX_LEN)
            n = b.sub(b.zext(length, i64), b.zext(frm, i64))
            end = b.add(b.zext(at, i64), n)
            ok = b.and_(b.and_(valid(b, h), b.icmp_unsigned("<=", frm, length)),
                        b.icmp_unsigned("<=", end, ir.Constant(i64, size)))
            with b.if_then(ok):
                src = b.gep(self.load_field(b, ctx, CTX_PKT), [frm], source_etype=I8)
                b.call(memcpy, [data(b, h, at), src, n, ir.Constant(I1, 0)])
                b.store(b.trunc(end, I32), out)
            b.ret(ok)
        if self.has("npu.buf.attach"):
            # The frame's bytes become the packet (the driver's slots hold a whole buffer);
            # the host copy is done, so the buffer goes back on the freelist at once.
            f, b = self.fn("npu.buf.attach")
            ctx, h, length = f.args
            with b.if_then(valid(b, h)):
                limit = ir.Constant(I32, size)
                n = b.select(b.icmp_unsigned("<", length, limit), length, limit)
                meta = self.load_field(b, ctx, CTX_META)
                head_ptr = b.gep(meta, [ir.Constant(I32, META_HEAD)], source_etype=I32)
                head = b.load(head_ptr, typ=I32)
                base = b.gep(self.load_field(b, ctx, CTX_PKT), [b.neg(head)], source_etype=I8)
                b.call(memcpy, [base, data(b, h, ir.Constant(I32, 0)), b.zext(n, i64),
                                ir.Constant(I1, 0)])
                b.store(base, self.field_ptr(b, ctx, CTX_PKT))
                b.store(n, self.field_ptr(b, ctx, CTX_LEN))
                b.store(ir.Constant(I32, 0), head_ptr)
                b.store(n, b.gep(meta, [ir.Constant(I32, META_FIELDS["len"].word)],
                                 source_etype=I32))
                push(b, h)
            b.ret_void()

    def wide_packet_ops(self, bounded: bool) -> None:
        """npu.pkt.load16/32/64 (lower(wide=True)): one unaligned load and a byte swap (the
        packet is big endian); stores the same way.  `bounded` (the prefetch slice): a
        piece not wholly inside the packet reads 0 (from the context, never beyond the
        packet's buffer slot) and stores are dropped."""
        for size in WIDE_BYTES:
            t = ir.IntType(8 * size)
            swap = self.m.declare_intrinsic("llvm.bswap", [t])
            if self.has(wide_load_name(size)):
                f, b = self.fn(wide_load_name(size))
                ctx, off = f.args
                ptr = b.gep(self.load_field(b, ctx, CTX_PKT), [off], source_etype=I8)
                if bounded:
                    i64 = ir.IntType(64)
                    end = b.add(b.zext(off, i64), ir.Constant(i64, size))
                    inside = b.icmp_unsigned("<=", end,
                                             b.zext(self.load_field(b, ctx, CTX_LEN), i64))
                    ptr = b.select(inside, ptr, ctx)
                value = b.call(swap, [b.load(ptr, typ=t, align=1)])
                b.ret(b.select(inside, value, ir.Constant(t, 0)) if bounded else value)
            if self.has(wide_store_name(size)):
                f, b = self.fn(wide_store_name(size))
                ctx, off, v = f.args
                if not bounded:
                    ptr = b.gep(self.load_field(b, ctx, CTX_PKT), [off], source_etype=I8)
                    b.store(b.call(swap, [v]), ptr, align=1)
                b.ret_void()

    def packet_ops(self) -> None:
        self.wide_packet_ops(bounded=False)
        f, b = self.fn("npu.pkt.load8")
        ctx, off = f.args
        b.ret(b.load(b.gep(self.load_field(b, ctx, CTX_PKT), [off], source_etype=I8), typ=I8))
        f, b = self.fn("npu.pkt.store8")
        ctx, off, v = f.args
        b.store(v, b.gep(self.load_field(b, ctx, CTX_PKT), [off], source_etype=I8))
        b.ret_void()
        f, b = self.fn("npu.pkt.len")
        b.ret(self.load_field(b, f.args[0], CTX_LEN))
        f, b = self.fn("npu.meta.read")
        ctx, word = f.args
        b.ret(b.load(b.gep(self.load_field(b, ctx, CTX_META), [word], source_etype=I32),
                     typ=I32))
        f, b = self.fn("npu.meta.write")
        ctx, word, v = f.args
        b.store(v, b.gep(self.load_field(b, ctx, CTX_META), [word], source_etype=I32))
        b.ret_void()

    def adjust(self) -> None:
        """Move the packet start; the end stays put, so the buffer never overflows."""
        f, b = self.fn("npu.pkt.adjust")
        ctx, delta = f.args
        i64 = ir.IntType(64)
        meta = self.load_field(b, ctx, CTX_META)
        head_ptr = b.gep(meta, [ir.Constant(I32, META_HEAD)], source_etype=I32)
        head = b.load(head_ptr, typ=I32)
        length = self.load_field(b, ctx, CTX_LEN)
        room = b.add(b.add(b.sext(head, i64), ir.Constant(i64, HEADROOM)), b.sext(delta, i64))
        fits = b.icmp_signed("<=", b.sext(delta, i64), b.zext(length, i64))
        ok = b.and_(b.icmp_signed(">=", room, ir.Constant(i64, 0)), fits)
        with b.if_then(ok):
            pkt = self.load_field(b, ctx, CTX_PKT)
            b.store(b.gep(pkt, [delta], source_etype=I8), self.field_ptr(b, ctx, CTX_PKT))
            new_len = b.sub(length, delta)
            b.store(new_len, self.field_ptr(b, ctx, CTX_LEN))
            b.store(b.add(head, delta), head_ptr)
            b.store(new_len, b.gep(meta, [ir.Constant(I32, META_FIELDS["len"].word)],
                                   source_etype=I32))
        b.ret(ok)

    def memory_ops(self) -> None:
        f, b = self.fn("npu.mem.read")
        ctx, space, word = f.args
        b.ret(b.load(self.word_ptr(b, ctx, space, word), typ=I32))
        f, b = self.fn("npu.mem.write")
        ctx, space, word, v = f.args
        b.store(v, self.word_ptr(b, ctx, space, word))
        b.ret_void()
        # A plain read-modify-write, not an atomic one (lock xadd: ~9 ns a packet, and a
        # full barrier that stops the CPU overlapping cache misses).  Safe because nothing
        # else touches the memories while a batch runs: a batch runs on one thread, one
        # packet after the other, and NativeProgram.run holds the program's lock, so two host
        # threads never run batches on the same memories at once.  The result (the sum, and
        # the old value returned) is exactly the atomic add's.
        f, b = self.fn("npu.mem.add")
        ctx, space, word, v = f.args
        ptr = self.word_ptr(b, ctx, space, word)
        old = b.load(ptr, typ=I32)
        b.store(b.add(old, v), ptr)
        b.ret(old)

    def crc32(self) -> None:
        """One byte of the reflected CRC-32 (IEEE 802.3, polynomial 0xEDB88320)."""
        f, b = self.fn("npu.crc32.byte")
        crc, byte = f.args
        crc = b.xor(crc, b.zext(byte, I32))
        for _ in range(8):
            low = b.trunc(crc, I1)
            shifted = b.lshr(crc, ir.Constant(I32, 1))
            crc = b.select(low, b.xor(shifted, ir.Constant(I32, 0xEDB88320)), shifted)
        b.ret(crc)

    def hash_function(self, width: int, polynomial: int, multiplier: int) -> None:
        """npu.hashW: Horner's rule over the key bits, most significant first:
        r = r*x mod (x^W + P), then r ^= M when the key bit is set (as sim/core/units.cpp)."""
        f, b = self.fn(f"npu.hash{width}")
        (key,) = f.args
        wide = ir.IntType(width)
        mask = (1 << width) - 1
        poly, mult = ir.Constant(wide, polynomial & mask), ir.Constant(wide, multiplier & mask)
        zero = ir.Constant(wide, 0)
        entry = b.block
        head, body, done = (f.append_basic_block(n) for n in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        bit = b.phi(I32)
        r = b.phi(wide)
        bit.add_incoming(ir.Constant(I32, width), entry)
        r.add_incoming(zero, entry)
        b.cbranch(b.icmp_unsigned("==", bit, ir.Constant(I32, 0)), done, body)
        b.position_at_end(body)
        next_bit = b.sub(bit, ir.Constant(I32, 1))
        top = b.trunc(b.lshr(r, ir.Constant(wide, width - 1)), I1)
        reduced = b.xor(b.shl(r, ir.Constant(wide, 1)), b.select(top, poly, zero))
        key_bit = b.trunc(b.lshr(key, b.zext(next_bit, wide)), I1)
        r_next = b.xor(reduced, b.select(key_bit, mult, zero))
        bit.add_incoming(next_bit, body)
        r.add_incoming(r_next, body)
        b.branch(head)
        b.position_at_end(done)
        b.ret(r)

    def key_from_words(self, b, ctx, space, first_word, count: int | ir.Value, wide):
        """Read `count` words MSB first into one integer (count constant or a loop)."""
        if isinstance(count, int):
            acc = ir.Constant(wide, 0)
            for k in range(count):
                w = b.load(self.word_ptr(b, ctx, space, b.add(first_word, ir.Constant(I32, k))),
                           typ=I32)
                acc = b.or_(b.shl(acc, ir.Constant(wide, 32)), b.zext(w, wide)) \
                    if wide.width > 32 else w
            return acc
        raise TypeError("count must be constant")

    def lpm(self, name: str, key_words: int) -> None:
        f, b = self.fn(name)
        ctx, space, base, size, key, out = f.args
        width = key_words * 32
        wide = ir.IntType(width)
        best_len = b.alloca(I32)
        b.store(ir.Constant(I32, 0), best_len)
        found = b.alloca(I1)
        b.store(ir.Constant(I1, 0), found)

        def entry_at(i: ir.Value) -> None:
            entry = b.add(base, b.mul(i, ir.Constant(I32, 2 + key_words)))
            hdr = b.load(self.word_ptr(b, ctx, space, entry), typ=I32)
            plen = b.and_(hdr, ir.Constant(I32, 0xFF))
            valid = b.icmp_unsigned("!=", b.and_(hdr, ir.Constant(I32, VALID)),
                                    ir.Constant(I32, 0))
            ekey = self.key_from_words(b, ctx, space, b.add(entry, ir.Constant(I32, 2)),
                                       key_words, wide)
            plen_w = b.zext(plen, wide) if width > 32 else plen
            shift = b.sub(ir.Constant(wide, width), plen_w)
            all_ones = ir.Constant(wide, (1 << width) - 1)
            mask = b.select(b.icmp_unsigned("==", plen, ir.Constant(I32, 0)),
                            ir.Constant(wide, 0), b.shl(all_ones, shift))
            match = b.icmp_unsigned("==", b.and_(key, mask), b.and_(ekey, mask))
            better = b.or_(b.not_(b.load(found, typ=I1)),
                           b.icmp_unsigned(">", plen, b.load(best_len, typ=I32)))
            take = b.and_(b.and_(valid, match), better)
            with b.if_then(take):
                value = b.load(self.word_ptr(b, ctx, space, b.add(entry, ir.Constant(I32, 1))),
                               typ=I32)
                b.store(value, out)
                b.store(plen, best_len)
                b.store(ir.Constant(I1, 1), found)

        _counted_loop(b, f, ir.Constant(I32, 0), size, entry_at)
        b.ret(b.load(found, typ=I1))

    def hash_lookup(self) -> None:
        """Open addressing (the module-level exact_hash gives the home slot): probe from
        there, one slot further each step, until the key (hit), an empty slot or `size`
        probes (miss)."""
        f, b = self.fn("npu.hash.lookup")
        ctx, space, base, size, key_words, key, out = f.args
        home = self.exact_hash(b, key, key_words)
        mask = b.sub(size, ir.Constant(I32, 1))
        i_slot = b.alloca(I32)
        b.store(ir.Constant(I32, 0), i_slot)
        head, body, check, nxt, hit, miss = (f.append_basic_block(n) for n in (
            "head", "body", "check", "next", "hit", "miss"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(i_slot, typ=I32)
        b.cbranch(b.icmp_unsigned("<", i, size), body, miss)
        b.position_at_end(body)
        stride = b.add(key_words, ir.Constant(I32, 2))
        slot = b.and_(b.add(home, i), mask)
        entry = b.add(base, b.mul(slot, stride))
        hdr = b.load(self.word_ptr(b, ctx, space, entry), typ=I32)
        valid = b.icmp_unsigned("!=", b.and_(hdr, ir.Constant(I32, VALID)), ir.Constant(I32, 0))
        b.cbranch(valid, check, miss)  # an empty slot ends the probe sequence
        b.position_at_end(check)
        acc = ir.Constant(I128, 0)
        for k in range(4):  # at most 4 key words; words beyond key_words are skipped
            use = b.icmp_unsigned("<", ir.Constant(I32, k), key_words)
            addr = b.add(entry, ir.Constant(I32, 2 + k))
            safe = b.select(use, addr, entry)
            w = b.zext(b.load(self.word_ptr(b, ctx, space, safe), typ=I32), I128)
            acc = b.select(use, b.or_(b.shl(acc, ir.Constant(I128, 32)), w), acc)
        b.cbranch(b.icmp_unsigned("==", acc, key), hit, nxt)
        b.position_at_end(nxt)
        b.store(b.add(i, ir.Constant(I32, 1)), i_slot)
        b.branch(head)
        b.position_at_end(hit)
        b.store(b.load(self.word_ptr(b, ctx, space, b.add(entry, ir.Constant(I32, 1))),
                       typ=I32), out)
        b.ret(ir.Constant(I1, 1))
        b.position_at_end(miss)
        b.ret(ir.Constant(I1, 0))

    @staticmethod
    def exact_hash(b: ir.IRBuilder, key: ir.Value, key_words: ir.Value) -> ir.Value:
        """The module-level exact_hash in IR: key_words is a constant after inlining."""
        h = ir.Constant(I32, 0)
        for k in range(4):  # key word k counted from the most significant used word
            use = b.icmp_unsigned("<", ir.Constant(I32, k), key_words)
            shift = b.zext(b.mul(b.sub(b.sub(key_words, ir.Constant(I32, 1)),
                                       ir.Constant(I32, k)), ir.Constant(I32, 32)), I128)
            safe = b.select(use, shift, ir.Constant(I128, 0))
            w = b.trunc(b.lshr(key, safe), I32)
            mixed = b.mul(b.xor(h, w), ir.Constant(I32, EXACT_HASH_MULTIPLIER))
            h = b.select(use, mixed, h)
        return b.xor(h, b.lshr(h, ir.Constant(I32, 16)))



class _PrefetchSliceOps(_HostOps):
    """Host bodies for the prefetch slice: the block with its packet and memory writes
    dropped (metadata goes to a copy of the record, see _batch_driver).  Reads of small
    memories are real; reads of the large ones (`cold`: word ranges of memories of at least
    COLD_BYTES, the route tables) are real only within the slice's budget of cache lines
    (CTX_READS): a read of the line read last is free, a new line takes one from the budget,
    and the first new line beyond it is prefetched and ends the slice's useful work (it reads
    0 without waiting and prefetches nothing more; CTX_READS becomes -1).  So a slice run
    with budget k reads the k lines the runs before it prefetched, from cache, and
    prefetches the next one: one dependent miss of a walk per run (see _batch_driver).  What
    is left after optimization is the reads that lead to memory addresses: for a trie walk,
    the parse, the checks before the walk and the walk.  It changes nothing, so running it
    early only warms the cache."""

    def __init__(self, module: ir.Module, hash_unit: HashUnit,
                 cold: Iterable[tuple[int, int, int]] = ()) -> None:
        super().__init__(module, hash_unit)
        self.cold = tuple(cold)  # (space id, first word, words)

    def packet_ops(self) -> None:
        self.wide_packet_ops(bounded=True)
        # bounded: a dropped check or write may leave another offset; outside the packet a
        # read gives 0 (it reads the context, never beyond the packet's buffer slot)
        f, b = self.fn("npu.pkt.load8")
        ctx, off = f.args
        inside = b.icmp_unsigned("<", off, self.load_field(b, ctx, CTX_LEN))
        ptr = b.gep(self.load_field(b, ctx, CTX_PKT), [off], source_etype=I8)
        byte = b.load(b.select(inside, ptr, ctx), typ=I8)
        b.ret(b.select(inside, byte, ir.Constant(I8, 0)))
        f, b = self.fn("npu.pkt.len")
        b.ret(self.load_field(b, f.args[0], CTX_LEN))
        f, b = self.fn("npu.meta.read")
        ctx, word = f.args
        b.ret(b.load(b.gep(self.load_field(b, ctx, CTX_META), [word], source_etype=I32),
                     typ=I32))
        f, b = self.fn("npu.meta.write")  # the driver gives the slice a copy of the record
        ctx, word, v = f.args
        b.store(v, b.gep(self.load_field(b, ctx, CTX_META), [word], source_etype=I32))
        b.ret_void()
        self.fn("npu.pkt.store8")[1].ret_void()

    def is_cold(self, b: ir.IRBuilder, space: ir.Value, word: ir.Value) -> ir.Value:
        """Whether (space, word) is in a large memory (space is a constant after inlining,
        so only the word range test of the memories of that space stays)."""
        cold = ir.Constant(I1, 0)
        for space_id, first, words in self.cold:
            inside = b.icmp_unsigned("<", b.sub(word, ir.Constant(I32, first)),
                                     ir.Constant(I32, words))
            same = b.icmp_unsigned("==", space, ir.Constant(I32, space_id))
            cold = b.or_(cold, b.and_(same, inside))
        return cold

    def keep(self, b: ir.IRBuilder, value: ir.Value) -> ir.Value:
        """`value` through an opaque identity (KEEP_MARK): what depends on it is the walk
        or the slice's own budget state, so drop_prefetch_guards leaves branches on it
        alone; after that rewrite the marks become plain identities again."""
        name = f"{KEEP_MARK}{value.type}"
        try:
            mark = self.m.get_global(name)
        except KeyError:
            mark = ir.Function(self.m, ir.FunctionType(value.type, [value.type]), name)
            mark.attributes.add("readnone")
            mark.attributes.add("nounwind")
        return b.call(mark, [value])

    def memory_ops(self) -> None:
        prefetch = ir.Function(self.m, ir.FunctionType(VOID, [PTR, I32, I32, I32]),
                               "llvm.prefetch.p0")
        i64 = ir.IntType(64)
        f, b = self.fn("npu.mem.read")
        ctx, space, word = f.args
        ptr = self.word_ptr(b, ctx, space, word)
        line = b.lshr(b.ptrtoint(ptr, i64), ir.Constant(i64, 6))
        line_ptr = _slot(b, ctx, CTX_LINE)
        budget_ptr = _slot(b, ctx, CTX_READS)
        plain, cold, fresh, spend, stop, stop_now, done = (f.append_basic_block(x) for x in (
            "plain", "cold", "fresh", "spend", "stop", "stop_now", "done"))
        b.cbranch(self.is_cold(b, space, word), cold, plain)
        b.position_at_end(plain)  # a small memory: a real read, not marked
        b.ret(b.load(ptr, typ=I32))
        b.position_at_end(cold)
        last = self.keep(b, b.load(line_ptr, typ=i64))
        b.cbranch(b.icmp_unsigned("==", last, line), done, fresh)
        b.position_at_end(fresh)
        budget = self.keep(b, b.load(budget_ptr, typ=I32))
        b.cbranch(b.icmp_signed(">", budget, ir.Constant(I32, 0)), spend, stop)
        b.position_at_end(spend)
        b.store(b.sub(budget, ir.Constant(I32, 1)), budget_ptr)
        b.store(line, line_ptr)
        b.branch(done)
        b.position_at_end(stop)
        b.cbranch(b.icmp_signed("==", budget, ir.Constant(I32, 0)), stop_now, done)
        b.position_at_end(stop_now)
        # read, high temporal locality (3: keep it in all levels), data cache (1)
        b.call(prefetch, [ptr, ir.Constant(I32, 0), ir.Constant(I32, 3), ir.Constant(I32, 1)])
        b.store(ir.Constant(I32, -1), budget_ptr)
        b.branch(done)
        b.position_at_end(done)
        real = b.phi(I1)
        for block, value in ((cold, 1), (spend, 1), (stop, 0), (stop_now, 0)):
            real.add_incoming(ir.Constant(I1, value), block)
        # a slice that stopped reads 0 without touching memory
        safe = b.select(real, ptr, b.gep(budget_ptr, [ir.Constant(I32, 0)], source_etype=I8))
        b.ret(self.keep(b, b.select(real, b.load(safe, typ=I32), ir.Constant(I32, 0))))
        f, b = self.fn("npu.mem.write")
        b.ret_void()
        f, b = self.fn("npu.mem.add")  # counters are small memories: a plain read
        ctx, space, word, _ = f.args
        b.ret(b.load(self.word_ptr(b, ctx, space, word), typ=I32))

    def hash_lookup(self) -> None:
        """The key's home slot only, no probe loop: a key that sits further along its probe
        sequence reads as a miss here, so the slice may prefetch for the wrong case (no
        result changes), and a check on the lookup (`local4.contains`) is straight-line code
        drop_prefetch_guards can take as passed (it keeps branches inside loops)."""
        f, b = self.fn("npu.hash.lookup")
        ctx, space, base, size, key_words, key, out = f.args
        slot = b.and_(self.exact_hash(b, key, key_words), b.sub(size, ir.Constant(I32, 1)))
        entry = b.add(base, b.mul(slot, b.add(key_words, ir.Constant(I32, 2))))
        hdr = b.load(self.word_ptr(b, ctx, space, entry), typ=I32)
        acc = ir.Constant(I128, 0)
        for k in range(4):  # at most 4 key words; words beyond key_words are skipped
            use = b.icmp_unsigned("<", ir.Constant(I32, k), key_words)
            safe = b.select(use, b.add(entry, ir.Constant(I32, 2 + k)), entry)
            w = b.zext(b.load(self.word_ptr(b, ctx, space, safe), typ=I32), I128)
            acc = b.select(use, b.or_(b.shl(acc, ir.Constant(I128, 32)), w), acc)
        hit = b.and_(b.icmp_unsigned("!=", b.and_(hdr, ir.Constant(I32, VALID)),
                                     ir.Constant(I32, 0)),
                     b.icmp_unsigned("==", acc, key))
        value = b.load(self.word_ptr(b, ctx, space, b.add(entry, ir.Constant(I32, 1))), typ=I32)
        with b.if_then(hit):
            b.store(value, out)
        b.ret(hit)

    def buffer_ops(self) -> None:
        """The slice changes nothing: no buffer is taken, stored into or given back."""
        for name in ("npu.buf.alloc", "npu.buf.store"):
            if self.has(name):
                self.fn(name)[1].ret(ir.Constant(I1, 0))
        for name in ("npu.buf.attach", "npu.buf.free"):
            if self.has(name):
                self.fn(name)[1].ret_void()


class _StageSliceOps(_PrefetchSliceOps):
    """Host bodies for a depth-staged slice (npkit.compiler.mbl.stages): as the prefetch
    slice's (no packet or memory writes), but a read of a large memory is a call of the
    opaque stages.COLD_READ, which stages.stage_text later turns into a load, a prefetch or
    0 by the read's depth; no run-time budget."""

    def memory_ops(self) -> None:
        cold_read = ir.Function(self.m, ir.FunctionType(I32, [PTR]), COLD_READ)
        cold_read.attributes.add("nounwind")
        f, b = self.fn("npu.mem.read")
        ctx, space, word = f.args
        ptr = self.word_ptr(b, ctx, space, word)
        cold, plain = f.append_basic_block("cold"), f.append_basic_block("plain")
        b.cbranch(self.is_cold(b, space, word), cold, plain)
        b.position_at_end(cold)
        b.ret(b.call(cold_read, [ptr]))
        b.position_at_end(plain)
        b.ret(b.load(ptr, typ=I32))
        self.fn("npu.mem.write")[1].ret_void()
        f, b = self.fn("npu.mem.add")  # counters are small memories: a plain read
        ctx, space, word, _ = f.args
        b.ret(b.load(self.word_ptr(b, ctx, space, word), typ=I32))


COLD_BYTES = 1 << 20  # memories at least this large miss the cache: their reads are paced
# Slice runs before a packet's block: the dependent misses hidden.  2 covers the IPv4 trie's
# root and ply (/0-/24); a third run pays for every /17-/24 packet (it only finds the route
# in cache) to help the rare /25-/32 ones, and measured slower (docs/performance.md).
PREFETCH_PASSES = 2
# packets between a packet's slice runs (misses in flight per run): 8 when a packet cost
# ~36 ns; with ~24 ns, 12 (and 14) measured 1.11-1.13 x against 8, 16 no better
# (docs/performance.md, section 3)
PREFETCH_DISTANCE = 12


def cold_ranges(program: Program) -> list[tuple[int, int, int]]:
    """(space id, first word, words) of the memories large enough to miss the cache."""
    return [(SPACE_IDS[m.space], m.word_offset, m.words) for m in program.memories.values()
            if 4 * m.words >= COLD_BYTES]


def _batch_driver(module: ir.Module, block: str, slice_fn: str | None = None,
                  passes: int | None = None, distance: int | None = None,
                  stage_fns: list[str] | None = None) -> str:
    """`void @mbl.batch(pkts, stride, lens, metas, n, sram, scratch, local)`.

    With a prefetch slice (`slice_fn`, see _PrefetchSliceOps) the batch runs as a software
    pipeline over the packets: step i runs the slice of packet i with a budget of 0 cache
    lines, of packet i - distance with 1, ... of packet i - (passes - 1) * distance with
    passes - 1, then the block of packet i - passes * distance.  Each slice run reads from
    cache what the run before prefetched and prefetches the walk's next line, so a packet's
    dependent misses are in flight while the `distance` packets between its runs are worked
    on, and its block finds them all in cache (group prefetching over a rolling window, as
    in AMAC, with the slice re-run instead of a saved state).  A packet whose slice finished
    without stopping at a prefetch (e.g. a short route, or a drop before the walk) gets no
    further runs.  Each run has its own context and a copy of the metadata record, so it
    changes nothing; the results are the block's alone."""
    passes = PREFETCH_PASSES if passes is None else passes
    distance = PREFETCH_DISTANCE if distance is None else distance
    name = f"mbl.batch.{block.split('.', 2)[-1]}"
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I32, PTR, PTR, I32, PTR, PTR, PTR]),
                     name)
    pkts, stride, lens, metas, n, sram, scratch, local = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    i64 = ir.IntType(64)

    def new_ctx() -> ir.Value:
        # via ptrtoint/inttoptr: llvmlite keeps allocas typed; instcombine folds the pair away
        ctx = b.inttoptr(b.ptrtoint(b.alloca(CTX), i64), PTR)
        for k, v in ((2, sram), (3, scratch), (4, local)):
            b.store(v, _slot(b, ctx, k))
        return ctx

    def set_packet(ctx: ir.Value, i: ir.Value) -> ir.Value:
        """Point ctx at packet i; returns its metadata record."""
        i_wide = b.zext(i, i64)
        slot_start = b.mul(i_wide, b.zext(stride, i64))
        pkt = b.gep(pkts, [b.add(slot_start, ir.Constant(i64, HEADROOM))], source_etype=I8)
        meta = b.gep(metas, [b.mul(i_wide, ir.Constant(i64, META_WORDS))], source_etype=I32)
        length = b.load(b.gep(lens, [i_wide], source_etype=I32), typ=I32)
        for k, v in ((0, pkt), (1, meta), (5, length)):
            b.store(v, _slot(b, ctx, k))
        return meta

    def loop(first: ir.Value, end: ir.Value, body: Callable[[ir.Value], None]) -> None:
        _counted_loop(b, fn, first, end, body)

    ctx = new_ctx()

    def run_block(i: ir.Value) -> None:
        set_packet(ctx, i)
        b.call(module.get_global(block), [ctx], attrs=("alwaysinline",))

    if stage_fns:
        return _staged_steps(module, fn, b, stage_fns, distance, new_ctx, set_packet,
                             run_block)
    if slice_fn is None or passes < 1:
        loop(ir.Constant(I32, 0), n, run_block)
        b.ret_void()
        return name
    slice_ctx = new_ctx()
    meta_copy = b.inttoptr(b.ptrtoint(b.alloca(ir.ArrayType(I32, META_WORDS)), i64), PTR)
    slice_decl = ir.Function(module, ir.FunctionType(VOID, [PTR]), slice_fn)
    # per packet in flight: did its last slice run stop at a prefetch (1) or finish (0)
    ring = 1 << max(1, (passes * distance).bit_length())
    pending = b.inttoptr(b.ptrtoint(b.alloca(ir.ArrayType(I8, ring)), i64), PTR)

    memcpy = module.declare_intrinsic("llvm.memcpy", [PTR, PTR, i64])
    prefetch = ir.Function(module, ir.FunctionType(VOID, [PTR, I32, I32, I32]),
                           "llvm.prefetch.p0")

    def run_slice(i: ir.Value, budget: ir.Value) -> None:
        """Packet i's slice with a budget of `budget` lines, unless an earlier run of it
        finished (then it has nothing more to prefetch)."""
        flag = b.gep(pending, [b.and_(i, ir.Constant(I32, ring - 1))], source_etype=I8)
        go = b.or_(b.icmp_unsigned("==", budget, ir.Constant(I32, 0)),
                   b.icmp_unsigned("!=", b.load(flag, typ=I8), ir.Constant(I8, 0)))
        with b.if_then(go):
            meta = set_packet(slice_ctx, i)
            b.call(memcpy, [meta_copy, meta, ir.Constant(i64, 4 * META_WORDS),
                            ir.Constant(I1, 0)])
            b.store(meta_copy, _slot(b, slice_ctx, CTX_META))
            b.store(budget, _slot(b, slice_ctx, CTX_READS))
            b.store(ir.Constant(i64, -1), _slot(b, slice_ctx, CTX_LINE))
            b.call(slice_decl, [slice_ctx], attrs=("alwaysinline",))
            stopped = b.icmp_signed("<", b.load(_slot(b, slice_ctx, CTX_READS), typ=I32),
                                    ir.Constant(I32, 0))
            b.store(b.zext(stopped, I8), flag)

    def warm(i: ir.Value) -> None:
        """Prefetch packet i's first bytes and metadata record (the batch is larger than the
        cache; the slice of packet i runs `distance` steps later)."""
        i_wide = b.zext(b.select(b.icmp_unsigned("<", i, n), i, ir.Constant(I32, 0)), i64)
        pkt = b.gep(pkts, [b.add(b.mul(i_wide, b.zext(stride, i64)),
                                 ir.Constant(i64, HEADROOM))], source_etype=I8)
        meta = b.gep(metas, [b.mul(i_wide, ir.Constant(i64, META_WORDS))], source_etype=I32)
        for address in (pkt, meta):
            b.call(prefetch, [address, ir.Constant(I32, 0), ir.Constant(I32, 3),
                              ir.Constant(I32, 1)])

    def step(i: ir.Value) -> None:
        warm(b.add(i, ir.Constant(I32, distance)))

        def stage(k: ir.Value) -> None:
            # slice run with budget k on packet i - k * distance (one copy of the slice)
            lag = b.mul(k, ir.Constant(I32, distance))
            j = b.sub(i, lag)
            with b.if_then(b.and_(b.icmp_unsigned(">=", i, lag), b.icmp_unsigned("<", j, n))):
                run_slice(j, k)

        loop(ir.Constant(I32, 0), ir.Constant(I32, passes), stage)
        lag = ir.Constant(I32, passes * distance)
        j = b.sub(i, lag)
        with b.if_then(b.and_(b.icmp_unsigned(">=", i, lag), b.icmp_unsigned("<", j, n))):
            run_block(j)

    loop(ir.Constant(I32, 0), b.add(n, ir.Constant(I32, passes * distance)), step)
    b.ret_void()
    return name


def _staged_steps(module: ir.Module, fn: ir.Function, b: ir.IRBuilder,
                  stage_fns: list[str], distance: int, new_ctx, set_packet,
                  run_block) -> str:
    """The batch driver's loop with depth-staged slices (_stages_of): step i runs stage k
    of packet i - k * distance (k = 0..S-1, each on its own context and a copy of the
    packet's metadata record), then the block of packet i - S * distance."""
    _, _, _, _, n, _, _, _ = fn.args
    i64 = ir.IntType(64)
    slice_ctx = new_ctx()
    meta_copy = b.inttoptr(b.ptrtoint(b.alloca(ir.ArrayType(I32, META_WORDS)), i64), PTR)
    memcpy = module.declare_intrinsic("llvm.memcpy", [PTR, PTR, i64])
    decls = [ir.Function(module, ir.FunctionType(VOID, [PTR]), s) for s in stage_fns]

    def step(i: ir.Value) -> None:
        for stage in range(len(stage_fns) + 1):
            lag = ir.Constant(I32, stage * distance)
            j = b.sub(i, lag)
            with b.if_then(b.and_(b.icmp_unsigned(">=", i, lag), b.icmp_unsigned("<", j, n))):
                if stage == len(stage_fns):
                    run_block(j)
                    continue
                meta = set_packet(slice_ctx, j)
                b.call(memcpy, [meta_copy, meta, ir.Constant(i64, 4 * META_WORDS),
                                ir.Constant(I1, 0)])
                b.store(meta_copy, _slot(b, slice_ctx, CTX_META))
                b.call(decls[stage], [slice_ctx], attrs=("alwaysinline",))

    end = b.add(n, ir.Constant(I32, len(stage_fns) * distance))
    _counted_loop(b, fn, ir.Constant(I32, 0), end, step)
    b.ret_void()
    return fn.name


KEYS_PREFIX = "mbl.keys."
# The key driver's slice pipeline (_key_driver, KeyFunction(prefetch=True)): one slice run
# per key with a budget of 1 line (the 16-8-8 root, 256 KiB, is nearly always cached: it is
# read, the ply prefetched), 64 keys before the function.  Swept on the IPv4 16-8-8 walker
# (docs/performance.md, section 3, "Key arrays"): budgets (1,) at distance 64 best (32:
# 0.65 x, 128 and 192 0.8-0.95 x), (0, 1) and (1, 2) slower.
KEY_BUDGETS = (1,)
KEY_DISTANCE = 64


@dataclass
class _KeyDriverBuilder:
    """What a key driver's IR is built from: `void @mbl.keys.<fn>(keys, out, n, sram,
    scratch, local, pkt, meta)` around the MBL function `function`, with the helpers both
    drivers (_key_driver, _staged_key_driver) use."""

    module: ir.Module
    function: str

    def __post_init__(self) -> None:
        self.target = self.module.get_global(self.function)
        self.key_type, = self.target.function_type.args[1:]
        self.result_type = self.target.function_type.return_type
        self.key_bits = _words(self.key_type.width) * 32
        self.result_bits = _words(self.result_type.width) * 32
        name = KEYS_PREFIX + self.function.removeprefix("mbl.fn.")
        self.fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * 2 + [I32] + [PTR] * 5),
                              name)
        (self.keys, self.out, self.n, self.sram, self.scratch, self.local, self.pkt,
         self.meta) = self.fn.args
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ctx = self.new_ctx(self.meta)

    def new_ctx(self, meta_record: ir.Value) -> ir.Value:
        b, i64 = self.b, ir.IntType(64)
        ctx = b.inttoptr(b.ptrtoint(b.alloca(CTX), i64), PTR)
        for k, v in ((CTX_PKT, self.pkt), (CTX_META, meta_record), (2, self.sram),
                     (3, self.scratch), (4, self.local)):
            b.store(v, _slot(b, ctx, k))
        b.store(ir.Constant(I32, 0), _slot(b, ctx, CTX_LEN))
        return ctx

    def scratch_ctx(self) -> ir.Value:
        """A context for slice or stage runs, with its own metadata record."""
        b, i64 = self.b, ir.IntType(64)
        meta_copy = b.inttoptr(b.ptrtoint(b.alloca(ir.ArrayType(I32, META_WORDS)), i64), PTR)
        return self.new_ctx(meta_copy)

    def key(self, i: ir.Value) -> ir.Value:
        b, i64 = self.b, ir.IntType(64)
        at = b.gep(self.keys, [b.mul(b.zext(i, i64), ir.Constant(i64, self.key_bits // 8))],
                   source_etype=I8)
        word = b.load(at, typ=ir.IntType(self.key_bits), align=4)
        return b.trunc(word, self.key_type) if self.key_type.width < self.key_bits else word

    def run(self, i: ir.Value) -> None:
        """out[i] = fn(keys[i])."""
        b, i64 = self.b, ir.IntType(64)
        value = b.call(self.target, [self.ctx, self.key(i)], attrs=("alwaysinline",))
        if self.result_type.width < self.result_bits:
            value = b.zext(value, ir.IntType(self.result_bits))
        at = b.gep(self.out, [b.mul(b.zext(i, i64), ir.Constant(i64, self.result_bits // 8))],
                   source_etype=I8)
        b.store(value, at, align=4)

    def loop(self, first: ir.Value, end: ir.Value, body: Callable[[ir.Value], None]) -> None:
        _counted_loop(self.b, self.fn, first, end, body)

    def pipeline(self, stages: int, distance: int,
                 run_stage: Callable[[ir.Value, int], None]) -> str:
        """Step i runs stage k of key i - k * distance for k < stages, then the function of
        key i - stages * distance; bounds-checked steps at both ends of the array, unchecked
        ones in the middle.  Ends the function; its name."""
        b, n = self.b, self.n
        depth = stages * distance

        def checked_step(i: ir.Value) -> None:
            """Step i at the ends of the array, where some of its keys are outside it."""
            for stage in range(stages + 1):
                lag = ir.Constant(I32, stage * distance)
                j = b.sub(i, lag)
                with b.if_then(b.and_(b.icmp_unsigned(">=", i, lag),
                                      b.icmp_unsigned("<", j, n))):
                    if stage < stages:
                        run_stage(j, stage)
                    else:
                        self.run(j)

        def step(i: ir.Value) -> None:
            """Step i in the middle, every key of it inside: no bounds checks."""
            for stage in range(stages):
                run_stage(b.sub(i, ir.Constant(I32, stage * distance)), stage)
            self.run(b.sub(i, ir.Constant(I32, depth)))

        lag = ir.Constant(I32, depth)
        middle = b.select(b.icmp_unsigned("<", n, lag), n, lag)  # min(n, depth)
        self.loop(ir.Constant(I32, 0), middle, checked_step)
        self.loop(middle, n, step)
        self.loop(n, b.add(n, lag), checked_step)
        b.ret_void()
        return self.fn.name


def _key_driver(module: ir.Module, function: str, slice_fn: str | None,
                budgets: tuple[int, ...], distance: int) -> str:
    """`void @mbl.keys.<fn>(keys, out, n, sram, scratch, local, pkt, meta)`: out[i] =
    fn(keys[i]) for i < n, the MBL function `function` (`mbl.fn.<fn>`, one integer
    parameter) over a key array, as rte_lpm_lookup_bulk takes one.  A key is the
    parameter's integer in whole 32-bit words, little endian (so the i32/i64/i128 load of
    the host); a result likewise.  `pkt` and `meta` are a context's packet and metadata
    record for a function that reads them (64 zero bytes; META_WORDS words).

    With a slice (`slice_fn`, the function's prefetch slice, see _PrefetchSliceOps) the
    keys run as a software pipeline, like the packet driver's (_batch_driver): step i runs
    the slice of key i - k * distance with a budget of budgets[k] cache lines, then the
    function of key i - len(budgets) * distance, whose walk then finds its lines in cache.
    A slice run reads its budget's lines (the earlier runs prefetched them, or they are
    cached anyway, as a trie's root usually is: budgets (1,) read the root and prefetch the
    next level) and prefetches the next line; after a run that finished without stopping
    at a prefetch the key gets no further runs.  Without a slice, one plain loop."""
    d = _KeyDriverBuilder(module, function)
    b = d.b
    if slice_fn is None or not budgets:
        d.loop(ir.Constant(I32, 0), d.n, d.run)
        b.ret_void()
        return d.fn.name
    slice_ctx = d.scratch_ctx()
    slice_decl = ir.Function(module, d.target.function_type, slice_fn)
    ring = 1 << max(1, (len(budgets) * distance).bit_length())
    i64 = ir.IntType(64)
    pending = b.inttoptr(b.ptrtoint(b.alloca(ir.ArrayType(I8, ring)), i64), PTR)

    def run_slice(i: ir.Value, stage: int) -> None:
        flag = b.gep(pending, [b.and_(i, ir.Constant(I32, ring - 1))], source_etype=I8)
        go = ir.Constant(I1, 1) if stage == 0 else \
            b.icmp_unsigned("!=", b.load(flag, typ=I8), ir.Constant(I8, 0))
        with b.if_then(go):
            b.store(ir.Constant(I32, budgets[stage]), _slot(b, slice_ctx, CTX_READS))
            b.store(ir.Constant(i64, -1), _slot(b, slice_ctx, CTX_LINE))
            b.call(slice_decl, [slice_ctx, d.key(i)], attrs=("alwaysinline",))
            stopped = b.icmp_signed("<", b.load(_slot(b, slice_ctx, CTX_READS), typ=I32),
                                    ir.Constant(I32, 0))
            b.store(b.zext(stopped, I8), flag)

    return d.pipeline(len(budgets), distance, run_slice)


STAGE_PREFIX = "mbl.stage"  # + k + ".": stage k of a function (_stages_of)
# The staged key driver (_staged_key_driver, KeyFunction(stages=...)): keys between a key's
# stages.  IPv4 Poptrie fib4_lookup, 3 stages, medians of 7 paired rounds (docs/performance.md,
# section 3, fifth round): 8 82.8, 16 89.2, 32 92.7 M/s, the rounds overlapping; the packet
# driver (NativeProgram(stages=...)) takes PREFETCH_DISTANCE (12) by default.  Seventh round
# (paired, 21 rounds at load 2.6-6.5): 32 against 16 even (10 of 21 above), 8 lower, 2 stages
# ahead only on a quiet box and 0.45-0.87 x at load 4-6.5; so 3 stages at 16 stay.
STAGE_DISTANCE = 16


def _stages_of(program: Program, symbol: str, hash_unit: HashUnit | None,
               count: int, flat: bool = True) -> llvm.ModuleRef:
    """Stages 0..count-1 of the function `symbol` (npkit.compiler.mbl.stages), each as
    `@mbl.stage<k>.<symbol>` (its own symbols renamed, internal but the entry), linked into
    one module: the function optimized once with its large-memory reads opaque, the depths
    found on that, then each stage rewritten and optimized again; `flat`: then each
    flattened into branch-free code (stages.flatten) and optimized once more."""
    module = lower(program, wide=True)
    _StageSliceOps(module, hash_unit or HashUnit(), cold_ranges(program)).build()
    _inline_blocks(module, keep=symbol)
    function = symbol.startswith("mbl.fn.")
    if function:  # functions are internal: this one is the entry
        module.get_global(symbol).linkage = ""
    base = str(optimize(module))
    linked: llvm.ModuleRef | None = None
    for k in range(count):
        if function:
            text = stage_text(base, symbol, k)
        else:  # a block's checks before its walk: taken as passed (slice_guards)
            text = str(optimize(stage_text(base, symbol, k, KEEP_MARK + "i32")))
            text, _ = drop_prefetch_guards(text, symbol)
        text = re.sub(r'@("?)mbl\.', rf"@\g<1>{STAGE_PREFIX}{k}.mbl.", text)
        stage = optimize(text)
        if flat:  # the stage as straight-line code (stages.flatten): no branch on its words
            flat_text = flatten(str(stage), f"{STAGE_PREFIX}{k}.{symbol}")
            if flat_text is not None:
                stage = optimize(flat_text)
        if linked is None:
            linked = stage
        else:
            linked.link_in(stage)
    assert linked is not None
    return linked


def _staged_key_driver(module: ir.Module, function: str, stage_fns: list[str],
                       distance: int) -> str:
    """`void @mbl.keys.<fn>(...)` as _key_driver's, with depth-staged slices: step i runs
    stage 0 of key i, stage 1 of key i - distance, ... stage S-1 of key i - (S-1) *
    distance, then the function of key i - S * distance.  Stage k reads what stage k - 1
    prefetched (distance keys earlier) and prefetches the next dependent line; the function
    finds its walk's lines in cache.  No run-time state: every stage of every key runs (a
    stage whose walk has ended before its prefetch does nothing more than the walk)."""
    d = _KeyDriverBuilder(module, function)
    slice_ctx = d.scratch_ctx()
    decls = [ir.Function(module, d.target.function_type, s) for s in stage_fns]

    def run_stage(i: ir.Value, stage: int) -> None:
        d.b.call(decls[stage], [slice_ctx, d.key(i)], attrs=("alwaysinline",))

    return d.pipeline(len(stage_fns), distance, run_stage)


def _words(bits: int) -> int:
    return (bits + 31) // 32


SLICE_PREFIX = "mbl.slice."


def prefetch_slice(program: Program, entry: str,
                   hash_unit: HashUnit | None = None) -> llvm.ModuleRef:
    """The prefetch slice of a block or pipeline as `@mbl.slice.mbl.<kind>.<entry>` (all
    its own symbols renamed and internal, so it links into the main module, inlines into the
    batch driver and leaves nothing else behind): optimized once on its own, so that
    drop_prefetch_guards sees the whole slice as one function, then rewritten by it."""
    kind = "pipeline" if entry in program.pipelines else "block"
    return _slice_of(program, f"mbl.{kind}.{entry}", hash_unit)


def _slice_of(program: Program, symbol: str, hash_unit: HashUnit | None) -> llvm.ModuleRef:
    """The prefetch slice of the block, pipeline or function `symbol` (`mbl.block.x`,
    `mbl.pipeline.x`, `mbl.fn.x`), as `@mbl.slice.<symbol>`: see prefetch_slice."""
    module = lower(program, wide=True)
    _PrefetchSliceOps(module, hash_unit or HashUnit(), cold_ranges(program)).build()
    _inline_blocks(module, keep=symbol)
    if symbol.startswith("mbl.fn."):  # functions are internal: this one is the slice's entry
        module.get_global(symbol).linkage = ""
    text = str(module).replace('@"mbl.', f'@"{SLICE_PREFIX}mbl.')
    function = SLICE_PREFIX + symbol
    text, _ = drop_prefetch_guards(str(optimize(text)), function)
    return llvm.parse_assembly(text)


def _inline_blocks(module: ir.Module, keep: str | None = None) -> None:
    """Blocks inline into the pipelines and the batch driver that call them: one loop body
    per batch, the context in registers (the chip keeps its blocks; this is host-only).
    They become internal, so what the driver does not reach goes; `keep` stays external
    (the slice's entry, which the main module links against).  The lowering has put the
    MBL functions' allocas at the top of their entry blocks (lower.hoist_allocas); the host
    bodies built since (_HostOps: the npu.* functions, the lookups' loops) get the same here,
    so that no alloca becomes dynamic when these inline (a stack save and restore per packet)."""
    hoist_allocas(module)
    for fn in module.functions:
        if fn.name.startswith(("mbl.block.", "mbl.pipeline.")) and fn.blocks:
            fn.attributes.add("alwaysinline")
            if fn.name != keep:
                fn.linkage = "internal"


def native_module(program: Program, entry: str, hash_unit: HashUnit | None = None,
                  prefetch: bool = False, pool: BufferPool | None = None,
                  trace: LineTable | None = None, stages: int = 0,
                  stage_distance: int = 0) -> tuple[ir.Module, str]:
    """Lower the program and give the npu.* functions their host bodies; `entry` names a
    block or a pipeline.  With `prefetch`, the batch driver calls the prefetch slice
    (prefetch_slice, linked in separately); with `stages`, its depth-staged slices
    (_stages_of, `stage_distance` packets apart); with `trace`, the line-trace build
    (npkit.compiler.mbl.linetrace: hooks before every statement)."""
    module = lower(program, trace=trace, wide=True)
    _HostOps(module, hash_unit or HashUnit(), pool).build()
    _inline_blocks(module)
    kind = "pipeline" if entry in program.pipelines else "block"
    target = f"mbl.{kind}.{entry}"
    if stages:
        return module, _batch_driver(
            module, target, distance=stage_distance,
            stage_fns=[f"{STAGE_PREFIX}{k}.{target}" for k in range(stages)])
    return module, _batch_driver(module, target, SLICE_PREFIX + target if prefetch else None)


def host_target_machine() -> llvm.TargetMachine:
    """A target machine for this CPU and its features (popcnt, BMI, AVX...): the generic
    x86-64 one (passes.new_target_machine) has no popcnt, so MBL's `pop_count` became a
    dozen shifts and masks.  A fresh one each time: MCJIT takes ownership of it."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, jit=True)


def host_optimize(module: llvm.ModuleRef) -> None:
    """LLVM's own -O3 pipeline, vectorizers included, over the module the fixed pipeline
    (passes.optimize) made: host code only, so it may use what the ME has not (loop
    unrolling of a walk's levels, vector moves); the program's results do not change, the
    ME backend never sees this module."""
    set_unroll_threshold(HOST_UNROLL_THRESHOLD)
    tuning = llvm.create_pipeline_tuning_options(speed_level=3)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    builder = llvm.create_pass_builder(host_target_machine(), tuning)
    builder.getModulePassManager().run(module, builder)


def _jit(module: ir.Module, slice_module: llvm.ModuleRef | None,
         host_o3: bool) -> tuple[llvm.ModuleRef, llvm.ExecutionEngine]:
    """`module` optimized and JIT-compiled: with its prefetch slice linked in first (one
    optimization of both, so the slice inlines into the driver), through the fixed pipeline,
    then LLVM's -O3 when `host_o3` (host_optimize), then MCJIT.  Refuses a module that
    still calls an npu.* operation the host has no body for."""
    if slice_module is not None:
        linked = llvm.parse_assembly(str(module))
        linked.link_in(slice_module)
        optimized = optimize(str(linked))
    else:
        optimized = optimize(module)
    if host_o3:
        host_optimize(optimized)
    used = [f.name for f in optimized.functions
            if f.is_declaration and f.name.startswith("npu.")]
    if used:
        raise NativeError("the native target does not implement " + ", ".join(used))
    engine = llvm.create_mcjit_compiler(optimized, host_target_machine())
    engine.finalize_object()
    return optimized, engine


def _slot_bytes(length: int) -> int:
    """A batch slot for a packet of ``length`` bytes: headroom, then whole 64-byte lines."""
    return HEADROOM + max(64, (length + 63) // 64 * 64)


def _pack_fields(layout_fields, words: int, values: dict[str, int]) -> list[int]:
    total = 0
    for f in layout_fields:
        v = values.get(f.name, 0)
        if not 0 <= v < (1 << f.width):
            raise ValueError(f"{v} does not fit field {f.name or 'value'} (bit<{f.width}>)")
        total |= v << (words * 32 - f.offset - f.width)
    return [(total >> (32 * (words - 1 - k))) & 0xFFFFFFFF for k in range(words)]


class NativeProgram:
    """A compiled block or pipeline with its memories, ready to run packet batches.
    `prefetch`: the batch driver's prefetch pipeline (_batch_driver); `stages` > 0: the
    depth-staged slices instead (_stages_of, _staged_steps: `stages` stages,
    `stage_distance` packets apart; `flat_stages`: each stage branch-free, stages.flatten);
    `host_o3`: LLVM's -O3 over the module after the fixed pipeline (host_optimize)."""

    def __init__(self, program: Program, block: str | None = None,
                 hash_unit: HashUnit | None = None, prefetch: bool = True,
                 buffers: BufferPool | None = None, trace: LineTable | None = None,
                 host_o3: bool = True, stages: int = 0,
                 stage_distance: int = PREFETCH_DISTANCE, flat_stages: bool = True) -> None:
        if not program.blocks:
            raise NativeError("the program has no block to run")
        if not 0 <= stages <= 8 or not 1 <= stage_distance <= 1 << 12:
            raise NativeError(f"batch driver stages {stages}, distance {stage_distance}: "
                              f"0..8 stages, distance 1..{1 << 12}")
        self.program = program
        self.hash_unit = hash_unit or HashUnit()
        self.block = block or next(iter(program.pipelines), None) or next(iter(program.blocks))
        if self.block not in program.blocks and self.block not in program.pipelines:
            raise NativeError(f"no block or pipeline named '{self.block}'")
        # a slice (or stages) only pays where the program reads memories (arrays: walks)
        walks = trace is None and any(m.kind == "array" for m in program.memories.values())
        prefetch, stages = prefetch and walks, stages if walks else 0
        self.pool = buffers or BufferPool()
        module, driver = native_module(program, self.block, hash_unit,
                                       prefetch and not stages, self.pool, trace, stages,
                                       stage_distance)
        kind = "pipeline" if self.block in program.pipelines else "block"
        extra = _stages_of(program, f"mbl.{kind}.{self.block}", hash_unit, stages,
                           flat_stages) if stages \
            else prefetch_slice(program, self.block, hash_unit) if prefetch else None
        self.ir, self.engine = _jit(module, extra, host_o3)
        self._run = BATCH_SIGNATURE(self.engine.get_function_address(driver))
        self._setup_buffers()
        self.memory = {space: np.zeros(max(1, self._words(space)), dtype=np.uint32)
                       for space in SPACE_IDS}
        self._table_fill: dict[str, int] = {}
        # batches on these memories run one at a time (npu.mem.add is a plain add)
        self._batch_lock = threading.Lock()

    def _setup_buffers(self) -> None:
        """Host memory for the buffer pool, if the program uses buffers; its addresses go
        into the module's globals.  Slots of a batch then hold a whole buffer (attach)."""
        self.uses_buffers = any(g.name == FREELIST_GLOBAL for g in self.ir.global_variables)
        self._min_slot = _slot_bytes(self.pool.buffer_bytes) if self.uses_buffers else 0
        if not self.uses_buffers:
            return
        self._buffers = np.zeros(self.pool.count * self.pool.buffer_bytes, dtype=np.uint8)
        self._freelist = np.zeros(self.pool.count + 1, dtype=np.uint32)
        self._freelist[0] = self.pool.count
        self._freelist[1:] = np.arange(self.pool.count, 0, -1, dtype=np.uint32)  # 1 first
        for name, array in ((BUFFERS_GLOBAL, self._buffers), (FREELIST_GLOBAL, self._freelist)):
            address = self.engine.get_global_value_address(name)
            ctypes.c_void_p.from_address(address).value = array.ctypes.data

    def buffers_free(self) -> int:
        """Buffers on the freelist now (all of them when nothing leaked)."""
        return int(self._freelist[0]) if self.uses_buffers else 0

    def _words(self, space: str) -> int:
        return sum(m.words for m in self.program.memories.values() if m.space == space)

    def _mem(self, name: str) -> MemoryInfo:
        try:
            return self.program.memories[name]
        except KeyError:
            raise NativeError(f"no memory named '{name}'") from None

    def region(self, name: str, missing_ok: bool = False) -> np.ndarray | None:
        """The words of a memory, as a writable view of its space (for the control plane's
        structure builders, e.g. npkit.runtime.lpm); None for a missing one if missing_ok."""
        if missing_ok and name not in self.program.memories:
            return None
        m = self._mem(name)
        return self.memory[m.space][m.word_offset:m.word_offset + m.words]

    def _entry(self, m: MemoryInfo, index: int) -> np.ndarray:
        if not 0 <= index < m.size:  # never masked into another entry
            raise NativeError(f"{m.name}[{index}] is outside the memory (0..{m.size - 1})")
        start = m.word_offset + index * m.words_per_entry
        return self.memory[m.space][start:start + m.words_per_entry]

    # ---- memories from the host (a stand-in for the control plane) ----
    def table_add(self, name: str, key: int, value: int, prefix_len: int | None = None) -> None:
        """Add an entry.  lpm tables fill slot after slot (the lookup scans them all); hash
        tables are open-addressed: the entry goes to the first empty slot from the key's home
        slot (exact_hash masked to the size), and an existing entry for the key gets the new
        value."""
        m = self._mem(name)
        key_words = m.words_per_entry - 2
        key_list = [(key >> (32 * (key_words - 1 - k))) & 0xFFFFFFFF for k in range(key_words)]
        if m.kind == "hash":
            slot = self._hash_slot(m, key_list)
        else:
            slot = self._table_fill.get(name, 0)
            if slot >= m.size:
                raise NativeError(f"table {name} is full ({m.size} entries)")
            self._table_fill[name] = slot + 1
        hdr = VALID | (prefix_len if m.kind == "lpm" else 0)
        self._entry(m, slot)[:] = [hdr, value, *key_list]

    def _hash_slot(self, m: MemoryInfo, key_list: list[int]) -> int:
        """The slot for key in hash table m: its own entry or the first empty one probed."""
        key = 0
        for w in key_list:
            key = (key << 32) | w
        home = exact_hash(key, len(key_list))
        for i in range(m.size):
            slot = (home + i) & (m.size - 1)
            entry = self._entry(m, slot)
            if not int(entry[0]) & VALID or [int(w) for w in entry[2:]] == key_list:
                return slot
        raise NativeError(f"table {m.name} is full ({m.size} entries)")

    def write(self, name: str, index: int, value: int | dict[str, int]) -> None:
        m = self._mem(name)
        if isinstance(m.value, View):
            fields = m.value.layout.fields
            values = value if isinstance(value, dict) else {}
        else:
            width = m.value.width if isinstance(m.value, Bits) else 32
            fields = (FieldInfo("", width, m.words_per_entry * 32 - width),)
            values = {"": int(value)}  # type: ignore[arg-type]
        self._entry(m, index)[:] = _pack_fields(fields, m.words_per_entry, values)

    def read(self, name: str, index: int) -> int:
        words = self._entry(self._mem(name), index)
        total = 0
        for w in words:
            total = (total << 32) | int(w)
        return total

    # ---- packets ----
    def run(self, packets: list[bytes], in_ports: list[int] | int = 0) -> list[Verdict]:
        """The verdict of every packet, in order (run_stream, collected)."""
        ports = [in_ports] * len(packets) if isinstance(in_ports, int) else in_ports
        return list(self.run_stream(zip(packets, ports, strict=True)))

    def run_stream(self, frames: Iterable[tuple[bytes, int]]) -> Iterator[Verdict]:
        """(packet, in_port) pairs in, verdicts out in the same order, in batches of at most
        BATCH_FRAMES frames and BATCH_BYTES of buffer: a batch's slots are as wide as its
        largest frame, so a batch ends early when the next frame would make it larger.  One
        65,535-byte frame among a million small ones costs a few short batches, never
        frames x largest frame; memory stays bounded whatever the input's length."""
        whole = MEDIA_SOP | MEDIA_EOP  # a frame given whole is one mpacket (receive stages)
        return self.run_mpackets((packet, port, whole) for packet, port in frames)

    def run_media(self, frames: Iterable[tuple[bytes, int]],
                  element_bytes: int = 128) -> Iterator[tuple[int, Verdict]]:
        """Run a pipeline whose first stage is a receive block (docs/datapath.md): each
        frame arrives as mpackets of at most `element_bytes` (like RBUF elements), the
        receive stage runs once per mpacket with its SOP/EOP status, in arrival order.
        Yields (frame index, verdict) for every mpacket not consumed (`media.consume()`):
        normally one per frame, from its last mpacket or the one that dropped it."""
        if not 8 <= element_bytes <= MAX_PACKET_BYTES:
            raise NativeError(f"element_bytes {element_bytes}: 8..{MAX_PACKET_BYTES}")
        owners: list[int] = []

        def mpackets() -> Iterator[tuple[bytes, int, int]]:
            for index, (frame, port) in enumerate(frames):
                pieces = range(0, max(1, len(frame)), element_bytes)
                for k, start in enumerate(pieces):
                    status = (MEDIA_SOP if k == 0 else 0) | \
                        (MEDIA_EOP if k == len(pieces) - 1 else 0)
                    owners.append(index)
                    yield frame[start:start + element_bytes], port, status

        for k, verdict in enumerate(self.run_mpackets(mpackets())):
            if verdict.kind != "consumed":
                yield owners[k], verdict

    def run_mpackets(self, items: Iterable[tuple[bytes, int, int]]) -> Iterator[Verdict]:
        """(bytes, in_port, status) in, one verdict per item out, in order.  `status` is the
        receive status a receive stage sees (MEDIA_SOP | MEDIA_EOP bits; run and run_stream
        give both: a whole frame): mpackets of different ports may interleave, as on the
        chip."""
        batch: list[tuple[bytes, int, int]] = []
        widest = self._min_slot
        for packet, port, status in items:
            if len(packet) > MAX_PACKET_BYTES:
                raise NativeError(f"a packet of {len(packet):,} bytes: the native target "
                                  f"takes at most {MAX_PACKET_BYTES:,}")
            wide = max(widest, _slot_bytes(len(packet)))
            if batch and (len(batch) >= BATCH_FRAMES or (len(batch) + 1) * wide > BATCH_BYTES):
                yield from self._run_batch(batch, widest)
                batch, wide = [], max(self._min_slot, _slot_bytes(len(packet)))
            batch.append((packet, port, status))
            widest = wide
        if batch:
            yield from self._run_batch(batch, widest)

    def _run_batch(self, batch: list[tuple[bytes, int, int]], stride: int) -> list[Verdict]:
        buf, lens, metas = self.lay_out(batch, stride)
        self.run_laid_out(buf, lens, metas)
        return self.verdicts(buf, metas)

    # ---- batches laid out once (npkit.compiler.mbl.workers: one thread per worker) ----
    def lay_out(self, batch: list[tuple[bytes, int, int]],
                stride: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(buffer (n, stride) with HEADROOM before each packet, lengths, metadata) of
        (packet, in_port, status) items; stride must hold the largest (_slot_bytes)."""
        n = len(batch)
        buf = np.zeros((n, stride), dtype=np.uint8)
        lens = np.zeros(n, dtype=np.uint32)
        metas = np.zeros((n, META_WORDS), dtype=np.uint32)
        for i, (p, port, status) in enumerate(batch):
            buf[i, HEADROOM:HEADROOM + len(p)] = np.frombuffer(p, dtype=np.uint8)
            lens[i] = len(p)
            metas[i, META_FIELDS["in_port"].word] = port
            metas[i, META_FIELDS["len"].word] = len(p)
            metas[i, META_MEDIA] = status
        return buf, lens, metas

    def run_laid_out(self, buf: np.ndarray, lens: np.ndarray, metas: np.ndarray) -> None:
        """Run the batch driver on a laid-out batch, in place (ctypes releases the GIL for
        the call, so replicas run in parallel threads)."""
        with self._batch_lock:
            self._run(buf.ctypes.data, buf.shape[1], lens.ctypes.data, metas.ctypes.data,
                      len(lens), self.memory["sram"].ctypes.data,
                      self.memory["scratch"].ctypes.data, self.memory["local"].ctypes.data)

    def verdicts(self, buf: np.ndarray, metas: np.ndarray) -> list[Verdict]:
        """The verdicts (with the rewritten bytes) of a batch that ran."""
        out = []
        len_word = META_FIELDS["len"].word
        for i in range(len(metas)):
            start = HEADROOM + int(metas[i, META_HEAD].astype(np.int32))
            data = bytes(buf[i, start:start + int(metas[i, len_word])])
            out.append(self._verdict(metas[i], data))
        return out

    def key_function(self, name: str, prefetch: bool = False,
                     budgets: tuple[int, ...] = KEY_BUDGETS,
                     distance: int = KEY_DISTANCE, stages: int = 0,
                     stage_distance: int = STAGE_DISTANCE,
                     flat_stages: bool = True) -> KeyFunction:
        """The MBL function `name` compiled for arrays of keys (KeyFunction), on this
        program's memories: e.g. a route walker's `fib4_lookup` over a key array, as
        rte_lpm_lookup_bulk.  `prefetch`: the key driver's slice pipeline (_key_driver);
        `stages`: the depth-staged driver (_staged_key_driver) instead, its stages
        branch-free unless not `flat_stages` (stages.flatten)."""
        return KeyFunction(self, name, prefetch, budgets, distance, stages, stage_distance,
                           flat_stages)

    def replica(self) -> NativeProgram:
        """A program sharing this one's JIT code, with its own memories (copies of these now)
        and batch lock: one per worker thread (npkit.compiler.mbl.workers)."""
        if self.uses_buffers:
            raise NativeError("a program with a buffer pool cannot be replicated")
        twin = copy.copy(self)
        twin.memory = {space: words.copy() for space, words in self.memory.items()}
        twin._table_fill = dict(self._table_fill)
        twin._batch_lock = threading.Lock()
        return twin

    def _verdict(self, meta: np.ndarray, data: bytes) -> Verdict:
        kind = int(meta[META_VERDICT])
        code = int(meta[META_CODE])
        if kind == VERDICT_FORWARD:
            return Verdict("forward", int(meta[META_FIELDS["out_port"].word]),
                           int(meta[META_FIELDS["queue"].word]), data=data)
        if kind == VERDICT_DROP:
            return Verdict("drop", reason=self.program.reasons.name(code), data=data)
        if kind == VERDICT_EXCEPTION:
            return Verdict("exception", code=code, data=data,
                           next_hop=int(meta[META_FIELDS["next_hop"].word]))
        if kind == VERDICT_NEXT:
            return Verdict("next", reason=self.program.labels.name(code), data=data)
        if kind == VERDICT_CONSUMED:
            return Verdict("consumed")
        return Verdict("none", data=data)


class KeyFunction:
    """An MBL function with one integer parameter (bit<N>, N <= 128), JIT-compiled with a
    driver that runs it over an array of keys in one call (_key_driver), on the memories of
    the NativeProgram it came from (NativeProgram.key_function; memory changes there are
    seen here).  Keys and results are host arrays of uint32 words: shape (n,) when the
    integer fits 32 bits, else (n, words) with the least significant word first (pack /
    unpack convert from and to Python ints).  `prefetch`: the slice pipeline (the
    function's prefetch slice run `distance` keys ahead with `budgets`, see _key_driver),
    else the plain loop; `stages` > 0: the depth-staged driver (_staged_key_driver,
    `stage_distance` keys between a key's stages; `flat_stages`: each stage branch-free,
    stages.flatten).  Which is faster depends on the walk (docs/performance.md, section
    3: the IPv4 16-8-8 walker gains 1.3-1.7 x from the slice, Poptrie and IPv6 lose; IPv4
    Poptrie gains 1.3-2.9 x from 3 stages at load 5-9, flat stages 1.02-1.28 x more)."""

    def __init__(self, owner: NativeProgram, name: str, prefetch: bool = False,
                 budgets: tuple[int, ...] = KEY_BUDGETS,
                 distance: int = KEY_DISTANCE, stages: int = 0,
                 stage_distance: int = STAGE_DISTANCE, flat_stages: bool = True) -> None:
        if name not in owner.program.functions:
            raise NativeError(f"no function named '{name}'")
        if any(k < 0 for k in budgets) or not 1 <= distance <= 1 << 12:
            raise NativeError(f"key driver budgets {budgets}, distance {distance}: budgets "
                              f">= 0, distance 1..{1 << 12}")
        if not 0 <= stages <= 8 or not 1 <= stage_distance <= 1 << 12 or \
                (stages and prefetch):
            raise NativeError(f"key driver stages {stages}, distance {stage_distance}: "
                              f"0..8 stages (not with prefetch), distance 1..{1 << 12}")
        self.owner, self.name = owner, name
        symbol = f"mbl.fn.{name}"
        module = lower(owner.program, wide=True)
        _HostOps(module, owner.hash_unit, owner.pool).build()
        _inline_blocks(module)
        signature = module.get_global(symbol).function_type
        params, result = signature.args[1:], signature.return_type
        if len(params) != 1 or not all(isinstance(t, ir.IntType) and t.width <= 128
                                       for t in (*params, result)):
            raise NativeError(f"function '{name}': a key function takes one integer "
                              f"(at most bit<128>) and returns one")
        self.key_words, self.result_words = _words(params[0].width), _words(result.width)
        if stages:
            driver = _staged_key_driver(
                module, symbol, [f"{STAGE_PREFIX}{k}.{symbol}" for k in range(stages)],
                stage_distance)
            extra = _stages_of(owner.program, symbol, owner.hash_unit, stages, flat_stages)
        else:
            slice_fn = SLICE_PREFIX + symbol if prefetch else None
            driver = _key_driver(module, symbol, slice_fn, tuple(budgets), distance)
            extra = _slice_of(owner.program, symbol, owner.hash_unit) if prefetch else None
        self.ir, self.engine = _jit(module, extra, host_o3=True)
        self._run = KEYS_SIGNATURE(self.engine.get_function_address(driver))
        self._packet = np.zeros(64, dtype=np.uint8)  # a context's packet and record, unused
        self._meta = np.zeros(META_WORDS, dtype=np.uint32)

    def pack(self, keys: Iterable[int]) -> np.ndarray:
        """Python ints as a key array."""
        return _pack_ints(list(keys), self.key_words)

    def unpack(self, results: np.ndarray) -> list[int]:
        """A result array as Python ints."""
        words = results.reshape(len(results), self.result_words).astype(object)
        return [sum(int(w) << (32 * k) for k, w in enumerate(row)) for row in words]

    def __call__(self, keys: np.ndarray) -> np.ndarray:
        """The function's result for every key, in order."""
        shape = (len(keys),) if self.result_words == 1 else (len(keys), self.result_words)
        out = np.empty(shape, dtype=np.uint32)
        self.run_into(keys, out)
        return out

    def run_into(self, keys: np.ndarray, out: np.ndarray) -> None:
        """Results into `out` (uint32, C order, len(keys) results), in one call (ctypes
        releases the GIL for it); under the program's batch lock, as a batch."""
        for array, words, what in ((keys, self.key_words, "keys"),
                                   (out, self.result_words, "results")):
            if array.dtype != np.uint32 or not array.flags.c_contiguous or \
                    array.size != len(keys) * words:
                raise NativeError(f"{what}: a C-ordered uint32 array of {len(keys)} x "
                                  f"{words} words")
        if len(keys) >= 1 << 31:
            raise NativeError(f"{len(keys):,} keys: at most {(1 << 31) - 1:,} a call")
        memory = self.owner.memory
        with self.owner._batch_lock:
            self._run(keys.ctypes.data, out.ctypes.data, len(keys), memory["sram"].ctypes.data,
                      memory["scratch"].ctypes.data, memory["local"].ctypes.data,
                      self._packet.ctypes.data, self._meta.ctypes.data)


def _pack_ints(values: list[int], words: int) -> np.ndarray:
    if words == 1:
        return np.array(values, dtype=np.uint32)
    out = np.empty((len(values), words), dtype=np.uint32)
    for k in range(words):
        out[:, k] = [(v >> (32 * k)) & 0xFFFFFFFF for v in values]
    return out
