"""Latency by component (issue 12, acceptance 2): where a frame's time goes between the
tester's first bit out and its last bit back.

The tester measures first bit in -> last bit out (FILO, ``bench/tester/analyzer.py``) and,
per frame, the store-and-forward latency (S&F, last bit in -> first bit out = FILO minus
the frame's own time on the input and the output line).  From those measured figures and
the system file's fixed delays, one latency point splits into parts that add up to its
average exactly:

* **line**: the frame's own time on the input and output lines (average FILO - average
  S&F: measured per frame);
* **framer**: the receive + transmit framer delays of the system file (sim/systems, tagged
  there; a plain delay in the model, so every ns there is a ns here);
* **link**: chip-to-chip links on the frame's path (their ``latency_ns``; none in
  ``dual-ixp2800-npf``, where a frame crosses one chip);
* **chip**: the chip's transit with no wait: the fastest frame's S&F less framer and link
  (last bit into the chip port -> first bit out of it);
* **queueing**: average S&F - fastest S&F: waiting for a thread (RBUF), in rings, for the
  transmit order and the output line.

``one_frame`` runs ONE frame through an idle system with the chip's thread trace on and
splits the chip's transit further: RBUF (last bit in -> the thread that got its status
starts), the ME's executing time, and the ME's waiting time (memory, signals, ordered
turns, TBUF -> line) up to the first bit out.  Under load the core keeps no per-frame
timestamps inside the chip (RBUF element autopushed, TBUF element valid), so the queueing
part is not split further there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from npkit.bench.lab.report_parts import PS_PER_US, table

PS_PER_NS = 1000


# --------------------------------------------------------------------------- fixed delays
@dataclass(frozen=True)
class PathDelays:
    """Fixed delays outside the chips on a frame's way through a system (ps, the mean over
    the external ports): framer receive, framer transmit, chip-to-chip links crossed."""

    framer_rx_ps: float = 0.0
    framer_tx_ps: float = 0.0
    link_ps: float = 0.0

    @property
    def total_ps(self) -> float:
        return self.framer_rx_ps + self.framer_tx_ps + self.link_ps

    @classmethod
    def of(cls, device: Mapping[str, Any]) -> PathDelays:
        """From a device's ``describe()``: its ``wiring`` (per external port the framer's
        delays and the chips it enters and leaves by) and ``links`` (name -> from, to,
        latency_ns).  A device without wiring (the single chip) has none."""
        wiring = device.get("wiring") or {}
        if not wiring:
            return cls()
        links = device.get("links") or {}
        rx = tx = link = 0.0
        for port in wiring.values():
            rx += port["rx_delay_ns"] * PS_PER_NS
            tx += port["tx_delay_ns"] * PS_PER_NS
            link += _link_ns(links, port) * PS_PER_NS
        n = len(wiring)
        return cls(rx / n, tx / n, link / n)


def _link_ns(links: Mapping[str, Any], port: Mapping[str, Any]) -> float:
    """Latency of the link a frame of ``port`` crosses from the chip that receives it to
    the chip that transmits it (0 when one chip does both)."""
    src, dst = str(port.get("rx", "")).partition(":")[0], str(port.get("tx", "")).partition(":")[0]
    if src == dst:
        return 0.0
    return sum(float(lk["latency_ns"]) for lk in links.values()
               if str(lk["from"]).partition(":")[0] == src
               and str(lk["to"]).partition(":")[0] == dst)


# --------------------------------------------------------------------------- a latency point
@dataclass(frozen=True)
class LatencyParts:
    """One latency point by component, in µs (module docstring); ``line + framer + link +
    chip + queueing == average``."""

    average: float
    line: float
    framer: float
    link: float
    chip: float
    queueing: float

    def total(self) -> float:
        return self.line + self.framer + self.link + self.chip + self.queueing


def latency_parts(device: Mapping[str, Any], point: Any) -> LatencyParts | None:
    """The components of a latency point (an ``npf.LatencyPoint`` or anything with
    ``avg_ps``, ``lifo_avg_ps`` and ``lifo_min_ps``); None when nothing was measured."""
    if point.avg_ps is None or point.lifo_avg_ps is None or point.lifo_min_ps is None:
        return None
    path = PathDelays.of(device)
    line = point.avg_ps - point.lifo_avg_ps
    chip = point.lifo_min_ps - path.total_ps
    queueing = point.lifo_avg_ps - point.lifo_min_ps
    return LatencyParts(point.avg_ps / PS_PER_US, line / PS_PER_US,
                        (path.framer_rx_ps + path.framer_tx_ps) / PS_PER_US,
                        path.link_ps / PS_PER_US, chip / PS_PER_US, queueing / PS_PER_US)


@dataclass(frozen=True)
class Published:
    """The published figures a latency point is set beside (µs; None: not published)."""

    avg: float | None
    min: float | None = None


def breakdown_rows(device: Mapping[str, Any], rows: list[tuple[str, Any, Published]]
                   ) -> list[tuple[str, ...]]:
    """Table rows for ``(label, point, published)``: the parts, the published average and
    what the model leaves unexplained (published - ours), for the average and for the
    fastest frame (the published minimum against ours: a gap there is a fixed delay per
    frame, not queueing)."""
    out = []
    for label, point, theirs in rows:
        parts = latency_parts(device, point)
        if parts is None:
            continue
        fastest = getattr(point, "min_ps", None)
        out.append((label, f"{point.load_percent:g} %", f"{parts.average:.2f}",
                    f"{parts.line:.2f}", f"{parts.framer:.2f}", f"{parts.link:.2f}",
                    f"{parts.chip:.2f}", f"{parts.queueing:.2f}",
                    f"{theirs.avg:.2f}" if theirs.avg else "–",
                    f"{theirs.avg - parts.average:+.2f}" if theirs.avg else "–",
                    f"{theirs.min - fastest / PS_PER_US:+.2f}"
                    if theirs.min and fastest is not None else "–"))
    return out


BREAKDOWN_HEADER = ("family", "of line rate", "avg µs", "line µs", "framer µs", "link µs",
                    "chip µs", "queueing µs", "published avg µs", "published − ours, avg µs",
                    "published − ours, min µs")


def breakdown_markdown(device: Mapping[str, Any], rows: list[tuple[str, Any, Published]]
                       ) -> str:
    """The breakdown table with what each column means (empty when nothing measured)."""
    body = breakdown_rows(device, rows)
    if not body:
        return ""
    path = PathDelays.of(device)
    system = device.get("system", "the single chip (no framers modelled)")
    return (f"**The average by component** ({system}; `bench/lab/latency_parts.py`): "
            "*line* = the frame's own time on the input and output lines (average FILO − "
            "average store-and-forward, per frame); *framer* = the system file's receive + "
            f"transmit framer delays ({path.framer_rx_ps / PS_PER_NS:g} + "
            f"{path.framer_tx_ps / PS_PER_NS:g} ns, guessed, U: no published IXF18101 "
            "figure was found, docs/system.md); *link* = chip-to-chip links crossed (none "
            "when one chip receives and transmits the frame); *chip* = the chip's transit "
            "with no wait (the fastest frame's last bit in → first bit out, less framer and "
            "link); *queueing* = the average store-and-forward less the fastest (waiting "
            "for a thread, in rings, for the transmit order and the output line, and the "
            "longer frames' longer transit through the chip: docs/system.md, \"Latency\", "
            "gives one frame of each size through the idle chip).  The parts add up to "
            "the average; \"published − ours\" is what the model leaves unexplained, for the "
            "average and for the fastest frame (a gap in the minimum is a fixed delay per "
            "frame, not queueing).\n\n" + table(BREAKDOWN_HEADER, body))


def line_wait_ps(records: Iterable[Any], ports: Mapping[int, Any],
                 out_of: Mapping[int, int]) -> float:
    """The mean wait for the output line of an IDEAL store-and-forward device fed the same
    frames: each frame ready a fixed time after its last bit in (the same for every frame,
    so it cancels), sent in arrival order on its output line (``out_of``: input port ->
    output port) at that line's rate, unchanged in length.  This part of the queueing is
    the traffic's own (a short frame behind a long one waits for the long one to leave)
    and any store-and-forward router has it; the rest of our queueing is the chip's."""
    waiting: dict[int, list[tuple[float, float]]] = {}
    for r in records:
        arrived = r.time_ps + float(ports[r.port].wire_ps(len(r.data)))
        out = out_of[r.port]
        waiting.setdefault(out, []).append((arrived, float(ports[out].wire_ps(len(r.data)))))
    total = 0.0
    count = 0
    for frames in waiting.values():
        free = float("-inf")
        for ready, wire in sorted(frames):
            start = max(ready, free)
            total += start - ready
            free = start + wire
            count += 1
    return total / count if count else 0.0


