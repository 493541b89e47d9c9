"""The microengine ISA: the one source of truth.

Every instruction of the npkit microengine (an IXP2800 MEv2-style ME) is one row of
``INSTRUCTIONS``.  The assembler, the disassembler, the ISA-generated tests and the C++
decoder header (``sim/core/isa_gen.hpp``, written by ``python -m npkit.sim.isa_gen``) all
read this table; nothing else defines opcodes, field layouts or operand encodings.

Encoding (our own; see docs/isa.md):
  * A word is 40 bits. Bits 39..35 hold the 5-bit major opcode; the remaining 35 bits hold
    the format's fields, packed from bit 34 downwards in the order listed; unused low bits
    are zero (a non-zero unused bit makes the word illegal).
  * Operand fields (kind ``opnd``) are 8 bits, see ``OPERAND_CLASSES``.
  * Signal numbers are 1..15; 0 means "no signal".
"""

from __future__ import annotations

from dataclasses import dataclass, field

WORD_BITS = 40
OPCODE_BITS = 5
PAYLOAD_BITS = WORD_BITS - OPCODE_BITS  # 35
TARGET_BITS = 13  # control-store address width (8K words)


# --------------------------------------------------------------------------- operands
@dataclass(frozen=True)
class OperandClass:
    """A contiguous range of 8-bit operand codes."""

    name: str
    first: int  # first code
    count: int  # number of codes
    syntax: str  # how the assembler spells it
    readable: bool = True
    writable: bool = True
    bank: str = ""  # "A" or "B" for GPRs: the A/B bank rule applies to these only


OPERAND_CLASSES: tuple[OperandClass, ...] = (
    OperandClass("gpr_a", 0x00, 32, "a<n> or a declared name in bank A", bank="A"),
    OperandClass("gpr_b", 0x20, 32, "b<n> or a declared name in bank B", bank="B"),
    # $x: read = SRAM-in transfer register, write = SRAM-out transfer register
    OperandClass("xfer_s", 0x40, 32, "$<n> or $name"),
    # $$x: read = DRAM-in, write = DRAM-out
    OperandClass("xfer_d", 0x60, 32, "$$<n> or $$name"),
    # n$x: read = this ME's NN register, write = the next ME's NN register
    OperandClass("nn", 0x80, 16, "n$<n>"),
    OperandClass("lm0", 0x90, 16, "*l$index0[k]"),
    OperandClass("lm1", 0xA0, 16, "*l$index1[k]"),
    OperandClass("lm0_inc", 0xB0, 1, "*l$index0++"),
    OperandClass("lm0_dec", 0xB1, 1, "*l$index0--"),
    OperandClass("lm1_inc", 0xB2, 1, "*l$index1++"),
    OperandClass("lm1_dec", 0xB3, 1, "*l$index1--"),
    # NN ring: read pops this ME's NN ring (NN_GET), write pushes to the next ME's (NN_PUT)
    OperandClass("nn_ring", 0xB4, 1, "*n$index++"),
    OperandClass("none", 0xB5, 1, "--"),
    OperandClass("imm", 0xC0, 64, "an integer 0..63", writable=False),
)
OPERAND_NONE = 0xB5
IMM_OPERAND_MAX = 63


def operand_class(code: int) -> OperandClass | None:
    """The class of an 8-bit operand code, or None for a reserved code."""
    for cls in OPERAND_CLASSES:
        if cls.first <= code < cls.first + cls.count:
            return cls
    return None


# Transfer-register field (6 bits) of memory/unit commands: bit 5 set = "--" (no transfer
# registers), else the relative index of the first transfer register.  The register file
# ($ or $$) is implied by the unit: SRAM, scratch, MSF and hash use $, DRAM uses $$.
XFER_NONE = 0x20


