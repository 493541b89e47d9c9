"""Peepholes after register allocation.

A test of a register against zero (`alu[--, --, B, r]` before `beq`/`bne`/`bmi`/`bpl`)
goes when the instruction just before it is an ALU instruction that wrote r: every
`alu`/`alu_shf` sets Z and N from the value it writes (the chip's rule, docs/isa.md), and
those branches read only Z or N.  E.g. a word copied out of a transfer register and
tested for its sign bit (the trie walk).
"""

from __future__ import annotations

import re

from .mir import MFunction, MInstr, VReg, drop_keeping_debug

ZERO_SIGN_BRANCHES = ("beq[", "bne[", "bmi[", "bpl[")
GPR = re.compile(r"[ab]\d+$")


def drop_redundant_tests(fn: MFunction, names: dict[VReg, str]) -> int:
    """Remove zero/sign tests whose flags the previous instruction set; how many."""
    removed = 0
    for b in fn.blocks:
        keep: list[MInstr] = []
        dropped: set[int] = set()
        for k, ins in enumerate(b.instrs):
            following = b.instrs[k + 1] if k + 1 < len(b.instrs) else None
            if keep and _is_test(ins) and following is not None and \
                    following.template.startswith(ZERO_SIGN_BRANCHES) and \
                    _writes(keep[-1], _name(ins.ops[2], names), names):
                keep[-1].sets_cc = True     # the branch reads its flags: keep it before
                removed += 1
                dropped.add(id(ins))
                continue
            keep.append(ins)
        if dropped:
            b.instrs = drop_keeping_debug(b.instrs, lambda i, dropped=dropped: id(i) in dropped)
    return removed


def _name(o: object, names: dict[VReg, str]) -> str:
    return names.get(o, "") if isinstance(o, VReg) else str(o)


def _is_test(ins: MInstr) -> bool:
    return ins.template == "alu[{0}, {1}, B, {2}]" and ins.ops[0] == "--" and \
        ins.ops[1] == "--"


def _writes(prev: MInstr, reg: str, names: dict[VReg, str]) -> bool:
    """prev is one alu/alu_shf instruction whose destination is the GPR `reg`."""
    return (not prev.is_macro and prev.kind == "op" and prev.defs == (0,)
            and prev.template.startswith(("alu[", "alu_shf["))
            and GPR.match(reg) is not None and _name(prev.ops[0], names) == reg)
