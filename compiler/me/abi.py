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