# --------------------------------------------------------------------------- enums
ALU_OPS: dict[str, int] = {
    "B": 0, "~B": 1, "AND": 2, "~AND": 3, "AND~": 4, "OR": 5, "XOR": 6, "+": 7,
    "-": 8, "B-A": 9, "+carry": 10, "-carry": 11, "+8": 12, "+16": 13, "+4": 14,
}
# ALU semantics (A = first source, B = second source), 32-bit:
#   B: B   ~B: ~B   AND: A&B   ~AND: ~A&B   AND~: A&~B   OR: A|B   XOR: A^B
#   +: A+B   -: A-B   B-A: B-A   +carry: A+B+C   -carry: A-B-(1-C)?  -> A-B-!C
#   +8: A + (B & 0xFF)   +16: A + (B & 0xFFFF)   +4: A + (B & 0xF)
# Condition codes Z N C V are set by every alu/alu_shf (C and V from + and - forms only;
# the logical ops clear C and V).

SHIFT_TYPES: dict[str, int] = {"<<": 0, ">>": 1, "<<rot": 2, ">>rot": 3}

CONDITIONS: dict[str, int] = {
    # mnemonic -> condition code (4 bits); "br" is the always-taken form
    "br": 0, "beq": 1, "bne": 2, "blt": 3, "bge": 4, "bmi": 5, "bpl": 6, "bcs": 7,
    "bcc": 8, "bvs": 9, "bvc": 10, "bgt": 11, "ble": 12, "bhi": 13, "bls": 14,
}
# beq Z | bne !Z | blt N!=V | bge N==V | bmi N | bpl !N | bcs C | bcc !C | bvs V | bvc !V
# bgt !Z&&N==V | ble Z||N!=V | bhi C&&!Z | bls !C||Z     (signed compares after alu A-B)

IMMED_VARIANTS: dict[str, int] = {
    "immed": 0, "immed_w0": 1, "immed_w1": 2, "immed_b0": 3, "immed_b1": 4,
    "immed_b2": 5, "immed_b3": 6, "load_addr": 7,
}

BITOPS: dict[str, int] = {"ffs": 0, "pop_count": 1}

MUL_STEPS: dict[str, int] = {
    "24x8_start": 0, "24x8_step1": 1, "24x8_last": 2,
    "16x16_start": 3, "16x16_step1": 4, "16x16_step2": 5, "16x16_last": 6,
    "32x32_start": 7, "32x32_step1": 8, "32x32_step2": 9, "32x32_step3": 10,
    "32x32_step4": 11, "32x32_last": 12, "32x32_last2": 13,
}

CTX_ARB_MODES: dict[str, int] = {"all": 0, "any": 1, "voluntary": 2, "kill": 3}

CAM_OPS: dict[str, int] = {
    "cam_lookup": 0, "cam_write": 1, "cam_clear": 2, "cam_read_tag": 3,
    "cam_read_state": 4, "cam_write_state": 5,
}

CRC_KINDS: dict[str, int] = {"crc_ccitt": 0, "crc_32": 1, "crc_iscsi": 2, "crc_10": 3, "crc_5": 4}

HASH_SIZES: dict[str, int] = {"hash_48": 0, "hash_64": 1, "hash_128": 2}

SRAM_CMDS: dict[str, int] = {
    "read": 0, "write": 1, "swap": 2, "set": 3, "clr": 4, "incr": 5, "decr": 6, "add": 7,
    "test_and_set": 8, "test_and_clr": 9, "test_and_add": 10, "test_and_incr": 11,
    "test_and_decr": 12, "enqueue": 13, "dequeue": 14,
}
SCRATCH_CMDS: dict[str, int] = {
    "read": 0, "write": 1, "swap": 2, "set": 3, "clr": 4, "incr": 5, "decr": 6, "add": 7,
    "test_and_set": 8, "test_and_clr": 9, "test_and_add": 10, "test_and_incr": 11,
    "test_and_decr": 12, "get": 13, "put": 14,
}
DRAM_CMDS: dict[str, int] = {"read": 0, "write": 1, "rbuf_rd": 2, "tbuf_wr": 3}
MSF_CMDS: dict[str, int] = {"read": 0, "write": 1, "fast_wr": 2}

