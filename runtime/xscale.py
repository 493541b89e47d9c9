"""The XScale control processor in simulated time.

Control code (route manager, exception handlers) runs as SimPy processes on an environment
whose clock is the chip's: ME cycles, starting at ``chip.now``.  ``ControlProcessor.run``
advances the chip and the processes together: it steps the SimPy events, and before an
access samples the chip or a posted write lands the chip is run up to that moment, so every
access sees the chip exactly at its simulated moment (pure waits cost no ``chip.run``).
With no event pending the chip runs the rest of the budget in one call.

The XScale is one in-order core: every access primitive holds it (a SimPy ``Resource`` of
capacity 1) for its cost, so two processes share it like threads on one CPU.

* A **read** (``sram_read``, ``scratch_read``, ``dram_read``, ``ring_get``, ``dequeue``) is
  ordered after every earlier posted write (the controllers enforce read-after-write), takes
  its value from the chip at that moment, then stalls the core for the read latency (one
  latency per ``read_burst_words`` burst).
* A **write** (``sram_write``, ``scratch_write``, ``dram_write``, ``enqueue``) is posted:
  each 32-bit word costs ``write_issue_cycles`` on the core and becomes visible to the MEs
  the unit's write latency later, strictly in program order; at most ``max_posted_writes``
  words are in flight (one more stalls the core until the oldest lands).  Words between two
  barriers are applied to the chip together at the visibility time of the last of them (the
  writer declared them independent, so delaying the earlier ones is one interleaving the
  hardware allows); a barrier position means every earlier word is visible before any later
  one.  One ``chip.run`` per group, not per word.
* ``ring_put`` is a write the core waits for (it must learn whether the ring had room):
  ``OverflowError`` is raised in the process when it did not.

All costs come from ``XScaleTiming`` (the chip config's ``[xscale]`` section, XScale
cycles) and are converted to ME cycles rounding up.  See docs/control-plane.md.
"""

from __future__ import annotations

import inspect
import math
from collections import deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import numpy as np
import simpy

from npkit.sim.chip import DEFAULT_QUIET_CYCLES, SRAM_CHANNEL_SHIFT, Chip, RunResult
from npkit.sim.config import ChipConfig

T = TypeVar("T")
Process = Generator[simpy.Event, Any, T]
Handler = Callable[[list[int]], Any]
UNITS = ("sram", "scratch", "dram")
MASK32 = 0xFFFF_FFFF


# --------------------------------------------------------------------------- timing
@dataclass(frozen=True)
class XScaleTiming:
    """Clocks and access costs of the control processor (costs in XScale cycles)."""

    clock_hz: float
    me_clock_hz: float
    call_cycles: int
    sram_read_cycles: int
    scratch_read_cycles: int
    dram_read_cycles: int
    sram_write_cycles: int
    scratch_write_cycles: int
    dram_write_cycles: int
    write_issue_cycles: int
    max_posted_writes: int
    read_burst_words: int
    poll_period_cycles: int
    exception_cycles: int           # the core components' own work per exception packet
    # (a route update's work is costed from what the updater counted: xscale_update.py)

    @classmethod
    def from_config(cls, config: ChipConfig) -> XScaleTiming:
        xscale = config.raw["xscale"]
        ints = {f.name: int(xscale[f.name]) for f in fields(cls)
                if f.name not in ("clock_hz", "me_clock_hz")}
        return cls(clock_hz=float(xscale["clock_hz"]), me_clock_hz=config.clock_hz, **ints)

    @property
    def me_cycles_per_cycle(self) -> float:
        return self.me_clock_hz / self.clock_hz

    def me_cycles(self, xscale_cycles: float) -> int:
        """ME cycles covering ``xscale_cycles`` XScale cycles (rounded up)."""
        return math.ceil(xscale_cycles * self.me_clock_hz / self.clock_hz - 1e-9)

    def read_cycles(self, unit: str, words: int) -> int:
        """XScale cycles a read of ``words`` words stalls the core: one latency per burst."""
        bursts = max(1, math.ceil(words / self.read_burst_words))
        return int(getattr(self, f"{unit}_read_cycles")) * bursts

    def write_cycles(self, unit: str) -> int:
        return int(getattr(self, f"{unit}_write_cycles"))


