"""WIR, the ME backend's word IR: the contract between the front end (optimized LLVM IR ->
WIR, `compiler/me/front/`) and the back end (WIR -> microcode, `compiler/me/back/`).

Every value is a 32-bit word.  Wider MBL integers are already split into words (most
significant word first) and `i1` values are 0/1 words.  Registers are virtual and may be
assigned more than once (WIR is not SSA: phis became copies in the predecessors).  The
header window is the first `window_bytes` bytes of the packet, read by the dispatch loop
before the function runs, as big-endian words.  docs/me-backend.md has the full contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npkit.base.diagnostics import SourceLocation
from npkit.compiler.uc.image import Variable

MASK32 = 0xFFFF_FFFF

# Spaces of MBL memories (the same numbers as npu.mem.* in the lowering contract).
SRAM, SCRATCH, LOCAL = 0, 1, 2

BIN_OPS = ("add", "sub", "and", "or", "xor", "shl", "lshr", "mul")
PREDICATES = ("eq", "ne", "ult", "ule", "ugt", "uge", "slt", "sle", "sgt", "sge")


# An MBL source position (1-based line and column): the shared location type; the short
# name is the one WIR's instructions and the back end's passes use.
Loc = SourceLocation


@dataclass(frozen=True)
class Reg:
    """A virtual 32-bit register."""

    id: int
    hint: str = ""          # the MBL/LLVM name it came from, for listings only

    def __str__(self) -> str:
        return f"%{self.id}" + (f".{self.hint}" if self.hint else "")


Operand = Reg | int         # an int is a constant word 0 .. 2**32 - 1


def opnd(o: Operand) -> str:
    return str(o) if isinstance(o, Reg) else hex(o)


@dataclass(frozen=True)
class VarBind:
    """Debug info: from the instruction carrying it on, MBL variable `var` is `args` (each a
    value's words, most significant first; a constant word is an int) combined by the DWARF
    expression `expr` (empty: args[0]); `args` None: optimized out from here.  No use of
    its registers: a pass may delete their definitions (then the value is lost)."""

    var: Variable
    args: tuple[tuple[Operand, ...], ...] | None
    expr: tuple[str | int, ...] = ()


@dataclass
class Instr:
    loc: Loc | None = field(default=None, kw_only=True)
    # variable bindings that take effect just before this instruction (debug info only:
    # never compared, never a use)
    dbg: tuple[VarBind, ...] = field(default=(), kw_only=True, compare=False, repr=False)

    def defs(self) -> tuple[Reg, ...]:
        return ()

    def uses(self) -> tuple[Operand, ...]:
        return ()


@dataclass
class Bin(Instr):
    """dst = a op b (mod 2**32).  Shifts by a constant take 0..31; by a register, an
    amount >= 32 gives 0.  `mul` keeps the low 32 bits."""

    dst: Reg
    op: str
    a: Operand
    b: Operand

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.a, self.b)

    def __str__(self) -> str:
        return f"{self.dst} = {self.op} {opnd(self.a)}, {opnd(self.b)}"


@dataclass
class Fsh(Instr):
    """dst = (hi:lo) >> amount, the low word of the 64-bit concatenation, amount 1..31
    (a funnel shift: dbl_shf)."""

    dst: Reg
    hi: Operand
    lo: Operand
    amount: int

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.hi, self.lo)

    def __str__(self) -> str:
        return f"{self.dst} = fsh {opnd(self.hi)}:{opnd(self.lo)} >> {self.amount}"


@dataclass
class OnesSum(Instr):
    """dst = the 32-bit ones-complement sum (end-around carry) of srcs: every carry out of
    bit 31 is added back in at bit 0, so the result is 0 only when every source is 0 (the
    chip's `alu[..., +carry, ...]` chain; RFC 1071 sums 32 bits at a time this way).
    2..16 sources."""

    dst: Reg
    srcs: tuple[Operand, ...]

    def defs(self):
        return (self.dst,)

    def uses(self):
        return self.srcs

    def __str__(self) -> str:
        return f"{self.dst} = onessum {', '.join(map(opnd, self.srcs))}"


@dataclass
class PopCount(Instr):
    """dst = the number of set bits of src (the chip's `pop_count`)."""

    dst: Reg
    src: Operand

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.src,)

    def __str__(self) -> str:
        return f"{self.dst} = popcount {opnd(self.src)}"


@dataclass
class Cmp(Instr):
    """dst = 1 if `a pred b` else 0 (s* predicates compare as two's complement)."""

    dst: Reg
    pred: str
    a: Operand
    b: Operand

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.a, self.b)

    def __str__(self) -> str:
        return f"{self.dst} = cmp {self.pred} {opnd(self.a)}, {opnd(self.b)}"


@dataclass
class Select(Instr):
    """dst = a if cond != 0 else b."""

    dst: Reg
    cond: Operand
    a: Operand
    b: Operand

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.cond, self.a, self.b)

    def __str__(self) -> str:
        return f"{self.dst} = select {opnd(self.cond)}, {opnd(self.a)}, {opnd(self.b)}"