# br_inp_state conditions (6 bits)
INP_STATES: dict[str, int] = {
    **{f"SCR_Ring{n}_Full": n for n in range(16)},
    **{f"SCR_Ring{n}_Empty": 16 + n for n in range(16)},
    "NN_EMPTY": 32, "NN_FULL": 33,
}

# Local CSRs (7-bit numbers) for local_csr_rd / local_csr_wr.
LOCAL_CSRS: dict[str, int] = {
    "CTX_ENABLES": 0x00,        # bit 31: 4-context mode; bits 15..8: enabled contexts
    "ACTIVE_CTX_STS": 0x01,     # read: bits 2..0 context, bits 7..3 ME number
    "SAME_ME_SIGNAL": 0x02,     # write: bits 2..0 context, bits 6..3 signal -> signal it
    "NEXT_NEIGHBOR_SIGNAL": 0x03,  # write: same, raised in the next ME
    "BYTE_INDEX": 0x04,         # byte_align shift (bits 1..0)
    "ACTIVE_LM_ADDR_0": 0x05,   # this context's LM_ADDR 0 (byte address; 3-instruction delay)
    "ACTIVE_LM_ADDR_1": 0x06,
    "TIMESTAMP_LOW": 0x07,      # ME cycle counter / 16, low word
    "TIMESTAMP_HIGH": 0x08,
    "PSEUDO_RANDOM_NUMBER": 0x09,
    "CRC_REMAINDER": 0x0A,      # per context
    "NN_PUT": 0x0B,             # NN ring put index (written by the previous ME)
    "NN_GET": 0x0C,             # NN ring get index
    "CTX_ARB_CNTL": 0x0D,
    "MAILBOX0": 0x10, "MAILBOX1": 0x11, "MAILBOX2": 0x12, "MAILBOX3": 0x13,
}

# MSF address map and fast_wr CSRs (see docs/media.md)
MSF_RBUF_BASE = 0x0000_0000   # msf[read]: RBUF bytes
MSF_TBUF_BASE = 0x0001_0000   # msf[write]: TBUF bytes
MSF_TBUF_CTL_BASE = 0x0002_0000  # msf[write]: + 4*element -> control word validates element
MSF_TX_SEQUENCE_BASE = 0x0003_0000  # msf[read]: + 4*port -> elements transmitted so far
MSF_RX_THREAD_FREELIST_BASE = 0x10  # fast_wr: + list number; value = (sig << 8) | xfer
MSF_RBUF_ELEMENT_DONE = 0x20        # fast_wr: value = first element | (count << 16)


# --------------------------------------------------------------------------- formats
@dataclass(frozen=True)
class Field:
    name: str
    width: int
    kind: str  # opnd | enum:<TABLE> | imm | target | sig | sigmask | xfer | count | flag | csr


@dataclass(frozen=True)
class Format:
    name: str
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        total = sum(f.width for f in self.fields)
        if total > PAYLOAD_BITS:
            raise ValueError(f"format {self.name}: {total} bits > {PAYLOAD_BITS}")

    def layout(self) -> list[tuple[Field, int]]:
        """Each field with its low bit position in the 40-bit word."""
        pos = PAYLOAD_BITS
        out = []
        for f in self.fields:
            pos -= f.width
            out.append((f, pos))
        return out


def _f(name: str, width: int, kind: str) -> Field:
    return Field(name, width, kind)


DEFER = _f("defer", 2, "count")  # defer[0..3]
TARGET = _f("target", TARGET_BITS, "target")

FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("alu", (_f("op", 4, "enum:ALU_OPS"), _f("dest", 8, "opnd"), _f("a", 8, "opnd"),
                   _f("b", 8, "opnd"), _f("shift", 2, "enum:SHIFT_TYPES"), _f("shamt", 5, "imm"))),
    Format("dbl_shf", (_f("dest", 8, "opnd"), _f("a", 8, "opnd"), _f("b", 8, "opnd"),
                       _f("shamt", 5, "imm"), _f("indirect", 1, "flag"))),
    Format("immed", (_f("variant", 3, "enum:IMMED_VARIANTS"), _f("dest", 8, "opnd"),
                     _f("value", 16, "imm"), _f("shift", 2, "imm"), _f("invert", 1, "flag"))),
    Format("ld_field", (_f("dest", 8, "opnd"), _f("mask", 4, "imm"), _f("src", 8, "opnd"),
                        _f("shift", 2, "enum:SHIFT_TYPES"), _f("shamt", 5, "imm"),
                        _f("clr", 1, "flag"), _f("load_cc", 1, "flag"))),
    Format("byte_align", (_f("le", 1, "flag"), _f("dest", 8, "opnd"), _f("a", 8, "opnd"),
                          _f("b", 8, "opnd"))),
    Format("bitop", (_f("op", 3, "enum:BITOPS"), _f("dest", 8, "opnd"), _f("src", 8, "opnd"))),
    Format("mul_step", (_f("step", 4, "enum:MUL_STEPS"), _f("dest", 8, "opnd"),
                        _f("a", 8, "opnd"), _f("b", 8, "opnd"))),
    Format("br", (_f("cond", 4, "enum:CONDITIONS"), TARGET, DEFER)),
    Format("br_ctx", (_f("ctx", 3, "imm"), _f("ne", 1, "flag"), TARGET, DEFER)),
    Format("br_bit", (_f("reg", 8, "opnd"), _f("bit", 5, "imm"), _f("clr", 1, "flag"),
                      TARGET, DEFER)),
    Format("br_byte", (_f("reg", 8, "opnd"), _f("byte", 2, "imm"), _f("value", 8, "imm"),
                       _f("ne", 1, "flag"), TARGET, DEFER)),
    Format("br_signal", (_f("sig", 4, "sig"), _f("not", 1, "flag"), TARGET, DEFER)),
    Format("br_inp_state", (_f("state", 6, "enum:INP_STATES"), _f("not", 1, "flag"),
                            TARGET, DEFER)),
    Format("jump", (_f("reg", 8, "opnd"), _f("rtn", 1, "flag"), TARGET, DEFER)),
    Format("ctx_arb", (_f("mode", 2, "enum:CTX_ARB_MODES"), _f("sigs", 16, "sigmask"),
                       DEFER)),
    Format("local_csr", (_f("write", 1, "flag"), _f("csr", 7, "csr"), _f("src", 8, "opnd"))),
    Format("cam", (_f("op", 3, "enum:CAM_OPS"), _f("dest", 8, "opnd"), _f("src", 8, "opnd"),
                   _f("state", 4, "imm"))),
    Format("crc", (_f("kind", 3, "enum:CRC_KINDS"), _f("le", 1, "flag"), _f("dest", 8, "opnd"),
                   _f("src", 8, "opnd"))),
    Format("hash", (_f("size", 2, "enum:HASH_SIZES"), _f("xfer", 6, "xfer"),
                    _f("count", 2, "count"), _f("sig", 4, "sig"), _f("swap", 1, "flag"))),
    # memory/unit commands: unit[cmd, xfer, a, b, count], ctx_swap[sig] | sig_done[sig]
    # address = a + b (byte address), except dram rbuf_rd/tbuf_wr (a = DRAM address,
    # b = RBUF/TBUF byte address) and msf fast_wr (a = CSR, b = value).
    # count is stored minus one: 1..16 longwords (SRAM, scratch, MSF) or quadwords (DRAM).
    Format("mem", (_f("cmd", 4, "enum:CMD"), _f("xfer", 6, "xfer"), _f("a", 8, "opnd"),
                   _f("b", 8, "opnd"), _f("count", 4, "count"), _f("sig", 4, "sig"),
                   _f("swap", 1, "flag"))),
    Format("none", ()),
)}


# --------------------------------------------------------------------------- instructions
@dataclass(frozen=True)
class Instruction:
    """One major opcode.  ``mnemonics`` lists every assembler spelling that maps to it."""

    opcode: int
    name: str
    format: str
    mnemonics: tuple[str, ...]
    syntax: str
    timing: str  # alu | branch | ctx | unit | mem
    summary: str
    cmds: dict[str, int] = field(default_factory=dict)  # for the mem format


