"""The ME image: what the assembler produces and the loader consumes, and its file format.

File format (version 1) — a UTF-8 JSON object:

    {"format": "npkit-uc-image", "version": 1,
     "mes": [0, 1], "ctx_mode": 8,
     "words": ["0x3a00000000", ...],          # 40-bit words, 10 hex digits
     "symbols": {"loop": 3, ...},             # labels -> address
     "registers": {"count": "a0", "$pkt": "$2", ...},   # names -> register
     "signals": {"rd_done": 1, ...},          # signal names -> number
     "files": ["main.uc", "inc.uc"],          # source files, referenced by index
     "lines": [[0, 12, 5], ...],              # per word: file index, line, column
     "variables": [...], "var_ranges": [...], # optional: MBL variables (below)
     "checksum": "sha256:<hex>"}              # over the canonical JSON of all other keys

MBL variables (only in images of compiled MBL; the keys are absent otherwise):
"variables" lists `Variable`s as [name, scope, file index, line, column, width, inlined]
(inlined: null or [file index, line, column]); "var_ranges" lists [variable index, first pc,
end pc, location] (location: null for optimized out, else {"args": [[part, ...], ...],
"expr": [...]}, see `VarLocation`).

The checksum is SHA-256 of ``json.dumps(rest, sort_keys=True, separators=(",", ":"))``
where ``rest`` is the object without its ``checksum`` key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.base.diagnostics import SourceLocation
from npkit.sim import isa

from .errors import ImageError
from .operands import check_field_limits, is_reserved_register_name, parse_register_spelling

IMAGE_FORMAT = "npkit-uc-image"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
IMAGE_VERSION = 1
CTX_MODES = (4, 8)
ME_COUNT = 16


@dataclass(frozen=True)
class Variable:
    """An MBL variable (one inlined instance of it): what the compiler's debug info names."""

    name: str
    scope: str                          # the function or block it is declared in
    decl: SourceLocation                # its let / var / for / parameter
    width: int                          # bits (bool: 1)
    inlined_at: SourceLocation | None = None   # its function's call site, if inlined
    scope_end: int = 0                  # last line of its lexical block (decl's file)

    def in_scope(self, loc: SourceLocation | None) -> bool:
        return loc is not None and loc.file == self.decl.file and \
            self.decl.line <= loc.line <= max(self.scope_end, self.decl.line)


# DWARF expression operators a location may use (LLVM's salvaged values, e.g. a variable
# that is `(b0 << 24 | b1 << 16 | ...)` of bytes still in registers)
_BINARY = {"DW_OP_plus": lambda a, b: a + b, "DW_OP_minus": lambda a, b: a - b,
           "DW_OP_mul": lambda a, b: a * b, "DW_OP_and": lambda a, b: a & b,
           "DW_OP_or": lambda a, b: a | b, "DW_OP_xor": lambda a, b: a ^ b,
           "DW_OP_shl": lambda a, b: a << b, "DW_OP_shr": lambda a, b: a >> b}
_OPERANDS = {"DW_OP_LLVM_arg": 1, "DW_OP_constu": 1, "DW_OP_plus_uconst": 1,
             "DW_OP_LLVM_convert": 2, "DW_OP_stack_value": 0, "DW_OP_not": 0,
             "DW_OP_neg": 0, **{op: 0 for op in _BINARY}}


def expression_supported(expr: tuple[str | int, ...]) -> bool:
    """Every operator of expr is one `VarLocation.value` evaluates."""
    k = 0
    while k < len(expr):
        op = expr[k]
        if op not in _OPERANDS:
            return False
        k += 1 + _OPERANDS[op]  # type: ignore[index]
    return k == len(expr)


