"""Runs a compiled body on the simulated chip inside a small hand-written dispatch loop.

The dispatch (one ME, 1..8 contexts, each with its own packet): LM_ADDR_1 -> the context's
16 metadata words (filled by the host), LM_ADDR_0 -> its 16-word spill area, the header
window read from DRAM into $$0.., then `br[body_entry#]`.  At `body_exit#` it records
ACTIVE_LM_ADDR_0 (meta word 13, to check the body restored it), waits a DRAM round trip
(so any command the body left in flight completes) and records in meta word 14 the
signals 1..10 still pending (must be 0), then `ctx_arb[kill]`.  The host reads back the
packet bytes, the metadata and the memories.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from npkit.compiler.uc import assemble_text
from npkit.sim import Chip, ChipConfig

META_WORDS = 16
# the harness' local-memory areas sit above the program's `in local` memories (words < 384)
META_BASE = 384         # LM words 384 + 16 * ctx
SPILL_BASE = 512        # LM words 512 + 16 * ctx
PKT_BASE = 0x10000      # DRAM byte address of context c's packet: PKT_BASE + c * PKT_STRIDE
PKT_STRIDE = 0x1000
LM_ADDR_WORD = 13       # dispatch-private meta words used by the harness
PENDING_WORD = 14


def dispatch(body_uc: str, window_bytes: int, threads: int) -> str:
    header = (f"    dram[read, $$0, *l$index1[12], 0, {window_bytes // 8}], ctx_swap[11]\n"
              if window_bytes else "")
    checks = "".join(f"    br_!signal[{s}, nosig{s}#]\n    alu[b13, b13, OR, 1]\n"
                     f"nosig{s}#:\n    alu_shf[b13, --, B, b13, <<1]\n" for s in range(1, 11))
    return f""".me 0
.ctx_mode 8
    local_csr_rd[ACTIVE_CTX_STS]
    immed[a12, 0]
    alu[a12, a12, AND, 7]
    alu[--, a12, -, {threads}]
    bcc[go#]
    ctx_arb[kill]
go#:
    alu_shf[a13, --, B, a12, <<6]
    immed[b12, {4 * META_BASE}]
    alu[b12, a13, +, b12]
    local_csr_wr[ACTIVE_LM_ADDR_1, b12]
    immed[b12, {4 * SPILL_BASE}]
    alu[b12, a13, +, b12]
    local_csr_wr[ACTIVE_LM_ADDR_0, b12]
    nop
    nop
    nop
{header}    br[body_entry#]
{body_uc}
body_exit#:
    local_csr_rd[ACTIVE_LM_ADDR_0]
    immed[a14, 0]
    alu[*l$index1[{LM_ADDR_WORD}], --, B, a14]
    dram[read, $$14, *l$index1[12], 0, 1], ctx_swap[12]
    immed[b13, 0]
{checks}    alu[*l$index1[{PENDING_WORD}], --, B, b13]
    ctx_arb[kill]
"""


@dataclass
class Context:
    """One context's input: packet bytes and metadata words (word 12 is set here)."""

    packet: bytes
    meta: list[int] = field(default_factory=lambda: [0] * META_WORDS)


@dataclass
class Result:
    packets: list[bytes]
    metas: list[list[int]]
    sram: np.ndarray           # channel 0 words
    scratch: np.ndarray
    local: np.ndarray          # the ME's local memory
    cycles: int
    instructions: int

    def check_clean(self) -> None:
        """The body restored LM_ADDR_0 and left no signal pending."""
        for c, meta in enumerate(self.metas):
            assert meta[LM_ADDR_WORD] == 4 * (SPILL_BASE + 16 * c), "LM_ADDR_0 not restored"
            assert meta[PENDING_WORD] == 0, f"signals pending at exit: {meta[PENDING_WORD]:#x}"


def small_config(sram_channel_bytes: int = 1 << 20) -> ChipConfig:
    """Small memories (fast to create); compiled MBL programs place memories across the
    four SRAM channels and need 64 MB channels."""
    cfg = ChipConfig.load("ixp2800")
    raw = cfg.raw
    raw["sram"]["channel_bytes"] = sram_channel_bytes
    raw["dram"]["bytes"] = 1 << 20
    return cfg


def build(body_uc: str, window_bytes: int, threads: int = 1):  # -> Image
    return assemble_text(dispatch(body_uc, window_bytes, threads), "harness.uc")


def run(image, window_bytes: int, contexts: list[Context],  # noqa: ANN001
        sram: dict[int, int] | None = None, scratch: dict[int, int] | None = None,
        local: dict[int, int] | None = None, max_cycles: int = 2_000_000,
        sram_channel_bytes: int = 1 << 20) -> Result:
    chip = Chip(small_config(sram_channel_bytes), seed=1)
    chip.load(image)
    dram = chip.dram()
    lm = chip.local_memory(0)
    for c, ctx in enumerate(contexts):
        base = PKT_BASE + c * PKT_STRIDE
        dram[base:base + len(ctx.packet)] = np.frombuffer(ctx.packet, dtype=np.uint8)
        meta = list(ctx.meta) + [0] * (META_WORDS - len(ctx.meta))
        meta[12] = base
        lm[META_BASE + 16 * c:META_BASE + 16 * c + META_WORDS] = meta
    for w, v in (sram or {}).items():
        chip.sram(0)[w] = v
    for w, v in (scratch or {}).items():
        chip.scratch()[w] = v
    for w, v in (local or {}).items():
        lm[w] = v
    start = chip.now if hasattr(chip, "now") else 0
    chip.run(until_idle=True, quiet_cycles=max_cycles)
    now = chip.now if hasattr(chip, "now") else 0
    packets = [bytes(dram[PKT_BASE + c * PKT_STRIDE:PKT_BASE + c * PKT_STRIDE
                          + len(ctx.packet)]) for c, ctx in enumerate(contexts)]
    metas = [[int(x) for x in lm[META_BASE + 16 * c:META_BASE + 16 * c + META_WORDS]]
             for c in range(len(contexts))]
    return Result(packets, metas, np.array(chip.sram(0)), np.array(chip.scratch()),
                  np.array(lm), now - start, chip.instructions_retired)
