"""The ME backend's linker: a compiled body + the dispatch loop + router4's media stages ->
ME images, a memory map and the runtime's layout (docs/me-backend.md, "Dispatch and link").

The program's memories keep the addresses the checker gave them (SRAM and scratch byte
address = 4 x MemoryInfo.word_offset, `in local` memories at local-memory word
word_offset).  The runtime's own structures go where those are not: buffer descriptors and
freelists on SRAM channels (and offsets) free of program memories, the scratch rings and
counters after the program's scratch memories, the dispatch's per-context local-memory
areas after the program's `in local` memories.  The numbers are written as a generated
header (`layout.h`) that rx_eth.uc, tx_eth.uc (through router4.h's #ifndef overrides) and
dispatch/fwd.uc include.

Mapping (two ports, N = `fwd_mes_per_port`): ME 0, 1 receive (rx_eth.uc), MEs
2 + N p .. 2 + N p + N - 1 forward port p (fwd.uc + the body: a chain of N adjacent MEs
joined by next-neighbour rings), ME 6, 7 transmit (tx_eth.uc; 2 + 2N, 3 + 2N when N > 2).
Rings: RX ring base + N p + i feeds ME i of port p's chain (base 0, or 7 when the 2N RX
rings do not fit below router4's TX rings 4 + q and exception ring 6).

Four ports (N = 2 only: 4 + 4N + 4 <= 16 MEs, and rx_eth.uc puts port p on rings 2p,
2p + 1): ME 0..3 receive, 4..11 forward, 12..15 transmit (port = ME & 3); RX rings 0..7,
TX rings 8 + q, exception ring 12; 64 buffers per port (the
scratch holds 4 x 2 x 128 RX, 4 x 256 TX and 512 exception words, not the 5,120 words 128
buffers need), two ports' freelists per SRAM channel (queues 0, 1) and a TBUF partition of
16 elements per port.
"""

from __future__ import annotations

import copy
import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.compiler.mbl.sema import Program
from npkit.compiler.mbl.types import (
    META_CODE,
    META_FIELDS,
    META_VERDICT,
    META_WORDS,
    VERDICT_DROP,
    VERDICT_EXCEPTION,
    VERDICT_FORWARD,
)
from npkit.compiler.me.abi import (
    BODY_ENTRY,
    META_DRAM_ADDR,
    WINDOW_MAX_BYTES,
    Mapping,
    MEAssignment,
)
from npkit.compiler.me.wir import Block, Function, MetaRead, MetaWrite, Ret
from npkit.compiler.uc import Image, assemble_file
from npkit.microblocks.uc import router4
from npkit.runtime.manifest import FreelistSpec
from npkit.sim.config import ChipConfig, Port

DISPATCH_DIR = Path(__file__).resolve().parent / "dispatch"
MEDIA_DIR = router4.FOLDER
CHANNEL_SHIFT = 26                  # SRAM byte address bits 27..26: the channel
BIG_CHANNEL_BYTES = 1 << CHANNEL_SHIFT
RX_MES, FWD_FIRST_ME, TX_FIRST_ME = (0, 1), 2, 6
FOUR_PORTS = 4
MAX_FWD_MES_PER_PORT_4 = 2          # 4 receive + 4 transmit + 4 N forwarding MEs <= 16
FWD_MES_PER_PORT = 4                # the default: the most the chip's scratch holds rings for
MAX_FWD_MES_PER_PORT = 4            # 2N + 3 rings of 16; N RX rings of 256 words per port
CONTEXTS = 8
LM_WORDS_PER_CONTEXT = 32           # 16 metadata words (LM_ADDR_1) + 16 spill (LM_ADDR_0)
LM_SHARED_WORDS = 16                # the forwarding ME's shared count (fwd.uc), aligned
DESC_ALIGN = 0x1000
# counter index of the drops the program did not name (fwd.uc): 0 and reasons + 1
NO_VERDICT, BAD_PORT = "no_verdict", "bad_port"


class LinkError(ValueError):
    """The program and the runtime's structures do not fit the chip together."""


@dataclass(frozen=True)
class MemoryPlacement:
    """One MBL memory on the chip: `address` is the byte address in its space (SRAM:
    channel << 26 | offset; scratch; local memory, in every forwarding ME)."""

    name: str
    space: str
    address: int
    bytes: int

    @property
    def word(self) -> int:
        return self.address // 4