def substitute_arg(expr: tuple[str | int, ...], k: int,
                   ops: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """expr with `ops` applied to argument k wherever it is pushed (a value rebuilt from
    another: `DW_OP_LLVM_arg k` -> `DW_OP_LLVM_arg k, ops...`)."""
    out: list[str | int] = []
    i = 0
    while i < len(expr):
        op = expr[i]
        n = _OPERANDS[op]  # type: ignore[index]
        out.extend(expr[i:i + 1 + n])
        if op == "DW_OP_LLVM_arg" and expr[i + 1] == k:
            out.extend(ops)
        i += 1 + n
    return tuple(out)


@dataclass(frozen=True)
class VarLocation:
    """Where a variable's value is: `args` (each a value in 32-bit words, most significant
    first: "a3", "b7" GPRs, "$3" / "$$3" transfer registers, "*l$index0[k]" /
    "*l$index1[k]" local memory at LM_ADDR_0/1 + k, "0x1f" constants, all of the context
    looked at), combined by the DWARF expression `expr` (empty: the value is args[0])."""

    args: tuple[tuple[str, ...], ...]
    expr: tuple[str | int, ...] = ()

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for a in self.args for p in a)

    def value(self, read: Callable[[str], int], width: int) -> int:
        """The value, `read(part)` giving each register or local-memory word."""
        def word(part: str) -> int:
            return int(part, 16) if part.startswith("0x") else read(part) & 0xFFFF_FFFF

        args = []
        for arg in self.args:
            v = 0
            for part in arg:
                v = v << 32 | word(part)
            args.append(v)
        stack = [] if any(op == "DW_OP_LLVM_arg" for op in self.expr) else [args[0]]
        k = 0
        while k < len(self.expr):
            op = self.expr[k]
            n = _OPERANDS[op]  # type: ignore[index]
            operands = self.expr[k + 1:k + 1 + n]
            k += 1 + n
            if op == "DW_OP_LLVM_arg":
                stack.append(args[int(operands[0])])
            elif op == "DW_OP_constu":
                stack.append(int(operands[0]))
            elif op == "DW_OP_plus_uconst":
                stack.append(stack.pop() + int(operands[0]))
            elif op == "DW_OP_LLVM_convert":
                stack.append(stack.pop() & ((1 << int(operands[0])) - 1))
            elif op == "DW_OP_not":
                stack.append(~stack.pop())
            elif op == "DW_OP_neg":
                stack.append(-stack.pop())
            elif op in _BINARY:
                b, a = stack.pop(), stack.pop()
                stack.append(_BINARY[op](a, b))    # type: ignore[index]
        return stack[-1] & ((1 << width) - 1)

    def to_json(self) -> dict[str, Any]:
        return {"args": [list(a) for a in self.args], "expr": list(self.expr)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VarLocation:
        expr = tuple(x if isinstance(x, str) else int(x) for x in data["expr"])
        if not expression_supported(expr):
            raise ValueError(f"unsupported variable location expression {expr}")
        return cls(tuple(tuple(str(p) for p in a) for a in data["args"]), expr)


@dataclass(frozen=True)
class VarRange:
    """Variable `var` (an index into Image.variables) is at `location` for pcs
    first .. end - 1 (None: optimized out there)."""

    var: int
    first: int
    end: int
    location: VarLocation | None


@dataclass(frozen=True)
class VariableAt:
    """One variable at one pc: where its value is (None: optimized out)."""

    variable: Variable
    location: VarLocation | None

    @property
    def parts(self) -> tuple[str, ...] | None:
        return None if self.location is None else self.location.parts

    def value(self, read: Callable[[str], int]) -> int | None:
        """The value, `read(part)` giving the 32-bit word of each register / LM part (the
        context's own); None when optimized out."""
        if self.location is None:
            return None
        return self.location.value(read, self.variable.width)


@dataclass
class Image:
    """Microcode for one or more MEs (all listed MEs run the same code)."""

    mes: tuple[int, ...] = (0,)
    ctx_mode: int = 8
    words: list[int] = field(default_factory=list)
    symbols: dict[str, int] = field(default_factory=dict)
    lines: list[SourceLocation] = field(default_factory=list)
    registers: dict[str, str] = field(default_factory=dict)  # name -> "a3", "$2", "$$0"
    signals: dict[str, int] = field(default_factory=dict)  # name -> 1..15
    variables: list[Variable] = field(default_factory=list)   # MBL variables (compiled code)
    var_ranges: list[VarRange] = field(default_factory=list)

    def variables_at(self, pc: int) -> list[VariableAt]:
        """The MBL variables in scope at the source line of `pc` (before the instruction at
        pc runs), each with where its value is, or None where it is optimized out."""
        loc = self.lines[pc] if 0 <= pc < len(self.lines) else None
        where: dict[int, VarLocation | None] = {}
        for r in self.var_ranges:
            if r.first <= pc < r.end:
                where[r.var] = r.location
        return [VariableAt(v, where.get(k)) for k, v in enumerate(self.variables)
                if v.in_scope(loc)]

    def source_of(self, pc: int) -> str | None:
        """The source location "file:line:col" of the instruction at ``pc``, or None."""
        if 0 <= pc < len(self.lines):
            return str(self.lines[pc])
        return None

    def label_at(self, pc: int) -> str | None:
        """The first label naming address ``pc``, or None."""
        for name, addr in self.symbols.items():
            if addr == pc:
                return name
        return None

    # ------------------------------------------------------------------ file format
    def to_json(self) -> dict[str, Any]:
        files: list[str] = []
        index: dict[str, int] = {}
        lines = []
        for loc in self.lines:
            if loc.file not in index:
                index[loc.file] = len(files)
                files.append(loc.file)
            lines.append([index[loc.file], loc.line, loc.column])
        body: dict[str, Any] = {
            "format": IMAGE_FORMAT,
            "version": IMAGE_VERSION,
            "mes": list(self.mes),
            "ctx_mode": self.ctx_mode,
            "words": [f"{w:#012x}" for w in self.words],
            "symbols": dict(self.symbols),
            "registers": dict(self.registers),
            "signals": dict(self.signals),
            "files": files,
            "lines": lines,
        }
        if self.variables:
            def file_index(name: str) -> int:
                if name not in index:
                    index[name] = len(files)
                    files.append(name)
                return index[name]

            body["variables"] = [
                [v.name, v.scope, file_index(v.decl.file), v.decl.line, v.decl.column, v.width,
                 None if v.inlined_at is None else [file_index(v.inlined_at.file),
                                                    v.inlined_at.line, v.inlined_at.column],
                 v.scope_end] for v in self.variables]
            body["var_ranges"] = [[r.var, r.first, r.end, None if r.location is None
                                   else r.location.to_json()] for r in self.var_ranges]
        body["checksum"] = _checksum(body)
        return body

    def save(self, path: str | Path) -> None:
        body = self.to_json()
        # one key per line keeps the file readable and diffable
        text = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in body.items())
        Path(path).write_text("{\n" + text + "\n}\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Image:
        """Read an image file; raises ImageError saying what is wrong with it."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ImageError(f"{path}: no such image file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ImageError(f"{path}: cannot read image: {e}") from None
        return cls.from_json_text(text, str(path))

    @classmethod
    def from_json_text(cls, text: str, name: str = "<image>") -> Image:
        try:
            data = json.loads(text)
        except RecursionError:
            raise ImageError(f"{name}: corrupt image (nested too deeply)") from None
        except json.JSONDecodeError as e:
            raise ImageError(
                f"{name}: truncated or corrupt image (not valid JSON: {e.msg} at "
                f"line {e.lineno} column {e.colno}); re-assemble it") from None
        if not isinstance(data, dict) or data.get("format") != IMAGE_FORMAT:
            raise ImageError(f"{name}: not an npkit microcode image (no \"format\": "
                             f"\"{IMAGE_FORMAT}\" header)")
        if data.get("version") != IMAGE_VERSION:
            raise ImageError(f"{name}: image version {data.get('version')!r} is not supported "
                             f"(this npkit reads version {IMAGE_VERSION}); re-assemble it")
        stored = data.pop("checksum", None)
        if stored != _checksum(data):
            raise ImageError(f"{name}: checksum mismatch: the image is corrupt; re-assemble it")
        try:
            image = _image_from_body(data)
        except KeyError as e:
            raise ImageError(f"{name}: corrupt image: missing key {e}; re-assemble it") \
                from None
        except (TypeError, ValueError, IndexError) as e:
            raise ImageError(f"{name}: corrupt image: {e}") from None
        problem = image.validate()
        if problem:
            raise ImageError(f"{name}: {problem}")
        return image

    def validate(self) -> str | None:
        """None when every word is legal for this image's context mode, else the problem."""
        if self.ctx_mode not in CTX_MODES:
            return f"ctx_mode {self.ctx_mode} is not 4 or 8"
        if not self.mes or any(not 0 <= m < ME_COUNT for m in self.mes):
            return f"ME list {list(self.mes)} is not a non-empty list of 0..{ME_COUNT - 1}"
        if len(self.lines) != len(self.words):
            return f"{len(self.lines)} source lines for {len(self.words)} words"
        for pc, word in enumerate(self.words):
            try:
                ins, fields = isa.decode(word)
            except ValueError as e:
                return f"illegal instruction word at address {pc}: {e}"
            limit = check_field_limits(ins, fields, self.ctx_mode)
            if limit:
                return f"illegal instruction word {word:#012x} at address {pc}: {limit}"
        for name, addr in self.symbols.items():
            if not _IDENT.fullmatch(name):
                return f"label {name!r} is not a valid name"
            if not 0 <= addr <= len(self.words):
                return f"label {name!r} at {addr} is outside the image"
        for name, spelling in self.registers.items():
            if parse_register_spelling(spelling) is None:
                return f"register name {name!r} is bound to {spelling!r}, not a register"
            prefix = re.match(r"\$*", spelling).group(0)  # type: ignore[union-attr]
            if not _IDENT.fullmatch(name.removeprefix(prefix)) or \
                    re.match(r"\$*", name).group(0) != prefix:  # type: ignore[union-attr]
                return f"register name {name!r} does not fit register {spelling}"
        for name in [*self.registers, *self.signals]:
            if is_reserved_register_name(name):
                return f"name {name!r} spells a register and cannot be a declared name"
        if set(self.registers) & set(self.signals):
            return f"names used for both a register and a signal: " \
                   f"{sorted(set(self.registers) & set(self.signals))}"
        for name, sig in self.signals.items():
            if not _IDENT.fullmatch(name):
                return f"signal name {name!r} is not a valid name"
            if not 1 <= sig <= 15:
                return f"signal {name!r} has number {sig}, not 1..15"
        return None


def _checksum(body: dict[str, Any]) -> str:
    rest = {k: v for k, v in body.items() if k != "checksum"}
    canon = json.dumps(rest, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def _image_from_body(data: dict[str, Any]) -> Image:
    files = [str(f) for f in data["files"]]
    lines = [SourceLocation(files[int(fi)], int(ln), int(col)) for fi, ln, col in data["lines"]]
    for key, kind in (("mes", list), ("words", list), ("symbols", dict), ("registers", dict),
                      ("signals", dict), ("files", list), ("lines", list)):
        if not isinstance(data[key], kind):
            raise TypeError(f"{key!r} is not a {kind.__name__}")
    words = []
    for w in data["words"]:
        if not isinstance(w, str) or not re.fullmatch(r"0x[0-9a-fA-F]{1,10}", w):
            raise TypeError(f"word {w!r} is not a hex string 0x + 10 digits")
        words.append(int(w, 16))
    variables = [Variable(str(name), str(scope), SourceLocation(files[int(f)], int(ln), int(col)),
                          int(width), None if at is None else
                          SourceLocation(files[int(at[0])], int(at[1]), int(at[2])), int(end))
                 for name, scope, f, ln, col, width, at, end in data.get("variables", [])]
    ranges = [VarRange(int(v), int(first), int(end),
                       None if loc is None else VarLocation.from_json(loc))
              for v, first, end, loc in data.get("var_ranges", [])]
    if any(not 0 <= r.var < len(variables) for r in ranges):
        raise ValueError("a variable range names no variable")
    return Image(
        variables=variables,
        var_ranges=ranges,
        mes=tuple(int(m) for m in data["mes"]),
        ctx_mode=int(data["ctx_mode"]),
        words=words,
        symbols={str(k): int(v) for k, v in data["symbols"].items()},
        lines=lines,
        registers={str(k): str(v) for k, v in data["registers"].items()},
        signals={str(k): int(v) for k, v in data["signals"].items()},
    )
