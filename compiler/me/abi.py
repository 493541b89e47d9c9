"""The contracts between the ME backend's parts that are data: the body ABI (back end ->
dispatch loop) and the ME mapping (link -> report, graph, runtime).  docs/me-backend.md
explains them."""

from __future__ import annotations

from dataclasses import dataclass, field

BODY_ENTRY = "body_entry"
BODY_EXIT = "body_exit"
LABEL_PREFIX = "b_"
META_DRAM_ADDR = 12        # LM metadata word: DRAM byte address of packet byte 0
WINDOW_MAX_BYTES = 56      # $$0..$$13; $$14, $$15 are the body's for other packet bytes


@dataclass(frozen=True)
class BodyABI:
    """What the dispatch loop lends the compiled body (docs/me-backend.md, "The body")."""

    gprs_a: tuple[int, ...] = tuple(range(12))     # a0..a11
    gprs_b: tuple[int, ...] = tuple(range(12))     # b0..b11
    signals: tuple[int, ...] = tuple(range(1, 11))  # 1..10
    spill_words: int = 16                           # *l$index0[0..15]
    window_max_bytes: int = WINDOW_MAX_BYTES
    xfer_regs: int = 16                             # SRAM transfer registers $0..xfer_regs-1
    # Where the header window is (docs/datapath.md, "The receive stage on the chip"): None,
    # in the DRAM transfer registers (`$$k`, read from DRAM by the dispatch, the changed
    # quadwords written back by the body); a number w, in local memory `*l$index0[w + k]`
    # (filled by the dispatch from the RBUF, read and written there by the body, sent to the
    # TBUF by the dispatch)
    header_lm_word: int | None = None

    def header_word(self, k: int) -> str:
        """The operand that holds header word k."""
        if self.header_lm_word is None:
            return f"$${k}"
        return f"*l$index0[{self.header_lm_word + k}]"


# Buffer operations and receive stages in a body for link/dispatch/pool.uc (docs/datapath.md,
# "Receive stages on the chip").  The body's code names these pool.h numbers (the buffers'
# layout and freelists, link.media's Layout), reads and writes these metadata words, and
# calls this dispatch label to pass the port's receive turn (return address in RX_TURN_RET,
# a dispatch register the body never allocates).
# (with values of the ixp2800 platforms, for assembling a body alone: report.wrap_body;
# link/pool.py writes the real ones into pool.h)
POOL_NAMES = {"K_DATA": 0x80, "BUF_SHIFT": 11, "FRAME_BYTES_MAX": 1920, "RX_FL_CHANNEL": 0,
              "FREELIST_QUEUE": 0, "ELEMENT_SHIFT": 7}
META_HANDLE = 13           # the packet's buffer (0: none); pool.uc sends its tail, frees it
META_RX_ELEMENT = 14       # the mpacket's RBUF element | 1 << 16, held for buffer.store;
                           # bit 31: a store of it in flight (RX_STORE_SIGNAL); bit 30: kept
                           # for a buffer's window (buffer.store at 0: RX_KEEP_DESC_BYTE)
RX_KEEP_DESC_BYTE = 28     # the buffer descriptor's word (SRAM, at the handle; 32 bytes,
                           # link.media Layout.desc_bytes) naming the RBUF element that holds
                           # the buffer's window (element | 1 << 16; 0: none).  The pool
                           # mapping writes only LW1..LW3 of a descriptor (exceptions)
META_TBUF_MORE = 15        # TBUF elements the packet needs - 1
RX_STORE_SIGNAL = 14       # pool.uc's SIG_IO: a buffer.store in flight at the body's exit
RX_TURN_LABEL = "rx_turn_pass"
RX_TURN_TAKE_LABEL = "rx_turn_take"   # a stage with media.turn_begin() takes its turn there
RX_TURN_RET = "a14"

# The compiled data path's body (docs/datapath.md): the window in local memory after the two
# spill words, $14 and $15 left to the receive status the MSF autopushes at any time.
LM_WINDOW_ABI = BodyABI(spill_words=2, xfer_regs=14, header_lm_word=2)


@dataclass(frozen=True)
class MEAssignment:
    """One ME of a mapped pipeline."""

    me: int                         # ME index 0..15
    role: str                       # "rx", "fwd", "tx"
    stages: tuple[str, ...] = ()    # MBL stages (blocks) it runs; media stages: ()
    reads: tuple[str, ...] = ()     # "port 0", "ring 2", "nn 3" ...
    writes: tuple[str, ...] = ()
    threads: int = 8
    image: str = ""                 # the source it runs, e.g. "rx_eth.uc", "fwd.uc + ipv4_fwd"


@dataclass(frozen=True)
class Mapping:
    """A pipeline placed on MEs (what `npkit graph` draws)."""

    pipeline: str
    ports: tuple[int, ...]
    mes: tuple[MEAssignment, ...] = field(default_factory=tuple)
