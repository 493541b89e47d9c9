"""The XScale control plane driving a compiled MBL router on the simulated chip.

The counterpart of `npkit.runtime.chip_router.ChipRouter` for a program the ME backend
compiled and linked (examples/router/router.mbl, examples/pos_router/pos_router.mbl):

* the control plane's tables live in a **`NativeProgram` shadow** of the same program (its
  memories have the native packing, which is the chip's: `CompiledRun.load_memories`
  copies them word for word);
* every word the control plane writes (the route manager's write logs of both tries with
  their barriers, next-hop and own-address writes through the tables' `writer` hook) is
  replayed by the XScale model (`runtime/xscale.py`) to the address the linker placed
  that memory at (the manifest's [program] memories), so each costs modelled time and becomes
  visible to the MEs in order;
* `at(cycle, change)`, `ChangeRecord`s, grace-period reclaim and the exception path
  (polling the exception ring the compiled dispatch fills, injecting the handler's frames
  through an XScale freelist and the TX rings) are ChipRouter's, inherited unchanged.

`update_rate` measures a given stream of updates back to back in simulated time (the NPF
benchmark's "maximum concurrent update rate"); `at_rate` spreads a stream of updates at a
given rate for the forwarding-under-updates measurements.  Which updates, on which table,
is the benchmark's choice (bench/lab/updates.py): the runtime takes them as arguments.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.sema import Program
from npkit.compiler.me import compile_me
from npkit.link import DEFAULT_PLATFORM, Platform, for_ports, link
from npkit.link.manifest import FreelistSpec, Manifest
from npkit.link.plan import CHANNEL_SHIFT
from npkit.link.platform import as_platform
from npkit.link.program import ProgramMemory
from npkit.link.sram import placed
from npkit.runtime.chip_router import ChipRouter
from npkit.runtime.compiled import CompiledResult, CompiledRun, program_info
from npkit.runtime.control_plane import ControlPlane, RouterCounters
from npkit.runtime.loader import build_freelist
from npkit.runtime.route_manager import RouteUpdate
from npkit.runtime.xscale import ControlProcessor

# The XScale's buffers share SRAM channel `xs_channel` with the receive ports' freelists
# (queue 0 with two ports; queues 0 and 1 with four, two ports a channel), so they get a
# Q-array queue no port uses; tx_eth frees a buffer to the queue its metadata LW2 names.
XSCALE_QUEUE = 2
ETHERNET_KINDS = ("10gbe", "1gbe")
# the route memories: microblocks/lpm.mbl's 16-8-8 tries or lpm_poptrie.mbl's Poptries
TRIES = ((4, "fib4_trie"), (6, "fib6_trie"), (4, "fib4_poptrie"), (6, "fib6_poptrie"))
RUN_STEP_CYCLES = 100_000


def link_router(source: str | Path, platform: Platform | str = DEFAULT_PLATFORM, *,
                port_kinds: Sequence[str] | None = None,
                fwd_mes_per_port: int | None = None,
                buf_bytes: int | None = None) -> Manifest:
    """Compile an MBL router (its first pipeline) for the MEs and link it for `platform`
    (or, given `port_kinds`, the IXP2800 platform with those ports); `buf_bytes`: the
    linker's buffer size (jumbo frames)."""
    program = compile_file(source)
    if port_kinds is not None:
        platform = for_ports(tuple(port_kinds))
    platform = as_platform(platform)
    program = placed(program, platform.chip_config())   # compiled once, at its addresses
    return link(program, compile_me(program, next(iter(program.pipelines))), platform,
                fwd_mes_per_port=fwd_mes_per_port, buf_bytes=buf_bytes)


def xscale_freelist(linked: Manifest) -> FreelistSpec:
    """The XScale's buffer freelist for a linked program: router4's XS descriptors (the
    linker's `xs_desc_base`, past the receive ports', so their DRAM buffers are distinct
    under the one handle -> buffer formula) on their own queue.  A LinkError-like
    ValueError if a program memory is in the way."""
    info = program_info(linked)
    lay = info.layout()
    spec = FreelistSpec(
        channel=lay.xs_channel, queue=XSCALE_QUEUE, descriptor_base=lay.xs_desc_base,
        descriptor_bytes=lay.desc_bytes, count=lay.xs_bufs,
        dram_base=(lay.xs_desc_base - lay.buf_desc_base) // lay.desc_bytes * lay.buf_bytes,
        buffer_bytes=lay.buf_bytes, where="the XScale")
    low = (spec.channel << CHANNEL_SHIFT) + spec.descriptor_base
    high = low + spec.count * spec.descriptor_bytes
    for m in info.memories:
        if m.space == "sram" and m.address < high and low < m.address + m.bytes:
            raise ValueError(f"the XScale's buffer descriptors ({low:#x}..{high:#x}) overlap "
                             f"memory {m.name}; this program cannot inject frames")
    return spec


@dataclass(frozen=True)
class SramRun:
    """A stretch of a write that stays on one SRAM channel: `positions` slice the write,
    `words` are the word indices in the channel's view."""

    channel: int
    positions: slice
    words: np.ndarray


