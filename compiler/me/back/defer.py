"""Defer slots: move independent instructions that precede a branch into its shadow.

A block's final branch (the conditional one when the block ends with a conditional and an
unconditional branch) gets up to three instructions from just before it.  An instruction
may move when it is a single ALU-class instruction (no macro, no command, no CSR access),
does not read the condition codes or the previous ALU result, writes nothing the
instructions it jumps over read and reads nothing they write, and does not set the
condition codes that the branch tests.  Defer-slot instructions run whether the branch is
taken or not, so moving them keeps the meaning on both paths.  The search goes on past a
`ctx_arb` (e.g. a return's final wait) and a unit command for instructions that name no
transfer register and nothing the command names: those cannot see whether the commands
are done, and the command reads its operands when it is issued.  A read transfer register
`$k` that an instruction only reads may pass them too when none of the commands passed
names a read transfer register (none can refill `$k`; what was in flight before the
instruction it did not read either).
"""

from __future__ import annotations

import re

from .mir import MBlock, MFunction, MInstr

MAX_DEFER = 3
OPERAND = re.compile(r"\*l\$index\d\[\d+\]|\$*\w+")
READ_XFER = re.compile(r"\$\d+$")
NAMES_READ_XFER = re.compile(r"(?<![$\w])\$\d")


def fill_defer_slots(fn: MFunction, names: dict) -> None:
    for b in fn.blocks:
        _fill_block(b, names)


def _branch_index(b: MBlock) -> int | None:
    i = len(b.instrs) - 1
    if i < 0 or b.instrs[i].kind != "branch" or b.instrs[i].is_macro:
        return None
    if i > 0 and b.instrs[i - 1].kind == "branch":
        i -= 1                      # conditional then `br[else]`: the conditional one
    return i if not b.instrs[i].is_macro else None


def _operands(ins: MInstr, which: tuple[int, ...], names: dict) -> set[str]:
    out = set()
    for i in which:
        o = ins.ops[i]
        out.add(names[o] if not isinstance(o, str) else o)
    return {o for o in out if not o.isdigit() and o != "--"}


def _movable(ins: MInstr) -> bool:
    return (ins.kind == "op" and not ins.is_macro and not ins.reads_cc
            and "local_csr" not in ins.template and "indirect" not in ins.template)


def _fill_block(b: MBlock, names: dict) -> None:
    bi = _branch_index(b)
    if bi is None:
        return
    branch = b.instrs[bi]
    moved: list[MInstr] = []
    skipped: list[MInstr] = []      # instructions left between the candidates and the branch
    reads = _operands(branch, branch.uses, names)
    writes: set[str] = set()
    cc_needed = branch.reads_cc
    i = bi - 1
    past_wait = False
    commands: set[str] = set()      # what the commands skipped over name
    refills = False                 # a command skipped over names a read transfer register
    while i >= 0 and len(moved) < MAX_DEFER:
        ins = b.instrs[i]
        if ins.kind in ("wait", "mem") and not ins.is_macro:
            past_wait = True
            text = ins.render(names)
            commands |= set(OPERAND.findall(text))
            refills = refills or ins.kind == "mem" and NAMES_READ_XFER.search(text) is not None
            skipped.append(ins)
            i -= 1
            continue
        if ins.kind in ("branch", "wait", "mem") or ins.is_macro:
            break
        ins_defs = _operands(ins, ins.defs, names)
        ins_uses = _operands(ins, ins.uses, names)
        independent = not (ins_defs & reads) and not (ins_uses & writes) and \
            not (ins_defs & writes)
        if past_wait and any(o in commands or o.startswith("$") and not (
                o in ins_uses and o not in ins_defs and READ_XFER.match(o) and not refills)
                for o in ins_defs | ins_uses):
            independent = False
        if _movable(ins) and independent and not (cc_needed and ins.sets_cc):
            moved.insert(0, ins)
            del b.instrs[i]
            if ins.dbg:     # a binding stays where it was: before the next instruction
                b.instrs[i].dbg, ins.dbg = ins.dbg + b.instrs[i].dbg, ()
            bi -= 1
        else:
            skipped.append(ins)
            reads |= ins_uses
            writes |= ins_defs
            if ins.sets_cc:
                cc_needed = False   # the branch reads this one's codes, earlier ones are free
            if ins.reads_cc:
                break
        i -= 1
    if moved:
        branch.defer = len(moved)
        b.instrs[bi + 1:bi + 1] = moved
