"""Helpers for the core tests: chip configs and instruction words built with isa.encode.

Independent of the assembler (written in parallel): every word here is packed straight from
the ISA table, so these tests check the simulator against the table and nothing else.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from npkit.sim import _core, isa

CHIPS = Path(isa.__file__).resolve().parent / "chips"
MASK32 = 0xFFFF_FFFF


def chip_config(name: str = "ixp2800", **overrides: Any) -> dict[str, Any]:
    """The chip config dict as tomllib gives it; overrides are 'section.key' -> value."""
    cfg = tomllib.loads((CHIPS / f"{name}.toml").read_text())
    cfg["ports"] = []
    for dotted, value in overrides.items():
        section, key = dotted.split(".")
        cfg[section][key] = value
    return cfg


def make_core(name: str = "ixp2800", seed: int = 1, **overrides: Any) -> _core.Core:
    dotted = {k.replace("__", "."): v for k, v in overrides.items()}
    return _core.Core(chip_config(name, **dotted), seed)


# ---------------------------------------------------------------- operand codes
def _first(name: str) -> int:
    return next(c.first for c in isa.OPERAND_CLASSES if c.name == name)


def A(i: int) -> int:
    return _first("gpr_a") + i


def B(i: int) -> int:
    return _first("gpr_b") + i


def X(i: int) -> int:
    """$i: SRAM transfer register."""
    return _first("xfer_s") + i


def XD(i: int) -> int:
    """$$i: DRAM transfer register."""
    return _first("xfer_d") + i


def NN(i: int) -> int:
    return _first("nn") + i


def LM0(k: int) -> int:
    return _first("lm0") + k


def LM1(k: int) -> int:
    return _first("lm1") + k


LM0_INC = _first("lm0_inc")
LM0_DEC = _first("lm0_dec")
LM1_INC = _first("lm1_inc")
NN_RING = _first("nn_ring")
NONE = isa.OPERAND_NONE


def IMM(v: int) -> int:
    assert 0 <= v <= isa.IMM_OPERAND_MAX
    return _first("imm") + v


# ---------------------------------------------------------------- instruction words
def op(name: str) -> int:
    return next(i.opcode for i in isa.INSTRUCTIONS if i.name == name)


def enc(name: str, **fields: int) -> int:
    return isa.encode(op(name), fields)


def alu(dest: int, a: int, alu_op: str, b: int, shift: str = "<<", shamt: int = 0) -> int:
    return enc("alu", op=isa.ALU_OPS[alu_op], dest=dest, a=a, b=b,
               shift=isa.SHIFT_TYPES[shift], shamt=shamt)


def immed(dest: int, value: int, variant: str = "immed", shift: int = 0, invert: int = 0) -> int:
    return enc("immed", variant=isa.IMMED_VARIANTS[variant], dest=dest, value=value,
               shift=shift, invert=invert)


def load32(dest: int, value: int) -> list[int]:
    """Two words that put a 32-bit constant in dest."""
    return [immed(dest, value & 0xFFFF), immed(dest, value >> 16, "immed_w1")]


def load_out(xfer: int, value: int, tmp: int = 0x0F) -> list[int]:
    """Put a 32-bit constant in an *out* transfer register, through GPR A15."""
    return load32(tmp, value) + [alu(xfer, NONE, "B", tmp)]


def br(cond: str, target: int, defer: int = 0) -> int:
    return enc("br", cond=isa.CONDITIONS[cond], target=target, defer=defer)


def ctx_arb(*sigs: int, mode: str = "all", defer: int = 0) -> int:
    mask = 0
    for s in sigs:
        mask |= 1 << s
    return enc("ctx_arb", mode=isa.CTX_ARB_MODES[mode], sigs=mask, defer=defer)


def kill() -> int:
    return ctx_arb(mode="kill")


def nop() -> int:
    return enc("nop")


def csr_wr(csr: str, src: int) -> int:
    return enc("local_csr", write=1, csr=isa.LOCAL_CSRS[csr], src=src)


def csr_rd(csr: str) -> int:
    return enc("local_csr", write=0, csr=isa.LOCAL_CSRS[csr], src=NONE)


def mem(unit: str, cmd: str, xfer: int | None, a: int, b: int, count: int = 1, sig: int = 0,
        swap: bool = False) -> int:
    ins = isa.BY_MNEMONIC[unit]
    return isa.encode(ins.opcode, {
        "cmd": ins.cmds[cmd], "xfer": isa.XFER_NONE if xfer is None else xfer, "a": a, "b": b,
        "count": count - 1, "sig": sig, "swap": int(swap)})


def run_program(words: list[int], *, core: _core.Core | None = None, me: int = 0,
                ctx_mode: int = 8, cycles: int = 100_000, setup=None) -> _core.Core:
    """Load words on one ME (other MEs stay empty) and run until everything is idle."""
    core = core or make_core()
    core.load(me, words, ctx_mode)
    if setup:
        setup(core)
    core.run(cycles, until_idle=True)
    return core


ORG = 1  # where single_context() puts the body: branch targets in it are ORG + index


def single_context(words: list[int]) -> list[int]:
    """Run words on context 0 only: the other contexts branch to a final kill."""
    end = ORG + len(words)
    return [enc("br_ctx", ctx=0, ne=1, target=end)] + words + [kill()]
