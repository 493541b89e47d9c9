"""Byte fields of fixed words tested in place (the hand-written code's `br=byte[$$4, 1, 0]`).

A register `r = (w >> 8k) & 0xFF` (or `w >> 24`), where w is a *fixed operand* (a header
or metadata word the body never changes, read as `$$j` / `*l$index1[j]` itself), read only
by branches that compare it with constants, is never computed: each test reads byte k of w.

- `r == c`, `r != c`: `br=byte[w, k, c]` / `br!=byte[w, k, c]`;
- `r <u 2`, `r >=u 2`: two `br=byte` (0 and 1);
- `r >=u 256 - 2^j` (its top 8 - j bits all set, e.g. `>= 240`), `r <u 2^j` (its top bits
  all clear), j >= 2 so the mask fits an immediate: `alu_shf[--, 0xFF >> j, AND~ / AND,
  w, >>8k+j]` and `beq`/`bne`.

A fixed operand never changes, so the word read at the test is the word the field was
taken from.  The compare normalization (compares.py) leaves these branches alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir
from ..abi import BodyABI
from .compares import def_counts
from .hdrwrite import HeaderPlan

IMM_MAX = 63


@dataclass(frozen=True)
class ByteField:
    word: wir.Reg       # the fixed word
    byte: int           # 0 = bits 7..0


@dataclass(frozen=True)
class Step:
    """One instruction of a byte test: `{0}` in `text` is the word; `targets` the labels
    it may branch to (none: it sets the condition codes for the next step)."""

    text: str
    targets: tuple[str, ...] = ()
    reads_cc: bool = False


def fixed_operands(fn: wir.Function, plan: HeaderPlan,
                   abi: BodyABI | None = None) -> dict[int, str]:
    """Registers defined once by a read of a header/metadata word the body never changes
    (header words written straight to `$$` out included: `$$k` in keeps the old value):
    the transfer register / local memory word itself is the operand."""
    defs = def_counts(fn)
    hdr_written = {i.word for b in fn.blocks for i in b.instrs if isinstance(i, wir.HdrWrite)}
    meta_written = {i.word for b in fn.blocks for i in b.instrs if isinstance(i, wir.MetaWrite)}
    fixed: dict[int, str] = {}
    # a window in local memory is read into registers: the words change in place, and a
    # second local-memory operand would meet the metadata's in one instruction
    in_dram = abi is None or abi.header_lm_word is None
    for b in fn.blocks:
        for i in b.instrs:
            if isinstance(i, wir.HdrRead) and defs[i.dst.id] == 1 and in_dram and \
                    (i.word not in hdr_written or i.word in plan.direct):
                fixed[i.dst.id] = f"$${i.word}"
            elif isinstance(i, wir.MetaRead) and defs[i.dst.id] == 1 and \
                    i.word not in meta_written:
                fixed[i.dst.id] = f"*l$index1[{i.word}]"
    return fixed


def find_byte_tests(fn: wir.Function, fixed: dict[int, str]) -> dict[int, ByteField]:
    """Register id -> its byte field, for the registers whose every use is a foldable test."""
    defs = def_counts(fn)
    by_dst = {i.dst.id: i for b in fn.blocks for i in b.instrs
              if isinstance(i, wir.Bin) and defs.get(i.dst.id) == 1}
    users: dict[int, list[wir.Instr]] = {}
    for b in fn.blocks:
        for i in b.instrs:
            for u in i.uses():
                if isinstance(u, wir.Reg):
                    users.setdefault(u.id, []).append(i)
    out: dict[int, ByteField] = {}
    for r, ins in by_dst.items():
        field = _field_of(ins, by_dst, fixed)
        if field is not None and users.get(r) and all(
                isinstance(u, wir.Branch) and isinstance(u.a, wir.Reg) and u.a.id == r
                and isinstance(u.b, int) and foldable(u.pred, u.b)
                for u in users[r]):
            out[r] = field
    return out


def _field_of(ins: wir.Bin, by_dst: dict[int, wir.Bin],
              fixed: dict[int, str]) -> ByteField | None:
    """`ins` as byte k of a fixed word: `w >> 24`, `w & 0xFF`, `(w >> 8k) & 0xFF`."""
    if not isinstance(ins.a, wir.Reg) or not isinstance(ins.b, int):
        return None
    if ins.op == "lshr" and ins.b == 24 and ins.a.id in fixed:
        return ByteField(ins.a, 3)
    if ins.op != "and" or ins.b != 0xFF:
        return None
    if ins.a.id in fixed:
        return ByteField(ins.a, 0)
    inner = by_dst.get(ins.a.id)
    if inner is not None and inner.op == "lshr" and isinstance(inner.a, wir.Reg) and \
            inner.a.id in fixed and inner.b in (8, 16, 24):
        return ByteField(inner.a, int(inner.b) // 8)
    return None


def byte_test(pred: str, c: int, byte: int, then: str, other: str) -> list[Step] | None:
    """`(byte `byte` of the word) pred c` branching to `then`, else falling through (or,
    when the list ends with an unconditional `br`, never); None: not foldable."""
    if pred == "ule":
        pred, c = "ult", c + 1
    elif pred == "ugt":
        pred, c = "uge", c + 1
    if pred in ("ult", "uge") and c == 1:
        pred, c = ("eq" if pred == "ult" else "ne"), 0
    if pred in ("eq", "ne") and 0 <= c <= 0xFF:
        mnem = "br=byte" if pred == "eq" else "br!=byte"
        return [Step(f"{mnem}[{{0}}, {byte}, {c}, {then}#]", (then,))]
    if pred not in ("ult", "uge") or not 2 <= c <= 0xFF:
        return None
    if c == 2:                  # the byte is 0 or 1
        to = then if pred == "ult" else other
        steps = [Step(f"br=byte[{{0}}, {byte}, {v}, {to}#]", (to,)) for v in (0, 1)]
        return steps if pred == "ult" else [*steps, Step(f"br[{then}#]", (then,))]
    top = 0x100 - c             # c = 256 - 2^j: the top 8 - j bits all set
    if top & (top - 1) == 0 and 0xFF // top <= IMM_MAX:
        return _mask_test(0xFF // top, top.bit_length() - 1 + 8 * byte, "AND~",
                          "beq" if pred == "uge" else "bne", then)
    if c & (c - 1) == 0 and 0xFF // c <= IMM_MAX:     # c = 2^j: the top bits all clear
        return _mask_test(0xFF // c, c.bit_length() - 1 + 8 * byte, "AND",
                          "beq" if pred == "ult" else "bne", then)
    return None


def _mask_test(mask: int, shift: int, op: str, branch: str, then: str) -> list[Step]:
    """`mask op (word >> shift)` (AND~: zero when the bits are all set) and the branch."""
    return [Step(f"alu_shf[--, {mask}, {op}, {{0}}, >>{shift}]"),
            Step(f"{branch}[{then}#]", (then,), reads_cc=True)]


def foldable(pred: str, c: int) -> bool:
    return byte_test(pred, c, 0, "t", "e") is not None