@dataclass
class Copy(Instr):
    dst: Reg
    src: Operand

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.src,)

    def __str__(self) -> str:
        return f"{self.dst} = {opnd(self.src)}"


@dataclass
class HdrRead(Instr):
    """dst = header-window word `word` (packet bytes 4*word .. 4*word+3, big-endian), as
    last written by HdrWrite, else as received."""

    dst: Reg
    word: int

    def defs(self):
        return (self.dst,)

    def __str__(self) -> str:
        return f"{self.dst} = hdr[{self.word}]"


@dataclass
class HdrWrite(Instr):
    """Header-window word `word` = src; the dispatch writes dirty words back to the packet."""

    word: int
    src: Operand

    def uses(self):
        return (self.src,)

    def __str__(self) -> str:
        return f"hdr[{self.word}] = {opnd(self.src)}"


@dataclass
class PktLoad8(Instr):
    """dst = packet byte at `offset` (any offset the MBL code has bounds-checked; for bytes
    outside the header window or at a variable offset)."""

    dst: Reg
    offset: Operand

    def defs(self):
        return (self.dst,)

    def uses(self):
        return (self.offset,)

    def __str__(self) -> str:
        return f"{self.dst} = pkt8[{opnd(self.offset)}]"


@dataclass
class PktStore8(Instr):
    """Packet byte at `offset` = src & 0xFF (outside the window or at a variable offset)."""

    offset: Operand
    src: Operand

    def uses(self):
        return (self.offset, self.src)

    def __str__(self) -> str:
        return f"pkt8[{opnd(self.offset)}] = {opnd(self.src)}"


@dataclass
class MetaRead(Instr):
    """dst = metadata word `word` (npkit.compiler.mbl.types.META_FIELDS, META_VERDICT...)."""

    dst: Reg
    word: int

    def defs(self):
        return (self.dst,)

    def __str__(self) -> str:
        return f"{self.dst} = meta[{self.word}]"


@dataclass
class MetaWrite(Instr):
    word: int
    src: Operand

    def uses(self):
        return (self.src,)

    def __str__(self) -> str:
        return f"meta[{self.word}] = {opnd(self.src)}"


@dataclass
class MemRead(Instr):
    """dsts[i] = memory word `addr + i` of `space` (word addresses as in the lowering:
    MBL memory base word + offset).  1..8 consecutive words, one memory command."""

    dsts: tuple[Reg, ...]
    space: int
    addr: Operand

    def defs(self):
        return self.dsts

    def uses(self):
        return (self.addr,)

    def __str__(self) -> str:
        d = ", ".join(map(str, self.dsts))
        return f"{d} = mem{self.space}[{opnd(self.addr)}]"


@dataclass
class MemWrite(Instr):
    """Memory words `addr + i` of `space` = srcs[i]; 1..8 words, one memory command."""

    space: int
    addr: Operand
    srcs: tuple[Operand, ...]

    def uses(self):
        return (self.addr, *self.srcs)

    def __str__(self) -> str:
        return f"mem{self.space}[{opnd(self.addr)}] = {', '.join(map(opnd, self.srcs))}"


@dataclass
class MemAdd(Instr):
    """Atomic: memory word `addr` of `space` += value; dst (if any) gets the old value."""

    dst: Reg | None
    space: int
    addr: Operand
    value: Operand

    def defs(self):
        return (self.dst,) if self.dst is not None else ()

    def uses(self):
        return (self.addr, self.value)

    def __str__(self) -> str:
        d = f"{self.dst} = " if self.dst is not None else ""
        return f"{d}memadd{self.space}[{opnd(self.addr)}] += {opnd(self.value)}"


@dataclass
class Hash(Instr):
    """The chip's hash unit on one key of `width` 48/64/128 bits: srcs are the key's words
    most significant first (2, 2 or 4 words), dsts the result's words likewise."""

    dsts: tuple[Reg, ...]
    width: int
    srcs: tuple[Operand, ...]

    def defs(self):
        return self.dsts

    def uses(self):
        return self.srcs

    def __str__(self) -> str:
        return (f"{', '.join(map(str, self.dsts))} = hash{self.width} "
                f"{', '.join(map(opnd, self.srcs))}")


