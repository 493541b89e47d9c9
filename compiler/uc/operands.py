"""Operand spelling: parse the text of one operand, render an operand code back to text.

The operand *codes* and classes come from ``sim/isa.py``; this module only knows how the
assembler spells each class (``a3``, ``$$x``, ``*l$index0[2]`` ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from npkit.base.numbers import clip
from npkit.sim import isa

CLASS = {c.name: c for c in isa.OPERAND_CLASSES}
# classes whose index is limited by the context mode (16 per context in 8-context mode)
CTX_LIMITED = ("gpr_a", "gpr_b", "xfer_s", "xfer_d", "nn")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def per_context(ctx_mode: int) -> int:
    """Registers of each GPR bank / transfer kind / NN per context."""
    return 16 if ctx_mode == 8 else 32


@dataclass(frozen=True)
class Opnd:
    """A parsed operand.

    kind: ``code`` (a fixed operand code), ``lm`` (``*l$indexN[k]``: base code + index
    expression in ``text``), ``name`` (a declared register; ``name`` includes its ``$``/``$$``
    prefix), ``label`` (``name#``), ``ident`` (a bare identifier: register name, constant,
    signal, enum...), ``expr`` (a constant expression).
    """

    kind: str
    text: str
    code: int = 0
    name: str = ""


_FIXED = {
    "--": CLASS["none"].first,
    "*l$index0++": CLASS["lm0_inc"].first,
    "*l$index0--": CLASS["lm0_dec"].first,
    "*l$index1++": CLASS["lm1_inc"].first,
    "*l$index1--": CLASS["lm1_dec"].first,
    "*n$index++": CLASS["nn_ring"].first,
}
_INDEXED = (
    (re.compile(r"a(\d+)"), "gpr_a"),
    (re.compile(r"b(\d+)"), "gpr_b"),
    (re.compile(r"\$\$(\d+)"), "xfer_d"),
    (re.compile(r"\$(\d+)"), "xfer_s"),
    (re.compile(r"n\$(\d+)"), "nn"),
)
_LM = re.compile(r"\*l\$index([01])\s*\[(.*)\]")
_XFER_NAME = re.compile(rf"(\$\$?{IDENT})")
_LABEL = re.compile(rf"({IDENT})#")
_IDENT = re.compile(IDENT)


class OperandSyntaxError(ValueError):
    """The text is shaped like a register but names none (e.g. ``a99``)."""


def parse_operand(text: str) -> Opnd:
    """Classify the text of one operand (already stripped)."""
    if text in _FIXED:
        return Opnd("code", text, code=_FIXED[text])
    for pattern, cls_name in _INDEXED:
        m = pattern.fullmatch(text)
        if m:
            cls = CLASS[cls_name]
            digits = m.group(1).lstrip("0") or "0"
            if len(digits) > 3 or int(digits) >= cls.count:  # never convert a huge number
                raise OperandSyntaxError(f"there is no register {clip(text)}: {cls_name} "
                                         f"has indices 0..{cls.count - 1}")
            index = int(digits)
            return Opnd("code", text, code=cls.first + index)
    m = _LM.fullmatch(text)
    if m:
        base = CLASS["lm0" if m.group(1) == "0" else "lm1"].first
        return Opnd("lm", m.group(2).strip(), code=base)
    if _XFER_NAME.fullmatch(text):
        return Opnd("name", text, name=text)
    m = _LABEL.fullmatch(text)
    if m:
        return Opnd("label", text, name=m.group(1))
    if _IDENT.fullmatch(text):
        return Opnd("ident", text, name=text)
    return Opnd("expr", text)


def is_reserved_register_name(name: str) -> bool:
    """True for names that spell a register by number (a3, b12, n$4 ...)."""
    return any(p.fullmatch(name) for p, _ in _INDEXED)


def render_code(code: int) -> str:
    """The canonical spelling of an operand code (numbers, never names)."""
    cls = isa.operand_class(code)
    if cls is None:
        raise ValueError(f"reserved operand code {code:#x}")
    i = code - cls.first
    spell = {
        "gpr_a": f"a{i}", "gpr_b": f"b{i}", "xfer_s": f"${i}", "xfer_d": f"$${i}",
        "nn": f"n${i}", "lm0": f"*l$index0[{i}]", "lm1": f"*l$index1[{i}]", "imm": f"{i}",
    }
    if cls.name in spell:
        return spell[cls.name]
    for text, fixed in _FIXED.items():
        if fixed == code:
            return text
    raise ValueError(f"no spelling for operand code {code:#x}")


def parse_register_spelling(text: str) -> int | None:
    """Operand code of a GPR or transfer register spelled by number, else None."""
    for pattern, cls_name in _INDEXED[:4]:
        m = pattern.fullmatch(text)
        digits = m.group(1).lstrip("0") or "0" if m else ""
        if m and len(digits) <= 3 and int(digits) < CLASS[cls_name].count:
            return CLASS[cls_name].first + int(digits)
    return None


def gpr_bank(code: int) -> str:
    """"A" or "B" for a GPR operand code, "" otherwise."""
    cls = isa.operand_class(code)
    return cls.bank if cls is not None else ""


def limit_problem(code: int, ctx_mode: int) -> str | None:
    """Why the operand code is unusable in this context mode, or None."""
    cls = isa.operand_class(code)
    if cls is None:
        return f"reserved operand code {code:#x}"
    n = per_context(ctx_mode)
    if cls.name in CTX_LIMITED and code - cls.first >= n:
        return (f"register {render_code(code)} does not exist in {ctx_mode}-context mode "
                f"(each context has {n})")
    return None


def check_field_limits(ins: isa.Instruction, fields: dict[str, int], ctx_mode: int) -> str | None:
    """First operand or transfer field of a decoded word that is out of range, else None."""
    for f in isa.FORMATS[ins.format].fields:
        value = fields[f.name]
        if f.kind == "opnd":
            problem = limit_problem(value, ctx_mode)
            if problem:
                return f"field {f.name}: {problem}"
        elif f.kind == "xfer" and value & isa.XFER_NONE and value != isa.XFER_NONE:
            return f"field {f.name}: reserved transfer-register code {value:#x}"
        elif f.kind == "xfer" and not value & isa.XFER_NONE and value >= per_context(ctx_mode):
            return (f"field {f.name}: transfer register {value} does not exist in "
                    f"{ctx_mode}-context mode")
        elif f.kind.startswith("enum:") or f.kind == "csr":
            table = enum_table(ins, f)
            if value not in table.values():
                return f"field {f.name}: reserved code {value} (no {f.kind} has it)"
        elif f.kind == "sigmask" and value & 1:
            return f"field {f.name}: the signal mask names signal 0 (signals are 1..15)"
    return None


def enum_table(ins: isa.Instruction, f: isa.Field) -> dict[str, int]:
    """The name table of an enum or CSR field (memory commands: the unit's own table)."""
    if f.kind == "csr":
        return isa.LOCAL_CSRS
    name = f.kind.split(":", 1)[1]
    return ins.cmds if name == "CMD" else isa.ENUMS[name]