# --------------------------------------------------------------------------- bookkeeping
@dataclass
class _Stats:
    start: int
    busy: int = 0  # ME cycles the core was held
    stall: int = 0  # ME cycles of that spent waiting for posted writes (slots, ordering)
    reads: dict[str, int] = field(default_factory=lambda: dict.fromkeys(UNITS, 0))
    words_read: dict[str, int] = field(default_factory=lambda: dict.fromkeys(UNITS, 0))
    writes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(UNITS, 0))
    words_written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(UNITS, 0))
    write_groups: int = 0
    ring_gets: int = 0
    ring_puts: int = 0
    ring_entries: int = 0
    enqueues: int = 0
    dequeues: int = 0
    chip_runs: int = 0


@dataclass
class _Poller:
    process: simpy.Process | None
    ring: int
    entry_words: int
    parked: bool = False  # sleeping between polls, the ring found empty


@dataclass(frozen=True)
class _Group:
    """Posted words made visible together, at one moment."""

    words: int
    apply: Callable[[], None]


# --------------------------------------------------------------------------- the model
class ControlProcessor:
    """The XScale control processor, interleaved with ``chip`` in simulated time."""

    def __init__(self, chip: Chip, timing: XScaleTiming | None = None) -> None:
        self.chip = chip
        self.timing = timing or XScaleTiming.from_config(chip.config)
        self.env = simpy.Environment(initial_time=chip.now)
        self._core = simpy.Resource(self.env, capacity=1)
        self._slots: deque[int] = deque()  # visibility times of the last posted words
        self._last_visible = chip.now  # when the latest posted word becomes visible
        self._in_flight = 0  # write groups scheduled, not yet applied
        self._user: list[simpy.Process] = []
        self._pollers: list[_Poller] = []
        self._stats = _Stats(start=chip.now)
        self._frames = 0  # frames the chip transmitted during our chip.run calls

    # ------------------------------------------------------------------ processes
    @property
    def now(self) -> int:
        """Simulated time of the control processor (ME cycles)."""
        return int(self.env.now)

    def process(self, generator: Process[Any]) -> simpy.Process:
        """Start a process (a generator using ``yield from cp.<access>(...)``) now."""
        if not inspect.isgenerator(generator):
            raise TypeError("ControlProcessor.process takes a generator (call the generator "
                            "function: cp.process(update(cp)), not cp.process(update))")
        proc = self.env.process(generator)
        self._user = [p for p in self._user if p.is_alive]
        self._user.append(proc)
        return proc

    def poll_ring(self, ring: int, entry_words: int, handler: Handler,
                  period_cycles: int | None = None) -> simpy.Process:
        """Start a process that, every ``period_cycles`` XScale cycles (default: the config's
        ``poll_period_cycles``), takes every complete ``entry_words``-word entry from scratch
        ring ``ring`` (each get costed as a scratch read) and calls ``handler(entry)``; a
        handler that returns a generator is run inside the poller, so it may make costed
        accesses.  ``process.interrupt()`` stops the poller."""
        state = self.chip.ring_state(ring) if 0 <= ring < self.chip.config.scratch_rings \
            else {}
        if not state.get("configured"):
            raise ValueError(f"poll_ring: scratch ring {ring} is not configured "
                             "(chip.configure_ring first)")
        low, high = 1, self.chip.config.ring_words_range[1]
        if not low <= entry_words <= high:
            raise ValueError(f"poll_ring: entry_words {entry_words} outside {low}..{high}")
        period_x = self.timing.poll_period_cycles if period_cycles is None else period_cycles
        if period_x <= 0:
            raise ValueError(f"poll_ring: period_cycles must be > 0, got {period_x}")
        period = self.timing.me_cycles(period_x)
        poller = _Poller(None, ring, entry_words)
        poller.process = self.env.process(self._poll(poller, handler, period))
        self._pollers.append(poller)
        return poller.process

    def _poll(self, poller: _Poller, handler: Handler, period: int) -> Process[None]:
        try:
            while True:
                poller.parked = False
                while True:
                    entry = yield from self.ring_get(poller.ring, poller.entry_words)
                    if not entry:
                        break
                    self._stats.ring_entries += 1
                    result = handler(entry)
                    if inspect.isgenerator(result):
                        yield from result
                poller.parked = True
                yield self.env.timeout(period)
        except simpy.Interrupt:
            poller.parked = True

    # ------------------------------------------------------------------ running
    def run(self, cycles: int | None = None, until_idle: bool = False,
            quiet_cycles: int = DEFAULT_QUIET_CYCLES) -> RunResult:
        """Advance the chip and the processes together by ``cycles`` ME cycles, or
        (``until_idle``) until the chip reports idle while the control plane is idle too: no
        user process alive, no posted write in flight, every poller asleep on a ring holding
        no complete entry.  Both given: whichever comes first.  ``quiet_cycles`` (as in
        ``Chip.run``) only counts within one stretch the chip runs uninterrupted, i.e. up
        to the next poll."""
        if cycles is None and not until_idle:
            raise ValueError("run: give cycles= or until_idle=True")
        if cycles is not None and cycles < 0:
            raise ValueError(f"run: cycles must be >= 0, got {cycles}")
        chip, env = self.chip, self.env
        self._catch_up()
        start, frames_before = chip.now, self._frames
        limit = math.inf if cycles is None else start + cycles
        while True:
            upcoming = env.peek()
            if until_idle and self._idle():
                horizon = min(upcoming, limit)
                if horizon > chip.now:
                    budget = None if horizon == math.inf else int(horizon - chip.now)
                    reason = self._chip_run(budget, until_idle=True, quiet_cycles=quiet_cycles)
                    if reason in ("idle", "quiet"):
                        self._sync_env()
                        return RunResult(reason, chip.now - start, self._frames - frames_before)
            if upcoming > limit:
                self._advance_chip(int(limit))
                self._sync_env()
                return RunResult("cycles", chip.now - start, self._frames - frames_before)
            env.step()

    def sync(self) -> None:
        """Run the chip up to the control processor's time.  The primitives do this before
        they touch the chip (so pure waits cost no chip.run); call it before reading the
        chip directly from a process."""
        self._advance_chip(int(self.env.now))

    def _advance_chip(self, until: int) -> None:
        if until > self.chip.now:
            self._chip_run(until - self.chip.now)

    def _chip_run(self, cycles: int | None, until_idle: bool = False,
                  quiet_cycles: int = DEFAULT_QUIET_CYCLES) -> str:
        self._stats.chip_runs += 1
        result = self.chip.run(cycles=cycles, until_idle=until_idle, quiet_cycles=quiet_cycles)
        self._frames += result.frames_out
        return result.reason

    def _catch_up(self) -> None:
        """Bring the chip and the control plane to the same cycle.  When the chip was run
        directly (not through ``run``), the control plane's events due meanwhile happen
        now, late."""
        env = self.env
        self.sync()
        while env.peek() <= self.chip.now:
            env.step()
        self._sync_env()

    def _sync_env(self) -> None:
        if self.chip.now > self.env.now:
            self.env.run(until=self.chip.now)

    def _idle(self) -> bool:
        if self._in_flight or self._core.count or self._core.queue:
            return False
        if any(p.is_alive for p in self._user):
            return False
        live = [p for p in self._pollers if p.process is not None and p.process.is_alive]
        if any(not p.parked for p in live):
            return False
        if live:
            self.sync()  # ring contents at this moment
        return all(self.chip.ring_state(p.ring)["count"] < p.entry_words for p in live)

    # ------------------------------------------------------------------ cost primitives
    def compute(self, xscale_cycles: float) -> Process[None]:
        """Spend ``xscale_cycles`` of the core on computation."""
        if xscale_cycles < 0:
            raise ValueError(f"compute: cycles must be >= 0, got {xscale_cycles}")
        with self._core.request() as request:
            yield request
            begin = self.env.now
            yield self.env.timeout(self.timing.me_cycles(xscale_cycles))
            self._stats.busy += self.env.now - begin

    def _read(self, unit: str, words: int, sample: Callable[[], T]) -> Process[T]:
        """Call overhead, wait until earlier posted writes are visible, sample, stall."""
        timing, env = self.timing, self.env
        with self._core.request() as request:
            yield request
            begin = env.now
            yield env.timeout(timing.me_cycles(timing.call_cycles))
            if self._last_visible > env.now:  # read-after-write: earlier writes land first
                self._stats.stall += self._last_visible - env.now
                yield env.timeout(self._last_visible - env.now)
            self.sync()
            value = sample()
            yield env.timeout(timing.me_cycles(timing.read_cycles(unit, words)))
            self._stats.busy += env.now - begin
        self._stats.reads[unit] += 1
        self._stats.words_read[unit] += words
        return value

    def _post(self, unit: str, groups: Sequence[_Group], wait: bool = False) -> Process[int]:
        """Issue posted words group by group; returns the visibility time of the last.
        ``wait``: the core stays stalled until then."""
        timing, env = self.timing, self.env
        with self._core.request() as request:
            yield request
            begin = env.now
            clock = env.now + timing.me_cycles(timing.call_cycles)
            issue = timing.me_cycles(timing.write_issue_cycles)
            latency = timing.me_cycles(timing.write_cycles(unit))
            slots, depth = self._slots, timing.max_posted_writes
            for group in groups:
                for _ in range(group.words):
                    if len(slots) >= depth:  # buffer full: wait for the oldest to land
                        oldest = slots.popleft()
                        if oldest > clock:
                            self._stats.stall += oldest - clock
                            clock = oldest
                    clock += issue
                    self._last_visible = max(clock + latency, self._last_visible)
                    slots.append(self._last_visible)
                self._schedule(self._last_visible, group.apply)
                self._stats.words_written[unit] += group.words
            self._stats.writes[unit] += 1
            self._stats.write_groups += len(groups)
            if wait and self._last_visible > clock:
                self._stats.stall += self._last_visible - clock
                clock = self._last_visible
            yield env.timeout(clock - env.now)
            self._stats.busy += env.now - begin
        return self._last_visible

    def _schedule(self, when: int, apply: Callable[[], None]) -> None:
        self._in_flight += 1
        event = self.env.timeout(when - self.env.now)

        def land(_event: simpy.Event) -> None:
            self.sync()
            self._in_flight -= 1
            apply()

        event.callbacks.append(land)

    # ------------------------------------------------------------------ SRAM
    def sram_read(self, channel: int, word_index: int, count: int = 1) -> Process[np.ndarray]:
        """``count`` words of SRAM channel ``channel`` from word ``word_index`` (a copy)."""
        view = self._sram(channel)
        _check_span("sram_read", word_index, count, len(view), f"SRAM channel {channel}")
        return (yield from self._read("sram", count,
                                      lambda: view[word_index:word_index + count].copy()))

    def sram_write(self, channel: int, index: int | Sequence[int] | np.ndarray,
                   values: int | Sequence[int] | np.ndarray,
                   barriers: Sequence[int] | None = None) -> Process[int]:
        """Posted writes of ``values`` to SRAM channel ``channel``: at words
        ``index, index+1, ...`` (an int) or at the given word indices (a write log), in
        order.  ``barriers``: positions p (0..len) such that every word before p is visible
        before any word from p on.  Returns the cycle at which the last word is visible."""
        view = self._sram(channel)
        indices, words = _indices_values("sram_write", index, values, len(view),
                                         f"SRAM channel {channel}")
        return (yield from self._post("sram", _groups(view, indices, words, barriers)))

    def _sram(self, channel: int) -> np.ndarray:
        if not 0 <= channel < self.chip.config.sram_channels:
            raise ValueError(f"SRAM channel {channel} does not exist "
                             f"({self.chip.config.sram_channels} channels)")
        return self.chip.sram(channel)

    # ------------------------------------------------------------------ scratch and rings
    def scratch_read(self, word_index: int, count: int = 1) -> Process[np.ndarray]:
        view = self.chip.scratch()
        _check_span("scratch_read", word_index, count, len(view), "scratch")
        return (yield from self._read("scratch", count,
                                      lambda: view[word_index:word_index + count].copy()))

    def scratch_write(self, index: int | Sequence[int] | np.ndarray,
                      values: int | Sequence[int] | np.ndarray,
                      barriers: Sequence[int] | None = None) -> Process[int]:
        view = self.chip.scratch()
        indices, words = _indices_values("scratch_write", index, values, len(view), "scratch")
        return (yield from self._post("scratch", _groups(view, indices, words, barriers)))

    def ring_get(self, ring: int, count: int = 1) -> Process[list[int]]:
        """Take ``count`` words from scratch ring ``ring``, or none (``[]``) when it holds
        fewer (all or nothing, as an ME's ``scratch[get]``); costed as a scratch read."""
        self._check_ring("ring_get", ring)
        high = self.chip.config.ring_words_range[1]
        if not 1 <= count <= high:
            raise ValueError(f"ring_get: count {count} outside 1..{high}")
        self._stats.ring_gets += 1
        return (yield from self._read("scratch", count,
                                      lambda: self.chip.ring_get(ring, count)))

    def ring_put(self, ring: int, words: Sequence[int]) -> Process[int]:
        """Append ``words`` to scratch ring ``ring``: posted words, but the core waits until
        they land (it must learn whether they fit); OverflowError in the process when the
        ring has no room.  Returns the cycle at which they landed."""
        self._check_ring("ring_put", ring)
        data = [int(w) & MASK32 for w in words]
        if not data:
            raise ValueError("ring_put: no words to put")
        outcome: list[BaseException] = []

        def put() -> None:
            try:
                self.chip.ring_put(ring, data)
            except OverflowError as err:  # reported in the process, not in run()
                outcome.append(err)

        landed = yield from self._post("scratch", [_Group(len(data), put)], wait=True)
        self._stats.ring_puts += 1
        if outcome:
            raise OverflowError(f"ring_put: scratch ring {ring}: {outcome[0]}")
        return landed

    def _check_ring(self, what: str, ring: int) -> None:
        if not 0 <= ring < self.chip.config.scratch_rings:
            raise ValueError(f"{what}: scratch ring {ring} does not exist "
                             f"(rings 0..{self.chip.config.scratch_rings - 1})")
        if not self.chip.ring_state(ring)["configured"]:
            raise ValueError(f"{what}: scratch ring {ring} is not configured "
                             "(chip.configure_ring first)")

    # ------------------------------------------------------------------ DRAM
    def dram_read(self, addr: int, nbytes: int) -> Process[bytes]:
        view = self.chip.dram()
        _check_span("dram_read", addr, nbytes, len(view), "DRAM", unit="byte")
        return (yield from self._read("dram", math.ceil(nbytes / 4),
                                      lambda: view[addr:addr + nbytes].tobytes()))

    def dram_write(self, addr: int, data: bytes) -> Process[int]:
        """Posted write of ``data`` at DRAM byte address ``addr`` (one word per 4 bytes)."""
        view = self.chip.dram()
        payload = np.frombuffer(bytes(data), dtype=np.uint8).copy()
        _check_span("dram_write", addr, len(payload), len(view), "DRAM", unit="byte")

        def land() -> None:
            view[addr:addr + len(payload)] = payload

        return (yield from self._post("dram", [_Group(math.ceil(len(payload) / 4), land)]))

    # ------------------------------------------------------------------ Q-array
    def enqueue(self, channel: int, queue: int, handle: int) -> Process[int]:
        """Posted Q-array enqueue (one SRAM word, in order with the other writes)."""
        self._check_queue("enqueue", channel, queue)
        if not 0 < handle <= MASK32:
            raise ValueError(f"enqueue: handle {handle:#x} must be a non-zero 32-bit SRAM "
                             "byte address (0 means an empty queue)")
        if (handle >> SRAM_CHANNEL_SHIFT) & 3 >= self.chip.config.sram_channels:
            raise ValueError(f"enqueue: handle {handle:#x} names SRAM channel "
                             f"{(handle >> SRAM_CHANNEL_SHIFT) & 3}, which does not exist")
        self._stats.enqueues += 1
        return (yield from self._post("sram", [_Group(
            1, lambda: self.chip.enqueue(channel, queue, handle))]))

    def dequeue(self, channel: int, queue: int) -> Process[int]:
        """Remove the head of a Q-array queue (0 when empty); costed as an SRAM read."""
        self._check_queue("dequeue", channel, queue)
        self._stats.dequeues += 1
        return (yield from self._read("sram", 1, lambda: self.chip.dequeue(channel, queue)))

    def _check_queue(self, what: str, channel: int, queue: int) -> None:
        config = self.chip.config
        if not 0 <= channel < config.sram_channels:
            raise ValueError(f"{what}: SRAM channel {channel} does not exist "
                             f"({config.sram_channels} channels)")
        if not 0 <= queue < config.queue_descriptors:
            raise ValueError(f"{what}: Q-array queue {queue} outside "
                             f"0..{config.queue_descriptors - 1}")

    # ------------------------------------------------------------------ observability
    def counters(self) -> dict[str, Any]:
        """Busy vs elapsed time (ME and XScale cycles), accesses and words per unit, ring
        and queue operations, write groups and chip.run calls made."""
        stats, ratio = self._stats, self.timing.me_cycles_per_cycle
        elapsed = int(self.env.now) - stats.start
        return {
            "elapsed_cycles": elapsed, "busy_cycles": int(stats.busy),
            "stall_cycles": int(stats.stall),
            "elapsed_xscale_cycles": elapsed / ratio, "busy_xscale_cycles": stats.busy / ratio,
            "utilisation": stats.busy / elapsed if elapsed else 0.0,
            "reads": dict(stats.reads), "words_read": dict(stats.words_read),
            "writes": dict(stats.writes), "words_written": dict(stats.words_written),
            "write_groups": stats.write_groups, "writes_in_flight": self._in_flight,
            "ring_gets": stats.ring_gets, "ring_entries": stats.ring_entries,
            "ring_puts": stats.ring_puts, "enqueues": stats.enqueues,
            "dequeues": stats.dequeues, "chip_runs": stats.chip_runs,
            "processes": sum(p.is_alive for p in self._user),
            "pollers": sum(p.process is not None and p.process.is_alive
                           for p in self._pollers),
        }