# --------------------------------------------------------------------------- one idle frame
@dataclass(frozen=True)
class FrameParts:
    """One frame through an idle system, in ps (``one_frame``).  ``measured`` is the
    tester's FILO latency of the frame; the parts are from the chip's own timestamps and
    thread trace and the system file's delays, and add up to it within a cycle."""

    size: int  # frame bytes as the tester sent them
    measured: float
    line_in: float
    framer_rx: float
    rbuf: float  # last bit in the chip port -> the thread given its status starts
    me_executing: float  # that thread's executing time up to the first bit out
    me_waiting: float  # the rest of the chip's transit (memory, signals, turns, TBUF)
    framer_tx: float
    line_out: float
    link: float = 0.0

    def total(self) -> float:
        return (self.line_in + self.framer_rx + self.link + self.rbuf + self.me_executing
                + self.me_waiting + self.framer_tx + self.line_out)

    @property
    def chip(self) -> float:
        return self.rbuf + self.me_executing + self.me_waiting


def one_frame(device: Any, stream: Any, run_ps: int = 40_000_000) -> FrameParts:
    """Send ``stream`` (ONE frame: ``count=1``) through an idle ``SystemChipDevice`` (a
    system without chip-to-chip links) with the receiving chip's thread trace on, and
    split the frame's latency (``FrameParts``).  ``run_ps``: simulated time to run."""
    from npkit.bench.tester import Analyzer, generate
    from npkit.bench.tester.chip import received, sources
    from npkit.sim.packets import ListSink

    spec = device.spec
    if spec.links:
        raise ValueError(f"one_frame: system {spec.name} has chip-to-chip links; "
                         "only a frame that crosses one chip is split")
    if stream.count != 1:
        raise ValueError("one_frame: give a stream of one frame (count=1)")
    device.prepare()
    traffic = generate([stream], device.ports)
    record = traffic.records()[0]
    entry = spec.ports[record.port]
    system, _ = device.restored()
    chip = system.chips[entry.rx.chip]
    chip.enable_trace(True)
    names = [p.name for p in spec.ports]
    for port, source in sources(traffic).items():
        system.attach_source(names[port], source)
    sinks = {i: ListSink() for i in range(len(names))}
    for index, sink in sinks.items():
        system.attach_sink(names[index], sink)
    clock = system.clock_hz
    system.run(int(clock * run_ps / 1e12))
    spans = chip.spans
    chip.enable_trace(False)
    out = [(i, f) for i, s in sinks.items() for f in s.frames]
    if len(out) != 1:
        raise RuntimeError(f"one_frame: {len(out)} frames came out, expected 1")
    out_index, frame = out[0]
    report = Analyzer(device.ports, device.reference, 1_000).analyze(
        traffic.records(), received([frame], clock))
    if report.total.latency.min_ps is None:
        raise RuntimeError("one_frame: the tester matched no frame")
    ps_per_cycle = Fraction(10**12) / Fraction(clock)
    line_in = device.ports[record.port].wire_ps(len(record.data))
    line_out = device.ports[out_index].wire_ps(len(frame.data))
    rx_cycles = system.framer_cycles(entry.name)[0]
    tx_cycles = system.framer_cycles(spec.ports[out_index].name)[1]
    # the chip starts the frame at floor(t0 * clock) + rx_cycles (runtime/system.py); the
    # part of a cycle it waited for that is counted with the line
    start = int(Fraction(record.time_ps) / ps_per_cycle) + rx_cycles
    arrived = start * ps_per_cycle + line_in  # last bit in the chip port
    out_first = (frame.first_bit_cycle - tx_cycles) * ps_per_cycle  # first bit out of it
    woke, thread = _first_wake(spans, arrived / ps_per_cycle)
    end = out_first / ps_per_cycle
    executing = sum(min(s.end, end) - max(s.start, woke) for s in spans
                    if (s.me, s.ctx) == thread and s.state == "executing"
                    and s.end > woke and s.start < end)
    lead = (start - rx_cycles) * ps_per_cycle - record.time_ps
    return FrameParts(
        size=len(record.data), measured=float(report.total.latency.min_ps),
        line_in=float(line_in + lead), framer_rx=float(rx_cycles * ps_per_cycle),
        rbuf=float(woke * ps_per_cycle - arrived),
        me_executing=float(executing * ps_per_cycle),
        me_waiting=float(out_first - (woke + executing) * ps_per_cycle),
        framer_tx=float(tx_cycles * ps_per_cycle), line_out=float(line_out))


def _first_wake(spans: list[Any], after_cycle: float) -> tuple[int, tuple[int, int]]:
    """The first executing span that starts at or after ``after_cycle``: (start, thread)."""
    starts = [(s.start, (s.me, s.ctx)) for s in spans
              if s.state == "executing" and s.start >= after_cycle]
    if not starts:
        raise RuntimeError("one_frame: no thread ran after the frame arrived")
    return min(starts)


__all__ = ["BREAKDOWN_HEADER", "FrameParts", "LatencyParts", "PathDelays", "Published",
           "breakdown_markdown", "breakdown_rows", "latency_parts", "line_wait_ps",
           "one_frame"]
