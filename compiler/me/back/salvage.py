"""Variable bindings after instruction selection (debug info, varlocs.py): each WIR register
a binding names becomes the VReg isel defined for it, or the fixed operand it reads in
place.  A register isel never computed (a byte tested in place, a shift only compared, a
mask folded into an address) is rebuilt, like LLVM's salvageDebugInfo, from the register
it was computed from by `lshr` / `and` with a constant: a DWARF expression over that one,
when it is in a register or a fixed place.  Otherwise the variable is optimized out there.
"""

from __future__ import annotations

from npkit.compiler.uc.image import substitute_arg

from .. import wir
from .mir import MBind, MBlock, VReg

_OPS = {"lshr": "DW_OP_shr", "and": "DW_OP_and"}
MAX_DEPTH = 4

Base = tuple[VReg | str | int, tuple[str | int, ...]]


def resolve_binds(fn: wir.Function, vregs: dict[int, VReg], fixed: dict[int, str],
                  blocks: list[MBlock]) -> None:
    """Rewrite the bindings of the selected blocks in place."""
    defs: dict[int, list[wir.Instr]] = {}
    for b in fn.blocks:
        for i in b.instrs:
            for d in i.defs():
                defs.setdefault(d.id, []).append(i)
    computed = {v for b in blocks for i in b.instrs for v in i.vdefs()}

    def base(o: wir.Operand, depth: int) -> Base | None:
        if isinstance(o, int):
            return o, ()
        if o.id in fixed:
            return fixed[o.id], ()
        if o.id in vregs and vregs[o.id] in computed:
            return vregs[o.id], ()
        made = defs.get(o.id, [])
        if depth >= MAX_DEPTH or len(made) != 1:
            return None
        i = made[0]
        if isinstance(i, wir.Copy):
            return base(i.src, depth + 1)
        if isinstance(i, wir.Bin) and i.op in _OPS and isinstance(i.b, int) and \
                isinstance(i.a, wir.Reg):
            found = base(i.a, depth + 1)
            if found is not None:
                return found[0], (*found[1], "DW_OP_constu", i.b, _OPS[i.op])
        return None

    def resolve(b: MBind) -> MBind:
        if b.args is None:
            return b
        args, expr = [], b.expr
        for k, arg in enumerate(b.args):
            words = []
            for o in arg:
                if isinstance(o, wir.Reg):
                    found = base(o, 0)
                    if found is None or found[1] and len(arg) != 1:
                        return MBind(b.var, None)    # (a word of a wide value: not rebuilt)
                    o, ops = found
                    if ops:
                        expr = substitute_arg(expr, k, ops) if expr else \
                            ("DW_OP_LLVM_arg", 0, *ops, "DW_OP_stack_value")
                words.append(o)
            args.append(tuple(words))
        return MBind(b.var, tuple(args), expr)

    for block in blocks:
        for ins in block.instrs:
            if ins.dbg:
                ins.dbg = tuple(resolve(b) for b in ins.dbg)
