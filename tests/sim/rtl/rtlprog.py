"""Random microengine programs over the RTL's covered ISA, for the RTL-vs-model tests.

Words are packed straight from the ISA table (``isa.encode``), independent of the assembler.
A program is a prologue (LM_ADDR setup), a body of blocks whose control flow ends (forward
branches, counted backward loops), an epilogue that copies state the model does not expose
(LM_ADDR, the CAM) into transfer registers, and a final ``ctx_arb[kill]``.  Every context
runs the same program; ``br=ctx``, per-context registers and CSRs make them differ.
Contexts may still sleep for good on a ``ctx_arb`` whose signals never come: the model then
reports a deadlock and the RTL goes idle with the same sleepers, which the comparison
accepts as the same end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st

from npkit.sim import isa
from npkit.sim.rtl.cosim import InitState

OPND = {c.name: c.first for c in isa.OPERAND_CLASSES}
NONE = isa.OPERAND_NONE
LM0_BASE, LM1_BASE = 1024, 1536   # bytes: far enough from both ends for +-4 per access
LM_ADDR_RANGE = (800, 1400)       # bytes, for LM_ADDR writes in the body
SCRATCH = OPND["gpr_b"] + 15      # b15: address loads for jump / LM_ADDR (and a random reg)
COUNTER = OPND["gpr_b"] + 14      # b14: loop counters; no random instruction writes it
LM_ADDR_FAULTY = (2500, 2600)     # bytes: beyond the 640-word local memory (bad_address)
INTERESTING = (0, 1, 2, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF)


def enc(name: str, **fields: int) -> int:
    return isa.encode(isa.BY_MNEMONIC[name].opcode, fields)


def kill() -> int:
    return enc("ctx_arb", mode=isa.CTX_ARB_MODES["kill"])


def nop() -> int:
    return enc("nop")


def immed(dest: int, value: int, variant: str = "immed", shift: int = 0, invert: int = 0) -> int:
    return enc(variant, variant=isa.IMMED_VARIANTS[variant], dest=dest, value=value, shift=shift,
               invert=invert)


def csr_wr(csr: str, src: int) -> int:
    return enc("local_csr_wr", write=1, csr=isa.LOCAL_CSRS[csr], src=src)


def csr_rd(csr: str) -> int:
    return enc("local_csr_rd", write=0, csr=isa.LOCAL_CSRS[csr], src=NONE)


# ---------------------------------------------------------------- operands
def _sources(per_ctx: int) -> st.SearchStrategy[int]:
    reg = st.integers(0, per_ctx - 1)
    k = st.integers(0, 15)
    return st.one_of(
        reg.map(lambda i: OPND["gpr_a"] + i), reg.map(lambda i: OPND["gpr_b"] + i),
        reg.map(lambda i: OPND["xfer_s"] + i), reg.map(lambda i: OPND["xfer_d"] + i),
        reg.map(lambda i: OPND["nn"] + i),
        k.map(lambda i: OPND["lm0"] + i), k.map(lambda i: OPND["lm1"] + i),
        st.sampled_from([OPND["lm0_inc"], OPND["lm0_dec"], OPND["lm1_inc"], OPND["lm1_dec"],
                         OPND["nn_ring"], NONE]),
        st.integers(0, isa.IMM_OPERAND_MAX).map(lambda v: OPND["imm"] + v),
    )


def _dests(per_ctx: int) -> st.SearchStrategy[int]:
    reg = st.integers(0, per_ctx - 1)
    k = st.integers(0, 15)
    return st.one_of(
        reg.map(lambda i: OPND["gpr_a"] + i),
        reg.filter(lambda i: OPND["gpr_b"] + i != COUNTER).map(lambda i: OPND["gpr_b"] + i),
        reg.map(lambda i: OPND["xfer_s"] + i), reg.map(lambda i: OPND["xfer_d"] + i),
        reg.map(lambda i: OPND["nn"] + i),
        k.map(lambda i: OPND["lm0"] + i), k.map(lambda i: OPND["lm1"] + i),
        st.sampled_from([OPND["lm0_inc"], OPND["lm0_dec"], OPND["lm1_inc"], OPND["lm1_dec"],
                         OPND["nn_ring"], NONE]),
    )


# ---------------------------------------------------------------- straight-line instructions
WRITABLE_CSRS = ("BYTE_INDEX", "CRC_REMAINDER", "MAILBOX0", "MAILBOX3", "CTX_ARB_CNTL",
                 "PSEUDO_RANDOM_NUMBER", "NN_PUT", "NN_GET", "SAME_ME_SIGNAL", "CTX_ENABLES",
                 "TIMESTAMP_LOW")
READABLE_CSRS = tuple(k for k in isa.LOCAL_CSRS if k not in ("NEXT_NEIGHBOR_SIGNAL",))


@st.composite
def straight(draw, per_ctx: int) -> list[int]:
    """One ALU-class instruction (or a short sequence that must stay together)."""
    src, dst = _sources(per_ctx), _dests(per_ctx)
    kind = draw(st.sampled_from(["alu", "alu", "alu", "dbl_shf", "immed", "ld_field",
                                 "byte_align", "bitop", "crc", "cam", "csr_wr", "csr_rd",
                                 "lm_addr", "mul", "nop"]))
    if kind == "alu":
        return [enc("alu", op=draw(st.sampled_from(sorted(isa.ALU_OPS.values()))),
                    dest=draw(dst), a=draw(src), b=draw(src),
                    shift=draw(st.integers(0, 3)), shamt=draw(st.integers(0, 31)))]
    if kind == "dbl_shf":
        return [enc("dbl_shf", dest=draw(dst), a=draw(src), b=draw(src),
                    shamt=draw(st.integers(0, 31)), indirect=draw(st.integers(0, 1)))]
    if kind == "immed":
        variant = draw(st.sampled_from(sorted(isa.IMMED_VARIANTS)))
        return [immed(draw(dst), draw(st.integers(0, 0xFFFF)), variant,
                      draw(st.integers(0, 3)), draw(st.integers(0, 1)))]
    if kind == "ld_field":
        return [enc("ld_field", dest=draw(dst), mask=draw(st.integers(0, 15)), src=draw(src),
                    shift=draw(st.integers(0, 3)), shamt=draw(st.integers(0, 31)),
                    clr=draw(st.integers(0, 1)), load_cc=draw(st.integers(0, 1)))]
    if kind == "byte_align":
        return [enc("byte_align_be", le=draw(st.integers(0, 1)), dest=draw(dst), a=draw(src),
                    b=draw(src))]
    if kind == "bitop":
        return [enc("ffs", op=draw(st.integers(0, 1)), dest=draw(dst), src=draw(src))]
    if kind == "crc":
        return [enc("crc_be", kind=draw(st.sampled_from(sorted(isa.CRC_KINDS.values()))),
                    le=draw(st.integers(0, 1)), dest=draw(dst), src=draw(src))]
    if kind == "cam":
        op = draw(st.sampled_from(sorted(isa.CAM_OPS)))
        writes = op in ("cam_lookup", "cam_read_tag", "cam_read_state")
        return [enc(op, op=isa.CAM_OPS[op], dest=draw(dst) if writes else draw(src),
                    src=draw(src), state=draw(st.integers(0, 15)))]
    if kind == "csr_wr":
        return [csr_wr(draw(st.sampled_from(WRITABLE_CSRS)), draw(src))]
    if kind == "csr_rd":  # the value is ORed into the next immed
        return [csr_rd(draw(st.sampled_from(READABLE_CSRS))),
                immed(draw(dst), draw(st.integers(0, 0xFFFF)))]
    if kind == "lm_addr":  # now and then beyond local memory: both must fault alike
        value = draw(st.integers(*LM_ADDR_RANGE) if draw(st.integers(0, 15))
                     else st.integers(*LM_ADDR_FAULTY))
        which = draw(st.sampled_from(["ACTIVE_LM_ADDR_0", "ACTIVE_LM_ADDR_1"]))
        return [immed(SCRATCH, value), csr_wr(which, SCRATCH)]
    if kind == "mul":
        size = draw(st.sampled_from(["24x8", "16x16", "32x32"]))
        steps = [s for s in isa.MUL_STEPS if s.startswith(size)]
        words = [enc("mul_step", step=isa.MUL_STEPS[steps[0]], dest=NONE, a=draw(src),
                     b=draw(src))]
        words += [enc("mul_step", step=isa.MUL_STEPS[s], dest=draw(dst) if "last" in s else NONE,
                      a=NONE, b=NONE) for s in steps[1:]]
        return words
    return [nop()]


# ---------------------------------------------------------------- blocks with control flow
@dataclass
class Block:
    words: list[int]
    branch_at: int = -1    # index in words of a branch whose target is a later block
    target_block: int = 0  # resolved at layout: the start of that block (or the final kill)
    jump_load_at: int = -1  # load_addr feeding a jump: gets the same target
    loop_from: int = -1    # index of a backward branch to index loop_to of this block
    loop_to: int = 0


BRANCHES = ("br", "br_ctx", "br_bit", "br_byte", "br_signal", "br_inp_state", "jump",
            "ctx_arb_voluntary", "ctx_arb_wait", "loop")


# Memory and unit commands for programs run in lockstep inside a chip, whose model serves
# them (the standalone co-simulation has no memories and refuses them): (unit, command,
# count range, transfer registers per count, address step).  Addresses come from two
# immediates, inside the units' memories and aligned.
COMMANDS = (("sram", "read", (1, 4), 1, 4), ("sram", "write", (1, 4), 1, 4),
            ("sram", "incr", (1, 1), 0, 4), ("sram", "test_and_add", (1, 1), 1, 4),
            ("sram", "swap", (1, 1), 1, 4), ("scratch", "read", (1, 4), 1, 4),
            ("scratch", "write", (1, 4), 1, 4), ("scratch", "test_and_incr", (1, 1), 1, 4),
            ("scratch", "add", (1, 1), 1, 4), ("dram", "read", (1, 2), 2, 8),
            ("dram", "write", (1, 2), 2, 8), ("msf", "read", (1, 4), 1, 4))
# (an msf write or fast_wr needs a TBUF or CSR address beyond the immediates: the real
# programs' transmit and receive MEs check those)


@st.composite
def command(draw, per_ctx: int) -> list[int]:
    """One memory or hash command: signalled and swapped out on, signalled and not waited
    for (the signal stays pending), or neither."""
    sig = draw(st.integers(0, 15))
    swap = draw(st.integers(0, 1)) if sig else 0
    if draw(st.integers(0, 5)) == 0:
        name = draw(st.sampled_from(["hash_48", "hash_64", "hash_128"]))
        return [enc(name, size=isa.HASH_SIZES[name], xfer=draw(st.integers(0, per_ctx - 4)),
                    count=0, sig=sig, swap=swap)]
    unit, cmd, counts, per_count, step = draw(st.sampled_from(COMMANDS))
    count = draw(st.integers(*counts))
    span = max(1, count * per_count)
    return [enc(unit, cmd=isa.BY_MNEMONIC[unit].cmds[cmd],
                xfer=draw(st.integers(0, per_ctx - span)) if per_count else isa.XFER_NONE,
                a=OPND["imm"] + step * draw(st.integers(0, 63 // step)), b=OPND["imm"],
                count=count - 1, sig=sig, swap=swap)]


@st.composite
def block(draw, per_ctx: int, index: int, blocks: int, commands: bool = False) -> Block:
    if commands and draw(st.integers(0, 3)) == 0:
        return Block(draw(command(per_ctx)))
    if draw(st.integers(0, 2)) > 0:
        return Block(draw(straight(per_ctx)))
    kind = draw(st.sampled_from(BRANCHES))
    if kind == "loop":  # a counted backward loop over straight-line code (its own block)
        body: list[int] = []
        for _ in range(draw(st.integers(1, 3))):
            body += draw(straight(per_ctx))
        n = len(body)
        back = enc("bne", cond=isa.CONDITIONS["bne"], defer=0)  # target fixed at layout
        return Block([immed(COUNTER, draw(st.integers(1, 3))), *body,
                      enc("alu", op=isa.ALU_OPS["-"], dest=COUNTER, a=COUNTER,
                          b=OPND["imm"] + 1, shift=0, shamt=0), back],
                     loop_from=n + 2, loop_to=1)
    defer = draw(st.integers(0, 3))
    slots: list[int] = []
    for _ in range(defer):
        slots += draw(straight(per_ctx).filter(lambda w: len(w) == 1))
    target = draw(st.integers(index + 1, blocks))  # blocks = the final kill
    src = _sources(per_ctx)
    if kind == "br":
        word = enc("br", cond=draw(st.sampled_from(sorted(isa.CONDITIONS.values()))),
                   defer=defer)
    elif kind == "br_ctx":
        word = enc("br=ctx", ctx=draw(st.integers(0, 7)), ne=draw(st.integers(0, 1)),
                   defer=defer)
    elif kind == "br_bit":
        word = enc("br_bset", reg=draw(src), bit=draw(st.integers(0, 31)),
                   clr=draw(st.integers(0, 1)), defer=defer)
    elif kind == "br_byte":
        word = enc("br=byte", reg=draw(src), byte=draw(st.integers(0, 3)),
                   value=draw(st.sampled_from([0, 0xFF, draw(st.integers(0, 255))])),
                   ne=draw(st.integers(0, 1)), defer=defer)
    elif kind == "br_signal":
        word = enc("br_signal", sig=draw(st.integers(1, 15)), **{"not": draw(st.integers(0, 1))},
                   defer=defer)
    elif kind == "br_inp_state":
        word = enc("br_inp_state", state=draw(st.sampled_from(sorted(isa.INP_STATES.values()))),
                   **{"not": draw(st.integers(0, 1))}, defer=defer)
    elif kind == "jump":
        load = immed(SCRATCH, 0, "load_addr")
        word = enc("jump", reg=SCRATCH, rtn=0, defer=defer)
        return Block([load, word, *slots], branch_at=1, target_block=target, jump_load_at=0)
    else:  # a context swap: defer slots run first, then the context leaves
        if kind == "ctx_arb_voluntary":
            word = enc("ctx_arb", mode=isa.CTX_ARB_MODES["voluntary"], defer=defer)
        else:
            sigs = draw(st.sets(st.integers(1, 15), min_size=1, max_size=2))
            mode = draw(st.sampled_from(["all", "any"]))
            # signal ourselves (or a neighbour context) first, so most waits end
            sig = min(sigs)
            raise_it = [immed(SCRATCH, (sig << 3) | draw(st.integers(0, 7))),
                        csr_wr("SAME_ME_SIGNAL", SCRATCH)]
            word = enc("ctx_arb", mode=isa.CTX_ARB_MODES[mode],
                       sigs=sum(1 << s for s in sigs), defer=defer)
            return Block([*raise_it, word, *slots])
        return Block([word, *slots])
    return Block([word, *slots], branch_at=0, target_block=target)


@st.composite
def program(draw, max_blocks: int = 24, commands: bool = False) -> tuple[list[int], int]:
    """(words, ctx_mode); with ``commands``, memory and hash commands among the blocks."""
    ctx_mode = draw(st.sampled_from([8, 8, 4]))
    per_ctx = 128 // ctx_mode
    n = draw(st.integers(1, max_blocks))
    blocks = [draw(block(per_ctx, i, n, commands)) for i in range(n)]
    prologue = [immed(SCRATCH, LM0_BASE), csr_wr("ACTIVE_LM_ADDR_0", SCRATCH),
                immed(SCRATCH, LM1_BASE), csr_wr("ACTIVE_LM_ADDR_1", SCRATCH), nop(), nop(),
                nop()]
    starts, pc = [], len(prologue)
    for b in blocks:
        starts.append(pc)
        pc += len(b.words)
    starts.append(pc)  # the final kill
    words = list(prologue)
    for index, b in enumerate(blocks):
        ws = list(b.words)
        if b.branch_at >= 0:
            ins, fields = isa.decode(ws[b.branch_at])
            fields["target"] = starts[b.target_block]
            ws[b.branch_at] = isa.encode(ins.opcode, fields)
        if b.loop_from >= 0:
            ins, fields = isa.decode(ws[b.loop_from])
            fields["target"] = starts[index] + b.loop_to
            ws[b.loop_from] = isa.encode(ins.opcode, fields)
        if b.jump_load_at >= 0:
            ins, fields = isa.decode(ws[b.jump_load_at])
            fields["value"] = starts[b.target_block]
            ws[b.jump_load_at] = isa.encode(ins.opcode, fields)
        words += ws
    words += epilogue()
    words.append(kill())
    return words, ctx_mode


def epilogue() -> list[int]:
    """Make state the comparison cannot read from the model visible in transfer registers:
    LM_ADDR 0/1, CRC_REMAINDER, BYTE_INDEX, and the CAM's tags and states."""
    out = []
    for i, csr in enumerate(("ACTIVE_LM_ADDR_0", "ACTIVE_LM_ADDR_1", "CRC_REMAINDER",
                             "BYTE_INDEX")):
        out += [csr_rd(csr), immed(OPND["xfer_s"] + i, 0)]
    for entry in range(16):
        out.append(enc("cam_read_tag", op=isa.CAM_OPS["cam_read_tag"],
                       dest=OPND["xfer_d"] + entry, src=OPND["imm"] + entry, state=0))
    for entry in range(12):
        out.append(enc("cam_read_state", op=isa.CAM_OPS["cam_read_state"],
                       dest=OPND["xfer_s"] + 4 + entry, src=OPND["imm"] + entry, state=0))
    return out


def init_state(seed: int, ctx_mode: int, lm_words: int) -> InitState:
    """Registers and local memory filled from a seed: half interesting values, half random."""
    rng = random.Random(seed)

    def value() -> int:
        return rng.choice(INTERESTING) if rng.random() < 0.5 else rng.getrandbits(32)

    per_ctx = 128 // ctx_mode
    count = {c.name: c.count for c in isa.OPERAND_CLASSES}  # n$ has 16 codes in either mode
    regs = tuple((ctx, OPND[cls] + i, value())
                 for ctx in range(ctx_mode) for cls in ("gpr_a", "gpr_b", "xfer_s", "xfer_d", "nn")
                 for i in range(min(per_ctx, count[cls])))
    lm = tuple((i, value()) for i in range(lm_words))
    return InitState(regs=regs, lm=lm)
