"""Passes 2-4: the read LLVM function to WIR.  Every LLVM value becomes a tuple of words
(words.py), phis become copies on the incoming edges (critical edges split; one edge's
copies act in parallel), switches become chains of branches, allocas become registers
and npu.* calls are expanded (intrinsics.py)."""

from __future__ import annotations

import re

from npkit.compiler.mbl.debuginfo import VarValue
from npkit.compiler.mbl.diagnostics import CompileError
from npkit.compiler.uc.image import expression_supported

from .. import wir
from ..wir import Operand, Reg
from . import words as W
from .builder import Builder
from .errors import unsupported
from .intrinsics import Intrinsics, Unsupported
from .read import BasicBlock, Const, Instr, Label, LFunction, Value
from .words import Words

BIN_WORDWISE = {"and", "or", "xor"}
# an operand of a variable record: "i32 %x", "i16 -5", "i1 true" (poison, undef, ptr: no)
_RECORD_OPERAND = re.compile(r'^i(\d+) (%"[^"]*"|%[-\w$.]+|-?\d+|true|false)$')


def successors(block: BasicBlock) -> list[str]:
    term = block.instrs[-1]
    return [o.name for o in term.operands if isinstance(o, Label)]


def llvm_rpo(fn: LFunction) -> list[BasicBlock]:
    by_name = {b.name: b for b in fn.blocks}
    seen, order = set(), []

    def visit(name: str) -> None:          # iterative DFS would do; the CFGs are small
        stack = [(name, iter(successors(by_name[name])))]
        seen.add(name)
        while stack:
            cur, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                order.append(cur)
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(successors(by_name[nxt]))))

    visit(fn.blocks[0].name)
    return [by_name[n] for n in reversed(order)]


