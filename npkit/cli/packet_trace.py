"""``npkit run`` options for per-packet traces and the stall/utilisation view
(docs/debugging.md, "Per-packet traces"; docs/cli.md).

    --packet-trace FILE      each selected frame's journey, Chrome/Perfetto JSON with flows
                             (FILE.pftrace: Perfetto's protobuf, needs the perfetto package)
    --trace-frames A:B       frames A..B-1 of each port (port sequence numbers, from 0)
    --trace-ports 0,1        only frames arriving on these ports
    --trace-sample N         every N-th frame of the range
    --trace-verdict WORD     only frames whose outcome names WORD (drop, forward, a reason)
    --trace-flow SPEC        only frames of a flow: src=NET,dst=NET,proto=P,sport=N,dport=N
    --trace-cap SIZE         stop writing frames at this file size (default 10MB)
    --no-trace-commands      leave the contexts' memory commands out (~4x more frames fit)
    --utilisation FILE.png   per-ME cycle shares (table on the console, chart here) and the
                             units' counter tracks (in the packet trace, when one is written)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from npkit.base.errors import NpkitError

from .app import writable

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?)b?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}
CORE_EVENT_BYTES = 40      # struct FrameEvent
CORE_EVENTS_MIN = 1 << 16


def parse_size(text: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise click.BadParameter(f"{text!r}: expected a size such as 10MB, 500k or 2000000")
    return int(float(m.group(1)) * _SCALE[m.group(2).lower()])


def parse_range(text: str) -> tuple[int, int | None]:
    first, sep, last = text.partition(":")
    try:
        a = int(first) if first else 0
        b = int(last) if sep and last else (None if sep else a + 1)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected A:B, A: or A (frame numbers)") from None
    if a < 0 or (b is not None and b <= a):
        raise click.BadParameter(f"{text!r}: the range is empty")
    return a, b


def _size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    return None if value is None else parse_size(value)


OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option("--packet-trace", type=click.Path(path_type=Path), callback=writable,
                 help="write each selected frame's journey (Chrome/Perfetto JSON with flows; "
                      "a .pftrace name: Perfetto's protobuf, needs the perfetto package)"),
    click.option("--trace-frames", metavar="A:B",
                 help="packet trace: frames A..B-1 of each port (numbered from 0 per port)"),
    click.option("--trace-ports", metavar="P[,P]",
                 help="packet trace: only frames arriving on these ports"),
    click.option("--trace-sample", type=click.IntRange(min=1), default=1, show_default=True,
                 help="packet trace: every N-th frame of the range"),
    click.option("--trace-verdict", metavar="WORD",
                 help="packet trace: only frames whose outcome names WORD (drop, forward, "
                      "exception, sent, or a drop reason)"),
    click.option("--trace-flow", metavar="SPEC",
                 help="packet trace: only a flow's frames, e.g. "
                      "src=10.0.0.0/8,dst=192.0.2.1,proto=udp,dport=53"),
    click.option("--trace-cap", callback=_size_option, default="10MB", show_default=True,
                 help="packet trace: file size at which frames stop being written"),
    click.option("--trace-commands/--no-trace-commands", default=True, show_default=True,
                 help="packet trace: the memory commands each carrying context issued"),
    click.option("--utilisation", type=click.Path(path_type=Path), callback=writable,
                 help="print per-ME cycle shares (executing / stalled / idle by unit) and "
                      "write them as a chart (PNG) here"),
]


@dataclass
class PacketTraceRequest:
    path: Path | None = None
    frames: str | None = None
    ports: str | None = None
    sample: int = 1
    verdict: str | None = None
    flow: str | None = None
    cap: int | None = 10_000_000
    utilisation: Path | None = None
    commands: bool = True

    @property
    def wanted(self) -> bool:
        return self.path is not None or self.utilisation is not None


@dataclass
class PacketTraceRun:
    """The frame log attached to a run, and what the report needs from the request."""

    request: PacketTraceRequest
    log: Any
    program: Any = None        # npkit.runtime.packet_trace.ProgramTrace, or None
    taps: dict[int, Any] = field(default_factory=dict)


def start(run: Any, request: PacketTraceRequest) -> PacketTraceRun | None:
    """Attach the frame log before the run (flow taps wrap the sources afterwards)."""
    if not request.wanted:
        return None
    from npkit.runtime.compiled import program_info
    from npkit.runtime.packet_trace import trace_program
    from npkit.sim.packet_trace import PROTO_SUFFIXES, Selection

    selection = None
    if request.path is not None and request.path.suffix in PROTO_SUFFIXES:
        try:
            import npkit.sim.perfetto_proto  # noqa: F401  (before the run, not after it)
        except ImportError as err:
            raise NpkitError(f"--packet-trace {request.path}: Perfetto's protobuf format "
                             f"needs the perfetto package (pip install perfetto): {err}; "
                             "or write a .json trace") from None
    if request.path is not None:
        first, last = parse_range(request.frames) if request.frames else (0, None)
        try:
            ports = (tuple(int(p, 0) for p in request.ports.split(",") if p.strip())
                     if request.ports else None)
            cap = request.cap or 10_000_000
            selection = Selection(first, last, ports, request.sample,
                                  max(CORE_EVENTS_MIN, cap // CORE_EVENT_BYTES * 4))
        except ValueError as err:
            raise NpkitError(f"packet trace selection: {err}") from None
    chip = run.chip
    manifest = getattr(run, "manifest", None)
    if manifest is not None and getattr(manifest, "program", None) is not None:
        traced = trace_program(chip, program_info(manifest), selection)
        return PacketTraceRun(request, traced.log, traced)
    return PacketTraceRun(request, chip.enable_frame_log(selection))


def wrap_source(trace: PacketTraceRun | None, port: int, source: Any) -> Any:
    """The source, wrapped to note a flow's frames when --trace-flow is given."""
    if trace is None or trace.request.flow is None:
        return source
    from npkit.runtime.packet_trace import FlowSpec, FlowTap

    try:
        flow = FlowSpec.parse(trace.request.flow)
    except ValueError as err:
        raise NpkitError(f"--trace-flow: {err}") from None
    tap = trace.taps[port] = FlowTap(source, flow)
    return tap


