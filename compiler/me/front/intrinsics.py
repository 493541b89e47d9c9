"""The npu.* chip operations in WIR.  Packet, metadata and memory accesses map to one WIR
instruction each; the table lookups become WIR loops that do exactly what the native target
(compiler/mbl/native.py, the reference semantics) does; crc32 is expanded bit by bit."""

from __future__ import annotations

from collections.abc import Callable

from npkit.compiler.mbl.native import EXACT_HASH_MULTIPLIER, VALID
from npkit.compiler.mbl.types import META_FIELDS

from .. import wir
from ..wir import MASK32, Operand, Reg
from . import words as W
from .builder import Builder
from .words import Words

CRC32_POLY = 0xEDB88320
# the marker the front end puts after a pipeline's receive stage (prepare.py)
RX_TURN_DONE = "npu.rx.turn_done"
RX_TURN_TAKE = "npu.rx.turn_take"
LEN_WORD = META_FIELDS["len"].word


class Unsupported(Exception):
    """An intrinsic the ME backend cannot compile (the caller adds the location)."""


def byte_of_word(b: Builder, word: Operand, offset: int) -> Operand:
    """Packet byte `offset` from its big-endian header word."""
    shift = 8 * (3 - offset % 4)
    shifted = b.bin("lshr", word, shift)
    return shifted if shift == 24 else b.bin("and", shifted, 0xFF)


