"""Random WIR functions for the back end's property tests (every register is written
before it is read on every path, so the WIR interpreter accepts them)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from npkit.compiler.me import wir

OUT_META = tuple(range(2, 12))      # meta words the functions may write (not 12..15)
MEM_BASE = 0x40                     # SRAM / scratch word addresses used: 0x40 .. 0x7F
PACKET_BYTES = 96                   # window (<= 56) + 32 + slack
LOCAL_BASE = 300                    # local memory words used: 300 .. 363 (past the harness areas)


def constant(rng: random.Random) -> int:
    kind = rng.randrange(8)
    if kind == 0:
        return rng.randrange(64)
    if kind == 1:
        return rng.randrange(64, 0x10000)
    if kind == 2:
        return rng.randrange(1, 0x10000) << rng.choice((8, 16, 24)) & wir.MASK32
    if kind == 3:
        return ~(rng.randrange(0x10000) << rng.choice((0, 8, 16))) & wir.MASK32
    if kind == 4:
        return rng.choice((0xFF, 0xFF00, 0xFFFF, 0xFFFF0000, 0xFF00FF, 0xFFFFFFFF, 0x80000000))
    if kind == 5:
        return -rng.randrange(1, 64) & wir.MASK32
    return rng.randrange(1 << 32)


@dataclass
class Builder:
    rng: random.Random
    fn: wir.Function
    memory: bool = False
    pool: list[wir.Reg] = field(default_factory=list)
    blocks: list[wir.Block] = field(default_factory=list)
    current: list[wir.Instr] = field(default_factory=list)
    label_n: int = 0
    fresh: list[wir.Reg] = field(default_factory=list)
    label_here: str = "entry"
    outer_trips: int = 1

    def loc(self) -> wir.Loc:
        return wir.Loc("gen.mbl", self.rng.randrange(1, 200), self.rng.randrange(1, 40))

    def operand(self, const_p: float = 0.25) -> wir.Operand:
        if not self.pool or self.rng.random() < const_p:
            return constant(self.rng)
        return self.rng.choice(self.pool)

    def reg(self) -> wir.Reg:
        return self.rng.choice(self.pool)

    def dst(self, fresh_p: float = 0.7) -> wir.Reg:
        if self.pool and self.rng.random() > fresh_p:
            return self.reg()
        r = self.fn.new_reg()
        self.fresh.append(r)       # readable once its instruction is added
        return r

    def add(self, ins: wir.Instr) -> None:
        ins.loc = self.loc()
        self.current.append(ins)
        self.pool.extend(self.fresh)
        self.fresh.clear()

    def end_block(self, term: wir.Instr, next_label: str) -> None:
        self.add(term)
        self.blocks.append(wir.Block(self.label_here, self.current))
        self.current = []
        self.label_here = next_label

    def new_label(self, what: str) -> str:
        self.label_n += 1
        return f"{what}{self.label_n}"

    # ---- instructions
    def straight(self, n: int) -> None:
        for _ in range(n):
            self.one()

    def one(self) -> None:
        rng = self.rng
        kind = rng.choices(("bin", "shift", "cmp", "select", "fsh", "copy", "hdr", "meta",
                            "field", "mem"), (10, 4, 4, 2, 2, 1, 2, 2, 2,
                                              4 if self.memory else 0))[0]
        if kind == "bin":
            op = rng.choice(("add", "sub", "and", "or", "xor", "mul"))
            self.add(wir.Bin(self.dst(), op, self.operand(), self.operand()))
        elif kind == "shift":
            op = rng.choice(("shl", "lshr"))
            if rng.random() < 0.5:
                amount: wir.Operand = rng.randrange(32)
            else:
                amount = self.fn.new_reg()
                self.add(wir.Bin(amount, "and", self.reg() if self.pool else 7,
                                 rng.choice((31, 63, 0xFF))))
            self.add(wir.Bin(self.dst(), op, self.operand(0.1), amount))
        elif kind == "cmp":
            self.add(wir.Cmp(self.dst(), rng.choice(wir.PREDICATES), self.operand(),
                             self.operand()))
        elif kind == "select":
            self.add(wir.Select(self.dst(), self.reg(), self.operand(), self.operand()))
        elif kind == "fsh":
            hi = self.operand(0.1)
            lo = hi if rng.random() < 0.2 else self.operand(0.1)
            self.add(wir.Fsh(self.dst(), hi, lo, rng.randrange(1, 32)))
        elif kind == "copy":
            self.add(wir.Copy(self.dst(), self.operand()))
        elif kind == "hdr":
            word = rng.randrange(self.fn.window_bytes // 4)
            if rng.random() < 0.5:
                self.add(wir.HdrRead(self.dst(), word))
            else:
                self.add(wir.HdrWrite(word, self.operand()))
        elif kind == "meta":
            if rng.random() < 0.5:
                self.add(wir.MetaRead(self.dst(), rng.choice((0, 1, *OUT_META))))
            else:
                self.add(wir.MetaWrite(rng.choice(OUT_META), self.operand()))
        elif kind == "field":
            shifted = self.fn.new_reg()
            self.add(wir.Bin(shifted, "lshr", self.reg(), rng.randrange(1, 32)))
            self.add(wir.Bin(self.dst(), "and", shifted,
                             rng.choice((0xFF, 0xFFFF, 0xFF00, 7, 0x3F, 0xFFF))))
        else:
            self.memory_op()

    def mem_address(self, space: int, words: int) -> wir.Operand:
        base = LOCAL_BASE if space == wir.LOCAL else MEM_BASE
        if self.rng.random() < 0.5 or not self.pool:
            return base + self.rng.randrange(64 - words)
        index = self.fn.new_reg()
        self.add(wir.Bin(index, "and", self.reg(), 31))
        addr = self.fn.new_reg()
        self.add(wir.Bin(addr, "add", index, base))
        return addr

    def memory_op(self) -> None:
        rng = self.rng
        space = rng.choice((wir.SRAM, wir.SCRATCH, wir.SRAM, wir.LOCAL))
        kind = rng.choice(("read", "write", "add", "hash", "pkt"))
        n = rng.randrange(1, 5)
        if kind == "read":
            self.add(wir.MemRead(tuple(self.fn.new_reg() for _ in range(n)), space,
                                 self.mem_address(space, n)))
            self.pool.extend(self.current[-1].defs())
        elif kind == "write":
            self.add(wir.MemWrite(space, self.mem_address(space, n),
                                  tuple(self.operand() for _ in range(n))))
        elif kind == "add":
            addr = self.mem_address(space, 1)
            value = rng.choice((1, self.operand()))
            dst = self.dst() if rng.random() < 0.5 else None
            self.add(wir.MemAdd(dst, space, addr, value))
        elif kind == "pkt":
            self.packet_op()
        else:
            width = rng.choice((48, 64, 128))
            n = 4 if width == 128 else 2
            key = [self.operand() for _ in range(n)]
            if width == 48:
                key[0] = key[0] & 0xFFFF if isinstance(key[0], int) else key[0]
            dsts = tuple(self.fn.new_reg() for _ in range(n))
            if width == 48 and isinstance(key[0], wir.Reg):
                masked = self.fn.new_reg()
                self.add(wir.Bin(masked, "and", key[0], 0xFFFF))
                key[0] = masked
            self.add(wir.Hash(dsts, width, tuple(key)))
            self.pool.extend(dsts)

    def packet_op(self) -> None:
        """A byte past the header window (the packets are PACKET_BYTES long)."""
        window = self.fn.window_bytes
        if self.rng.random() < 0.5 or not self.pool:
            offset: wir.Operand = window + self.rng.randrange(PACKET_BYTES - window)
        else:
            index = self.fn.new_reg()
            self.add(wir.Bin(index, "and", self.reg(), 31))
            offset = self.fn.new_reg()
            self.add(wir.Bin(offset, "add", index, window))
        if self.rng.random() < 0.5:
            self.add(wir.PktLoad8(self.dst(), offset))
        else:
            self.add(wir.PktStore8(offset, self.operand()))

    # ---- control flow
    def diamond(self, depth: int) -> None:
        then, other, join = (self.new_label(x) for x in ("then", "else", "join"))
        saved = list(self.pool)
        self.end_block(wir.Branch(self.rng.choice(wir.PREDICATES), self.reg(), self.operand(),
                                  then, other), then)
        for arm in (then, other):
            self.pool = list(saved)
            self.body(depth)
            self.end_block(wir.Jump(join), other if arm == then else join)
        self.pool = saved

    def loop(self, depth: int) -> None:
        head, out = self.new_label("loop"), self.new_label("exit")
        i = self.fn.new_reg("i")
        trips = self.rng.randrange(1, 5)
        self.add(wir.Copy(i, 0))
        self.end_block(wir.Jump(head), head)
        self.outer_trips *= trips
        self.body(depth)
        self.add(wir.Bin(i, "add", i, 1))
        self.end_block(wir.Branch("ult", i, trips, head, out), out)
        for b in self.blocks:
            if b.label == head:
                b.max_trips = self.outer_trips    # entries per packet, outer loops included
        self.outer_trips //= trips

    def body(self, depth: int) -> None:
        self.straight(self.rng.randrange(1, 6))
        if depth > 0 and self.rng.random() < 0.5:
            (self.diamond if self.rng.random() < 0.6 else self.loop)(depth - 1)
            self.straight(self.rng.randrange(0, 3))

    def finish(self) -> wir.Function:
        for word in OUT_META:
            if self.pool and self.rng.random() < 0.7:
                self.add(wir.MetaWrite(word, self.reg()))
        self.end_block(wir.Ret(), "")
        self.fn.blocks = self.blocks
        return self.fn


def random_function(seed: int, control: bool = False, memory: bool = False,
                    size: int = 20) -> wir.Function:
    rng = random.Random(seed)
    window = rng.choice((8, 16, 24, 32, 40, 48, 56))
    fn = wir.Function(f"f{seed}", [], window, loc=wir.Loc("gen.mbl", 1, 1))
    b = Builder(rng, fn, memory)
    b.label_here = "entry"
    for w in range(min(3, window // 4)):
        b.add(wir.HdrRead(b.dst(1.0), w))
    b.add(wir.MetaRead(b.dst(1.0), 1))
    if control:
        for _ in range(rng.randrange(1, 4)):
            b.body(2)
    else:
        b.straight(size)
    return b.finish()


def many_live(count: int, seed: int = 0) -> wir.Function:
    """`count` values computed first and all combined at the end: all live at once."""
    rng = random.Random(seed)
    fn = wir.Function(f"live{count}", [], 16, loc=wir.Loc("live.mbl", 1, 1))
    x = fn.new_reg("x")
    instrs: list[wir.Instr] = [wir.HdrRead(x, 0, loc=wir.Loc("live.mbl", 2, 3))]
    values = []
    for k in range(count):
        v = fn.new_reg(f"v{k}")
        op = rng.choice(("add", "xor", "sub"))
        instrs.append(wir.Bin(v, op, x, rng.randrange(1 << 32),
                              loc=wir.Loc("live.mbl", 10 + k, 5)))
        values.append(v)
    acc = fn.new_reg("acc")
    instrs.append(wir.Copy(acc, 0))
    for k, v in enumerate(values):
        instrs.append(wir.Bin(acc, rng.choice(("add", "xor")), acc, v))
        # pairs of values meet in one instruction too (bank conflicts)
        if k + 1 < len(values):
            t = fn.new_reg()
            instrs.append(wir.Bin(t, "sub", v, values[(k * 7 + 3) % len(values)]))
            instrs.append(wir.Bin(acc, "xor", acc, t))
    instrs += [wir.MetaWrite(3, acc), wir.Ret()]
    fn.blocks = [wir.Block("entry", instrs)]
    return fn
