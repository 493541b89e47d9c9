"""Instruction selection: WIR -> machine IR on virtual registers.

One pass over each WIR block.  Constants 0..63 fold into operands, others are loaded with
`immed`/`immed32` right before their use.  Single-use constant shifts fold into the B
operand of the ALU instruction that consumes them (`alu_shf`); `(x >> s) & bytes` becomes
`ld_field_w_clr`; a compare feeding a branch becomes `alu[--, a, -, b]` plus the right
condition; a single-bit test against 0 becomes `br_bset`/`br_bclr`.

Memory, hash and packet commands are issued with `sig_done` and their results collected
(one `ctx_arb` for all of them, then the copies out of the transfer registers) only just
before the first instruction that needs one, at the latest before the block's terminator:
the latency of independent commands overlaps (latency hiding, docs/me-backend.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .. import wir
from ..abi import LABEL_PREFIX, META_DRAM_ADDR, BodyABI
from ..fold import compare, evaluate_bin, funnel_shift, pop_count
from ..wir import MASK32, Loc
from . import buffers
from .bytetests import ByteField, byte_test, fixed_operands
from .errors import unsupported
from .hdrwrite import plan_header_writes
from .mir import MBind, MBlock, MFunction, MInstr, MOpnd, VReg
from .options import DEFAULT_OPTIONS, BackOptions
from .prefetch import Collect, Drain, Prefetch, Slot
from .salvage import resolve_binds

IMM_MAX = 63
XFER_REGS = 16
RET_LABEL = LABEL_PREFIX + "ret"
UNSIGNED_BRANCH = {"eq": "beq", "ne": "bne", "ult": "bcc", "uge": "bcs", "ugt": "bhi",
                   "ule": "bls", "slt": "blt", "sge": "bge", "sgt": "bgt", "sle": "ble"}
NEGATED = {"eq": "ne", "ne": "eq", "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt",
           "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt"}
ALU_OP = {"add": "+", "sub": "-", "and": "AND", "or": "OR", "xor": "XOR"}
COMMUTATIVE = ("add", "and", "or", "xor", "mul")
# signed compares with 0 / -1 that the sign bit alone decides (N after alu B)
SIGN_TESTS = {("slt", 0): "bmi", ("sge", 0): "bpl", ("sgt", MASK32): "bpl",
              ("sle", MASK32): "bmi"}


def immed_fits(value: int) -> bool:
    """One `immed` loads it: v16 << 0/8/16/24, or the complement of one."""
    for v in (value, ~value & MASK32):
        for shift in (0, 8, 16, 24):
            if v & ~(0xFFFF << shift) & MASK32 == 0:
                return True
    return False


def byte_mask(value: int) -> int | None:
    """The ld_field byte mask (bit i = byte i) when `value` is whole bytes of 0xFF."""
    mask = 0
    for i in range(4):
        byte = (value >> (8 * i)) & 0xFF
        if byte == 0xFF:
            mask |= 1 << i
        elif byte:
            return None
    return mask or None


@dataclass
class Shifted:
    """A B operand with the shifter applied: `x <<k` / `x >>k` (folded single-use shift)."""

    src: wir.Operand
    direction: str
    amount: int


@dataclass
class Pending:
    """A unit command issued with sig_done whose results are not collected yet."""

    signal: int
    xfer: range                       # transfer registers it uses ($ or $$ numbers)
    copies: list[tuple[VReg, str]]    # (vreg, "$k") to copy after the wait


@dataclass
class BlockState:
    instrs: list[MInstr] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    next_xfer: int = 0


class Selector(buffers.BufferSelection):
    """Selects one function.  `select()` returns the machine function."""

    def __init__(self, fn: wir.Function, abi: BodyABI,
                 slots: dict[int, Slot] | None = None,
                 options: BackOptions = DEFAULT_OPTIONS,
                 byte_tests: dict[int, ByteField] | None = None) -> None:
        self.fn = fn
        self.abi = abi
        self.options = options
        # early reads (prefetch.py) keep their signals and transfer registers throughout
        self.slots = slots or {}
        self.slot_signals = {s.signal for s in self.slots.values()}
        self.signals_used: set[int] = set()
        # buffer.attach's window reads that complete after the receive turn (buffers.py)
        self.deferred_attaches = buffers.deferrable_attaches(fn)
        self.attach_signal = self.reserve_attach_signal()
        # the receive stage holds its port's turn: it waits by polling its signals, so the
        # turn does not also wait for the ME's other contexts to swap out (buffers.py)
        self.turn_blocks = buffers.blocks_in_turn(fn)
        self.turn_entered = buffers.blocks_entered_in_turn(fn)
        self.spinning = False
        self.xfer_limit = abi.xfer_regs - sum(len(s.xfer) for s in self.slots.values())
        # the receive stage's scratch writes awaited after its turn (buffers.py)
        self.turn_write_blocks = buffers.turn_write_blocks(fn, self.turn_blocks)
        self.turn_plan: dict[str, tuple[frozenset[int], frozenset[int]]] = {}
        self.turn_xfer: dict[int, int] = {}
        self.turn_pending: frozenset[int] = frozenset()
        self.turn_write_slots = self.reserve_turn_writes()
        self.header_in_lm = abi.header_lm_word is not None
        self.vregs: dict[int, VReg] = {}
        self.next_vreg = 0
        self.labels = self._block_labels()
        self.def_loc: dict[VReg, Loc | None] = {}
        self.pending_dbg: tuple[MBind, ...] = ()   # variable bindings for the next instruction
        self.label_count = 0
        self.counts_def, self.counts_use = self._count_defs_uses()
        self.hdr_written = sorted({i.word for b in fn.blocks for i in b.instrs
                                   if isinstance(i, wir.HdrWrite)})
        self.meta_written = {i.word for b in fn.blocks for i in b.instrs
                             if isinstance(i, wir.MetaWrite)}
        self.plan = plan_header_writes(fn, in_place=self.header_in_lm)
        self.fixed = fixed_operands(fn, self.plan, abi)
        self.byte_tests = byte_tests or {}      # bytetests.py, run before compares.py
        self.byte_values = self._byte_values()
        self.halfword_tests = self._halfword_tests()
        self.hdr_vregs = {k: self._new(f"hdr{k}") for k in self.hdr_written
                          if k not in self.plan.direct}
        self.state = BlockState()
        self.loc: Loc | None = None
        self.lm_base: VReg | None = None
        self.index = 0                  # of the WIR instruction being selected
        self.current_label = ""         # of the WIR block being selected
        self.folds = Folds()            # of the WIR block being selected

    # ------------------------------------------------------------------ analysis
    def _block_labels(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for b in self.fn.blocks:
            name = LABEL_PREFIX + re.sub(r"\W", "_", b.label)
            while name in out.values() or name == RET_LABEL:
                name += "_"
            out[b.label] = name
        return out

    def _count_defs_uses(self) -> tuple[dict[int, int], dict[int, int]]:
        defs: dict[int, int] = {}
        uses: dict[int, int] = {}
        for b in self.fn.blocks:
            for i in b.instrs:
                for d in i.defs():
                    defs[d.id] = defs.get(d.id, 0) + 1
                for u in i.uses():
                    if isinstance(u, wir.Reg):
                        uses[u.id] = uses.get(u.id, 0) + 1
        return defs, uses

    def _byte_values(self) -> set[int]:
        """Registers defined once, by an instruction whose result is below 256."""
        out: set[int] = set()
        for b in self.fn.blocks:
            for i in b.instrs:
                if isinstance(i, wir.Bin) and self.counts_def[i.dst.id] == 1 and \
                        isinstance(i.b, int) and (i.op == "and" and i.b <= 0xFF
                                                  or i.op == "lshr" and 24 <= i.b < 32):
                    out.add(i.dst.id)
        return out

    def _halfword_tests(self) -> dict[int, wir.Reg | int]:
        """Registers `w >> 16` (w set once) read only by ==/!= tests against constants: the
        tests compare w's two high bytes (`br=byte`), the shift is never computed."""
        users: dict[int, list[wir.Instr]] = {}
        shifts: dict[int, wir.Reg] = {}
        for b in self.fn.blocks:
            for i in b.instrs:
                for u in i.uses():
                    if isinstance(u, wir.Reg):
                        users.setdefault(u.id, []).append(i)
                if isinstance(i, wir.Bin) and i.op == "lshr" and i.b == 16 and \
                        isinstance(i.a, wir.Reg) and self.counts_def[i.dst.id] == 1 and \
                        self.counts_def.get(i.a.id) == 1 and i.a != i.dst:
                    shifts[i.dst.id] = i.a
        return {r: w for r, w in shifts.items() if users.get(r) and all(
            isinstance(u, wir.Branch) and u.pred in ("eq", "ne") and isinstance(u.b, int)
            and u.b <= 0xFFFF and isinstance(u.a, wir.Reg) and u.a.id == r
            for u in users[r])}

    # ------------------------------------------------------------------ helpers
    def _new(self, hint: str = "", gpr_only: bool = False) -> VReg:
        v = VReg(self.next_vreg, hint, gpr_only)
        self.next_vreg += 1
        return v

    def vreg(self, r: wir.Reg) -> VReg:
        if r.id not in self.vregs:
            self.vregs[r.id] = self._new(r.hint)
        return self.vregs[r.id]

    def _bind(self, b: wir.VarBind) -> MBind:
        """A variable binding with isel's operands: the fixed operand read in place (`$$3`,
        `*l$index1[5]`), else the WIR register until `_resolve_binds` (making VRegs here
        would renumber them, and the allocator's order depends on the numbers)."""
        if b.args is None:
            return MBind(b.var, None)
        return MBind(b.var, tuple(tuple(
            o if isinstance(o, int) else self.fixed.get(o.id) or o for o in arg)  # type: ignore[misc]
            for arg in b.args), b.expr)

    def _resolve_binds(self, blocks: list[MBlock]) -> None:
        """WIR registers in bindings -> their VRegs, or rebuilt from others (salvage.py)."""
        resolve_binds(self.fn, self.vregs, self.fixed, blocks)

    def label(self, what: str) -> str:
        """A fresh label inside a macro (never one of the block labels)."""
        blocks = set(self.labels.values())
        while True:
            self.label_count += 1
            name = f"{LABEL_PREFIX}{what}{self.label_count}"
            if name not in blocks:
                return name

    def emit(self, ins: MInstr) -> None:
        if ins.loc is None:
            ins.loc = self.loc
        if self.pending_dbg:
            ins.dbg, self.pending_dbg = self.pending_dbg + ins.dbg, ()
        for v in ins.vdefs():
            self.def_loc.setdefault(v, ins.loc)
        self.state.instrs.append(ins)

    def op(self, template: str, ops: list[MOpnd], defs: tuple[int, ...] = (),
           uses: tuple[int, ...] = (), pairs: tuple[tuple[int, int], ...] = (),
           **kw: object) -> MInstr:
        late = [ops[i] for i in kw.get("late_uses", ())]  # type: ignore[attr-defined]
        clash = [i for i in defs if isinstance(ops[i], VReg) and any(ops[i] is u for u in late)]
        if clash:       # a macro writes its result before its last read: via a temporary
            ops = list(ops)
            final = ops[clash[0]]
            ops[clash[0]] = temp = self._new("t")
            ins = self.op(template, ops, defs, uses, pairs, **kw)
            self.move(final, temp)
            return ins
        ins = MInstr(template, ops, defs, uses, pairs, **kw)  # type: ignore[arg-type]
        self.before(ins)
        self.emit(ins)
        return ins

    def before(self, ins: MInstr) -> None:
        """Collect pending results this instruction reads or overwrites."""
        if not self.state.pending:
            return
        touched = set(ins.vuses()) | set(ins.vdefs())
        waiting = {v for p in self.state.pending for v, _ in p.copies}
        if touched & waiting:
            self.flush()

    def value(self, o: wir.Operand) -> MOpnd:
        """An operand as an instruction source: immediate, fixed operand or register
        (constants above 63 are loaded into a fresh register first)."""
        if isinstance(o, wir.Reg):
            return self.fixed.get(o.id) or self.vreg(o)
        if o <= IMM_MAX:
            return str(o)
        t = self._new("k")
        self.load_const(t, o)
        return t

    def reg_value(self, o: wir.Operand) -> MOpnd:
        """Like `value`, but never an immediate."""
        if isinstance(o, int):
            t = self._new("k")
            self.load_const(t, o)
            return t
        return self.value(o)

    def load_const(self, dst: MOpnd, value: int) -> None:
        value &= MASK32
        if value <= IMM_MAX:
            self.op("alu[{0}, --, B, " + str(value) + "]", [dst], defs=(0,))
        elif immed_fits(value):
            self.op("immed[{0}, " + hex(value) + "]", [dst], defs=(0,))
        else:
            self.op(f"immed_w0[{{0}}, {value & 0xFFFF:#x}]\nimmed_w1[{{0}}, {value >> 16:#x}]",
                    [dst], defs=(0,))     # the two halves together define the word

    def move(self, dst: MOpnd, src: wir.Operand | MOpnd) -> None:
        if isinstance(src, int):
            self.load_const(dst, src)
            return
        s = self.value(src) if isinstance(src, wir.Reg) else src
        if s is dst:
            return
        self.op("alu[{0}, --, B, {1}]", [dst, s], defs=(0,), uses=(1,), copy=True,
                sets_cc=True)

    def distinct(self, a: MOpnd, b: MOpnd) -> MOpnd:
        """b, copied when it is the same register as a (a pair needs two banks)."""
        if isinstance(a, VReg) and a is b:
            t = self._new("dup")
            self.op("alu[{0}, --, B, {1}]", [t, b], defs=(0,), uses=(1,))
            return t
        return b

    def source(self, o: wir.Operand | MOpnd) -> MOpnd:
        """A WIR operand or an already selected machine operand as a source."""
        return o if isinstance(o, VReg | str) else self.value(o)

    def alu(self, dst: MOpnd, a: wir.Operand | MOpnd | None, op: str,
            b: wir.Operand | MOpnd | Shifted) -> None:
        """alu / alu_shf with the bank rule recorded."""
        shift = ""
        if isinstance(b, Shifted):
            shift = f", {'<<' if b.direction == 'shl' else '>>'}{b.amount}"
            bop: MOpnd = self.reg_value(b.src)
        else:
            bop = self.source(b)
        aop: MOpnd = "--" if a is None else self.source(a)
        bop = self.distinct(aop, bop)
        mnem = "alu_shf" if shift else "alu"
        self.op(f"{mnem}[{{0}}, {{1}}, {op}, {{2}}{shift}]", [dst, aop, bop], defs=(0,),
                uses=(1, 2), pairs=((1, 2),), sets_cc=True)

    # ------------------------------------------------------------------ pending commands
    def xfer_range(self, count: int) -> range:
        if self.state.next_xfer + count > self.xfer_limit:
            self.flush()
        start = self.state.next_xfer
        self.state.next_xfer += count
        return range(start, start + count)

    def signal(self) -> int:
        busy = {p.signal for p in self.state.pending} | self.slot_signals
        free = [s for s in self.abi.signals if s not in busy]
        if not free:
            self.flush()
            free = [s for s in self.abi.signals if s not in self.slot_signals]
        self.signals_used.add(free[0])
        return free[0]

    def flush(self) -> None:
        """Wait for every pending command, then copy their results out."""
        pend, self.state.pending = self.state.pending, []
        self.state.next_xfer = 0
        if not pend:
            return
        if self.spinning:
            self.emit(MInstr("\n".join(line for p in pend for line in self.wait_lines(p.signal)),
                             []))
        else:
            sigs = ", ".join(str(p.signal) for p in pend)
            self.emit(MInstr(f"ctx_arb[{sigs}]", [], kind="wait",
                             signals=tuple(p.signal for p in pend)))
        for p in pend:
            for v, x in p.copies:
                self.emit(MInstr("alu[{0}, --, B, {1}]", [v, x], (0,), (1,)))

    def wait_lines(self, signal: int | str) -> list[str]:
        """Waiting for one signal: `ctx_arb`, or in the receive turn a poll that keeps the
        context running (br_!signal consumes the signal when it sees it)."""
        if not self.spinning:
            return [f"ctx_arb[{signal}]"]
        poll = self.label("poll")
        return [f"{poll}#:", f"br_!signal[{signal}, {poll}#]"]

    def address(self, space: int, addr: wir.Operand) -> tuple[MOpnd, MOpnd]:
        """The (a, b) address operands of a unit command for a WIR word address."""
        if isinstance(addr, int):
            byte = (4 * addr) & MASK32
            if byte <= IMM_MAX:
                return "0", str(byte)
            return self.reg_value(byte), "0"
        plan = self.folds.addresses.get(addr.id)
        if plan is not None:
            t = self._new("addr")
            if plan.right < 0:
                self._mul(t, plan.x, 4 * plan.scale & MASK32)
            elif plan.right == 0:
                self.alu(t, None, "B", Shifted(plan.x, "shl", plan.left))
            else:
                u = self._new("fld")
                self.alu(u, None, "B", Shifted(plan.x, "shl", plan.left))
                self.op(f"alu_shf[{{0}}, --, B, {{1}}, >>{plan.right}]", [t, u], defs=(0,),
                        uses=(1,), sets_cc=True)
            return t, self.value(4 * plan.base & MASK32) if plan.base else "0"
        t = self._new("addr")
        self.alu(t, None, "B", Shifted(addr, "shl", 2))
        return t, "0"

    # ------------------------------------------------------------------ selection
    def select(self) -> MFunction:
        blocks = [self._prologue()]
        for index, b in enumerate(self.fn.blocks):
            following = (self.fn.blocks[index + 1].label if index + 1 < len(self.fn.blocks)
                         else None)
            blocks.append(self._block(b, following))
        self._resolve_binds(blocks)
        return MFunction(self.fn.name, blocks, self.fn.window_bytes,
                         tuple(sorted(self.signals_used)))

    def _prologue(self) -> MBlock:
        self.state = BlockState()
        self.loc = self.fn.loc
        if self._uses_local_memory():
            self.lm_base = self._new("lm_base", gpr_only=True)
            self.emit(MInstr("local_csr_rd[ACTIVE_LM_ADDR_0]\nimmed[{0}, 0]", [self.lm_base],
                             (0,)))
        for k, v in self.hdr_vregs.items():
            self.move(v, f"$${k}")
        if self.turn_blocks and not buffers.has_turn_take(self.fn):
            # a receive stage without media.turn_begin(): its turn starts at the entry
            self.op("\n".join(self.take_turn_lines()), [])
        first = self.labels[self.fn.blocks[0].label]
        return MBlock("body_entry#", self.state.instrs, (first,), "")

    def _uses_local_memory(self) -> bool:
        return any(isinstance(i, wir.MemRead | wir.MemWrite | wir.MemAdd)
                   and i.space == wir.LOCAL for b in self.fn.blocks for i in b.instrs)

    def _write_back(self, written: frozenset[int]) -> None:
        """At a return: the quadwords covering the header words some path here wrote go
        back to DRAM (direct words are in $$ out already when written; the others are
        copied, unchanged words from $$ in)."""
        if not written or self.header_in_lm:   # local memory: the dispatch sends it
            return
        lo, hi = min(written) // 2 * 2, max(written) // 2 * 2 + 1
        for j in range(lo, hi + 1):
            if j in self.hdr_vregs:
                self.move(f"$${j}", self.hdr_vregs[j])
            elif j not in written:
                self.move(f"$${j}", f"$${j}")
        # waited for together with the commands still in flight (e.g. a counter's incr)
        sig = self.signal()
        command = (f"dram[write, $${lo}, *l$index1[{META_DRAM_ADDR}], {4 * lo}, "
                   f"{(hi - lo + 1) // 2}]")
        if not self.state.pending:
            self.emit(MInstr(f"{command}, ctx_swap[{sig}]", [], kind="mem"))
            return
        self.emit(MInstr(f"{command}, sig_done[{sig}]", [], kind="mem", signals=(sig,)))
        self.state.pending.append(Pending(sig, range(0), []))
        self.flush()

    def _block(self, b: wir.Block, following: str | None) -> MBlock:
        self.state = BlockState()
        self.current_label = b.label
        self.spinning = b.label in self.turn_entered
        self.start_turn_writes(b.label)
        folds = self.folds = self._shift_folds(b)
        for index, ins in enumerate(b.instrs):
            self.loc, self.index = ins.loc, index
            self.pending_dbg += tuple(self._bind(x) for x in ins.dbg)
            if index in folds.skip:
                continue
            if isinstance(ins, wir.Jump | wir.Branch):
                self.flush()
                self.leave_turn_block(ins)
            self._instr(ins, folds, following)
        self.flush()
        if self.pending_dbg and self.state.instrs:
            self.state.instrs[-1].dbg += self.pending_dbg
        self.pending_dbg = ()
        succs = tuple(self.labels[s] for s in b.successors())
        if isinstance(b.instrs[-1], wir.Ret):
            succs = ()
        return MBlock(self.labels[b.label], self.state.instrs, succs, b.label)

    def _shift_folds(self, b: wir.Block) -> Folds:
        return find_folds(b, self.counts_def, self.counts_use, self.options.field_merges)

    def _instr(self, ins: wir.Instr, folds: Folds, following: str | None) -> None:
        handler = getattr(self, "_sel_" + type(ins).__name__, None)
        if handler is None:
            raise unsupported(type(ins).__name__, ins.loc)
        # results still in flight that this instruction reads or overwrites: collect them
        # first (before it claims transfer registers or signals of its own)
        touched = {self.vregs[r.id] for r in (*ins.defs(), *ins.uses())
                   if isinstance(r, wir.Reg) and r.id in self.vregs}
        if touched & {v for p in self.state.pending for v, _ in p.copies}:
            self.flush()
        handler(ins, folds, following)

    # --- data
    def _dst(self, r: wir.Reg) -> VReg:
        return self.vreg(r)

    def _sel_Copy(self, ins: wir.Copy, folds: Folds, _: str | None) -> None:
        self.move(self._dst(ins.dst), ins.src)

    def _sel_HdrRead(self, ins: wir.HdrRead, folds: Folds, _: str | None) -> None:
        if ins.dst.id in self.fixed:
            return
        src = self.hdr_vregs.get(ins.word, self.abi.header_word(ins.word))
        self.move(self._dst(ins.dst), src)

    def _sel_HdrWrite(self, ins: wir.HdrWrite, folds: Folds, _: str | None) -> None:
        word = self.abi.header_word(ins.word)
        if ins.word not in self.plan.direct:
            self.move(self.hdr_vregs[ins.word], ins.src)
        elif isinstance(ins.src, int) and ins.src > IMM_MAX:
            self.move(word, self.reg_value(ins.src))
        else:           # no read of the word follows (or it is in local memory): in place
            self.move(word, ins.src)

    def _sel_MetaRead(self, ins: wir.MetaRead, folds: Folds, _: str | None) -> None:
        if ins.dst.id not in self.fixed:
            self.move(self._dst(ins.dst), f"*l$index1[{ins.word}]")

    def _sel_MetaWrite(self, ins: wir.MetaWrite, folds: Folds, _: str | None) -> None:
        self.move(f"*l$index1[{ins.word}]", ins.src)

    def _operand_b(self, o: wir.Operand, folds: Folds) -> wir.Operand | Shifted:
        if isinstance(o, wir.Reg) and o.id in folds.shifted:
            return folds.shifted[o.id]
        return o

    def _sel_Bin(self, ins: wir.Bin, folds: Folds, _: str | None) -> None:
        if ins.dst.id in self.halfword_tests or ins.dst.id in self.byte_tests:
            return                      # its tests read the word's bytes
        d = self._dst(ins.dst)
        a, b, op = ins.a, ins.b, ins.op
        if isinstance(a, int) and isinstance(b, int):
            self.load_const(d, evaluate_bin(op, a, b))
            return
        if self.index in folds.merges:
            base, src, mask = folds.merges[self.index]
            self.move(d, base)
            self.op(f"ld_field[{{0}}, {byte_mask(mask):04b}, {{1}}]", [d, self.reg_value(src)],
                    defs=(0,), uses=(0, 1), pairs=((0, 1),))
            return
        if self.index in folds.byte_fields:
            x, shift, mask = folds.byte_fields[self.index]
            self.op(f"ld_field_w_clr[{{0}}, {mask:04b}, {{1}}{shift}]",
                    [d, self.reg_value(x)], defs=(0,), uses=(1,))
            return
        if op in COMMUTATIVE:
            a_shifted = isinstance(a, wir.Reg) and a.id in folds.shifted
            b_shifted = isinstance(b, wir.Reg) and b.id in folds.shifted
            if a_shifted or (isinstance(a, int) and not b_shifted):
                a, b = b, a         # the shifted operand or the constant goes to B
        if op in ("shl", "lshr"):
            self._shift(d, op, a, b)
        elif op == "mul":
            self._mul(d, a, b)
        else:
            self._logic_arith(d, op, a, self._operand_b(b, folds))

    def _logic_arith(self, d: VReg, op: str, a: wir.Operand, b: wir.Operand | Shifted) -> None:
        if isinstance(b, int) and b > IMM_MAX:
            neg = -b & MASK32
            inv = ~b & MASK32
            if op in ("add", "sub") and neg <= IMM_MAX:
                op, b = ("sub" if op == "add" else "add"), neg
            elif op == "and" and inv <= IMM_MAX:
                self.alu(d, a, "AND~", inv)
                return
            elif op == "and" and byte_mask(b) is not None:
                self.op(f"ld_field_w_clr[{{0}}, {byte_mask(b):04b}, {{1}}]",
                        [d, self.reg_value(a)], defs=(0,), uses=(1,))
                return
            elif op == "xor" and b == MASK32:
                self.alu(d, None, "~B", a)
                return
            elif self.options.shifted_constants and self._shifted_constant(d, op, a, b):
                return
        if isinstance(a, int) and op == "sub":
            if isinstance(b, Shifted):
                self.alu(d, self.reg_value(a), "-", b)
            else:
                self.alu(d, b, "B-A", a)        # a - b
            return
        self.alu(d, a, ALU_OP[op], b)

    def _shifted_constant(self, d: VReg, op: str, a: wir.Operand, b: int) -> bool:
        """`a op b` with b (or, for +/-, -b) = `k << s`, k <= 63, as one `alu_shf` with the
        shifted immediate (`x + 0xFFFFFF00` = `alu_shf[d, x, -, 1, <<8]`): no `immed`."""
        if isinstance(a, int) or op not in ("add", "sub", "and", "or", "xor"):
            return False
        forms = [(op, b)] + ([("sub" if op == "add" else "add", -b & MASK32)]
                             if op in ("add", "sub") else [])
        for form, c in forms:
            s = (c & -c).bit_length() - 1
            if c and c >> s <= IMM_MAX:
                self.op(f"alu_shf[{{0}}, {{1}}, {ALU_OP[form]}, {c >> s}, <<{s}]",
                        [d, self.value(a)], defs=(0,), uses=(1,), sets_cc=True)
                return True
        return False

    def _shift(self, d: VReg, op: str, x: wir.Operand, amount: wir.Operand) -> None:
        if isinstance(amount, int):
            if amount >= 32:
                self.load_const(d, 0)
            elif amount == 0:
                self.move(d, x)
            else:
                self.alu(d, None, "B", Shifted(x, op, amount))
            return
        n = self.reg_value(amount)
        src = self.reg_value(x)
        done = self.label("sh")
        if op == "lshr":
            # dbl_shf takes its amount from the previous ALU result's low 5 bits
            self.op("alu[--, --, B, {2}]\ndbl_shf[{0}, 0, {1}, >>indirect]\n"
                    f"alu[--, {{2}}, -, 32]\nbcc[{done}#]\nalu[{{0}}, --, B, 0]\n{done}#:",
                    [d, src, n], defs=(0,), uses=(1, 2), late_uses=(2,), sets_cc=True)
            return
        # x << n = low word of (x >> 1 : x << 31) >> (31 - n), for n = 0..31
        hi, lo = self._new("shi"), self._new("slo")
        self.op("alu_shf[{0}, --, B, {2}, >>1]\nalu_shf[{1}, --, B, {2}, <<31]",
                [hi, lo, src], defs=(0, 1), uses=(2,), late_uses=(2,))
        self.op("alu[--, 31, -, {3}]\ndbl_shf[{0}, {1}, {2}, >>indirect]\n"
                f"alu[--, {{3}}, -, 32]\nbcc[{done}#]\nalu[{{0}}, --, B, 0]\n{done}#:",
                [d, hi, lo, n], defs=(0,), uses=(1, 2, 3), pairs=((1, 2),), late_uses=(3,),
                sets_cc=True)

    def _mul(self, d: VReg, a: wir.Operand, b: wir.Operand) -> None:
        if isinstance(b, int) and b & (b - 1) == 0:
            if b == 0:
                self.load_const(d, 0)
            else:
                self._shift(d, "shl", a, b.bit_length() - 1)
            return
        if isinstance(b, int) and bin(b).count("1") == 2 and isinstance(a, wir.Reg):
            # x * (2^hi + 2^lo) = (x << hi) + (x << lo): two ALU instructions
            low = (b & -b).bit_length() - 1
            high = b.bit_length() - 1
            t = self._new("m")
            self._shift(t, "shl", a, high)
            self.alu(d, t, "+", Shifted(a, "shl", low) if low else a)
            return
        x, y = self.value(a), self.value(b)
        y = self.distinct(x, y)
        steps = "\n".join(f"mul_step[{{1}}, {{2}}], 32x32_{s}"
                          for s in ("start", "step1", "step2", "step3", "step4"))
        self.op(steps + "\nmul_step[{0}, --], 32x32_last", [d, x, y], defs=(0,), uses=(1, 2),
                pairs=((1, 2),))

    def _sel_Fsh(self, ins: wir.Fsh, folds: Folds, _: str | None) -> None:
        d = self._dst(ins.dst)
        if isinstance(ins.hi, int) and isinstance(ins.lo, int):
            self.load_const(d, funnel_shift(ins.hi, ins.lo, ins.amount))
            return
        if isinstance(ins.hi, wir.Reg) and ins.hi == ins.lo:    # a rotation
            self.op(f"alu_shf[{{0}}, --, B, {{1}}, >>rot{ins.amount}]", [d, self.value(ins.lo)],
                    defs=(0,), uses=(1,), sets_cc=True)
            return
        hi, lo = self.value(ins.hi), self.value(ins.lo)
        lo = self.distinct(hi, lo)
        self.op(f"dbl_shf[{{0}}, {{1}}, {{2}}, >>{ins.amount}]", [d, hi, lo], defs=(0,),
                uses=(1, 2), pairs=((1, 2),))

    def _sel_PopCount(self, ins: wir.PopCount, folds: Folds, _: str | None) -> None:
        d = self._dst(ins.dst)
        if isinstance(ins.src, int):
            self.load_const(d, pop_count(ins.src))
            return
        self.op("pop_count[{0}, {1}]", [d, self.value(ins.src)], defs=(0,), uses=(1,))

    def _sel_OnesSum(self, ins: wir.OnesSum, folds: Folds, _: str | None) -> None:
        """A `+carry` chain, then the last carry added back twice (the second catches the
        carry a sum of 0xFFFFFFFF + 1 makes); one macro so nothing clobbers the carry."""
        d = self._dst(ins.dst)
        srcs = [self.value(s) for s in ins.srcs]
        srcs[1] = self.distinct(srcs[0], srcs[1])
        lines = ["alu[{0}, {1}, +, {2}]"]
        lines += [f"alu[{{0}}, {{0}}, +carry, {{{k}}}]" for k in range(3, len(srcs) + 1)]
        lines += ["alu[{0}, {0}, +carry, 0]"] * 2
        late = tuple(range(3, len(srcs) + 1))
        self.op("\n".join(lines), [d, *srcs], defs=(0,), uses=(1, 2, *late),
                pairs=((1, 2), *((0, k) for k in late)), late_uses=late, sets_cc=True)

    def _compare(self, pred: str, a: wir.Operand, b: wir.Operand | Shifted) -> str:
        """Set the condition codes for `a pred b`; returns the branch mnemonic."""
        if b == 0 and pred in ("eq", "ne"):
            self.alu("--", None, "B", a)
            return UNSIGNED_BRANCH[pred]
        sign = SIGN_TESTS.get((pred, b)) if isinstance(b, int) else None
        if sign is not None:                        # x < 0, x >= 0, x > -1, x <= -1
            self.alu("--", None, "B", a)
            return sign
        if pred in ("eq", "ne") and isinstance(b, int) and b > IMM_MAX and \
                -b & MASK32 <= IMM_MAX:
            self.alu("--", a, "+", -b & MASK32)     # x == -k  <=>  x + k == 0
            return UNSIGNED_BRANCH[pred]
        carry = self._carry_compare(pred, a, b) if isinstance(b, int) else None
        if carry is not None:
            return carry
        if isinstance(a, int) and a > IMM_MAX and isinstance(b, wir.Reg):
            mirrored = {"ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule", "slt": "sgt",
                        "sgt": "slt", "sle": "sge", "sge": "sle"}
            a, b, pred = b, a, mirrored.get(pred, pred)
        self.alu("--", a, "-", b)
        return UNSIGNED_BRANCH[pred]

    def _carry_compare(self, pred: str, a: wir.Operand, c: int) -> str | None:
        """`x >=u C` as the carry of `x + (2^32 - C)` when 2^32 - C is `k << s`, k <= 63
        (`alu_shf[--, x, +, k, <<s]`: no constant register).  The branch, or None."""
        if pred in ("ule", "ugt"):                  # x <= C  <=>  x < C + 1
            pred, c = ("ult" if pred == "ule" else "uge"), c + 1
        if pred not in ("ult", "uge") or not IMM_MAX < c <= MASK32 or isinstance(a, int):
            return None
        n = (1 << 32) - c
        s = (n & -n).bit_length() - 1
        if n >> s > IMM_MAX:
            return None
        shifted = f"{n >> s}, <<{s}" if s else str(n)
        self.op(f"alu_shf[--, {{0}}, +, {shifted}]" if s else f"alu[--, {{0}}, +, {n}]",
                [self.value(a)], uses=(0,), sets_cc=True)
        return "bcs" if pred == "uge" else "bcc"

    def _sel_Cmp(self, ins: wir.Cmp, folds: Folds, _: str | None) -> None:
        d = self._dst(ins.dst)
        a, b, pred = ins.a, ins.b, ins.pred
        if isinstance(a, int) and isinstance(b, int):
            self.load_const(d, int(compare(pred, a, b)))
            return
        carry = "alu[{0}, 0, +carry, 0]"
        if pred in ("uge", "ule", "ult", "ugt"):
            if pred in ("ule", "ugt"):
                a, b = b, a
            self._flag_then(d, a, "-", b, carry + ("\nalu[{0}, {0}, XOR, 1]"
                                                   if pred in ("ult", "ugt") else ""))
            return
        if pred in ("eq", "ne") and b == 0:
            self._flag_then(d, 0 if pred == "eq" else a, "-", a if pred == "eq" else 1, carry)
            return
        if pred in ("eq", "ne"):
            t = self._new("x")
            self._logic_arith(t, "sub", a, b)       # 0 <=> equal
            self._flag_then(d, 0 if pred == "eq" else t, "-", t if pred == "eq" else 1, carry)
            return
        x, y = self.value(a), self.value(b)
        y = self.distinct(x, y)
        done = self.label("c")
        self.op(f"alu[--, {{1}}, -, {{2}}]\n{UNSIGNED_BRANCH[pred]}[{done}#], defer[1]\n"
                f"alu[{{0}}, --, B, 1]\nalu[{{0}}, --, B, 0]\n{done}#:",
                [d, x, y], defs=(0,), uses=(1, 2), pairs=((1, 2),), sets_cc=True)

    def _flag_then(self, d: VReg, a: wir.Operand | MOpnd, op: str, b: wir.Operand | MOpnd,
                   then: str) -> None:
        """`alu[--, a, op, b]` then `then` (which reads the carry), kept together."""
        x, y = self.source(a), self.source(b)
        y = self.distinct(x, y)
        self.op(f"alu[--, {{1}}, {op}, {{2}}]\n" + then, [d, x, y], defs=(0,), uses=(1, 2),
                pairs=((1, 2),), sets_cc=True)

    def _sel_Select(self, ins: wir.Select, folds: Folds, _: str | None) -> None:
        d = self._dst(ins.dst)
        if isinstance(ins.cond, int):
            self.move(d, ins.a if ins.cond else ins.b)
            return
        if ins.a == ins.b:
            self.move(d, ins.a)
            return
        c = self.value(ins.cond)
        a, b = self.value(ins.a), self.value(ins.b)
        done = self.label("s")
        self.op(f"alu[--, --, B, {{1}}]\nbeq[{done}#], defer[1]\nalu[{{0}}, --, B, {{3}}]\n"
                f"alu[{{0}}, --, B, {{2}}]\n{done}#:", [d, c, a, b], defs=(0,),
                uses=(1, 2, 3), late_uses=(2,), sets_cc=True)

    # --- memory
    def _sel_MemRead(self, ins: wir.MemRead, folds: Folds, _: str | None) -> None:
        n = len(ins.dsts)
        if ins.space == wir.LOCAL:
            self._local(ins.addr, [self._dst(r) for r in ins.dsts], None)
            return
        a, b = self.address(ins.space, ins.addr)
        xs = self.xfer_range(n)
        unit = "sram" if ins.space == wir.SRAM else "scratch"
        self._issue(f"{unit}[read, ${xs.start}, {{0}}, {{1}}, {n}]", [a, b], xs,
                    [(self._dst(r), f"${x}") for r, x in zip(ins.dsts, xs, strict=True)])

    def _sel_Prefetch(self, ins: Prefetch, folds: Folds, _: str | None) -> None:
        slot = self.slots[ins.slot]
        a, b = self.address(ins.space, ins.addr)
        unit = "sram" if ins.space == wir.SRAM else "scratch"
        self.signals_used.add(slot.signal)
        self.op(f"{unit}[read, ${slot.xfer.start}, {{0}}, {{1}}, {ins.count}], "
                f"sig_done[{slot.signal}]", [a, b], uses=(0, 1), pairs=((0, 1),),
                kind="mem", signals=(slot.signal,))

    def _sel_Collect(self, ins: Collect, folds: Folds, _: str | None) -> None:
        # waited for with this block's other commands, at the first use of a word
        slot = self.slots[ins.slot]
        self.state.pending.append(Pending(slot.signal, range(0), [
            (self._dst(r), f"${x}") for r, x in zip(ins.dsts, slot.xfer, strict=True)]))

    def _sel_Drain(self, ins: Drain, folds: Folds, _: str | None) -> None:
        self.state.pending.append(Pending(self.slots[ins.slot].signal, range(0), []))

    def _issue(self, template: str, ops: list[MOpnd], xs: range,
               copies: list[tuple[VReg, str]]) -> None:
        sig = self.signal()
        self.op(template + f", sig_done[{sig}]", ops, uses=tuple(range(len(ops))),
                pairs=((0, 1),) if len(ops) == 2 else (), kind="mem", signals=(sig,))
        self.state.pending.append(Pending(sig, xs, copies))

    def _sel_MemWrite(self, ins: wir.MemWrite, folds: Folds, _: str | None) -> None:
        if ins.space == wir.LOCAL:
            self._local(ins.addr, None, list(ins.srcs))
            return
        if self.select_turn_write(ins):
            return
        n = len(ins.srcs)
        a, b = self.address(ins.space, ins.addr)
        xs = self.xfer_range(n)
        for src, x in zip(ins.srcs, xs, strict=True):
            self.move(f"${x}", src)
        unit = "sram" if ins.space == wir.SRAM else "scratch"
        self._issue(f"{unit}[write, ${xs.start}, {{0}}, {{1}}, {n}]", [a, b], xs, [])

    def _sel_MemAdd(self, ins: wir.MemAdd, folds: Folds, _: str | None) -> None:
        unit = "sram" if ins.space == wir.SRAM else "scratch"
        if ins.space == wir.LOCAL:
            old = self._new("old", gpr_only=True)
            self._local(ins.addr, [old], None)
            new = self._new("new", gpr_only=True)
            self.alu(new, old, "+", ins.value)
            self._local(ins.addr, None, [new])
            if ins.dst is not None:
                self.move(self._dst(ins.dst), old)
            return
        a, b = self.address(ins.space, ins.addr)
        if ins.dst is None and ins.value == 1:
            self._issue(f"{unit}[incr, --, {{0}}, {{1}}, 1]", [a, b], range(0), [])
            return
        xs = self.xfer_range(1)
        self.move(f"${xs.start}", ins.value)
        cmd = "add" if ins.dst is None else "test_and_add"
        copies = [] if ins.dst is None else [(self._dst(ins.dst), f"${xs.start}")]
        self._issue(f"{unit}[{cmd}, ${xs.start}, {{0}}, {{1}}, 1]", [a, b], xs, copies)

    def _local(self, addr: wir.Operand, dsts: list[VReg] | None,
               srcs: list[wir.Operand] | None) -> None:
        """Local memory through LM_ADDR_0 (moved, then restored to the spill area): the
        operands of this sequence must be GPRs (the spill area is out of reach)."""
        assert self.lm_base is not None
        self.flush()
        words = len(dsts) if dsts is not None else len(srcs or [])
        t = self._new("lm", gpr_only=True)
        if isinstance(addr, int):
            self.load_const(t, 4 * addr)
        else:
            self.alu(t, None, "B", Shifted(addr, "shl", 2))
        vals: list[MOpnd] = []
        if srcs is not None:
            for s in srcs:
                v = self._new("lmv", gpr_only=True)
                self.move(v, s)
                vals.append(v)
        else:
            vals = [self._new("lmv", gpr_only=True) for _ in range(words)]
        lines = ["local_csr_wr[ACTIVE_LM_ADDR_0, {0}]", "nop", "nop", "nop"]
        for i in range(words):
            lines.append(f"alu[*l$index0[{i}], --, B, {{{i + 2}}}]" if srcs is not None
                         else f"alu[{{{i + 2}}}, --, B, *l$index0[{i}]]")
        lines += ["local_csr_wr[ACTIVE_LM_ADDR_0, {1}]", "nop", "nop", "nop"]
        idx = tuple(range(2, 2 + words))
        self.op("\n".join(lines), [t, self.lm_base, *vals],
                defs=idx if srcs is None else (), uses=(0, 1) + (idx if srcs else ()),
                late_uses=(1,), sets_cc=True)
        if dsts is not None:
            for d, v in zip(dsts, vals, strict=True):
                self.move(d, v)

    def _sel_Hash(self, ins: wir.Hash, folds: Folds, _: str | None) -> None:
        n = len(ins.srcs)
        xs = self.xfer_range(n)
        for src, x in zip(ins.srcs, xs, strict=True):
            self.move(f"${x}", src)
        size = {48: "hash_48", 64: "hash_64", 128: "hash_128"}[ins.width]
        self._issue(f"{size}[${xs.start}, 1]", [], xs,
                    [(self._dst(r), f"${x}") for r, x in zip(ins.dsts, xs, strict=True)])

    def _pkt_address(self, offset: wir.Operand) -> tuple[VReg, VReg]:
        """(byte address of the packet byte, its quadword address)."""
        t, q = self._new("pa"), self._new("pq")
        self.alu(t, f"*l$index1[{META_DRAM_ADDR}]", "+", offset)
        self.alu(q, t, "AND~", 7)
        return t, q

    def _sel_PktLoad8(self, ins: wir.PktLoad8, folds: Folds, _: str | None) -> None:
        self.flush()
        t, q = self._pkt_address(ins.offset)
        sig = self.signal()
        d = self._dst(ins.dst)
        hi = self.label("pk")
        # the byte is in $$14 (offset bit 2 clear) or $$15, at bits 8 * (3 - offset % 4)
        self.op(f"dram[read, $$14, {{1}}, 0, 1], ctx_swap[{sig}]\n"
                "alu_shf[{1}, --, B, {2}, <<3]\nalu[--, 24, -, {1}]\n"
                f"br_bclr[{{2}}, 2, {hi}#], defer[1]\n"
                "dbl_shf[{1}, 0, $$14, >>indirect]\ndbl_shf[{1}, 0, $$15, >>indirect]\n"
                f"{hi}#:\nld_field_w_clr[{{0}}, 0001, {{1}}]", [d, q, t], defs=(0, 1),
                uses=(1, 2), late_uses=(2,), sets_cc=True, kind="op")

    def _sel_PktStore8(self, ins: wir.PktStore8, folds: Folds, _: str | None) -> None:
        self.flush()
        t, q = self._pkt_address(ins.offset)
        v = self.reg_value(ins.src)
        sig = self.signal()
        w = self._new("pw")
        lab = [self.label("ps") for _ in range(8)]
        put = [f"ld_field[{{3}}, {1 << (3 - k):04b}, {{2}}, <<{24 - 8 * k}]" for k in range(4)]
        lines = [
            f"dram[read, $$14, {{0}}, 0, 1], ctx_swap[{sig}]",
            f"br_bset[{{1}}, 2, {lab[0]}#]",
            "alu[{3}, --, B, $$14]", f"br[{lab[1]}#]",
            f"{lab[0]}#:", "alu[{3}, --, B, $$15]",
            f"{lab[1]}#:",
            f"br_bset[{{1}}, 1, {lab[2]}#]",
            f"br_bset[{{1}}, 0, {lab[3]}#]", put[0], f"br[{lab[4]}#]",
            f"{lab[3]}#:", put[1], f"br[{lab[4]}#]",
            f"{lab[2]}#:", f"br_bset[{{1}}, 0, {lab[5]}#]", put[2], f"br[{lab[4]}#]",
            f"{lab[5]}#:", put[3],
            f"{lab[4]}#:",
            "alu[$$14, --, B, $$14]", "alu[$$15, --, B, $$15]",
            f"br_bset[{{1}}, 2, {lab[6]}#]", "alu[$$14, --, B, {3}]", f"br[{lab[7]}#]",
            f"{lab[6]}#:", "alu[$$15, --, B, {3}]",
            f"{lab[7]}#:",
            f"dram[write, $$14, {{0}}, 0, 1], ctx_swap[{sig}]",
        ]
        self.op("\n".join(lines), [q, t, v, w], defs=(3,), uses=(0, 1, 2),
                late_uses=(0, 1, 2), sets_cc=True)

    # --- buffers and the receive turn (buffers.py)
    def _sel_BufAlloc(self, ins: wir.BufAlloc, folds: Folds, _: str | None) -> None:
        self.select_alloc(ins)

    def _sel_BufStore(self, ins: wir.BufStore, folds: Folds, _: str | None) -> None:
        self.select_store(ins)

    def _sel_BufAttach(self, ins: wir.BufAttach, folds: Folds, _: str | None) -> None:
        self.select_attach(ins)

    def _sel_BufFree(self, ins: wir.BufFree, folds: Folds, _: str | None) -> None:
        self.select_free(ins)

    def _sel_RxTurnDone(self, ins: wir.RxTurnDone, folds: Folds, _: str | None) -> None:
        self.select_rx_turn_done(ins)

    def _sel_RxTurnTake(self, ins: wir.RxTurnTake, folds: Folds, _: str | None) -> None:
        self.select_rx_turn_take(ins)

    # --- control
    def _sel_Jump(self, ins: wir.Jump, folds: Folds, following: str | None) -> None:
        if ins.target != following:
            target = self.labels[ins.target]
            self.emit(MInstr(f"br[{target}#]", [], kind="branch", targets=(target,)))

    def _sel_Ret(self, ins: wir.Ret, folds: Folds, following: str | None) -> None:
        self._write_back(self.plan.written_at_ret.get(self.current_label, frozenset()))
        self.flush()            # one wait: the write-back and whatever is still in flight
        if self.spinning:
            self.drain_turn_writes()
        self.emit(MInstr("br[body_exit#]", [], kind="branch", targets=("body_exit#",)))

    def _halfword_branch(self, pred: str, word: wir.Reg | int, c: int, target: str,
                         other: str) -> None:
        """`(word >> 16) pred c` (==, !=) as two byte compares of bytes 3 and 2."""
        w = self.reg_value(word)
        hi, lo = c >> 8, c & 0xFF
        if pred == "ne":        # either byte differs: to target
            first, second = f"br!=byte[{{0}}, 3, {hi}, {target}#]", \
                f"br!=byte[{{0}}, 2, {lo}, {target}#]"
        else:                   # the high byte differs: to other; else the low decides
            first, second = f"br!=byte[{{0}}, 3, {hi}, {other}#]", \
                f"br=byte[{{0}}, 2, {lo}, {target}#]"
        self.op(first, [w], uses=(0,), kind="branch",
                targets=(target if pred == "ne" else other,))
        self.op(second, [w], uses=(0,), kind="branch", targets=(target,))

    def _byte_branch(self, field: ByteField, pred: str, c: int, target: str,
                     other: str) -> bool:
        """A test of a byte of a fixed word (bytetests.py); True when it ends with `br`."""
        steps = byte_test(pred, c, field.byte, target, other)
        assert steps is not None, "find_byte_tests admits only foldable tests"
        word = self.value(field.word)
        for step in steps:
            if step.targets:
                self.op(step.text, [word], uses=(0,), kind="branch", targets=step.targets,
                        reads_cc=step.reads_cc)
            else:
                self.op(step.text, [word], uses=(0,), sets_cc=True)
        return steps[-1].text.startswith("br[")

    def _sel_Branch(self, ins: wir.Branch, folds: Folds, following: str | None) -> None:
        then, other = ins.then_, ins.else_
        pred, a, b = ins.pred, ins.a, ins.b
        if then == other or isinstance(a, int) and isinstance(b, int):
            taken = then if then == other or compare(pred, a, b) else other  # type: ignore
            self._sel_Jump(wir.Jump(taken), folds, following)
            return
        if then == following:
            then, other, pred = other, then, NEGATED[pred]
        target = self.labels[then]
        bit = folds.bit_tests.get(a.id) if isinstance(a, wir.Reg) and b == 0 else None
        if isinstance(a, wir.Reg) and a.id in self.byte_tests:
            if self._byte_branch(self.byte_tests[a.id], pred, int(b), target,
                                 self.labels[other]):
                return          # it ends with an unconditional jump
        elif isinstance(a, wir.Reg) and a.id in self.halfword_tests:
            self._halfword_branch(pred, self.halfword_tests[a.id], int(b), target,
                                  self.labels[other])
        elif bit is None and pred in ("eq", "ne") and isinstance(a, wir.Reg) and \
                a.id in self.byte_values and isinstance(b, int) and b <= 0xFF:
            # a byte compared with a byte: one br=byte, no immed, no compare
            mnem = "br=byte" if pred == "eq" else "br!=byte"
            self.op(f"{mnem}[{{0}}, 0, {b}, {target}#]", [self.reg_value(a)], uses=(0,),
                    kind="branch", targets=(target,))
        elif bit is not None and pred in ("eq", "ne"):
            x, k = bit
            mnem = "br_bclr" if pred == "eq" else "br_bset"
            self.op(f"{mnem}[{{0}}, {k}, {target}#]", [self.reg_value(x)], uses=(0,),
                    kind="branch", targets=(target,))
        else:
            cond = self._compare(pred, a, self._operand_b(b, folds))
            self.emit(MInstr(f"{cond}[{target}#]", [], kind="branch", reads_cc=True,
                             targets=(target,)))
        if other != following:
            t2 = self.labels[other]
            self.emit(MInstr(f"br[{t2}#]", [], kind="branch", targets=(t2,)))


