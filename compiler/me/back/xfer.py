"""Read transfer registers as operands: `alu[v, --, B, $k]` goes and v's readers read `$k`
(the hand-written code's `br_bclr[$5, ...]`, `alu_shf[.., $5, <<2]`).

Machine IR before register allocation.  The copy goes when v is set by it alone, and every
reader of v

- is one ALU-class instruction or byte/bit branch that reads v as a source (not a macro,
  not a unit command, not a merging destination) and names no other transfer register or
  local-memory word as a source (one such operand per instruction, whatever the banks);
- can only be reached from the copy through code that issues no command naming a `$`
  register (which could refill `$k`): v is defined once, so every path from the copy to a
  reader lies in the copy's block after it and in blocks where v is live on entry; none of
  those may issue such a command, and the copy's block must not have v live on entry (a
  loop around it).
"""

from __future__ import annotations

import re

from .liveness import liveness
from .mir import MBlock, MFunction, MInstr, VReg, remove_keeping_debug
from .varlocs import substitute

XFER_IN = re.compile(r"\$\d+$")
NAMES_XFER_IN = re.compile(r"(?<![$\w])\$\d")
READERS = ("alu[", "alu_shf[", "dbl_shf[", "ld_field_w_clr[", "ld_field[", "br_bset[",
           "br_bclr[", "br=byte[", "br!=byte[")


def read_transfer_operands(fn: MFunction) -> int:
    """Replace copies out of `$k` by `$k` in their readers; how many copies went."""
    copies: dict[VReg, tuple[MBlock, MInstr]] = {}
    defs: dict[VReg, int] = {}
    readers: dict[VReg, list[MInstr]] = {}
    for b in fn.blocks:
        for ins in b.instrs:
            for v in ins.vdefs():
                defs[v] = defs.get(v, 0) + 1
                if _is_xfer_copy(ins):
                    copies[v] = (b, ins)
            for v in set(ins.vuses()):
                readers.setdefault(v, []).append(ins)
    live_in = liveness(fn).live_in
    removed = 0
    for v, (home, copy) in copies.items():
        users = readers.get(v, [])
        if defs[v] != 1 or not users or v in live_in[home.label] or \
                not all(_can_read(u, v) for u in users) or \
                not _quiet(home.instrs[home.instrs.index(copy) + 1:]) or \
                not all(_quiet(b.instrs) for b in fn.blocks if v in live_in[b.label]):
            continue
        xfer = copy.ops[1]
        for u in users:
            u.ops = [xfer if o is v else o for o in u.ops]
        remove_keeping_debug(home.instrs, copy)
        substitute(fn, v, xfer)             # a variable's value is in `$k` too
        removed += 1
    return removed


def _is_xfer_copy(ins: MInstr) -> bool:
    return ins.template == "alu[{0}, --, B, {1}]" and ins.kind == "op" and \
        isinstance(ins.ops[1], str) and XFER_IN.match(ins.ops[1]) is not None and \
        isinstance(ins.ops[0], VReg)


def _can_read(ins: MInstr, v: VReg) -> bool:
    if ins.is_macro or ins.kind not in ("op", "branch") or ins.late_uses or \
            not ins.template.startswith(READERS):
        return False
    if any(ins.ops[i] is v for i in ins.defs):
        return False            # a merging destination (ld_field) or a write of v
    sources = [ins.ops[i] for i in ins.uses]
    if sum(1 for o in sources if o is v) != 1:
        return False
    return not any(isinstance(o, str) and o.startswith(("$", "*l$")) for o in sources)


def _quiet(instrs: list[MInstr]) -> bool:
    """No unit command here names a read transfer register (so none refills `$k`)."""
    return not any(_command(text) and NAMES_XFER_IN.search(text)
                   for text in (ins.render() for ins in instrs))


def _command(text: str) -> bool:
    """A unit command (a macro may hold one too): it signals its completion."""
    return "sig_done" in text or "ctx_swap" in text