class Intrinsics:
    """Expansions of the npu.* calls; `args` are the call's operands as words (the context
    pointer dropped), `out` the alloca register behind a lookup's out-pointer."""

    def __init__(self, b: Builder, window_max: int) -> None:
        self.b = b
        self.window_max = window_max
        self.table: dict[str, Callable[..., Words | None]] = {
            "npu.pkt.load8": self.load8, "npu.pkt.store8": self.store8,
            "npu.pkt.len": self.pkt_len, "npu.meta.read": self.meta_read,
            "npu.meta.write": self.meta_write, "npu.mem.read": self.mem_read,
            "npu.mem.write": self.mem_write, "npu.mem.add": self.mem_add,
            "npu.hash.lookup": self.hash_lookup, "npu.lpm32.lookup": self.lpm_lookup,
            "npu.lpm128.lookup": self.lpm_lookup, "npu.crc32.byte": self.crc32_byte,
            "npu.hash48": self.hash, "npu.hash64": self.hash, "npu.hash128": self.hash,
        }

        # receive stages (docs/datapath.md): only LM_WINDOW_ABI bodies (pool.uc) get them;
        # compile_me refuses them for the default ABI before the front end runs
        self.buffer_table: dict[str, Callable[[list[Words], Reg | None], Words | None]] = {
            "npu.buf.alloc": self.buf_alloc, "npu.buf.store": self.buf_store,
            "npu.buf.attach": self.buf_attach, "npu.buf.free": self.buf_free,
            RX_TURN_DONE: self.rx_turn_done, RX_TURN_TAKE: self.rx_turn_take,
        }

    def expand(self, name: str, args: list[Words], out: Reg | None, width: int) -> Words | None:
        if name == "npu.pkt.adjust":
            raise Unsupported("packet.push/pull is not supported by the ME backend yet")
        if name in self.buffer_table:
            return self.buffer_table[name](args, out)
        fn = self.table.get(name)
        if fn is None:
            raise Unsupported(f"the chip operation {name} is not supported by the ME backend")
        if name.startswith("npu.hash") and name != "npu.hash.lookup":
            return fn(args, width)
        if name.endswith(".lookup"):
            return fn(name, args, out)
        return fn(args)

    @staticmethod
    def const(x: Words, what: str) -> int:
        if not isinstance(x[-1], int):
            raise Unsupported(f"{what} must be a compile-time constant for the ME backend")
        return x[-1]

    def in_window(self, off: Operand) -> bool:
        return isinstance(off, int) and off < self.window_max

    # ---- packet and metadata ----
    def load8(self, args: list[Words]) -> Words:
        (off,) = args[1]
        b = self.b
        if self.in_window(off):
            word = b.reg()
            b.emit(wir.HdrRead(word, off // 4))
            return (byte_of_word(b, word, off),)
        r = b.reg()
        b.emit(wir.PktLoad8(r, off))
        return (r,)

    def store8(self, args: list[Words]) -> None:
        (off,), (value,) = args[1], args[2]
        b = self.b
        if not self.in_window(off):
            b.emit(wir.PktStore8(off, value))
            return
        shift = 8 * (3 - off % 4)
        word = b.reg()
        b.emit(wir.HdrRead(word, off // 4))
        kept = b.bin("and", word, MASK32 ^ (0xFF << shift))
        b.emit(wir.HdrWrite(off // 4, b.bin("or", kept, b.bin("shl", value, shift))))

    def pkt_len(self, args: list[Words]) -> Words:
        r = self.b.reg("len")
        self.b.emit(wir.MetaRead(r, LEN_WORD))
        return (r,)

    def meta_read(self, args: list[Words]) -> Words:
        r = self.b.reg()
        self.b.emit(wir.MetaRead(r, self.const(args[1], "a metadata word")))
        return (r,)

    def meta_write(self, args: list[Words]) -> None:
        self.b.emit(wir.MetaWrite(self.const(args[1], "a metadata word"), args[2][0]))

    # ---- memories ----
    def mem_read(self, args: list[Words]) -> Words:
        r = self.b.reg()
        self.b.emit(wir.MemRead((r,), self.const(args[1], "a memory space"), args[2][0]))
        return (r,)

    def mem_write(self, args: list[Words]) -> None:
        self.b.emit(wir.MemWrite(self.const(args[1], "a memory space"), args[2][0],
                                 (args[3][0],)))

    def mem_add(self, args: list[Words]) -> Words:
        r = self.b.reg()
        self.b.emit(wir.MemAdd(r, self.const(args[1], "a memory space"), args[2][0],
                               args[3][0]))
        return (r,)

    def read_words(self, space: int, addr: Operand, count: int) -> tuple[Reg, ...]:
        dsts = tuple(self.b.reg() for _ in range(count))
        self.b.emit(wir.MemRead(dsts, space, addr))
        return dsts

    # ---- buffers and the receive turn (native.py: buffer_ops) ----
    def buf_alloc(self, args: list[Words], out: Reg | None) -> Words:
        handle, ok = self.b.reg("handle"), self.b.reg("allocated")
        self.b.emit(wir.BufAlloc(handle, ok))
        if out is not None:
            self.b.copy(out, handle)
        return (ok,)

    def buf_store(self, args: list[Words], out: Reg | None) -> Words:
        end, ok = self.b.reg("end"), self.b.reg("stored")
        self.b.emit(wir.BufStore(end, ok, args[1][-1], args[2][-1], args[3][-1]))
        if out is not None:
            self.b.copy(out, end)
        return (ok,)

    def buf_attach(self, args: list[Words], out: Reg | None) -> None:
        self.b.emit(wir.BufAttach(args[1][-1], args[2][-1]))

    def buf_free(self, args: list[Words], out: Reg | None) -> None:
        self.b.emit(wir.BufFree(args[1][-1]))

    def rx_turn_done(self, args: list[Words], out: Reg | None) -> None:
        self.b.emit(wir.RxTurnDone())

    def rx_turn_take(self, args: list[Words], out: Reg | None) -> None:
        self.b.emit(wir.RxTurnTake())

    # ---- table lookups (native.py: hash_lookup, lpm) ----
    def loop(self, hint: str, trips: int) -> tuple[Reg, wir.Block]:
        """A counter register set to 0 and the loop head block (entered at most `trips`
        times), jumped to."""
        b = self.b
        i = b.reg("i")
        b.copy(i, 0)
        head = b.new_block(f"{hint}_head")
        head.max_trips = trips
        b.jump(head.label)
        b.at(head)
        return i, head

    def step(self, i: Reg, head: wir.Block) -> None:
        self.b.copy(i, self.b.bin("add", i, 1))
        self.b.jump(head.label)

    def hash_lookup(self, name: str, args: list[Words], out: Reg | None) -> Words:
        b = self.b
        space = self.const(args[1], "a table's space")
        base = self.const(args[2], "a table's address")
        size = self.const(args[3], "a table's size")
        key_words = self.const(args[4], "a table's key size")
        key = args[5][len(args[5]) - key_words:]
        h: Operand = 0
        for w in key:                           # native.exact_hash
            h = b.bin("mul", b.bin("xor", h, w), EXACT_HASH_MULTIPLIER)
        home = b.bin("xor", h, b.bin("lshr", h, 16))
        hit = b.reg("hit")
        i, head = self.loop("hash", size + 1)
        body, nxt, found, miss, done = (b.new_block(f"hash_{n}") for n in (
            "probe", "next", "hit", "miss", "done"))
        b.branch("ult", i, size, body.label, miss.label)
        b.at(body)
        slot = b.bin("and", b.bin("add", home, i), size - 1)
        entry = b.bin("add", b.bin("mul", slot, key_words + 2), base)
        (hdr,) = self.read_words(space, entry, 1)
        checks = [b.new_block("hash_key") for _ in range(key_words)]
        b.branch("ne", b.bin("and", hdr, VALID), 0, checks[0].label, miss.label)
        stored = None
        for k, check in enumerate(checks):
            b.at(check)
            if stored is None:
                stored = self.read_words(space, b.bin("add", entry, 2), key_words)
            last = k == key_words - 1
            b.branch("eq", stored[k], key[k], found.label if last else checks[k + 1].label,
                     nxt.label)
        b.at(nxt)
        self.step(i, head)
        b.at(found)
        (value,) = self.read_words(space, b.bin("add", entry, 1), 1)
        if out is not None:
            b.copy(out, value)
        b.copy(hit, 1)
        b.jump(done.label)
        b.at(miss)
        b.copy(hit, 0)
        b.jump(done.label)
        b.at(done)
        return (hit,)

    def prefix_mask(self, plen: Operand, j: int, key_words: int) -> Operand:
        """Word j (most significant first) of the prefix mask of length plen."""
        b = self.b
        end = 32 * (j + 1)
        if key_words == 1:
            shift = b.bin("sub", 32, plen)
        else:
            partial = b.select(b.cmp("ule", plen, 32 * j), 32, b.bin("sub", end, plen))
            shift = b.select(b.cmp("uge", plen, end), 0, partial)
        return b.bin("shl", MASK32, shift)     # a register shift by 32 gives 0

    def lpm_lookup(self, name: str, args: list[Words], out: Reg | None) -> Words:
        b = self.b
        key_words = 1 if name == "npu.lpm32.lookup" else 4
        space = self.const(args[1], "a table's space")
        base = self.const(args[2], "a table's address")
        size = self.const(args[3], "a table's size")
        key = args[4]
        best, found = b.reg("best"), b.reg("found")
        b.copy(best, 0)
        b.copy(found, 0)
        i, head = self.loop("lpm", size + 1)
        body, match, compare, take, nxt, done = (b.new_block(f"lpm_{n}") for n in (
            "entry", "match", "better", "take", "next", "done"))
        b.branch("ult", i, size, body.label, done.label)
        b.at(body)
        entry = b.bin("add", b.bin("mul", i, key_words + 2), base)
        (hdr,) = self.read_words(space, entry, 1)
        plen = b.bin("and", hdr, 0xFF)
        b.branch("ne", b.bin("and", hdr, VALID), 0, match.label, nxt.label)
        b.at(match)
        stored = self.read_words(space, b.bin("add", entry, 2), key_words)
        diff: Operand = 0
        for j in range(key_words):
            differ = b.bin("xor", key[j], stored[j])
            diff = b.bin("or", diff, b.bin("and", differ, self.prefix_mask(plen, j, key_words)))
        b.branch("eq", diff, 0, compare.label, nxt.label)
        b.at(compare)
        better = b.bin("or", b.cmp("eq", found, 0), b.cmp("ugt", plen, best))
        b.branch("ne", better, 0, take.label, nxt.label)
        b.at(take)
        (value,) = self.read_words(space, b.bin("add", entry, 1), 1)
        if out is not None:
            b.copy(out, value)
        b.copy(best, plen)
        b.copy(found, 1)
        b.jump(nxt.label)
        b.at(nxt)
        self.step(i, head)
        b.at(done)
        result = b.reg("hit")
        b.copy(result, found)
        return (result,)

    # ---- pure functions ----
    def crc32_byte(self, args: list[Words]) -> Words:
        """One byte of the reflected CRC-32, bit by bit (native.py's crc32)."""
        b = self.b
        crc = b.bin("xor", args[0][0], args[1][0])
        for _ in range(8):
            low = b.bin("and", crc, 1)
            crc = b.bin("xor", b.bin("lshr", crc, 1), b.bin("and", b.bin("sub", 0, low),
                                                            CRC32_POLY))
        return (crc,)

    def hash(self, args: list[Words], width: int) -> Words:
        dsts = tuple(self.b.reg("hash") for _ in range(W.nwords(width)))
        self.b.emit(wir.Hash(dsts, width, args[0]))
        return dsts
