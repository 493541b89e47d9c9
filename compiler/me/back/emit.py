"""Emission: the body fragment text, with a `.loc` line whenever the MBL location changes."""

from __future__ import annotations

from ..wir import Loc
from .mir import MFunction, MInstr, VReg


def _loc_line(loc: Loc | None) -> str:
    if loc is None:
        return ".loc none"
    name = loc.file.replace("\\", "\\\\").replace('"', '\\"')
    return f'.loc "{name}" {loc.line} {loc.column}'


def _render(ins: MInstr, names: dict[VReg, str]) -> list[str]:
    text = ins.render(names).splitlines()
    if ins.defer:
        text[0] += f", defer[{ins.defer}]"
    return text


def emit(fn: MFunction, names: dict[VReg, str]) -> tuple[str, int]:
    """The .uc text and the number of instructions in it."""
    out = [f"; body of {fn.name} (npkit ME back end; window {fn.window_bytes} bytes)"]
    current: Loc | None = None
    count = 0
    for b in fn.blocks:
        label = b.label if b.label.endswith("#") else b.label + "#"
        out.append(f"{label}:" + (f"    ; {b.wir_label}" if b.wir_label else ""))
        for ins in b.instrs:
            if ins.loc != current:
                out.append(_loc_line(ins.loc))
                current = ins.loc
            for line in _render(ins, names):
                if line.endswith(":"):
                    out.append(line)
                else:
                    out.append("    " + line)
                    count += 1
    if current is not None:
        out.append(".loc none")
    return "\n".join(out) + "\n", count
