"""The line-rate verdict (issue 18 item 5; docs/verdict.md): for the compiled router on one
chip of the NPF system (each chip carries one OC-192 POS line), per resource the packets
per second it can carry at one IP size, the bound (the smallest), the predicted throughput
as % of line rate and the first bottleneck.

* **ME stages** (static, from the linked images): one thread's cost of one packet on its
  path (``compiler.me.path_walk``: C cycles on the ALU, W cycles asleep on its own memory
  commands at the chip config's unloaded latencies, + the MSF's autopush latency per
  mpacket), and the stage's MEs x threads.  Threads hide latency only as far as the ALU
  lets them: the rate of one ME is the exact mean-value analysis of a closed network of T
  threads cycling through the ME's ALU (one server, demand C) and their memory waits (a
  delay, W) -- Reiser & Lavenberg, "Mean-value analysis of closed multichain queuing
  networks", J. ACM 27(2), 1980; Lazowska et al., *Quantitative System Performance*, 1984,
  ch. 6.  Its limits are the report's two bounds: clock / C (ALU) and T x clock / (C + W)
  (latency).
* **Memory channels** (measured at light load): the channel a command goes to is an address
  computed at run time, so the occupancy per packet comes from a profile trial of the same
  case at ``PROFILE_LOAD`` % of line rate: the chip counts each channel's occupancy (bytes /
  the config's bytes per cycle, at least the minimum access), and at line rate a channel is
  busy its profile busy fraction x 100 / ``PROFILE_LOAD`` (the utilization law, U = X D).
* **The line**: OC-192 POS at the IP size's frame (IP + 4 B, 5 B overhead a frame).

The predicted throughput is min(100, 100 x bound / line rate); the first bottleneck is the
resource with the highest utilization at line rate (demand / capacity).
"""

from __future__ import annotations

import io
import ipaddress
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from npkit.bench.lab.errors import LabConfigError
from npkit.bench.tester.media import port_model
from npkit.compiler.me.path_walk import PathCost, Waypoint, walk
from npkit.compiler.me.report import analyze
from npkit.compiler.uc import Image
from npkit.sim.config import ChipConfig
from npkit.sim.trace import Span

PROFILE_LOAD = 10.0          # % of line rate of the profile trial (memory channels)
POS_FRAME_BYTES = 4          # PPP address, control, protocol (docs/media.md)
WINDOW_BYTES = 56            # the pool's header window (docs/datapath.md)
W = Waypoint
POOL_PATHS = ("pool", "pool-mbl")   # every ME runs pool.uc (docs/datapath.md)


@dataclass(frozen=True)
class Resource:
    """One resource of one chip: what it can carry and how busy line rate makes it."""

    name: str                 # "rx ME", "pool MEs", "sram1", "dram0", ...
    kind: str                 # "me" or "memory"
    capacity_pps: float       # packets/s it can carry
    utilization: float        # at line rate: line pps / capacity
    detail: str               # the figures it comes from


@dataclass(frozen=True)
class Verdict:
    data_path: str
    ip_bytes: int
    line_pps: float
    resources: tuple[Resource, ...]
    family: int = 4

    @property
    def bound(self) -> Resource:
        return min(self.resources, key=lambda r: r.capacity_pps)

    @property
    def predicted_percent(self) -> float:
        return min(100.0, 100.0 * self.bound.capacity_pps / self.line_pps)

    @property
    def first_bottleneck(self) -> Resource:
        return max(self.resources, key=lambda r: r.utilization)


# --------------------------------------------------------------------- ME stages
def mva_rate(threads: int, alu_cycles: float, wait_cycles: float) -> float:
    """Packets per cycle of one ME: exact MVA, ``threads`` threads each needing
    ``alu_cycles`` on the ALU and ``wait_cycles`` of delay per packet."""
    queue, rate = 0.0, 0.0
    for n in range(1, threads + 1):
        response = alu_cycles * (1.0 + queue)
        rate = n / (response + wait_cycles)
        queue = rate * response
    return rate


