"""CAM, CRC, mul_step, hash, local CSRs, local memory and next-neighbour registers."""

from __future__ import annotations

import random
import zlib

import pytest
from coreprog import (
    LM0,
    LM0_INC,
    LM1_INC,
    MASK32,
    NN,
    NN_RING,
    NONE,
    A,
    B,
    X,
    alu,
    chip_config,
    csr_rd,
    csr_wr,
    ctx_arb,
    enc,
    immed,
    kill,
    load_out,
    make_core,
    mem,
    single_context,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.sim import _core, isa
from npkit.sim._core import SimFault

COVERED = frozenset(
    set(isa.CAM_OPS) | {"crc_be", "crc_le", "mul_step", "local_csr_rd", "local_csr_wr"}
    | set(isa.HASH_SIZES)
    | {f"CRC_KINDS:{k}" for k in isa.CRC_KINDS}
    | {f"MUL_STEPS:{k}" for k in isa.MUL_STEPS}
    | {f"HASH_SIZES:{k}" for k in isa.HASH_SIZES}
    | {f"LOCAL_CSRS:{k}" for k in (
        "CTX_ENABLES", "ACTIVE_CTX_STS", "ACTIVE_LM_ADDR_0", "ACTIVE_LM_ADDR_1", "TIMESTAMP_LOW",
        "TIMESTAMP_HIGH", "PSEUDO_RANDOM_NUMBER", "CRC_REMAINDER", "NN_PUT", "NN_GET",
        "CTX_ARB_CNTL", "MAILBOX0", "MAILBOX1", "MAILBOX2", "MAILBOX3")}
)

u32 = st.integers(0, MASK32)


@pytest.fixture(scope="module")
def core():
    return make_core()


def run(core, words, regs=None, ctx=0):
    core.load(0, single_context(words))
    for code, value in (regs or {}).items():
        core.write_reg(0, ctx, code, value)
    assert core.run(1_000_000, until_idle=True) == "idle"
    return core


def read_csr_into(dest: int, csr: str) -> list[int]:
    return [csr_rd(csr), immed(dest, 0)]


# ---------------------------------------------------------------- CAM
def cam(op: str, dest: int = NONE, src: int = NONE, state: int = 0) -> int:
    return enc("cam", op=isa.CAM_OPS[op], dest=dest, src=src, state=state)


class CamModel:
    def __init__(self) -> None:
        self.entries = [(0, 0, False)] * 16
        self.lru = list(range(16))

    def touch(self, e: int) -> None:
        self.lru.remove(e)
        self.lru.append(e)

    def lookup(self, tag: int) -> int:
        for e, (t, s, valid) in enumerate(self.entries):
            if valid and t == tag:
                self.touch(e)
                return s << 8 | 1 << 7 | e << 3
        return self.lru[0] << 3

    def write(self, e: int, tag: int, state: int) -> None:
        self.entries[e] = (tag, state, True)
        self.touch(e)


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 15), st.integers(0, 5),
                              st.integers(0, 15)), min_size=1, max_size=14))
def test_cam_lookup_write_lru(core, ops):
    model, words, expected = CamModel(), [cam("cam_clear")], []
    for k, (is_write, entry, tag, state) in enumerate(ops):
        if is_write:
            words.append(cam("cam_write", dest=A(entry), src=B(tag), state=state))
            model.write(entry, tag + 100, state)
        else:
            words.append(cam("cam_lookup", dest=X(k), src=B(tag)))
            expected.append((k, model.lookup(tag + 100)))
    regs = {A(i): i for i in range(16)} | {B(i): i + 100 for i in range(16)}
    # cam_lookup writes $x (out); read the out registers
    run(core, words, regs)
    for k, value in expected:
        assert core.read_xfer_out(0, 0, 0, k) == value


