"""Run a linked MBL pipeline (compiler/me/link.py) on the simulated chip.

`CompiledRun(linked)` builds the chip (the preset with the linker's overrides, 10GbE
ports), loads the ME images, configures the scratch rings and the buffer freelists the
linker placed, and copies the program's memories in with the native target's packing:
fill a `NativeProgram` of the same program through its control-plane API (`write`,
`table_add`, `region` + `npkit.runtime.lpm`), then `load_memories(native)` copies every
memory word for word to its address in the memory map.

`run({port: [frame, ...]}, load)` offers the frames at `load` x line rate, runs until every
frame is accounted for (transmitted, dropped by the body or by receive, or an exception),
drains the exception ring (each buffer freed) and returns a `CompiledResult`: per-port
output frames with times, drops by reason name, exceptions, and the freelist leak check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npkit.compiler.me.link import CHANNEL_SHIFT, LinkedProgram, MemoryPlacement
from npkit.microblocks.uc import router4
from npkit.runtime.loader import LeakReport, LoadedRun, build_freelist, leak_check
from npkit.sim import Chip
from npkit.sim.packets import ListSink, ListSource, RxFrame, TxFrame

LINE_BPS = 10e9
WIRE_OVERHEAD = 20          # 10GbE preamble + inter-frame gap
SETTLE_CYCLES = 30_000      # after the last frame is accounted for: commands in flight land
STEP_CYCLES = 20_000        # how often the run checks whether every frame is accounted for


@dataclass(frozen=True)
class CompiledException:
    in_port: int
    code: int
    next_hop: int
    frame: bytes


@dataclass
class CompiledResult:
    out: dict[int, list[TxFrame]]               # output port -> frames in order
    drops: dict[str, int]                       # reason name -> count (nonzero only)
    exceptions: list[CompiledException]         # in ring order
    receive_drops: dict[str, int]               # rx_no_buffer0, rx_too_long1, rbuf_full0...
    leaks: list[LeakReport]
    cycles: int
    offered: int
    counters: dict[str, Any] = field(default_factory=dict)

    def frames(self, port: int) -> list[bytes]:
        return [f.data for f in self.out.get(port, [])]

    @property
    def accounted(self) -> int:
        return (sum(len(v) for v in self.out.values()) + sum(self.drops.values())
                + len(self.exceptions) + sum(self.receive_drops.values()))

    @property
    def leak_free(self) -> bool:
        return all(r.ok for r in self.leaks)


def paced(frames: list[bytes], load: float) -> list[RxFrame]:
    """Frames offered back to back at `load` (fraction of 10GbE line rate)."""
    out, start = [], 0.0
    for frame in frames:
        out.append(RxFrame(frame, time_s=start))
        start += (len(frame) + WIRE_OVERHEAD) * 8 / LINE_BPS / load
    return out


class CompiledRun:
    """A linked program loaded on a fresh chip."""

    def __init__(self, linked: LinkedProgram, *, seed: int = 1, trace: bool = False) -> None:
        self.linked = linked
        self.layout = linked.runtime.layout
        self.chip = Chip(linked.chip_config(), seed=seed, trace=trace)
        for image in linked.images:
            self.chip.load(image.image, list(image.mes))
        for ring in linked.runtime.rings:
            self.chip.configure_ring(ring.number, ring.base_word, ring.size_words)
        for spec in linked.runtime.freelists:
            build_freelist(self.chip, spec)
        self.loaded = LoadedRun(self.chip, None, [], list(linked.runtime.freelists))

    # ---- memories ----
    def load_memories(self, tables: Any) -> None:
        """Copy every memory of a filled `NativeProgram` (same program) to the chip."""
        for placement in self.linked.memory_map:
            words = tables.region(placement.name)
            self.write_memory(placement, np.asarray(words, dtype=np.uint32))

    def write_memory(self, placement: MemoryPlacement | str, words: np.ndarray) -> None:
        """Write words from the start of a memory (SRAM regions may span channels;
        `in local` memories go to every forwarding ME's local memory)."""
        if isinstance(placement, str):
            placement = self.linked.memory(placement)
        if len(words) * 4 > placement.bytes:
            raise ValueError(f"{len(words)} words do not fit memory {placement.name} "
                             f"({placement.bytes // 4} words)")
        if placement.space == "sram":
            self._write_sram(placement.address, words)
        elif placement.space == "scratch":
            self.chip.scratch()[placement.word:placement.word + len(words)] = words
        else:
            for me in self.linked.runtime.fwd_mes:
                self.chip.local_memory(me)[placement.word:placement.word + len(words)] = words

    def _write_sram(self, address: int, words: np.ndarray) -> None:
        done = 0
        while done < len(words):
            at = address + 4 * done
            channel, offset = at >> CHANNEL_SHIFT, at & ((1 << CHANNEL_SHIFT) - 1)
            view = self.chip.sram(channel)
            count = min(len(words) - done, len(view) - offset // 4)
            view[offset // 4:offset // 4 + count] = words[done:done + count]
            done += count

    def read_memory(self, name: str, me: int | None = None) -> np.ndarray:
        """A copy of a memory's words (an `in local` one from forwarding ME `me`, default
        the first)."""
        placement = self.linked.memory(name)
        count = placement.bytes // 4
        if placement.space == "scratch":
            return self.chip.scratch()[placement.word:placement.word + count].copy()
        if placement.space == "local":
            lm = self.chip.local_memory(self.linked.runtime.fwd_mes[0] if me is None else me)
            return lm[placement.word:placement.word + count].copy()
        out = np.empty(count, dtype=np.uint32)
        done = 0
        while done < count:
            at = placement.address + 4 * done
            channel, offset = at >> CHANNEL_SHIFT, at & ((1 << CHANNEL_SHIFT) - 1)
            view = self.chip.sram(channel)
            n = min(count - done, len(view) - offset // 4)
            out[done:done + n] = view[offset // 4:offset // 4 + n]
            done += n
        return out

    # ---- counters ----
    def drop_counts(self) -> dict[str, int]:
        base = self.linked.runtime.drop_cnt_base // 4
        words = self.chip.scratch()[base:base + self.linked.runtime.drop_counters]
        return {name: int(words[i]) for i, name in self.linked.reasons.items() if words[i]}

    def receive_drops(self) -> dict[str, int]:
        lay, scratch = self.layout, self.chip.scratch()
        out = {}
        for name, base in (("rx_no_buffer", lay.cnt_rx_no_buffer),
                           ("rx_too_long", lay.cnt_rx_too_long)):
            for p in range(self.linked.ports):
                out[f"{name}{p}"] = int(scratch[base // 4 + p])
        for p, c in enumerate(self.chip.counters()["ports"]):
            for key, value in c.items():
                if key.startswith("rx_dropped"):
                    out[f"{key}{p}"] = int(value)
        return {k: v for k, v in out.items() if v}

    def _exceptions_waiting(self) -> int:
        return self.chip.ring_state(self.layout.exc_ring)["count"] // self.layout.exc_entry_words

    def take_exceptions(self) -> list[CompiledException]:
        """Every exception on the ring, in order, each buffer back on its freelist."""
        out = []
        while (exc := router4.take_exception(self.chip, True, self.layout)) is not None:
            out.append(CompiledException(exc.input_port, exc.code, exc.next_hop, exc.frame))
        return out

    # ---- running ----
    def run(self, frames: dict[int, list[bytes]], load: float = 0.5,
            max_cycles: int | None = None) -> CompiledResult:
        """Offer the frames (per input port, in order) at `load` x line rate and run until
        every one is accounted for (or `max_cycles`), then settle and drain."""
        sinks = {q: ListSink() for q in range(self.linked.ports)}
        for q, sink in sinks.items():
            self.chip.attach_sink(q, sink)
        for p, port_frames in frames.items():
            self.chip.attach_source(p, ListSource(paced(port_frames, load)))
        offered = sum(len(f) for f in frames.values())
        if max_cycles is None:
            wire = max((sum(len(f) + WIRE_OVERHEAD for f in fs) for fs in frames.values()),
                       default=0)
            clock = self.chip.config.clock_hz
            max_cycles = int(wire * 8 / LINE_BPS / load * clock * 4) + 400_000
        start = self.chip.now
        while self.chip.now - start < max_cycles:
            self.chip.run(cycles=STEP_CYCLES)
            done = (sum(len(s.frames) for s in sinks.values()) + self._exceptions_waiting()
                    + sum(self.drop_counts().values()) + sum(self.receive_drops().values()))
            if done >= offered:
                break
        self.chip.run(cycles=SETTLE_CYCLES)
        self.chip.close_sinks()
        exceptions = self.take_exceptions()
        return CompiledResult(
            out={q: list(s.frames) for q, s in sinks.items()}, drops=self.drop_counts(),
            exceptions=exceptions, receive_drops=self.receive_drops(),
            leaks=leak_check(self.loaded), cycles=self.chip.now - start, offered=offered,
            counters=self.chip.counters())