@dataclass
class Folds:
    """What one block's selection folds: shifts into B operands, byte fields, bit tests."""

    skip: set[int] = field(default_factory=set)                 # instr indices not emitted
    shifted: dict[int, Shifted] = field(default_factory=dict)   # reg id -> its shift
    # instr index of an `and` -> (x, shift, byte mask) of its ld_field_w_clr
    byte_fields: dict[int, tuple[wir.Operand, str, int]] = field(default_factory=dict)
    bit_tests: dict[int, tuple[wir.Operand, int]] = field(default_factory=dict)
    users: set[int] = field(default_factory=set)               # instrs with a folded shift
    # address reg id -> how a unit command's address operands compute it (AddressFold)
    addresses: dict[int, AddressFold] = field(default_factory=dict)
    # instr index of an `or` of two complementary byte masks -> (base, src, src's mask):
    # `ld_field` merges src's bytes into a copy of base
    merges: dict[int, tuple[wir.Reg, wir.Reg, int]] = field(default_factory=dict)


def _single_use_in_block(b: wir.Block, index: int, reg: wir.Reg, defs: dict[int, int],
                         uses: dict[int, int]) -> int | None:
    """The index of the one instruction using `reg` (defined once at `index`) when it is
    later in this block and the defining instruction's sources are unchanged until then."""
    if defs.get(reg.id) != 1 or uses.get(reg.id) != 1:
        return None
    sources = {u.id for u in b.instrs[index].uses() if isinstance(u, wir.Reg)}
    for j in range(index + 1, len(b.instrs)):
        ins = b.instrs[j]
        if any(isinstance(u, wir.Reg) and u.id == reg.id for u in ins.uses()):
            return j
        if sources & {d.id for d in ins.defs()}:
            return None
    return None


