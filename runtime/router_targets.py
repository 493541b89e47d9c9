"""The MBL dual-stack router (examples/router/router.mbl) with its control plane, on either
target, from one router config (``npkit router run CONFIG --target native|chip``).

    frames = read_inputs({0: Path("in.pcap")}, config, config_path)   # merged by time
    result = run_native(config, frames, changes)       # or run_chip(config, path, frames, ...)
    write_outputs(result, {1: Path("out.pcap")})

Both targets take the same frames with the capture's timing (each file's timestamps,
relative to the earliest record of all inputs) and the same timed route changes:

* **native**: the router runs natively (NativeProgram) in time order, in batches; the
  control plane's timers fire at each frame's time and each exception is answered as its
  verdict is taken, so the control plane's frames follow the frame that caused them; a
  route change applies before the first frame at or after its time;
* **chip**: the program compiled for the MEs and linked for the IXP2800 with as many 10GbE
  ports as the config needs (2 or 4), the control plane in the XScale model (exceptions
  polled, replies injected, changes replayed word by word in simulated time).

On traffic spaced wider than the chip's exception latency (a few µs) both give the same
frames per port in the same order: the shipped sample (examples/router/sample.pcap) is
checked so by tests/cli/test_cli_router_targets.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from npkit.base.errors import NpkitError
from npkit.base.packetfile import PacketFileError, PcapWriter, read_packets
from npkit.runtime.router_config import DEFAULT_TARGET, ConfigTarget, RouterConfig

ROUTER_MBL = Path(str(resources.files("npkit.examples").joinpath("router", "router.mbl")))
DEFAULT_CONFIG = Path(str(resources.files("npkit.examples").joinpath("router", "control.toml")))
TARGETS = ("native", "chip")
CHIP_PORT_COUNTS = (2, 4)        # the IXP2800 platforms (link.platform.for_ports)
CHIP_PORT_KIND = "10gbe"
NATIVE_BATCH = 1024     # frames the native data plane runs at once (between route changes)
MIN_BATCH = 16          # ... at least, after a batch an exception cut short


class RouterTargetError(NpkitError):
    """Inputs or a config the chosen target cannot run."""


@dataclass(frozen=True)
class TimedFrame:
    time_s: float       # from the earliest record of all input files
    port: int
    data: bytes


@dataclass
class RouterResult:
    """Frames out per port, in order, with their times (s), and the run's counters."""

    out: dict[int, list[tuple[float, bytes]]] = field(default_factory=dict)
    counters: dict[str, Any] = field(default_factory=dict)

    def frames(self, port: int) -> list[bytes]:
        return [data for _, data in self.out.get(port, [])]


def chip_ports(config: RouterConfig) -> int:
    """The chip platform's port count for a config: the smallest that holds its highest
    port (ports are numbered from 0)."""
    needed = 1 + max((p.port for p in config.ports), default=0)
    for count in CHIP_PORT_COUNTS:
        if needed <= count:
            return count
    raise RouterTargetError(f"port {needed - 1}: the chip target has at most "
                            f"{CHIP_PORT_COUNTS[-1]} ports (0..{CHIP_PORT_COUNTS[-1] - 1}); "
                            "use --target native or renumber the ports")


def config_target(target: str, program: Any = None) -> ConfigTarget:
    """What router.mbl can hold on `target`: its memories' sizes (from the checked
    program, default router_common.mbl's), and on the chip at most 4 ports."""
    if target not in TARGETS:
        raise RouterTargetError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")
    base = DEFAULT_TARGET
    if program is not None:
        memories = program.memories
        base = ConfigTarget(name=ROUTER_MBL.name,
                            ports=memories["port_table"].size if "port_table" in memories
                            else base.ports, nexthops=memories["nexthops"].size,
                            local4_slots=memories["local4"].size,
                            local6_slots=memories["local6"].size if "local6" in memories
                            else 0)
    if target == "chip":
        return ConfigTarget(name=f"{base.name} on the chip",
                            ports=min(base.ports, CHIP_PORT_COUNTS[-1]),
                            nexthops=base.nexthops, local4_slots=base.local4_slots,
                            local6_slots=base.local6_slots)
    return base


def load_config(path: Path, target: str) -> RouterConfig:
    """The config checked against what router.mbl holds on `target` (errors: file:line)."""
    return RouterConfig.load(path, config_target(target))


def check_ports(files: dict[int, Path], config: RouterConfig, config_path: Path,
                option: str) -> None:
    """Every port of `--in` / `--out` is one the config declares."""
    known = sorted(p.port for p in config.ports)
    for port, path in files.items():
        if port not in known:
            raise RouterTargetError(
                f"{option} {port}={path}: port {port} is not a port of {config_path} "
                f"(its ports: {', '.join(map(str, known))}); add a [[port]] table for it "
                "or use one of those")