@dataclass(frozen=True)
class StageCost:
    """Per packet (a frame, all its mpackets) on one thread of a stage."""

    name: str
    mes: int
    threads: int
    cycles: float
    wait: float
    visits: int               # thread passes per frame (mpackets for a receive stage)
    how: str                  # where the figures come from

    def capacity_pps(self, clock_hz: float) -> float:
        per_visit = mva_rate(self.threads, self.cycles / self.visits, self.wait / self.visits)
        return self.mes * per_visit * clock_hz / self.visits


def _elements(frame: int, element: int) -> int:
    return max(1, math.ceil(frame / element))


def _rx_eth_walks(image: Image, frame: int, element: int) -> list[PathCost]:
    """rx_eth.uc's path per mpacket of a frame of ``frame`` bytes (microblocks/uc)."""
    def entry(nbytes: int) -> int:         # the dram[rbuf_rd] table: 16-byte units
        return 2 * (math.ceil(nbytes / 16) - 1)
    count = _elements(frame, element)
    last = frame - (count - 1) * element
    if count == 1:
        return [walk(image, [W("rx_loop"), W("eop"), W("last_table", entry(frame)),
                             W("wait_eop"), W("rx_loop")])]
    sop = walk(image, [W("rx_loop"), W("last_table", entry(element)), W("wait_mid"),
                       W("rx_loop")])
    middle = walk(image, [W("rx_loop"), W("not_sop"), W("assemble"), W("continue"),
                          W("last_table", entry(element)), W("wait_mid"), W("rx_loop")])
    eop = walk(image, [W("rx_loop"), W("not_sop"), W("assemble"), W("continue"), W("eop"),
                       W("last_table", entry(last)), W("wait_eop"), W("rx_loop")])
    return [sop, *[middle] * (count - 2), eop]


@dataclass(frozen=True)
class IdleRun:
    """One frame on the idle chip: every ME's thread-state spans from ``after`` on, with
    the frame and (``baseline``) without it, over the same cycles."""

    spans: tuple[Span, ...]
    baseline: tuple[Span, ...]
    after: int


@dataclass(frozen=True)
class IdleCost:
    """One frame through an idle chip, from the thread-state trace of the MEs it ran on."""

    cycles: int               # executing
    wait: int                 # asleep between the frame's first and last executing span
    visits: int               # contexts that ran for it


def _by_context(spans: Sequence[Span], mes: set[int], after: int
                ) -> dict[tuple[int, int], list[Span]]:
    out: dict[tuple[int, int], list[Span]] = {}
    for span in sorted(spans, key=lambda s: (s.me, s.ctx, s.start)):
        if span.me in mes and span.end > after:
            out.setdefault((span.me, span.ctx), []).append(span)
    return out


def idle_cost(spans: Sequence[Span], mes: set[int], after: int) -> IdleCost:
    """A stage whose threads sleep while idle: per context of ``mes`` that ran after cycle
    ``after``, its executing cycles and the cycles it slept between its first and last
    executing span."""
    cycles = wait = visits = 0
    for ctx_spans in _by_context(spans, mes, after).values():
        ran = [s for s in ctx_spans if s.state == "executing"]
        if not ran:
            continue
        first, last = min(s.start for s in ran), max(s.end for s in ran)
        visits += 1
        cycles += sum(s.end - max(s.start, after) for s in ran)
        wait += sum(min(s.end, last) - max(s.start, first) for s in ctx_spans
                    if s.state == "sleeping" and s.end > first and s.start < last)
    return IdleCost(cycles, wait, visits)