def find_folds(b: wir.Block, defs: dict[int, int], uses: dict[int, int],
               merges: bool = True) -> Folds:
    folds = Folds()
    for i, ins in enumerate(b.instrs):
        if not (isinstance(ins, wir.Bin) and isinstance(ins.b, int)
                and isinstance(ins.a, wir.Reg)):
            continue
        j = _single_use_in_block(b, i, ins.dst, defs, uses)
        if j is None:
            continue
        user = b.instrs[j]
        if ins.op in ("shl", "lshr") and 0 < ins.b < 32:
            _fold_shift(folds, i, j, ins, user)
        elif ins.op == "and" and ins.b and ins.b & (ins.b - 1) == 0 and \
                isinstance(user, wir.Branch) and user.a == ins.dst and user.b == 0 and \
                user.pred in ("eq", "ne"):
            _fold_bit_test(folds, i, ins, ins.b.bit_length() - 1)
    _fold_addresses(b, folds, defs, uses)
    if merges:
        _fold_merges(b, folds, defs, uses)
    return folds


def _fold_merges(b: wir.Block, folds: Folds, defs: dict[int, int],
                 uses: dict[int, int]) -> None:
    """`(p & m) | (q & ~m)`, m whole bytes, each `and` read only by the `or`: one
    `ld_field` of p's bytes into (a copy of) q, no masks (the checksum put back into its
    header word)."""
    masked: dict[int, tuple[int, wir.Reg, int]] = {}   # and dst id -> (index, x, mask)
    for i, ins in enumerate(b.instrs):
        if isinstance(ins, wir.Bin) and ins.op == "and" and isinstance(ins.a, wir.Reg) and \
                isinstance(ins.b, int) and byte_mask(ins.b) is not None and \
                i not in folds.skip and i not in folds.byte_fields and \
                ins.a.id not in folds.shifted:
            masked[ins.dst.id] = (i, ins.a, ins.b)
        if not (isinstance(ins, wir.Bin) and ins.op == "or" and isinstance(ins.a, wir.Reg)
                and isinstance(ins.b, wir.Reg) and ins.a.id in masked
                and ins.b.id in masked and ins.a != ins.b):
            continue
        (ia, p, ma), (ib, q, mb) = masked[ins.a.id], masked[ins.b.id]
        if ma & mb or ma | mb != MASK32 or \
                _single_use_in_block(b, ia, ins.a, defs, uses) != i or \
                _single_use_in_block(b, ib, ins.b, defs, uses) != i:
            continue
        folds.merges[i] = (q, p, ma)
        folds.skip |= {ia, ib}


