"""Connect the tester to the simulated chip (npkit.sim): sources in, sinks out.

The chip's port sources already replay timestamps (``sim/packets.py``: an ``RxFrame`` with
``time_s`` is not started before that instant; ``ListSource`` holds them), so the tester
only converts: its send times (ps) become ``RxFrame.time_s``, and the chip's ``TxFrame``
(last bit at ``last_bit_cycle``) becomes an ``RxRecord`` with the exact picosecond of that
cycle.  The chip starts a frame at the first whole cycle at or after ``floor(time_s *
clock)``, so a measured latency may differ from the device's own by under one cycle.

**Streaming** (nothing held for a whole trial): ``stream_trial`` (one chip; ``streaming``
gives the parts unattached, for a system's external ports) attaches a ``BatchSource``
per port -- the C++ generator's frames a batch at a time, each batch registered with a
``FastAnalysis`` as the chip takes it -- and one ``AnalysisSink`` for every port, which
hands the chip's transmitted frames to the same analysis whenever the caller says the
chip's time has passed them (``AnalysisSink.flush``), keeping only per-port counts (and
the frames themselves only when asked: ``keep=True``).  The report is the one
``Analyzer.analyze`` gives on the held records (``tests/bench/test_tester_chip.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from npkit.bench.tester.analyzer import RxRecord
from npkit.bench.tester.fast import BATCH_FRAMES, Batch, batches
from npkit.bench.tester.fast_analysis import FastAnalysis, compiled
from npkit.bench.tester.generator import Traffic, check_streams
from npkit.bench.tester.media import PS_PER_S, PortModel
from npkit.bench.tester.stream import Stream
from npkit.bench.tester.tally import TrialTally
from npkit.sim.frames import PackedFrames
from npkit.sim.packets import ListSink, ListSource, RxFrame, TxFrame


def sources(traffic: Traffic) -> dict[int, ListSource]:
    """Per port, a chip source replaying the tester's send times."""
    return {port: ListSource([RxFrame(r.data, r.time_ps / PS_PER_S) for r in records])
            for port, records in traffic.ports.items()}


def port_mismatches(chip_ports, models: dict[int, PortModel]) -> list[str]:
    """Ports whose chip line rate or per-frame overhead differs from the tester's model."""
    problems = []
    for port, model in sorted(models.items()):
        if port >= len(chip_ports):
            problems.append(f"port {port}: the chip has only {len(chip_ports)} ports")
            continue
        chip = chip_ports[port]
        if Fraction(chip.rate_bps) != model.rate_bps or chip.overhead_bytes != model.overhead_bytes:
            problems.append(
                f"port {port}: the chip's {chip.kind} port runs {chip.rate_bps:g} b/s + "
                f"{chip.overhead_bytes} bytes per frame, the tester's {model.kind} "
                f"{float(model.rate_bps):g} b/s + {model.overhead_bytes}; configure the chip "
                f"with PortModel.chip_port() (e.g. POS frames carry the 4-byte PPP header, "
                f"so the line adds only flag + FCS = 5 bytes)")
    return problems


def attach(chip, traffic: Traffic, check_ports: bool = True) -> dict[int, ListSink]:
    """Feed ``traffic`` into ``chip`` (an npkit.sim.chip.Chip) and collect every port's
    output; returns the sinks (pass them to ``received``)."""
    if check_ports:
        problems = port_mismatches(chip.config.ports, traffic.models)
        if problems:
            raise ValueError("tester and chip ports disagree:\n  " + "\n  ".join(problems))
    for port, source in sources(traffic).items():
        chip.attach_source(port, source)
    sinks = {port: ListSink() for port in range(len(chip.config.ports))}
    for port, sink in sinks.items():
        chip.attach_sink(port, sink)
    return sinks


def received(frames: Iterable[TxFrame], clock_hz: float) -> list[RxRecord]:
    """The chip's transmitted frames as analyzer records (last bit, exact ps)."""
    frames = list(frames)
    times = cycles_to_ps([f.last_bit_cycle for f in frames], clock_hz)
    return [RxRecord(f.port, t, f.data) for f, t in zip(frames, times, strict=True)]


