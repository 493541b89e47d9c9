"""MBL variables in microcode text: the `.dbg_var` / `.dbg_loc` directives a compiler writes
and what the assembler makes of them (Image.variables, Image.var_ranges).

    .dbg_var 3 "outcome" "ipv4_fwd" "ipv4_fwd.mbl" 74 5 32 101      ; number, name, scope,
                                       ; decl file, line, column, width, last line of scope
    .dbg_var 4 "a" "bad_source" "ipv4_fwd.mbl" 15 15 32 18 "ipv4_fwd.mbl" 37 9   ; + inlined at
    .dbg_loc 3 a5                      ; from the next instruction on: variable 3 is in a5
    .dbg_loc 4 $$3:b2,0x7 {DW_OP_LLVM_arg 0 DW_OP_LLVM_arg 1 DW_OP_or}  ; words ':', args ','
    .dbg_loc 3 none                    ; optimized out from here

Like `.loc`, the directives make no code: a location holds from the instruction after it
to the next `.dbg_loc` of the variable or the end of the file that declared it.  Numbers are
the file's own (two included bodies may both use 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from npkit.base.diagnostics import SourceLocation

from .image import Variable, VarLocation, VarRange, expression_supported

_STRING = r'"((?:[^"\\]|\\.)*)"'
_VAR = re.compile(rf"\s*\.dbg_var\s+(\d+)\s+{_STRING}\s+{_STRING}\s+{_STRING}\s+(\d+)\s+(\d+)"
                  rf"\s+(\d+)\s+(\d+)(?:\s+{_STRING}\s+(\d+)\s+(\d+))?\s*$")
_LOC = re.compile(r"\s*\.dbg_loc\s+(\d+)\s+(none|[^\s{]+)(?:\s+\{([^}]*)\})?\s*$")
_PART = re.compile(r"[ab]\d+|\$\$?\d+|\*l\$index[01]\[\d+\]|0x[0-9a-fA-F]{1,8}")


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


@dataclass(frozen=True)
class Mark:
    """A `.dbg_*` line as read: where it is (the index of the next statement line) and its
    text, for the assembler to place."""

    line_index: int
    file: str
    lineno: int
    text: str


class DebugVarError(ValueError):
    """A malformed directive (the assembler reports it at the line)."""


def _location(text: str, expr_text: str | None) -> VarLocation | None:
    if text == "none":
        return None
    args = tuple(tuple(arg.split(":")) for arg in text.split(","))
    for part in (p for a in args for p in a):
        if not _PART.fullmatch(part):
            raise DebugVarError(f"'{part}' is not a register, local-memory word or constant")
    expr = tuple(int(t) if t.isdigit() else t for t in (expr_text or "").split())
    if not expression_supported(expr):
        raise DebugVarError(f"unsupported location expression {{{expr_text}}}")
    return VarLocation(args, expr)


def collect(marks: list[Mark], pc_of_line: list[int], file_end: dict[str, int],
            error) -> tuple[list[Variable], list[VarRange]]:
    """The image's variables and ranges.  `pc_of_line[i]`: the address of the first
    instruction read at or after statement line i (the image's size past the last);
    `file_end[f]`: the address after the last instruction read from file f;
    `error(mark, message)` reports a bad directive."""
    variables: list[Variable] = []
    numbers: dict[tuple[str, int], int] = {}
    open_at: dict[int, tuple[int, VarLocation | None]] = {}   # var -> (first pc, location)
    ranges: list[VarRange] = []
    words = pc_of_line[-1]

    def close(var: int, pc: int) -> None:
        if var in open_at:
            first, loc = open_at.pop(var)
            if pc > first:
                ranges.append(VarRange(var, first, pc, loc))

    for mark in marks:
        pc = pc_of_line[min(mark.line_index, len(pc_of_line) - 1)]
        if m := _VAR.match(mark.text):
            inlined = None if m.group(9) is None else \
                SourceLocation(_unquote(m.group(9)), int(m.group(10)), int(m.group(11)))
            numbers[(mark.file, int(m.group(1)))] = len(variables)
            variables.append(Variable(
                _unquote(m.group(2)), _unquote(m.group(3)),
                SourceLocation(_unquote(m.group(4)), int(m.group(5)), int(m.group(6))),
                int(m.group(7)), inlined, int(m.group(8))))
        elif m := _LOC.match(mark.text):
            var = numbers.get((mark.file, int(m.group(1))))
            if var is None:
                error(mark, f"variable {m.group(1)} has no .dbg_var before it")
                continue
            try:
                loc = _location(m.group(2), m.group(3))
            except DebugVarError as e:
                error(mark, str(e))
                continue
            close(var, pc)
            open_at[var] = (pc, loc)
        else:
            error(mark, "malformed debug directive")
    for (file, _), var in numbers.items():
        close(var, file_end.get(file, words))
    ranges.sort(key=lambda r: (r.first, r.var))
    return variables, ranges