@dataclass(frozen=True)
class AddressFold:
    """A unit command's address as its two operands: the first `x * 4·scale`, or the field
    `(x << left) >> right` (right >= 0) when the word address was `x & mask`; the second
    `4·base` (a constant register, which the loop hoisting takes out of a loop)."""

    x: wir.Reg
    scale: int = 1
    left: int = 0
    right: int = -1
    base: int = 0


def _fold_addresses(b: wir.Block, folds: Folds, defs: dict[int, int],
                    uses: dict[int, int]) -> None:
    """The word address of an SRAM/scratch command, computed in this block only for it:
    `x + c`, `x * k` and `x & mask` (a contiguous mask; over `y << s`) fold into its two
    address operands, with the word-to-byte shift merged (x·12: two `alu_shf`; a field:
    a left and a right shift)."""
    for j, user in enumerate(b.instrs):
        if isinstance(user, wir.MemRead | wir.MemWrite | wir.MemAdd) and \
                user.space != wir.LOCAL and isinstance(user.addr, wir.Reg):
            plan = _address_plan(b, folds, defs, uses, j, user.addr)
            if plan is not None:
                folds.addresses[user.addr.id] = plan


def _producer(b: wir.Block, folds: Folds, defs: dict[int, int], uses: dict[int, int],
              reg: wir.Reg, consumer: int) -> wir.Bin | None:
    """The `Bin` (register op constant) of this block that sets `reg` for instruction
    `consumer` only, its sources unchanged until then, and not folded otherwise."""
    k = next((m for m in range(consumer - 1, -1, -1) if reg in b.instrs[m].defs()), None)
    if k is None or k in folds.skip or _single_use_in_block(b, k, reg, defs, uses) != consumer:
        return None
    ins = b.instrs[k]
    return ins if isinstance(ins, wir.Bin) and isinstance(ins.a, wir.Reg) and \
        isinstance(ins.b, int) and ins.a != ins.dst else None