def polling_cost(spans: Sequence[Span], baseline: Sequence[Span], mes: set[int],
                 after: int) -> IdleCost:
    """A stage whose threads poll while idle (fwd.uc's ring tests): the context whose spans
    first differ from the run without the frame took it; its executing cycles from there
    to the end of its last sleep (and the executing spans right after), and its sleeping
    cycles in that stretch.  Its baseline may not sleep after that point (then the stretch
    would not be the frame's alone): LabConfigError."""
    run, base = _by_context(spans, mes, after), _by_context(baseline, mes, after)
    first: tuple[int, tuple[int, int]] | None = None
    for key, mine in run.items():
        theirs = base.get(key, [])
        for k, span in enumerate(mine):
            if k >= len(theirs) or span != theirs[k]:
                if first is None or span.start < first[0]:
                    first = (span.start, key)
                break
    if first is None:
        raise LabConfigError("the frame changed nothing on the stage's MEs")
    start, key = first
    if any(s.state == "sleeping" and s.end > start for s in base.get(key, [])):
        raise LabConfigError(f"ME {key[0]} context {key[1]} took the frame but sleeps "
                             "without it too: its cost cannot be told apart")
    mine = [s for s in run[key] if s.end > start]
    sleeps = [k for k, s in enumerate(mine) if s.state == "sleeping"]
    if not sleeps:
        raise LabConfigError(f"ME {key[0]} context {key[1]} took the frame without waiting")
    end = sleeps[-1] + 1
    while end < len(mine) and mine[end].state == "executing":
        end += 1
    stretch = mine[:end]
    return IdleCost(sum(s.end - max(s.start, start) for s in stretch if s.state == "executing"),
                    sum(s.end - max(s.start, start) for s in stretch if s.state == "sleeping"),
                    1)


def _stage_of(name: str, spec: Any, threads: int, cost: IdleCost, autopush: float,
              how: str) -> StageCost:
    return StageCost(name, len(spec.mes), threads, cost.cycles,
                     cost.wait + autopush * cost.visits, cost.visits,
                     f"one frame on the idle chip, {cost.visits} thread(s){how}")


def me_stages(data_path: str, manifest: Any, chip: ChipConfig, frame: int,
              idle: IdleRun | None = None) -> list[StageCost]:
    """The ME stages of ``manifest`` (linked for ``data_path``) for frames of ``frame``
    bytes.  The rings' receive ME by the static walk; with ``idle`` (one frame through the
    idle chip) the pool (pool or pool-mbl) and the rings' forwarding and transmit MEs from
    its trace, without
    it the compile report's worst path for the rings' forwarding and transmit MEs."""
    images = {spec.path.name: spec for spec in manifest.images}
    autopush = float(chip.raw["msf"]["autopush_latency"])
    element = int(chip.raw["msf"]["element_bytes"])
    threads = int(chip.raw["me"]["contexts"])
    if data_path in POOL_PATHS:
        # pool-mbl links the same pool.uc around the compiled receive stage's body (the
        # MBL receive and transmit inline): its cost is the trace's, as pool.uc's own
        if idle is None:
            raise LabConfigError("the pool's stage needs one frame through the idle chip")
        spec = images["pool.uc"]
        cost = idle_cost(idle.spans, set(spec.mes), idle.after)
        return [_stage_of("pool MEs", spec, threads, cost, autopush, "")]
    if data_path != "rings":
        raise LabConfigError(f"data path {data_path!r}: use rings, pool or pool-mbl")
    rx = images["rx.uc"]
    walks = _rx_eth_walks(rx.image, frame, element)
    stages = [StageCost("rx ME", len(rx.mes), threads, sum(w.cycles for w in walks),
                        sum(w.memory_wait_cycles for w in walks) + autopush * len(walks),
                        len(walks), f"path walk, {len(walks)} mpacket(s)")]
    for name, image_name, label in (("fwd MEs", "fwd.uc", "loop"), ("tx MEs", "tx.uc",
                                                                      "tx_loop")):
        spec = images[image_name]
        why = ""
        if idle is not None:
            try:
                cost = polling_cost(idle.spans, idle.baseline, set(spec.mes), idle.after)
            except LabConfigError as err:      # tx_eth.uc's threads sleep while they poll
                why = f" ({err})"
            else:
                stages.append(_stage_of(name, spec, threads, cost, 0.0, ", polling"))
                continue
        stats = analyze(spec.image, label, (label,), chip=chip)
        stages.append(StageCost(name, len(spec.mes), threads, stats.path_cycles,
                                stats.memory_wait_cycles, 1,
                                f"compile report: worst path{why}"))
    return stages


