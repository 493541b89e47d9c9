"""``Chip``: the Python façade over the C++ core (``npkit.sim._core``).

The façade owns what is not per-instruction work: checking images before they are loaded,
feeding packet sources into the core a chunk ahead of simulated time, draining transmitted
frames into sinks, collecting the thread timeline, and turning core faults into
``SimFault`` exceptions that name the microcode source line.
"""

from __future__ import annotations

import gc
import importlib
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from npkit.base.errors import NpkitError

from .config import ChipConfig, ConfigError
from .frames import PackedFrames
from .packet_trace import FrameLog, Selection
from .packets import RxFrame, Sink, Source, TxFrame
from .trace import Span, spans_from_core, write_trace

SRAM_CHANNEL_SHIFT = 26  # SRAM address bits 27..26 select the channel
SRAM_OFFSET_MASK = (1 << SRAM_CHANNEL_SHIFT) - 1
FEED_CHUNK_FRAMES = 512  # frames kept queued per port ahead of simulated time
MIN_SLICE_CYCLES = 2_000
MAX_SLICE_CYCLES = 200_000
DEFAULT_QUIET_CYCLES = 200_000


class LoadError(NpkitError, ValueError):
    """An image cannot be loaded on this chip (ME range, context mode, size)."""


class SimFault(NpkitError, RuntimeError):
    """A fault of the simulated chip, with where it happened.

    ``me`` is the ME index (0..15 on the IXP2800; the message shows the hardware number),
    ``ctx`` the context, ``pc`` the program counter,
    ``kind`` one of bad_address, illegal_instruction, control_store_overflow, ring_overflow,
    deadlock, register_out_of_range, bad_command, time_limit, media; ``source`` is
    ``file:line:col`` of the microcode instruction when the image knows it.
    """

    def __init__(self, kind: str, me: int | None, ctx: int | None, pc: int | None,
                 detail: str, source: str | None = None, cycle: int | None = None,
                 me_label: str | None = None) -> None:
        self.kind, self.me, self.ctx, self.pc = kind, me, ctx, pc
        self.detail, self.source, self.cycle = detail, source, cycle
        self.me_label = me_label
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.me is not None and self.me >= 0:
            where.append(self.me_label or f"ME {self.me:#04x}")
        if self.ctx is not None and self.ctx >= 0:
            where.append(f"ctx {self.ctx}")
        if self.pc is not None and self.pc >= 0:
            where.append(f"pc {self.pc}")
        head = " ".join(where)
        if self.source:
            head += f" ({self.source})"
        return f"{head}: {self.kind}: {self.detail}" if head else f"{self.kind}: {self.detail}"


class ImageLike(Protocol):
    """What ``Chip.load`` needs of an ``npkit.compiler.uc.Image``."""

    mes: Any
    ctx_mode: int
    words: Any

    def source_of(self, pc: int) -> str: ...


@dataclass(frozen=True)
class Progress:
    """Handed to the progress callback after every slice of a run."""

    cycle: int  # cycles simulated so far in this run
    cycle_target: int | None  # the run's cycle budget, if any
    frames_in: int  # frames fed to the ports so far (this chip)
    frames_out: int  # frames transmitted so far (this chip)
    frames_in_total: int | None  # frames the sources will offer, when known


@dataclass(frozen=True)
class RunResult:
    """Why a run stopped (cycles | packets | idle | quiet, or a debugger stop: breakpoint |
    step | watch, see ``Chip.debug_stop``) and what it did."""

    reason: str
    cycles: int
    frames_out: int


@dataclass
class _PortFeed:
    """A source attached to a port and how far it has been fed into the core."""

    frames: Iterator[RxFrame]
    fed: int = 0
    exhausted: bool = False
    lookahead: RxFrame | None = None
    lookahead_cycle: int = 0  # when the held-back frame is due
    total: int | None = None


@dataclass
class _TxCount:
    total: int = 0
    per_port: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ChipSnapshot:
    """The state of a ``Chip`` at ``Chip.snapshot()``: the core's (every ME, context,
    register, memory word, unit, pending event, the media model with its queued frames,
    every counter) and the façade's (frames transmitted so far, the images loaded).

    Immutable and reusable: ``Chip.restore`` puts it back as often as wanted, into the chip
    that took it.  ``held_bytes`` is the host memory it holds."""

    core: Any = field(repr=False)  # npkit.sim._core.Snapshot
    chip_id: int
    cycle: int
    tx_total: int
    tx_per_port: tuple[tuple[int, int], ...]
    images: tuple[tuple[int, Any], ...] = field(repr=False)

    @property
    def held_bytes(self) -> int:
        return int(self.core.held_bytes)


