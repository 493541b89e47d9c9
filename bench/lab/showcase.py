"""The showcase run behind ``npkit run`` with no arguments: the product in one trial.

The MBL dual-stack router over PPP (examples/pos_router) is compiled by the ME back end,
linked for the simulated IXP2800 with two OC-192 POS ports, loaded with generated IPv4 and
IPv6 route tables (the real table's prefix-length distribution, ``RouteConfig``), and
offered a full-duplex Internet-mix load from the lab's tester on both ports.  One
``CompiledChipDevice`` trial gives what the lab measures everywhere else: forwarded rate,
loss, latency and the chip's counters; from those this module picks the busiest units and
writes the files a user looks at next (pcaps of what went in and out, the thread timeline,
the pipeline mapped onto the MEs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.base.packetfile import PcapWriter
from npkit.bench.lab.device import Trial, TrialResult
from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice, RouteConfig, example_path
from npkit.bench.lab.npf import POS_MTU, RatePoint, rate_point
from npkit.bench.tester import Sizes, Stream

PORT_KINDS = ("oc192pos", "oc192pos")
ENTRY = "pos_router"
LINKTYPE_PPP_HDLC = 50  # pcap link type of PPP in HDLC-like framing (RFC 1662)
# a simple Internet mix (IP bytes): 7 : 4 : 1 of 40, 576 and 1500
IMIX = Sizes((40, 576, 1500), weights=(7, 4, 1), clamp=True)  # IPv6: 60 B at least
BUSY_UNITS = 5


@dataclass(frozen=True)
class ShowcaseConfig:
    frames_per_port: int = 3000
    load_percent: float = 90.0
    v6_share: float = 0.3
    routes: RouteConfig = field(default_factory=RouteConfig)
    seed: int = 1
    trace_us: float = 20.0  # the thread timeline of the first µs (a whole run is ~150 MB)


@dataclass(frozen=True)
class ShowcaseFiles:
    inputs: dict[int, Path]
    outputs: dict[int, Path]
    trace: Path | None
    graph: Path


@dataclass(frozen=True)
class ShowcaseResult:
    config: ShowcaseConfig
    device: dict[str, Any]
    rate: RatePoint
    line_gbps: float                 # both ports' line rate (OC-192 POS: 9.58464 Gb/s each)
    latency_ps: tuple[int | None, float | None, int | None]  # min, avg, max
    busiest: list[tuple[str, float]]  # (unit, busy fraction over the offered traffic)
    drops: dict[str, float]          # counters that explain a loss: drops, exceptions, rx
    files: ShowcaseFiles


class _TracedDevice(CompiledChipDevice):
    """The compiled device that records the thread timeline of its trial's chip for the
    first ``trace_us`` of simulated time (the trial steps the chip; tracing stops at the
    first step past that)."""

    def __init__(self, *args: Any, trace_us: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._trace_us = trace_us
        self.chip: Any = None

    def _load(self) -> Any:
        loaded = super()._load()
        chip = self.chip = loaded.chip
        if self._trace_us <= 0:
            return loaded
        chip.enable_trace()
        stop_at = round(self._trace_us * 1e-6 * chip.config.clock_hz)
        original = loaded.advance

        def traced_step(cycles: int) -> None:
            if original is None:
                chip.run(cycles=cycles)
            else:
                original(cycles)
            if chip.now >= stop_at:
                chip.enable_trace(False)

        loaded.advance = traced_step
        return loaded


def showcase_device(config: ShowcaseConfig) -> _TracedDevice:
    options = ChipOptions(port_kinds=PORT_KINDS, routes=config.routes, next_hop_mtu=POS_MTU)
    return _TracedDevice(options, source=example_path("pos_router", "pos_router.mbl"),
                         entry=ENTRY, trace_us=config.trace_us)


def showcase_trial(device: CompiledChipDevice, config: ShowcaseConfig) -> Trial:
    """Full duplex: port 0 sends to destinations routed out of port 1 and back."""
    streams = []
    for port in (0, 1):
        out = port ^ 1
        destinations = {f: device.destinations(f, out, 64, seed=config.seed + f)
                        for f in (4, 6)}
        streams.append(Stream(id=port, port=port, destinations=destinations, framing="pos",
                              family="mixed", v6_share=config.v6_share, sizes=IMIX,
                              load_percent=config.load_percent, count=config.frames_per_port,
                              seed=config.seed + port))
    return Trial(tuple(streams), label="showcase")


def busiest_units(counters: dict[str, float], count: int = BUSY_UNITS) -> list[tuple[str, float]]:
    """The units with the highest busy fraction: MEs, SRAM/DRAM channels, scratch."""
    busy = [(key.removesuffix(".busy_fraction"), value) for key, value in counters.items()
            if key.endswith(".busy_fraction") and not key.startswith("fwd.")]
    return sorted(busy, key=lambda kv: -kv[1])[:count]


def _write_pcaps(result: TrialResult, out_dir: Path) -> tuple[dict[int, Path], dict[int, Path]]:
    """What the tester sent (first-bit times) and what the chip transmitted (last-bit times),
    per port, as PPP-in-HDLC pcaps."""
    inputs, outputs = {}, {}
    for port, records in sorted(result.traffic.ports.items()):
        inputs[port] = out_dir / f"in-port{port}.pcap"
        with PcapWriter(inputs[port], LINKTYPE_PPP_HDLC) as writer:
            for r in records:
                writer.write_ns(r.data, r.time_ps // 1000)
    for port in sorted(result.traffic.ports):
        outputs[port] = out_dir / f"out-port{port}.pcap"
        with PcapWriter(outputs[port], LINKTYPE_PPP_HDLC) as writer:
            for r in result.received:
                if r.port == port:
                    writer.write_ns(r.data, r.time_ps // 1000)
    return inputs, outputs


def _write_graph(device: CompiledChipDevice, out_dir: Path) -> Path:
    from npkit.compiler.me.graph import to_dot
    from npkit.link import mapping

    path = out_dir / "pipeline.dot"
    path.write_text(to_dot(mapping(device.linked)), encoding="utf-8")
    return path


def run_showcase(out_dir: Path, config: ShowcaseConfig = ShowcaseConfig()) -> ShowcaseResult:
    """Run the trial and write the files into ``out_dir`` (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    device = showcase_device(config)
    trial = showcase_trial(device, config)
    result = device.run(trial)
    records = result.traffic.records()
    start = min(r.time_ps for r in records)
    end = max(r.time_ps for r in records)
    rate = rate_point(config.load_percent, result, max(1, end - start), "pos")
    line = sum(float(m.rate_bps) for m in device.ports.values()) / 1e9
    inputs, outputs = _write_pcaps(result, out_dir)
    trace = None
    if config.trace_us > 0 and device.chip is not None:
        trace = out_dir / "trace.json"
        device.chip.write_trace(trace)
    graph = _write_graph(device, out_dir)
    lat = result.report.total.latency
    drops = {k: v for k, v in result.counters.items()
             if k.startswith(("drop.", "exception.", "rx.")) and v}
    return ShowcaseResult(config, device.describe(), rate, line,
                          (lat.min_ps, lat.avg_ps, lat.max_ps),
                          busiest_units(result.counters), drops,
                          ShowcaseFiles(inputs, outputs, trace, graph))