def _address_plan(b: wir.Block, folds: Folds, defs: dict[int, int], uses: dict[int, int],
                  j: int, addr: wir.Reg) -> AddressFold | None:
    index = {id(i): k for k, i in enumerate(b.instrs)}
    skipped: list[int] = []
    at, base = j, 0
    ins = _producer(b, folds, defs, uses, addr, at)
    if ins is not None and ins.op == "add":
        base, at = int(ins.b), index[id(ins)]
        skipped.append(at)
        ins = _producer(b, folds, defs, uses, ins.a, at)  # type: ignore[arg-type]
    plan = None
    x = b.instrs[at].a if at != j else addr     # type: ignore[union-attr]
    if ins is not None and ins.op == "mul" and bin(4 * ins.b & MASK32).count("1") <= 2:
        plan = AddressFold(ins.a, scale=int(ins.b), base=base)      # type: ignore[arg-type]
        skipped.append(index[id(ins)])
    elif ins is not None and ins.op == "and":
        plan = _field_plan(b, folds, defs, uses, ins, index, base, skipped)
    if plan is None and base:
        plan = AddressFold(x, base=base)        # type: ignore[arg-type]
    if plan is not None and plan.x.id in folds.shifted:
        # x's shift is folded into the `add` (not computed): it comes along, or no fold
        sh = folds.shifted[plan.x.id]
        if plan.right >= 0 or plan.scale != 1 or sh.direction != "shl" or \
                sh.amount > 29 or not isinstance(sh.src, wir.Reg):
            return None
        plan = AddressFold(sh.src, scale=1 << sh.amount, base=plan.base)
    if plan is None or any(plan.x in b.instrs[m].defs() for m in range(min(skipped), j)):
        return None
    last = next((m for m in range(min(skipped) - 1, -1, -1) if plan.x in b.instrs[m].defs()),
                None)
    if last is not None and last in folds.skip:
        return None             # x itself is folded into something else: never computed
    folds.skip.update(skipped)
    return plan