DEBUG_STOPS = ("breakpoint", "step", "watch")  # the core's run results of a debugger stop
WATCH_KINDS = {"sram": 0, "dram": 1, "scratch": 2, "local": 3}


@dataclass(frozen=True)
class DebugStop:
    """Where the last run stopped for the debugger.  ``breakpoint``: before the instruction
    at ``pc`` of ME ``me`` context ``ctx`` (not executed yet); ``step`` and ``watch``: after
    that instruction retired (``watch`` is the index ``Chip.add_watch`` gave)."""

    reason: str
    me: int
    ctx: int
    pc: int
    watch: int | None = None


TX_FRAME_FIELDS = ("port", "first_bit_cycle", "last_bit_cycle", "data", "time_ns")
MakeTxFrame = Callable[[int, int, int, bytes, int], TxFrame]


def _tx_frame_maker() -> MakeTxFrame:
    """How ``_drain_tx`` builds a ``TxFrame``.  The frozen dataclass's constructor sets each
    field through ``object.__setattr__`` (~0.9 us, more than the core spends on a 64-byte
    frame); when ``TxFrame`` is the plain dataclass this was written for (these fields in
    this order, no ``__slots__``, no ``__post_init__``) filling the instance dict gives an
    equal object in a third of the time.  Anything else: the constructor."""
    plain = (tuple(f.name for f in fields(TxFrame)) == TX_FRAME_FIELDS
             and "__slots__" not in vars(TxFrame) and not hasattr(TxFrame, "__post_init__"))
    if not plain:
        return TxFrame
    new = object.__new__

    def make(port: int, first: int, last: int, data: bytes, time_ns: int) -> TxFrame:
        frame = new(TxFrame)
        values = frame.__dict__
        values["port"] = port
        values["first_bit_cycle"] = first
        values["last_bit_cycle"] = last
        values["data"] = data
        values["time_ns"] = time_ns
        return frame

    return make


def _import_core() -> ModuleType:
    try:
        core = importlib.import_module("npkit.sim._core")
    except ImportError as err:
        raise RuntimeError("the simulator core npkit.sim._core is not built: run "
                           "`python setup.py build_ext --inplace` in the repository") from err
    if not hasattr(core, "Core"):
        raise RuntimeError("npkit.sim._core has no Core class: the simulator core is a "
                           "placeholder; rebuild it with `python setup.py build_ext --inplace`")
    return core


# The ME schedules (docs/sim-core.md): "default", the exact burst schedule, and "quantum",
# the opt-in coarser one (a model variant: results differ).
SCHEDULES = ("default", "quantum")
SCHEDULE_ENV = "NPKIT_SCHEDULE"


def default_schedule() -> str:
    """The schedule a Chip gets when none is given: $NPKIT_SCHEDULE, else "default".

    The one place the variable is read, so that whole test files (the differential
    chip-vs-native tests) can run on the quantum schedule unchanged.
    """
    return os.environ.get(SCHEDULE_ENV, "default") or "default"


