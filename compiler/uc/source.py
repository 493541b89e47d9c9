"""Reading microcode source: files, #include, #define, comments, .line, .loc, statements.

The reader turns files into ``Stmt`` objects (labels, directives, instructions) with the
column of every operand, so later passes can point at the exact text of an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from npkit.base.diagnostics import Diagnostic, SourceLocation
from npkit.sim import isa

from .debugvars import Mark

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_DEFINE_WORD = re.compile(r"(?<![\w$#.*])[A-Za-z_]\w*(?![\w$#])")
_LABEL = re.compile(rf"\s*({IDENT})#?\s*:(?!:)")
_MNEMONIC = re.compile(r"[^\s\[\],;]+")
_OPTION = re.compile(r"([\w!=]+)\s*")
_LINE_DIRECTIVE = re.compile(r'\s*\.line\s+"((?:[^"\\]|\\.)*)"\s+(\d{1,9})(?:\s+(\d{1,9}))?\s*$')
# .loc "file" LINE [COL]: every following instruction comes from that one position (a
# compiler's source line); .loc / .loc none: back to the text's own (or .line) lines
_LOC_DIRECTIVE = re.compile(
    r'\s*\.loc(?:\s+"((?:[^"\\]|\\.)*)"\s+(\d{1,9})(?:\s+(\d{1,9}))?|\s+none)?\s*$')
_MAX_EXPANSIONS = 32


class LineError(Exception):
    """An error at a column of the current statement (converted to a Diagnostic)."""

    def __init__(self, message: str, col: int, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.hint = hint


@dataclass(frozen=True)
class Line:
    file: str  # the file being read (diagnostics point here)
    lineno: int
    text: str  # comments blanked, columns unchanged
    src_file: str  # what the image records (differs after a .line directive)
    src_line: int
    col_override: int | None
    defines: Mapping[str, str]


@dataclass(frozen=True)
class Arg:
    text: str
    col: int  # 1-based column of the first character


@dataclass(frozen=True)
class Option:
    name: str
    args: tuple[Arg, ...] | None  # None when written without brackets
    col: int


@dataclass
class Stmt:
    kind: str  # "label" | "directive" | "instr"
    line: Line
    col: int
    name: str
    args: list[Arg] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    rest: str = ""  # directives: the text after the name (defines expanded)
    rest_col: int = 0

    def src_loc(self) -> SourceLocation:
        col = self.line.col_override if self.line.col_override is not None else self.col
        return SourceLocation(self.line.src_file, self.line.src_line, col)


@dataclass
class SourceSet:
    """Everything read for one assembly: statements, source texts and diagnostics."""

    include_dirs: tuple[str, ...]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    texts: dict[str, list[str]] = field(default_factory=dict)
    lines: list[Line] = field(default_factory=list)
    # `.dbg_var` / `.dbg_loc` lines (MBL variables: debugvars.py), placed by the assembler
    debug_marks: list[Mark] = field(default_factory=list)

    def error(self, file: str, line: int, col: int, message: str, hint: str = "") -> None:
        self.diagnostics.append(Diagnostic(message, SourceLocation(file, line, col), hint))

    def source_texts(self) -> dict[str, str]:
        """Each file read, as text (for rendering diagnostics with their source lines)."""
        return {name: "\n".join(lines) for name, lines in self.texts.items()}


# --------------------------------------------------------------------------- files
def strip_comment(text: str) -> str:
    """Blank ``;`` and ``//`` comments (not inside double quotes), keeping columns."""
    in_string = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            in_string = not in_string
        elif not in_string and (c == ";" or text.startswith("//", i)):
            return text[:i]
        elif c == "\\" and in_string:
            i += 1
        i += 1
    return text


def unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def predefined_names() -> dict[str, str]:
    """Names every program sees: the ISA table's MSF address map (``MSF_*``)."""
    return {name: hex(value) for name, value in vars(isa).items()
            if name.startswith("MSF_") and isinstance(value, int)}