@dataclass(frozen=True)
class RingPlacement:
    number: int
    base_word: int
    size_words: int
    what: str


@dataclass(frozen=True)
class RuntimeLayout:
    """Where the runtime's structures are for one linked program."""

    layout: router4.Layout              # router4's numbers, the moved ones replaced
    rings: tuple[RingPlacement, ...]
    freelists: tuple[FreelistSpec, ...]
    drop_cnt_base: int                  # scratch byte address of drop counter index 0
    drop_counters: int
    dispatch_lm_word: int               # context c's metadata: word + 32 c; spill: + 16
    fwd_mes: tuple[int, ...]            # port p's chain: fwd_mes[N p .. N p + N - 1]
    rx_mes: tuple[int, ...]
    tx_mes: tuple[int, ...]
    fwd_mes_per_port: int = 2
    rx_rings: tuple[tuple[int, ...], ...] = ()    # port -> its RX rings, chain order

    @property
    def shared_lm_word(self) -> int:
        """The forwarding MEs' shared local-memory word (after the context areas)."""
        return self.dispatch_lm_word + CONTEXTS * LM_WORDS_PER_CONTEXT

    def chain(self, port: int) -> tuple[int, ...]:
        """The forwarding MEs of an input port, in chain order."""
        n = self.fwd_mes_per_port
        return self.fwd_mes[n * port:n * port + n]


@dataclass(frozen=True)
class LinkedImage:
    name: str
    image: Image
    mes: tuple[int, ...]


@dataclass
class LinkedProgram:
    program: Program
    pipeline: str
    window_bytes: int
    ports: int
    chip: str
    images: tuple[LinkedImage, ...]
    memory_map: tuple[MemoryPlacement, ...]
    runtime: RuntimeLayout
    header: str                                  # the generated layout.h
    body: str
    chip_overrides: dict[str, dict[str, Any]]
    reasons: dict[int, str]                      # drop counter index -> reason name
    exceptions: dict[int, str]                   # exception code -> name (enum Exc)
    mapping: Mapping
    symbols: dict[str, int] = field(default_factory=dict)   # fwd image labels
    port_kinds: tuple[str, ...] = ()             # Port.from_kind names; () = all 10GbE

    def chip_config(self) -> ChipConfig:
        """The chip this program runs on: the preset with the overrides, `ports` ports of
        `port_kinds` (10GbE by default)."""
        base = ChipConfig.load(self.chip)
        raw = copy.deepcopy(base.raw)
        for section, values in self.chip_overrides.items():
            raw.setdefault(section, {}).update(values)
        cfg = ChipConfig(raw=raw, source=f"{base.source} (linked {self.pipeline})")
        cfg.ports = [Port.from_kind(kind) for kind in self.kinds()]
        return cfg

    def kinds(self) -> tuple[str, ...]:
        """Every port's kind, in port order."""
        return self.port_kinds or ("10gbe",) * self.ports

    def memory(self, name: str) -> MemoryPlacement:
        return next(m for m in self.memory_map if m.name == name)


# --------------------------------------------------------------------------- memory map
def memory_map(program: Program) -> tuple[MemoryPlacement, ...]:
    return tuple(MemoryPlacement(m.name, m.space, 4 * m.word_offset, 4 * m.words)
                 for m in program.memories.values())


def _space_end(placements: tuple[MemoryPlacement, ...], space: str) -> int:
    """First byte after the program's memories of a space (0 when it has none)."""
    return max((m.address + m.bytes for m in placements if m.space == space), default=0)