def _field_plan(b: wir.Block, folds: Folds, defs: dict[int, int], uses: dict[int, int],
                ins: wir.Bin, index: dict[int, int], base: int,
                skipped: list[int]) -> AddressFold | None:
    """`4·(y & mask)`, mask = ones at bits p .. p+w-1: `(y << 32-p-w) >> 30-p-w`, when y's
    bits below p are 0 (p = 0, or y = r << s with s >= p: the shift joins the left one)."""
    mask = int(ins.b)
    if mask <= IMM_MAX:
        return None             # one `alu ... AND` does it
    p = (mask & -mask).bit_length() - 1
    w = (mask >> p).bit_length()
    if mask >> p != (1 << w) - 1 or p + w > 30:
        return None             # not contiguous, or too wide
    k = index[id(ins)]
    y, left, mine = ins.a, 32 - p - w, [k]
    if isinstance(y, wir.Reg) and y.id in folds.shifted:
        # the shift is folded into this `and` already (not computed): it comes along
        sh = folds.shifted[y.id]
        if sh.direction != "shl" or not p <= sh.amount < 32 - left or \
                not isinstance(sh.src, wir.Reg):
            return None
        y, left = sh.src, left + sh.amount
    elif p:
        shl = _producer(b, folds, defs, uses, y, k)  # type: ignore[arg-type]
        if shl is None or shl.op != "shl" or not p <= shl.b < 32 - left:
            return None
        y, left = shl.a, left + int(shl.b)
        mine.append(index[id(shl)])
    if isinstance(y, wir.Reg):
        y = _unmasked(b, y, 32 - left, min(mine), defs)
    skipped.extend(mine)
    return AddressFold(y, left=left, right=30 - p - w, base=base)  # type: ignore[arg-type]


