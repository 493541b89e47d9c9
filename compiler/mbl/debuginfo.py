"""MBL source locations through LLVM: the lowering attaches them, the ME backend reads them.

Writing (`DebugInfoBuilder`, used by lower.py): one DICompileUnit per module, a DIFile per
MBL source file (its name exactly as the checker's location's `file`, directory empty), a
DISubprogram per lowered function, block and pipeline, and a DILocation on every
instruction (the location's line and 1-based column, as diagnostics print them).

Reading (`DebugLocations`, for the ME front end): built from an optimized module,

    locs = DebugLocations(module_ref)
    locs.loc_of(instr)          # -> SourceLocation("lib.mbl", 12, 5) or None

gives the innermost location of an instruction: where its code is written, even when it
was inlined (the call site is the DILocation's inlinedAt, which we do not report).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import llvmlite.binding as llvm
from llvmlite import ir

from npkit.base.diagnostics import SourceLocation
from npkit.compiler.uc.image import Variable

from . import ast as A

PRODUCER = "npkit mbl"


class DebugInfoBuilder:
    """Creates the debug metadata of one module and sets the builder's current location."""

    def __init__(self, module: ir.Module, root_file: str) -> None:
        self.module = module
        self.files: dict[str, ir.DIValue] = {}
        self.unit = module.add_debug_info("DICompileUnit", {
            "language": ir.DIToken("DW_LANG_C99"),    # DWARF has no code for MBL
            "file": self.file(root_file),
            "producer": PRODUCER,
            "isOptimized": True,
            "runtimeVersion": 0,
            "emissionKind": ir.DIToken("LineTablesOnly"),
        }, is_distinct=True)
        module.add_named_metadata("llvm.dbg.cu", self.unit)
        module.add_named_metadata("llvm.module.flags", [
            ir.Constant(ir.IntType(32), 2), "Debug Info Version", ir.Constant(ir.IntType(32), 3)])
        self.no_types = module.add_debug_info("DISubroutineType", {
            "types": module.add_metadata([])})
        self.scope: ir.DIValue | None = None
        self.types: dict[int, ir.DIValue] = {}
        self.declare_fn: ir.Function | None = None
        self.no_expression = module.add_debug_info("DIExpression", {})

    def file(self, name: str) -> ir.DIValue:
        if name not in self.files:
            self.files[name] = self.module.add_debug_info(
                "DIFile", {"filename": name, "directory": ""})
        return self.files[name]

    def begin_function(self, fn: ir.Function, name: str, span: SourceLocation,
                       b: ir.IRBuilder) -> None:
        """Give fn its DISubprogram and point b's location at the declaration."""
        f = self.file(span.file)
        self.scope = self.module.add_debug_info("DISubprogram", {
            "name": name,
            "scope": f,
            "file": f,
            "line": span.line,
            "scopeLine": span.line,
            "type": self.no_types,
            "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized"),
            "unit": self.unit,
        }, is_distinct=True)
        fn.set_metadata("dbg", self.scope)
        b.debug_metadata = self.location(span)

    def variable(self, name: str, span: SourceLocation, width: int) -> ir.DIValue:
        """A DILocalVariable of the current function: MBL's `let`/`var`, a parameter or a
        `for` variable, `width` bits (an unsigned DIBasicType; bool is 1 bit)."""
        assert self.scope is not None, "begin_function first"
        if width not in self.types:
            self.types[width] = self.module.add_debug_info("DIBasicType", {
                "name": f"bit<{width}>", "size": width,
                "encoding": ir.DIToken("DW_ATE_unsigned")})
        return self.module.add_debug_info("DILocalVariable", {
            "name": name, "scope": self.scope, "file": self.file(span.file),
            "line": span.line, "type": self.types[width]})

    def declare(self, b: ir.IRBuilder, slot: ir.Value, name: str, span: SourceLocation,
                width: int) -> None:
        """`llvm.dbg.declare` of slot (an entry-block alloca) as variable `name`: SROA turns
        it into a dbg.value at each store, which the ME backend follows to registers.  Debug
        records never change the code LLVM generates."""
        if self.declare_fn is None:
            self.declare_fn = ir.Function(self.module, ir.FunctionType(
                ir.VoidType(), [ir.MetaDataType()] * 3), "llvm.dbg.declare")
        with self.at(b, span):
            b.call(self.declare_fn, [ir.MetaDataArgument(slot),
                                     self.variable(name, span, width), self.no_expression])

    def location(self, span: SourceLocation) -> ir.DIValue:
        assert self.scope is not None, "begin_function first"
        return self.module.add_debug_info("DILocation", {
            "line": span.line, "column": span.column, "scope": self.scope})

    @contextmanager
    def at(self, b: ir.IRBuilder, span: SourceLocation) -> Iterator[None]:
        """Instructions b emits inside the block are at span; the previous location after."""
        saved = b.debug_metadata
        b.debug_metadata = self.location(span)
        try:
            yield
        finally:
            b.debug_metadata = saved