def finish(trace: PacketTraceRun | None, chip: Any, console: Console) -> None:
    """Write the packet trace and the utilisation view after the run."""
    if trace is None:
        return
    from npkit.runtime.packet_trace import describe, flow_keep, keep_filter
    from npkit.sim import utilisation as util
    from npkit.sim.packet_trace import TraceOptions, journeys, write_packet_trace

    request, log = trace.request, trace.log
    status = log.status()
    units = status["units"]
    raw = log.utilisation_raw()
    counters = util.counter_events(raw, units, status["bucket_cycles"], chip.config.clock_hz)
    if request.utilisation is not None:
        shares = util.me_shares(raw, log.baseline, units, chip.config.me_label)
        console.print(util.table(shares), markup=False, highlight=False, soft_wrap=True)
        for unit, row in util.unit_summary(raw, units).items():
            console.print(f"  {unit}: {row['commands']:,} commands, largest backlog "
                          f"{row['max_backlog_cycles']:,} cycles", markup=False)
        util.chart(shares, request.utilisation)
        console.print(f"utilisation chart: {request.utilisation}")
    if request.path is None:
        return
    block_of = None
    if trace.program is not None:
        frames = trace.program.journeys()
        source_of = trace.program.source_of
        block_of = trace.program.block_of
    else:
        frames = journeys(log.events(), units)

        def source_of(me: int, pc: int) -> str | None:
            image = chip.image_on(me)
            return image.source_of(pc) if hasattr(image, "source_of") else None

    keep = keep_filter(verdict=request.verdict,
                       flow=flow_keep(trace.taps) if request.flow is not None else None)
    result = write_packet_trace(request.path, frames, chip.config.clock_hz, source_of,
                                chip.config.me_label,
                                TraceOptions(cap_bytes=request.cap or 10_000_000,
                                             commands=request.commands, keep=keep,
                                             block_of=block_of),
                                status, counters)
    outcomes = ", ".join(f"{n:,} {k}" for k, n in describe(frames).items())
    console.print(f"packet trace: {request.path} ({result.frames:,} of "
                  f"{result.frames_total:,} selected frames, {result.bytes:,} bytes; "
                  f"open in https://ui.perfetto.dev)", markup=False)
    if outcomes:
        console.print(f"  followed frames: {outcomes}", markup=False)
    if result.truncated or status.get("lost"):
        console.print("  [yellow]the size cap was reached: narrow the selection "
                      "(--trace-frames, --trace-ports, --trace-sample) to see the rest"
                      "[/yellow]")