def sram_runs(placement: ProgramMemory, indices: np.ndarray) -> list[SramRun]:
    """Split word writes into a memory (word indices from its start) at SRAM channel
    changes: a memory larger than a channel continues on the next one."""
    address = placement.address + 4 * np.asarray(indices, dtype=np.int64)
    channels = address >> CHANNEL_SHIFT
    words = (address & ((1 << CHANNEL_SHIFT) - 1)) >> 2
    cuts = [0, *(np.flatnonzero(np.diff(channels)) + 1).tolist(), len(address)]
    return [SramRun(int(channels[lo]), slice(lo, hi), words[lo:hi])
            for lo, hi in zip(cuts, cuts[1:], strict=False) if hi > lo]


def barriers_within(barriers: Sequence[int], positions: slice) -> list[int]:
    """The barriers strictly inside a run, relative to its start (its edges are ordered
    anyway: the model makes a later call's words visible after an earlier call's)."""
    return [int(b) - positions.start for b in barriers
            if positions.start < int(b) < positions.stop]


@dataclass(repr=False)
class CompiledRouter(ChipRouter):
    """A linked MBL router on a simulated chip with its control plane in the XScale model.

    `CompiledRouter(linked=link_router("examples/router/router.mbl"))` (`program`: the
    checked MBL program, default a fresh compile of the manifest's source; `shadow`: the
    host shadow, a `NativeProgram` of that program whose memories are all zero, default a
    new one -- a caller building many routers of one program passes one it clears, so the
    native code is compiled once); `configure(config)`
    or set the tables through `control` then `load_tables()` (load time); `at(cycle,
    change)` and `run(cycles)` as ChipRouter.  `exception_path`: poll the exception ring
    and answer through the ExceptionHandler; None (default) means "when every port is
    Ethernet" (the handler parses Ethernet frames; POS exceptions are left on the ring).
    False also suits measurements without the XScale's polling.  The inherited `layout`
    field is replaced by the linked program's layout (router4's, the moved parts moved);
    `__post_init__` builds everything ChipRouter's does, on CompiledRun's chip."""

    linked: Manifest = field(kw_only=True, repr=False)
    exception_path: bool | None = field(default=None, kw_only=True)
    program: Program | None = field(default=None, kw_only=True, repr=False)
    shadow: NativeProgram | None = field(default=None, kw_only=True, repr=False)

    def __post_init__(self) -> None:  # replaces ChipRouter's (router4's chip): not called
        ethernet = all(kind in ETHERNET_KINDS for kind in self.linked.kinds())
        if self.exception_path is None:
            self.exception_path = ethernet
        elif self.exception_path and not ethernet:
            raise ValueError(f"the exception path parses Ethernet frames; ports "
                             f"{self.linked.kinds()} are not all Ethernet "
                             "(pass exception_path=False)")
        self.compiled = CompiledRun(self.linked, seed=self.seed)
        self.info = self.compiled.program
        self.layout = self.compiled.layout
        if self.program is None:
            self.program = (self.shadow.program if self.shadow is not None
                            else compile_file(self.info.source))
        self.chip = self.compiled.chip
        self.loaded = self.compiled.loaded
        self.xs_freelist = xscale_freelist(self.linked)
        build_freelist(self.chip, self.xs_freelist)
        self.loaded.freelists.append(self.xs_freelist)
        self.native = (NativeProgram(self.program) if self.shadow is None  # the host shadow
                       else self.shadow)
        self.families = tuple(sorted({f for f, name in TRIES if name in self.program.memories}))
        self._pending: list[tuple[str, int, list[int]]] = []
        self._schedule = []
        self._updater = None
        self._update_costs = None
        self.control = ControlPlane(self._region, len(self.linked.ports),
                                    writer=self._table_write, log_routes=True,
                                    resolve=self.resolve)
        self.cp = ControlProcessor(self.chip, self.timing)
        self.port_counters = RouterCounters()
        self._poller = (self.cp.poll_ring(self.layout.exc_ring, self.layout.exc_entry_words,
                                          self._on_exception, self.poll_cycles)
                        if self.exception_path else None)

    def _region(self, name: str) -> np.ndarray | None:
        return self.native.region(name, missing_ok=True)

    # ---- setup (load time) ----
    def load_tables(self) -> None:
        """Copy every memory of the shadow into the chip directly (load time: no traffic
        yet) and drop the writes made so far."""
        self.compiled.load_memories(self.native)
        self._pending.clear()
        for family in self.families:
            self.control.routes.take_log(family)

    # ---- replay in simulated time ----
    def _replay(self) -> Generator[Any, Any, tuple[int, int]]:
        """Every word the change wrote, in order: table writes, then each trie's log."""
        end, words = self.cp.now, 0
        pending, self._pending = self._pending, []
        for name, word_index, values in pending:
            indices = np.arange(word_index, word_index + len(values), dtype=np.int64)
            end = yield from self._write(name, indices, np.asarray(values, dtype=np.int64), ())
            words += len(values)
        for family, name in TRIES:
            if name not in self.program.memories:
                continue
            log = self.control.routes.take_log(family)
            if len(log.indices):
                end = yield from self._write(name, log.indices, log.values, log.barriers)
                words += len(log.indices)
        return end, words

    def _write(self, name: str, indices: np.ndarray, values: np.ndarray,
               barriers: Sequence[int]) -> Generator[Any, Any, int]:
        """Posted writes into a memory at its linked address; returns the cycle the last
        word is visible."""
        placement = self.info.memory(name)
        if placement.space == "scratch":
            return (yield from self.cp.scratch_write(placement.word + indices, values,
                                                     list(barriers)))
        if placement.space != "sram":
            raise ValueError(f"memory {name} is in ME local memory: the XScale cannot "
                             "write it while the MEs run (declare it in sram or scratch)")
        end = self.cp.now
        for run in sram_runs(placement, indices):
            end = yield from self.cp.sram_write(run.channel, run.words, values[run.positions],
                                                barriers_within(barriers, run.positions))
        return end

    # ---- the exception path's injection (ChipRouter's, with the XScale's own queue) ----
    def _injection_freelist(self) -> tuple[int, int]:
        return self.xs_freelist.channel, self.xs_freelist.queue

    def _injection_ports(self) -> int:
        return len(self.linked.ports)

    # ---- running and counters ----
    def forward(self, frames: dict[int, list[bytes]], load: float = 0.5,
                max_cycles: int | None = None,
                window: tuple[float, float] | None = None) -> CompiledResult:
        """`CompiledRun.run` with the XScale beside the chip: changes given to `at` land
        while the frames flow (cycles of `at` count from the chip's start, not this
        call's).  Exceptions the XScale took are in `counters()`, not in the result (and,
        as the run stops once every frame is accounted for, a run with exceptions lasts
        until `max_cycles`)."""
        return self.compiled.run(frames, load, max_cycles, window,
                                 advance=lambda cycles: self.cp.run(cycles=cycles))

    def run_until_changes_done(self, max_cycles: int) -> None:
        """Run until every change given to `at` has landed (or `max_cycles` passed)."""
        start = self.cp.now
        while (self._schedule or (self._updater is not None and self._updater.is_alive)) \
                and self.cp.now - start < max_cycles:
            self.cp.run(cycles=min(RUN_STEP_CYCLES, max_cycles - (self.cp.now - start)))

    def counters(self) -> dict[str, Any]:
        """As ChipRouter.counters, with the compiled program's drop counters by reason
        name and the receive drops."""
        chip_ports = self.chip.counters()["ports"]
        out: dict[str, Any] = {"ports": {}}
        for port, c in enumerate(chip_ports):
            mine = self.port_counters.port(port)
            out["ports"][port] = {"rx": int(c.get("rx_frames", 0)),
                                  "tx": int(c.get("tx_frames", 0)),
                                  "injected": mine.injected,
                                  "exceptions": dict(mine.exceptions)}
        out["drops"] = self.compiled.drop_counts()
        out["receive_drops"] = self.compiled.receive_drops()
        out["exception_path"] = dict(self.control.exceptions.counters)
        out["control_plane"] = dict(self.counters_cp)
        out["xscale"] = self.cp.counters()
        return out


