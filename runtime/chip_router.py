"""The control plane of the router4 microcode on the simulated chip, in simulated time.

The data plane is `microblocks/uc` (rx_eth, ipv4_fwd, tx_eth; examples/router4).  The
control plane is the target-independent `ControlPlane` running as processes of the XScale
model (`runtime/xscale.py`):

* its tables live in host **shadows** (the trie, next hops, local4); every word it writes
  is replayed into the chip's SRAM by the XScale with modelled cost, in order, with the
  route manager's barriers (docs/control-plane.md), so no microengine sees a half-written
  structure;
* `at(cycle, change)` runs a change (any function of the ControlPlane: a route update, a
  neighbour change) at a simulated time and records when its first write could be seen and
  when its last write was visible (`ChangeRecord`);
* plies a route update unlinked are reclaimed after a grace period (`grace_cycles`) longer
  than any lookup in flight;
* the exception ring is polled: each exception's frame is read from DRAM, its buffer freed,
  the handler's frames injected through the XScale's freelist and the TX rings.

Setup before traffic (`configure`) writes the tables straight into the chip (load time,
like the loader's memory init), not through the XScale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npkit.link.manifest import parse_manifest
from npkit.link.media import Layout as MediaLayout
from npkit.microblocks.uc import router4
from npkit.runtime.control_plane import ControlPlane, RouterCounters, exception_name
from npkit.runtime.loader import LoadedRun, build_from_manifest
from npkit.runtime.router_config import RouterConfig
from npkit.runtime.xscale import ControlProcessor, XScaleTiming
from npkit.runtime.xscale_update import UpdateCostModel

# [U] grace period before an unlinked ply is reused: a lookup makes at most 3 dependent
# SRAM reads (~150 cycles each unloaded); 20,000 ME cycles (14 us) leaves a wide margin
# for queueing.
GRACE_CYCLES = 20_000


@dataclass(frozen=True)
class ChangeRecord:
    """One control-plane change as the chip saw it: `start` is the cycle the XScale began
    it (no write can be visible before), `end` the cycle its last write was visible."""

    label: str
    start: int
    end: int
    words: int
    work: int = 0  # XScale cycles of the route manager's counted work (before the writes)


@dataclass
class _Memory:
    channel: int
    first_word: int
    shadow: np.ndarray


@dataclass
class ChipRouter:
    """router4 on a simulated chip with its control plane in the XScale model."""

    layout: MediaLayout = router4.LAYOUT     # the media numbers (a compiled router: as linked)
    seed: int = 1
    timing: XScaleTiming | None = None
    grace_cycles: int = GRACE_CYCLES
    poll_cycles: int | None = None          # XScale cycles; None: the config's period
    records: list[ChangeRecord] = field(default_factory=list)
    counters_cp: Counter[str] = field(default_factory=Counter)
    # ARP / ND in the control plane (runtime/resolver.py); its table writes are replayed
    # into the chip after the exception that made them, its timers fire at each exception
    resolve: bool = field(default=False, kw_only=True)

    def __post_init__(self) -> None:
        lay = self.layout
        self.loaded: LoadedRun = build_from_manifest(parse_manifest(router4.MANIFEST),
                                                  seed=self.seed)
        self.chip = self.loaded.chip
        self.memories = {
            "fib4_trie": _Memory(lay.table_channel, lay.trie_offset // 4,
                                 np.zeros(lay.trie_words, dtype=np.uint32)),
            "nexthops": _Memory(lay.nh_channel, lay.nh_offset // 4,
                                np.zeros(lay.nh_size * 4, dtype=np.uint32)),
            "local4": _Memory(lay.table_channel, lay.local4_offset // 4,
                              np.zeros(lay.local4_size * 3, dtype=np.uint32)),
        }
        self._pending: list[tuple[str, int, list[int]]] = []
        self._schedule: list[tuple[int, Callable[[ControlPlane], Any], str]] = []
        self._updater: Any = None
        self._update_costs: UpdateCostModel | None = None
        self.control = ControlPlane(self._region, lay.ports, writer=self._table_write,
                                    log_routes=True, resolve=self.resolve)
        self.cp = ControlProcessor(self.chip, self.timing)
        self.port_counters = RouterCounters()
        self._poller = self.cp.poll_ring(lay.exc_ring, lay.exc_entry_words,
                                         self._on_exception, self.poll_cycles)

    def _region(self, name: str) -> np.ndarray | None:
        memory = self.memories.get(name)
        return None if memory is None else memory.shadow

    def _table_write(self, name: str, word_index: int, values: Any) -> None:
        self._pending.append((name, word_index, [int(v) for v in values]))

    # ---- setup (load time, before traffic) ----
    def configure(self, config: RouterConfig) -> int:
        """Apply a router config and copy every table into the chip at once."""
        routes = self.control.configure(config)
        self.load_tables()
        return routes

    def load_tables(self) -> None:
        """Copy the shadows into the chip directly (load time: no traffic yet)."""
        for memory in self.memories.values():
            view = self.chip.sram(memory.channel)
            view[memory.first_word:memory.first_word + len(memory.shadow)] = memory.shadow
        self._pending.clear()
        self.control.routes.take_log(4)

    # ---- changes in simulated time ----
    def at(self, cycle: int, change: Callable[[ControlPlane], Any], label: str = "") -> None:
        """At simulated `cycle`, run `change(control_plane)` on the XScale and replay its
        writes into the chip (a ChangeRecord is appended to `records` once they land).
        Changes run one after another in the order given: cycles must not decrease."""
        if self._schedule and cycle < self._schedule[-1][0]:
            raise ValueError(f"changes must be scheduled in time order: {cycle} comes after "
                             f"{self._schedule[-1][0]}")
        self._schedule.append((cycle, change, label))
        if self._updater is None or not self._updater.is_alive:
            self._updater = self.cp.process(self._changes())

    def _changes(self) -> Generator[Any, Any, None]:
        while self._schedule:
            cycle, change, label = self._schedule.pop(0)
            if cycle > self.cp.now:
                yield self.cp.env.timeout(cycle - self.cp.now)
            start = self.cp.now
            sequence_before = self.control.routes.sequence
            self._route_work()  # the work of changes made outside `at` is not this one's
            change(self.control)
            work = self._route_work()
            yield from self.cp.compute(work)
            end, words = yield from self._replay()
            self.records.append(ChangeRecord(label, start, max(end, start), words, work))
            if self.control.routes.sequence != sequence_before:
                self.cp.process(self._reclaim(self.control.routes.sequence, end))

    def _route_work(self) -> int:
        """XScale cycles of the route manager's work since the last call, costed from what
        its updaters counted and the data-cache misses of the words they read
        (npkit.runtime.xscale_update; the cache stays warm from one change to the next).
        A change that updates no route costs nothing here: its table writes are replayed
        with their call and write costs (`_replay`)."""
        tries = self.control.routes.tries()
        if self._update_costs is None:  # the first call starts the counting
            self._update_costs = UpdateCostModel(self.cp.timing.dram_read_cycles)
            for trie in tries:
                trie.trace(True)
        cycles = 0
        for trie in tries:
            counters, trace = trie.take_counters(), trie.take_trace()
            if counters["updates"]:
                cycles += self._update_costs.cost(counters, trace).cycles
        return cycles

    def _replay(self) -> Generator[Any, Any, tuple[int, int]]:
        """Every word the change wrote, in order: table writes, then the route log."""
        end, words = self.cp.now, 0
        pending, self._pending = self._pending, []
        for name, word_index, values in pending:
            memory = self.memories[name]
            end = yield from self.cp.sram_write(memory.channel, memory.first_word + word_index,
                                                values)
            words += len(values)
        log = self.control.routes.take_log(4)
        if len(log.indices):
            trie = self.memories["fib4_trie"]
            indices = trie.first_word + log.indices.astype(np.int64)
            end = yield from self.cp.sram_write(trie.channel, indices, log.values,
                                                list(log.barriers))
            words += len(log.indices)
        return end, words

    def _reclaim(self, sequence: int, visible: int) -> Generator[Any, Any, None]:
        wait = visible + self.grace_cycles - self.cp.now
        if wait > 0:
            yield self.cp.env.timeout(wait)
        self.control.routes.reclaim(upto=sequence)

    # ---- the exception path ----
    def _on_exception(self, entry: list[int]) -> Generator[Any, Any, None]:
        lay, cp = self.layout, self.cp
        handle, word = entry
        channel = (handle >> 26) & 3
        meta = yield from cp.sram_read(channel, (handle & 0x03FFFFFF) // 4, lay.meta_words)
        lw1, lw2, lw3 = int(meta[1]), int(meta[2]), int(meta[3])
        frame = yield from cp.dram_read(lay.buffer_address(handle) + (lw1 >> 16), lw1 & 0xFFFF)
        yield from cp.enqueue(channel, lw2 & 0xFFFF, handle)
        in_port, code = lw3 >> 16, word >> 16
        self.port_counters.port(in_port).exceptions[exception_name(code)] += 1
        yield from cp.compute(cp.timing.exception_cycles)
        now_ns = int(cp.now / self.chip.config.clock_hz * 1e9)
        emits = self.control.tick(now_ns) if self.resolve else []
        emits += self.control.exceptions.handle(code, frame, in_port, word & 0xFFFF, now_ns)
        if self.resolve and self._pending:      # the resolver installed or forgot neighbours
            yield from self._replay()
        for emit in emits:
            yield from self._inject(emit.port, emit.frame)

    def _injection_freelist(self) -> tuple[int, int]:
        """(SRAM channel, queue) of the buffers the XScale's injected frames come from."""
        return self.layout.xs_channel, self.layout.freelist_queue

    def _injection_ports(self) -> int:
        return self.layout.ports

    def _inject(self, port: int, frame: bytes) -> Generator[Any, Any, None]:
        lay, cp = self.layout, self.cp
        channel, queue = self._injection_freelist()
        if not 0 <= port < self._injection_ports() or len(frame) > lay.buf_max_frame:
            self.counters_cp["inject_refused"] += 1
            return
        handle = yield from cp.dequeue(channel, queue)
        if handle == 0:
            self.counters_cp["inject_no_buffer"] += 1
            return
        yield from cp.dram_write(lay.frame_address(handle), frame)
        meta_word = (handle & 0x03FFFFFF) // 4
        yield from cp.sram_write((handle >> 26) & 3, meta_word + 1,
                                 [lay.buf_data_offset << 16 | len(frame),
                                  len(frame) << 16 | queue,
                                  lay.host_port << 16 | port])
        yield from cp.ring_put(lay.tx_ring(port), [handle])
        self.port_counters.port(port).injected += 1
        self.counters_cp["injected"] += 1

    # ---- running and counters ----
    def run(self, cycles: int) -> None:
        self.cp.run(cycles=cycles)

    def counters(self) -> dict[str, Any]:
        """Per port rx / tx (the chip's ports), exceptions by code and injections (the
        control plane), drops by reason (the microcode's counters are per reason, not per
        port), the exception handler's outcomes and the XScale's own counters."""
        chip_ports = self.chip.counters()["ports"]
        out: dict[str, Any] = {"ports": {}}
        for port, c in enumerate(chip_ports):
            mine = self.port_counters.port(port)
            out["ports"][port] = {"rx": int(c.get("rx_frames", 0)),
                                  "tx": int(c.get("tx_frames", 0)),
                                  "rx_dropped": {k: int(v) for k, v in c.items()
                                                 if k.startswith("rx_dropped")},
                                  "injected": mine.injected,
                                  "exceptions": dict(mine.exceptions)}
        out["drops"] = {k: v for k, v in router4.counters(self.chip, self.layout).items() if v}
        out["exception_path"] = dict(self.control.exceptions.counters)
        out["control_plane"] = dict(self.counters_cp)
        out["xscale"] = self.cp.counters()
        return out