# --------------------------------------------------------------------- memory
@dataclass(frozen=True)
class Profile:
    """Per forwarded frame, on one chip at light load: each channel's occupancy (cycles)
    and each ME's instructions."""

    channel_cycles: dict[str, float]      # "sram1" -> busy cycles a frame
    me_instructions: dict[int, float]     # ME index -> instructions a frame
    channel_commands: dict[str, float]    # "sram1" -> commands a frame
    channel_bytes: dict[str, float]       # "sram1" -> bytes a frame
    frames: int
    load_percent: float


def memory_resources(profile: Profile, clock_hz: float, line: float) -> list[Resource]:
    """One resource per channel that the profile's frames used: clock / cycles a frame."""
    out = []
    for unit, cycles in sorted(profile.channel_cycles.items()):
        if cycles <= 0:
            continue
        capacity = clock_hz / cycles
        moved = (f"{profile.channel_commands[unit]:.2f} commands, "
                 f"{profile.channel_bytes[unit]:.1f} B, " if unit in profile.channel_bytes
                 else "")
        out.append(Resource(unit, "memory", capacity, line / capacity,
                            f"{moved}{cycles:.1f} busy cycles a frame of "
                            f"{clock_hz / line:.1f} ({profile.frames} frames at "
                            f"{profile.load_percent:g} % of line rate)"))
    return out


# --------------------------------------------------------------------- the verdict
def line_pps(ip_bytes: int) -> float:
    """One OC-192 POS line's packets/s at ``ip_bytes`` (FACTS.md §2)."""
    return float(port_model("oc192pos").line_rate_fps(ip_bytes + POS_FRAME_BYTES))


def verdict_of(data_path: str, ip_bytes: int, manifest: Any, chip: ChipConfig,
               profile: Profile, idle: IdleRun | None = None, family: int = 4) -> Verdict:
    """The verdict from a linked manifest, the chip config, the memory profile and (the
    pool) one frame through the idle chip."""
    line = line_pps(ip_bytes)
    resources = []
    for stage in me_stages(data_path, manifest, chip, ip_bytes + POS_FRAME_BYTES, idle):
        capacity = stage.capacity_pps(chip.clock_hz)
        resources.append(Resource(
            stage.name, "me", capacity, line / capacity,
            f"{stage.mes} ME x {stage.threads} threads, C {stage.cycles:.0f} + W "
            f"{stage.wait:.0f} cycles a frame, budget {stage.mes * chip.clock_hz / line:.0f} "
            f"ALU cycles a frame ({stage.how})"))
    resources.extend(memory_resources(profile, chip.clock_hz, line))
    return Verdict(data_path, ip_bytes, line, tuple(resources), family)


READY_CYCLES = 28_000        # the pool's threads have registered (20 us: NpfConfig.ready_ps)
IDLE_RUN_CYCLES = 60_000     # long enough for one frame of up to 1,518 B to leave


def pos_frame(ip_bytes: int, dst: int, family: int = 4) -> bytes:
    """A POS frame (PPP address, control, protocol IPv4 or IPv6) of a UDP packet of
    ``ip_bytes``."""
    from scapy.all import IP, UDP, IPv6, raw

    if family == 6:
        header = IPv6(src="2001:db8::1", dst=str(ipaddress.IPv6Address(dst)), hlim=64)
        protocol = b"\x00\x57"
    else:
        header = IP(src="198.18.0.1", dst=str(ipaddress.IPv4Address(dst)), ttl=64)
        protocol = b"\x00\x21"
    packet = header / UDP(sport=1024, dport=1024)
    packet = packet / (b"\0" * (ip_bytes - len(raw(packet))))
    return b"\xff\x03" + protocol + raw(packet)