def _align(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _sram_channel_bytes(placements: tuple[MemoryPlacement, ...], cfg: ChipConfig) -> int:
    end = _space_end(placements, "sram")
    if end <= cfg.sram_channel_bytes:
        return cfg.sram_channel_bytes
    if end > cfg.sram_channels * BIG_CHANNEL_BYTES:
        raise LinkError(f"the program's SRAM memories need {end:#x} bytes, more than "
                        f"{cfg.sram_channels} channels of 64 MB")
    return BIG_CHANNEL_BYTES


def _channel_ends(placements: tuple[MemoryPlacement, ...], channels: int) -> list[int]:
    """Per SRAM channel, the first offset after every program memory on it."""
    ends = [0] * channels
    for m in placements:
        if m.space != "sram" or not m.bytes:
            continue
        first, last = m.address, m.address + m.bytes - 1
        for ch in range(first >> CHANNEL_SHIFT, (last >> CHANNEL_SHIFT) + 1):
            top = min(last, ((ch + 1) << CHANNEL_SHIFT) - 1) - (ch << CHANNEL_SHIFT) + 1
            ends[ch] = max(ends[ch], top)
    return ends


def _place_descriptors(placements: tuple[MemoryPlacement, ...], cfg: ChipConfig,
                       channel_bytes: int, channels: int, ports: int, lay: router4.Layout
                       ) -> tuple[int, int]:
    """(first channel, descriptor base): the freelists on `channels` adjacent channels from
    first (port p on first + p, or first + p // 2 when two ports share a channel), port p's
    descriptors at base + p x (buffers x 32), clear of the program's memories.  The
    lowest base wins (router4's own 0x10000 when the channels are free)."""
    ends = _channel_ends(placements, cfg.sram_channels)
    size = ports * lay.bufs_per_port * lay.desc_bytes
    options = []
    for first in range(cfg.sram_channels - channels + 1):
        used = ends[first:first + channels]
        base = max(lay.buf_desc_base, _align(max(used), DESC_ALIGN))
        if base + size <= channel_bytes:
            options.append((base, first))
    if not options:
        raise LinkError("no SRAM channel has room for the buffer descriptors beside the "
                        "program's SRAM memories")
    base, first = min(options)
    return first, base


def ring_numbers(ports: int, per_port: int, lay: router4.Layout) -> router4.Layout:
    """router4's layout with the RX rings moved past the exception ring when N RX rings
    per port do not fit below router4's TX rings (tx_eth.uc tests rings 4 and 5 by
    number, so those stay)."""
    if lay.rx_ring_base + ports * per_port <= lay.tx_ring_base:
        return lay
    return dataclasses.replace(lay, rx_ring_base=lay.exc_ring + 1)


def _place_scratch(placements: tuple[MemoryPlacement, ...], cfg: ChipConfig, ports: int,
                   reasons: int, lay: router4.Layout, per_port: int
                   ) -> tuple[list[RingPlacement], dict]:
    """Rings after the program's scratch memories, then the counters."""
    word = _align(_align(_space_end(placements, "scratch"), 4) // 4, 16)
    rings = []
    for p in range(ports):
        for i in range(per_port):
            rings.append(RingPlacement(lay.rx_ring_base + per_port * p + i, word,
                                       lay.rx_ring_words,
                                       f"RX ring of port {p}, forwarding ME {i}"))
            word += lay.rx_ring_words
    for q in range(ports):
        rings.append(RingPlacement(lay.tx_ring(q), word, lay.tx_ring_words, f"TX ring {q}"))
        word += lay.tx_ring_words
    rings.append(RingPlacement(lay.exc_ring, word, lay.exc_ring_words, "exception ring"))
    word += lay.exc_ring_words
    counters = {"cnt_rx_no_buffer": 4 * word, "cnt_rx_too_long": 4 * (word + ports),
                "cnt_tx_race": 4 * (word + 2 * ports), "drop_cnt_base": 4 * (word + 3 * ports)}
    end = word + 3 * ports + reasons + 2
    if 4 * end > cfg.scratch_bytes or max(r.number for r in rings) >= cfg.scratch_rings:
        raise LinkError(f"the program's scratch memories ({_space_end(placements, 'scratch')} "
                        f"bytes) leave no room for the runtime's rings and counters "
                        f"({4 * end} of {cfg.scratch_bytes} bytes needed)")
    return rings, counters


def _place_local(placements: tuple[MemoryPlacement, ...], cfg: ChipConfig) -> int:
    word = _align(_space_end(placements, "local") // 4, 16)
    need = CONTEXTS * LM_WORDS_PER_CONTEXT + LM_SHARED_WORDS
    if word + need > cfg.local_memory_words:
        raise LinkError(f"the program's local memories ({word} words) leave no room for "
                        f"the dispatch's {need} words of metadata, spill areas and shared "
                        f"count ({cfg.local_memory_words} words)")
    return word


def four_port_layout(cfg: ChipConfig, per_port: int) -> router4.Layout:
    """router4's layout re-planned for 4 ports: TX rings after the 4N RX rings, fewer
    buffers (the scratch), two freelists a channel (the SRAM channels the program leaves)."""
    lay = router4.LAYOUT
    tx_base = max(8, 4 * per_port)
    bufs = 64
    return dataclasses.replace(
        lay, ports=FOUR_PORTS, fwd_first_me=4, tx_first_me=12, bufs_per_port=bufs,
        rx_ring_base=0, tx_ring_base=tx_base, exc_ring=tx_base + FOUR_PORTS,
        rx_ring_words=max(cfg.ring_words_range[0], bufs * lay.rx_entry_words),
        tx_ring_words=max(cfg.ring_words_range[0], FOUR_PORTS * bufs),
        exc_ring_words=FOUR_PORTS * bufs * lay.exc_entry_words)


def _check_mapping(ports: int, per_port: int) -> None:
    if ports not in (2, FOUR_PORTS):
        raise LinkError(f"{ports} ports: the linker maps 2 or 4 (router4's media stages)")
    if ports == FOUR_PORTS and per_port != MAX_FWD_MES_PER_PORT_4:
        raise LinkError(f"fwd_mes_per_port={per_port} on 4 ports: only 2 (16 MEs: 4 receive "
                        "+ 4 transmit + 4 x 2 forwarding; rx_eth.uc puts port p on rings "
                        "2p, 2p + 1)")
    if not 1 <= per_port <= MAX_FWD_MES_PER_PORT:
        raise LinkError(f"fwd_mes_per_port={per_port}: 1..{MAX_FWD_MES_PER_PORT} (the "
                        f"scratch rings: {per_port} RX rings per port + TX + exception)")


def plan_runtime(program: Program, ports: int, cfg: ChipConfig, channel_bytes: int,
                 per_port: int = FWD_MES_PER_PORT) -> RuntimeLayout:
    _check_mapping(ports, per_port)
    placements = memory_map(program)
    four = ports == FOUR_PORTS
    base = four_port_layout(cfg, per_port) if four else ring_numbers(ports, per_port,
                                                                      router4.LAYOUT)
    channels = ports // 2 if four else ports     # 4 ports: two freelists a channel
    first, desc_base = _place_descriptors(placements, cfg, channel_bytes, channels, ports,
                                          base)
    rings, counters = _place_scratch(placements, cfg, ports, len(program.reasons.ids), base,
                                     per_port)
    freelists = tuple(
        FreelistSpec(channel=first + (p // 2 if four else p),
                     queue=p % 2 if four else base.freelist_queue,
                     descriptor_base=desc_base + p * base.bufs_per_port * base.desc_bytes,
                     descriptor_bytes=base.desc_bytes, count=base.bufs_per_port,
                     dram_base=p * base.bufs_per_port * base.buf_bytes,
                     buffer_bytes=base.buf_bytes, where=f"receive port {p}")
        for p in range(ports))
    ring_word = {r.number: r.base_word for r in rings}
    layout = dataclasses.replace(
        base, rx_fl_channel=first, buf_desc_base=desc_base,
        xs_desc_base=desc_base + ports * base.bufs_per_port * base.desc_bytes,
        rx_ring_word0=ring_word[base.rx_ring_base], tx_ring_word0=ring_word[base.tx_ring(0)],
        exc_ring_word=ring_word[base.exc_ring], cnt_base=counters["cnt_rx_no_buffer"],
        cnt_rx_no_buffer=counters["cnt_rx_no_buffer"],
        cnt_rx_too_long=counters["cnt_rx_too_long"], cnt_tx_race=counters["cnt_tx_race"])
    fwd_first = base.fwd_first_me if four else FWD_FIRST_ME
    fwd_end = fwd_first + ports * per_port
    # tx_eth.uc: port = ME & 1 (2 ports); 4 ports: ME 12..15, hardware 0x14..0x17, & 3
    tx_first = base.tx_first_me if four else max(TX_FIRST_ME, fwd_end + fwd_end % 2)
    rx_rings = tuple(tuple(base.rx_ring_base + per_port * p + i for i in range(per_port))
                     for p in range(ports))
    return RuntimeLayout(layout, tuple(rings), freelists, counters["drop_cnt_base"],
                         len(program.reasons.ids) + 2, _place_local(placements, cfg),
                         tuple(range(fwd_first, fwd_end)), tuple(range(ports)) if four
                         else RX_MES, tuple(range(tx_first, tx_first + ports)), per_port,
                         rx_rings)


# --------------------------------------------------------------------------- metadata set-up
META_ZEROED = frozenset(range(2, META_WORDS))   # the body ABI: 0 on entry (words 2..11)
# what fwd.uc reads of the metadata after the body, by the verdict the body left
EXIT_READS: dict[int, frozenset[int]] = {
    VERDICT_FORWARD: frozenset({META_VERDICT, META_FIELDS["out_port"].word}),
    VERDICT_DROP: frozenset({META_VERDICT, META_CODE}),
    VERDICT_EXCEPTION: frozenset({META_VERDICT, META_CODE, META_FIELDS["next_hop"].word})}
ANY_EXIT_READS = frozenset().union(*EXIT_READS.values())
# per path class: the verdict constant the paths wrote last (None: not known) -> the meta
# words every path of the class has written
Paths = dict[int | None, frozenset[int]]


@dataclass(frozen=True)
class MetaSetup:
    """What fwd.uc writes into a frame's metadata before the body.  Init zeroes words
    2..11 once; per frame it zeroes `clear` and writes len, the DRAM address and (with
    `in_port_per_frame`, else once at init) in_port.  The default suits any body."""

    clear: frozenset[int] = META_ZEROED
    in_port_per_frame: bool = True


def meta_setup(fn: Function) -> MetaSetup:
    """The per-frame set-up a WIR function needs for the body ABI ("every other word 0")
    to hold for every word it can observe: zero again only the words it may read (or the
    dispatch may read after it) before writing them AND may write -- a word it never writes
    keeps init's 0; write in_port per frame only when it may write it."""
    written = {i.word for b in fn.blocks for i in b.instrs if isinstance(i, MetaWrite)}
    return MetaSetup(frozenset(read_before_written(fn) & written & META_ZEROED),
                     META_FIELDS["in_port"].word in written)


def read_before_written(fn: Function) -> set[int]:
    """Meta words some path may read before it wrote them: MetaReads, and at Ret what the
    dispatch reads for the verdict the path left (all of ANY_EXIT_READS when unknown)."""
    reads: set[int] = set()
    for block, paths in _block_entries(fn):
        _walk(block, paths, reads)
    return reads


def _block_entries(fn: Function) -> list[tuple[Block, Paths]]:
    """The paths' state at the entry of every reachable block (a forward fixpoint: the
    written sets only shrink and the verdict constants are finite)."""
    blocks = {b.label: b for b in fn.blocks}
    states: dict[str, Paths] = {fn.blocks[0].label: {None: frozenset()}}
    work = [fn.blocks[0].label]
    while work:
        label = work.pop()
        out = _walk(blocks[label], states[label], None)
        for succ in blocks[label].successors():
            merged = _join(states.get(succ), out)
            if merged != states.get(succ):
                states[succ] = merged
                work.append(succ)
    return [(blocks[label], paths) for label, paths in states.items()]


def _join(a: Paths | None, b: Paths) -> Paths:
    joined = dict(a or {})
    for verdict, words in b.items():
        joined[verdict] = joined[verdict] & words if verdict in joined else words
    return joined


def _walk(block: Block, paths: Paths, reads: set[int] | None) -> Paths:
    """The state after `block`; with `reads`, collect the words read before written."""
    for ins in block.instrs:
        if isinstance(ins, MetaWrite):
            verdict = ins.src if isinstance(ins.src, int) else None
            after: Paths = {}
            for v, words in paths.items():
                after = _join(after, {verdict if ins.word == META_VERDICT else v:
                                      words | {ins.word}})
            paths = after
        elif reads is None:
            continue
        elif isinstance(ins, MetaRead):
            reads.update(ins.word for words in paths.values() if ins.word not in words)
        elif isinstance(ins, Ret):
            for v, words in paths.items():
                wanted = ANY_EXIT_READS if v is None else EXIT_READS.get(v, {META_VERDICT})
                reads.update(wanted - words)
    return paths


def body_defines(body_uc: str, meta: MetaSetup) -> list[tuple[str, int | str]]:
    """fwd.uc's switches for one body: the metadata set-up, whether the body uses LM_ADDR_0
    (else fwd.uc leaves it at the shared count: the spill area is never switched in) and
    whether body_entry is its first instruction (fwd.uc falls through into it)."""
    defines: list[tuple[str, int | str]] = [(f"META_CLEAR_{w}", 1) for w in sorted(meta.clear)]
    if meta.in_port_per_frame:
        defines.append(("META_IN_PORT_PER_FRAME", 1))
    if "index0" in body_uc or "LM_ADDR_0" in body_uc:
        defines.append(("BODY_USES_LM0", 1))
    if _entry_first(body_uc):
        defines.append(("BODY_ENTRY_FIRST", 1))
    return defines


def _entry_first(body_uc: str) -> bool:
    """body_entry labels the fragment's first instruction: nothing that can emit a word
    (an instruction, an #include) comes before it."""
    for raw in body_uc.splitlines():
        line = raw.split("//")[0].split(";")[0].strip()
        if not line or (line.startswith((".", "#")) and not line.startswith("#include")):
            continue
        return line.split(":")[0].strip().rstrip("#") == BODY_ENTRY and ":" in line
    return False


# --------------------------------------------------------------------------- the header
def four_port_defines(runtime: RuntimeLayout, tbuf_elements: int
                      ) -> list[tuple[str, int | str]]:
    """router4.h's #ifndef numbers for 4 ports: the mapping, the TX and exception rings
    (tx_eth.uc tests each TX ring by its state name), two freelists a channel and the TBUF
    partitions (`tbuf_elements` per port, a power of two)."""
    lay = runtime.layout
    part = tbuf_elements
    return [("PORTS", FOUR_PORTS), ("FWD_FIRST_ME", runtime.fwd_mes[0]),
            ("TX_FIRST_ME", runtime.tx_mes[0]), ("MEDIA_PORT_MASK", FOUR_PORTS - 1),
            ("RX_FL_PAIRS", 1), ("TX_RING_BASE", lay.tx_ring_base), ("EXC_RING", lay.exc_ring),
            ("TBUF_PART_ELEMENTS", part), ("TBUF_PART_MASK", part - 1),
            ("TBUF_PART_SHIFT", part.bit_length() - 1)] + [
            (f"TX_RING_EMPTY_{q}", f"SCR_Ring{lay.tx_ring(q)}_Empty")
            for q in range(FOUR_PORTS)]


def layout_header(runtime: RuntimeLayout, window_bytes: int, reasons: int,
                  pipeline: str, body: list[tuple[str, int | str]] | None = None,
                  tbuf_elements: int = 16) -> str:
    """layout.h; `body`: body_defines() of the body (default: none, the safe set-up);
    `tbuf_elements`: TBUF elements per port (4 ports only)."""
    lay = runtime.layout
    lines = [f"// layout.h -- generated by compiler/me/link.py for '{pipeline}': do not edit.",
             "// The runtime's structures, placed where the program's memories are not.",
             "#ifndef LINKED_LAYOUT_H", "#define LINKED_LAYOUT_H", "",
             "// router4.h overrides (its #ifndef numbers)"]
    defines: list[tuple[str, int | str]] = [
        ("RX_FL_CHANNEL", lay.rx_fl_channel), ("BUF_DESC_BASE", lay.buf_desc_base),
        ("CNT_RX_NO_BUFFER", lay.cnt_rx_no_buffer), ("CNT_RX_TOO_LONG", lay.cnt_rx_too_long),
        ("CNT_TX_RACE", lay.cnt_tx_race)]
    if lay.rx_ring_base != router4.LAYOUT.rx_ring_base:
        defines.append(("RX_RING_BASE", lay.rx_ring_base))
    if runtime.fwd_mes_per_port != 2:       # 2: rx_eth.uc's own alternation (router4's)
        defines.append(("RX_RINGS_PER_PORT", runtime.fwd_mes_per_port))
    if len(runtime.rx_rings) == FOUR_PORTS:
        defines += four_port_defines(runtime, tbuf_elements)
    dispatch: list[tuple[str, int | str]] = [
        ("FWD_FIRST_ME", runtime.fwd_mes[0]), ("FWD_PER_PORT", runtime.fwd_mes_per_port),
        ("LAST_POSITION", runtime.fwd_mes_per_port - 1),
        ("DISPATCH_LM_BYTE", 4 * runtime.dispatch_lm_word),
        ("SHARED_LM_BYTE", 4 * runtime.shared_lm_word),
        ("DROP_CNT_BASE", runtime.drop_cnt_base), ("DROP_REASON_MAX", reasons),
        ("BAD_PORT_INDEX", reasons + 1),
        ("META_IN_PORT", META_FIELDS["in_port"].word), ("META_LEN", META_FIELDS["len"].word),
        ("META_OUT_PORT", META_FIELDS["out_port"].word),
        ("META_NEXT_HOP", META_FIELDS["next_hop"].word), ("META_VERDICT", META_VERDICT),
        ("META_CODE", META_CODE), ("META_DRAM_ADDR", META_DRAM_ADDR),
        ("VERDICT_FORWARD", VERDICT_FORWARD), ("VERDICT_DROP", VERDICT_DROP),
        ("VERDICT_EXCEPTION", VERDICT_EXCEPTION)]
    if window_bytes:
        dispatch.append(("WINDOW_QW", window_bytes // 8))
    if runtime.fwd_mes_per_port > 2:        # more than one upstream record in a turn
        dispatch.append(("FWD_CHAIN_LONG", 1))
    ports = len(runtime.rx_rings)
    if ports > 1 and ports & (ports - 1) == 0:   # out_port < PORTS: one shift test
        dispatch.append(("PORTS_SHIFT", ports.bit_length() - 1))
    dispatch += body if body is not None else body_defines("index0", MetaSetup())
    rx_rings = [r for r in runtime.rings if r.what.startswith("RX")]
    dispatch += [(f"RX_EMPTY_{r.number - lay.rx_ring_base}", f"SCR_Ring{r.number}_Empty")
                 for r in rx_rings]
    for name, value in defines:
        lines.append(f"#define {name} {value:#x}" if isinstance(value, int) else
                     f"#define {name} {value}")
    lines += ["", "// the dispatch loop (compiler/me/dispatch/fwd.uc)"]
    for name, value in dispatch:
        lines.append(f"#define {name} {value:#x}" if isinstance(value, int) else
                     f"#define {name} {value}")
    lines += ["", "#endif", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- images
RX_WRAPPER = '#include "layout.h"\n#include "rx_eth.uc"\n'
TX_WRAPPER = '#include "layout.h"\n#include "tx_eth.uc"\n'


def _assemble(build: Path, header: str, body: str, window_bytes: int,
              runtime: RuntimeLayout, pipeline: str) -> tuple[LinkedImage, ...]:
    (build / "layout.h").write_text(header, encoding="utf-8")
    (build / "body.uc").write_text(body, encoding="utf-8")
    (build / "rx.uc").write_text(RX_WRAPPER, encoding="utf-8")
    (build / "tx.uc").write_text(TX_WRAPPER, encoding="utf-8")
    dirs = (str(build), str(MEDIA_DIR))
    return (LinkedImage("rx_eth.uc", assemble_file(build / "rx.uc", dirs), runtime.rx_mes),
            LinkedImage(f"fwd.uc + {pipeline}",
                        assemble_file(DISPATCH_DIR / "fwd.uc", dirs), runtime.fwd_mes),
            LinkedImage("tx_eth.uc", assemble_file(build / "tx.uc", dirs), runtime.tx_mes))


def _stages(program: Program, pipeline: str) -> tuple[str, ...]:
    edges = program.pipeline_edges.get(pipeline)
    return tuple(edges) if edges else (pipeline,)


def _mapping(program: Program, pipeline: str, runtime: RuntimeLayout,
             images: tuple[LinkedImage, ...]) -> Mapping:
    lay = runtime.layout
    ports = len(runtime.rx_rings)
    tx_rings = tuple(f"ring {lay.tx_ring(q)}" for q in range(ports))
    mes = []
    for p, me in enumerate(runtime.rx_mes[:ports]):
        mes.append(MEAssignment(me, "rx", (), (f"port {p}",),
                                tuple(f"ring {r}" for r in runtime.rx_rings[p]),
                                image=images[0].name))
    for p in range(ports):
        chain = runtime.chain(p)
        for i, me in enumerate(chain):
            reads = (f"ring {runtime.rx_rings[p][i]}",) + ((f"nn {me}",) if i else ())
            writes = ((*tx_rings, f"exception ring {lay.exc_ring}") if me == chain[-1]
                      else (f"nn {me + 1}",))
            mes.append(MEAssignment(me, "fwd", _stages(program, pipeline), reads, writes,
                                    image=images[1].name))
    for q, me in enumerate(runtime.tx_mes):
        mes.append(MEAssignment(me, "tx", (), (f"ring {lay.tx_ring(q)}",), (f"port {q}",),
                                image=images[2].name))
    return Mapping(pipeline, tuple(range(ports)), tuple(mes))


def _exception_names(program: Program) -> dict[int, str]:
    members = program.enums.get("Exc", {})
    return {value: name for name, (value, _type) in members.items()}


def link(program: Program, body_uc: str, window_bytes: int, *, pipeline: str,
         ports: int = 2, chip: str = "ixp2800", build_dir: str | Path | None = None,
         fwd_mes_per_port: int | None = None,
         port_kinds: tuple[str, ...] | None = None,
         meta: MetaSetup | None = None) -> LinkedProgram:
    """Link a compiled body (the back end's .uc fragment) into ME images for `ports`
    ports (2 or 4), `fwd_mes_per_port` forwarding MEs per input port (2 ports: 1..4,
    default 4; 4 ports: 2; a chain that keeps the port's order).  `port_kinds` names
    each port's kind (`Port.from_kind`: "10gbe", "1gbe", "oc192pos"; default all
    10GbE): the media stages move frame bytes whatever the framing, so only the chip's
    ports (rate, per-frame overhead) change.
    `build_dir` keeps the generated files (layout.h, body.uc); by default they go to a
    temporary folder.  `meta`: the body's metadata set-up (`meta_setup(wir)`; default:
    the one that suits any body).  Raises LinkError (layout) or the
    assembler's AsmError."""
    if window_bytes % 8 or not 0 <= window_bytes <= WINDOW_MAX_BYTES:
        raise LinkError(f"header window of {window_bytes} bytes: 0..{WINDOW_MAX_BYTES}, "
                        "a multiple of 8")
    kinds = _port_kinds(port_kinds, ports)
    cfg = ChipConfig.load(chip)
    placements = memory_map(program)
    channel_bytes = _sram_channel_bytes(placements, cfg)
    if fwd_mes_per_port is None:
        fwd_mes_per_port = FWD_MES_PER_PORT if ports != FOUR_PORTS else MAX_FWD_MES_PER_PORT_4
    runtime = plan_runtime(program, ports, cfg, channel_bytes, fwd_mes_per_port)
    reasons = len(program.reasons.ids)
    header = layout_header(runtime, window_bytes, reasons, pipeline,
                           body_defines(body_uc, meta or MetaSetup()),
                           _tbuf_elements(cfg, ports))
    if build_dir is None:
        with tempfile.TemporaryDirectory(prefix="npkit-link-") as tmp:
            images = _assemble(Path(tmp), header, body_uc, window_bytes, runtime, pipeline)
    else:
        Path(build_dir).mkdir(parents=True, exist_ok=True)
        images = _assemble(Path(build_dir), header, body_uc, window_bytes, runtime, pipeline)
    overrides: dict[str, dict[str, Any]] = {}
    if channel_bytes != cfg.sram_channel_bytes:
        overrides["sram"] = {"channel_bytes": channel_bytes}
    counter_names = {0: NO_VERDICT, reasons + 1: BAD_PORT}
    counter_names.update({i: name for name, i in program.reasons.ids.items()})
    return LinkedProgram(
        program=program, pipeline=pipeline, window_bytes=window_bytes, ports=ports,
        chip=chip, images=images, memory_map=placements, runtime=runtime, header=header,
        body=body_uc, chip_overrides=overrides, reasons=dict(sorted(counter_names.items())),
        exceptions=_exception_names(program),
        mapping=_mapping(program, pipeline, runtime, images),
        symbols=dict(images[1].image.symbols), port_kinds=kinds)


def _tbuf_elements(cfg: ChipConfig, ports: int) -> int:
    """TBUF elements per port (the MSF's partitions), a power of two for tx_eth.uc."""
    elements = int(cfg.raw["msf"]["tbuf_bytes"]) // int(cfg.raw["msf"]["element_bytes"]) // ports
    if elements & (elements - 1):
        raise LinkError(f"{elements} TBUF elements per port: tx_eth.uc needs a power of two")
    return elements


def _port_kinds(port_kinds: tuple[str, ...] | None, ports: int) -> tuple[str, ...]:
    """Checked port kinds, one per port (a LinkError names a wrong count or kind)."""
    kinds = tuple(port_kinds) if port_kinds is not None else ("10gbe",) * ports
    if len(kinds) != ports:
        raise LinkError(f"{len(kinds)} port kinds {kinds} for {ports} ports")
    for kind in kinds:
        try:
            Port.from_kind(kind)
        except ValueError as err:
            raise LinkError(str(err)) from None
    return kinds
