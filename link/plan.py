"""Where the runtime's structures go for one program on one platform (docs/me-backend.md,
"Dispatch and link"): the plan the manifest and layout.h are written from.

The program's memories keep the addresses the checker gave them (SRAM and scratch byte
address = 4 x MemoryInfo.word_offset, `in local` memories at local-memory word
word_offset; SRAM memories where link/sram.py placed them on the chip's channels).  The
runtime's own structures go where those are not: buffer descriptors and
freelists on SRAM channels (and offsets) free of program memories, the scratch rings and
counters after the program's scratch memories, the dispatch's per-context local-memory
areas after the program's `in local` memories.

Mapping (two ports, N = `fwd_mes_per_port`): ME 0, 1 receive (rx_eth.uc), MEs
2 + N p .. 2 + N p + N - 1 forward port p (fwd.uc + the body: a chain of N adjacent MEs
joined by next-neighbour rings), ME 6, 7 transmit (tx_eth.uc; 2 + 2N, 3 + 2N when N > 2).
Rings: RX ring base + N p + i feeds ME i of port p's chain (base 0, or 7 when the 2N RX
rings do not fit below the media stages' TX rings 4 + q and exception ring 6).

Four ports (N = 2 only: 4 + 4N + 4 <= 16 MEs, and rx_eth.uc puts port p on rings 2p,
2p + 1): ME 0..3 receive, 4..11 forward, 12..15 transmit (port = ME & 3); RX rings 0..7,
TX rings 8 + q, exception ring 12; 64 buffers per port (the scratch holds 4 x 2 x 128 RX,
4 x 256 TX and 512 exception words, not the 5,120 words 128 buffers need), two ports'
freelists per SRAM channel (queues 0, 1) and a TBUF partition of 16 elements per port.
These rules are the media stages' (rx_eth.uc, tx_eth.uc): another media pair brings its own.

One receive port (`rx_ports=1`, two ports: a chip of the dual system receives one line and
transmits the other; docs/link.md, "One receive port"): ME 0 receives port 0 (no receive ME
for port 1), MEs 1 .. N forward it (one chain of N), the transmit MEs follow on an even ME
(tx_eth.uc: port = ME & 1).  N <= 8 (MAX_FWD_MES_ONE_RX): the dispatch loop tests at most 8
RX rings (fwd.uc's ring_tests), and the N rings must fit ring numbers 0..3 (N <= 4) or
7..15 past the TX rings 4, 5 and the exception ring 6.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from npkit.compiler.mbl.sema import Program
from npkit.sim.config import ChipConfig

from .errors import LinkError
from .manifest import FreelistSpec, RingSpec
from .media import LAYOUT, Layout
from .program import ProgramMemory
from .sram import BIG_CHANNEL_BYTES, CHANNEL_SHIFT, fits_channels

RX_MES, FWD_FIRST_ME, TX_FIRST_ME = (0, 1), 2, 6
FOUR_PORTS = 4
MAX_FWD_MES_PER_PORT_4 = 2          # 4 receive + 4 transmit + 4 N forwarding MEs <= 16
FWD_MES_PER_PORT = 4                # the default: the most the chip's scratch holds rings for
MAX_FWD_MES_PER_PORT = 4            # 2N + 3 rings of 16; N RX rings of 256 words per port
MAX_FWD_MES_ONE_RX = 8              # one receive port: fwd.uc tests at most 8 RX rings
ONE_RX_FWD_FIRST_ME = 1             # one receive port: ME 0 receives, the chain starts at 1
CONTEXTS = 8
LM_WORDS_PER_CONTEXT = 32           # 16 metadata words (LM_ADDR_1) + 16 spill (LM_ADDR_0)
LM_SHARED_WORDS = 16                # the forwarding ME's shared count (fwd.uc), aligned
DESC_ALIGN = 0x1000
# counter index of the drops the program did not name (fwd.uc): 0 and reasons + 1
NO_VERDICT, BAD_PORT = "no_verdict", "bad_port"


@dataclass(frozen=True)
class RuntimeLayout:
    """Where the runtime's structures are for one linked program (the linker's working
    plan; the manifest and its [program] table are written from it)."""

    layout: Layout                      # the media stages' numbers, the moved ones replaced
    rings: tuple[RingSpec, ...]
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


# --------------------------------------------------------------------------- memory map
def memory_map(program: Program) -> tuple[ProgramMemory, ...]:
    return tuple(ProgramMemory(m.name, m.space, 4 * m.word_offset, 4 * m.words)
                 for m in program.memories.values())

def _space_end(placements: tuple[ProgramMemory, ...], space: str) -> int:
    """First byte after the program's memories of a space (0 when it has none)."""
    return max((m.address + m.bytes for m in placements if m.space == space), default=0)