def read_inputs(files: dict[int, Path]) -> list[TimedFrame]:
    """Every frame of every input file, in time order (ties: by port, then file order);
    times are from the earliest record of all files."""
    records: list[tuple[float, int, int, bytes]] = []
    for port, path in files.items():
        try:
            for index, (ts, data) in enumerate(read_packets(path)):
                records.append((ts, port, index, bytes(data)))
        except PacketFileError as exc:
            raise RouterTargetError(f"--in {port}={path}: {exc} (give a pcap or pcapng "
                                    "capture of Ethernet frames)") from None
    records.sort(key=lambda r: (r[0], r[1], r[2]))
    first = records[0][0] if records else 0.0
    return [TimedFrame(ts - first, port, data) for ts, port, _, data in records]


def _checked_program() -> Any:
    from npkit.compiler.mbl import compile_file

    return compile_file(ROUTER_MBL)


# ------------------------------------------------------------------------------ native
def run_native(config: RouterConfig, frames: Sequence[TimedFrame],
               changes: Sequence[Any] = (), batch: int = NATIVE_BATCH) -> RouterResult:
    """router.mbl on the native target with its control plane, in time order, giving what
    NativeRouter.forward gives one frame a call: the control plane's timers fire at each
    frame's time (ARP / ND, reassembly), an exception is answered at once, so the frames
    the control plane sends follow the frame that caused them; `changes`
    (router_run.TimedChange) apply before the first frame at or after their time.

    The data plane runs batches of up to `batch` frames; a batch ends at a route change,
    after an exception (its handler may change the tables, e.g. learn a neighbour) and
    before a frame whose timers changed the routes, so no verdict is from stale tables."""
    from npkit.compiler.mbl import NativeProgram
    from npkit.runtime.control_plane import NativeRouter
    from npkit.runtime.router_run import change_function

    ports = 1 + max((p.port for p in config.ports), default=0)
    router = NativeRouter(NativeProgram(_checked_program()), ports=ports, config=config)
    pending = list(changes)
    result = RouterResult()
    applied, start, size = 0, 0, batch
    while start < len(frames):
        while pending and pending[0].time_us * 1e-6 <= frames[start].time_s:
            change_function(pending.pop(0))(router.control)
            applied += 1
        _send(router, result, frames[start].time_s, _tick(router, frames[start].time_s))
        stop = min(len(frames), start + size)
        if pending:             # the batch ends before the next change's time
            stop = next((i for i in range(start + 1, stop)
                         if pending[0].time_us * 1e-6 <= frames[i].time_s), stop)
        taken = _native_batch(router, frames[start:stop], result)
        # cut short: the next batch about twice as long as this one got (exceptions come
        # at some rate; running far past the next would be wasted), else grow back
        size = min(batch, max(MIN_BATCH, 2 * taken) if taken < stop - start else 2 * size)
        start += taken
    for change in pending:              # changes after the last frame still apply
        change_function(change)(router.control)
        applied += 1
    result.counters = {"ports": router.counters.as_dict(),
                       "exception_path": dict(router.control.exceptions.counters),
                       "changes_applied": applied}
    return result


def _tick(router: Any, time_s: float) -> list[Any]:
    tick = getattr(router.control, "tick", None)     # the control plane's timers, if any
    return [] if tick is None else tick(round(time_s * 1e9))


def _send(router: Any, result: RouterResult, time_s: float, emits: Sequence[Any]) -> None:
    """The control plane's frames, counted as NativeRouter counts them (tx and injected)."""
    for emit in emits:
        result.out.setdefault(emit.port, []).append((time_s, emit.frame))
        out = router.counters.port(emit.port)
        out.tx += 1
        out.injected += 1


def _native_batch(router: Any, frames: Sequence[TimedFrame], result: RouterResult) -> int:
    """Run `frames` through the data plane and take the verdicts in order; returns how many
    were taken (the timers of the first already fired)."""
    from npkit.runtime.control_plane import exception_name

    verdicts = router.native.run([f.data for f in frames], [f.port for f in frames])
    counters, routes = router.counters, router.control.routes
    for taken, (frame, verdict) in enumerate(zip(frames, verdicts, strict=True)):
        if taken:
            before = routes.sequence
            _send(router, result, frame.time_s, _tick(router, frame.time_s))
            if routes.sequence != before:
                return taken            # this frame's verdict predates the change
        port = counters.port(frame.port)
        port.rx += 1
        if verdict.kind == "forward":
            result.out.setdefault(verdict.port, []).append((frame.time_s, verdict.data))
            counters.port(verdict.port).tx += 1
        elif verdict.kind == "drop":
            port.drops[verdict.reason] += 1
        elif verdict.kind == "exception":
            port.exceptions[exception_name(verdict.code)] += 1
            _send(router, result, frame.time_s,
                  router.control.exceptions.handle(verdict.code, frame.data, frame.port,
                                                   verdict.next_hop,
                                                   round(frame.time_s * 1e9)))
            return taken + 1
        else:
            port.drops[f"verdict_{verdict.kind}"] += 1
    return len(frames)