def _unmasked(b: wir.Block, y: wir.Reg, bits: int, before: int, defs: dict[int, int]
              ) -> wir.Reg:
    """x when y = `x & m` (set once, in this block before `before`) and m keeps all of the
    low `bits` bits the field reads (the next hop's `(route & 0xFFFF) << 2 & 0xFFC`): the
    `and` is left to its other readers, or to dead code."""
    at = next((m for m in range(before - 1, -1, -1) if y in b.instrs[m].defs()), None)
    if at is None or defs.get(y.id) != 1:
        return y
    ins = b.instrs[at]
    if not (isinstance(ins, wir.Bin) and ins.op == "and" and isinstance(ins.a, wir.Reg)
            and isinstance(ins.b, int) and ins.a != y):
        return y
    low = (1 << bits) - 1
    x = ins.a
    if low & ~ins.b or any(x in b.instrs[m].defs() for m in range(at + 1, len(b.instrs))):
        return y
    return x


def _fold_bit_test(folds: Folds, i: int, ins: wir.Bin, bit: int) -> None:
    """`(x & 1 << bit) ==/!= 0` as br_bset/br_bclr; through a folded shift of x too."""
    x = ins.a
    if isinstance(x, wir.Reg) and x.id in folds.shifted:
        sh = folds.shifted[x.id]
        bit = bit + sh.amount if sh.direction == "lshr" else bit - sh.amount
        if not 0 <= bit < 32:
            return              # the and consumes the shift as usual
        x = sh.src
    folds.bit_tests[ins.dst.id] = (x, bit)
    folds.skip.add(i)


