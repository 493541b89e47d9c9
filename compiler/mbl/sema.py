"""Semantic analysis and verification of MBL programs.

Checks types and widths, names, constants, resources and control flow; records the type of
every expression for the lowering.  Every problem becomes a diagnostic; nothing raises.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from npkit.base.diagnostics import SourceLocation
from npkit.base.numbers import clip

from . import ast as A
from .budget import check_code_size
from .builder import parse_source
from .diagnostics import DiagnosticBag
from .types import (
    MAX_WIDTH,
    META_FIELDS,
    SPACE_WORDS,
    Bits,
    Bool,
    Error,
    FieldInfo,
    Layout,
    Literal,
    MemoryInfo,
    MemType,
    Reasons,
    Type,
    View,
    Void,
)

STD_ROOT = Path(__file__).resolve().parent
# toeplitz(): each input bit selects a 32-bit window of the 320-bit RSS key, so the key
# covers 320 - 32 = 288 input bits (36 bytes: the IPv6 source, destination and ports).
TOEPLITZ_MAX_BITS = 288
# One source file (the root or an import) is read up to this size; larger is `too-large`.
MAX_SOURCE_BYTES = 4 << 20
MAX_SUGGESTIONS = 50  # "did you mean" hints per program (MAX_SHOWN diagnostics are shown)
MAX_LOOP_TRIPS = 4096
VERDICTS = (A.Forward, A.Drop, A.Exception_, A.Next)

# Intrinsics: name -> (fixed argument count or None for variadic).  Typing is in _intrinsic.
INTRINSICS = {"csum": 1, "csum_update": 3, "crc32": None, "toeplitz": None, "hash48": 1,
              "hash64": 1, "hash128": 1, "pop_count": 1}


@dataclass(frozen=True)
class MediaOp:
    """A built-in receive/transmit/buffer operation (docs/datapath.md, "The MBL surface")."""

    args: tuple[int, ...]  # each argument is a bit<N <= this>
    result: str  # "bool", "void", "verdict", or "fallible" (a bit<32> bound by a checked let)
    stage: str  # "rx": receive stages only, "tx": transmit stages only, "any"


MEDIA_OPS: dict[tuple[str, str], MediaOp] = {
    ("media", "sop"): MediaOp((), "bool", "rx"),
    ("media", "eop"): MediaOp((), "bool", "rx"),
    ("media", "consume"): MediaOp((), "verdict", "rx"),
    ("media", "turn_begin"): MediaOp((), "void", "rx"),
    ("media", "turn_end"): MediaOp((), "void", "rx"),
    ("media", "send"): MediaOp((16,), "verdict", "tx"),
    ("buffer", "alloc"): MediaOp((), "fallible", "any"),
    ("buffer", "store"): MediaOp((32, 16, 16), "fallible", "rx"),
    ("buffer", "attach"): MediaOp((32, 16), "void", "rx"),
    ("buffer", "free"): MediaOp((32,), "void", "any"),
}


@dataclass
class Local:
    type: Type
    mutable: bool
    span: SourceLocation
    generation: int = 0  # packet views: the push/pull count when bound


@dataclass
class Program:
    """A checked program: declarations by name plus the type of every expression."""

    sources: dict[str, str]
    consts: dict[str, tuple[int, Type]] = field(default_factory=dict)
    enums: dict[str, dict[str, tuple[int, Bits]]] = field(default_factory=dict)
    layouts: dict[str, Layout] = field(default_factory=dict)
    memories: dict[str, MemoryInfo] = field(default_factory=dict)
    functions: dict[str, A.Function] = field(default_factory=dict)
    blocks: dict[str, A.Microblock] = field(default_factory=dict)
    pipelines: dict[str, A.Pipeline] = field(default_factory=dict)
    # pipeline -> stage -> output label ("default" for plain `next`) -> next stage
    pipeline_edges: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    # pipeline -> its transmit stage (the stage whose block ends in media.send), if any
    pipeline_tx: dict[str, str] = field(default_factory=dict)
    # block -> "rx" / "tx" -> where the block first uses a receive / transmit operation
    media_use: dict[str, dict[str, SourceLocation]] = field(default_factory=dict)
    modules: list[A.Module] = field(default_factory=list)
    types: dict[int, Type] = field(default_factory=dict)  # id(expr) -> type
    values: dict[int, int] = field(default_factory=dict)  # id(expr) -> constant value
    # id(block) -> index of its first statement after a verdict or return: the lowering
    # stops there (the statements are checked, and reported once as `unreachable`)
    unreachable: dict[int, int] = field(default_factory=dict)
    reasons: Reasons = field(default_factory=Reasons)
    labels: Reasons = field(default_factory=Reasons)

    def type_of(self, e: A.Expr) -> Type:
        return self.types.get(id(e), Error())


def _fits(value: int, width: int) -> bool:
    return 0 <= value < (1 << width)


class Checker:
    def __init__(self, program: Program, bag: DiagnosticBag) -> None:
        self.p = program
        self.bag = bag
        self.scopes: list[dict[str, Local]] = []
        self.in_function: A.Function | None = None
        self.calls: dict[str, set[str]] = {}
        self.current: str = ""
        # push/pull statements seen so far (in source order) in the current body; a packet
        # view bound before one of them refers to moved bytes and may not be used after it
        self.generation = 0
        self.suggestions = 0

    # ---- helpers ----
    def err(self, kind: str, msg: str, span: SourceLocation, hint: str = "") -> Error:
        self.bag.error(kind, msg, span, hint)
        return Error()

    def global_names(self) -> dict[str, str]:
        p = self.p
        names: dict[str, str] = {}
        for kind, table in (("constant", p.consts), ("enum", p.enums), ("type", p.layouts),
                            ("memory", p.memories), ("function", p.functions),
                            ("block", p.blocks), ("pipeline", p.pipelines)):
            for n in table:
                names[n] = kind
        return names

    def lookup_local(self, name: str) -> Local | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def const_value(self, e: A.Expr, what: str) -> int | None:
        """Check e as a constant expression and return its value (or None + diagnostic)."""
        self.expr(e, None)
        v = self.p.values.get(id(e))
        if v is None and not isinstance(self.p.type_of(e), Error):
            self.err("not-constant", f"{what} must be a constant expression", e.span,
                     "use literals, constants and enum members only")
        return v

    # ---- types ----
    def resolve_type(self, t: A.TypeRef, allow_views: bool = False) -> Type:
        if isinstance(t, A.BitTypeRef):
            if t.width is None:  # an out-of-range literal, already reported
                return Error()
            if not 1 <= t.width <= MAX_WIDTH:
                return self.err("bad-width", f"bit<{t.width}> is out of range", t.span,
                                f"widths go from 1 to {MAX_WIDTH}")
            return Bits(t.width)
        if isinstance(t, A.BoolTypeRef):
            return Bool()
        assert isinstance(t, A.NamedTypeRef)
        if t.name in self.p.enums:
            members = self.p.enums[t.name]
            return next(iter(members.values()))[1] if members else Error()
        if t.name in self.p.layouts:
            layout = self.p.layouts[t.name]
            if allow_views:
                return View(layout, layout.is_header)
            return self.err("bad-type", f"'{t.name}' is a header or struct, not a value type",
                            t.span, "headers and structs are used through references "
                            "(packet<h>(off), array elements, parameters)")
        return self.err("undefined-type", f"unknown type '{t.name}'", t.span,
                        "declare it, import the file that declares it, or use bit<N>")

    # ---- declarations ----
    def declare_all(self, decls: list[A.Decl]) -> None:
        seen: dict[str, SourceLocation] = {}
        for d in decls:
            if isinstance(d, A.Import):
                continue
            if d.name in seen:
                prev = seen[d.name]
                self.err("redefinition", f"'{d.name}' is already defined at "
                         f"{prev.file}:{prev.line}", d.span, "rename one of them")
                continue
            seen[d.name] = d.span
            if isinstance(d, A.Function):
                self.p.functions[d.name] = d
            elif isinstance(d, A.Microblock):
                self.p.blocks[d.name] = d
            elif isinstance(d, A.Pipeline):
                self.p.pipelines[d.name] = d
        # Types first (enums, headers), then constants, then memories: each may use the last.
        for d in decls:
            if isinstance(d, A.Enum) and d.name in seen and seen[d.name] is d.span:
                self.declare_enum(d)
        for d in decls:
            if isinstance(d, A.Header) and seen.get(d.name) is d.span:
                self.declare_layout(d)
        for d in decls:
            if isinstance(d, A.Const) and seen.get(d.name) is d.span:
                self.declare_const(d)
        for d in decls:
            if isinstance(d, A.Memory) and seen.get(d.name) is d.span:
                self.declare_memory(d)
        self.place_memories()

    def declare_enum(self, d: A.Enum) -> None:
        base = self.resolve_type(d.base)
        members: dict[str, tuple[int, Bits]] = {}
        if not isinstance(base, Bits):
            if not isinstance(base, Error):
                self.err("bad-type", "an enum's base type must be bit<N>", d.base.span)
            self.p.enums[d.name] = {}
            return
        for m in d.members:
            if m.name in members:
                self.err("redefinition", f"enum member '{m.name}' appears twice", m.span)
                continue
            v = self.const_value(m.value, "an enum value")
            if v is not None and not _fits(v, base.width):
                self.err("literal-range", f"{v} does not fit in {base.show()}", m.value.span)
            members[m.name] = (v or 0, base)
        self.p.enums[d.name] = members

    def declare_layout(self, d: A.Header) -> None:
        fields: list[FieldInfo] = []
        offset = 0
        kind = "header" if d.is_header else "struct"
        for f in d.fields:
            if any(x.name == f.name for x in fields):
                self.err("redefinition", f"field '{f.name}' appears twice in {d.name}", f.span)
                continue
            t = self.resolve_type(f.type)
            if isinstance(t, Bool) and not d.is_header:
                t = Bits(1)
            if not isinstance(t, Bits):
                if not isinstance(t, Error):
                    self.err("bad-type", f"{kind} fields must be bit<N>", f.type.span)
                continue
            fields.append(FieldInfo(f.name, t.width, offset))
            offset += t.width
        if d.is_header and offset % 8:
            self.err("header-size", f"header {d.name} is {offset} bits, not a whole number "
                     "of bytes", d.span, "add a padding field so the total is a multiple of 8")
        if not fields:
            self.err("header-size", f"{kind} {d.name} has no fields", d.span)
        self.p.layouts[d.name] = Layout(d.name, tuple(fields), d.is_header)

    def declare_const(self, d: A.Const) -> None:
        t = self.resolve_type(d.type)
        v = self.const_value(d.value, "a constant's value")
        if isinstance(t, Bits) and v is not None and not _fits(v, t.width):
            self.err("literal-range", f"{v} does not fit in {t.show()}", d.value.span,
                     f"the largest {t.show()} is {(1 << t.width) - 1}")
        elif isinstance(t, Bool):
            self.err("bad-type", "constants must be bit<N>", d.type.span)
            t = Error()
        self.p.consts[d.name] = (v or 0, t)

    def declare_memory(self, d: A.Memory) -> None:
        size = self.const_value(d.size, "a memory size")
        if size is not None and (size <= 0 or size & (size - 1)):
            self.err("resource", f"size {size} of {d.name} is not a power of two", d.size.span,
                     "sizes are powers of two so an index can be masked to stay in range")
            size = None
        key: Bits | None = None
        value: Type | None = None
        words = 1
        if d.kind in ("lpm", "hash"):
            k = self.resolve_type(d.key)
            v = self.resolve_type(d.value)
            if d.kind == "lpm" and k not in (Bits(32), Bits(128)) and not isinstance(k, Error):
                self.err("table-key", f"an lpm table key must be bit<32> or bit<128>, not "
                         f"{k.show()}", d.key.span, "IPv4 prefixes: bit<32>; IPv6: bit<128>")
            elif d.kind == "hash" and not isinstance(k, Bits | Error):
                self.err("table-key", "a hash table key must be bit<N>", d.key.span)
            if not isinstance(v, Error) and not (isinstance(v, Bits) and v.width <= 32):
                self.err("table-value", f"a table value must be bit<N> with N <= 32, not "
                         f"{v.show()}", d.value.span,
                         "store an index into an array of structs instead")
            key = k if isinstance(k, Bits) else None
            value = v
            words = 2 + ((key.width + 31) // 32 if key else 1)
        elif d.kind == "array":
            v = self.resolve_type(d.value, allow_views=True)
            if isinstance(v, View):
                v = View(v.layout, False)
                if v.layout.is_header:
                    self.err("bad-type", "array elements must be bit<N> or a struct",
                             d.value.span)
                words = v.layout.words
            elif isinstance(v, Bits):
                words = (v.width + 31) // 32
            elif not isinstance(v, Error):
                self.err("bad-type", "array elements must be bit<N> or a struct", d.value.span)
            value = v
        elif d.kind == "counter":
            value = Bits(32)
        else:  # register
            v = self.resolve_type(d.value)
            if isinstance(v, Bits) and v.width > 32:
                self.err("resource", "register elements are at most 32 bits (one atomic word)",
                         d.value.span)
            value = v
        space = d.space or "sram"
        self.p.memories[d.name] = MemoryInfo(d.name, d.kind, key, value, size or 1, space, words)

    def place_memories(self) -> None:
        """Give each memory a word offset in its space; report spaces that overflow."""
        used: dict[str, int] = {s: 0 for s in SPACE_WORDS}
        for name, m in list(self.p.memories.items()):
            self.p.memories[name] = MemoryInfo(m.name, m.kind, m.key, m.value, m.size, m.space,
                                               m.words_per_entry, used[m.space])
            used[m.space] += m.words
        for space, words in used.items():
            if words > SPACE_WORDS[space]:
                last = [m for m in self.p.memories.values() if m.space == space][-1]
                self.err("resource", f"{space} needs {words} words but has "
                         f"{SPACE_WORDS[space]}", self.decl_span(last.name),
                         "shrink the tables or place some in another memory with 'in ...'")

    def decl_span(self, name: str) -> SourceLocation:
        for mod in self.p.modules:
            for d in mod.decls:
                if d.name == name:
                    return d.span
        return SourceLocation("<unknown>", 1, 1)

    # ---- bodies ----
    def check_function(self, f: A.Function) -> None:
        self.in_function = f
        self.current = f.name
        self.scopes = [{}]
        self.generation = 0
        for prm in f.params:
            t = self.resolve_type(prm.type, allow_views=True)
            if isinstance(t, View) and not t.in_packet:
                t = self.err("bad-type", "struct parameters are not supported", prm.type.span,
                             "pass the fields you need, or a header reference")
            if prm.name in self.scopes[0]:
                self.err("redefinition", f"parameter '{prm.name}' appears twice", prm.span)
            self.scopes[0][prm.name] = Local(t, False, prm.span)
        ret = self.resolve_type(f.ret) if f.ret else Void()
        self.fn_ret = ret
        ends = self.block(f.body)
        if not isinstance(ret, Void) and not ends:
            self.err("missing-return", f"function {f.name} can end without returning a value",
                     replace(f.body.span, length=1),
                     "add a return statement at the end of every path")
        self.in_function = None

    def check_block(self, b: A.Microblock) -> None:
        self.current = b.name
        self.scopes = [{}]
        self.generation = 0
        self.fn_ret = Void()
        if not self.block(b.body):
            self.err("missing-verdict", f"block {b.name} can finish a packet without a verdict",
                     b.span, "end every path with forward(...), drop(reason), "
                     "exception(code) or next")
        if any(_is_turn_op(e) for e in _exprs(b.body)):
            TurnCheck(self).block(b.body, "before")

    def block(self, b: A.Block) -> bool:
        """Check statements; return True when every path through them ends (never falls off)."""
        self.scopes.append({})
        ends = False
        for i, s in enumerate(b.stmts):
            if ends:  # checked like the rest, reported once, never lowered
                if id(b) not in self.p.unreachable:
                    self.bag.warning("unreachable", "this statement can never run", s.span,
                                     "remove it or the verdict/return before it")
                    self.p.unreachable[id(b)] = i
                self.stmt(s)
                continue
            ends = self.stmt(s)
        self.scopes.pop()
        return ends

    def stmt(self, s: A.Stmt) -> bool:
        method = getattr(self, "stmt_" + type(s).__name__.rstrip("_"))
        return method(s)

    def stmt_Block(self, s: A.Block) -> bool:  # noqa: N802
        return self.block(s)

    def stmt_Let(self, s: A.Let) -> bool:  # noqa: N802
        declared = self.resolve_type(s.type, allow_views=True) if s.type else None
        if s.otherwise is not None:
            t = self.fallible(s.value)
            if not self.diverges(s.otherwise):
                self.err("else-must-end", "the else branch of a checked let must end in a "
                         "verdict or return", s.otherwise.span,
                         "e.g. `let ip = packet<ipv4_t>(14) else drop(runt);`")
        else:
            t = self.expr(s.value, declared)
        if declared is not None and not isinstance(declared, Error):
            t = self.coerce(s.value, t, declared)
        if isinstance(t, Literal):
            self.err("needs-width", f"cannot tell the width of '{s.name}'", s.span,
                     f"write `let {s.name}: bit<N> = ...;`")
            t = Error()
        if isinstance(t, Void):
            self.err("type-mismatch", "this expression has no value", s.value.span)
            t = Error()
        if isinstance(t, MemType):
            self.err("bad-type", "a memory cannot be stored in a variable", s.value.span)
        if s.mutable and isinstance(t, View):
            self.err("bad-type", "references (headers, structs) are bound with let, not var",
                     s.span)
        self.define(s.name, Local(t, s.mutable, s.span, self.generation))
        return False

    def define(self, name: str, local: Local) -> None:
        if name in self.scopes[-1]:
            self.err("redefinition", f"'{name}' is already defined in this scope", local.span,
                     "pick another name")
        self.scopes[-1][name] = local

    def diverges(self, s: A.Stmt) -> bool:
        return self.stmt(s)

    def stmt_Assign(self, s: A.Assign) -> bool:  # noqa: N802
        t = self.lvalue(s.target)
        v = self.expr(s.value, t if isinstance(t, Bits | Bool) else None)
        if isinstance(t, Error) or isinstance(v, Error):
            return False
        if s.op != "=" and not isinstance(t, Bits):
            self.err("type-mismatch", f"'{s.op}' needs a bit<N> target", s.target.span)
            return False
        self.coerce(s.value, v, t)
        return False

    def lvalue(self, e: A.Expr) -> Type:
        if isinstance(e, A.Name):
            local = self.lookup_local(e.name)
            if local is not None:
                if not local.mutable:
                    self.err("immutable", f"'{e.name}' is immutable", e.span,
                             f"declare it with `var {e.name} = ...` to change it")
                self.p.types[id(e)] = local.type
                return local.type
        elif isinstance(e, A.Field):
            if isinstance(e.target, A.Name) and e.target.name == "meta" \
                    and self.lookup_local("meta") is None:
                t = self.expr(e, None)
                mf = META_FIELDS.get(e.field)
                if mf is not None and not mf.writable:
                    self.err("immutable", f"meta.{e.field} is read-only", e.span)
                return t
            t = self.expr(e, None)
            if isinstance(self.p.type_of(e.target), View | Error):
                return t
        elif isinstance(e, A.Index):
            t = self.expr(e, None)
            mt = self.p.type_of(e.target)
            if isinstance(mt, MemType) and mt.memory.kind in ("array", "register"):
                return t
            if isinstance(mt, Error):
                return mt
        else:
            self.expr(e, None)
        return self.err("not-assignable", "this cannot be assigned to", e.span,
                        "assign to a var, a header or struct field, meta.<field>, or "
                        "an array/register element")

    def stmt_If(self, s: A.If) -> bool:  # noqa: N802
        self.condition(s.cond)
        a = self.block(s.then)
        b = self.stmt(s.otherwise) if s.otherwise is not None else False
        return a and b

    def condition(self, e: A.Expr) -> None:
        t = self.expr(e, Bool())
        if not isinstance(t, Bool | Error):
            self.err("type-mismatch", f"a condition must be bool, not {t.show()}", e.span,
                     "compare explicitly, e.g. `x != 0`")

    def stmt_For(self, s: A.For) -> bool:  # noqa: N802
        lo = self.const_value(s.start, "a loop bound")
        hi = self.const_value(s.stop, "a loop bound")
        if lo is not None and hi is not None and not 0 <= hi - lo <= MAX_LOOP_TRIPS:
            self.err("loop-bound", f"the loop runs {hi - lo} times; the limit is "
                     f"0..{MAX_LOOP_TRIPS}", s.span, "loops must be short and bounded")
        self.scopes.append({s.var: Local(Bits(32), False, s.span)})
        self.block(s.body)
        self.scopes.pop()
        return False

    def stmt_Return(self, s: A.Return) -> bool:  # noqa: N802
        if self.in_function is None:
            self.err("return-in-block", "return is not allowed in a block", s.span,
                     "a block ends with a verdict: forward, drop, exception or next")
            return True
        ret = self.fn_ret
        if s.value is None:
            if not isinstance(ret, Void):
                self.err("type-mismatch", f"return needs a {ret.show()} value", s.span)
            return True
        t = self.expr(s.value, ret if not isinstance(ret, Void) else None)
        if isinstance(ret, Void):
            self.err("type-mismatch", "this function returns no value", s.value.span)
        else:
            self.coerce(s.value, t, ret)
        return True

    def verdict_allowed(self, s: A.Stmt) -> bool:
        if self.in_function is not None:
            self.err("verdict-in-fn", "verdicts are only allowed in a block", s.span,
                     "return a value and decide the verdict in the block")
            return False
        return True

    def stmt_Forward(self, s: A.Forward) -> bool:  # noqa: N802
        self.verdict_allowed(s)
        self.small_int(s.port, 16, "a port")
        if s.queue is not None:
            self.small_int(s.queue, 16, "a queue")
        return True

    def small_int(self, e: A.Expr, max_width: int, what: str) -> None:
        t = self.expr(e, Bits(max_width))
        if isinstance(t, Bits) and t.width > max_width:
            self.err("type-mismatch", f"{what} is at most bit<{max_width}>, not {t.show()}",
                     e.span, f"cast it: `... as bit<{max_width}>`")
        elif not isinstance(t, Bits | Error):
            self.err("type-mismatch", f"{what} must be bit<N>", e.span)

    def stmt_Drop(self, s: A.Drop) -> bool:  # noqa: N802
        if self.verdict_allowed(s):
            self.p.reasons.id(s.reason)
        return True

    def stmt_Exception(self, s: A.Exception_) -> bool:  # noqa: N802
        self.verdict_allowed(s)
        self.small_int(s.code, 32, "an exception code")
        return True

    def stmt_Next(self, s: A.Next) -> bool:  # noqa: N802
        if self.verdict_allowed(s):
            self.p.labels.id(s.label or "default")
        return True

    def stmt_Adjust(self, s: A.Adjust) -> bool:  # noqa: N802
        t = self.expr(s.amount, Bits(32))
        if isinstance(t, Bits) and t.width > 32:
            self.err("type-mismatch", f"a {s.op} amount is at most bit<32>", s.amount.span)
        elif not isinstance(t, Bits | Error):
            self.err("type-mismatch", f"a {s.op} amount must be bit<N>", s.amount.span)
        if not self.diverges(s.otherwise):
            self.err("else-must-end", f"the else branch of packet.{s.op} must end in a verdict "
                     "or return", s.otherwise.span, "e.g. `packet.push(4) else drop(no_room);`")
        self.generation += 1
        return False

    def stmt_ExprStmt(self, s: A.ExprStmt) -> bool:  # noqa: N802
        e = s.expr
        if isinstance(e, A.MethodCall) and self.is_media(e):
            op = MEDIA_OPS.get((e.target.name, e.method))  # type: ignore[attr-defined]
            if op is not None and op.result == "verdict":
                self.verdict_allowed(s)
                self.media_op(e, False, as_verdict=True)
                return True
        if not isinstance(s.expr, A.Call | A.MethodCall):
            self.err("unused-value", "this expression does nothing", s.span,
                     "assign it or remove it")
        self.expr(s.expr, None)
        return False

    # ---- expressions ----
    def fallible(self, e: A.Expr) -> Type:
        """Type a packet view or table lookup (only allowed as a checked let's value)."""
        if isinstance(e, A.PacketView):
            return self.packet_view(e)
        if isinstance(e, A.MethodCall) and (e.method == "lookup" or self.is_media(e)):
            return self.method(e, allow_lookup=True)
        t = self.expr(e, None)
        if not isinstance(t, Error):
            self.err("bad-else", "only packet<...>(offset), table lookups, buffer.alloc() "
                     "and buffer.store(...) can fail", e.span, "use a plain `let` here")
        return t

    def packet_view(self, e: A.PacketView) -> Type:
        off = self.expr(e.offset, Bits(32))
        if isinstance(off, Bits) and off.width > 32:
            self.err("type-mismatch", "a packet offset is at most bit<32>", e.offset.span)
        layout = self.p.layouts.get(e.header)
        if layout is None or not layout.is_header:
            return self.set(e, self.err("undefined-type", f"'{e.header}' is not a header",
                                        e.span, "declare `header ... { }` or import "
                                        "\"std/headers.mbl\""))
        return self.set(e, View(layout, True))

    def set(self, e: A.Expr, t: Type, value: int | None = None) -> Type:
        self.p.types[id(e)] = t
        if value is not None:
            self.p.values[id(e)] = value
        return t

    def coerce(self, e: A.Expr, t: Type, want: Type) -> Type:
        """Make e (of type t) a `want`; literals take the width, others must match."""
        if isinstance(t, Error) or isinstance(want, Error):
            return want
        if isinstance(t, Literal) and isinstance(want, Bits):
            v = self.p.values.get(id(e), 0)
            if not _fits(v, want.width):
                self.err("literal-range", f"{v} does not fit in {want.show()}", e.span,
                         f"the largest {want.show()} is {(1 << want.width) - 1}")
            self.retype_literal(e, want)
            return want
        if t != want:
            hint = f"convert explicitly: `({'...'}) as {want.show()}`" \
                if isinstance(t, Bits) and isinstance(want, Bits) else ""
            self.err("type-mismatch", f"expected {want.show()}, found {t.show()}", e.span, hint)
        return want

    def retype_literal(self, e: A.Expr, want: Bits) -> None:
        """Give a literal-typed constant expression (and its parts) a width."""
        if isinstance(self.p.types.get(id(e)), Literal):
            self.p.types[id(e)] = want
            v = self.p.values.get(id(e), 0)
            self.p.values[id(e)] = v & ((1 << want.width) - 1)

    def expr(self, e: A.Expr, want: Type | None) -> Type:
        """Type-check e; `want` lets literals take a width from their context."""
        method = getattr(self, "expr_" + type(e).__name__)
        t = method(e, want)
        if isinstance(t, Literal) and isinstance(want, Bits):
            t = self.coerce(e, t, want)
        self.p.types[id(e)] = t
        return t

    def expr_IntLit(self, e: A.IntLit, want: Type | None) -> Type:  # noqa: N802
        if not e.valid:  # out of range, already reported
            return Error()
        return self.set(e, Literal(), e.value)

    def expr_BoolLit(self, e: A.BoolLit, want: Type | None) -> Type:  # noqa: N802
        return self.set(e, Bool(), int(e.value))

    def expr_Name(self, e: A.Name, want: Type | None) -> Type:  # noqa: N802
        local = self.lookup_local(e.name)
        if local is not None:
            if isinstance(local.type, View) and local.type.in_packet \
                    and local.generation != self.generation:
                return self.err("stale-view", f"'{e.name}' was bound before a packet push/pull "
                                "moved the packet start", e.span,
                                "bind the header again after packet.push/pull")
            return self.set(e, local.type)
        if e.name in self.p.consts:
            v, t = self.p.consts[e.name]
            return self.set(e, t, v)
        if e.name in self.p.memories:
            return self.set(e, MemType(self.p.memories[e.name]))
        if e.name == "meta":
            return self.err("bad-meta", "meta is used as meta.<field>", e.span,
                            "fields: " + ", ".join(META_FIELDS))
        known = self.global_names()
        if e.name in known:
            return self.err("bad-name", f"{known[e.name]} '{e.name}' is not a value here",
                            e.span)
        return self.err("undefined-name", f"'{e.name}' is not defined", e.span,
                        self.suggest(e.name))

    def suggest(self, name: str) -> str:
        """A close name as a hint; only for the first MAX_SUGGESTIONS (each costs the whole
        pool of names, and only the first diagnostics are shown)."""
        self.suggestions += 1
        if self.suggestions > MAX_SUGGESTIONS:
            return "declare it before use"
        pool = list(self.global_names())
        for scope in self.scopes:
            pool.extend(scope)
        close = difflib.get_close_matches(name, pool, n=1)
        return f"did you mean '{close[0]}'?" if close else "declare it before use"

    def expr_PacketView(self, e: A.PacketView, want: Type | None) -> Type:  # noqa: N802
        self.packet_view(e)
        return self.err("unchecked-access", "a packet access must be checked against the "
                        "packet length", e.span, "bind it: `let h = packet<...>(off) else "
                        "drop(runt);`")

    def expr_Call(self, e: A.Call, want: Type | None) -> Type:  # noqa: N802
        if e.func in INTRINSICS:
            return self.intrinsic(e)
        f = self.p.functions.get(e.func)
        if f is None:
            for a in e.args:
                self.expr(a, None)
            if e.func in self.p.blocks:
                return self.err("bad-name", f"block '{e.func}' cannot be called", e.span,
                                "connect blocks in a pipeline instead")
            return self.err("undefined-name", f"function '{e.func}' is not defined", e.span,
                            self.suggest(e.func))
        self.calls.setdefault(self.current, set()).add(e.func)
        if len(e.args) != len(f.params):
            for a in e.args:
                self.expr(a, None)
            return self.err("arity", f"{e.func} takes {len(f.params)} arguments, "
                            f"{len(e.args)} given", e.span)
        saved = self.scopes
        for prm, a in zip(f.params, e.args, strict=True):
            self.scopes = saved
            pt = self.resolve_type(prm.type, allow_views=True)
            at = self.expr(a, pt if isinstance(pt, Bits | Bool) else None)
            if isinstance(pt, View) and isinstance(at, View):
                if pt.layout != at.layout:
                    self.err("type-mismatch", f"expected {pt.show()}, found {at.show()}",
                             a.span)
            else:
                self.coerce(a, at, pt)
        self.scopes = saved
        return self.resolve_type(f.ret) if f.ret else Void()

    def intrinsic(self, e: A.Call) -> Type:
        n = INTRINSICS[e.func]
        if n is not None and len(e.args) != n:
            for a in e.args:
                self.expr(a, None)
            return self.err("arity", f"{e.func} takes {n} arguments, {len(e.args)} given",
                            e.span)
        if n is None and not e.args:
            return self.err("arity", f"{e.func} needs at least one argument", e.span)
        if e.func == "csum":
            t = self.expr(e.args[0], None)
            if not (isinstance(t, View) and t.in_packet) and not isinstance(t, Error):
                self.err("type-mismatch", "csum takes a packet header reference", e.args[0].span,
                         "e.g. `csum(ip) == 0` checks an IPv4 header")
            return Bits(16)
        if e.func == "csum_update":
            for a in e.args:
                self.coerce(a, self.expr(a, Bits(16)), Bits(16))
            return Bits(16)
        if e.func == "pop_count":
            a = e.args[0]
            t = self.expr(a, None)
            if isinstance(t, Literal):
                return self.err("needs-width", "pop_count needs a width", a.span,
                                "cast the literal: `5 as bit<32>`")
            if isinstance(t, Bits):
                return t        # the count of a bit<N> fits in bit<N>
            if not isinstance(t, Error):
                self.err("type-mismatch", f"pop_count takes a bit<N> value, not {t.show()}",
                         a.span)
            return Error()
        if e.func.startswith("hash"):
            w = int(e.func[4:])
            a = e.args[0]
            self.coerce(a, self.expr(a, Bits(w)), Bits(w))
            return Bits(w)
        total = 0
        for a in e.args:  # crc32 / toeplitz: concatenation of whole bytes
            t = self.expr(a, None)
            if isinstance(t, Literal):
                self.err("needs-width", f"{e.func} arguments need a width", a.span,
                         "cast the literal: `5 as bit<8>`")
            elif isinstance(t, Bits):
                total += t.width
                if t.width % 8:
                    self.err("type-mismatch", f"{e.func} hashes whole bytes; {t.show()} is "
                             "not", a.span, "cast or concatenate to a multiple of 8 bits")
            elif not isinstance(t, Error):
                self.err("type-mismatch", f"{e.func} takes bit<N> values", a.span)
        if e.func == "toeplitz" and total > TOEPLITZ_MAX_BITS:
            self.err("type-mismatch", f"toeplitz input is at most {TOEPLITZ_MAX_BITS} bits, "
                     f"not {total}", e.span, "the 40-byte key has a 32-bit window for each "
                     "of the first 288 input bits (an IPv6 4-tuple is 288 bits)")
        return Bits(32)

    def is_media(self, e: A.MethodCall) -> bool:
        """`media.x(...)` / `buffer.x(...)` on the built-in names (not shadowed by a local or
        a memory of that name)."""
        return isinstance(e.target, A.Name) and e.target.name in ("media", "buffer") \
            and self.lookup_local(e.target.name) is None \
            and e.target.name not in self.p.memories

    def media_op(self, e: A.MethodCall, allow_fallible: bool, as_verdict: bool = False) -> Type:
        obj = e.target.name  # type: ignore[attr-defined]
        self.set(e.target, Void())
        op = MEDIA_OPS.get((obj, e.method))
        if op is None:
            for a in e.args:
                self.expr(a, None)
            avail = ", ".join(m for (o, m) in MEDIA_OPS if o == obj)
            return self.set(e, self.err("bad-method", f"{obj} has no method '{e.method}'",
                                        e.span, f"methods: {avail}"))
        if len(e.args) != len(op.args):
            for a in e.args:
                self.expr(a, None)
            return self.set(e, self.err("arity", f"{obj}.{e.method} takes {len(op.args)} "
                                        f"arguments, {len(e.args)} given", e.span))
        for a, width in zip(e.args, op.args, strict=True):
            self.small_int(a, width, f"an argument of {obj}.{e.method}")
        if self.in_function is not None:
            return self.set(e, self.err("media-context", f"{obj}.{e.method} is only allowed "
                                        "in a block", e.span, "call it in the receive or "
                                        "transmit block; functions return values"))
        if op.stage != "any":
            self.p.media_use.setdefault(self.current, {}).setdefault(op.stage, e.span)
        if op.result == "verdict" and not as_verdict:
            return self.set(e, self.err("bad-method", f"{obj}.{e.method}(...) is a verdict",
                                        e.span, f"write it as a statement: "
                                        f"`{obj}.{e.method}(...);`"))
        if op.result == "fallible" and not allow_fallible:
            return self.set(e, self.err("unchecked-buffer", f"{obj}.{e.method} can fail; "
                                        "handle the failure", e.span, "bind it: `let h = "
                                        "buffer.alloc() else drop(no_buffer);`"))
        result = {"bool": Bool(), "void": Void(), "verdict": Void(),
                  "fallible": Bits(32)}[op.result]
        return self.set(e, result)

    def method(self, e: A.MethodCall, allow_lookup: bool = False) -> Type:
        if self.is_media(e):
            return self.media_op(e, allow_lookup)
        t = self.expr(e.target, None)
        if isinstance(t, Error):
            for a in e.args:
                self.expr(a, None)
            return self.set(e, t)
        if not isinstance(t, MemType):
            return self.set(e, self.err("bad-method", f"{t.show()} has no methods", e.span))
        m = t.memory
        table = {"lpm": ("lookup", "contains"), "hash": ("lookup", "contains"),
                 "counter": ("count", "add"), "register": ("add",), "array": ()}[m.kind]
        if e.method not in table:
            avail = ", ".join(table) or "none (use indexing)"
            return self.set(e, self.err("bad-method", f"{m.kind} {m.name} has no method "
                                        f"'{e.method}'", e.span, f"methods: {avail}"))
        sig = {"lookup": [m.key], "contains": [m.key],
               "count": ["index"], "add": ["index", m.value]}[e.method]
        if len(e.args) != len(sig):
            for a in e.args:
                self.expr(a, None)
            return self.set(e, self.err("arity", f"{e.method} takes {len(sig)} arguments, "
                                        f"{len(e.args)} given", e.span))
        for a, want in zip(e.args, sig, strict=True):
            if want == "index":
                self.index_expr(a)
            elif want is not None:
                self.coerce(a, self.expr(a, want), want)
        if e.method == "lookup":
            if not allow_lookup:
                return self.set(e, self.err("unchecked-lookup", "a lookup can miss; handle "
                                            "the miss", e.span, "bind it: `let nh = t.lookup(k)"
                                            " else exception(NO_ROUTE);`"))
            return self.set(e, m.value or Error())
        if e.method == "add" and m.kind == "register":
            return self.set(e, m.value or Error())
        if e.method == "contains":
            return self.set(e, Bool())
        return self.set(e, Void())

    def expr_MethodCall(self, e: A.MethodCall, want: Type | None) -> Type:  # noqa: N802
        return self.method(e)

    def index_expr(self, a: A.Expr) -> None:
        t = self.expr(a, Bits(32))
        if isinstance(t, Bits) and t.width > 32:
            self.err("type-mismatch", "an index is at most bit<32>", a.span)
        elif not isinstance(t, Bits | Error):
            self.err("type-mismatch", f"an index must be bit<N>, not {t.show()}", a.span)

    def expr_Field(self, e: A.Field, want: Type | None) -> Type:  # noqa: N802
        tgt = e.target
        if isinstance(tgt, A.Name) and self.lookup_local(tgt.name) is None:
            if tgt.name == "meta":
                mf = META_FIELDS.get(e.field)
                self.set(tgt, Void())
                if mf is None:
                    return self.err("unknown-field", f"meta has no field '{e.field}'", e.span,
                                    "fields: " + ", ".join(META_FIELDS))
                return Bits(mf.width)
            if tgt.name in self.p.enums:
                members = self.p.enums[tgt.name]
                self.set(tgt, Void())
                if e.field not in members:
                    return self.err("unknown-field", f"enum {tgt.name} has no member "
                                    f"'{e.field}'", e.span, "members: " + ", ".join(members))
                v, t = members[e.field]
                return self.set(e, t, v)
        t = self.expr(tgt, None)
        if isinstance(t, Error):
            return t
        if not isinstance(t, View):
            return self.err("unknown-field", f"{t.show()} has no fields", e.span)
        f = t.layout.field(e.field)
        if f is None:
            return self.err("unknown-field", f"{t.layout.name} has no field '{e.field}'",
                            e.span, "fields: " + ", ".join(x.name for x in t.layout.fields))
        return Bits(f.width)

    def expr_Index(self, e: A.Index, want: Type | None) -> Type:  # noqa: N802
        t = self.expr(e.target, None)
        self.index_expr(e.index)
        if isinstance(t, Error):
            return t
        if isinstance(t, MemType) and t.memory.kind in ("array", "register", "counter"):
            return t.memory.value or Error()
        return self.err("not-indexable", f"{t.show()} cannot be indexed", e.span,
                        "index arrays, registers and counters; slice bits with x[hi:lo]")

    def expr_Slice(self, e: A.Slice, want: Type | None) -> Type:  # noqa: N802
        t = self.expr(e.target, None)
        hi = self.const_value(e.hi, "a slice bound")
        lo = self.const_value(e.lo, "a slice bound")
        if isinstance(t, Error) or hi is None or lo is None:
            return Error()
        if not isinstance(t, Bits):
            return self.err("type-mismatch", f"only bit<N> values can be sliced, not {t.show()}",
                            e.span)
        if not 0 <= lo <= hi < t.width:
            return self.err("bad-slice", f"[{hi}:{lo}] is outside {t.show()}", e.span,
                            f"bits are numbered {t.width - 1} (MSB) down to 0")
        return Bits(hi - lo + 1)

    def expr_Unary(self, e: A.Unary, want: Type | None) -> Type:  # noqa: N802
        t = self.expr(e.operand, want if e.op != "!" else Bool())
        if isinstance(t, Error):
            return t
        if e.op == "!":
            if not isinstance(t, Bool):
                return self.err("type-mismatch", f"'!' needs bool, not {t.show()}", e.span,
                                "use `x == 0` for integers")
            return Bool()
        if isinstance(t, Literal):
            v = self.p.values.get(id(e.operand), 0)
            if e.op == "-":
                return self.err("literal-range", "a negative literal has no width", e.span,
                                "write the wrapped value or `0 - x` with a typed x")
            return self.err("needs-width", "'~' of a literal needs a width", e.span,
                            f"write `~({v} as bit<N>)`")
        if not isinstance(t, Bits):
            return self.err("type-mismatch", f"'{e.op}' needs bit<N>, not {t.show()}", e.span)
        v = self.p.values.get(id(e.operand))
        if v is not None:  # a typed constant: fold with wrapping
            return self.set(e, t, (~v if e.op == "~" else -v) & ((1 << t.width) - 1))
        return t

    def expr_Cast(self, e: A.Cast, want: Type | None) -> Type:  # noqa: N802
        to = self.resolve_type(e.type)
        t = self.expr(e.operand, to if isinstance(to, Bits) else None)
        if isinstance(to, Error) or isinstance(t, Error):
            return Error()
        if not isinstance(to, Bits):
            return self.err("bad-cast", f"cannot cast to {to.show()}", e.span,
                            "cast to bit<N>; for bool compare: `x != 0`")
        if isinstance(t, Bits | Bool | Literal):
            v = self.p.values.get(id(e.operand))
            if v is not None and not isinstance(t, Bool):  # constant: truncate / zero-extend
                return self.set(e, to, v & ((1 << to.width) - 1))
            return to
        return self.err("bad-cast", f"cannot cast {t.show()} to {to.show()}", e.span)

    def expr_Binary(self, e: A.Binary, want: Type | None) -> Type:  # noqa: N802
        op = e.op
        if op in ("&&", "||"):
            for side in (e.left, e.right):
                t = self.expr(side, Bool())
                if not isinstance(t, Bool | Error):
                    self.err("type-mismatch", f"'{op}' needs bool operands, not {t.show()}",
                             side.span, "compare explicitly, e.g. `x != 0`")
            return Bool()
        if op in ("<<", ">>"):
            lt = self.expr(e.left, want if isinstance(want, Bits) and not _literal_only(e)
                           else None)
            rt = self.expr(e.right, None)
            if isinstance(rt, Literal):
                self.retype_literal(e.right, Bits(32))
            elif not isinstance(rt, Bits | Error):
                self.err("type-mismatch", "a shift amount must be bit<N>", e.right.span)
            if isinstance(lt, Literal):
                if isinstance(rt, Literal):
                    return self.fold(e, lt)
                return self.err("needs-width", "the shifted value needs a width", e.left.span,
                                "cast it: `(1 as bit<32>) << n`")
            if not isinstance(lt, Bits | Error):
                return self.err("type-mismatch", f"cannot shift {lt.show()}", e.left.span)
            return self.fold_typed(e, lt, op, e.left, e.right) if isinstance(lt, Bits) else lt
        compare = op in ("==", "!=", "<", "<=", ">", ">=")
        # arithmetic on literals folds unbounded and is checked once, as a whole, against
        # the width the context gives (`0xfffffff0 + 20` is not a bit<32>), so a literal
        # operand takes no width from the context here
        hint = want if isinstance(want, Bits) and not compare and not _literal_only(e) \
            else None
        lt = self.expr(e.left, hint)
        rt = self.expr(e.right, hint if not isinstance(lt, Bits) else lt)
        if isinstance(lt, Literal) and isinstance(rt, Bits):
            lt = self.coerce(e.left, lt, rt)
        if isinstance(lt, Error) or isinstance(rt, Error):
            return Bool() if compare else Error()
        if isinstance(lt, Literal) and isinstance(rt, Literal):
            # both sides are numbers without a width: the comparison is a constant too, and
            # the lowering (which gives only typed values a register) needs its value
            return self.fold_compare(e, op) if compare else self.fold(e, lt)
        if compare and op in ("==", "!=") and isinstance(lt, Bool) and isinstance(rt, Bool):
            return Bool()
        if not isinstance(lt, Bits) or not isinstance(rt, Bits):
            bad = lt if not isinstance(lt, Bits) else rt
            return self.err("type-mismatch", f"'{op}' needs bit<N> operands, not {bad.show()}",
                            e.span)
        if lt != rt:
            return self.err("type-mismatch", f"'{op}' on {lt.show()} and {rt.show()}: widths "
                            "differ", e.span, f"cast one side, e.g. `x as {rt.show()}`")
        if compare:
            return Bool()
        return self.fold_typed(e, lt, op, e.left, e.right)

    def fold_compare(self, e: A.Binary, op: str) -> Type:
        """A comparison of two literals, decided here (exact: literals have no width)."""
        a, b = self.p.values.get(id(e.left)), self.p.values.get(id(e.right))
        if a is None or b is None:
            return Bool()
        decided = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                   ">=": a >= b}[op]
        return self.set(e, Bool(), int(decided))

    def fold_typed(self, e: A.Expr, t: Bits, op: str, left: A.Expr, right: A.Expr) -> Type:
        """Arithmetic on typed constants (named constants, enum members) folds with the
        run-time semantics: wrap modulo 2^N, shifts by >= N give 0."""
        a, b = self.p.values.get(id(left)), self.p.values.get(id(right))
        if a is None or b is None:
            return t
        mask = (1 << t.width) - 1
        v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
             "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
             "<<": lambda: a << b if b < t.width else 0,
             ">>": lambda: a >> b if b < t.width else 0}[op]()
        return self.set(e, t, v & mask)

    def fold(self, e: A.Binary, t: Type) -> Type:
        """Fold arithmetic on two literals (unbounded integers; width comes later)."""
        a = self.p.values.get(id(e.left), 0)
        b = self.p.values.get(id(e.right), 0)
        if e.op in ("<<", ">>") and b > 256:
            return self.err("literal-range", "shift amount too large", e.span)
        v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
             "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b,
             "<<": lambda: a << b, ">>": lambda: a >> b}[e.op]()
        if v < 0 or v >= 1 << MAX_WIDTH:
            return self.err("literal-range", f"constant {v} is outside 0..2^128-1", e.span)
        return self.set(e, Literal(), v)

    # ---- program-level checks ----
    def check_recursion(self) -> None:
        state: dict[str, int] = {}

        def visit(name: str, path: list[str]) -> None:
            state[name] = 1
            for callee in sorted(self.calls.get(name, ())):
                if state.get(callee) == 1:
                    cycle = " -> ".join(path[path.index(callee):] + [callee]) \
                        if callee in path else f"{name} -> {callee}"
                    self.err("recursion", f"recursive call cycle: {cycle}",
                             self.p.functions[callee].span,
                             "MBL functions are inlined; rewrite with a bounded loop")
                elif state.get(callee) is None:
                    visit(callee, path + [callee])
            state[name] = 2

        for name in sorted(self.calls):
            if name not in state:
                visit(name, [name])

    def check_pipeline(self, pl: A.Pipeline) -> None:
        stages: dict[str, A.Stage] = {}
        for st in pl.stages:
            if st.name in stages:
                self.err("redefinition", f"stage '{st.name}' appears twice", st.span)
            stages[st.name] = st
            if st.block not in self.p.blocks:
                self.err("undefined-name", f"block '{st.block}' is not defined", st.span,
                         self.suggest(st.block))
        if not pl.stages:
            self.err("bad-pipeline", f"pipeline {pl.name} has no stages", pl.span,
                     "add `stage name = block;`")
        edges: dict[str, dict[str, str]] = {name: {} for name in stages}
        for c in pl.connections:
            for stage, _label in c.ends:
                if stage not in stages:
                    self.err("undefined-name", f"stage '{stage}' is not declared in pipeline "
                             f"{pl.name}", c.span, "declare it: `stage name = block;`")
            for (src, label), (dst, _) in zip(c.ends, c.ends[1:], strict=False):
                out = edges.setdefault(src, {})
                key = label or "default"
                if key in out and out[key] != dst:
                    self.err("bad-pipeline", f"output {src}.{key} is connected twice", c.span,
                             "each output goes to one stage")
                out[key] = dst
        self.p.pipeline_edges[pl.name] = edges
        self.check_media_stages(pl, edges)
        if pl.ports is not None and pl.ports[0] > pl.ports[1]:
            self.err("bad-ports", "the port range is empty", pl.span)
        self.check_stage_outputs(pl, stages, edges)
        self.check_pipeline_cycles(pl, edges)

    def check_media_stages(self, pl: A.Pipeline, edges: dict[str, dict[str, str]]) -> None:
        """A receive block (media.sop/eop/consume, buffer.store/attach) is the first stage; a
        transmit block (media.send) is one unconnected stage that runs after `forward`."""
        targets = {dst for out in edges.values() for dst in out.values()}
        for k, st in enumerate(pl.stages):
            use = self.p.media_use.get(st.block, {})
            if "rx" in use and "tx" in use:
                self.err("media-context", f"block {st.block} both receives and transmits",
                         st.span, "split it into a receive and a transmit block")
                continue
            if "rx" in use and k != 0:
                self.err("media-context", f"stage {st.name} receives (block {st.block}), so "
                         "it must be the pipeline's first stage", st.span,
                         "declare it first: the target runs it once per mpacket")
            if "tx" in use:
                if k == 0 or pl.name in self.p.pipeline_tx:
                    self.err("media-context", f"stage {st.name} transmits (block {st.block}):"
                             " a pipeline has at most one transmit stage, and not first",
                             st.span, "the transmit stage runs after a forward verdict")
                elif edges.get(st.name) or st.name in targets:
                    self.err("media-context", f"the transmit stage {st.name} cannot be "
                             "connected", st.span, "every forward(...) verdict of the other "
                             "stages continues in it; remove its `->` connections")
                else:
                    self.p.pipeline_tx[pl.name] = st.name

    def check_stage_outputs(self, pl: A.Pipeline, stages: dict[str, A.Stage],
                            edges: dict[str, dict[str, str]]) -> None:
        """Every `next(label)` a stage's block can take must lead somewhere."""
        for name, st in stages.items():
            block = self.p.blocks.get(st.block)
            if block is None:
                continue
            for label in sorted(_next_labels(block.body)):
                if label not in edges.get(name, {}):
                    shown = "next" if label == "default" else f"next({label})"
                    self.err("bad-pipeline", f"stage {name} can end with {shown} but that "
                             "output is not connected", st.span,
                             f"connect it: `{name}{'' if label == 'default' else '.' + label}"
                             " -> other_stage;`")

    def check_pipeline_cycles(self, pl: A.Pipeline, edges: dict[str, dict[str, str]]) -> None:
        state: dict[str, int] = {}

        def visit(node: str) -> bool:
            state[node] = 1
            for nxt in edges.get(node, {}).values():
                if state.get(nxt) == 1 or (state.get(nxt) is None and visit(nxt)):
                    return True
            state[node] = 2
            return False

        for node in list(edges):
            if state.get(node) is None and visit(node):
                self.err("bad-pipeline", f"pipeline {pl.name} has a cycle of stages", pl.span,
                         "a packet passes each stage at most once; remove the back edge")
                return