class Reader:
    """Reads a file tree into ``SourceSet.lines``, handling the preprocessor."""

    def __init__(self, sources: SourceSet) -> None:
        self.sources = sources
        self.defines: dict[str, str] = predefined_names()
        self.stack: list[str] = []  # real paths of the files being read (cycle check)

    def read_text(self, text: str, name: str, directory: str) -> None:
        self.sources.texts[name] = text.splitlines()
        self._read_lines(name, directory)

    def read_file(self, path: str, directory: str) -> None:
        self.sources.texts[path] = Path(path).read_text(encoding="utf-8").splitlines()
        self.stack.append(os.path.realpath(path))
        self._read_lines(path, directory)
        self.stack.pop()

    def _read_lines(self, name: str, directory: str) -> None:
        conditions: list[tuple[bool, int]] = []  # (active, line of the #if)
        src_name, src_base, src_from = name, 1, 1  # .line mapping: line src_from -> src_base
        col_override: int | None = None
        override_line = 0
        fixed_loc: tuple[str, int, int] | None = None  # set by .loc
        for lineno, raw in enumerate(self.sources.texts[name], start=1):
            text = strip_comment(raw)
            stripped = text.strip()
            active = all(a for a, _ in conditions)
            if stripped.startswith("#"):
                self._preprocessor(name, lineno, text, directory, conditions, active)
                continue
            if not active or not stripped:
                continue
            if stripped.startswith(".line"):
                m = _LINE_DIRECTIVE.match(text)
                if not m:
                    col = text.index(".line") + 1
                    self.sources.error(name, lineno, col, "malformed .line directive",
                                       'write .line "file" LINE [COLUMN]')
                    continue
                src_name, src_base, src_from = unquote(m.group(1)), int(m.group(2)), lineno + 1
                col_override = int(m.group(3)) if m.group(3) else None
                override_line = lineno + 1
                continue
            if re.match(r"\s*\.loc\b", text):
                fixed_loc = self._loc_directive(name, lineno, text, fixed_loc)
                continue
            if stripped.startswith(".dbg_"):
                self.sources.debug_marks.append(Mark(len(self.sources.lines), name, lineno,
                                                     text))
                continue
            if fixed_loc is not None:
                self.sources.lines.append(Line(name, lineno, text, fixed_loc[0], fixed_loc[1],
                                               fixed_loc[2], self.defines))
                continue
            self.sources.lines.append(Line(
                name, lineno, text, src_name, src_base + lineno - src_from,
                col_override if lineno == override_line else None, self.defines))
        for _, opened in conditions:
            self.sources.error(name, opened, 1, "#ifdef without #endif",
                               "close the conditional block with #endif")

    def _loc_directive(self, name: str, lineno: int, text: str,
                       current: tuple[str, int, int] | None) -> tuple[str, int, int] | None:
        """The fixed source position a .loc line sets (None: the text's own lines)."""
        m = _LOC_DIRECTIVE.match(text)
        if not m:
            self.sources.error(name, lineno, text.index(".loc") + 1, "malformed .loc directive",
                               'write .loc "file" LINE [COLUMN], or .loc none')
            return current
        if m.group(1) is None:
            return None
        return unquote(m.group(1)), int(m.group(2)), int(m.group(3) or 1)

    def _preprocessor(self, name: str, lineno: int, text: str, directory: str,
                      conditions: list[tuple[bool, int]], active: bool) -> None:
        col = text.index("#") + 1
        m = re.match(r"\s*#\s*(\w*)\s*(.*?)\s*$", text)
        assert m is not None
        word, rest = m.group(1), m.group(2)
        if word in ("ifdef", "ifndef"):
            defined = rest in self.defines
            conditions.append((defined == (word == "ifdef"), lineno))
        elif word == "else":
            if not conditions:
                self.sources.error(name, lineno, col, "#else without #ifdef",
                                   "remove it or add #ifdef")
            else:
                conditions[-1] = (not conditions[-1][0], conditions[-1][1])
        elif word == "endif":
            if not conditions:
                self.sources.error(name, lineno, col, "#endif without #ifdef",
                                   "remove it or add #ifdef")
            else:
                conditions.pop()
        elif not active:
            return
        elif word == "include":
            self._include(name, lineno, col, rest, directory)
        elif word == "define":
            self._define(name, lineno, col, rest)
        elif word == "undef":
            self.defines = {k: v for k, v in self.defines.items() if k != rest}
        else:
            self.sources.error(name, lineno, col, f"unknown preprocessor directive #{word}",
                               "supported: #include #define #undef #ifdef #ifndef #else "
                               "#endif")

    def _define(self, name: str, lineno: int, col: int, rest: str) -> None:
        m = re.fullmatch(rf"({IDENT})\s*(.*)", rest)
        if not m:
            self.sources.error(name, lineno, col, "malformed #define",
                               "write #define NAME value")
            return
        # copy on write: earlier lines keep the definitions they saw
        self.defines = {**self.defines, m.group(1): m.group(2)}

    def _include(self, name: str, lineno: int, col: int, rest: str, directory: str) -> None:
        m = re.fullmatch(r'"([^"]+)"|<([^>]+)>', rest)
        if not m:
            self.sources.error(name, lineno, col, "malformed #include",
                               'write #include "file.uc"')
            return
        target = m.group(1) or m.group(2)
        candidates = [os.path.join(directory, target)]
        candidates += [os.path.join(d, target) for d in self.sources.include_dirs]
        found = next((c for c in candidates if os.path.isfile(c)), None)
        if found is None:
            searched = ", ".join(dict.fromkeys(os.path.dirname(c) or "." for c in candidates))
            self.sources.error(name, lineno, col, f"cannot find include file {target!r}",
                               f"searched {searched}; pass include_dirs (-I) to add folders")
            return
        found = os.path.normpath(found)
        if os.path.realpath(found) in self.stack:
            chain = " -> ".join(self.stack[self.stack.index(os.path.realpath(found)):])
            self.sources.error(name, lineno, col, f"include cycle: {target!r} is already being "
                               f"read ({chain} -> {os.path.realpath(found)})",
                               "remove the #include that closes the cycle or guard the file "
                               "with #ifndef/#define/#endif")
            return
        try:
            self.read_file(found, os.path.dirname(found))
        except (OSError, UnicodeDecodeError) as e:
            self.sources.error(name, lineno, col, f"cannot read include file {target!r}: {e}",
                               "check the file's permissions and encoding (UTF-8)")