def test_cam_read_tag_state_and_write_state(core):
    words = [cam("cam_clear"), cam("cam_write", dest=A(3), src=B(0), state=9),
             cam("cam_write_state", dest=A(3), state=4),
             cam("cam_read_tag", dest=A(1), src=A(3)), cam("cam_read_state", dest=A(2), src=A(3)),
             cam("cam_lookup", dest=A(4), src=B(0))]
    run(core, words, {A(3): 3, B(0): 0xABCD1234})
    assert core.read_reg(0, 0, A(1)) == 0xABCD1234
    assert core.read_reg(0, 0, A(2)) == 4 << 8
    assert core.read_reg(0, 0, A(4)) == 4 << 8 | 1 << 7 | 3 << 3


def test_cam_clear_forgets_everything(core):
    words = [cam("cam_write", dest=A(3), src=B(0), state=1), cam("cam_clear"),
             cam("cam_lookup", dest=A(4), src=B(0))]
    run(core, words, {A(3): 3, B(0): 7})
    assert core.read_reg(0, 0, A(4)) == 0  # miss, LRU entry 0


# ---------------------------------------------------------------- CRC (reference: below)
def crc_msb_first(width: int, poly: int, init: int, data: bytes) -> int:
    reg, top, mask = init, 1 << (width - 1), (1 << width) - 1
    for byte in data:
        for i in range(7, -1, -1):
            feedback = bool(reg & top) ^ bool(byte >> i & 1)
            reg = (reg << 1) & mask
            if feedback:
                reg ^= poly
    return reg


def crc_reflected(poly_reflected: int, init: int, data: bytes) -> int:
    reg = init
    for byte in data:
        for i in range(8):
            feedback = (reg ^ (byte >> i)) & 1
            reg >>= 1
            if feedback:
                reg ^= poly_reflected
    return reg


def test_crc_references_match_the_catalogue():
    check = b"123456789"
    assert crc_msb_first(16, 0x1021, 0xFFFF, check) == 0x29B1          # CRC-16/CCITT-FALSE
    assert crc_msb_first(10, 0x233, 0, check) == 0x199                  # CRC-10/ATM
    assert crc_reflected(0x82F63B78, MASK32, check) ^ MASK32 == 0xE3069283  # CRC-32C
    assert crc_reflected(0xEDB88320, MASK32, check) ^ MASK32 == zlib.crc32(check)


CRC_REFERENCE = {
    "crc_32": lambda init, data: crc_reflected(0xEDB88320, init, data),
    "crc_iscsi": lambda init, data: crc_reflected(0x82F63B78, init, data),
    "crc_ccitt": lambda init, data: crc_msb_first(16, 0x1021, init & 0xFFFF, data),
    "crc_10": lambda init, data: crc_msb_first(10, 0x233, init & 0x3FF, data),
    "crc_5": lambda init, data: crc_msb_first(5, 0x05, init & 0x1F, data),
}


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(isa.CRC_KINDS)), le=st.booleans(),
       data=st.lists(u32, min_size=1, max_size=6), init=u32)
def test_crc(core, kind, le, data, init):
    words = [csr_wr("CRC_REMAINDER", A(7))]
    words += [enc("crc", kind=isa.CRC_KINDS[kind], le=int(le), dest=A(k), src=B(k))
              for k in range(len(data))]
    words += read_csr_into(A(8), "CRC_REMAINDER")
    run(core, words, {A(7): init} | {B(k): v for k, v in enumerate(data)})
    stream = b"".join(v.to_bytes(4, "little" if le else "big") for v in data)
    assert core.read_reg(0, 0, A(8)) == CRC_REFERENCE[kind](init, stream)
    assert [core.read_reg(0, 0, A(k)) for k in range(len(data))] == data  # dest = src