# the options --target native uses (the rest follow the chip's units and contexts)
NATIVE_OPTIONS = {"packet_trace", "trace_frames", "trace_ports", "trace_sample",
                  "trace_verdict", "trace_flow", "trace_cap"}


def native_trace(native: Any, in_files: dict[int, Path], options: dict[str, Any],
                 console: Console) -> None:
    """``--packet-trace`` for ``--target native``: the selected frames' journeys block by
    block (npkit.runtime.native_journey), selected as on the chip (range, ports and
    sampling by port sequence number; flow by the frame's bytes; verdict by the outcome)."""
    path = options.get("packet_trace")
    if path is None:
        return
    from npkit.base.packetfile import read_packets
    from npkit.runtime.native_journey import NativeJourneys, outcome_words, write_native_trace
    from npkit.runtime.packet_trace import FlowSpec
    from npkit.sim.packet_trace import PROTO_SUFFIXES, TraceOptions

    if path.suffix in PROTO_SUFFIXES:
        try:
            import npkit.sim.perfetto_proto  # noqa: F401
        except ImportError as err:
            raise NpkitError(f"--packet-trace {path}: Perfetto's protobuf format needs the "
                             f"perfetto package (pip install perfetto): {err}") from None
    first, last = parse_range(options["trace_frames"]) if options.get("trace_frames") \
        else (0, None)
    sample = options.get("trace_sample") or 1
    try:
        ports = ({int(p, 0) for p in options["trace_ports"].split(",") if p.strip()}
                 if options.get("trace_ports") else None)
        flow = FlowSpec.parse(options["trace_flow"]) if options.get("trace_flow") else None
    except ValueError as err:
        raise NpkitError(f"packet trace selection: {err}") from None

    def items() -> Any:
        for port in sorted(in_files):
            if ports is not None and port not in ports:
                continue
            for seq, (_, data) in enumerate(read_packets(in_files[port])):
                if last is not None and seq >= last:
                    break
                if seq >= first and (seq - first) % sample == 0 and \
                        (flow is None or flow.matches(data)):
                    yield port, seq, data

    journeys = NativeJourneys(native).follow_items(items())
    verdict = options.get("trace_verdict")
    if verdict is not None:
        journeys = [j for j in journeys
                    if any(w == verdict or w.startswith(verdict) for w in outcome_words(j))]
    result = write_native_trace(path, journeys,
                                TraceOptions(cap_bytes=options.get("trace_cap") or 10_000_000))
    outcomes: dict[str, int] = {}
    for j in journeys:
        outcomes[j.outcome] = outcomes.get(j.outcome, 0) + 1
    console.print(f"packet trace: {path} ({result.frames:,} of {result.frames_total:,} "
                  f"selected frames, {result.bytes:,} bytes; open in https://ui.perfetto.dev)",
                  markup=False)
    if outcomes:
        console.print("  followed frames: " + ", ".join(
            f"{n:,} {k}" for k, n in sorted(outcomes.items(), key=lambda kv: -kv[1])),
            markup=False)