def cycles_to_ps(cycles: Iterable[int], clock_hz: float) -> list[int]:
    """``received``'s exact picosecond of each cycle (round half to even), in integers."""
    cycles = list(cycles)
    times = _cycles_to_ps_array(cycles, clock_hz)
    if times is not None:
        return times.tolist()
    ratio = PS_PER_S / Fraction(clock_hz)
    p, q = ratio.numerator, ratio.denominator
    out = []
    for c in cycles:
        whole, rest = divmod(c * p, q)
        if 2 * rest > q or (2 * rest == q and whole & 1):
            whole += 1
        out.append(whole)
    return out


def _cycles_to_ps_array(cycles: Sequence[int] | np.ndarray,
                        clock_hz: float) -> np.ndarray | None:
    """``cycles_to_ps`` as an int64 array, when the integer arithmetic fits int64 (the
    ratio's terms and every cycle below 2**31, so that c * p < 2**62); else None."""
    ratio = PS_PER_S / Fraction(clock_hz)
    p, q = ratio.numerator, ratio.denominator
    if not (len(cycles) and p < 2**31 and q < 2**31):
        return None
    c = np.asarray(cycles, dtype=np.int64)
    if int(c.min()) < 0 or int(c.max()) >= 2**31:
        return None
    whole, rest = np.divmod(c * p, q)
    up = (2 * rest > q) | ((2 * rest == q) & (whole & 1 == 1))
    return whole + up


# --------------------------------------------------------------------------- streaming
@dataclass
class BatchSource:
    """A chip source (``sim.packets.Source``) of one port's frames, taken from the C++
    generator a batch at a time; ``on_batch`` sees each batch as the chip takes it."""

    batches: Iterator[Batch]
    on_batch: Callable[[Batch], None] | None = None
    sent: int = 0
    last_bit_ps: Fraction = Fraction(0)  # of the frames taken so far
    model: PortModel | None = None

    def frames(self) -> Iterator[RxFrame]:
        for batch in self.batches:
            if self.on_batch is not None:
                self.on_batch(batch)
            self.sent += len(batch)
            if self.model is not None and len(batch):
                self.last_bit_ps = max(self.last_bit_ps, int(batch.times_ps[-1]) +
                                       self.model.wire_ps(len(batch.datas[-1])))
            for time_ps, data in zip(batch.times_ps.tolist(), batch.datas, strict=True):
                yield RxFrame(data, time_ps / PS_PER_S)