# ---- buffers and the receive turn (docs/datapath.md: receive stages on the chip; only
# bodies for link/dispatch/pool.uc, LM_WINDOW_ABI, contain them)
@dataclass
class BufAlloc(Instr):
    """dst, ok = a buffer handle from the input port's freelist (ok 0, dst 0: empty)."""

    dst: Reg
    ok: Reg

    def defs(self):
        return (self.dst, self.ok)

    def __str__(self) -> str:
        return f"{self.dst}, {self.ok} = buf_alloc"


@dataclass
class BufStore(Instr):
    """The mpacket's bytes `start`..len into buffer `handle` at byte `at`: end = at + the
    bytes stored, ok = 1; ok = 0 (nothing stored) when they do not fit the buffer,
    `start` > len or `handle` is not a buffer (the native target's npu.buf.store)."""

    end: Reg
    ok: Reg
    handle: Operand
    at: Operand
    start: Operand

    def defs(self):
        return (self.end, self.ok)

    def uses(self):
        return (self.handle, self.at, self.start)

    def __str__(self) -> str:
        return (f"{self.end}, {self.ok} = buf_store {opnd(self.handle)} @ {opnd(self.at)} "
                f"<- pkt[{opnd(self.start)}..]")


@dataclass
class BufAttach(Instr):
    """The first `length` bytes of buffer `handle` become the packet (its header window,
    metadata `len`, the tail in the buffer); the buffer leaves with the packet."""

    handle: Operand
    length: Operand

    def uses(self):
        return (self.handle, self.length)

    def __str__(self) -> str:
        return f"buf_attach {opnd(self.handle)}, {opnd(self.length)}"


@dataclass
class BufFree(Instr):
    """Buffer `handle` back to the input port's freelist."""

    handle: Operand

    def uses(self):
        return (self.handle,)

    def __str__(self) -> str:
        return f"buf_free {opnd(self.handle)}"


@dataclass
class RxTurnDone(Instr):
    """The receive stage is over: the next mpacket of the port may run its receive stage
    (pool.uc passes its receive turn; the stage's state reads and writes are before it)."""

    def __str__(self) -> str:
        return "rx_turn_done"


@dataclass
class RxTurnTake(Instr):
    """The receive stage's turn starts here (MBL `media.turn_begin()`): what comes before it
    runs outside the port's receive turn (pool.uc takes the REG turn here instead of
    before the body; a path that never takes it passes it at RxTurnDone or the body's exit,
    which take it first)."""

    def __str__(self) -> str:
        return "rx_turn_take"


BUFFER_OPS = (BufAlloc, BufStore, BufAttach, BufFree)


@dataclass
class Jump(Instr):
    target: str

    def __str__(self) -> str:
        return f"jump {self.target}"


@dataclass
class Branch(Instr):
    """if `a pred b` goto then_ else goto else_."""

    pred: str
    a: Operand
    b: Operand
    then_: str
    else_: str

    def uses(self):
        return (self.a, self.b)

    def __str__(self) -> str:
        return (f"if {self.pred} {opnd(self.a)}, {opnd(self.b)} goto {self.then_} "
                f"else {self.else_}")


@dataclass
class Ret(Instr):
    """The packet's processing ends; the verdict is in meta words 8 and 9."""

    def __str__(self) -> str:
        return "ret"


TERMINATORS = (Jump, Branch, Ret)


@dataclass
class Block:
    label: str
    instrs: list[Instr] = field(default_factory=list)
    # loop header: at most this many entries per packet (from MBL `for` bounds and table
    # sizes); None when the block is not a loop header
    max_trips: int | None = None

    @property
    def terminator(self) -> Instr:
        return self.instrs[-1]

    def successors(self) -> tuple[str, ...]:
        t = self.instrs[-1] if self.instrs else None
        if isinstance(t, Jump):
            return (t.target,)
        if isinstance(t, Branch):
            return (t.then_, t.else_)
        return ()


@dataclass
class Function:
    """One compiled entry (a pipeline or a block): blocks[0] is the entry."""

    name: str
    blocks: list[Block]
    window_bytes: int                       # header window: 0 .. 56, a multiple of 8
    next_reg: int = 0                       # ids below this are in use
    loc: Loc | None = None                  # the block/pipeline declaration

    def new_reg(self, hint: str = "") -> Reg:
        self.next_reg += 1
        return Reg(self.next_reg - 1, hint)

    def block(self, label: str) -> Block:
        return next(b for b in self.blocks if b.label == label)

    def __str__(self) -> str:
        lines = [f"function {self.name} (window {self.window_bytes} bytes)"]
        for b in self.blocks:
            trips = f"  ; loop, at most {b.max_trips} trips" if b.max_trips else ""
            lines.append(f"{b.label}:{trips}")
            for i in b.instrs:
                at = f"    ; {i.loc}" if i.loc else ""
                lines.append(f"    {i}{at}")
        return "\n".join(lines) + "\n"