INSTRUCTIONS: tuple[Instruction, ...] = (
    Instruction(0, "alu", "alu", ("alu", "alu_shf"),
                "alu[dest, a, op, b]  |  alu_shf[dest, a, op, b, <<n]",
                "alu", "ALU op on A and (shifted) B; sets Z N C V"),
    Instruction(1, "dbl_shf", "dbl_shf", ("dbl_shf",), "dbl_shf[dest, a, b, >>n]",
                "alu", "dest = low 32 bits of (a:b) >> n (n from the previous ALU result "
                "when indirect)"),
    Instruction(2, "immed", "immed", tuple(IMMED_VARIANTS),
                "immed[dest, value, <<s]  immed_w0/w1[dest, v16]  immed_b0..b3[dest, v8]  "
                "load_addr[dest, label#]", "alu",
                "load an immediate (a pending local_csr_rd value is ORed in)"),
    Instruction(3, "ld_field", "ld_field", ("ld_field", "ld_field_w_clr"),
                "ld_field[dest, mask, src, <<n]", "alu",
                "replace the bytes of dest selected by mask with the shifted src"),
    Instruction(4, "byte_align", "byte_align", ("byte_align_be", "byte_align_le"),
                "byte_align_be[dest, a, b]", "alu",
                "dest = 4 bytes of a:b at BYTE_INDEX (big or little endian)"),
    Instruction(5, "bitop", "bitop", tuple(BITOPS), "ffs[dest, src]  pop_count[dest, src]",
                "alu", "first set bit (Z when src is 0) / number of set bits"),
    Instruction(6, "mul_step", "mul_step", ("mul_step",), "mul_step[a, b], 32x32_start",
                "alu", "multiply in steps: start latches a*b, last/last2 write low/high"),
    Instruction(7, "br", "br", tuple(CONDITIONS), "br[label#], defer[n]  beq[label#] ...",
                "branch", "branch always or on the condition codes"),
    Instruction(8, "br_ctx", "br_ctx", ("br=ctx", "br!=ctx"), "br=ctx[ctx, label#]", "branch",
                "branch if the running context is (not) ctx"),
    Instruction(9, "br_bit", "br_bit", ("br_bset", "br_bclr"), "br_bset[reg, bit, label#]",
                "branch", "branch if a bit of reg is set / clear"),
    Instruction(10, "br_byte", "br_byte", ("br=byte", "br!=byte"),
                "br=byte[reg, byte, value, label#]", "branch",
                "branch if byte (0 = least significant) of reg equals value"),
    Instruction(11, "br_signal", "br_signal", ("br_signal", "br_!signal"),
                "br_signal[sig, label#]", "branch",
                "branch if the signal is set (and clear it)"),
    Instruction(12, "br_inp_state", "br_inp_state", ("br_inp_state", "br_!inp_state"),
                "br_inp_state[SCR_Ring0_Full, label#]", "branch",
                "branch on a unit state: scratch ring full/empty, NN ring empty/full"),
    Instruction(13, "jump", "jump", ("jump", "rtn"), "jump[reg, label#]  rtn[reg]", "branch",
                "branch to the address in reg"),
    Instruction(14, "ctx_arb", "ctx_arb", ("ctx_arb",),
                "ctx_arb[sig, ...], all|any  ctx_arb[voluntary]  ctx_arb[kill]", "ctx",
                "swap out until all (or any) listed signals arrive"),
    Instruction(15, "local_csr", "local_csr", ("local_csr_rd", "local_csr_wr"),
                "local_csr_wr[CSR, src]  local_csr_rd[CSR]", "alu",
                "write a local CSR / read one (the next immed ORs the value in)"),
    Instruction(16, "cam", "cam", tuple(CAM_OPS),
                "cam_lookup[dest, tag]  cam_write[entry, tag, state]  cam_clear", "alu",
                "16-entry CAM: lookup gives state<<8 | hit<<7 | entry<<3; miss gives LRU"),
    Instruction(17, "crc", "crc", ("crc_be", "crc_le"), "crc_be[crc_32, dest, src]", "alu",
                "dest = src; CRC_REMAINDER updated over src's 4 bytes"),
    Instruction(18, "hash", "hash", tuple(HASH_SIZES), "hash_48[$x, n], ctx_swap[s]", "unit",
                "hash 1..3 keys held in $x (2/2/4 words each) in place"),
    Instruction(19, "sram", "mem", ("sram",), "sram[cmd, $x, a, b, n], ctx_swap[s]", "mem",
                "SRAM command", cmds=SRAM_CMDS),
    Instruction(20, "scratch", "mem", ("scratch",), "scratch[cmd, $x, a, b, n], ctx_swap[s]",
                "mem", "scratchpad command", cmds=SCRATCH_CMDS),
    Instruction(21, "dram", "mem", ("dram",), "dram[cmd, $$x, a, b, n], ctx_swap[s]", "mem",
                "DRAM command (count in quadwords)", cmds=DRAM_CMDS),
    Instruction(22, "msf", "mem", ("msf",), "msf[cmd, $x, a, b, n], sig_done[s]", "mem",
                "media switch fabric command", cmds=MSF_CMDS),
    Instruction(23, "nop", "none", ("nop",), "nop", "alu", "no operation"),
)

