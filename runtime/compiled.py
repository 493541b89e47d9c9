"""Run a linked MBL pipeline (`npkit.link.link`'s Manifest) on the simulated chip.

`CompiledRun(manifest)` builds the chip through the loader (`npkit.runtime.loader`: the preset
with the manifest's overrides and ports, the ME images, the scratch rings, the buffer
freelists and any memory words the manifest carries), and reads the manifest's [program]
table for what the compiled runtime adds: it copies the program's memories in with the
native target's packing:
fill a `NativeProgram` of the same program through its control-plane API (`write`,
`table_add`, `region` + `npkit.runtime.lpm`), then `load_memories(native)` copies every
memory word for word to its address in the memory map.

`run({port: [frame, ...]}, load)` offers the frames at `load` x each port's line rate (the
linked program's port kinds: rate and per-frame overhead, e.g. OC-192 POS 9.58464 Gb/s +
5 bytes), runs until every
frame is accounted for (transmitted, dropped by the body or by receive, or an exception),
drains the exception ring (each buffer freed) and returns a `CompiledResult`: per-port
output frames with times, drops by reason name, exceptions, and the freelist leak check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npkit.link.manifest import Manifest, ManifestError
from npkit.link.plan import CHANNEL_SHIFT
from npkit.link.program import ProgramInfo, ProgramMemory
from npkit.microblocks.uc import router4
from npkit.runtime.loader import LeakReport, build_from_manifest, leak_check
from npkit.sim.chip import Chip
from npkit.sim.config import Port
from npkit.sim.packets import ListSink, ListSource, RxFrame, TxFrame

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
    # chip.counters() at the start and end of the run's `window` (steady state), if asked
    window: tuple[dict[str, Any], dict[str, Any]] | None = None

    def frames(self, port: int) -> list[bytes]:
        return [f.data for f in self.out.get(port, [])]

    @property
    def accounted(self) -> int:
        return (sum(len(v) for v in self.out.values()) + sum(self.drops.values())
                + len(self.exceptions) + sum(self.receive_drops.values()))

    @property
    def leak_free(self) -> bool:
        return all(r.ok for r in self.leaks)


def wire_seconds(frame_bytes: int, port: Port) -> float:
    """Time one frame occupies the port's line (frame bytes + the line's overhead)."""
    return (frame_bytes + port.overhead_bytes) * 8 / port.rate_bps


def paced(frames: list[bytes], load: float, port: Port | None = None) -> list[RxFrame]:
    """Frames offered back to back at `load` (fraction of the port's line rate; 10GbE
    when no port is given)."""
    port = port or Port.ethernet_10g()
    out, start = [], 0.0
    for frame in frames:
        out.append(RxFrame(frame, time_s=start))
        start += wire_seconds(len(frame), port) / load
    return out


def program_info(manifest: Manifest) -> ProgramInfo:
    """The manifest's [program] table; a ManifestError when it has none."""
    if manifest.program is None:
        raise ManifestError(f"{manifest.path}: no [program] table: not a linked MBL program "
                            "(npkit.link.link writes one)")
    return manifest.program


def take_exceptions(chip: Chip, program: ProgramInfo) -> list[CompiledException]:
    """Every exception on a linked program's exception ring, in order, each buffer back on
    its freelist (for any chip the loader built from a manifest with a [program] table)."""
    out = []
    layout = program.layout()
    while (exc := router4.take_exception(chip, True, layout)) is not None:
        out.append(CompiledException(exc.input_port, exc.code, exc.next_hop, exc.frame))
    return out