# --------------------------------------------------------------------------- measurements
@dataclass(frozen=True)
class UpdateRate:
    family: int
    updates: int
    words: int                  # words written to chip memory by the stream
    cycles: int                 # first update's start to the last word visible
    per_second: float           # updates per second of simulated time
    work: int = 0               # XScale cycles of the route manager's counted work, in all


def update_rate(router: CompiledRouter, updates: Sequence[RouteUpdate]) -> UpdateRate:
    """Apply `updates` back to back on the XScale (each one change: route-manager work,
    then its writes replayed) and measure them in simulated time."""
    if not updates:
        raise ValueError("update_rate: no updates")
    first = len(router.records)
    now = router.cp.now
    for update in updates:
        router.at(now, lambda c, u=update: c.routes.apply([u]), label="update")
    router.run_until_changes_done(max_cycles=200_000 * len(updates))
    records = router.records[first:]
    if len(records) != len(updates):
        raise RuntimeError(f"only {len(records)} of {len(updates)} updates landed")
    cycles = max(r.end for r in records) - records[0].start
    families = {u.family for u in updates}
    return UpdateRate(families.pop() if len(families) == 1 else 0, len(updates),
                      sum(r.words for r in records), cycles,
                      len(updates) / (cycles / router.chip.config.clock_hz),
                      sum(r.work for r in records))


def at_rate(router: CompiledRouter, updates: Sequence[RouteUpdate], per_second: float,
            start_cycle: int) -> list[int]:
    """Schedule `updates` evenly at `per_second` of simulated time from `start_cycle`
    (e.g. 25 % of the maximum rate); returns their cycles."""
    if per_second <= 0:
        raise ValueError(f"at_rate: rate must be > 0, got {per_second}")
    gap = router.chip.config.clock_hz / per_second
    cycles = [start_cycle + round(i * gap) for i in range(len(updates))]
    for cycle, update in zip(cycles, updates, strict=True):
        router.at(cycle, lambda c, u=update: c.routes.apply([u]), label="update")
    return cycles
