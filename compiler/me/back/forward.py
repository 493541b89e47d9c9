"""Destination forwarding: a value computed only to be copied into a transfer register or a
metadata word is computed there directly (`alu[v, x, +, y]` + `alu[$$5, --, B, v]` ->
`alu[$$5, x, +, y]`; a word read from SRAM goes from `$0` straight to `$$0`).

Machine IR before register allocation.  The copy `alu[X, --, B, v]` (X a fixed operand)
goes when v is set by one single ALU instruction, read by nothing but the copy, and nothing
between them reads or writes X, issues a command or waits (which could send or fill X).
Usually both are in one block; a transfer register may also be written one block early,
when the copy's block is entered only from the producer's: on the producer's other paths X
then holds a value nobody sends (every command that sends transfer registers sets all of
them first: the header write-back, memory writes), which a metadata word cannot allow.
"""

from __future__ import annotations

from .mir import MBlock, MFunction, MInstr, VReg, remove_keeping_debug
from .varlocs import substitute

PRODUCERS = ("alu[", "alu_shf[", "dbl_shf[", "ld_field_w_clr[")


def forward_copy_destinations(fn: MFunction) -> int:
    """Fold copies into the instructions that compute their values; how many went."""
    defs: dict[VReg, list[tuple[MBlock, MInstr]]] = {}
    uses: dict[VReg, int] = {}
    for b in fn.blocks:
        for ins in b.instrs:
            for v in ins.vdefs():
                defs.setdefault(v, []).append((b, ins))
            for v in ins.vuses():
                uses[v] = uses.get(v, 0) + 1
    preds: dict[str, list[str]] = {b.label: [] for b in fn.blocks}
    for b in fn.blocks:
        for s in b.succs:
            if s in preds:
                preds[s].append(b.label)
    removed = 0
    for b in fn.blocks:
        for copy in list(b.instrs):
            target = _copy_of_register(copy)
            if target is None:
                continue
            dest, v = target
            if uses.get(v) != 1 or len(defs.get(v, [])) != 1:
                continue
            home, producer = defs[v][0]
            if not _can_produce(producer, dest) or not _clear_path(home, producer, b, copy,
                                                                   dest, preds):
                continue
            producer.ops[0] = dest
            remove_keeping_debug(b.instrs, copy)
            if dest.startswith("*l$"):      # a metadata word: the variable can be read there
                substitute(fn, v, dest)
            removed += 1
    return removed


def _copy_of_register(ins: MInstr) -> tuple[str, VReg] | None:
    """(X, v) for `alu[X, --, B, v]` with X a transfer register or metadata word."""
    if ins.template != "alu[{0}, --, B, {1}]" or ins.kind != "op":
        return None
    dest, src = ins.ops
    if isinstance(dest, str) and isinstance(src, VReg) and (
            dest.startswith("$") or dest.startswith("*l$index1[")):
        return dest, src
    return None


def _can_produce(ins: MInstr, dest: str) -> bool:
    """A single ALU instruction that writes operand 0 without reading it."""
    if ins.kind != "op" or ins.is_macro or ins.defs != (0,) or 0 in ins.uses or \
            ins.late_uses or not ins.template.startswith(PRODUCERS):
        return False
    sources = [o for o in ins.ops[1:] if isinstance(o, str)]
    if dest.startswith("*l$") and any(o.startswith("*l$") for o in sources):
        return False                    # one local-memory access per instruction
    return "local_csr" not in ins.template


def _quiet(instrs: list[MInstr], dest: str) -> bool:
    """Nothing here sends, fills, reads or writes `dest` (a transfer register named as a
    source is the *in* register: only a write of the same name counts)."""
    for ins in instrs:
        if ins.kind in ("mem", "wait") or ins.is_macro:
            return False
        named = ins.defs if dest.startswith("$") else range(len(ins.ops))
        if any(ins.ops[i] == dest for i in named):
            return False
    return True


def _clear_path(home: MBlock, producer: MInstr, b: MBlock, copy: MInstr, dest: str,
                preds: dict[str, list[str]]) -> bool:
    at = b.instrs.index(copy)
    if home is b:
        start = b.instrs.index(producer)
        return start < at and _quiet(b.instrs[start + 1:at], dest)
    if not dest.startswith("$") or preds[b.label] != [home.label]:
        return False
    after = home.instrs[home.instrs.index(producer) + 1:]
    return _quiet(after, dest) and _quiet(b.instrs[:at], dest)