class CompiledRun:
    """A linked program loaded on a fresh chip."""

    def __init__(self, linked: Manifest, *, seed: int = 1, trace: bool = False) -> None:
        self.linked = linked
        self.program = program_info(linked)
        self.layout = self.program.layout()
        self.loaded = build_from_manifest(linked, seed=seed, trace=trace)
        self.chip = self.loaded.chip

    # ---- memories ----
    def load_memories(self, tables: Any) -> None:
        """Copy every memory of a filled `NativeProgram` (same program) to the chip."""
        for placement in self.program.memories:
            words = tables.region(placement.name)
            self.write_memory(placement, np.asarray(words, dtype=np.uint32))

    def write_memory(self, placement: ProgramMemory | str, words: np.ndarray) -> None:
        """Write words from the start of a memory (SRAM regions may span channels;
        `in local` memories go to every forwarding ME's local memory)."""
        if isinstance(placement, str):
            placement = self.program.memory(placement)
        if len(words) * 4 > placement.bytes:
            raise ValueError(f"{len(words)} words do not fit memory {placement.name} "
                             f"({placement.bytes // 4} words)")
        if placement.space == "sram":
            self._write_sram(placement.address, words)
        elif placement.space == "scratch":
            self.chip.scratch()[placement.word:placement.word + len(words)] = words
        else:
            for me in self.program.fwd_mes:
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
        placement = self.program.memory(name)
        count = placement.bytes // 4
        if placement.space == "scratch":
            return self.chip.scratch()[placement.word:placement.word + count].copy()
        if placement.space == "local":
            lm = self.chip.local_memory(self.program.fwd_mes[0] if me is None else me)
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
        base = self.program.drop_counter_base // 4
        words = self.chip.scratch()[base:base + self.program.drop_counters]
        return {name: int(words[i]) for i, name in self.program.drop_reasons.items()
                if words[i]}

    def receive_drops(self) -> dict[str, int]:
        lay, scratch = self.layout, self.chip.scratch()
        out = {}
        for name, base in (("rx_no_buffer", lay.cnt_rx_no_buffer),
                           ("rx_too_long", lay.cnt_rx_too_long)):
            for p in range(len(self.linked.ports)):
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
        return take_exceptions(self.chip, self.program)

    # ---- running ----
    def run(self, frames: dict[int, list[bytes]], load: float = 0.5,
            max_cycles: int | None = None,
            window: tuple[float, float] | None = None,
            advance: Callable[[int], object] | None = None) -> CompiledResult:
        """Offer the frames (per input port, in order) at `load` x line rate and run until
        every one is accounted for (or `max_cycles`), then settle and drain.  `window`
        (fractions of the offered span, e.g. (0.25, 0.85)) also snapshots chip.counters()
        at those two instants: their difference is the steady state, free of the start-up
        and of the drain.  `advance(cycles)` runs the chip (default `chip.run`; the control
        plane's `cp.run` when an XScale model runs beside it)."""
        advance = advance or (lambda cycles: self.chip.run(cycles=cycles))
        sinks = {q: ListSink() for q in range(len(self.linked.ports))}
        for q, sink in sinks.items():
            self.chip.attach_sink(q, sink)
        ports = self.chip.config.ports
        for p, port_frames in frames.items():
            self.chip.attach_source(p, ListSource(paced(port_frames, load, ports[p])))
        offered = sum(len(f) for f in frames.values())
        wire = max((sum(wire_seconds(len(f), ports[p]) for f in fs)
                    for p, fs in frames.items()), default=0.0)
        span = wire / load * self.chip.config.clock_hz       # cycles the offer lasts
        if max_cycles is None:
            max_cycles = int(span * 4) + 400_000
        start = self.chip.now
        marks = sorted(int(f * span) for f in window) if window else []
        snapshots: list[dict[str, Any]] = []
        while self.chip.now - start < max_cycles:
            elapsed = self.chip.now - start
            step = min([STEP_CYCLES] + [m - elapsed for m in marks if m > elapsed])
            advance(max(1, step))
            if len(snapshots) < len(marks) and self.chip.now - start >= marks[len(snapshots)]:
                snapshots.append(self.chip.counters())
                continue
            done = (sum(len(s.frames) for s in sinks.values()) + self._exceptions_waiting()
                    + sum(self.drop_counts().values()) + sum(self.receive_drops().values()))
            if done >= offered:
                break
        advance(SETTLE_CYCLES)
        self.chip.close_sinks()
        exceptions = self.take_exceptions()
        return CompiledResult(
            out={q: list(s.frames) for q, s in sinks.items()}, drops=self.drop_counts(),
            exceptions=exceptions, receive_drops=self.receive_drops(),
            leaks=leak_check(self.loaded), cycles=self.chip.now - start, offered=offered,
            counters=self.chip.counters(),
            window=(snapshots[0], snapshots[1]) if len(snapshots) == 2 else None)