@dataclass
class BatchFeed:
    """One port's frames handed to the chip in batches through ``Chip.offer_frames`` (no
    ``RxFrame`` per frame): ``offer_until(chip, cycle)`` offers every frame due by
    ``cycle``.  A frame offered before its due cycle starts exactly as an attached source's
    would (the core starts it at max(line free, due)), so call it before every run step
    with the step's last cycle.  ``delay_cycles`` is added to every frame's due cycle (a
    system's framer in front of the chip port, as ``runtime.system``'s ``_Delayed``).

    Batches are taken from the generator (and ``on_batch`` sees them) when a frame of them
    is due, or earlier with ``look_ahead(cycle)``: that generates until a frame is known to
    be sent after ``cycle`` (tester time, no delay) or the generator is done
    (``generated``; ``last_bit_ps`` is then the port's last bit)."""

    port: int
    batches: Iterator[Batch]
    clock_hz: float
    on_batch: Callable[[Batch], None] | None = None
    model: PortModel | None = None
    delay_cycles: int = 0
    sent: int = 0  # frames generated so far
    last_bit_ps: Fraction = Fraction(0)
    exhausted: bool = False  # every frame offered
    generated: bool = False  # the generator has no more frames
    _batch: Batch | None = None
    _dues: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    _next: int = 0
    _queue: deque[tuple[Batch, np.ndarray]] = field(default_factory=deque)
    _seen_cycle: int = -1  # send cycle (no delay) of the latest frame generated

    def _fetch(self) -> bool:
        """One more batch from the generator into the queue (False: there is none)."""
        batch = None if self.generated else next(self.batches, None)
        if batch is None:
            self.generated = True
            return False
        if self.on_batch is not None:
            self.on_batch(batch)
        # the chip's own rule for a source's frame: floor(time_s * clock), time_s the
        # send time in seconds as a float (time_ps / 10**12, exact below 2**53 ps)
        seconds = batch.times_ps.astype(np.float64) / PS_PER_S
        cycles = np.floor(seconds * self.clock_hz).astype(np.int64)
        if len(batch):
            self._seen_cycle = int(cycles[-1])
        self._queue.append((batch, cycles + self.delay_cycles))  # int64, no list
        self.sent += len(batch)
        if self.model is not None and len(batch):
            self.last_bit_ps = max(self.last_bit_ps, int(batch.times_ps[-1]) +
                                   self.model.wire_ps(len(batch.datas[-1])))
        return True

    def look_ahead(self, cycle: int) -> None:
        """Generate until a frame is sent after ``cycle`` or there are no more."""
        while not self.generated and self._seen_cycle <= cycle:
            self._fetch()

    def _load(self) -> bool:
        if not self._queue:
            self._fetch()
        if not self._queue:
            self.exhausted = True
            return False
        self._batch, self._dues = self._queue.popleft()
        self._next = 0
        return True

    def offer_until(self, chip: Any, cycle: int) -> int:
        """Offer the frames due by ``cycle``; how many."""
        offered = 0
        while not self.exhausted:
            if self._batch is None or self._next >= len(self._dues):
                if not self._load():
                    break
            dues, start = self._dues, self._next
            end = start + int(np.searchsorted(dues[start:], cycle, side="right"))
            if end > start:  # a generator batch's frames are packed: one buffer, no list
                chip.offer_frames(self.port, self._batch.datas[start:end], dues[start:end])
                offered += end - start
                self._next = end
            if end < len(dues):
                break
        return offered