def test_crc_32_equals_zlib(core):
    data = bytes(range(32))
    words = [csr_wr("CRC_REMAINDER", A(7))]
    words += [enc("crc", kind=isa.CRC_KINDS["crc_32"], le=0, dest=NONE, src=B(k)) for k in range(8)]
    words += read_csr_into(A(8), "CRC_REMAINDER")
    regs = {A(7): MASK32} | {B(k): int.from_bytes(data[4 * k:4 * k + 4], "big") for k in range(8)}
    run(core, words, regs)
    assert core.read_reg(0, 0, A(8)) ^ MASK32 == zlib.crc32(data)


# ---------------------------------------------------------------- mul_step
SEQUENCES = {
    "24x8": (0xFFFFFF, 0xFF, ["24x8_start", "24x8_step1", "24x8_last"]),
    "16x16": (0xFFFF, 0xFFFF, ["16x16_start", "16x16_step1", "16x16_step2", "16x16_last"]),
    "32x32": (MASK32, MASK32, ["32x32_start", "32x32_step1", "32x32_step2", "32x32_step3",
                               "32x32_step4", "32x32_last", "32x32_last2"]),
}


def mul(step: str, dest: int = NONE, a: int = NONE, b: int = NONE) -> int:
    return enc("mul_step", step=isa.MUL_STEPS[step], dest=dest, a=a, b=b)


@settings(max_examples=60, deadline=None)
@given(size=st.sampled_from(sorted(SEQUENCES)), a=u32, b=u32)
def test_mul_step(core, size, a, b):
    mask_a, mask_b, steps = SEQUENCES[size]
    words = [mul(steps[0], a=A(0), b=B(0))] + [mul(s) for s in steps[1:-2]]
    if size == "32x32":
        words += [mul(steps[-2], dest=A(1)), mul(steps[-1], dest=A(2))]
    else:
        words += [mul(steps[-2]), mul(steps[-1], dest=A(1))]
    run(core, words, {A(0): a, B(0): b})
    product = (a & mask_a) * (b & mask_b)
    assert core.read_reg(0, 0, A(1)) == product & MASK32
    if size == "32x32":
        assert core.read_reg(0, 0, A(2)) == product >> 32


def test_mul_step_out_of_sequence_is_illegal():
    core = make_core()
    core.load(0, single_context([mul("32x32_start", a=A(0), b=B(0)), mul("32x32_step2")]))
    with pytest.raises(SimFault) as info:
        core.run(1000)
    assert (info.value.kind, info.value.me, info.value.ctx, info.value.pc) == \
        ("illegal_instruction", 0, 0, 2)


# ---------------------------------------------------------------- hash unit
def clmul_mod(key: int, mult: int, poly: int, width: int) -> int:
    """(key * mult) mod (x^width + poly) over GF(2), written from the definition."""
    product = 0
    for i in range(width):
        if key >> i & 1:
            product ^= mult << i
    full = (1 << width) | poly
    for bit in range(2 * width - 1, width - 1, -1):
        if product >> bit & 1:
            product ^= full << (bit - width)
    return product


@settings(max_examples=12, deadline=None)
@given(size=st.sampled_from(sorted(isa.HASH_SIZES)), data=st.data())
def test_hash_unit(size, data):
    width = {"hash_48": 48, "hash_64": 64, "hash_128": 128}[size]
    nwords = 4 if width == 128 else 2
    mult = data.draw(st.integers(0, (1 << width) - 1))
    poly = data.draw(st.integers(0, (1 << width) - 1))
    count = data.draw(st.integers(1, 3))
    keys = [data.draw(st.integers(0, (1 << width) - 1)) for _ in range(count)]
    cfg = chip_config()
    cfg["hash"][f"multiplier_{width}"] = mult
    cfg["hash"][f"polynomial_{width}"] = poly
    core = _core.Core(cfg, 1)
    words = []
    for k, key in enumerate(keys):
        for j in range(nwords):
            words += load_out(X(k * nwords + j), key >> (32 * (nwords - 1 - j)) & MASK32)
    words.append(enc("hash", size=isa.HASH_SIZES[size], xfer=0, count=count - 1, sig=1, swap=1))
    run(core, words)
    for k, key in enumerate(keys):
        got = 0
        for j in range(nwords):
            got = got << 32 | core.read_reg(0, 0, X(k * nwords + j))
        assert got == clmul_mod(key, mult, poly, width)