def _fold_shift(folds: Folds, i: int, j: int, ins: wir.Bin, user: wir.Instr) -> None:
    shifted = Shifted(ins.a, ins.op, int(ins.b))  # type: ignore[arg-type]
    if isinstance(user, wir.Bin) and user.op == "and" and user.a == ins.dst and \
            isinstance(user.b, int) and byte_mask(user.b) is not None and user.b > IMM_MAX:
        way = ">>" if ins.op == "lshr" else "<<"
        folds.byte_fields[j] = (ins.a, f", {way}{ins.b}", byte_mask(user.b) or 0)
        folds.skip.add(i)
        return
    ok = False
    if j in folds.users:
        return
    if isinstance(user, wir.Bin) and user.op in ALU_OP:
        other = user.a if user.b == ins.dst else user.b
        ok = other != ins.dst and (user.b == ins.dst or user.op != "sub")
    elif isinstance(user, wir.Branch):
        ok = user.b == ins.dst and user.a != ins.dst and not (
            user.pred in ("eq", "ne") and user.a == 0)
    if ok:
        folds.shifted[ins.dst.id] = shifted
        folds.skip.add(i)
        folds.users.add(j)


def select(fn: wir.Function, abi: BodyABI, slots: dict[int, Slot] | None = None,
           options: BackOptions = DEFAULT_OPTIONS,
           byte_tests: dict[int, ByteField] | None = None
           ) -> tuple[MFunction, dict[VReg, Loc | None]]:
    """WIR -> machine IR; also the MBL location where each virtual register is set.
    `slots`: the resources of the early reads in `fn` (prefetch.hoist_reads); `byte_tests`:
    the registers tested a header byte at a time (bytetests.find_byte_tests)."""
    s = Selector(fn, abi, slots, options, byte_tests)
    mfn = s.select()
    return mfn, s.def_loc