@dataclass
class AnalysisSink:
    """One chip sink (``sim.packets.Sink``) for every port: transmitted frames wait here
    until ``flush(now_cycle)`` hands those whose last bit is before ``now_cycle`` to the
    analysis (in order of last-bit time, then port, then arrival) and, when given, to the
    ``tally`` (per-port counts, IP bits, line use); per-port frame and byte counts are
    kept, the frames only with ``keep``.  Frames come one by one (``write``), as a port's
    columns (``write_columns``) or packed (``write_packed``: int64 arrays and
    ``PackedFrames``, runtime.system's: no Python object per frame from the chip's core to
    the analysis)."""

    analysis: FastAnalysis
    clock_hz: float
    keep: bool = False
    frames: dict[int, int] = field(default_factory=dict)  # port -> frames out
    bytes: dict[int, int] = field(default_factory=dict)  # port -> frame bytes out
    kept: list[RxRecord] = field(default_factory=list)
    tally: TrialTally | None = None
    # port -> chunks of (last-bit cycles int64, frames) waiting, in arrival order
    _waiting: dict[int, list[tuple[np.ndarray, PackedFrames]]] = field(default_factory=dict)

    def write(self, frame: TxFrame) -> None:
        self.write_columns(frame.port, [frame.first_bit_cycle], [frame.last_bit_cycle],
                           [frame.data])

    def write_columns(self, port: int, firsts: list[int], lasts: list[int],
                      datas: list[bytes]) -> None:
        """``port``'s frames in order of arrival (first-bit cycles unused)."""
        if len(lasts):
            self._waiting.setdefault(port, []).append(
                (np.asarray(lasts, dtype=np.int64), PackedFrames.from_list(datas)))

    def write_packed(self, port: int, firsts: np.ndarray, lasts: np.ndarray,
                     frames: PackedFrames) -> None:
        """``port``'s frames in order of arrival, packed (first-bit cycles unused)."""
        if len(lasts):
            self._waiting.setdefault(port, []).append((lasts, frames))

    def close(self) -> None:
        pass

    @property
    def written(self) -> int:
        """Frames written so far, analysed or waiting."""
        return sum(self.frames.values()) + sum(len(lasts) for chunks in self._waiting.values()
                                               for lasts, _ in chunks)

    def flush(self, now_cycle: int | None = None) -> int:
        """Analyse the frames out before ``now_cycle`` (None: all); how many."""
        runs: list[tuple[int, int]] = []  # (port, frames): the ports' runs, sorted by port
        lasts_parts: list[np.ndarray] = []
        frames_parts: list[PackedFrames] = []
        for port in sorted(self._waiting):  # by port, each in arrival order
            chunks = self._waiting[port]
            if not chunks:
                continue
            port_lasts = chunks[0][0] if len(chunks) == 1 else \
                np.concatenate([lasts for lasts, _ in chunks])
            port_frames = PackedFrames.concat([frames for _, frames in chunks])
            if now_cycle is None:
                ready = len(port_lasts)
                is_prefix = True
            else:
                before = port_lasts < now_cycle
                ready = int(np.count_nonzero(before))
                is_prefix = bool(before[:ready].all())  # the first ``ready`` (the usual case)
            if is_prefix:
                left = (port_lasts[ready:], port_frames[ready:])
                port_lasts, port_frames = port_lasts[:ready], port_frames[:ready]
            else:  # the frames before now_cycle, and the rest, each in arrival order
                taken, kept = np.flatnonzero(before), np.flatnonzero(~before)
                left = (port_lasts[kept], port_frames.take(kept))
                port_lasts, port_frames = port_lasts[taken], port_frames.take(taken)
            self._waiting[port] = [left] if len(left[0]) else []
            if not ready:
                continue
            runs.append((port, ready))
            lasts_parts.append(port_lasts)
            frames_parts.append(port_frames)
        if not runs:
            return 0
        lasts = np.concatenate(lasts_parts)
        datas = PackedFrames.concat(frames_parts)
        # numpy columns to the analysis and the tally (no list of ints each, converted back
        # element by element), unless the picoseconds need Python's integers
        times: Any = _cycles_to_ps_array(lasts, self.clock_hz)
        if times is not None:
            ports = np.repeat(np.array([p for p, _ in runs], dtype=np.int32),
                              [n for _, n in runs])
            self.analysis.received_arrays(ports, times, datas)
        else:
            ports = [p for p, n in runs for _ in range(n)]
            times = cycles_to_ps(lasts.tolist(), self.clock_hz)
            self.analysis.received(ports, times, datas)
        start = 0
        for (port, count), part in zip(runs, frames_parts, strict=True):
            end = start + count  # one slice per port, no Python per frame
            self.frames[port] = self.frames.get(port, 0) + count
            self.bytes[port] = self.bytes.get(port, 0) + part.nbytes
            if self.tally is not None:
                self.tally.add_received(port, times[start:end], datas[start:end])
            start = end
        if self.keep:
            self.kept += [RxRecord(p, t, d) for p, t, d in
                          zip(ports.tolist() if isinstance(ports, np.ndarray) else ports,
                              times.tolist() if isinstance(times, np.ndarray) else times,
                              datas, strict=True)]
        return len(datas)