BY_OPCODE: dict[int, Instruction] = {i.opcode: i for i in INSTRUCTIONS}
BY_MNEMONIC: dict[str, Instruction] = {m: i for i in INSTRUCTIONS for m in i.mnemonics}

ENUMS: dict[str, dict[str, int]] = {
    "ALU_OPS": ALU_OPS, "SHIFT_TYPES": SHIFT_TYPES, "CONDITIONS": CONDITIONS,
    "IMMED_VARIANTS": IMMED_VARIANTS, "BITOPS": BITOPS, "MUL_STEPS": MUL_STEPS,
    "CTX_ARB_MODES": CTX_ARB_MODES, "CAM_OPS": CAM_OPS, "CRC_KINDS": CRC_KINDS,
    "HASH_SIZES": HASH_SIZES, "INP_STATES": INP_STATES, "SRAM_CMDS": SRAM_CMDS,
    "SCRATCH_CMDS": SCRATCH_CMDS, "DRAM_CMDS": DRAM_CMDS, "MSF_CMDS": MSF_CMDS,
    "LOCAL_CSRS": LOCAL_CSRS,
}


def encode(opcode: int, fields: dict[str, int]) -> int:
    """Pack a word.  Raises ValueError when a field does not fit."""
    ins = BY_OPCODE[opcode]
    word = opcode << PAYLOAD_BITS
    for f, pos in FORMATS[ins.format].layout():
        v = fields.get(f.name, 0)
        if not 0 <= v < (1 << f.width):
            raise ValueError(f"{ins.name}: field {f.name}={v} does not fit in {f.width} bits")
        word |= v << pos
    return word


def decode(word: int) -> tuple[Instruction, dict[str, int]]:
    """Unpack a word.  Raises ValueError for an illegal word."""
    if not 0 <= word < (1 << WORD_BITS):
        raise ValueError(f"word {word:#x} is wider than {WORD_BITS} bits")
    opcode = word >> PAYLOAD_BITS
    ins = BY_OPCODE.get(opcode)
    if ins is None:
        raise ValueError(f"illegal opcode {opcode} in word {word:#012x}")
    fields: dict[str, int] = {}
    used = 0
    for f, pos in FORMATS[ins.format].layout():
        fields[f.name] = (word >> pos) & ((1 << f.width) - 1)
        used |= ((1 << f.width) - 1) << pos
    if word & ((1 << PAYLOAD_BITS) - 1) & ~used:
        raise ValueError(f"{ins.name}: reserved bits set in word {word:#012x}")
    return ins, fields