# --------------------------------------------------------------------------- statements
def expand_defines(text: str, defines: Mapping[str, str], col: int) -> str:
    """Replace #define'd identifiers (recursively)."""
    if not defines:
        return text
    for _ in range(_MAX_EXPANSIONS):
        new = _DEFINE_WORD.sub(lambda m: defines.get(m.group(0), m.group(0)), text)
        if new == text:
            return new
        text = new
    raise LineError(f"#define expansion of {text!r} does not terminate", col,
                    "a #define refers to itself")


def split_args(text: str, start_col: int) -> list[Arg]:
    """Split at top-level commas; each piece stripped, with its column."""
    args: list[Arg] = []
    depth = 0
    begin = 0
    for i, c in enumerate(text + ","):
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif c == "," and depth == 0:
            piece = text[begin:i]
            lead = len(piece) - len(piece.lstrip())
            args.append(Arg(piece.strip(), start_col + begin + lead))
            begin = i + 1
    return args


def _matching_bracket(text: str, open_pos: int) -> int:
    depth = 0
    for i in range(open_pos, len(text)):
        if text[i] in "[(":
            depth += 1
        elif text[i] in "])":
            depth -= 1
            if depth == 0:
                return i
    return -1


def parse_line(line: Line) -> list[Stmt]:
    """Statements on one line: labels, then a directive or an instruction."""
    text = line.text
    stmts: list[Stmt] = []
    pos = 0
    while m := _LABEL.match(text, pos):
        stmts.append(Stmt("label", line, m.start(1) + 1, m.group(1)))
        pos = m.end()
    rest = text[pos:]
    if not rest.strip():
        return stmts
    col = pos + len(rest) - len(rest.lstrip()) + 1
    if rest.lstrip().startswith("."):
        m = re.match(r"\.(\w+)", text[col - 1:])
        if not m:
            raise LineError("malformed directive", col, "directives look like .reg x y")
        after = text[col - 1 + m.end():]
        rest_col = col + m.end() + len(after) - len(after.lstrip())
        body = expand_defines(after.strip(), line.defines, rest_col)
        stmts.append(Stmt("directive", line, col, m.group(1), rest=body, rest_col=rest_col))
        return stmts
    stmts.append(_parse_instruction(line, col))
    return stmts


def _parse_instruction(line: Line, col: int) -> Stmt:
    text = line.text
    m = _MNEMONIC.match(text, col - 1)
    if not m:
        raise LineError(f"unexpected {text[col - 1]!r}", col, "expected an instruction")
    stmt = Stmt("instr", line, col, m.group(0))
    pos = m.end()
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos < len(text) and text[pos] == "[":
        close = _matching_bracket(text, pos)
        if close < 0:
            raise LineError("missing ']'", pos + 1, "close the operand list with ']'")
        inner = text[pos + 1:close]
        if inner.strip():
            stmt.args = [Arg(expand_defines(a.text, line.defines, a.col), a.col)
                         for a in split_args(inner, pos + 2)]
        pos = close + 1
    stmt.options = _parse_options(line, text, pos)
    return stmt


def _parse_options(line: Line, text: str, pos: int) -> list[Option]:
    options: list[Option] = []
    while pos < len(text):
        tail = text[pos:]
        if not tail.strip():
            break
        lead = len(tail) - len(tail.lstrip())
        pos += lead
        if text[pos] != ",":
            raise LineError(f"unexpected {text[pos:].strip()!r} after the operands", pos + 1,
                            "options follow a comma, e.g. ', defer[1]'")
        pos += 1
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        m = _OPTION.match(text, pos)
        if not m:
            raise LineError("expected an option after ','", pos + 1,
                            "e.g. defer[1], ctx_swap[sig], sig_done[sig], any")
        name_col = pos + 1
        name = expand_defines(m.group(1), line.defines, name_col)
        pos = m.end()
        args: tuple[Arg, ...] | None = None
        if pos < len(text) and text[pos] == "[":
            close = _matching_bracket(text, pos)
            if close < 0:
                raise LineError("missing ']'", pos + 1, "close the option, e.g. defer[1]")
            args = tuple(Arg(expand_defines(a.text, line.defines, a.col), a.col)
                         for a in split_args(text[pos + 1:close], pos + 2))
            pos = close + 1
        options.append(Option(name, args, name_col))
    return options