# ---- reading an optimized module ----
_NODE = re.compile(r"^!(\d+) = (?:distinct )?!(DILocation|DISubprogram|DIFile|DILexicalBlock"
                   r"(?:File)?|DILocalVariable|DIBasicType)\((.*)\)\s*$", re.MULTILINE)
# a variable record: `#dbg_value(<location>, !var, !DIExpression(...), !loc)`
_RECORD = re.compile(r"^#dbg_(value|declare|assign)\((.*)\)$")
_FIELD = re.compile(r'(\w+): ("(?:[^"\\]|\\.)*"|[^,]+)')
# an instruction's attachments: `, !name !N` or `, !name !{...}` after its operands
_DBG = re.compile(r", !dbg !(\d+)")


@dataclasses.dataclass(frozen=True)
class VarValue:
    """A `#dbg_value` record: from here, `variable` is `operands` (each "i32 %x", "i8 5",
    "i32 poison"; several with a !DIArgList) combined by the DWARF expression `expr`
    (empty: the first operand itself)."""

    variable: Variable
    operands: tuple[str, ...]
    expr: tuple[str | int, ...]


def _split_top(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    out, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:k].strip())
            start = k + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def _unescape(quoted: str) -> str:
    """An LLVM metadata string: quotes, then bytes \\XX-escaped when not printable."""
    raw = quoted[1:-1].encode("latin-1")
    out = re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), raw)
    return out.decode("utf-8", errors="replace")


def _fields(text: str) -> dict[str, str]:
    return {k: v.strip() for k, v in _FIELD.findall(text)}


def _ref(value: str | None) -> int | None:
    return int(value[1:]) if value and value.startswith("!") and value[1:].isdigit() else None


def _printed(fn: llvm.ValueRef) -> tuple[list[str], list[list[str]]]:
    """The instructions of fn as its text prints them, and before each the debug records
    (`#dbg_value(...)`) LLVM prints on their own lines above it."""
    texts: list[str] = []
    records: list[list[str]] = []
    pending: list[str] = []
    for line in str(fn).splitlines():
        if line.lstrip().startswith("#dbg_"):
            pending.append(line.strip())
        elif line.startswith("    ") or line.startswith("  ]"):  # a switch's case lines
            if texts:
                texts[-1] += "\n" + line
        elif line.startswith("  "):
            texts.append(line.strip())
            records.append(pending)
            pending = []
    return texts, records


def instruction_texts(fn: llvm.ValueRef) -> list[tuple[llvm.ValueRef, str]]:
    """Each instruction of fn with its text as the function's text prints it (the module's
    metadata numbering), in iteration order.  The function is printed once: `str(instr)`
    numbers the whole function again for every instruction, quadratic in its size."""
    texts, _ = _printed(fn)
    instrs = [i for b in fn.blocks for i in b.instructions]
    if len(texts) != len(instrs):  # not LLVM's usual layout: ask each instruction
        texts = [str(i).strip() for i in instrs]
    return list(zip(instrs, texts, strict=True))