PROFILE_FRAMES = 400
DUE_DELAYS = tuple(range(0, 160, 20))   # cycles: when the idle chip's frame may come
MIN_IP_BYTES = {4: 28, 6: 48}   # IP + UDP headers
MAX_IP_BYTES = 1518          # the NPF's largest POS size


def _tells_apart(idle: IdleRun, mes: set[int]) -> bool:
    try:
        polling_cost(idle.spans, idle.baseline, mes, idle.after)
    except LabConfigError:
        return False
    return True


def chip_runs(device: Any, chip_name: str, ip_bytes: int, frames: int = PROFILE_FRAMES,
              load_percent: float = PROFILE_LOAD, polling_mes: set[int] | None = None,
              family: int = 4) -> tuple[IdleRun, Profile]:
    """``chip_name`` of the lab's system device, alone, with its tables: one routed IP
    (``family``) frame of ``ip_bytes`` on the idle chip after its threads registered (the
    thread-state trace, and the same cycles' trace without the frame), then ``frames`` more at
    ``load_percent`` of line rate to the exercised routes (the channels' occupancy and the
    MEs' instructions per frame, from the counters).  Which polling thread takes the frame
    depends on when it comes: with ``polling_mes``, the frame comes ``DUE_DELAYS`` cycles
    late until ``polling_cost`` can tell that stage's thread apart (else the last try)."""
    from npkit.runtime.loader import build_from_manifest

    out = next(i for i, p in enumerate(device.spec.ports)
               if p.tx is not None and p.tx.chip == chip_name)
    rx = next(p.rx.port for p in device.spec.ports
              if p.rx is not None and p.rx.chip == chip_name)
    rng = random.Random(1)
    dests = device.destinations(family, out, 100, 1)
    quiet = build_from_manifest(device.chip_loadables[chip_name]).chip
    quiet.run(cycles=READY_CYCLES)
    quiet.enable_trace(True)
    quiet.run(cycles=IDLE_RUN_CYCLES - READY_CYCLES)
    frame = pos_frame(ip_bytes, dests.address(0, rng), family)
    for delay in DUE_DELAYS:
        chip = build_from_manifest(device.chip_loadables[chip_name]).chip
        chip.run(cycles=READY_CYCLES)
        chip.enable_trace(True)
        chip.offer_frames(rx, [frame], [READY_CYCLES + delay])
        chip.run(cycles=IDLE_RUN_CYCLES - READY_CYCLES)
        if sum(chip.frames_out.values()) != 1:
            raise LabConfigError(f"the idle chip did not forward the {ip_bytes}-byte frame")
        idle = IdleRun(tuple(chip.spans), tuple(quiet.spans), READY_CYCLES)
        chip.enable_trace(False)
        if not polling_mes or _tells_apart(idle, polling_mes):
            break
    before = chip.counters()
    gap = chip.config.clock_hz / (line_pps(ip_bytes) * load_percent / 100.0)
    start = chip.now
    dues = [start + round(k * gap) for k in range(frames)]
    chip.offer_frames(rx, [pos_frame(ip_bytes, dests.draw(k, rng)[1], family)
                           for k in range(frames)], dues)
    chip.run(cycles=dues[-1] - start + IDLE_RUN_CYCLES)
    after = chip.counters()
    done = sum(after["run"]["frames_out"].values()) - sum(before["run"]["frames_out"].values())
    if done != frames:
        raise LabConfigError(f"the profile forwarded {done} of {frames} frames")
    channels, commands, moved = {}, {}, {}
    for kind in ("sram", "dram"):
        for n, (a, b) in enumerate(zip(before["channels"][kind], after["channels"][kind],
                                       strict=True)):
            channels[f"{kind}{n}"] = (b["busy_cycles"] - a["busy_cycles"]) / frames
            commands[f"{kind}{n}"] = (b["commands"] - a["commands"]) / frames
            moved[f"{kind}{n}"] = (b["bytes"] - a["bytes"]) / frames
    channels["scratch"] = (after["channels"]["scratch"]["busy_cycles"]
                           - before["channels"]["scratch"]["busy_cycles"]) / frames
    instructions = {n: (b["instructions"] - a["instructions"]) / frames
                    for n, (a, b) in enumerate(zip(before["mes"], after["mes"], strict=True))}
    return idle, Profile(channels, instructions, commands, moved, frames, load_percent)