def _align(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def sram_channel_bytes(placements: tuple[ProgramMemory, ...], cfg: ChipConfig) -> int:
    """The SRAM channel size the program runs with: the chip's when every memory lies in
    one of its channels (link/sram.py places them so), else 64 MB channels for a flat
    layout (the 16-8-8 tries)."""
    if fits_channels(placements, cfg.sram_channels, cfg.sram_channel_bytes):
        return cfg.sram_channel_bytes
    end = _space_end(placements, "sram")
    if end > cfg.sram_channels * BIG_CHANNEL_BYTES:
        raise LinkError(f"the program's SRAM memories need {end:#x} bytes, more than "
                        f"{cfg.sram_channels} channels of 64 MB")
    return BIG_CHANNEL_BYTES


def _channel_ends(placements: tuple[ProgramMemory, ...], channels: int) -> list[int]:
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


def _place_descriptors(placements: tuple[ProgramMemory, ...], cfg: ChipConfig,
                       channel_bytes: int, channels: int, ports: int, lay: Layout,
                       align: int = DESC_ALIGN) -> tuple[int, int]:
    """(first channel, descriptor base): the freelists on `channels` adjacent channels from
    first (port p on first + p, or first + p // 2 when two ports share a channel), port p's
    descriptors at base + p x (buffers x 32), clear of the program's memories.  The
    lowest base wins (router4.h's own 0x10000 when the channels are free)."""
    ends = _channel_ends(placements, cfg.sram_channels)
    size = ports * lay.bufs_per_port * lay.desc_bytes
    options = []
    for first in range(cfg.sram_channels - channels + 1):
        used = ends[first:first + channels]
        base = max(lay.buf_desc_base, _align(max(used), align))
        if base + size <= channel_bytes:
            options.append((base, first))
    if not options:
        raise LinkError("no SRAM channel has room for the buffer descriptors beside the "
                        "program's SRAM memories")
    base, first = min(options)
    return first, base


def _xscale_channel(placements: tuple[ProgramMemory, ...], cfg: ChipConfig, lay: Layout,
                    xs_desc_base: int, fallback: int) -> int:
    """The SRAM channel of the XScale's buffer descriptors (at `xs_desc_base`, after the
    receive ports'): router4.h's `XS_CHANNEL` (3) when no program memory is there (every
    program placed from the bottom, and the flat layouts), else `fallback`, the last channel
    of the receive ports' pair, where `_place_descriptors` left room after the ports' (a
    program placed from the top down fills channel 3 first: link/sram.py)."""
    if lay.xs_channel < cfg.sram_channels:
        ends = _channel_ends(placements, cfg.sram_channels)
        if ends[lay.xs_channel] <= xs_desc_base:
            return lay.xs_channel
    return fallback


def ring_numbers(ports: int, per_port: int, lay: Layout) -> Layout:
    """The media layout with the RX rings moved past the exception ring when N RX rings
    per port do not fit below its TX rings (tx_eth.uc tests rings 4 and 5 by
    number, so those stay)."""
    if lay.rx_ring_base + ports * per_port <= lay.tx_ring_base:
        return lay
    return dataclasses.replace(lay, rx_ring_base=lay.exc_ring + 1)


def _place_scratch(placements: tuple[ProgramMemory, ...], cfg: ChipConfig, ports: int,
                   reasons: int, lay: Layout, per_port: int, rx_ports: int | None = None
                   ) -> tuple[list[RingSpec], dict]:
    """Rings after the program's scratch memories (RX rings for the first `rx_ports`
    ports, default all), then the counters."""
    word = _align(_align(_space_end(placements, "scratch"), 4) // 4, 16)
    rings = []
    for p in range(ports if rx_ports is None else rx_ports):
        for i in range(per_port):
            rings.append(RingSpec(lay.rx_ring_base + per_port * p + i, word,
                                       lay.rx_ring_words,
                                       f"RX ring of port {p}, forwarding ME {i}"))
            word += lay.rx_ring_words
    for q in range(ports):
        rings.append(RingSpec(lay.tx_ring(q), word, lay.tx_ring_words, f"TX ring {q}"))
        word += lay.tx_ring_words
    rings.append(RingSpec(lay.exc_ring, word, lay.exc_ring_words, "exception ring"))
    word += lay.exc_ring_words
    counters = {"cnt_rx_no_buffer": 4 * word, "cnt_rx_too_long": 4 * (word + ports),
                "cnt_tx_race": 4 * (word + 2 * ports), "drop_cnt_base": 4 * (word + 3 * ports)}
    end = word + 3 * ports + reasons + 2
    if 4 * end > cfg.scratch_bytes or max(r.number for r in rings) >= cfg.scratch_rings:
        raise LinkError(f"the program's scratch memories ({_space_end(placements, 'scratch')} "
                        f"bytes) leave no room for the runtime's rings and counters "
                        f"({4 * end} of {cfg.scratch_bytes} bytes needed)")
    return rings, counters


def _place_local(placements: tuple[ProgramMemory, ...], cfg: ChipConfig) -> int:
    word = _align(_space_end(placements, "local") // 4, 16)
    need = CONTEXTS * LM_WORDS_PER_CONTEXT + LM_SHARED_WORDS
    if word + need > cfg.local_memory_words:
        raise LinkError(f"the program's local memories ({word} words) leave no room for "
                        f"the dispatch's {need} words of metadata, spill areas and shared "
                        f"count ({cfg.local_memory_words} words)")
    return word


def four_port_layout(cfg: ChipConfig, per_port: int) -> Layout:
    """The media layout re-planned for 4 ports: TX rings after the 4N RX rings, fewer
    buffers (the scratch), two freelists a channel (the SRAM channels the program leaves)."""
    lay = LAYOUT
    tx_base = max(8, 4 * per_port)
    bufs = 64
    return dataclasses.replace(
        lay, ports=FOUR_PORTS, fwd_first_me=4, tx_first_me=12, bufs_per_port=bufs,
        rx_ring_base=0, tx_ring_base=tx_base, exc_ring=tx_base + FOUR_PORTS,
        rx_ring_words=max(cfg.ring_words_range[0], bufs * lay.rx_entry_words),
        tx_ring_words=max(cfg.ring_words_range[0], FOUR_PORTS * bufs),
        exc_ring_words=FOUR_PORTS * bufs * lay.exc_entry_words)


def _check_mapping(ports: int, per_port: int, rx_ports: int | None = None) -> None:
    if ports not in (2, FOUR_PORTS):
        raise LinkError(f"{ports} ports: the linker maps 2 or 4 (the media stages' layouts)")
    if rx_ports is not None and rx_ports != ports:
        if (ports, rx_ports) != (2, 1):
            raise LinkError(f"rx_ports={rx_ports} on {ports} ports: the linker maps all "
                            "ports, or port 0 alone of two")
        if not 1 <= per_port <= MAX_FWD_MES_ONE_RX:
            raise LinkError(f"fwd_mes_per_port={per_port} with one receive port: "
                            f"1..{MAX_FWD_MES_ONE_RX} (the dispatch loop tests at most "
                            f"{MAX_FWD_MES_ONE_RX} RX rings)")
        return
    if ports == FOUR_PORTS and per_port != MAX_FWD_MES_PER_PORT_4:
        raise LinkError(f"fwd_mes_per_port={per_port} on 4 ports: only 2 (16 MEs: 4 receive "
                        "+ 4 transmit + 4 x 2 forwarding; rx_eth.uc puts port p on rings "
                        "2p, 2p + 1)")
    if not 1 <= per_port <= MAX_FWD_MES_PER_PORT:
        raise LinkError(f"fwd_mes_per_port={per_port}: 1..{MAX_FWD_MES_PER_PORT} (the "
                        f"scratch rings: {per_port} RX rings per port + TX + exception)")


def plan_runtime(program: Program, ports: int, cfg: ChipConfig, channel_bytes: int,
                 per_port: int = FWD_MES_PER_PORT, align: int = DESC_ALIGN,
                 rx_ports: int | None = None, buf_bytes: int | None = None
                 ) -> RuntimeLayout:
    """The runtime's structures for `ports` ports (2 or 4), `per_port` forwarding MEs per
    input port, buffer descriptors on `align`-byte boundaries; `rx_ports=1`: only port 0
    of two receives (the module docstring's "one receive port"); `buf_bytes`: buffers of
    that size instead of router4.h's 2 KB (jumbo frames; docs/link.md "Buffer size")."""
    _check_mapping(ports, per_port, rx_ports)
    one_rx = rx_ports is not None and rx_ports < ports
    receiving = 1 if one_rx else ports
    placements = memory_map(program)
    four = ports == FOUR_PORTS
    base = four_port_layout(cfg, per_port) if four else ring_numbers(receiving, per_port,
                                                                      LAYOUT)
    if buf_bytes is not None and buf_bytes != base.buf_bytes:
        try:
            base = base.with_buffer_bytes(buf_bytes)
        except ValueError as exc:
            raise LinkError(str(exc)) from None
    channels = ports // 2 if four else ports     # 4 ports: two freelists a channel
    first, desc_base = _place_descriptors(placements, cfg, channel_bytes, channels, ports,
                                          base, align)
    rings, counters = _place_scratch(placements, cfg, ports, len(program.reasons.ids), base,
                                     per_port, receiving)
    freelists = tuple(
        FreelistSpec(channel=first + (p // 2 if four else p),
                     queue=p % 2 if four else base.freelist_queue,
                     descriptor_base=desc_base + p * base.bufs_per_port * base.desc_bytes,
                     descriptor_bytes=base.desc_bytes, count=base.bufs_per_port,
                     dram_base=p * base.bufs_per_port * base.buf_bytes,
                     buffer_bytes=base.buf_bytes, where=f"receive port {p}")
        for p in range(ports))
    ring_word = {r.number: r.base_word for r in rings}
    xs_desc_base = desc_base + ports * base.bufs_per_port * base.desc_bytes
    layout = dataclasses.replace(
        base, rx_fl_channel=first, buf_desc_base=desc_base, xs_desc_base=xs_desc_base,
        xs_channel=_xscale_channel(placements, cfg, base, xs_desc_base, first + channels - 1),
        rx_ring_word0=ring_word[base.rx_ring_base], tx_ring_word0=ring_word[base.tx_ring(0)],
        exc_ring_word=ring_word[base.exc_ring], cnt_base=counters["cnt_rx_no_buffer"],
        cnt_rx_no_buffer=counters["cnt_rx_no_buffer"],
        cnt_rx_too_long=counters["cnt_rx_too_long"], cnt_tx_race=counters["cnt_tx_race"])
    fwd_first = base.fwd_first_me if four else ONE_RX_FWD_FIRST_ME if one_rx else FWD_FIRST_ME
    fwd_end = fwd_first + receiving * per_port
    # tx_eth.uc: port = ME & 1 (2 ports); 4 ports: ME 12..15, hardware 0x14..0x17, & 3
    tx_first = base.tx_first_me if four else max(TX_FIRST_ME, fwd_end + fwd_end % 2)
    rx_rings = tuple(tuple(base.rx_ring_base + per_port * p + i for i in range(per_port))
                     if p < receiving else () for p in range(ports))
    rx_mes = tuple(range(ports)) if four else RX_MES[:receiving]
    return RuntimeLayout(dataclasses.replace(layout, fwd_first_me=fwd_first), tuple(rings),
                         freelists, counters["drop_cnt_base"],
                         len(program.reasons.ids) + 2, _place_local(placements, cfg),
                         tuple(range(fwd_first, fwd_end)), rx_mes,
                         tuple(range(tx_first, tx_first + ports)), per_port, rx_rings)