# ---------------------------------------------------------------- local CSRs
def test_ctx_enables_and_active_ctx_sts(core):
    words = read_csr_into(A(1), "CTX_ENABLES") + read_csr_into(A(2), "ACTIVE_CTX_STS")
    core.load(3, words + [kill()], 4)
    core.run(1000, until_idle=True)
    number = chip_config()["me"]["numbers"][3]
    for ctx in range(4):
        assert core.read_reg(3, ctx, A(1)) == (1 << 31) | (0x0F << 8)
        assert core.read_reg(3, ctx, A(2)) == ctx | number << 3


def test_timestamp_counts_cycles_over_16():
    core = make_core()
    core.load(0, single_context([immed(A(0), 0)] * 100 + read_csr_into(A(1), "TIMESTAMP_LOW")
                                + read_csr_into(A(2), "TIMESTAMP_HIGH")))
    core.run(10_000, until_idle=True)
    # single_context: 1 + 100 + 1 cycles before the read executes
    assert core.read_reg(0, 0, A(1)) == 102 // 16
    assert core.read_reg(0, 0, A(2)) == 0


def test_pseudo_random_depends_only_on_the_seed():
    words = single_context(read_csr_into(A(1), "PSEUDO_RANDOM_NUMBER")
                           + read_csr_into(A(2), "PSEUDO_RANDOM_NUMBER"))

    def draw(seed: int) -> tuple[int, int]:
        core = make_core(seed=seed)
        core.load(0, words)
        core.run(1000, until_idle=True)
        return core.read_reg(0, 0, A(1)), core.read_reg(0, 0, A(2))

    assert draw(5) == draw(5)
    assert draw(5) != draw(6)
    assert draw(5)[0] != draw(5)[1]


def test_crc_remainder_is_per_context(core):
    core.load(0, [csr_wr("CRC_REMAINDER", A(0)), ctx_arb(mode="voluntary")]
              + read_csr_into(A(1), "CRC_REMAINDER") + [kill()])
    for ctx in range(8):
        core.write_reg(0, ctx, A(0), 1000 + ctx)
    core.run(10_000, until_idle=True)
    assert [core.read_reg(0, c, A(1)) for c in range(8)] == [1000 + c for c in range(8)]


@pytest.mark.parametrize("csr", ["MAILBOX0", "MAILBOX1", "MAILBOX2", "MAILBOX3", "CTX_ARB_CNTL"])
def test_plain_csrs_read_back(core, csr):
    run(core, [csr_wr(csr, B(0))] + read_csr_into(A(1), csr), {B(0): 0x5A5A1234})
    assert core.read_reg(0, 0, A(1)) == 0x5A5A1234


@pytest.mark.parametrize("which", [0, 1])
def test_lm_addr_write_takes_effect_after_the_delay(core, which):
    delay = chip_config()["me"]["lm_addr_delay"]
    lm = core.local_memory(0)
    lm[0:4] = [10, 11, 12, 13]
    lm[100:104] = [20, 21, 22, 23]
    lm_operand = LM0(0) if which == 0 else LM0(0) + 0x10  # *l$index1[0]
    csr = f"ACTIVE_LM_ADDR_{which}"
    reads = [alu(A(k), NONE, "B", lm_operand) for k in range(delay + 2)]
    run(core, [csr_wr(csr, B(0))] + reads + read_csr_into(A(10), csr), {B(0): 400})
    got = [core.read_reg(0, 0, A(k)) for k in range(delay + 2)]
    assert got == [10] * delay + [20, 20]
    assert core.read_reg(0, 0, A(10)) == 400


