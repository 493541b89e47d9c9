"""Lowering of a checked MBL program to target-independent LLVM IR (llvmlite.ir).

Every block becomes `void @mbl.block.<name>(ptr %ctx)`, every function an internal
`alwaysinline` function taking the context first.  Chip operations are calls to declared
`npu.*` functions (below); each target supplies their bodies (native.py for x86, the ME
backend for microcode).  The context pointer is opaque: only the npu.* functions look in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from npkit.base.diagnostics import SourceLocation

from . import ast as A
from .debuginfo import DebugInfoBuilder
from .sema import Program
from .types import (
    MEDIA_EOP,
    MEDIA_SOP,
    META_CODE,
    META_FIELDS,
    META_MEDIA,
    META_VERDICT,
    VERDICT_CONSUMED,
    VERDICT_DROP,
    VERDICT_EXCEPTION,
    VERDICT_FORWARD,
    VERDICT_NEXT,
    Bits,
    Bool,
    FieldInfo,
    Layout,
    MemoryInfo,
    MemType,
    Type,
    View,
)

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
# Packet lengths are 16-bit (meta.len), so a push or pull moves at most this many bytes;
# a larger amount takes the statement's else branch without reaching npu.pkt.adjust.
MAX_ADJUST = 0xFFFF
PTR = ir.PointerType()
VOID = ir.VoidType()
SPACE_IDS = {"sram": 0, "scratch": 1, "local": 2}
# The Microsoft RSS default key (40 bytes), used by toeplitz() (docs/language.md).
RSS_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")


def npu_signatures() -> dict[str, ir.FunctionType]:
    """The chip operations every target implements (the contract with the backends)."""
    return {
        "npu.pkt.load8": ir.FunctionType(I8, [PTR, I32]),
        "npu.pkt.store8": ir.FunctionType(VOID, [PTR, I32, I8]),
        "npu.pkt.len": ir.FunctionType(I32, [PTR]),
        # move the packet start by delta bytes (> 0 strips, < 0 prepends); false if the
        # packet is too short or the buffer lacks headroom (nothing changes then)
        "npu.pkt.adjust": ir.FunctionType(I1, [PTR, I32]),
        "npu.meta.read": ir.FunctionType(I32, [PTR, I32]),
        "npu.meta.write": ir.FunctionType(VOID, [PTR, I32, I32]),
        "npu.mem.read": ir.FunctionType(I32, [PTR, I32, I32]),
        "npu.mem.write": ir.FunctionType(VOID, [PTR, I32, I32, I32]),
        "npu.mem.add": ir.FunctionType(I32, [PTR, I32, I32, I32]),
        # table lookups: (ctx, space, first word, entries, key, out) -> hit
        "npu.lpm32.lookup": ir.FunctionType(I1, [PTR, I32, I32, I32, I32, PTR]),
        "npu.lpm128.lookup": ir.FunctionType(I1, [PTR, I32, I32, I32, ir.IntType(128), PTR]),
        # hash tables also pass the number of key words per entry
        "npu.hash.lookup": ir.FunctionType(I1, [PTR, I32, I32, I32, I32, ir.IntType(128),
                                                PTR]),
        "npu.crc32.byte": ir.FunctionType(I32, [I32, I8]),
        "npu.hash48": ir.FunctionType(ir.IntType(48), [ir.IntType(48)]),
        "npu.hash64": ir.FunctionType(I64, [I64]),
        "npu.hash128": ir.FunctionType(ir.IntType(128), [ir.IntType(128)]),
    }


def media_signatures() -> dict[str, ir.FunctionType]:
    """Buffer operations of receive/transmit blocks (docs/datapath.md).  Declared only in
    modules that use them, so programs without media operations lower exactly as before."""
    return {
        # a buffer handle from the freelist into out; false when the freelist is empty
        "npu.buf.alloc": ir.FunctionType(I1, [PTR, PTR]),
        # (ctx, handle, at, from, out): the packet's bytes from.. into the buffer at byte
        # at; out = at + bytes stored; false (nothing stored) if they do not fit
        "npu.buf.store": ir.FunctionType(I1, [PTR, I32, I32, I32, PTR]),
        # (ctx, handle, len): the buffer's first len bytes become the packet
        "npu.buf.attach": ir.FunctionType(VOID, [PTR, I32, I32]),
        "npu.buf.free": ir.FunctionType(VOID, [PTR, I32]),
        # (ctx): media.turn_begin() / media.turn_end(), the receive stage's turn (no-ops
        # natively, where mpackets run one at a time; pool.uc's REG turn on the chip)
        "npu.rx.turn_take": ir.FunctionType(VOID, [PTR]),
        "npu.rx.turn_done": ir.FunctionType(VOID, [PTR]),
    }


READ_ONLY = frozenset({"npu.pkt.load8", "npu.pkt.len", "npu.meta.read", "npu.mem.read"})
PURE = frozenset({"npu.crc32.byte", "npu.hash48", "npu.hash64", "npu.hash128"})


@dataclass(frozen=True)
class PacketRef:
    """A header in the packet at a (checked) byte offset."""

    layout: Layout
    offset: ir.Value


@dataclass(frozen=True)
class MemRef:
    """A struct (or scalar element) in a memory space at a word address."""

    layout: Layout
    space: int
    word: ir.Value


def llvm_type(t: Type) -> ir.Type:
    if isinstance(t, Bits):
        return ir.IntType(t.width)
    if isinstance(t, Bool):
        return I1
    if isinstance(t, View):
        return I32
    raise ValueError(f"no LLVM type for {t}")


class _Scope:
    def __init__(self) -> None:
        self.frames: list[dict[str, object]] = [{}]

    def push(self) -> None:
        self.frames.append({})

    def pop(self) -> None:
        self.frames.pop()

    def set(self, name: str, value: object) -> None:
        self.frames[-1][name] = value

    def get(self, name: str) -> object | None:
        for f in reversed(self.frames):
            if name in f:
                return f[name]
        return None


@dataclass(frozen=True)
class TracedVariable:
    """A variable the line-trace build reports (`lower(..., trace=LineTable())`)."""

    name: str
    decl: SourceLocation        # its `let` / parameter / `for`
    width: int                  # bits (1 for bool)


@dataclass
class LineTable:
    """What a line-trace build's hooks mean: statement id -> its location, variable id ->
    the variable (npkit.compiler.mbl.linetrace reads the hooks' calls back through it)."""

    statements: list[SourceLocation] = field(default_factory=list)
    variables: list[TracedVariable] = field(default_factory=list)


# The line-trace hooks: function pointers the host stores in these globals (never declared
# in a normal build).  line(ctx, statement id); var(ctx, variable id, low 64, high 64 bits)
TRACE_LINE, TRACE_VAR = "mbl.trace.line", "mbl.trace.var"


# Multi-byte packet accesses of the native target (lower(wide=True)): (ctx, byte offset
# [, value]), the bytes in network order as one integer, as npu.pkt.load8/store8 would
# assemble them byte by byte; the host does each with one unaligned load or store and a
# byte swap.  The ME backend's lowering never declares them.
WIDE_BYTES = (8, 4, 2)


def wide_load_name(size: int) -> str:
    return f"npu.pkt.load{8 * size}"


def wide_store_name(size: int) -> str:
    return f"npu.pkt.store{8 * size}"


def byte_chunks(first: int, count: int, wide: bool) -> list[tuple[int, int]]:
    """(offset, bytes) pieces of `count` bytes from `first`: single bytes, or with `wide`
    the largest of WIDE_BYTES that fits (never a byte outside the range)."""
    out, at = [], first
    while at < first + count:
        left = first + count - at
        size = next((w for w in WIDE_BYTES if w <= left), 1) if wide else 1
        out.append((at, size))
        at += size
    return out


class Lowerer:
    def __init__(self, program: Program, name: str = "mbl",
                 trace: LineTable | None = None, variables: bool = False,
                 wide: bool = False) -> None:
        self.p = program
        self.wide = wide
        self.module = ir.Module(name=name)
        self.npu = {n: ir.Function(self.module, t, n) for n, t in npu_signatures().items()}
        for name, fn in self.npu.items():
            fn.attributes.add("nounwind")
            # reads and pure functions may be merged or moved by GVN; writes stay in order
            if name in READ_ONLY:
                fn.attributes.add("readonly")
            elif name in PURE:
                fn.attributes.add("readnone")
        self.functions: dict[str, ir.Function] = {}
        self.media_npu = media_signatures()
        # every instruction carries its MBL location (!dbg) for the ME backend's listings
        self.debug = DebugInfoBuilder(self.module, next(iter(program.sources), "<input>"))
        self.b: ir.IRBuilder | None = None
        self.ctx: ir.Value | None = None
        self.scope = _Scope()
        self.trace = trace
        self.variables = variables
        # dbg.declare calls, made when the function is done: llvmlite numbers every
        # instruction, so made in place they would renumber the values after them
        self.declares: list[tuple[ir.AllocaInstr, str, SourceLocation, int]] = []
        self.trace_ids: dict[int, int] = {}     # id(alloca) -> traced variable id

    # ---- driver ----
    def run(self) -> ir.Module:
        for f in self.p.functions.values():
            self.declare_function(f)
        for f in self.p.functions.values():
            self.lower_function(f)
        for blk in self.p.blocks.values():
            self.lower_block(blk)
        for pl in self.p.pipelines.values():
            self.lower_pipeline(pl)
        hoist_allocas(self.module)
        return self.module

    def lower_pipeline(self, pl: A.Pipeline) -> None:
        """Run-to-completion composition: `void @mbl.pipeline.<name>(ptr %ctx)` runs the
        first stage, then follows `next(label)` verdicts along the (acyclic) connections."""
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), f"mbl.pipeline.{pl.name}")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.debug.begin_function(fn, pl.name, pl.span, b)
        ctx = fn.args[0]
        edges = self.p.pipeline_edges.get(pl.name, {})
        stage_blocks = {st.name: fn.append_basic_block(f"stage.{st.name}") for st in pl.stages}
        b.branch(stage_blocks[pl.stages[0].name])
        read, write = self.npu["npu.meta.read"], self.npu["npu.meta.write"]
        tx = self.p.pipeline_tx.get(pl.name)
        for st in pl.stages:
            b.position_at_end(stage_blocks[st.name])
            b.debug_metadata = self.debug.location(st.span)
            b.call(write, [ctx, ir.Constant(I32, META_VERDICT), ir.Constant(I32, 0)])
            b.call(self.module.get_global(f"mbl.block.{st.block}"), [ctx])
            outputs = edges.get(st.name, {})
            if tx is not None and st.name != tx:
                # a forward verdict continues in the transmit stage
                verdict = b.call(read, [ctx, ir.Constant(I32, META_VERDICT)])
                stay = fn.append_basic_block(f"stay.{st.name}")
                b.cbranch(b.icmp_unsigned("==", verdict, ir.Constant(I32, VERDICT_FORWARD)),
                          stage_blocks[tx], stay)
                b.position_at_end(stay)
            if not outputs:
                b.ret_void()
                continue
            is_next = b.icmp_unsigned("==", b.call(read, [ctx, ir.Constant(I32, META_VERDICT)]),
                                      ir.Constant(I32, VERDICT_NEXT))
            done = fn.append_basic_block(f"done.{st.name}")
            dispatch = fn.append_basic_block(f"dispatch.{st.name}")
            b.cbranch(is_next, dispatch, done)
            b.position_at_end(done)
            b.ret_void()
            b.position_at_end(dispatch)
            label = b.call(read, [ctx, ir.Constant(I32, META_CODE)])
            switch = b.switch(label, done)  # labels the checker proved connected
            for name, target in outputs.items():
                switch.add_case(ir.Constant(I32, self.p.labels.id(name)), stage_blocks[target])

    def declare_function(self, f: A.Function) -> None:
        params = [PTR] + [self.param_type(prm) for prm in f.params]
        ret = llvm_type(self.resolve(f.ret)) if f.ret else VOID
        fn = ir.Function(self.module, ir.FunctionType(ret, params), f"mbl.fn.{f.name}")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        self.functions[f.name] = fn

    def resolve(self, t: A.TypeRef) -> Type:
        if isinstance(t, A.BitTypeRef):
            return Bits(t.width)
        if isinstance(t, A.BoolTypeRef):
            return Bool()
        assert isinstance(t, A.NamedTypeRef)
        if t.name in self.p.enums:
            return next(iter(self.p.enums[t.name].values()))[1]
        layout = self.p.layouts[t.name]
        return View(layout, True)

    def param_type(self, prm: A.Param) -> ir.Type:
        return llvm_type(self.resolve(prm.type))

    def lower_function(self, f: A.Function) -> None:
        fn = self.functions[f.name]
        self.begin(fn, f.name, f.span)
        for prm, arg in zip(f.params, fn.args[1:], strict=True):
            t = self.resolve(prm.type)
            if isinstance(t, View):
                self.scope.set(prm.name, PacketRef(t.layout, arg))
            else:
                self.scope.set(prm.name, self.variable(prm.name, prm.span, arg))
        self.stmt(f.body)
        self.finish(fn)

    def lower_block(self, blk: A.Microblock) -> None:
        fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR]), f"mbl.block.{blk.name}")
        self.begin(fn, blk.name, blk.span)
        self.stmt(blk.body)
        self.finish(fn)

    def begin(self, fn: ir.Function, name: str, span: SourceLocation) -> None:
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.debug.begin_function(fn, name, span, self.b)
        self.ctx = fn.args[0]
        self.scope = _Scope()

    def finish(self, fn: ir.Function) -> None:
        if not self.b.block.is_terminated:
            if isinstance(fn.function_type.return_type, ir.VoidType):
                self.b.ret_void()
            else:
                self.b.unreachable()
        for slot, name, span, width in self.declares:
            self.b.position_after(slot)
            self.debug.declare(self.b, slot, name, span, width)
        self.declares = []

    def make_var(self, value: ir.Value) -> ir.AllocaInstr:
        """A local variable: an entry-block alloca (sroa turns it into SSA values)."""
        with self.b.goto_entry_block():
            slot = self.b.alloca(value.type)
        self.b.store(value, slot)
        return slot

    def variable(self, name: str, span: SourceLocation, value: ir.Value) -> ir.AllocaInstr:
        """A named MBL variable: a local (make_var) described to the debugger."""
        slot = self.make_var(value)
        width = value.type.width
        if self.variables:
            self.declares.append((slot, name, span, width))
        if self.trace is not None:
            self.trace_ids[id(slot)] = len(self.trace.variables)
            self.trace.variables.append(TracedVariable(
                name, SourceLocation(span.file, span.line, span.column), width))
        return slot

    def trace_statement(self, s: A.Stmt) -> None:
        """Line-trace build: report the statement about to run and the value of every
        variable in scope (innermost declaration of each name)."""
        assert self.trace is not None
        i64 = ir.IntType(64)
        hook_line = self.b.load(self.trace_hook(TRACE_LINE, [PTR, I32]))
        self.b.call(hook_line, [self.ctx, ir.Constant(I32, len(self.trace.statements))])
        self.trace.statements.append(s.span)
        visible: dict[str, ir.AllocaInstr] = {}
        for frame in self.scope.frames:
            for name, slot in frame.items():
                if isinstance(slot, ir.AllocaInstr) and id(slot) in self.trace_ids:
                    visible.pop(name, None)
                    visible[name] = slot
        for slot in visible.values():
            value = self.b.load(slot)
            width = value.type.width
            wide = self.b.zext(value, ir.IntType(128)) if width < 128 else value
            low = self.b.trunc(wide, i64)
            high = self.b.trunc(self.b.lshr(wide, ir.Constant(ir.IntType(128), 64)), i64)
            self.b.call(self.b.load(self.trace_hook(TRACE_VAR, [PTR, I32, i64, i64])),
                        [self.ctx, ir.Constant(I32, self.trace_ids[id(slot)]), low, high])

    def trace_hook(self, name: str, params: list[ir.Type]) -> ir.GlobalVariable:
        """The global holding hook `name`, a pointer to void(params), created once (the
        host stores its callback there: no process-wide symbol)."""
        try:
            return self.module.get_global(name)
        except KeyError:
            fnptr = ir.FunctionType(VOID, params).as_pointer()
            hook = ir.GlobalVariable(self.module, fnptr, name)
            hook.initializer = ir.Constant(fnptr, None)
            return hook

    def terminated(self) -> bool:
        return self.b.block.is_terminated

    def fresh_block_if_terminated(self) -> None:
        """Code after a verdict is unreachable; keep emitting into a dead block."""
        if self.terminated():
            self.b.position_at_end(self.b.function.append_basic_block("dead"))

    # ---- statements ----
    def stmt(self, s: A.Stmt) -> None:
        self.fresh_block_if_terminated()
        with self.debug.at(self.b, s.span):
            if self.trace is not None and not isinstance(s, A.Block):
                self.trace_statement(s)
            getattr(self, "stmt_" + type(s).__name__.rstrip("_"))(s)

    def stmt_Block(self, s: A.Block) -> None:  # noqa: N802
        self.scope.push()
        for x in s.stmts[:self.p.unreachable.get(id(s), len(s.stmts))]:  # none after a verdict
            self.stmt(x)
        self.scope.pop()

    def stmt_Let(self, s: A.Let) -> None:  # noqa: N802
        if s.otherwise is not None:
            value = self.checked(s)
        else:
            value = self.expr(s.value)
        if isinstance(value, PacketRef | MemRef):
            self.scope.set(s.name, value)
        else:
            self.scope.set(s.name, self.variable(s.name, s.span, value))

    def checked(self, s: A.Let) -> object:
        """`let x = fallible else stmt`: branch to the else statement on failure."""
        e = s.value
        ok_block = self.b.function.append_basic_block("ok")
        fail_block = self.b.function.append_basic_block("fail")
        if isinstance(e, A.PacketView):
            layout = self.p.layouts[e.header]
            off = self.expr(e.offset)
            off = self.b.zext(off, I32) if off.type.width < 32 else off
            end = self.b.add(self.b.zext(off, I64), ir.Constant(I64, layout.bytes))
            length = self.b.zext(self.b.call(self.npu["npu.pkt.len"], [self.ctx]), I64)
            self.b.cbranch(self.b.icmp_unsigned("<=", end, length), ok_block, fail_block)
            result: object = PacketRef(layout, off)
        else:
            assert isinstance(e, A.MethodCall)
            slot = self.make_var(ir.Constant(I32, 0))
            if self.is_media(e):
                width = 32
                hit = self.buffer_call(e, slot)
            else:
                m = self.memory_of(e.target)
                width = m.value.width
                hit = self.table_lookup(m, self.expr(e.args[0]), slot)
            self.b.cbranch(hit, ok_block, fail_block)
            self.b.position_at_end(ok_block)
            word = self.b.load(slot)
            result = self.b.trunc(word, ir.IntType(width)) if width < 32 else word
            ok_block = self.b.block
            self.b.position_at_end(fail_block)
            self.scope.push()
            self.stmt(s.otherwise)
            self.scope.pop()
            if not self.terminated():
                self.b.unreachable()
            self.b.position_at_end(ok_block)
            return result
        self.b.position_at_end(fail_block)
        self.scope.push()
        self.stmt(s.otherwise)
        self.scope.pop()
        if not self.terminated():
            self.b.unreachable()
        self.b.position_at_end(ok_block)
        return result

    def table_lookup(self, m: MemoryInfo, key: ir.Value, slot: ir.Value) -> ir.Value:
        """Call the target's lookup for table m; the value lands in slot; returns hit."""
        fname = {"lpm": "npu.lpm32.lookup" if m.key == Bits(32) else "npu.lpm128.lookup",
                 "hash": "npu.hash.lookup"}[m.kind]
        if fname != "npu.lpm32.lookup" and key.type.width < 128:
            key = self.b.zext(key, ir.IntType(128))
        args = [self.ctx, ir.Constant(I32, SPACE_IDS[m.space]),
                ir.Constant(I32, m.word_offset), ir.Constant(I32, m.size)]
        if m.kind == "hash":
            args.append(ir.Constant(I32, m.words_per_entry - 2))
        return self.b.call(self.npu[fname], [*args, key, slot])

    def memory_of(self, e: A.Expr) -> MemoryInfo:
        t = self.p.type_of(e)
        assert isinstance(t, MemType)
        return t.memory

    def stmt_Assign(self, s: A.Assign) -> None:  # noqa: N802
        value = self.expr(s.value)
        if s.op != "=":
            old = self.expr(s.target)
            value = self.arith(s.op[0], old, value)
        self.store(s.target, value)

    def store(self, target: A.Expr, value: ir.Value) -> None:
        if isinstance(target, A.Name):
            self.b.store(value, self.scope.get(target.name))
        elif isinstance(target, A.Field) and self.is_meta(target):
            mf = META_FIELDS[target.field]
            self.b.call(self.npu["npu.meta.write"], [self.ctx, ir.Constant(I32, mf.word),
                                                     self.widen32(value)])
        elif isinstance(target, A.Field):
            ref = self.expr(target.target)
            self.write_field(ref, target.field, value)
        else:
            assert isinstance(target, A.Index)
            ref = self.element(target)
            self.write_field(ref, "", value)

    def stmt_If(self, s: A.If) -> None:  # noqa: N802
        cond = self.expr(s.cond)
        then_block = self.b.function.append_basic_block("then")
        else_block = self.b.function.append_basic_block("else")
        join = self.b.function.append_basic_block("join")
        self.b.cbranch(cond, then_block, else_block)
        for block, body in ((then_block, s.then), (else_block, s.otherwise)):
            self.b.position_at_end(block)
            if body is not None:
                self.stmt(body)
            if not self.terminated():
                self.b.branch(join)
        self.b.position_at_end(join)

    def stmt_For(self, s: A.For) -> None:  # noqa: N802
        lo = self.p.values[id(s.start)]
        hi = self.p.values[id(s.stop)]
        var = self.variable(s.var, s.span, ir.Constant(I32, lo))
        head = self.b.function.append_basic_block("loop")
        body = self.b.function.append_basic_block("body")
        done = self.b.function.append_basic_block("done")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.load(var)
        self.b.cbranch(self.b.icmp_unsigned("<", i, ir.Constant(I32, hi)), body, done)
        self.b.position_at_end(body)
        self.scope.push()
        self.scope.set(s.var, var)
        self.stmt(s.body)
        self.scope.pop()
        if not self.terminated():
            self.b.store(self.b.add(self.b.load(var), ir.Constant(I32, 1)), var)
            self.b.branch(head)
        self.b.position_at_end(done)

    def stmt_Return(self, s: A.Return) -> None:  # noqa: N802
        if s.value is None:
            self.b.ret_void()
        else:
            self.b.ret(self.expr(s.value))

    def verdict(self, kind: int, code: ir.Value | int) -> None:
        write = self.npu["npu.meta.write"]
        code_v = code if isinstance(code, ir.Value) else ir.Constant(I32, code)
        self.b.call(write, [self.ctx, ir.Constant(I32, META_VERDICT), ir.Constant(I32, kind)])
        self.b.call(write, [self.ctx, ir.Constant(I32, META_CODE), code_v])
        self.b.ret_void()

    def stmt_Forward(self, s: A.Forward) -> None:  # noqa: N802
        write = self.npu["npu.meta.write"]
        port = self.widen32(self.expr(s.port))
        self.b.call(write, [self.ctx, ir.Constant(I32, META_FIELDS["out_port"].word), port])
        if s.queue is not None:
            queue = self.widen32(self.expr(s.queue))
            self.b.call(write, [self.ctx, ir.Constant(I32, META_FIELDS["queue"].word), queue])
        self.verdict(VERDICT_FORWARD, 0)

    def stmt_Drop(self, s: A.Drop) -> None:  # noqa: N802
        self.verdict(VERDICT_DROP, self.p.reasons.id(s.reason))

    def stmt_Exception(self, s: A.Exception_) -> None:  # noqa: N802
        self.verdict(VERDICT_EXCEPTION, self.widen32(self.expr(s.code)))

    def stmt_Next(self, s: A.Next) -> None:  # noqa: N802
        self.verdict(VERDICT_NEXT, self.p.labels.id(s.label or "default"))

    def stmt_Adjust(self, s: A.Adjust) -> None:  # noqa: N802
        """The amount is checked before it becomes a signed delta: more than MAX_ADJUST
        bytes can never be pulled or pushed, so such an amount takes the else branch (and
        npu.pkt.adjust only ever sees |delta| <= MAX_ADJUST, never a wrapped one)."""
        amount = self.widen32(self.expr(s.amount))
        try_block = self.b.function.append_basic_block("adjust")
        ok_block = self.b.function.append_basic_block("adjusted")
        fail_block = self.b.function.append_basic_block("no_adjust")
        in_range = self.b.icmp_unsigned("<=", amount, ir.Constant(I32, MAX_ADJUST))
        self.b.cbranch(in_range, try_block, fail_block)
        self.b.position_at_end(try_block)
        delta = amount if s.op == "pull" else self.b.sub(ir.Constant(I32, 0), amount)
        ok = self.b.call(self.npu["npu.pkt.adjust"], [self.ctx, delta])
        self.b.cbranch(ok, ok_block, fail_block)
        self.b.position_at_end(fail_block)
        self.scope.push()
        self.stmt(s.otherwise)
        self.scope.pop()
        if not self.terminated():
            self.b.unreachable()
        self.b.position_at_end(ok_block)

    def stmt_ExprStmt(self, s: A.ExprStmt) -> None:  # noqa: N802
        self.expr(s.expr)

    # ---- expressions ----
    def widen32(self, v: ir.Value) -> ir.Value:
        w = v.type.width
        return self.b.zext(v, I32) if w < 32 else (self.b.trunc(v, I32) if w > 32 else v)

    def expr(self, e: A.Expr) -> object:
        t = self.p.type_of(e)
        if id(e) in self.p.values and isinstance(t, Bits | Bool):
            return ir.Constant(llvm_type(t), self.p.values[id(e)])
        with self.debug.at(self.b, e.span):
            return getattr(self, "expr_" + type(e).__name__)(e)

    def expr_Name(self, e: A.Name) -> object:  # noqa: N802
        v = self.scope.get(e.name)
        if isinstance(v, PacketRef | MemRef):
            return v
        return self.b.load(v)

    def is_meta(self, e: A.Field) -> bool:
        return isinstance(e.target, A.Name) and e.target.name == "meta" \
            and self.scope.get("meta") is None

    def expr_Field(self, e: A.Field) -> ir.Value:  # noqa: N802
        if self.is_meta(e):
            mf = META_FIELDS[e.field]
            word = self.b.call(self.npu["npu.meta.read"], [self.ctx, ir.Constant(I32, mf.word)])
            return self.b.trunc(word, ir.IntType(mf.width)) if mf.width < 32 else word
        return self.read_field(self.expr(e.target), e.field)

    def expr_Index(self, e: A.Index) -> object:  # noqa: N802
        ref = self.element(e)
        if isinstance(self.p.type_of(e), View):
            return ref
        return self.read_field(ref, "")

    def element(self, e: A.Index) -> MemRef:
        """The word address of array/register/counter element e (index masked to size)."""
        m = self.memory_of(e.target)
        index = self.widen32(self.expr(e.index))
        index = self.b.and_(index, ir.Constant(I32, m.size - 1))
        word = self.b.add(self.b.mul(index, ir.Constant(I32, m.words_per_entry)),
                          ir.Constant(I32, m.word_offset))
        return MemRef(self.element_layout(m), SPACE_IDS[m.space], word)

    def element_layout(self, m: MemoryInfo) -> Layout:
        if isinstance(m.value, View):
            return m.value.layout
        width = m.value.width if isinstance(m.value, Bits) else 32
        pad = m.words_per_entry * 32 - width  # scalars sit in the low bits of their words
        return Layout(m.name, (FieldInfo("", width, pad),), False)

    # bit-field access: packet bytes (big endian) or memory words (MSB first)
    def read_field(self, ref: PacketRef | MemRef, name: str) -> ir.Value:
        f = ref.layout.field(name) if name else ref.layout.fields[0]
        unit = 8 if isinstance(ref, PacketRef) else 32
        first, last = f.offset // unit, (f.offset + f.width - 1) // unit
        n = last - first + 1
        wide = ir.IntType(n * unit)
        acc = ir.Constant(wide, 0)
        if isinstance(ref, PacketRef):
            for at, size in byte_chunks(first, n, self.wide):
                part = self.load_bytes(ref, at, size)
                acc = self.b.or_(self.b.shl(acc, ir.Constant(wide, 8 * size)) if at > first
                                 else acc, self.b.zext(part, wide) if size < n else part)
        else:
            for k in range(n):
                part = self.load_unit(ref, first + k)
                acc = self.b.or_(self.b.shl(acc, ir.Constant(wide, unit)) if k else acc,
                                 self.b.zext(part, wide) if n > 1 else part)
        shift = n * unit - (f.offset % unit) - f.width
        if shift:
            acc = self.b.lshr(acc, ir.Constant(wide, shift))
        return self.b.trunc(acc, ir.IntType(f.width)) if f.width < n * unit else acc

    def write_field(self, ref: PacketRef | MemRef, name: str, value: ir.Value) -> None:
        f = ref.layout.field(name) if name else ref.layout.fields[0]
        unit = 8 if isinstance(ref, PacketRef) else 32
        first, last = f.offset // unit, (f.offset + f.width - 1) // unit
        n = last - first + 1
        wide = ir.IntType(n * unit)
        shift = n * unit - (f.offset % unit) - f.width
        mask = ((1 << f.width) - 1) << shift
        new = self.b.zext(value, wide) if f.width < n * unit else value
        new = self.b.shl(new, ir.Constant(wide, shift)) if shift else new
        if isinstance(ref, PacketRef) and self.wide and n > 1 and mask == (1 << n * 8) - 1:
            for at, size in byte_chunks(first, n, True):  # whole bytes: no read needed
                low = (first + n - at - size) * 8
                piece = self.b.lshr(new, ir.Constant(wide, low)) if low else new
                piece = self.b.trunc(piece, ir.IntType(8 * size)) if size < n else piece
                self.store_bytes(ref, at, size, piece)
            return
        for k in range(n):
            unit_shift = (n - 1 - k) * unit
            part_mask = (mask >> unit_shift) & ((1 << unit) - 1)
            unit_type = ir.IntType(unit)
            piece = self.b.trunc(self.b.lshr(new, ir.Constant(wide, unit_shift)), unit_type) \
                if n > 1 else new
            if part_mask != (1 << unit) - 1:
                old = self.load_unit(ref, first + k)
                kept = self.b.and_(old, ir.Constant(unit_type, ~part_mask & ((1 << unit) - 1)))
                piece = self.b.or_(kept, piece)
            self.store_unit(ref, first + k, piece)

    def load_unit(self, ref: PacketRef | MemRef, k: int) -> ir.Value:
        if isinstance(ref, PacketRef):
            off = self.b.add(ref.offset, ir.Constant(I32, k))
            return self.b.call(self.npu["npu.pkt.load8"], [self.ctx, off])
        word = self.b.add(ref.word, ir.Constant(I32, k))
        return self.b.call(self.npu["npu.mem.read"], [self.ctx, ir.Constant(I32, ref.space),
                                                      word])

    def wide_fn(self, name: str, typ: ir.FunctionType, readonly: bool) -> ir.Function:
        """A wide packet access (WIDE_BYTES), declared on first use."""
        if name not in self.npu:
            fn = ir.Function(self.module, typ, name)
            fn.attributes.add("nounwind")
            if readonly:
                fn.attributes.add("readonly")
            self.npu[name] = fn
        return self.npu[name]

    def load_bytes(self, ref: PacketRef, at: int, size: int) -> ir.Value:
        """`size` packet bytes from header byte `at`, in network order (load_unit's bytes
        assembled, with one call for a wide piece)."""
        if size == 1:
            return self.load_unit(ref, at)
        t = ir.IntType(8 * size)
        fn = self.wide_fn(wide_load_name(size), ir.FunctionType(t, [PTR, I32]), True)
        return self.b.call(fn, [self.ctx, self.b.add(ref.offset, ir.Constant(I32, at))])

    def store_bytes(self, ref: PacketRef, at: int, size: int, v: ir.Value) -> None:
        if size == 1:
            self.store_unit(ref, at, v)
            return
        t = ir.IntType(8 * size)
        fn = self.wide_fn(wide_store_name(size), ir.FunctionType(VOID, [PTR, I32, t]), False)
        self.b.call(fn, [self.ctx, self.b.add(ref.offset, ir.Constant(I32, at)), v])

    def store_unit(self, ref: PacketRef | MemRef, k: int, v: ir.Value) -> None:
        if isinstance(ref, PacketRef):
            off = self.b.add(ref.offset, ir.Constant(I32, k))
            self.b.call(self.npu["npu.pkt.store8"], [self.ctx, off, v])
        else:
            word = self.b.add(ref.word, ir.Constant(I32, k))
            self.b.call(self.npu["npu.mem.write"], [self.ctx, ir.Constant(I32, ref.space),
                                                    word, v])

    def expr_Slice(self, e: A.Slice) -> ir.Value:  # noqa: N802
        v = self.expr(e.target)
        hi, lo = self.p.values[id(e.hi)], self.p.values[id(e.lo)]
        if lo:
            v = self.b.lshr(v, ir.Constant(v.type, lo))
        return self.b.trunc(v, ir.IntType(hi - lo + 1)) if hi - lo + 1 < v.type.width else v

    def expr_Unary(self, e: A.Unary) -> ir.Value:  # noqa: N802
        v = self.expr(e.operand)
        if e.op == "-":
            return self.b.sub(ir.Constant(v.type, 0), v)
        return self.b.not_(v)  # '~' on bits, '!' on bool

    def expr_Cast(self, e: A.Cast) -> ir.Value:  # noqa: N802
        v = self.expr(e.operand)
        to = llvm_type(self.p.type_of(e))
        if v.type.width < to.width:
            return self.b.zext(v, to)
        if v.type.width > to.width:
            return self.b.trunc(v, to)
        return v

    def arith(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        return {"+": self.b.add, "-": self.b.sub, "*": self.b.mul, "&": self.b.and_,
                "|": self.b.or_, "^": self.b.xor}[op](a, b)

    def expr_Binary(self, e: A.Binary) -> ir.Value:  # noqa: N802
        if e.op in ("&&", "||"):
            return self.short_circuit(e)
        a = self.expr(e.left)
        b = self.expr(e.right)
        if e.op in ("<<", ">>"):
            return self.shift(e.op, a, b)
        if e.op in ("==", "!=", "<", "<=", ">", ">="):
            return self.b.icmp_unsigned(e.op, a, b)
        return self.arith(e.op, a, b)

    def shift(self, op: str, a: ir.Value, amount: ir.Value) -> ir.Value:
        """Shifts by >= the width give 0 (LLVM would give poison)."""
        w = a.type.width
        wide = ir.IntType(max(w, amount.type.width))
        amt = self.b.zext(amount, wide) if amount.type.width < wide.width else amount
        too_far = self.b.icmp_unsigned(">=", amt, ir.Constant(wide, w))
        amt = self.b.trunc(amt, a.type) if wide.width > w else amt
        safe = self.b.select(too_far, ir.Constant(a.type, 0), amt)
        shifted = self.b.shl(a, safe) if op == "<<" else self.b.lshr(a, safe)
        return self.b.select(too_far, ir.Constant(a.type, 0), shifted)

    def short_circuit(self, e: A.Binary) -> ir.Value:
        left = self.expr(e.left)
        start = self.b.block
        rhs = self.b.function.append_basic_block("rhs")
        join = self.b.function.append_basic_block("sc")
        if e.op == "&&":
            self.b.cbranch(left, rhs, join)
        else:
            self.b.cbranch(left, join, rhs)
        self.b.position_at_end(rhs)
        right = self.expr(e.right)
        rhs_end = self.b.block
        self.b.branch(join)
        self.b.position_at_end(join)
        phi = self.b.phi(I1)
        phi.add_incoming(ir.Constant(I1, e.op == "||"), start)
        phi.add_incoming(right, rhs_end)
        return phi

    def expr_Call(self, e: A.Call) -> ir.Value:  # noqa: N802
        if e.func in self.functions:
            args = [self.ctx]
            for a in e.args:
                v = self.expr(a)
                args.append(v.offset if isinstance(v, PacketRef) else v)
            return self.b.call(self.functions[e.func], args)
        return getattr(self, "intrinsic_" + e.func)(e)

    def intrinsic_csum(self, e: A.Call) -> ir.Value:
        """Ones-complement checksum over a header's bytes (RFC 1071), complemented."""
        ref = self.expr(e.args[0])
        if self.wide:
            return self.csum_words(ref)
        total = ir.Constant(I32, 0)
        for k in range(0, ref.layout.bytes, 2):
            hi = self.b.zext(self.load_unit(ref, k), I32)
            word = self.b.shl(hi, ir.Constant(I32, 8))
            if k + 1 < ref.layout.bytes:
                word = self.b.or_(word, self.b.zext(self.load_unit(ref, k + 1), I32))
            total = self.b.add(total, word)
        return self.b.not_(self.fold16(total))

    def csum_words(self, ref: PacketRef) -> ir.Value:
        """intrinsic_csum over 32-bit words (lower(wide=True)): a big-endian 32-bit word is
        two 16-bit words, w0 * 2^16 + w1, which is w0 + w1 modulo 0xFFFF, so the sum of the
        32-bit words (a 16-bit word, then an odd last byte as a word's high byte, at the
        end) folded with end-around carries is the same ones-complement sum: the same value
        in 0..0xFFFF, 0 only for all-zero bytes, as the 16-bit sum folded."""
        i64 = ir.IntType(64)
        total: ir.Value = ir.Constant(i64, 0)
        for at, size in byte_chunks(0, ref.layout.bytes, True):
            if size == 8:  # two 32-bit words (a 64-bit sum could carry out)
                for half in (0, 4):
                    total = self.b.add(total, self.b.zext(self.load_bytes(ref, at + half, 4),
                                                          i64))
                continue
            word = self.b.zext(self.load_bytes(ref, at, size), i64)
            total = self.b.add(total, self.b.shl(word, ir.Constant(i64, 8)) if size == 1
                               else word)
        total = self.b.add(self.b.and_(total, ir.Constant(i64, 0xFFFFFFFF)),
                           self.b.lshr(total, ir.Constant(i64, 32)))  # below 2^33
        for _ in range(3):  # below 2^17 + 1, 2^16 + 2, then at most 0xFFFF
            total = self.b.add(self.b.and_(total, ir.Constant(i64, 0xFFFF)),
                               self.b.lshr(total, ir.Constant(i64, 16)))
        return self.b.not_(self.b.trunc(total, ir.IntType(16)))

    def fold16(self, total: ir.Value) -> ir.Value:
        for _ in range(2):  # fold the carries twice: enough for sums below 2^32
            low = self.b.and_(total, ir.Constant(I32, 0xFFFF))
            total = self.b.add(low, self.b.lshr(total, ir.Constant(I32, 16)))
        return self.b.trunc(total, ir.IntType(16))

    def intrinsic_csum_update(self, e: A.Call) -> ir.Value:
        """RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')."""
        hc, old, new = (self.b.zext(self.expr(a), I32) for a in e.args)
        inv = ir.Constant(I32, 0xFFFF)
        total = self.b.add(self.b.add(self.b.xor(hc, inv), self.b.xor(old, inv)), new)
        return self.b.not_(self.fold16(total))

    def byte_values(self, e: A.Call) -> list[ir.Value]:
        out = []
        for a in e.args:
            v = self.expr(a)
            for k in range(v.type.width // 8 - 1, -1, -1):
                piece = self.b.lshr(v, ir.Constant(v.type, 8 * k)) if k else v
                out.append(self.b.trunc(piece, I8) if v.type.width > 8 else piece)
        return out

    def intrinsic_crc32(self, e: A.Call) -> ir.Value:
        crc = ir.Constant(I32, 0xFFFFFFFF)
        for byte in self.byte_values(e):
            crc = self.b.call(self.npu["npu.crc32.byte"], [crc, byte])
        return self.b.not_(crc)

    def intrinsic_toeplitz(self, e: A.Call) -> ir.Value:
        """Toeplitz hash with the RSS default key: for each input bit set, xor the 32-bit
        key window starting at that bit."""
        key = int.from_bytes(RSS_KEY, "big")
        key_bits = len(RSS_KEY) * 8
        result = ir.Constant(I32, 0)
        for i, byte in enumerate(self.byte_values(e)):
            for bit in range(8):
                pos = i * 8 + bit
                window = (key >> (key_bits - 32 - pos)) & 0xFFFFFFFF
                set_ = self.b.trunc(self.b.lshr(byte, ir.Constant(I8, 7 - bit)), I1)
                result = self.b.xor(result, self.b.select(set_, ir.Constant(I32, window),
                                                          ir.Constant(I32, 0)))
        return result

    def _hash(self, e: A.Call) -> ir.Value:
        return self.b.call(self.npu["npu." + e.func], [self.expr(e.args[0])])

    intrinsic_hash48 = intrinsic_hash64 = intrinsic_hash128 = _hash

    def intrinsic_pop_count(self, e: A.Call) -> ir.Value:
        """llvm.ctpop: one instruction natively, the chip's pop_count per word on the ME."""
        v = self.expr(e.args[0])
        return self.b.call(self.module.declare_intrinsic("llvm.ctpop", [v.type]), [v])

    # ---- receive / transmit / buffer operations (docs/datapath.md) ----
    def is_media(self, e: A.MethodCall) -> bool:
        return isinstance(e.target, A.Name) and e.target.name in ("media", "buffer") \
            and self.scope.get(e.target.name) is None and e.target.name not in self.p.memories

    def media_fn(self, name: str) -> ir.Function:
        """Declare a buffer operation on first use."""
        try:
            return self.module.get_global(name)
        except KeyError:
            fn = ir.Function(self.module, self.media_npu[name], name)
            fn.attributes.add("nounwind")
            return fn

    def buffer_call(self, e: A.MethodCall, out: ir.Value) -> ir.Value:
        """buffer.alloc() / buffer.store(h, at, from): the call; returns its success."""
        args = [self.widen32(self.expr(a)) for a in e.args]
        return self.b.call(self.media_fn(f"npu.buf.{e.method}"), [self.ctx, *args, out])

    def media_call(self, e: A.MethodCall) -> ir.Value | None:
        read, write = self.npu["npu.meta.read"], self.npu["npu.meta.write"]
        if e.method in ("sop", "eop"):
            status = self.b.call(read, [self.ctx, ir.Constant(I32, META_MEDIA)])
            bit = MEDIA_SOP if e.method == "sop" else MEDIA_EOP
            return self.b.icmp_unsigned("!=", self.b.and_(status, ir.Constant(I32, bit)),
                                        ir.Constant(I32, 0))
        if e.method == "consume":
            self.verdict(VERDICT_CONSUMED, 0)
            return None
        if e.method in ("turn_begin", "turn_end"):
            name = "npu.rx.turn_take" if e.method == "turn_begin" else "npu.rx.turn_done"
            self.b.call(self.media_fn(name), [self.ctx])
            return None
        args = [self.widen32(self.expr(a)) for a in e.args]
        if e.method == "send":
            self.b.call(write, [self.ctx, ir.Constant(I32, META_FIELDS["out_port"].word),
                                args[0]])
            self.verdict(VERDICT_FORWARD, 0)
            return None
        self.b.call(self.media_fn(f"npu.buf.{e.method}"), [self.ctx, *args])  # attach, free
        return None

    def expr_MethodCall(self, e: A.MethodCall) -> ir.Value | None:  # noqa: N802
        if self.is_media(e):
            return self.media_call(e)
        m = self.memory_of(e.target)
        if e.method == "contains":
            return self.table_lookup(m, self.expr(e.args[0]), self.make_var(ir.Constant(I32, 0)))
        space = ir.Constant(I32, SPACE_IDS[m.space])
        index = self.widen32(self.expr(e.args[0]))
        index = self.b.and_(index, ir.Constant(I32, m.size - 1))
        word = self.b.add(self.b.mul(index, ir.Constant(I32, m.words_per_entry)),
                          ir.Constant(I32, m.word_offset))
        amount = ir.Constant(I32, 1) if e.method == "count" else \
            self.widen32(self.expr(e.args[1]))
        old = self.b.call(self.npu["npu.mem.add"], [self.ctx, space, word, amount])
        if e.method == "add" and m.kind == "register":
            return self.b.trunc(old, llvm_type(m.value)) if m.value.width < 32 else old
        return None


def hoist_allocas(module: ir.Module) -> None:
    """Every function's allocas to the top of its entry block.  make_var puts a variable's
    alloca at the end of the entry block as it is then, after calls such as a memory read or
    another MBL function; when LLVM inlines such a call it splits the block, and an alloca
    left behind the split is a dynamic one: SROA does not promote it, the inliner wraps the
    inlined body in llvm.stacksave / stackrestore (which the ME back end cannot lower, so a
    function with many `let`s failed to compile for the chip), and natively it costs a stack
    save and restore per packet."""
    for fn in module.functions:
        if fn.blocks:
            entry = fn.blocks[0].instructions
            entry[:] = sorted(entry, key=lambda i: not isinstance(i, ir.AllocaInstr))


def lower(program: Program, name: str = "mbl", trace: LineTable | None = None,
          variables: bool = False, wide: bool = False) -> ir.Module:
    """Lower a checked program (no errors) to an LLVM module with npu.* declarations.
    With `trace` (only npkit.compiler.mbl.linetrace's build, never a target's): before every
    statement the module calls the line-trace hooks, and `trace` fills with what their ids
    mean.  With `variables` (the ME backend's build) each named variable gets a
    `llvm.dbg.declare`: debug records, which change no code (tests/mbl/test_debuginfo.py)
    but which MCJIT's DWARF writer refuses in a line-tables-only unit, so the native
    target's build has none.  With `wide` (the native target's build) multi-byte packet
    fields are read and written in pieces of 2, 4 or 8 bytes (WIDE_BYTES) and `csum` sums
    32-bit words: the same values, fewer host instructions."""
    return Lowerer(program, name, trace, variables, wide).run()