@dataclass
class StreamingTrial:
    """The sources and the sink ``stream_trial`` attached, and the analysis behind them."""

    sources: dict[int, BatchSource]
    sink: AnalysisSink
    analysis: FastAnalysis
    feeds: dict[int, BatchFeed] = field(default_factory=dict)  # offer mode

    @property
    def sent(self) -> int:
        return sum(s.sent for s in [*self.sources.values(), *self.feeds.values()])

    @property
    def exhausted_last_bit_ps(self) -> Fraction:
        return max((s.last_bit_ps for s in [*self.sources.values(), *self.feeds.values()]),
                   default=Fraction(0))

    @property
    def fed(self) -> bool:
        """Offer mode: every port's frames have been offered."""
        return all(f.exhausted for f in self.feeds.values())

    def offer_until(self, chip: Any, cycle: int) -> int:
        """Offer mode: every port's frames due by ``cycle`` (call before each run step)."""
        return sum(self.feeds[p].offer_until(chip, cycle) for p in sorted(self.feeds))

    def report(self) -> Any:
        self.sink.flush()
        return self.analysis.report()


def streaming(streams: Iterable[Stream], ports: Mapping[int, str | PortModel], expect: Any,
              clock_hz: float, bin_ps: int = 100_000, keep: bool = False,
              batch_frames: int = BATCH_FRAMES, offer: bool = False,
              tally: TrialTally | None = None) -> StreamingTrial:
    """The parts of a streaming trial, not yet attached: a ``BatchSource`` per tester port
    and the one ``AnalysisSink`` (``clock_hz``: the chip clock its cycles count) -- for a
    system of chips, attach them to its external ports; ``stream_trial`` does it for one
    chip.  ``expect`` must be a ``PassThrough`` or ``RouteReference``.  ``offer``: no
    sources; ``BatchFeed``s offer the frames with ``Chip.offer_frames`` when the caller
    calls ``offer_until`` before each run step (no ``RxFrame`` per frame).  ``tally``:
    every batch sent and every frame received is also tallied there."""
    models, by_port = check_streams(streams, ports)
    tables = compiled(expect, models)
    if tables is None:
        raise ValueError("streaming analysis needs a PassThrough or RouteReference "
                         "expectation; use attach + Analyzer.analyze for others")
    analysis = FastAnalysis(models, tables, bin_ps)

    def register(batch: Batch) -> None:
        analysis.sent_batch(batch.port, batch.times_ps, batch.datas, batch.streams,
                            batch.seqs)
        if tally is not None:
            tally.add_sent(batch.port, batch.times_ps, batch.datas)

    ordered = [s for p in sorted(by_port) for s in by_port[p]]
    made = batches(ordered, models, batch_frames)
    sink = AnalysisSink(analysis, clock_hz, keep, tally=tally)
    if offer:
        feeds = {port: BatchFeed(port, port_batches, clock_hz, register, models[port])
                 for port, port_batches in made.items()}
        return StreamingTrial({}, sink, analysis, feeds)
    sources = {port: BatchSource(port_batches, register, model=models[port])
               for port, port_batches in made.items()}
    return StreamingTrial(sources, sink, analysis)


def stream_trial(chip: Any, streams: Iterable[Stream], ports: Mapping[int, str | PortModel],
                 expect: Any, bin_ps: int = 100_000, keep: bool = False,
                 batch_frames: int = BATCH_FRAMES, check_ports: bool = True,
                 offer: bool = False, tally: TrialTally | None = None) -> StreamingTrial:
    """Attach ``streams`` to ``chip`` for a streaming trial judged by ``expect`` (a
    ``PassThrough`` or ``RouteReference``): run the chip, call ``trial.sink.flush(chip.now)``
    as often as memory asks (every run step is fine), then ``trial.report()``.  With
    ``offer``, call ``trial.offer_until(chip, chip.now + step)`` before each step.
    ``tally``: as ``streaming``'s."""
    streams = list(streams)
    if check_ports:
        models, _ = check_streams(streams, ports)
        problems = port_mismatches(chip.config.ports, models)
        if problems:
            raise ValueError("tester and chip ports disagree:\n  " + "\n  ".join(problems))
    trial = streaming(streams, ports, expect, chip.config.clock_hz, bin_ps, keep,
                      batch_frames, offer, tally)
    for port in sorted(trial.sources):
        chip.attach_source(port, trial.sources[port])
    for port in range(len(chip.config.ports)):
        chip.attach_sink(port, trial.sink)
    return trial
