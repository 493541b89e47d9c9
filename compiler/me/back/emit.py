"""Emission: the body fragment text, with a `.loc` line whenever the MBL location changes
and `.dbg_var` / `.dbg_loc` lines for the MBL variables (varlocs.py; compiler/uc/debugvars.py
reads them back)."""

from __future__ import annotations

from npkit.compiler.uc.image import Variable, VarLocation

from ..wir import Loc
from .mir import MFunction, MInstr, VReg

Views = dict[int, dict[Variable, VarLocation | None]]   # id(instruction) -> variables


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _loc_line(loc: Loc | None) -> str:
    if loc is None:
        return ".loc none"
    return f'.loc {_quote(loc.file)} {loc.line} {loc.column}'


def _var_line(n: int, v: Variable) -> str:
    at = "" if v.inlined_at is None else \
        f" {_quote(v.inlined_at.file)} {v.inlined_at.line} {v.inlined_at.column}"
    return (f".dbg_var {n} {_quote(v.name)} {_quote(v.scope)} {_quote(v.decl.file)} "
            f"{v.decl.line} {v.decl.column} {v.width} {max(v.scope_end, v.decl.line)}{at}")


def _where(loc: VarLocation | None) -> str:
    if loc is None:
        return "none"
    text = ",".join(":".join(a) for a in loc.args)
    return text + (" {" + " ".join(map(str, loc.expr)) + "}" if loc.expr else "")


def _render(ins: MInstr, names: dict[VReg, str]) -> list[str]:
    text = ins.render(names).splitlines()
    if ins.defer:
        text[0] += f", defer[{ins.defer}]"
    return text


def emit(fn: MFunction, names: dict[VReg, str], views: Views | None = None) -> tuple[str, int]:
    """The .uc text and the number of instructions in it."""
    out = [f"; body of {fn.name} (npkit ME back end; window {fn.window_bytes} bytes)"]
    numbers: dict[Variable, int] = {}
    for view in (views or {}).values():
        for var in view:
            if var not in numbers:
                numbers[var] = len(numbers)
                out.append(_var_line(numbers[var], var))
    shown: dict[Variable, VarLocation | None] = {}
    current: Loc | None = None
    count = 0
    for b in fn.blocks:
        label = b.label if b.label.endswith("#") else b.label + "#"
        out.append(f"{label}:" + (f"    ; {b.wir_label}" if b.wir_label else ""))
        for ins in b.instrs:
            if ins.loc != current:
                out.append(_loc_line(ins.loc))
                current = ins.loc
            if views is not None:
                view = views.get(id(ins), {})
                for var, n in numbers.items():
                    where = view.get(var)
                    if where != shown.get(var):
                        out.append(f".dbg_loc {n} {_where(where)}")
                        shown[var] = where
            for line in _render(ins, names):
                if line.endswith(":"):
                    out.append(line)
                else:
                    out.append("    " + line)
                    count += 1
    for var, where in shown.items():
        if where is not None:
            out.append(f".dbg_loc {numbers[var]} none")
    if current is not None:
        out.append(".loc none")
    return "\n".join(out) + "\n", count
