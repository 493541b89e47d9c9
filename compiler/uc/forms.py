"""Instruction syntax per ISA format: operands -> fields (assemble) and back (render).

Field names, widths and enum tables come from ``sim/isa.py``; this module holds only the
*syntax*: which bracketed operand lands in which field.  Each format has one ``asm_*`` and
one ``dis_*`` function.  Options that several formats share (``defer[n]``,
``ctx_swap[s]``/``sig_done[s]``) are handled by the caller from the field list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from npkit.sim import isa

from .source import Arg, LineError, Option

# Formats where the mnemonic picks a 1-bit flag: flag = index of the mnemonic in the table row.
MNEMONIC_FLAG: dict[str, str] = {
    "ld_field": "clr", "byte_align": "le", "br_ctx": "ne", "br_bit": "clr", "br_byte": "ne",
    "br_signal": "not", "br_inp_state": "not", "jump": "rtn", "local_csr": "write", "crc": "le",
}
# Transfer registers per key of the hash unit (sim/isa.py: "2, 2 or 4 words each").
HASH_KEY_WORDS = {"hash_48": 2, "hash_64": 2, "hash_128": 4}
# Commands that move 1..16 words; the units' other commands (atomics, queue operations)
# work on one longword (docs/architecture.md) and take a count of 1.
MULTIWORD_CMDS = {"sram": ("read", "write"), "scratch": ("read", "write", "get", "put")}
# Commands that move no data through transfer registers (written with -- as xfer); all
# other commands of a unit read or write transfer registers and must name them.
NO_DATA_CMDS = {"sram": ("incr", "decr"), "scratch": ("incr", "decr"),
                "dram": ("rbuf_rd", "tbuf_wr"), "msf": ("fast_wr",)}
MASK32 = 0xFFFF_FFFF


class RenderError(ValueError):
    """The word has no source spelling (the disassembler then emits ``.word``)."""


class Resolver(Protocol):
    """What an ``asm_*`` function needs from the assembler."""

    def src(self, arg: Arg, field: str) -> int: ...
    def dst(self, arg: Arg, field: str) -> int: ...
    def const(self, arg: Arg, lo: int, hi: int, what: str, hint: str = "") -> int: ...
    def target(self, arg: Arg) -> int: ...
    def signal(self, arg: Arg) -> int: ...
    def xfer(self, arg: Arg, prefix: str, nregs: int) -> int: ...
    def enum(self, arg: Arg, table: dict[str, int], what: str) -> int: ...
    def shift(self, arg: Arg, allowed: tuple[str, ...]) -> tuple[str, int]: ...
    def ctx_mode(self) -> int: ...


class Renderer(Protocol):
    """What a ``dis_*`` function needs from the disassembler."""

    def opnd(self, code: int) -> str: ...
    def target(self, addr: int) -> str: ...
    def signal(self, number: int) -> str: ...
    def xfer(self, index: int, prefix: str) -> str: ...


class Operands:
    """The operands and options of one instruction statement."""

    def __init__(self, mnemonic: str, syntax: str, args: list[Arg], options: list[Option],
                 col: int) -> None:
        self.mnemonic = mnemonic
        self.syntax = syntax
        self.all_args = args
        self.options = list(options)
        self.col = col

    def args(self, lo: int, hi: int | None = None) -> list[Arg]:
        hi = lo if hi is None else hi
        n = len(self.all_args)
        if not lo <= n <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            col = self.all_args[hi].col if n > hi else self.col
            raise LineError(f"{self.mnemonic} takes {want} operands, got {n}", col,
                            f"syntax: {self.syntax}")
        return self.all_args

    def take(self, *names: str) -> Option | None:
        """Remove and return the first option with one of the names."""
        for opt in self.options:
            if opt.name in names:
                self.options.remove(opt)
                return opt
        return None

    def option_arg(self, opt: Option) -> Arg:
        if opt.args is None or len(opt.args) != 1:
            raise LineError(f"{opt.name} takes one operand", opt.col, f"e.g. {opt.name}[1]")
        return opt.args[0]


def mnemonic_fields(ins: isa.Instruction, mnemonic: str) -> dict[str, int]:
    """Fields fixed by the mnemonic alone (enum variants and flags)."""
    out: dict[str, int] = {}
    for f in isa.FORMATS[ins.format].fields:
        if f.kind.startswith("enum:") and f.kind != "enum:CMD":
            table = isa.ENUMS[f.kind.split(":", 1)[1]]
            if mnemonic in table:
                out[f.name] = table[mnemonic]
    flag = MNEMONIC_FLAG.get(ins.format)
    if flag:
        out[flag] = ins.mnemonics.index(mnemonic)
    return out


def mnemonic_of(ins: isa.Instruction, fields: dict[str, int]) -> str:
    """The mnemonic that selects these fields (inverse of ``mnemonic_fields``)."""
    for m in ins.mnemonics:
        fixed = mnemonic_fields(ins, m)
        if fixed and all(fields.get(k) == v for k, v in fixed.items()):
            return m
    if len(ins.mnemonics) == 1 or ins.format == "alu":
        return ins.mnemonics[0]
    raise RenderError(f"{ins.name}: no mnemonic for fields {fields}")


def _name_of(table: dict[str, int], value: int, what: str) -> str:
    for name, v in table.items():
        if v == value:
            return name
    raise RenderError(f"no {what} has code {value}")


# --------------------------------------------------------------------------- ALU group
def asm_alu(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    if o.mnemonic == "alu":
        d, a, op, b = o.args(4)
        kind, amount = "<<", 0
    else:
        d, a, op, b, sh = o.args(5)
        kind, amount = r.shift(sh, tuple(isa.SHIFT_TYPES))
    return {"op": r.enum(op, isa.ALU_OPS, "ALU operation"), "dest": r.dst(d, "dest"),
            "a": r.src(a, "a"), "b": r.src(b, "b"), "shift": isa.SHIFT_TYPES[kind],
            "shamt": amount}


def _shift_text(kind: int, amount: int) -> str:
    return f"{_name_of(isa.SHIFT_TYPES, kind, 'shift')}{amount}"


def dis_alu(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    ops = [r.opnd(f["dest"]), r.opnd(f["a"]), _name_of(isa.ALU_OPS, f["op"], "ALU op"),
           r.opnd(f["b"])]
    if f["shift"] == 0 and f["shamt"] == 0:
        return f"alu[{', '.join(ops)}]"
    return f"alu_shf[{', '.join(ops)}, {_shift_text(f['shift'], f['shamt'])}]"


def asm_dbl_shf(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    d, a, b, sh = o.args(4)
    fields = {"dest": r.dst(d, "dest"), "a": r.src(a, "a"), "b": r.src(b, "b")}
    if sh.text.replace(" ", "") == ">>indirect":
        return {**fields, "shamt": 0, "indirect": 1}
    _, amount = r.shift(sh, (">>",))
    return {**fields, "shamt": amount, "indirect": 0}


def dis_dbl_shf(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    shift = ">>indirect" if f["indirect"] else f">>{f['shamt']}"
    return f"dbl_shf[{r.opnd(f['dest'])}, {r.opnd(f['a'])}, {r.opnd(f['b'])}, {shift}]"


def immed_encoding(value: int) -> tuple[int, int, int] | None:
    """(value16, byte shift, invert) loading the 32-bit ``value`` in one immed, or None.

    Semantics: result = value16 << (8 * shift), complemented when invert is set.  The search
    order (plain before inverted, smallest shift first) makes the encoding canonical.
    """
    value &= MASK32
    for invert, v in ((0, value), (1, ~value & MASK32)):
        for shift in range(4):
            low = (1 << (8 * shift)) - 1
            if v & low == 0 and v >> (8 * shift) <= 0xFFFF:
                return v >> (8 * shift), shift, invert
    return None


def immed_result(value16: int, shift: int, invert: int) -> int:
    result = (value16 << (8 * shift)) & MASK32
    return ~result & MASK32 if invert else result


def asm_immed(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    m = o.mnemonic
    if m == "immed":
        args = o.args(2, 3)
        dest = r.dst(args[0], "dest")
        if len(args) == 3:
            kind, amount = r.shift(args[2], ("<<",))
            if amount % 8:
                raise LineError(f"immed shifts by 0, 8, 16 or 24, not {amount}", args[2].col,
                               "e.g. immed[reg, 0x12, <<8]")
            v16 = r.const(args[1], 0, 0xFFFF, "immed value with an explicit shift")
            return {"dest": dest, "value": v16, "shift": amount // 8, "invert": 0}
        value = r.const(args[1], -(1 << 31), MASK32, "immed value")
        enc = immed_encoding(value)
        if enc is None:
            raise LineError(f"{value & MASK32:#x} cannot be loaded by one immed", args[1].col,
                            "use immed32[reg, value] (two instructions) or immed_w0/immed_w1")
        return {"dest": dest, "value": enc[0], "shift": enc[1], "invert": enc[2]}
    d, v = o.args(2)
    if m == "load_addr":
        return {"dest": r.dst(d, "dest"), "value": r.target(v)}
    hi = 0xFFFF if m in ("immed_w0", "immed_w1") else 0xFF
    return {"dest": r.dst(d, "dest"), "value": r.const(v, 0, hi, f"{m} value")}


def dis_immed(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    m = mnemonic_of(ins, f)
    dest = r.opnd(f["dest"])
    if m == "immed":
        result = immed_result(f["value"], f["shift"], f["invert"])
        if immed_encoding(result) == (f["value"], f["shift"], f["invert"]):
            return f"immed[{dest}, {result:#x}]"
        if f["invert"]:
            raise RenderError("non-canonical inverted immed")
        return f"immed[{dest}, {f['value']:#x}, <<{8 * f['shift']}]"
    if f["shift"] or f["invert"]:
        raise RenderError(f"{m} with shift/invert bits")
    if m == "load_addr":
        return f"load_addr[{dest}, {r.target(f['value'])}]"
    return f"{m}[{dest}, {f['value']:#x}]"


def _ld_field_mask(arg: Arg, r: Resolver) -> int:
    # IXP style: a bare literal of 0s and 1s (e.g. 0110) is a binary byte mask
    if arg.text and set(arg.text) <= {"0", "1"} and len(arg.text) <= 4:
        return int(arg.text, 2)
    return r.const(arg, 0, 15, "byte mask")


def asm_ld_field(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    args = o.args(3, 4)
    kind, amount = r.shift(args[3], tuple(isa.SHIFT_TYPES)) if len(args) == 4 else ("<<", 0)
    return {"dest": r.dst(args[0], "dest"), "mask": _ld_field_mask(args[1], r),
            "src": r.src(args[2], "src"), "shift": isa.SHIFT_TYPES[kind], "shamt": amount,
            "load_cc": 1 if o.take("load_cc") else 0}


def dis_ld_field(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    text = (f"{mnemonic_of(ins, f)}[{r.opnd(f['dest'])}, 0b{f['mask']:04b}, "
            f"{r.opnd(f['src'])}")
    if f["shift"] or f["shamt"]:
        text += f", {_shift_text(f['shift'], f['shamt'])}"
    return text + ("], load_cc" if f["load_cc"] else "]")


def asm_three(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    d, a, b = o.args(3)
    return {"dest": r.dst(d, "dest"), "a": r.src(a, "a"), "b": r.src(b, "b")}


def dis_byte_align(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return (f"{mnemonic_of(ins, f)}[{r.opnd(f['dest'])}, {r.opnd(f['a'])}, "
            f"{r.opnd(f['b'])}]")


def asm_bitop(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    d, s = o.args(2)
    return {"dest": r.dst(d, "dest"), "src": r.src(s, "src")}


def dis_bitop(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return f"{mnemonic_of(ins, f)}[{r.opnd(f['dest'])}, {r.opnd(f['src'])}]"


def _is_last_step(step: str) -> bool:
    return step.endswith(("_last", "_last2"))


def asm_mul_step(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    step = next((opt for opt in o.options if opt.name in isa.MUL_STEPS), None)
    if step is None:
        raise LineError("mul_step needs a step option", o.col,
                        f"e.g. mul_step[a, b], 32x32_start; steps: {', '.join(isa.MUL_STEPS)}")
    o.options.remove(step)
    args = o.args(2, 3)
    none = isa.OPERAND_NONE
    if len(args) == 3:
        fields = {"dest": r.dst(args[0], "dest"), "a": r.src(args[1], "a"),
                  "b": r.src(args[2], "b")}
    elif _is_last_step(step.name):  # mul_step[dest, --], 32x32_last
        if args[1].text != "--":
            raise LineError(f"{step.name} writes the product", args[1].col,
                            f"write mul_step[dest, --], {step.name}")
        fields = {"dest": r.dst(args[0], "dest"), "a": none, "b": none}
    else:
        fields = {"dest": none, "a": r.src(args[0], "a"), "b": r.src(args[1], "b")}
    return {**fields, "step": isa.MUL_STEPS[step.name]}


def dis_mul_step(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    step = _name_of(isa.MUL_STEPS, f["step"], "mul_step step")
    none = isa.OPERAND_NONE
    if _is_last_step(step) and f["a"] == none and f["b"] == none:
        return f"mul_step[{r.opnd(f['dest'])}, --], {step}"
    if not _is_last_step(step) and f["dest"] == none:
        return f"mul_step[{r.opnd(f['a'])}, {r.opnd(f['b'])}], {step}"
    return f"mul_step[{r.opnd(f['dest'])}, {r.opnd(f['a'])}, {r.opnd(f['b'])}], {step}"


# --------------------------------------------------------------------------- branches
def asm_br(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    (t,) = o.args(1)
    return {"target": r.target(t)}


def dis_br(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return f"{mnemonic_of(ins, f)}[{r.target(f['target'])}]"


def asm_br_ctx(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    c, t = o.args(2)
    return {"ctx": r.const(c, 0, 7, "context number"), "target": r.target(t)}


def dis_br_ctx(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return f"{mnemonic_of(ins, f)}[{f['ctx']}, {r.target(f['target'])}]"


def asm_br_bit(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    reg, bit, t = o.args(3)
    return {"reg": r.src(reg, "reg"), "bit": r.const(bit, 0, 31, "bit number"),
            "target": r.target(t)}


def dis_br_bit(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return f"{mnemonic_of(ins, f)}[{r.opnd(f['reg'])}, {f['bit']}, {r.target(f['target'])}]"


def asm_br_byte(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    reg, byte, value, t = o.args(4)
    return {"reg": r.src(reg, "reg"), "byte": r.const(byte, 0, 3, "byte number"),
            "value": r.const(value, 0, 255, "byte value"), "target": r.target(t)}


def dis_br_byte(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return (f"{mnemonic_of(ins, f)}[{r.opnd(f['reg'])}, {f['byte']}, {f['value']:#x}, "
            f"{r.target(f['target'])}]")


def asm_br_signal(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    s, t = o.args(2)
    return {"sig": r.signal(s), "target": r.target(t)}


def dis_br_signal(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return f"{mnemonic_of(ins, f)}[{r.signal(f['sig'])}, {r.target(f['target'])}]"


def asm_br_inp_state(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    s, t = o.args(2)
    return {"state": r.enum(s, isa.INP_STATES, "input state"), "target": r.target(t)}


def dis_br_inp_state(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    state = _name_of(isa.INP_STATES, f["state"], "input state")
    return f"{mnemonic_of(ins, f)}[{state}, {r.target(f['target'])}]"


def asm_jump(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    if o.mnemonic == "rtn":
        (reg,) = o.args(1)
        return {"reg": r.src(reg, "reg"), "target": 0}
    reg, t = o.args(2)
    return {"reg": r.src(reg, "reg"), "target": r.target(t)}


def dis_jump(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    if mnemonic_of(ins, f) == "rtn":
        if f["target"]:
            raise RenderError("rtn with a target")
        return f"rtn[{r.opnd(f['reg'])}]"
    return f"jump[{r.opnd(f['reg'])}, {r.target(f['target'])}]"


def asm_ctx_arb(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    args = o.args(1, 15)
    if len(args) == 1 and args[0].text in ("voluntary", "kill"):
        return {"mode": isa.CTX_ARB_MODES[args[0].text], "sigs": 0}
    mask = 0
    for arg in args:
        mask |= 1 << r.signal(arg)
    mode = o.take("any", "all")
    return {"mode": isa.CTX_ARB_MODES[mode.name if mode else "all"], "sigs": mask}


def dis_ctx_arb(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    mode = _name_of(isa.CTX_ARB_MODES, f["mode"], "ctx_arb mode")
    if mode in ("voluntary", "kill"):
        if f["sigs"]:
            raise RenderError("ctx_arb mode with signals")
        return f"ctx_arb[{mode}]"
    sigs = [n for n in range(16) if f["sigs"] >> n & 1]
    if not sigs or 0 in sigs:
        raise RenderError("ctx_arb without valid signals")
    text = f"ctx_arb[{', '.join(r.signal(n) for n in sigs)}]"
    return text + (", any" if mode == "any" else "")


def asm_local_csr(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    if o.mnemonic == "local_csr_rd":
        (csr,) = o.args(1)
        return {"csr": r.enum(csr, isa.LOCAL_CSRS, "local CSR"), "src": isa.OPERAND_NONE}
    csr, src = o.args(2)
    return {"csr": r.enum(csr, isa.LOCAL_CSRS, "local CSR"), "src": r.src(src, "src")}


def _csr_name(number: int) -> str:
    try:
        return _name_of(isa.LOCAL_CSRS, number, "CSR")
    except RenderError:
        return str(number)


def dis_local_csr(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    if mnemonic_of(ins, f) == "local_csr_rd":
        if f["src"] != isa.OPERAND_NONE:
            raise RenderError("local_csr_rd with a source")
        return f"local_csr_rd[{_csr_name(f['csr'])}]"
    return f"local_csr_wr[{_csr_name(f['csr'])}, {r.opnd(f['src'])}]"


# CAM: which bracketed operand goes to which field, per mnemonic ("state" is a constant)
CAM_SYNTAX: dict[str, tuple[str, ...]] = {
    "cam_lookup": ("dest", "src"), "cam_write": ("dest_in", "src", "state"), "cam_clear": (),
    "cam_read_tag": ("dest", "src"), "cam_read_state": ("dest", "src"),
    "cam_write_state": ("dest_in", "state"),
}


def asm_cam(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    roles = CAM_SYNTAX[o.mnemonic]
    args = o.args(len(roles))
    fields = {"dest": isa.OPERAND_NONE, "src": isa.OPERAND_NONE, "state": 0}
    for role, arg in zip(roles, args, strict=True):
        if role == "dest":
            fields["dest"] = r.dst(arg, "dest")
        elif role == "dest_in":  # cam_write's entry number is read from the dest field
            fields["dest"] = r.src(arg, "dest")
        elif role == "src":
            fields["src"] = r.src(arg, "src")
        else:
            fields["state"] = r.const(arg, 0, 15, "CAM state")
    return fields


def dis_cam(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    m = mnemonic_of(ins, f)
    roles = CAM_SYNTAX[m]
    used = {"dest" if role == "dest_in" else role for role in roles}
    if "dest" not in used and f["dest"] != isa.OPERAND_NONE or \
            "src" not in used and f["src"] != isa.OPERAND_NONE or \
            "state" not in used and f["state"]:
        raise RenderError("cam with unused fields set")
    ops = [str(f["state"]) if role == "state" else r.opnd(f["dest" if role != "src" else "src"])
           for role in roles]
    return f"{m}[{', '.join(ops)}]" if ops else m


def asm_crc(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    kind, d, s = o.args(3)
    return {"kind": r.enum(kind, isa.CRC_KINDS, "CRC kind"), "dest": r.dst(d, "dest"),
            "src": r.src(s, "src")}


def dis_crc(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    kind = _name_of(isa.CRC_KINDS, f["kind"], "CRC kind")
    return f"{mnemonic_of(ins, f)}[{kind}, {r.opnd(f['dest'])}, {r.opnd(f['src'])}]"


# --------------------------------------------------------------------------- units
def asm_hash(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    x, n = o.args(2)
    count = r.const(n, 1, 3, "number of hash keys")
    return {"xfer": r.xfer(x, "$", count * HASH_KEY_WORDS[o.mnemonic]), "count": count - 1}


def dis_hash(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    if f["xfer"] & isa.XFER_NONE or f["count"] == 3:
        raise RenderError("hash without transfer registers")
    return f"{mnemonic_of(ins, f)}[{r.xfer(f['xfer'], '$')}, {f['count'] + 1}]"


def xfer_prefix(ins: isa.Instruction) -> str:
    """DRAM commands use $$ (DRAM transfer registers); the other units use $."""
    return "$$" if ins.name == "dram" else "$"


def asm_mem(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    args = o.args(4, 5)
    cmd = r.enum(args[0], ins.cmds, f"{ins.name} command")
    count = r.const(args[4], 1, 16, f"{ins.name} count") if len(args) == 5 else 1
    if ins.name in MULTIWORD_CMDS and count != 1 and args[0].text not in MULTIWORD_CMDS[ins.name]:
        raise LineError(f"{ins.name} {args[0].text} takes a count of 1, not {count}", args[4].col,
                        "atomic and queue commands work on one longword")
    nregs = count * (2 if ins.name == "dram" else 1)  # DRAM counts quadwords
    prefix = xfer_prefix(ins)
    if args[1].text == "--" and args[0].text not in NO_DATA_CMDS.get(ins.name, ()):
        raise LineError(f"{ins.name} {args[0].text} moves data: it needs {prefix} transfer "
                        "registers, not --", args[1].col,
                        f"name the first register, e.g. {ins.name}[{args[0].text}, {prefix}x, "
                        "...]")
    return {"cmd": cmd, "xfer": r.xfer(args[1], prefix, nregs),
            "a": r.src(args[2], "a"), "b": r.src(args[3], "b"), "count": count - 1}


def dis_mem(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    cmd = _name_of(ins.cmds, f["cmd"], f"{ins.name} command")
    xfer = "--" if f["xfer"] & isa.XFER_NONE else r.xfer(f["xfer"], xfer_prefix(ins))
    text = f"{ins.name}[{cmd}, {xfer}, {r.opnd(f['a'])}, {r.opnd(f['b'])}"
    return text + (f", {f['count'] + 1}]" if f["count"] else "]")


def asm_none(ins: isa.Instruction, o: Operands, r: Resolver) -> dict[str, int]:
    o.args(0)
    return {}


def dis_none(ins: isa.Instruction, f: dict[str, int], r: Renderer) -> str:
    return ins.mnemonics[0]


Assembler = Callable[[isa.Instruction, Operands, Resolver], dict[str, int]]
Disassembler = Callable[[isa.Instruction, dict[str, int], Renderer], str]

FORMS: dict[str, tuple[Assembler, Disassembler]] = {
    "alu": (asm_alu, dis_alu), "dbl_shf": (asm_dbl_shf, dis_dbl_shf),
    "immed": (asm_immed, dis_immed), "ld_field": (asm_ld_field, dis_ld_field),
    "byte_align": (asm_three, dis_byte_align), "bitop": (asm_bitop, dis_bitop),
    "mul_step": (asm_mul_step, dis_mul_step), "br": (asm_br, dis_br),
    "br_ctx": (asm_br_ctx, dis_br_ctx), "br_bit": (asm_br_bit, dis_br_bit),
    "br_byte": (asm_br_byte, dis_br_byte), "br_signal": (asm_br_signal, dis_br_signal),
    "br_inp_state": (asm_br_inp_state, dis_br_inp_state), "jump": (asm_jump, dis_jump),
    "ctx_arb": (asm_ctx_arb, dis_ctx_arb), "local_csr": (asm_local_csr, dis_local_csr),
    "cam": (asm_cam, dis_cam), "crc": (asm_crc, dis_crc), "hash": (asm_hash, dis_hash),
    "mem": (asm_mem, dis_mem), "none": (asm_none, dis_none),
}