# -------------------------------------------------------------------------------- chip
def build_chip_router(config: RouterConfig, config_path: Path) -> Any:
    """router.mbl compiled for the MEs, linked for the IXP2800 with the config's ports,
    configured (the control plane's refusals name the config file)."""
    from npkit.runtime.compiled_router import CompiledRouter, link_router
    from npkit.runtime.router_run import configure

    kinds = (CHIP_PORT_KIND,) * chip_ports(config)
    linked = link_router(ROUTER_MBL, port_kinds=kinds, buf_bytes=chip_buffer_bytes(config))
    # ARP / ND on the chip path as natively (NativeRouter resolves by default)
    router = CompiledRouter(linked=linked, resolve=True)
    configure(router, config, config_path)
    return router


def chip_buffer_bytes(config: RouterConfig) -> int:
    """The chip's buffer size for a config: the smallest that holds a frame of its largest
    MTU (2 KB up to MTU 1906, 16 KB for jumbo frames; link/media.py)."""
    from npkit.link.media import buffer_bytes_for_mtu

    mtu = max((p.mtu for p in config.ports), default=0)
    try:
        return buffer_bytes_for_mtu(mtu)
    except ValueError as exc:
        raise RouterTargetError(f"MTU {mtu}: {exc}; the chip target takes MTUs up to "
                                "16,242") from None


def chip_sources(frames: Sequence[TimedFrame]) -> dict[int, list[Any]]:
    """Per port the frames as RxFrames at their capture times."""
    from npkit.sim import RxFrame

    sources: dict[int, list[Any]] = {}
    for frame in frames:
        sources.setdefault(frame.port, []).append(RxFrame(frame.data, time_s=frame.time_s))
    return sources


def run_chip(router: Any, frames: Sequence[TimedFrame], changes: Sequence[Any] = (),
             cycles: int | None = None, ports: Sequence[int] = ()) -> RouterResult:
    """Run a built chip router (build_chip_router) on `frames` at their capture times with
    the timed `changes`, until the traffic has left and every change was applied (or for
    `cycles`); the frames of `ports` (default: every port) are kept in the result."""
    from npkit.runtime import router_run
    from npkit.sim import ListSink, ListSource

    chip = router.chip
    for port, items in chip_sources(frames).items():
        chip.attach_source(port, ListSource(items))
    sinks = {port: ListSink() for port in (ports or range(len(chip.config.ports)))}
    for port, sink in sinks.items():
        chip.attach_sink(port, sink)
    clock = chip.config.clock_hz
    for change in changes:
        router.at(int(change.time_us * 1e-6 * clock), router_run.change_function(change),
                  label=f"line {change.line}")
    try:
        if cycles is not None:
            router.run(cycles)
        else:
            last_change = int(changes[-1].time_us * 1e-6 * clock) if changes else 0
            router_run.run_until_drained(router, len(frames), last_change, len(changes))
    finally:
        chip.close_sinks()
    result = RouterResult()
    for port, sink in sinks.items():
        result.out[port] = [(tx.time_s, tx.data) for tx in sink.frames]
    result.counters = router.counters()
    result.counters["changes_applied"] = len(router.records)
    return result


def buffer_leaks(router: Any) -> list[Any]:
    """The chip's freelists that do not hold their buffers after a run (LeakReports).
    Freelists sharing a Q-array queue are counted together: on the 4-port platform the
    XScale's buffers are on the same queue as receive port 3's (sram3 queue 1)."""
    from npkit.runtime.loader import LeakReport

    initial: dict[tuple[int, int], int] = {}
    for spec in router.loaded.freelists:
        key = (spec.channel, spec.queue)
        initial[key] = initial.get(key, 0) + spec.count
    reports = [LeakReport(channel, queue, count,
                          int(router.chip.queue_state(channel, queue)["count"]))
               for (channel, queue), count in initial.items()]
    return [r for r in reports if not r.ok]


def write_outputs(result: RouterResult, files: dict[int, Path]) -> None:
    """Each `--out` port's frames to its pcap (a port that sent nothing: an empty pcap)."""
    for port, path in files.items():
        writer = PcapWriter(path)
        try:
            for time_s, data in result.out.get(port, []):
                writer.write(data, time_s)
        finally:
            writer.close()