class Chip:
    """A simulated chip: config + C++ core + attached packet sources/sinks."""

    def __init__(self, config: ChipConfig | str | Path = "ixp2800", seed: int = 1,
                 trace: bool = False, schedule: str | None = None) -> None:
        self.config = config if isinstance(config, ChipConfig) else ChipConfig.load(config)
        self.seed = seed
        self._core_module = _import_core()
        try:
            self._core = self._core_module.Core(self.config.to_core_dict(), seed)
        except (ValueError, TypeError, KeyError, RuntimeError) as err:
            raise ConfigError(f"{self.config.source}: the core rejected the config: {err}") \
                from None
        self.schedule = default_schedule() if schedule is None else schedule
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"schedule {self.schedule!r} is not one of {', '.join(SCHEDULES)}")
        self._core.set_schedule(self.schedule)
        self._images: dict[int, ImageLike] = {}  # ME index -> image loaded there
        # an RTL mirror of one ME (sim/rtl/lockstep.py): runs the core for _core_run
        self._lockstep: Any = None
        self._feeds: dict[int, _PortFeed] = {}
        self._sinks: dict[int, Sink] = {}
        self._tx = _TxCount()
        self._spans: list[Span] = []
        self._tracing = False
        self._frame_log: FrameLog | None = None
        self._arrived_cache: dict[int, int] = {}
        self._make_tx_frame = _tx_frame_maker()
        if trace:
            self.enable_trace()

    # ------------------------------------------------------------------ images
    def load(self, image: ImageLike, mes: list[int] | None = None) -> list[int]:
        """Load an assembled image on its MEs (``mes`` overrides the image's own list).

        ``image`` is an ``npkit.compiler.uc.Image`` (``assemble_file``, ``Image.load``, or
        ``npkit.runtime.loader.read_image`` for a ``.uc`` or ``.img`` path): the chip runs
        images, the layers below it make them.  MEs are given by index, 0..me_count-1 (on
        the IXP2800 index 8 is hardware ME 0x10), as in the image's ``.me`` directive.
        Returns the MEs loaded.
        """
        if isinstance(image, str | Path):
            raise TypeError(f"Chip.load takes an assembled image, not the path {str(image)!r}: "
                            "read the file with npkit.runtime.loader.read_image")
        chosen = self._image_mes(image, mes)
        words = np.asarray(image.words, dtype=np.uint64)
        self._check_image(image, words)
        for me in chosen:
            self._images[me] = image  # before loading, so a load fault can name the line
            try:
                self._core.load(me, words, int(image.ctx_mode))
            except self._core_module.SimFault as err:
                raise LoadError(f"{_image_name(image)}: {self._fault(err)}") from None
        return chosen

    def _image_mes(self, image: ImageLike, mes: list[int] | None) -> list[int]:
        chosen = list(mes) if mes is not None else list(getattr(image, "mes", None) or [])
        if not chosen:
            raise LoadError(f"{_image_name(image)}: the image names no MEs: add a `.me` "
                            "directive or give the MEs to load it on")
        for me in chosen:
            try:
                self.config.check_me(me)
            except ConfigError as err:
                raise LoadError(f"{_image_name(image)}: {err}") from None
        return chosen

    def _check_image(self, image: ImageLike, words: np.ndarray) -> None:
        name = _image_name(image)
        if int(image.ctx_mode) not in (4, 8):
            raise LoadError(f"{name}: context mode must be 4 or 8, got {image.ctx_mode}")
        limit = self.config.control_store_words
        if len(words) > limit:
            raise LoadError(f"{name}: {len(words)} instructions do not fit the "
                            f"{limit}-word control store of {self.config.name}")
        if len(words) and int(words.max()) >> 40:
            raise LoadError(f"{name}: image holds words wider than 40 bits")

    def image_on(self, me: int) -> ImageLike | None:
        return self._images.get(self.config.check_me(me))

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> ChipSnapshot:
        """A copy of the whole simulated state, to ``restore`` later (docs/sim-core.md,
        "Snapshot and restore").

        Cheap for big memories: the SRAM channels and DRAM are written once into in-memory
        files (zero pages skipped) and the live memories are then mapped copy-on-write onto
        them, so until the next restore they share every page the simulation does not
        write.  Attached sources are not part of a snapshot (an iterator cannot be wound
        back): take it with the frames to come already offered (``offer_frames``) or with
        no source attached, and attach sources after a restore."""
        return ChipSnapshot(self._core.snapshot(), id(self), self.now, self._tx.total,
                            tuple(sorted(self._tx.per_port.items())),
                            tuple(sorted(self._images.items())))

    def restore(self, snap: ChipSnapshot) -> None:
        """Put the chip back into the state of ``snap``, a snapshot this chip took.

        Every memory word, register, context, unit, event, queued or transmitting frame and
        counter is as it was at the snapshot, and running on gives the same frames and
        counters as running on from the snapshot did.  A restore costs the pages written
        since (the kernel drops them), not the size of the memories; numpy views of the
        memories stay valid.  Sources attached are detached (their frames fed since the
        snapshot are gone from the chip; attach new ones); sinks stay attached.  The trace
        setting and the spans collected are left as they are."""
        if snap.chip_id != id(self):
            raise ValueError("restore: the snapshot was taken of another chip")
        self._core.restore(snap.core)
        self._tx = _TxCount(snap.tx_total, dict(snap.tx_per_port))
        self._images = dict(snap.images)
        self._feeds.clear()
        self._arrived_cache = {}

    # ------------------------------------------------------------------ memories
    def sram(self, channel: int) -> np.ndarray:
        if not 0 <= channel < self.config.sram_channels:
            raise ValueError(f"SRAM channel {channel} does not exist "
                             f"({self.config.sram_channels} channels)")
        return self._core.sram(channel)

    def dram(self) -> np.ndarray:
        return self._core.dram()

    def scratch(self) -> np.ndarray:
        return self._core.scratch()

    def local_memory(self, me: int) -> np.ndarray:
        return self._core.local_memory(self.config.check_me(me))

    # ------------------------------------------------------------------ rings and queues
    def configure_ring(self, ring: int, base_word: int, size_words: int) -> None:
        low, high = self.config.ring_words_range
        if not 0 <= ring < self.config.scratch_rings:
            raise ValueError(f"scratch ring {ring} does not exist "
                             f"(rings 0..{self.config.scratch_rings - 1})")
        if not low <= size_words <= high:
            raise ValueError(f"scratch ring {ring}: size {size_words} words outside {low}..{high}")
        if base_word < 0 or (base_word + size_words) * 4 > self.config.scratch_bytes:
            raise ValueError(f"scratch ring {ring}: words {base_word}..{base_word + size_words}"
                             f" exceed the {self.config.scratch_bytes}-byte scratchpad")
        self._core.configure_ring(ring, base_word, size_words)

    def ring_state(self, ring: int) -> dict[str, Any]:
        return dict(self._core.ring_state(ring))

    def ring_put(self, ring: int, words: list[int]) -> None:
        """Append words to a scratch ring from the host (the control processor), as an ME's
        ``scratch[put]`` would; OverflowError when they do not fit."""
        self._check_ring(ring)
        self._core.ring_put(ring, [int(w) & 0xFFFFFFFF for w in words])

    def ring_get(self, ring: int, count: int = 1) -> list[int]:
        """Remove ``count`` words from a scratch ring, or none (empty list) when it holds
        fewer, as an ME's ``scratch[get]`` would."""
        self._check_ring(ring)
        if not 1 <= count <= self.config.ring_words_range[1]:
            raise ValueError(f"ring_get: count {count} out of range")
        return [int(w) for w in self._core.ring_get(ring, count)]

    def _check_ring(self, ring: int) -> None:
        if not 0 <= ring < self.config.scratch_rings:
            raise ValueError(f"scratch ring {ring} does not exist "
                             f"(rings 0..{self.config.scratch_rings - 1})")
        if not self._core.ring_state(ring)["configured"]:
            raise ValueError(f"scratch ring {ring} is not configured")

    def _check_queue(self, channel: int, queue: int) -> None:
        if not 0 <= channel < self.config.sram_channels:
            raise ValueError(f"SRAM channel {channel} does not exist")
        if not 0 <= queue < self.config.queue_descriptors:
            last = self.config.queue_descriptors - 1
            raise ValueError(f"Q-array queue {queue} outside 0..{last}")

    def enqueue(self, channel: int, queue: int, handle: int) -> None:
        self._check_queue(channel, queue)
        self._core.enqueue(channel, queue, handle)

    def dequeue(self, channel: int, queue: int) -> int:
        self._check_queue(channel, queue)
        return int(self._core.dequeue(channel, queue))

    def queue_state(self, channel: int, queue: int) -> dict[str, int]:
        self._check_queue(channel, queue)
        return {k: int(v) for k, v in dict(self._core.queue_state(channel, queue)).items()}

    def queue_handles(self, channel: int, queue: int) -> list[int]:
        """The handles on a Q-array queue, head first, following the links in SRAM
        (word 0 of each descriptor holds the next handle)."""
        state = self.queue_state(channel, queue)
        handles: list[int] = []
        handle = state["head"]
        for _ in range(state["count"]):
            handles.append(handle)
            words = self.sram((handle >> SRAM_CHANNEL_SHIFT) & 3)
            handle = int(words[(handle & SRAM_OFFSET_MASK) // 4])
        return handles

    # ------------------------------------------------------------------ ports
    def attach_source(self, port: int, source: Source) -> None:
        self._check_port(port)
        total = _count_hint(source)
        self._feeds[port] = _PortFeed(iter(source.frames()), total=total)

    def attach_sink(self, port: int, sink: Sink) -> None:
        self._check_port(port)
        self._sinks[port] = sink

    def sink(self, port: int) -> Sink | None:
        """The sink attached to ``port``, if any."""
        return self._sinks.get(port)

    def _check_port(self, port: int) -> None:
        if not 0 <= port < len(self.config.ports):
            raise ValueError(f"port {port} does not exist (ports 0..{len(self.config.ports) - 1})")

    def close_sinks(self) -> None:
        for sink in self._sinks.values():
            sink.close()

    @property
    def frames_fed(self) -> dict[int, int]:
        return {port: feed.fed for port, feed in self._feeds.items()}

    @property
    def frames_out(self) -> dict[int, int]:
        return dict(self._tx.per_port)

    # ------------------------------------------------------------------ running
    @property
    def now(self) -> int:
        return int(self._core.now)

    @property
    def instructions_retired(self) -> int:
        return int(self._core.instructions_retired)

    def run(self, cycles: int | None = None, until_idle: bool = False,
            packets: int | None = None, quiet_cycles: int = DEFAULT_QUIET_CYCLES,
            progress: Callable[[Progress], None] | None = None) -> RunResult:
        """Run until ``cycles`` more cycles have passed, ``packets`` more frames have been
        transmitted, or (``until_idle``) the chip is idle with every source drained; the
        first of those that is given and reached stops the run.  ``until_idle`` also stops
        after ``quiet_cycles`` with every source drained and no frame in or out (threads
        that poll forever never let the core report idle).

        The garbage collector is off during the run (and back as it was after, also on a
        fault): the frames going in and out hold no reference cycles, and a collection in
        the middle of a run would only walk the caller's long-lived objects again."""
        if cycles is None and packets is None and not until_idle:
            raise ValueError("run: give cycles=, packets= or until_idle=True")
        if cycles is not None and cycles < 0 or packets is not None and packets < 0:
            raise ValueError("run: cycles and packets must be >= 0")
        collecting = gc.isenabled()
        gc.disable()
        try:
            return _Run(self, cycles, until_idle, packets, quiet_cycles, progress).execute()
        finally:
            if collecting:
                gc.enable()

    # feeding and draining, used by _Run
    def _feed_all(self, horizon: int) -> None:
        for port, feed in self._feeds.items():
            self._feed_port(port, feed, horizon)

    def _arrived(self) -> dict[int, int]:
        """Frames each port has taken off its input queue (received or dropped)."""
        if not self._feeds:  # nothing attached (e.g. frames offered): no counters to read
            return {}
        ports = list(self._core.port_counters())
        return {p: _taken_off_queue(ports[p]) if p < len(ports) else 0 for p in self._feeds}

    def _feed_port(self, port: int, feed: _PortFeed, horizon: int) -> None:
        if feed.exhausted:
            return
        pending = feed.fed - self._arrived_cache.get(port, 0)
        clock = self.config.clock_hz
        datas: list[bytes] = []
        dues: list[int] = []
        try:
            while pending < FEED_CHUNK_FRAMES:
                frame = feed.lookahead or next(feed.frames, None)
                feed.lookahead = None
                if frame is None:
                    feed.exhausted = True
                    return
                not_before = -1 if frame.time_s is None else math.floor(frame.time_s * clock)
                if not_before > horizon and pending > 0:
                    feed.lookahead = frame  # far in the future: keep it for a later slice
                    feed.lookahead_cycle = not_before
                    return
                datas.append(frame.data)
                dues.append(not_before)
                pending += 1
        finally:  # the frames taken from the source go in even when the source then fails
            self._queue_frames(port, feed, datas, dues)

    def offer_frames(self, port: int, datas: Sequence[bytes],
                     dues: Sequence[int] | np.ndarray) -> None:
        """Frames that reach ``port``'s receive side no earlier than the cycles ``dues``
        (in order; -1: at once), besides any attached source -- e.g. frames another chip
        sent over a link (npkit.runtime.system).  ``datas``: a list of bytes, or
        ``PackedFrames`` (npkit.sim.frames: one buffer, copied into the core without a
        Python object per frame and without the GIL)."""
        if isinstance(datas, PackedFrames):
            self._core.add_rx_packed(port, datas.data, datas.offsets,
                                     np.ascontiguousarray(dues, dtype=np.int64))
            return
        if isinstance(dues, np.ndarray):
            dues = dues.tolist()
        self._core.add_rx_frames(port, list(datas), list(dues))

    def _queue_frames(self, port: int, feed: _PortFeed, datas: list[bytes],
                      dues: list[int]) -> None:
        """Hand a chunk to the core in one call (a call per frame costs more than the
        simulation of a minimum-size frame's arrival)."""
        if not datas:
            return
        try:
            self._core.add_rx_frames(port, datas, dues)
        except (TypeError, ValueError):
            # a bad frame (the core checked all first and queued none): one by one, so the
            # frames before it go in and the error is the one a single frame gives
            for data, due in zip(datas, dues, strict=True):
                self._core.add_rx_frame(port, data, due)
                feed.fed += 1
            return
        feed.fed += len(datas)

    def _drain_tx(self) -> int:
        sinks = self._sinks
        if sinks and all(hasattr(sink, "write_packed") for sink in sinks.values()):
            return self._drain_tx_packed()
        ports, firsts, lasts, datas = self._core.take_tx_columns()
        if not ports:
            return 0
        per_port = self._tx.per_port
        counts = Counter(ports)
        for port, n in counts.items():
            per_port[port] = per_port.get(port, 0) + n
        self._tx.total += len(ports)
        sinks = self._sinks
        if sinks:
            # a sink with write_columns(port, firsts, lasts, datas) (runtime.system's) takes
            # its port's frames as columns, in order: no TxFrame per frame
            framed = {}
            for port in counts:
                sink = sinks.get(port)
                if sink is None:
                    continue
                if not hasattr(sink, "write_columns"):
                    framed[port] = sink
                elif len(counts) == 1:
                    sink.write_columns(port, firsts, lasts, datas)
                else:
                    mine = [i for i, p in enumerate(ports) if p == port]
                    sink.write_columns(port, [firsts[i] for i in mine],
                                       [lasts[i] for i in mine], [datas[i] for i in mine])
            if framed:
                clock = self.config.clock_hz
                make = self._make_tx_frame
                for port, first, last, data in zip(ports, firsts, lasts, datas, strict=True):
                    sink = framed.get(port)
                    if sink is not None:
                        sink.write(make(port, first, last, data, round(last * 1e9 / clock)))
        return len(ports)

    def _drain_tx_packed(self) -> int:
        """``_drain_tx`` when every sink takes packed frames (``write_packed(port, firsts,
        lasts, frames)``: int64 arrays and ``PackedFrames``, runtime.system's): no Python
        object per frame, a port's frames in order."""
        ports, firsts, lasts, data, offsets = self._core.take_tx_packed()
        total = len(ports)
        if not total:
            return 0
        frames = PackedFrames(data, offsets)
        counts = np.bincount(ports)
        seen, first = np.unique(ports, return_index=True)  # in order of first frame out,
        present = seen[np.argsort(first)].tolist()  # as _drain_tx's Counter
        per_port = self._tx.per_port
        for port in present:
            per_port[port] = per_port.get(port, 0) + int(counts[port])
        self._tx.total += total
        for port in present:
            sink = self._sinks.get(port)
            if sink is None:
                continue
            if len(present) == 1:
                sink.write_packed(port, firsts, lasts, frames)
            else:
                mine = np.flatnonzero(ports == port)
                sink.write_packed(port, firsts[mine], lasts[mine], frames.take(mine))
        return total

    def _next_feed_cycle(self) -> int | None:
        """The cycle before which no source has anything more to feed, when every
        unfinished source is only waiting for a frame due later (timestamp pacing with a
        gap); None when some source may need topping up at any time."""
        due = []
        for feed in self._feeds.values():
            if feed.exhausted:
                continue
            if feed.lookahead is None:
                return None
            due.append(feed.lookahead_cycle)
        return min(due) if due else None

    def _sources_drained(self) -> bool:
        return all(f.exhausted and f.lookahead is None
                   and f.fed <= self._arrived_cache.get(p, 0)
                   for p, f in self._feeds.items())

    def _slice_cycles(self) -> int:
        """Cycles per run slice: short enough that a chunk of minimum-size frames queued at
        line rate cannot drain before the next top-up."""
        shortest = min((port.frame_cycles(60, self.config.clock_hz)
                        for port in self.config.ports), default=MAX_SLICE_CYCLES)
        return int(min(MAX_SLICE_CYCLES, max(MIN_SLICE_CYCLES,
                                             shortest * FEED_CHUNK_FRAMES / 2)))

    def attach_lockstep(self, mirror: Any) -> None:
        """Run the core through ``mirror.run(core, max_cycles, stop_tx_frames, until_idle)``
        (the RTL lockstep of sim/rtl/lockstep.py), or directly again with None."""
        self._lockstep = mirror

    def _core_run(self, max_cycles: int, stop_tx_frames: int, until_idle: bool) -> str:
        try:
            if self._lockstep is not None:
                return str(self._lockstep.run(self._core, max_cycles, stop_tx_frames,
                                              until_idle))
            return str(self._core.run(max_cycles, stop_tx_frames, until_idle))
        except self._core_module.SimFault as err:  # type: ignore[attr-defined]
            raise self._fault(err) from None

    def _fault(self, err: Any) -> SimFault:
        me = _opt_int(getattr(err, "me", None))
        pc = _opt_int(getattr(err, "pc", None))
        source = None
        if me is not None and pc is not None and me in self._images and pc >= 0:
            source = _source_of(self._images[me], pc)
        detail = getattr(err, "message", None) or str(err)
        label = self.config.me_label(me) if me is not None else None
        return SimFault(str(getattr(err, "kind", "fault")), me,
                        _opt_int(getattr(err, "ctx", None)), pc, detail, source, self.now,
                        label)

    # ------------------------------------------------------------------ debugger hooks
    # Stop conditions for run() and per-PC counts (docs/sim-core.md, "Debug hooks").  While
    # any is set the core runs an instrumented copy of its dispatch loop; none set, none of
    # it costs anything.  A stop ends run() with RunResult.reason breakpoint | step | watch.
    def set_breakpoints(self, me: int, pcs: list[int]) -> None:
        """Replace ME ``me``'s breakpoints: a run stops before executing any of ``pcs``
        (an empty list clears them).  Resuming from a breakpoint passes over it once."""
        self._core.debug_breakpoints(self.config.check_me(me), sorted(set(pcs)))

    def step_after(self, me: int, ctx: int, count: int = 1) -> None:
        """Stop the next runs once context ``ctx`` of ME ``me`` has retired ``count`` more
        instructions (0: no step)."""
        if count < 0:
            raise ValueError("step_after: count must be >= 0")
        self._core.debug_step(self.config.check_me(me), ctx, count)

    def add_watch(self, memory: str, offset: int, length: int = 4, unit: int = 0) -> int:
        """Stop after an instruction changes any byte of ``memory`` (sram | dram | scratch |
        local) at byte ``offset`` .. ``offset + length``; ``unit`` is the SRAM channel or, for
        local memory, the ME.  Returns the watch's index (``DebugStop.watch``)."""
        if memory not in WATCH_KINDS:
            raise ValueError(f"add_watch: memory is one of {', '.join(WATCH_KINDS)}, "
                             f"not {memory!r}")
        try:
            return int(self._core.debug_watch(WATCH_KINDS[memory], unit, offset, length))
        except IndexError as err:
            raise ValueError(f"add_watch: {err}") from None

    def clear_watches(self) -> None:
        self._core.debug_clear_watches()

    def enable_coverage(self, on: bool = True) -> None:
        """Count retired instructions per ME and PC from now on (``coverage_counts``)."""
        self._core.debug_coverage(on)

    def coverage_counts(self, me: int) -> np.ndarray:
        """Retirements per PC of ME ``me`` since coverage was enabled (uint64; empty when
        it never was)."""
        return np.asarray(self._core.debug_counts(self.config.check_me(me)))

    @property
    def debug_stop(self) -> DebugStop | None:
        """Why the last core run stopped for the debugger, or None."""
        info = dict(self._core.debug_stop())
        if not info["reason"]:
            return None
        watch = int(info["watch"])
        return DebugStop(str(info["reason"]), int(info["me"]), int(info["ctx"]),
                         int(info["pc"]), watch if watch >= 0 else None)

    @property
    def debug_resume(self) -> tuple[int, int]:
        """(ME, instructions retired) of the breakpoint stop a run passes over once."""
        me, retired = self._core.debug_resume
        return int(me), int(retired)

    @debug_resume.setter
    def debug_resume(self, value: tuple[int, int]) -> None:
        self._core.debug_resume = (int(value[0]), int(value[1]))

    def context_state(self, me: int, ctx: int) -> dict[str, Any]:
        """PC, state (inactive | ready | executing | sleeping), pending signals, the signal
        mask it waits for, instructions retired, condition codes (z, n, c, v)."""
        return dict(self._core.context(self.config.check_me(me), ctx))

    # ------------------------------------------------------------------ observability
    def counters(self) -> dict[str, Any]:
        """The core's counters plus a ``run`` section (cycles, time, instructions)."""
        counters = dict(self._core.counters())
        counters["run"] = {
            "cycles": self.now, "time_us": self.now / self.config.clock_hz * 1e6,
            "instructions_retired": self.instructions_retired,
            "frames_fed": self.frames_fed, "frames_out": self.frames_out,
        }
        return counters

    def enable_trace(self, on: bool = True) -> None:
        self._tracing = on
        self._core.set_trace(on)
        if on and self._frame_log is None:  # names the sleeping spans by the unit awaited
            self._frame_log = FrameLog(self._core, None, waits=True)

    def _collect_trace(self) -> None:
        if self._tracing:
            self._spans.extend(spans_from_core(self._core.take_trace()))
        if self._frame_log is not None:
            self._frame_log.collect()

    def enable_frame_log(self, selection: Selection | None = None,
                         bucket_shift: int = 10) -> FrameLog:
        """Attach the core's per-frame event log (docs/debugging.md, "Per-packet traces"):
        the frames ``selection`` picks are followed; None records only the utilisation
        probe.  Observation only: no simulated result changes.  Replaces an earlier log."""
        self._frame_log = FrameLog(self._core, selection, bucket_shift, waits=self._tracing)
        return self._frame_log

    def disable_frame_log(self) -> None:
        """Detach the frame log (its trace points become plain instructions again)."""
        self._core.disable_frame_log()
        self._frame_log = None

    @property
    def frame_log(self) -> FrameLog | None:
        return self._frame_log

    @property
    def spans(self) -> list[Span]:
        self._collect_trace()
        return list(self._spans)

    def write_trace(self, path: str | Path) -> int:
        """Write the thread timeline as Chrome/Perfetto trace JSON; returns the span count."""
        if not self._tracing and not self._spans:
            raise RuntimeError("no trace recorded: create the Chip with trace=True or call "
                               "enable_trace() before run()")
        self._collect_trace()
        spans = self._spans
        log = self._frame_log
        if log is not None:  # "sleeping" -> "sleeping: sram1" where the log knows the unit
            spans = [s if s.state != "sleeping" or (unit := log.wait_unit(s.me, s.ctx, s.end))
                     is None else Span(s.me, s.ctx, f"sleeping: {unit}", s.start, s.end)
                     for s in spans]
        return write_trace(path, spans, self.config.clock_hz, self.config.me_label)


class _Run:
    """One call of ``Chip.run``: slices of core time with feeding/draining in between."""

    def __init__(self, chip: Chip, cycles: int | None, until_idle: bool, packets: int | None,
                 quiet_cycles: int, progress: Callable[[Progress], None] | None) -> None:
        self.chip, self.cycles, self.until_idle = chip, cycles, until_idle
        self.packets, self.quiet_cycles, self.progress = packets, quiet_cycles, progress
        self.start = chip.now
        self.out = 0
        self.quiet_since: int | None = None
        self.in_total = self._in_total()

    def _in_total(self) -> int | None:
        totals = [f.total for f in self.chip._feeds.values()]
        return None if any(t is None for t in totals) else sum(t or 0 for t in totals)

    def execute(self) -> RunResult:
        chip = self.chip
        # slices keep the attached sources' queues topped up (and pace the progress
        # reports); with neither, one core call runs as far as the run may go (a run's
        # result does not depend on its slicing: tests/sim/test_run_slicing.py)
        slice_cycles = chip._slice_cycles() if chip._feeds or self.progress is not None \
            else MAX_SLICE_CYCLES
        chip._arrived_cache = chip._arrived()
        while True:
            elapsed = chip.now - self.start
            if self.cycles is not None and elapsed >= self.cycles:
                return self._result("cycles")
            if self.packets is not None and self.out >= self.packets:
                return self._result("packets")
            chip._feed_all(chip.now + 2 * slice_cycles)
            budget = self._budget(slice_cycles, elapsed)
            stop_tx = -1 if self.packets is None else self.packets - self.out
            before = (chip.now, sum(chip._arrived_cache.values()))
            reason = chip._core_run(budget, stop_tx, self.until_idle and not self._feeding())
            moved = chip._drain_tx()
            self.out += moved
            chip._collect_trace()
            chip._arrived_cache = chip._arrived()
            self._report()
            if reason in DEBUG_STOPS:
                return self._result(reason)
            if reason == "idle" and self.until_idle and chip._sources_drained():
                return self._result("idle")
            if self.until_idle and self._quiet(before, moved):
                return self._result("quiet")

    def _budget(self, slice_cycles: int, elapsed: int) -> int:
        """Cycles for the next core call: a slice, or up to the next due frame when the
        sources are idle until then (a gap in a timestamp-paced capture)."""
        budget = slice_cycles
        due = self.chip._next_feed_cycle()
        if due is not None:
            budget = max(budget, due - 2 * slice_cycles - self.chip.now)
        if self.cycles is not None:
            budget = min(budget, self.cycles - elapsed)
        return budget

    def _feeding(self) -> bool:
        return not self.chip._sources_drained()

    def _quiet(self, before: tuple[int, int], moved: int) -> bool:
        chip = self.chip
        arrived = sum(chip._arrived_cache.values())
        if moved or arrived != before[1] or not chip._sources_drained():
            self.quiet_since = None
            return False
        if self.quiet_since is None:
            self.quiet_since = before[0]
        return chip.now - self.quiet_since >= self.quiet_cycles

    def _report(self) -> None:
        if self.progress is None:
            return
        chip = self.chip
        self.progress(Progress(chip.now - self.start, self.cycles,
                               sum(chip.frames_fed.values()), chip._tx.total, self.in_total))

    def _result(self, reason: str) -> RunResult:
        return RunResult(reason, self.chip.now - self.start, self.out)


# --------------------------------------------------------------------------- helpers
def _image_name(image: Any) -> str:
    return str(getattr(image, "name", None) or getattr(image, "path", None) or "image")


def _source_of(image: Any, pc: int) -> str | None:
    try:
        where = image.source_of(pc)
    except (AttributeError, IndexError, KeyError, ValueError):
        return None
    return str(where) if where else None


def _opt_int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _count_hint(source: Any) -> int | None:
    """How many frames a source will give, when it can say so cheaply."""
    for name in ("total", "count"):
        method = getattr(source, name, None)
        if callable(method) and not hasattr(source, "path"):  # pcaps would be read twice
            return int(method())
    return None


def _taken_off_queue(port: dict[str, Any]) -> int:
    """Frames a port has received plus those it dropped on arrival (every drop reason)."""
    dropped = sum(_int(port, k) for k in port if k.startswith("rx_dropped"))
    return _int(port, "rx_frames") + dropped


def _int(table: Any, key: str) -> int:
    try:
        return int(table.get(key, 0))
    except (AttributeError, TypeError, ValueError):
        return 0