def _literal_only(e: A.Expr) -> bool:
    """An expression of integer literals and binary operators only (folded unbounded)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, A.Binary):
            stack += (x.left, x.right)
        elif not isinstance(x, A.IntLit):
            return False
    return True


def _next_labels(stmt: A.Stmt | None) -> set[str]:
    """The labels of all next statements inside a statement."""
    if stmt is None:
        return set()
    if isinstance(stmt, A.Next):
        return {stmt.label or "default"}
    if isinstance(stmt, A.Block):
        return set().union(*(_next_labels(s) for s in stmt.stmts)) if stmt.stmts else set()
    if isinstance(stmt, A.If):
        return _next_labels(stmt.then) | _next_labels(stmt.otherwise)
    if isinstance(stmt, A.For):
        return _next_labels(stmt.body)
    if isinstance(stmt, A.Let | A.Adjust):
        return _next_labels(stmt.otherwise)
    return set()


def _load(path: Path, display: str, bag: DiagnosticBag, program: Program,
          seen: set[Path], text: str) -> None:
    """Parse a file and (depth first) the files it imports, each once."""
    seen.add(path)
    program.sources[display] = text
    module = parse_source(text, display, bag)
    if module is None:
        return
    for d in module.decls:
        if not isinstance(d, A.Import):
            continue
        target = _resolve_import(path, d.path)
        if target is None:
            bag.error("import-not-found", f"cannot find import \"{clip(d.path)}\"", d.span,
                      "paths are relative to the importing file or the MBL library "
                      "(e.g. \"std/headers.mbl\")")
        elif target not in seen:
            shown = d.path if target.is_relative_to(STD_ROOT) else str(target)
            try:
                imported = read_source(target)
            except SourceError as exc:
                bag.error(exc.kind, f"cannot import \"{clip(d.path)}\": {exc}", d.span)
                seen.add(target)
                continue
            _load(target, shown, bag, program, seen, imported)
    program.modules.append(module)


def _resolve_import(importer: Path, name: str) -> Path | None:
    for base in (importer.parent, STD_ROOT):
        try:
            candidate = (base / name).resolve()
            if candidate.is_file():
                return candidate
        except (OSError, ValueError):
            continue
    return None


def check_source(text: str, file: str = "<input>", bag: DiagnosticBag | None = None,
                 path: Path | None = None) -> tuple[Program, DiagnosticBag]:
    """Parse and check one program given as text (imports resolve next to `path`)."""
    bag = bag or DiagnosticBag()
    program = Program(sources={})
    _load(path or Path.cwd() / file, file, bag, program, set(), text)
    if any(d.kind in ("syntax", "too-deep") for d in bag.errors):
        return program, bag
    try:
        _check_program(program, bag)
    except RecursionError:
        bag.error("too-deep", "the program nests too deeply to check", SourceLocation(file, 1, 1),
                  "split deeply nested expressions or blocks")
    return program, bag


def _check_program(program: Program, bag: DiagnosticBag) -> None:
    checker = Checker(program, bag)
    decls = [d for m in program.modules for d in m.decls]
    checker.declare_all(decls)
    for f in program.functions.values():
        checker.check_function(f)
    for b in program.blocks.values():
        checker.check_block(b)
    for pl in program.pipelines.values():
        checker.check_pipeline(pl)
    checker.check_recursion()
    if not bag.errors:  # sizes need the types, and no call cycles
        check_code_size(program, bag)


class SourceError(Exception):
    """A source file that cannot be read (`io`) or is too large to compile (`too-large`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def read_source(path: Path) -> str:
    """The text of an MBL file, or SourceError: unreadable (a mode-000 file, /proc/self/mem,
    a folder) or larger than MAX_SOURCE_BYTES."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise SourceError("io", exc.strerror or str(exc)) from None
    if len(data) > MAX_SOURCE_BYTES:
        raise SourceError("too-large", f"the file is larger than {MAX_SOURCE_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


def check_file(path: str | Path) -> tuple[Program, DiagnosticBag]:
    p = Path(path)
    bag = DiagnosticBag()
    try:
        text = read_source(p)
    except SourceError as exc:
        bag.error(exc.kind, f"cannot read {clip(str(p))}: {exc}", SourceLocation(str(p), 0, 0),
                  "check the path and permissions" if exc.kind == "io" else
                  "split the program into files that import each other")
        return Program(sources={}), bag
    return check_source(text, str(p), bag, p.resolve())


# ---- the receive turn (media.turn_begin / turn_end; docs/datapath.md) ----------------
TURN_OPS = ("turn_begin", "turn_end")


def _is_turn_op(e: object) -> bool:
    return isinstance(e, A.MethodCall) and isinstance(e.target, A.Name) \
        and e.target.name == "media" and e.method in TURN_OPS


def _exprs(node: object):
    """Every expression in a statement or expression tree, outermost first."""
    if isinstance(node, list):
        for x in node:
            yield from _exprs(x)
        return
    if isinstance(node, A.Expr):
        yield node
    if isinstance(node, A.Expr | A.Stmt):
        for f in fields(node):
            if f.name != "span":
                yield from _exprs(getattr(node, f.name))


class TurnCheck:
    """A receive block that says where its turn is (`media.turn_begin();` ...
    `media.turn_end();`): on every path the begin at most once, the end only after it, not
    in a loop, the paths meeting on the same side of the turn; its registers and arrays
    (per-port state: read and written in mpacket order on the chip) only inside.  Counters
    (atomic) and tables may be used anywhere.  A verdict inside the turn ends it too."""

    def __init__(self, checker: Checker) -> None:
        self.c = checker

    def block(self, b: A.Block, state: str | None) -> str | None:
        for s in b.stmts:
            if state is None:
                return None
            state = self.stmt(s, state)
        return state

    def branches(self, outs: list[str | None], span: SourceLocation) -> str | None:
        live = {o for o in outs if o is not None}
        if len(live) > 1:
            self.c.err("turn-order", "paths meet here inside and outside the receive turn",
                       span, "begin and end the turn on both branches, or outside them")
        return min(live) if live else None

    def exprs(self, node: object, state: str) -> None:
        for e in _exprs(node):
            if _is_turn_op(e):
                continue
            target = e.target if isinstance(e, A.Index | A.MethodCall) else None
            m = self.c.p.memories.get(target.name) if isinstance(target, A.Name) else None
            if m is not None and m.kind in ("register", "array") and state != "in":
                self.c.err("turn-order", f"{m.name} is per-port state: use it between "
                           "media.turn_begin() and media.turn_end()", e.span,
                           "the chip reads and writes it in mpacket order only in the turn")

    def stmt(self, s: A.Stmt, state: str) -> str | None:
        if isinstance(s, A.ExprStmt) and _is_turn_op(s.expr):
            begin = s.expr.method == "turn_begin"      # type: ignore[attr-defined]
            if state != ("before" if begin else "in"):
                self.c.err("turn-order", "media.turn_begin() once, then media.turn_end(), "
                           "on every path", s.span, "the turn is the stretch between them "
                           "(docs/datapath.md, \"Receive blocks\")")
            return "in" if begin else "after"
        if isinstance(s, A.Block):
            return self.block(s, state)
        if isinstance(s, A.If):
            self.exprs(s.cond, state)
            other = state if s.otherwise is None else self.stmt(s.otherwise, state)
            return self.branches([self.block(s.then, state), other], s.span)
        if isinstance(s, A.For):
            if any(_is_turn_op(e) for e in _exprs(s.body)):
                self.c.err("turn-order", "the receive turn cannot begin or end in a loop",
                           s.span, "begin it before the loop and end it after")
            self.exprs([s.start, s.stop, s.body], state)
            return state
        if isinstance(s, A.Let | A.Adjust) and s.otherwise is not None:
            self.exprs(s.value if isinstance(s, A.Let) else s.amount, state)
            self.stmt(s.otherwise, state)
            return state
        self.exprs(s, state)
        verdict = isinstance(s, A.Forward | A.Drop | A.Exception_ | A.Next | A.Return) or (
            isinstance(s, A.ExprStmt) and isinstance(s.expr, A.MethodCall)
            and isinstance(s.expr.target, A.Name) and s.expr.target.name == "media"
            and s.expr.method in ("consume", "send"))
        return None if verdict else state