# --------------------------------------------------------------------------- helpers
def _check_span(what: str, start: int, count: int, size: int, where: str,
                unit: str = "word") -> None:
    if count < 1:
        raise ValueError(f"{what}: count must be >= 1, got {count}")
    if not (0 <= start and start + count <= size):
        raise ValueError(f"{what}: {unit}s {start}..{start + count - 1} outside {where} "
                         f"({size} {unit}s)")


def _indices_values(what: str, index: int | Sequence[int] | np.ndarray,
                    values: int | Sequence[int] | np.ndarray, size: int,
                    where: str) -> tuple[np.ndarray, np.ndarray]:
    words = np.atleast_1d(np.asarray(values, dtype=np.int64))
    if words.ndim != 1 or not len(words):
        raise ValueError(f"{what}: values must be one word or a non-empty list of words")
    if words.min() < -(1 << 31) or words.max() > MASK32:
        raise ValueError(f"{what}: values must fit 32 bits")
    if isinstance(index, int | np.integer):
        indices = np.arange(int(index), int(index) + len(words), dtype=np.int64)
    else:
        indices = np.asarray(index, dtype=np.int64)
        if indices.shape != words.shape:
            raise ValueError(f"{what}: {len(indices)} indices for {len(words)} values")
    if indices.min() < 0 or indices.max() >= size:
        raise ValueError(f"{what}: word index {int(indices.min())}..{int(indices.max())} "
                         f"outside {where} ({size} words)")
    return indices, (words & MASK32).astype(np.uint32)


def _groups(view: np.ndarray, indices: np.ndarray, words: np.ndarray,
            barriers: Sequence[int] | None) -> list[_Group]:
    """Split a write at its barriers; each piece lands at once, in order."""
    count = len(words)
    cuts = sorted({int(b) for b in (barriers or ())})
    if cuts and (cuts[0] < 0 or cuts[-1] > count):
        raise ValueError(f"barriers must be positions 0..{count}, got {cuts[0]}..{cuts[-1]}")
    bounds = [0, *(c for c in cuts if 0 < c < count), count]
    groups = []
    for low, high in zip(bounds, bounds[1:], strict=False):
        part_i, part_v = _last_write_wins(indices[low:high], words[low:high])

        def land(part_i: np.ndarray = part_i, part_v: np.ndarray = part_v) -> None:
            view[part_i] = part_v

        groups.append(_Group(high - low, land))
    return groups


def _last_write_wins(indices: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A word written twice in one group keeps its later value (numpy's fancy assignment
    does not promise an order for repeated indices)."""
    unique, first_from_end = np.unique(indices[::-1], return_index=True)
    if len(unique) == len(indices):
        return indices, words
    return unique, words[::-1][first_from_end]