def test_lm_post_increment_and_index(core):
    lm = core.local_memory(0)
    lm[50:54] = [1, 2, 3, 4]
    words = [csr_wr("ACTIVE_LM_ADDR_0", B(0)), csr_wr("ACTIVE_LM_ADDR_1", B(1))]
    words += [immed(A(9), 0)] * 3
    words += [alu(A(1), NONE, "B", LM0_INC), alu(A(2), NONE, "B", LM0_INC),
              alu(A(3), NONE, "B", LM0(1)), alu(LM1_INC, NONE, "B", A(1))]
    run(core, words, {B(0): 200, B(1): 300})
    assert [core.read_reg(0, 0, A(k)) for k in (1, 2, 3)] == [1, 2, 4]
    assert int(lm[75]) == 1


def test_nn_registers_are_written_by_the_previous_me():
    core = make_core()
    core.load(1, [ctx_arb(1), alu(A(1), NONE, "B", NN(2)), kill()])
    words = [alu(NN(2), NONE, "B", B(0)), csr_wr("NEXT_NEIGHBOR_SIGNAL", B(1))]
    core.load(0, single_context(words))
    core.write_reg(0, 0, B(0), 0xCAFE)
    core.write_reg(0, 0, B(1), 0 | 1 << 3)
    with pytest.raises(SimFault):  # ME 1 contexts 1..7 wait forever
        core.run(10_000)
    assert core.read_reg(1, 0, A(1)) == 0xCAFE


def test_nn_ring_put_get():
    core = make_core()
    core.load(1, [ctx_arb(1)] + [alu(A(k), NONE, "B", NN_RING) for k in range(1, 4)]
              + read_csr_into(A(4), "NN_GET") + read_csr_into(A(5), "NN_PUT") + [kill()])
    core.load(0, single_context([alu(NN_RING, NONE, "B", B(k)) for k in range(3)]
                                + [csr_wr("NEXT_NEIGHBOR_SIGNAL", B(5))]))
    for k in range(3):
        core.write_reg(0, 0, B(k), 100 + k)
    core.write_reg(0, 0, B(5), 1 << 3)
    with pytest.raises(SimFault):
        core.run(10_000)
    assert [core.read_reg(1, 0, A(k)) for k in (1, 2, 3, 4, 5)] == [100, 101, 102, 3, 3]


def test_scratch_reads_are_independent_of_neighbours(core):
    # NN writes do not touch this ME's own registers
    run(core, [alu(NN(1), NONE, "B", B(0))], {B(0): 9})
    assert core.read_reg(0, 0, NN(1)) == 0
    assert core.read_reg(1, 0, NN(1)) == 9


def test_random_programs_do_not_crash():
    # structural robustness: random legal ALU programs run without faults
    rng = random.Random(3)
    ops = sorted(isa.ALU_OPS)
    words = [alu(A(rng.randrange(16)), A(rng.randrange(16)), rng.choice(ops), B(rng.randrange(16)))
             for _ in range(200)]
    core = make_core()
    core.load(0, words + [kill()])
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.instructions_retired == 8 * 201


def test_mem_helper_is_used():
    assert mem("sram", "read", 0, NONE, NONE) >> isa.PAYLOAD_BITS == isa.BY_MNEMONIC["sram"].opcode


def test_four_context_mode_gives_32_registers_to_contexts_0_to_3():
    core = make_core()
    words = [csr_rd("ACTIVE_CTX_STS"), immed(A(20), 0), alu(B(31), A(20), "+", B(0)), kill()]
    core.load(0, words, 4)
    for ctx in range(4):
        core.write_reg(0, ctx, B(0), 100)
    assert core.run(1000, until_idle=True) == "idle"
    number = chip_config()["me"]["numbers"][0]
    assert [core.read_reg(0, c, B(31)) for c in range(4)] == \
        [100 + (c | number << 3) for c in range(4)]
    assert core.counters()["mes"][0]["instructions"] == 4 * 4