def run_verdict(data_path: str, sizes: tuple[int, ...], load_percent: float = PROFILE_LOAD,
                fwd_mes: int | None = None, family: int = 4) -> list[Verdict]:
    """The NPF preset's system (``dual-ixp2800-npf``, its tables): the verdict of its first
    chip per IP size of ``family`` (4 or 6); ``fwd_mes``: forwarding MEs of the rings
    mapping (default 8)."""
    from npkit.bench.lab import npf

    if family not in MIN_IP_BYTES:
        raise LabConfigError(f"IP family {family}: use 4 or 6")
    bad = [n for n in sizes if not MIN_IP_BYTES[family] <= n <= MAX_IP_BYTES]
    if bad:
        raise LabConfigError(f"IPv{family} sizes {bad}: the verdict takes "
                             f"{MIN_IP_BYTES[family]}..{MAX_IP_BYTES} bytes (a UDP packet on "
                             "the POS line)")
    if data_path not in (*POOL_PATHS, "rings"):
        raise LabConfigError(f"data path {data_path!r}: the verdict knows pool, pool-mbl "
                             "and rings")
    options = {} if fwd_mes is None else {"chip_fwd_mes": fwd_mes}
    device = npf.chip_device(npf.preset("ixp2800-npf", quick=True, data_path=data_path),
                             **options)
    chip_name = device.spec.chips[0].name
    manifest = device.chip_linked(chip_name)
    chip = ChipConfig.load(manifest.chip)
    polling = {m for spec in manifest.images if spec.path.name == "fwd.uc" for m in spec.mes}
    out = []
    for size in sizes:
        idle, profile = chip_runs(device, chip_name, size, load_percent=load_percent,
                                  polling_mes=polling, family=family)
        out.append(verdict_of(data_path, size, manifest, chip, profile, idle, family))
    return out


def to_json(verdicts: list[Verdict]) -> str:
    """The verdicts as JSON: per size the prediction, the bound and every resource."""
    return json.dumps([{
        "data_path": v.data_path, "family": v.family, "ip_bytes": v.ip_bytes,
        "line_pps": v.line_pps,
        "predicted_percent": v.predicted_percent, "bound": v.bound.name,
        "first_bottleneck": v.first_bottleneck.name,
        "resources": [{"name": r.name, "kind": r.kind, "capacity_pps": r.capacity_pps,
                       "utilization": r.utilization, "detail": r.detail}
                      for r in v.resources]} for v in verdicts], indent=2)


def render(verdicts: list[Verdict], width: int = 120) -> str:
    """A table per verdict (resources, capacity, utilization at line rate) and a summary."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, highlight=False)
    for v in verdicts:
        table = Table(title=f"{v.data_path}, IPv{v.family} {v.ip_bytes} B: line "
                            f"{v.line_pps / 1e6:.3f} Mpps a chip")
        for column in ("resource", "capacity Mpps", "% of line", "use at line rate", "from"):
            table.add_column(column)
        for r in sorted(v.resources, key=lambda r: -r.utilization):
            table.add_row(r.name, f"{r.capacity_pps / 1e6:.2f}",
                          f"{100 * r.capacity_pps / v.line_pps:.1f}",
                          f"{100 * r.utilization:.1f} %", r.detail)
        console.print(table)
        console.print(f"verdict: {v.predicted_percent:.1f} % of line rate; first bottleneck "
                      f"{v.first_bottleneck.name}")
    return buffer.getvalue()


__all__ = ["PROFILE_LOAD", "IdleCost", "IdleRun", "Profile", "Resource", "StageCost",
           "Verdict", "chip_runs", "idle_cost", "line_pps", "me_stages", "memory_resources",
           "mva_rate", "polling_cost", "pos_frame", "render", "run_verdict", "to_json",
           "verdict_of"]
