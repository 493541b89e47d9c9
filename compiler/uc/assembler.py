"""The assembler: source text -> Image.

Passes, each with one job:
  1. ``collect``: read statements; addresses, labels, constants, declarations, .me/.ctx_mode.
  2. ``place``: run every instruction's operand syntax once to learn which GPR names are
     the two sources of one instruction, then choose banks and register/signal numbers.
  3. ``encode``: encode every instruction (``sim.isa.encode``).
  4. ``check``: defer shadows and control-store size.
Operand text is turned into field values by ``resolver.Resolver`` and the per-format
syntax in ``forms.py``.
Each error is recorded with its file:line:col and assembly goes on with the next statement,
so one run reports every error it can.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from npkit.base.diagnostics import Diagnostic, SourceLocation
from npkit.sim import isa

from . import banks, debugvars
from .errors import AsmError
from .expr import ExprError, evaluate
from .forms import FORMS, Operands, immed_encoding, mnemonic_fields
from .image import CTX_MODES, ME_COUNT, Image
from .operands import (
    CLASS,
    IDENT,
    OperandSyntaxError,
    check_field_limits,
    gpr_bank,
    is_reserved_register_name,
    parse_operand,
    per_context,
    render_code,
)
from .resolver import SIGNAL_MAX, Resolver, SymbolTable, Usage
from .source import Arg, LineError, Reader, SourceSet, Stmt, parse_line, split_args

CONTROL_STORE_WORDS = 8192  # IXP2800 (chip parameter; see FACTS.md §1)
PSEUDO_MNEMONICS = ("immed32",)
DIRECTIVES = (".reg", ".areg", ".breg", ".sig", ".const", ".me", ".ctx_mode", ".xfer_order",
              ".word", ".line", ".loc")
# the control-flow instructions that may not sit in a defer shadow
NO_DEFER_TIMING = ("branch", "ctx")


def assemble_text(text: str, filename: str = "<input>", include_dirs: tuple[str, ...] = (),
                  control_store_words: int = CONTROL_STORE_WORDS) -> Image:
    """Assemble source text; raises AsmError listing every error found."""
    sources = SourceSet(tuple(str(d) for d in include_dirs))
    directory = os.path.dirname(filename) if os.path.isfile(filename) else os.getcwd()
    Reader(sources).read_text(text, filename, directory)
    return _assemble(sources, control_store_words)


def assemble_file(path: str | Path, include_dirs: tuple[str, ...] = (),
                  control_store_words: int = CONTROL_STORE_WORDS) -> Image:
    """Assemble a .uc file (``#include`` paths resolve relative to it, then include_dirs)."""
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AsmError([Diagnostic(f"cannot read source file: {e}", SourceLocation(path, 0, 0),
                                   "check the path")]) from None
    sources = SourceSet(tuple(str(d) for d in include_dirs))
    reader = Reader(sources)
    reader.stack.append(os.path.realpath(path))
    reader.read_text(text, path, os.path.dirname(path) or ".")
    return _assemble(sources, control_store_words)


def _assemble(sources: SourceSet, control_store_words: int) -> Image:
    asm = _Assembler(sources, min(control_store_words, 1 << isa.TARGET_BITS))
    asm.collect()
    asm.place()
    # an image too big for the control store cannot even encode its branch targets
    if not asm.check_size(control_store_words):
        asm.encode()
        asm.check_defers()
    variables = asm.debug_variables() if sources.debug_marks else ([], [])
    if sources.diagnostics:
        file_order = {name: i for i, name in enumerate(sources.texts)}
        raise AsmError(sorted(sources.diagnostics,
                              key=lambda d: _order(file_order, d)), sources.source_texts())
    image = asm.image()
    image.variables, image.var_ranges = variables
    return image


def _order(file_order: dict[str, int], d: Diagnostic) -> tuple[int, int, int]:
    """Diagnostics in reading order: by file (as first read), line, column."""
    loc = d.location
    if loc is None:
        return (-1, 0, 0)
    return (file_order.get(loc.file, -1), loc.line, loc.column)


# --------------------------------------------------------------------------- state
@dataclass
class Decl:
    """A `.reg`/`.areg`/`.breg`/`.sig` name."""

    name: str  # with its $ / $$ prefix for transfer registers
    kind: str  # "gpr" | "$" | "$$" | "sig"
    stmt: Stmt
    col: int
    bank: str = ""  # forced bank for .areg/.breg
    fixed: int | None = None  # operand code / transfer index / signal number when bound


@dataclass
class Instr:
    """An instruction statement at an address (``immed32`` may take two words)."""

    stmt: Stmt
    address: int
    nwords: int = 1
    words: list[int] = field(default_factory=list)


class _Assembler:
    def __init__(self, sources: SourceSet, control_store_words: int) -> None:
        self.sources = sources
        self.table = SymbolTable(control_store_words=control_store_words)
        self.label_stmt: dict[str, Stmt] = {}
        self.instrs: list[Instr] = []
        self.decls: list[Decl] = []
        self.decl_by_name: dict[str, Decl] = {}
        self.xfer_orders: list[tuple[list[str], Stmt]] = []
        self.mes: tuple[int, ...] | None = None
        self.ctx_mode_value: int | None = None
        self.address = 0
        self.bank_error_instrs: set[int] = set()

    # ------------------------------------------------------------------ diagnostics
    def error(self, stmt: Stmt, col: int, message: str, hint: str = "") -> None:
        self.sources.error(stmt.line.file, stmt.line.lineno, col, message, hint)

    @property
    def ctx_mode(self) -> int:
        return self.ctx_mode_value or 8

    # ------------------------------------------------------------------ pass 1
    def collect(self) -> None:
        for line in self.sources.lines:
            try:
                stmts = parse_line(line)
            except LineError as e:
                self.sources.error(line.file, line.lineno, e.col, e.message, e.hint)
                continue
            for stmt in stmts:
                try:
                    self._collect_stmt(stmt)
                except LineError as e:
                    self.error(stmt, e.col, e.message, e.hint)

    def _collect_stmt(self, stmt: Stmt) -> None:
        if stmt.kind == "label":
            self._define_label(stmt)
        elif stmt.kind == "directive":
            self._directive(stmt)
        else:
            self._instruction(stmt)

    def _define_label(self, stmt: Stmt) -> None:
        if stmt.name in self.table.labels:
            first = self.label_stmt[stmt.name].line
            raise LineError(f"duplicate label {stmt.name!r}", stmt.col,
                            f"first defined at {first.file}:{first.lineno}; rename one")
        self.table.labels[stmt.name] = self.address
        self.label_stmt[stmt.name] = stmt

    def _instruction(self, stmt: Stmt) -> None:
        known = list(isa.BY_MNEMONIC) + list(PSEUDO_MNEMONICS)
        if stmt.name not in known:
            close = difflib.get_close_matches(stmt.name, known, 3)
            hint = f"did you mean {' or '.join(close)}?" if close else "see docs/assembler.md"
            raise LineError(f"unknown mnemonic {stmt.name!r}", stmt.col, hint)
        nwords = self._immed32_words(stmt) if stmt.name == "immed32" else 1
        self.instrs.append(Instr(stmt, self.address, nwords))
        self.address += nwords

    def _immed32_words(self, stmt: Stmt) -> int:
        if len(stmt.args) != 2:
            return 1  # the arity error is reported when encoding
        try:
            value = evaluate(stmt.args[1].text, self.table.consts.get)
        except ExprError:
            return 1
        return 1 if immed_encoding(value) is not None else 2

    # directives ---------------------------------------------------------
    def _directive(self, stmt: Stmt) -> None:
        handlers = {
            "reg": self._dir_reg, "areg": self._dir_reg, "breg": self._dir_reg,
            "sig": self._dir_sig, "const": self._dir_const, "me": self._dir_me,
            "ctx_mode": self._dir_ctx_mode, "xfer_order": self._dir_xfer_order,
            "word": self._dir_word,
        }
        handler = handlers.get(stmt.name)
        if handler is None:
            close = difflib.get_close_matches("." + stmt.name, DIRECTIVES, 1)
            hint = f"did you mean {close[0]}?" if close else f"known: {' '.join(DIRECTIVES)}"
            raise LineError(f"unknown directive .{stmt.name}", stmt.col, hint)
        handler(stmt)

    def _items(self, stmt: Stmt) -> list[Arg]:
        items: list[Arg] = []
        for piece in split_args(stmt.rest, stmt.rest_col):
            offset = 0
            for word in piece.text.split():
                offset = piece.text.index(word, offset)
                items.append(Arg(word, piece.col + offset))
                offset += len(word)
        if not items:
            raise LineError(f".{stmt.name} needs operands", stmt.col,
                            DIRECTIVE_HINTS.get(stmt.name, ""))
        return items

    def _declare(self, decl: Decl) -> None:
        bare = decl.name.lstrip("$")
        if not re.fullmatch(IDENT, bare):
            raise LineError(f"{decl.name!r} is not a valid name", decl.col,
                            "names are letters, digits and _, starting with a letter")
        if decl.kind in ("gpr", "sig") and is_reserved_register_name(decl.name):
            raise LineError(f"{decl.name!r} is a register name and cannot be declared",
                            decl.col, "choose another name")
        if decl.name in self.decl_by_name or decl.name in self.table.consts:
            raise LineError(f"{decl.name!r} is already declared", decl.col,
                            "each register, signal and constant needs its own name")
        self.decls.append(decl)
        self.decl_by_name[decl.name] = decl
        self.table.decl_kinds[decl.name] = decl.kind

    def _dir_reg(self, stmt: Stmt) -> None:
        forced = {"areg": "A", "breg": "B"}.get(stmt.name, "")
        for item in self._items(stmt):
            try:
                self._declare(self._reg_item(stmt, item, forced))
            except LineError as e:
                self.error(stmt, e.col, e.message, e.hint)

    def _reg_item(self, stmt: Stmt, item: Arg, forced: str) -> Decl:
        name, _, bound = item.text.partition("=")
        kind = "$$" if name.startswith("$$") else "$" if name.startswith("$") else "gpr"
        if forced and kind != "gpr":
            raise LineError(f".{stmt.name} places GPRs; {name} is a transfer register",
                            item.col, f"use .reg {name}")
        decl = Decl(name, kind, stmt, item.col, bank=forced)
        if bound:
            decl.fixed = self._bound_register(kind, bound, forced, item)
        return decl

    def _bound_register(self, kind: str, bound: str, forced: str, item: Arg) -> int:
        try:
            op = parse_operand(bound)
        except OperandSyntaxError as e:
            raise LineError(str(e), item.col, "bind to a register that exists, e.g. a3") from None
        want = {"gpr": ("gpr_a", "gpr_b"), "$": ("xfer_s",), "$$": ("xfer_d",)}[kind]
        cls = isa.operand_class(op.code) if op.kind == "code" else None
        if cls is None or cls.name not in want or (forced and cls.bank != forced):
            raise LineError(f"cannot bind {item.text.partition('=')[0]} to {bound}", item.col,
                            "bind GPR names to a<n>/b<n>, $names to $<n>, $$names to $$<n>")
        return op.code if kind == "gpr" else op.code - cls.first

    def _dir_sig(self, stmt: Stmt) -> None:
        for item in self._items(stmt):
            name, _, bound = item.text.partition("=")
            decl = Decl(name, "sig", stmt, item.col)
            try:
                if bound:
                    decl.fixed = self.table.const_in(Arg(bound, item.col + len(name) + 1), 1,
                                                SIGNAL_MAX, "signal number")
                self._declare(decl)
            except LineError as e:
                self.error(stmt, e.col, e.message, e.hint)

    def _dir_const(self, stmt: Stmt) -> None:
        m = re.fullmatch(rf"({IDENT})\s*(.*)", stmt.rest)
        if not m or not m.group(2):
            raise LineError("malformed .const", stmt.col, DIRECTIVE_HINTS["const"])
        name = m.group(1)
        if name in self.table.consts or name in self.decl_by_name:
            raise LineError(f"{name!r} is already defined", stmt.rest_col,
                            "each constant, register and signal needs its own name")
        value_col = stmt.rest_col + m.start(2)
        self.table.consts[name] = self.table.const_in(Arg(m.group(2), value_col), -(1 << 63),
                                                      1 << 64, "constant")

    def _dir_me(self, stmt: Stmt) -> None:
        if self.mes is not None:
            raise LineError("second .me directive", stmt.col, "list all MEs in one .me")
        mes: list[int] = []
        for item in self._items(stmt):
            me = self.table.const_in(item, 0, ME_COUNT - 1, "ME number")
            if me in mes:
                raise LineError(f"ME {me} is listed twice", item.col, "list each ME once")
            mes.append(me)
        self.mes = tuple(mes)

    def _dir_ctx_mode(self, stmt: Stmt) -> None:
        items = self._items(stmt)
        mode = self.table.const_in(items[0], 0, 1 << 32, "context mode")
        if len(items) != 1 or mode not in CTX_MODES:
            raise LineError(f".ctx_mode is 4 or 8, not {stmt.rest}", stmt.rest_col,
                            "8 contexts with 16 registers each, or 4 with 32")
        if self.ctx_mode_value is not None and self.ctx_mode_value != mode:
            raise LineError("conflicting .ctx_mode directives", stmt.col,
                            "keep one .ctx_mode")
        self.ctx_mode_value = mode
        self.table.ctx_mode = mode

    def _dir_xfer_order(self, stmt: Stmt) -> None:
        items = self._items(stmt)
        names = [i.text for i in items]
        prefix = "$$" if names[0].startswith("$$") else "$"
        for item in items:
            if not item.text.startswith("$") or item.text.startswith("$$") != (prefix == "$$"):
                raise LineError(f"{item.text} is not a {prefix} transfer register name",
                                item.col, ".xfer_order lists names of one kind, e.g. $a $b $c")
            if any(item.text in group for group, _ in self.xfer_orders):
                raise LineError(f"{item.text} is already in an .xfer_order", item.col,
                                "a name can be in one .xfer_order only")
        for item in items:  # .xfer_order declares the names it lists
            if item.text not in self.decl_by_name:
                self._declare(Decl(item.text, prefix, stmt, item.col))
        self.xfer_orders.append((names, stmt))

    def _dir_word(self, stmt: Stmt) -> None:
        instr = Instr(stmt, self.address)
        self.instrs.append(instr)
        self.address += 1

    # ------------------------------------------------------------------ pass 2
    def place(self) -> None:
        usages = [self._usage(instr) for instr in self.instrs]
        self._place_gprs(usages)
        self._place_xfers(usages)
        self._place_signals(usages)

    def _usage(self, instr: Instr) -> Usage:
        usage = Usage()
        stmt = instr.stmt
        if stmt.kind != "instr":
            return usage
        resolver = Resolver(self.table, stmt, usage)
        if stmt.name == "immed32":
            try:
                resolver.dst(stmt.args[0], "dest")
            except (LineError, IndexError):
                pass
            return usage
        ins = isa.BY_MNEMONIC[stmt.name]
        ops = Operands(stmt.name, ins.syntax, stmt.args, stmt.options, stmt.col)
        try:
            FORMS[ins.format][0](ins, ops, resolver)
        except LineError:
            pass  # reported by the encode pass
        a, b = resolver.gpr_nodes.get("a"), resolver.gpr_nodes.get("b")
        if a and b:
            usage.pair = (a, b)
            usage.pair_col = resolver.cols.get("b", stmt.col)
        return usage

    def _place_gprs(self, usages: list[Usage]) -> None:
        gprs = [d for d in self.decls if d.kind == "gpr"]
        pinned = {d.name: d.bank for d in gprs if d.bank}
        pinned.update({d.name: gpr_bank(d.fixed) for d in gprs if d.fixed is not None})
        edges = [(u.pair, i) for i, u in enumerate(usages) if u.pair]
        colours, problems = banks.colour_banks([d.name for d in gprs], pinned,
                                               [e for e, _ in edges])
        for problem in problems:
            index = edges[problem.edge_index][1]
            self.bank_error_instrs.add(index)
            stmt = self.instrs[index].stmt
            self.error(stmt, usages[index].pair_col or stmt.col, problem.message,
                       "copy one of the values to another register first, or change the "
                       ".areg/.breg declarations")
        taken = {code for u in usages for code in u.raw_gprs}
        taken |= {d.fixed for d in gprs if d.fixed is not None}
        limit = per_context(self.ctx_mode)
        for bank in ("A", "B"):
            first = CLASS["gpr_a" if bank == "A" else "gpr_b"].first
            names = [d.name for d in gprs if d.fixed is None and colours[d.name] == bank]
            used = {c - first for c in taken if gpr_bank(c) == bank}
            placed, overflow = banks.place_in_order(names, used, limit)
            self.table.gpr_codes.update({n: first + i for n, i in placed.items()})
            if overflow:
                self._too_many(overflow, f"GPRs in bank {bank}", limit,
                               "use .ctx_mode 4 (32 per bank), fewer .reg names, or keep "
                               "values in local memory")
        self.table.gpr_codes.update({d.name: d.fixed for d in gprs if d.fixed is not None})

    def _too_many(self, overflow: list[str], what: str, limit: int, hint: str) -> None:
        decl = self.decl_by_name[overflow[0]]
        names = ", ".join(overflow)
        self.error(decl.stmt, decl.col, f"too many registers: {what} are limited to {limit} "
                   f"per context in {self.ctx_mode}-context mode; no room for {names}", hint)

    def _place_xfers(self, usages: list[Usage]) -> None:
        limit = per_context(self.ctx_mode)
        for prefix in ("$", "$$"):
            decls = [d for d in self.decls if d.kind == prefix]
            taken = {i for u in usages for i in u.raw_xfers[prefix]}
            taken |= {d.fixed for d in decls if d.fixed is not None}
            groups = [g for g, _ in self.xfer_orders if g[0].startswith(prefix)
                      and g[0].startswith("$$") == (prefix == "$$")]
            names = [d.name for d in decls if d.fixed is None]
            placed, overflow = banks.place_in_order(names, taken, limit, groups)
            self.table.xfer_index.update(placed)
            self.table.xfer_index.update({d.name: d.fixed for d in decls if d.fixed is not None})
            if overflow:
                kind = "SRAM ($)" if prefix == "$" else "DRAM ($$)"
                self._too_many(overflow, f"{kind} transfer registers", limit,
                               "use .ctx_mode 4 (32 per kind) or fewer transfer registers")

    def _place_signals(self, usages: list[Usage]) -> None:
        decls = [d for d in self.decls if d.kind == "sig"]
        taken = {s for u in usages for s in u.raw_signals} | {0}
        taken |= {d.fixed for d in decls if d.fixed is not None}
        names = [d.name for d in decls if d.fixed is None]
        placed, overflow = banks.place_in_order(names, taken, SIGNAL_MAX + 1)
        self.table.signal_numbers.update(placed)
        self.table.signal_numbers.update({d.name: d.fixed for d in decls if d.fixed is not None})
        if overflow:
            decl = self.decl_by_name[overflow[0]]
            self.error(decl.stmt, decl.col, f"signal out of range: a context has signals "
                       f"1..{SIGNAL_MAX} only; no number left for {', '.join(overflow)}",
                       "reuse a signal whose command has completed")

    # ------------------------------------------------------------------ pass 3
    def encode(self) -> None:
        for index, instr in enumerate(self.instrs):
            try:
                instr.words = self._encode_instr(index, instr)
            except LineError as e:
                self.error(instr.stmt, e.col, e.message, e.hint)
                instr.words = [0] * instr.nwords
            if len(instr.words) != instr.nwords:  # keep addresses as pass 1 laid them out
                instr.words = (instr.words + [0] * instr.nwords)[:instr.nwords]

    def _encode_instr(self, index: int, instr: Instr) -> list[int]:
        stmt = instr.stmt
        if stmt.kind == "directive":  # .word
            return [self._raw_word(stmt)]
        if stmt.name == "immed32":
            return self._immed32(stmt)
        ins = isa.BY_MNEMONIC[stmt.name]
        resolver = Resolver(self.table, stmt, Usage(), final=True)
        ops = Operands(stmt.name, ins.syntax, stmt.args, stmt.options, stmt.col)
        fields = FORMS[ins.format][0](ins, ops, resolver)
        fields.update(mnemonic_fields(ins, stmt.name))
        fields.update(self._common_options(ins, ops, resolver))
        if ops.options:
            opt = ops.options[0]
            raise LineError(f"unexpected option {opt.name!r} for {stmt.name}", opt.col,
                            f"syntax: {ins.syntax}")
        if index not in self.bank_error_instrs:
            self._check_banks(ins, fields, resolver, stmt)
        return [isa.encode(ins.opcode, fields)]

    def _common_options(self, ins: isa.Instruction, ops: Operands,
                        resolver: Resolver) -> dict[str, int]:
        names = {f.name for f in isa.FORMATS[ins.format].fields}
        out: dict[str, int] = {}
        if "defer" in names and (opt := ops.take("defer")):
            out["defer"] = resolver.const(ops.option_arg(opt), 0, 3, "defer count",
                                          "defer[0] .. defer[3]")
        if "swap" in names and (opt := ops.take("ctx_swap", "sig_done")):
            out["sig"] = resolver.signal(ops.option_arg(opt))
            out["swap"] = 1 if opt.name == "ctx_swap" else 0
        return out

    def _check_banks(self, ins: isa.Instruction, fields: dict[str, int],
                     resolver: Resolver, stmt: Stmt) -> None:
        if "a" not in fields or "b" not in fields:
            return
        bank_a, bank_b = gpr_bank(fields["a"]), gpr_bank(fields["b"])
        if bank_a and bank_a == bank_b:
            col = resolver.cols.get("b", stmt.col)
            raise LineError(f"A/B bank conflict: {render_code(fields['a'])} and "
                            f"{render_code(fields['b'])} are both in bank {bank_a}", col,
                            "the two sources must come from different banks: use a "
                            f"{'B' if bank_a == 'A' else 'A'}-bank register for one of them")

    def _raw_word(self, stmt: Stmt) -> int:
        arg = Arg(stmt.rest, stmt.rest_col)
        value = self.table.const_in(arg, 0, (1 << isa.WORD_BITS) - 1, ".word value")
        try:
            ins, fields = isa.decode(value)
        except ValueError as e:
            raise LineError(f"illegal instruction word: {e}", arg.col,
                            "a .word must be a legal encoding (docs/isa.md)") from None
        problem = check_field_limits(ins, fields, self.ctx_mode)
        if problem:
            raise LineError(f"illegal instruction word {value:#012x}: {problem}", arg.col,
                            "a .word must be a legal encoding (docs/isa.md)")
        return value

    def _immed32(self, stmt: Stmt) -> list[int]:
        ins = isa.BY_MNEMONIC["immed"]
        ops = Operands("immed32", "immed32[dest, value32]", stmt.args, stmt.options, stmt.col)
        resolver = Resolver(self.table, stmt, Usage(), final=True)
        d, v = ops.args(2)
        dest = resolver.dst(d, "dest")
        value = resolver.const(v, -(1 << 31), 0xFFFF_FFFF, "immed32 value") & 0xFFFF_FFFF
        if ops.options:
            raise LineError(f"unexpected option {ops.options[0].name!r}", ops.options[0].col,
                            "syntax: immed32[dest, value32]")
        enc = immed_encoding(value)
        if enc is not None:
            fields = {"variant": isa.IMMED_VARIANTS["immed"], "dest": dest, "value": enc[0],
                      "shift": enc[1], "invert": enc[2]}
            return [isa.encode(ins.opcode, fields)]
        return [isa.encode(ins.opcode, {"variant": isa.IMMED_VARIANTS[m], "dest": dest,
                                        "value": part})
                for m, part in (("immed_w0", value & 0xFFFF), ("immed_w1", value >> 16))]

    # ------------------------------------------------------------------ pass 4
    def check_size(self, control_store_words: int) -> bool:
        """Report a control store overflow at the first instruction that does not fit."""
        needed = max((i.address + i.nwords for i in self.instrs), default=0)
        for instr in self.instrs:
            if instr.address + instr.nwords > control_store_words:
                self.error(instr.stmt, instr.stmt.col,
                           f"control store overflow: the image needs {needed} words but "
                           f"the control store holds {control_store_words}",
                           "split the code over more MEs or shorten it")
                return True
        return False

    def check_defers(self) -> None:
        words = self.words()
        for instr in self.instrs:
            for k, word in enumerate(instr.words):
                self._check_defer(instr, instr.address + k, word, words)

    def _check_defer(self, instr: Instr, pc: int, word: int, words: list[int]) -> None:
        try:
            ins, fields = isa.decode(word)
        except ValueError:
            return
        n = fields.get("defer", 0)
        if not n:
            return
        col = next((o.col for o in instr.stmt.options if o.name == "defer"), instr.stmt.col)
        if pc + n >= len(words):
            raise_at = len(words) - pc - 1
            self.error(instr.stmt, col, f"bad defer: defer[{n}] needs {n} instructions after "
                       f"this one, but only {raise_at} follow", "add the deferred instructions "
                       "or lower the defer count")
            return
        for slot in range(pc + 1, pc + n + 1):
            slot_ins, _ = isa.decode(words[slot])
            if slot_ins.timing in NO_DEFER_TIMING:
                self.error(instr.stmt, col, f"bad defer: the instruction at address {slot} in "
                           f"the defer shadow is a {slot_ins.name} (branches and ctx_arb "
                           "cannot be deferred)", "move it out of the defer shadow or lower "
                           "the defer count")
                return

    # ------------------------------------------------------------------ result
    def words(self) -> list[int]:
        return [w for instr in self.instrs for w in instr.words]

    def image(self) -> Image:
        lines = [instr.stmt.src_loc() for instr in self.instrs for _ in instr.words]
        registers: dict[str, str] = {}
        for d in self.decls:
            if d.kind == "gpr":
                registers[d.name] = render_code(self.table.gpr_codes[d.name])
            elif d.kind in ("$", "$$"):
                registers[d.name] = f"{d.kind}{self.table.xfer_index[d.name]}"
        signals = {d.name: self.table.signal_numbers[d.name] for d in self.decls if d.kind == "sig"}
        return Image(mes=self.mes or (0,), ctx_mode=self.ctx_mode, words=self.words(),
                     symbols=dict(self.table.labels), lines=lines, registers=registers,
                     signals=signals)

    def debug_variables(self):
        """MBL variables from the `.dbg_*` directives (debugvars.py)."""
        words = sum(instr.nwords for instr in self.instrs)
        index = {id(line): k for k, line in enumerate(self.sources.lines)}
        pc_of_line = [words] * (len(self.sources.lines) + 1)
        for instr in reversed(self.instrs):
            pc_of_line[index[id(instr.stmt.line)]] = instr.address
        for k in range(len(self.sources.lines) - 1, -1, -1):
            pc_of_line[k] = min(pc_of_line[k], pc_of_line[k + 1])
        file_end = {line.file: pc_of_line[k + 1] for k, line in enumerate(self.sources.lines)}
        return debugvars.collect(
            self.sources.debug_marks, pc_of_line, file_end,
            lambda m, message: self.sources.error(m.file, m.lineno, 1, message,
                                                  "see compiler/uc/debugvars.py"))


DIRECTIVE_HINTS = {
    "reg": "e.g. .reg count tmp $pkt $$buf  (or name=a3 to bind)",
    "areg": "e.g. .areg count", "breg": "e.g. .breg count",
    "sig": "e.g. .sig rd_done wr_done", "const": "e.g. .const MAX_PORTS 16",
    "me": "e.g. .me 0 1 2", "ctx_mode": ".ctx_mode 8 or .ctx_mode 4",
    "xfer_order": "e.g. .xfer_order $w0 $w1 $w2", "word": "e.g. .word 0xb800000000",
}