class Legalizer:
    def __init__(self, fn: LFunction, name: str, window_max: int, sources: dict[str, str],
                 loc: wir.Loc | None = None) -> None:
        self.lfn = fn
        self.out = wir.Function(name, [], window_bytes=0, loc=loc)
        self.b = Builder(self.out)
        self.intrinsics = Intrinsics(self.b, window_max)
        self.sources = sources
        self.values: dict[str, Words] = {}
        self.pending: set[str] = set()      # values referenced before their definition
        self.allocas: dict[str, Reg] = {}
        self.blocks: dict[str, wir.Block] = {}
        self.phis: dict[str, list[Instr]] = {}
        self.edges: dict[tuple[str, str], str] = {}
        self.loop_headers = self.find_loop_headers()

    # ---- values ----
    def regs_for(self, name: str, width: int) -> Words:
        if name not in self.values:
            self.values[name] = tuple(self.b.reg(name) for _ in range(W.nwords(width)))
            self.pending.add(name)
        return self.values[name]

    def get(self, o) -> Words:
        if isinstance(o, Const):
            return W.const_words(o.value, o.width)
        if isinstance(o, Value):
            if o.name in self.allocas:
                return (self.allocas[o.name],)
            return self.regs_for(o.name, o.width)
        raise self.error(f"unexpected operand {o}")

    def bind(self, name: str, words: Words) -> None:
        """The value `name` is `words`: recorded, or copied into the registers an earlier
        reference (a phi on a back edge) gave it."""
        if name in self.pending:
            self.pending.discard(name)
            for dst, src in zip(self.values[name], words, strict=True):
                self.b.copy(dst, src)  # type: ignore[arg-type]
        else:
            self.values[name] = words

    def var_bind(self, record: VarValue) -> wir.VarBind:
        """A variable record as WIR words (args None: a value not kept, e.g. poison)."""
        args = []
        for text in record.operands:
            words = self.record_words(text)
            if words is None or not expression_supported(record.expr):
                return wir.VarBind(record.variable, None)
            args.append(words)
        return wir.VarBind(record.variable, tuple(args), record.expr)

    def record_words(self, text: str) -> Words | None:
        m = _RECORD_OPERAND.match(text)
        if m is None:
            return None
        width, value = int(m.group(1)), m.group(2)
        if value.startswith("%"):
            name = value[2:-1] if value.startswith('%"') else value[1:]
            return self.values.get(name) if name not in self.pending else None
        constant = {"true": 1, "false": 0}.get(value)
        if constant is None and re.fullmatch(r"-?\d+", value):
            constant = int(value)
        return None if constant is None else \
            W.const_words(constant & ((1 << width) - 1), width)

    def error(self, message: str) -> CompileError:
        return unsupported(message, self.b.loc, self.sources)

    # ---- driver ----
    def run(self) -> wir.Function:
        order = llvm_rpo(self.lfn)
        for bb in order:
            self.blocks[bb.name] = self.b.new_block(bb.name)
            self.phis[bb.name] = [i for i in bb.instrs if i.opcode == "phi"]
            for phi in self.phis[bb.name]:
                self.regs_for(phi.name, phi.width)
                self.pending.discard(phi.name)   # defined by the edge copies
        for bb in order:
            self.b.at(self.blocks[bb.name])
            if bb.name in self.loop_headers:
                self.blocks[bb.name].max_trips = self.loop_headers[bb.name]
            for ins in bb.instrs:
                if ins.opcode != "phi":
                    self.b.loc = ins.loc
                    self.b.pending_dbg += tuple(self.var_bind(v) for v in ins.dbg)
                    self.instr(bb, ins)
        self.b.loc = None
        return self.out

    def find_loop_headers(self) -> dict[str, int]:
        """Loops LLVM did not unroll are not supported yet (no trip-count analysis)."""
        order = [b.name for b in llvm_rpo(self.lfn)]
        index = {n: k for k, n in enumerate(order)}
        by_name = {b.name: b for b in self.lfn.blocks}
        for name in order:
            for s in successors(by_name[name]):
                if index[s] <= index[name]:
                    self.b.loc = by_name[name].instrs[-1].loc
                    raise self.error("a loop the optimizer could not unroll (the ME backend "
                                     "needs constant trip counts)")
        return {}

    # ---- instructions ----
    def instr(self, bb: BasicBlock, ins: Instr) -> None:
        handler = getattr(self, "op_" + ins.opcode, None)
        if handler is None:
            raise self.error(f"the LLVM operation '{ins.opcode}' is not supported by the ME "
                             f"backend")
        result = handler(bb, ins)
        if result is not None and ins.name:
            self.bind(ins.name, result)

    def op_add(self, bb, ins: Instr) -> Words:
        a, c = (self.get(o) for o in ins.operands)
        return W.add(self.b, a, c, ins.width)

    def op_sub(self, bb, ins: Instr) -> Words:
        a, c = (self.get(o) for o in ins.operands)
        return W.sub(self.b, a, c, ins.width)

    def op_mul(self, bb, ins: Instr) -> Words:
        a, c = (self.get(o) for o in ins.operands)
        if len(a) > 1:
            # LLVM writes negations, shifts and the like as multiplications by constants:
            # a sum of a few shifted copies (signed-digit form of the constant)
            for x, y in ((a, c), (c, a)):
                k = _constant(y)
                digits = _signed_digits(k, ins.width) if k is not None else None
                if digits is not None and len(digits) <= MAX_WIDE_MUL_TERMS:
                    return self._sum_of_shifts(x, digits, ins.width)
            raise self.error(f"multiplication of {ins.width}-bit values is not supported by "
                             "the ME backend (32 bits at most)")
        return W.canonical(self.b, (self.b.bin("mul", a[0], c[0]),), ins.width)

    def _sum_of_shifts(self, x: Words, digits: list[tuple[int, int]], width: int) -> Words:
        total: Words = tuple(0 for _ in x)
        for shift, sign in digits:
            term = W.shl_const(self.b, x, shift, width) if shift else x
            total = (W.add if sign > 0 else W.sub)(self.b, total, term, width)
        return total

    def _bitwise(self, bb, ins: Instr) -> Words:
        a, c = (self.get(o) for o in ins.operands)
        return W.bitwise(self.b, ins.opcode, a, c)

    op_and = op_or = op_xor = _bitwise

    def _shift(self, bb, ins: Instr) -> Words:
        x, amount = (self.get(o) for o in ins.operands)
        width = ins.width
        amt = amount[-1]
        if isinstance(amt, int) and all(w == 0 for w in amount[:-1]):
            if amt >= width:
                return W.const_words(0, width)   # poison in LLVM: any value will do
            if ins.opcode == "shl":
                return W.shl_const(self.b, x, amt, width)
            if ins.opcode == "lshr":
                return W.lshr_const(self.b, x, amt)
            return W.ashr_const(self.b, x, amt, width)
        if ins.opcode == "ashr":
            return W.ashr_reg(self.b, x, amt, width)
        return W.shift_reg(self.b, ins.opcode, x, amt, width)

    op_shl = op_lshr = op_ashr = _shift

    def op_icmp(self, bb, ins: Instr) -> Words:
        a, c = (self.get(o) for o in ins.operands)
        width = ins.operands[0].width
        if width == 0:
            raise self.error("pointer comparisons are not supported by the ME backend")
        return (W.compare(self.b, ins.predicate, a, c, width),)

    def op_select(self, bb, ins: Instr) -> Words:
        cond, a, c = (self.get(o) for o in ins.operands)
        return tuple(self.b.select(cond[0], p, q) for p, q in zip(a, c, strict=True))

    def op_zext(self, bb, ins: Instr) -> Words:
        return W.zext(self.get(ins.operands[0]), ins.width)

    def op_sext(self, bb, ins: Instr) -> Words:
        src = ins.operands[0]
        return W.sext(self.b, self.get(src), src.width, ins.width)

    def op_trunc(self, bb, ins: Instr) -> Words:
        return W.trunc(self.b, self.get(ins.operands[0]), ins.width)

    def op_freeze(self, bb, ins: Instr) -> Words:
        return self.get(ins.operands[0])

    def op_alloca(self, bb, ins: Instr) -> None:
        if "alloca i32" not in ins.text and "alloca i1" not in ins.text:
            raise self.error(f"a local of this type is not supported: {ins.text}")
        self.allocas[ins.name] = self.b.reg(ins.name)

    def slot(self, o) -> Reg:
        if not isinstance(o, Value) or o.name not in self.allocas:
            raise self.error("memory accesses through pointers are not supported by the ME "
                             "backend")
        return self.allocas[o.name]

    def op_load(self, bb, ins: Instr) -> Words:
        slot = self.slot(ins.operands[0])
        r = self.b.reg(ins.name)
        self.b.copy(r, slot)              # a snapshot: the slot may be written again
        return W.canonical(self.b, (r,), ins.width)

    def op_store(self, bb, ins: Instr) -> None:
        value, ptr = ins.operands
        self.b.copy(self.slot(ptr), self.get(value)[-1])

    def op_call(self, bb, ins: Instr) -> Words | None:
        name = ins.callee
        if name.startswith(("llvm.lifetime.", "llvm.dbg.", "llvm.assume")):
            return None
        if name.startswith("llvm."):
            return self.llvm_intrinsic(name, ins)
        out = None
        args = []
        for o in ins.operands[:-1]:
            if isinstance(o, Value) and o.width == 0:     # ctx or a lookup's out-pointer
                if o.name in self.allocas:
                    out = self.allocas[o.name]
                args.append(())
            else:
                args.append(self.get(o))
        try:
            return self.intrinsics.expand(name, args, out, ins.width)
        except Unsupported as e:
            raise self.error(str(e)) from None

    def llvm_intrinsic(self, name: str, ins: Instr) -> Words:
        base = name.split(".")[1]
        minmax = {"umin": "ult", "umax": "ugt", "smin": "slt", "smax": "sgt"}
        if base in minmax:
            a, c = (self.get(o) for o in ins.operands[:2])
            take_a = W.compare(self.b, minmax[base], a, c, ins.width)
            return tuple(self.b.select(take_a, p, q) for p, q in zip(a, c, strict=True))
        if base in ("usub", "uadd") and name.split(".")[2] == "sat":
            # LLVM's form of `x < y ? 0 : x - y` and of a clamped sum
            a, c = (self.get(o) for o in ins.operands[:2])
            if base == "usub":
                result, bound = W.sub(self.b, a, c, ins.width), W.const_words(0, ins.width)
                clamp = W.compare(self.b, "ult", a, c, ins.width)
            else:
                result, bound = W.add(self.b, a, c, ins.width), W.const_words(-1, ins.width)
                clamp = W.compare(self.b, "ult", result, a, ins.width)
            return tuple(self.b.select(clamp, p, q) for p, q in zip(bound, result, strict=True))
        if base == "ctpop":     # the chip's pop_count on each word, the counts summed
            counts = [self.b.pop_count(w) for w in self.get(ins.operands[0])]
            total = counts[0]
            for c in counts[1:]:
                total = self.b.bin("add", total, c)
            return W.const_words(0, ins.width)[:-1] + (total,)   # count <= width: canonical
        raise self.error(f"the LLVM intrinsic {name} is not supported by the ME backend")

    # ---- control flow ----
    def target(self, src: str, dst: str, single: bool) -> str:
        """The label to jump to for the edge src -> dst: dst itself, after the phi copies
        in the current block when src has one successor, else a new edge block with them."""
        copies = self.phi_copies(src, dst)
        if not copies:
            return self.blocks[dst].label
        if single:
            self.parallel_copy(copies)
            return self.blocks[dst].label
        if (src, dst) not in self.edges:
            here = self.b.cur
            edge = self.b.new_block(f"{src}_to_{dst}")
            self.b.at(edge)
            self.parallel_copy(copies)
            self.b.jump(self.blocks[dst].label)
            self.b.at(here)  # type: ignore[arg-type]
            self.edges[(src, dst)] = edge.label
        return self.edges[(src, dst)]

    def phi_copies(self, src: str, dst: str) -> list[tuple[Reg, Operand]]:
        out = []
        for phi in self.phis.get(dst, []):
            k = phi.incoming.index(src)
            for d, s in zip(self.values[phi.name], self.get(phi.operands[k]), strict=True):
                out.append((d, s))
        return out

    def parallel_copy(self, copies: list[tuple[Reg, Operand]]) -> None:
        """All sources are read before any destination is written."""
        copies = [(d, s) for d, s in copies if d != s]
        dsts = {d for d, _ in copies}
        if any(isinstance(s, Reg) and s in dsts for _, s in copies):
            temps = []
            for d, s in copies:
                t = self.b.reg()
                self.b.copy(t, s)
                temps.append((d, t))
            copies = temps
        for d, s in copies:
            self.b.copy(d, s)

    def op_br(self, bb: BasicBlock, ins: Instr) -> None:
        if len(ins.operands) == 1:
            self.b.jump(self.target(bb.name, ins.operands[0].name, True))
            return
        cond, if_false, if_true = ins.operands        # LLVM's operand order
        (c,) = self.get(cond)
        if isinstance(c, int):
            self.b.jump(self.target(bb.name, (if_true if c else if_false).name, True))
            return
        t = self.target(bb.name, if_true.name, False)
        f = self.target(bb.name, if_false.name, False)
        self.b.branch("ne", c, 0, t, f)

    def op_switch(self, bb: BasicBlock, ins: Instr) -> None:
        value = self.get(ins.operands[0])
        if len(value) > 1:
            raise self.error("a switch on a value wider than 32 bits is not supported")
        default = ins.operands[1].name
        cases = ins.cases
        for k, (v, dest) in enumerate(cases):
            t = self.target(bb.name, dest, False)
            if k == len(cases) - 1:
                e = self.target(bb.name, default, False)
            else:
                e = self.b.label(f"{bb.name}_case")
            self.b.branch("eq", value[0], v, t, e)
            if k < len(cases) - 1:
                nxt = wir.Block(e)
                self.out.blocks.append(nxt)
                self.b.at(nxt)
        if not cases:
            self.b.jump(self.target(bb.name, default, True))

    def op_ret(self, bb, ins: Instr) -> None:
        self.b.emit(wir.Ret())

    def op_unreachable(self, bb, ins: Instr) -> None:
        self.b.emit(wir.Ret())


def legalize(fn: LFunction, name: str, window_max: int, sources: dict[str, str],
             loc: wir.Loc | None = None) -> wir.Function:
    return Legalizer(fn, name, window_max, sources, loc).run()


MAX_WIDE_MUL_TERMS = 4


def _signed_digits(k: int, width: int) -> list[tuple[int, int]]:
    """k mod 2**width as a sum of +-2**shift terms with the fewest terms (non-adjacent form)."""
    k %= 1 << width
    digits, shift = [], 0
    while k:
        if k & 1:
            d = 2 - (k & 3)          # +1 or -1
            digits.append((shift, d))
            k -= d
        k >>= 1
        shift += 1
    return [(s, d) for s, d in digits if s < width]


def _constant(words: Words) -> int | None:
    """The value of constant words (most significant first), else None."""
    if not all(isinstance(w, int) for w in words):
        return None
    value = 0
    for w in words:
        value = value << 32 | w
    return value