class DebugLocations:
    """The MBL location of each instruction of an (optimized) module with our debug info.

    `str(instr)` numbers metadata on its own (it disagrees with the module's numbering
    after the first function), so the `!dbg` of each instruction is read from its
    function's text, where the numbering is the module's: instructions appear there in
    iteration order, each as `str(instr)` up to its attachments."""

    def __init__(self, module: llvm.ModuleRef) -> None:
        self.nodes: dict[int, tuple[str, dict[str, str]]] = {
            int(n): (kind, _fields(body)) for n, kind, body in _NODE.findall(str(module))}
        self.dbg: dict[llvm.ValueRef, int] = {}
        self.values: dict[llvm.ValueRef, list[VarValue]] = {}
        for fn in module.functions:
            if not fn.is_declaration:
                self._read_function(fn)

    def _read_function(self, fn: llvm.ValueRef) -> None:
        texts, records = _printed(fn)
        instrs = [i for b in fn.blocks for i in b.instructions]
        if len(texts) != len(instrs):   # not LLVM's usual layout: no variable records
            texts, records = [str(i).strip() for i in instrs], [[] for _ in instrs]
        for instr, text, before in zip(instrs, texts, records, strict=True):
            found = _DBG.search(text)
            if found:
                self.dbg[instr] = int(found.group(1))
            values = [v for v in (self._record(r) for r in before) if v is not None]
            if values:
                self.values[instr] = values

    def _record(self, text: str) -> VarValue | None:
        """A `#dbg_value` record (declares of allocas SROA kept are no values: None)."""
        m = _RECORD.match(text)
        if m is None or m.group(1) != "value":
            return None
        args = _split_top(m.group(2))
        if len(args) < 4:
            return None
        variable = self.variable(_ref(args[1]), _ref(args[3]))
        if variable is None:
            return None
        where = args[0]
        operands = tuple(_split_top(where[len("!DIArgList("):-1])) \
            if where.startswith("!DIArgList(") else (where,)
        expr = args[2]
        ops = _split_top(expr[len("!DIExpression("):-1]) if expr.startswith("!DIExpression(") \
            else ["?"]
        return VarValue(variable, operands, tuple(int(o) if o.isdigit() else o for o in ops))

    def variable(self, var: int | None, at: int | None) -> Variable | None:
        """The variable instance of DILocalVariable !var seen at DILocation !at (its
        inlinedAt is the instance's call site)."""
        kind, f = self.nodes.get(var or -1, ("", {}))
        if kind != "DILocalVariable":
            return None
        scope_kind, scope = self.nodes.get(_ref(f.get("scope")) or -1, ("", {}))
        file = self.file_of_scope(_ref(f.get("file")) or _ref(f.get("scope")))
        _, type_ = self.nodes.get(_ref(f.get("type")) or -1, ("", {}))
        if file is None:
            return None
        _, loc = self.nodes.get(at or -1, ("", {}))
        inlined = _ref(loc.get("inlinedAt"))
        return Variable(
            name=_unescape(f["name"]) if "name" in f else "?",
            scope=_unescape(scope["name"]) if "name" in scope else "?",
            decl=SourceLocation(file, int(f.get("line", "0")), 1),
            width=int(type_.get("size", "32")),
            inlined_at=self.loc_at(inlined) if inlined is not None else None)

    def values_of(self, instr: llvm.ValueRef) -> list[VarValue]:
        """The variable records LLVM placed just before instr (in order)."""
        return self.values.get(instr, [])

    def file_of_scope(self, scope: int | None) -> str | None:
        """The file of a subprogram or lexical block (following scopes up if needed)."""
        for _ in range(64):     # scope chains are short; a bound guards bad input
            if scope is None or scope not in self.nodes:
                return None
            kind, f = self.nodes[scope]
            if kind == "DIFile":
                return _unescape(f["filename"]) if "filename" in f else None
            scope = _ref(f.get("file")) or _ref(f.get("scope"))
        return None

    def loc_at(self, node: int) -> SourceLocation | None:
        """The location DILocation !node stands for; None for line 0 (LLVM's "no line",
        e.g. where it merged code from several lines)."""
        kind, f = self.nodes.get(node, ("", {}))
        line = int(f.get("line", "0"))
        if kind != "DILocation" or line == 0:
            return None
        file = self.file_of_scope(_ref(f.get("scope")))
        return SourceLocation(file, line, int(f.get("column", "0"))) if file is not None else None

    def loc_of(self, instr: llvm.ValueRef) -> SourceLocation | None:
        """Where instr's code is written (the innermost location); None without one."""
        node = self.dbg.get(instr)
        return self.loc_at(node) if node is not None else None


# ---- lexical scopes (DWARF would give them as lexical blocks' address ranges; our
# blocks' ends are in the AST) ----
def _last_line(node: object) -> int:
    """The last source line any part of an AST node is on."""
    last = 0
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list | tuple):
            stack.extend(n)
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            span = getattr(n, "span", None)
            if isinstance(span, SourceLocation):
                last = max(last, span.line)
            stack.extend(getattr(n, f.name) for f in dataclasses.fields(n)
                         if f.name != "span")
    return last


def scope_ends(decls: Iterable[object]) -> dict[tuple[str, int, str], tuple[int, int]]:
    """(file, line, name) of each variable a function or block declares -> (the column of
    its declaration, the last line of its scope: its enclosing block; a parameter's, the
    function's body).  LLVM's DILocalVariable has no column; the AST has both."""
    ends: dict[tuple[str, int, str], tuple[int, int]] = {}

    def visit(stmt: object, end: int) -> None:
        if isinstance(stmt, A.Block):
            block_end = _last_line(stmt)
            for s in stmt.stmts:
                visit(s, block_end)
        elif isinstance(stmt, A.Let):
            ends[(stmt.span.file, stmt.span.line, stmt.name)] = (stmt.span.column, end)
            if stmt.otherwise is not None:
                visit(stmt.otherwise, _last_line(stmt.otherwise))
        elif isinstance(stmt, A.For):
            ends[(stmt.span.file, stmt.span.line, stmt.var)] = (stmt.span.column,
                                                                 _last_line(stmt))
            visit(stmt.body, _last_line(stmt.body))
        elif isinstance(stmt, A.If):
            visit(stmt.then, _last_line(stmt.then))
            if stmt.otherwise is not None:
                visit(stmt.otherwise, _last_line(stmt.otherwise))
        elif isinstance(stmt, A.Adjust):
            visit(stmt.otherwise, _last_line(stmt.otherwise))

    for d in decls:
        if isinstance(d, A.Function):
            for p in d.params:
                ends[(p.span.file, p.span.line, p.name)] = (p.span.column,
                                                            _last_line(d.body))
        if isinstance(d, A.Function | A.Microblock):
            visit(d.body, _last_line(d.body))
    return ends
