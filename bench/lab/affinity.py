"""Flow affinity: how many received packets land on the queue of the core that owns their
flow, under RSS alone and under Flow Director (issue 15, the comparison's experiment).

**Owner.**  A flow (a TCP connection: remote address and port -> local address and port)
is *owned* by the core whose application thread consumes it: the thread that opened or
accepted the connection and transmits its packets.  The application picks that core
(here: uniformly at random, seeded), with no regard to any hash.  A packet received on
another core's queue must be handed over between cores (a queue, a cache line moving) --
what Flow Director is for.  One queue per core: queue q belongs to core q (``cores``
queues, the RSS indirection table spread over them, ``rss.spread_reta``).

**Modes** (``microblocks/flow_director.mbl`` as the steering program in every mode, so the
packets are the same and only the table differs):

* ``rss``: no filter; every packet takes the RSS path (Toeplitz, Microsoft key, 4-tuple).
* ``fd-ep``: the control plane programs one perfect-match filter per flow (queue = the
  owner's) when the flow opens, in the order flows open, and never changes it.
* ``fd-atr``: filters are learned from transmitted packets (``runtime.flow_atr.AtrLearner``):
  each packet the owner sends programs (or updates in place) the filter of the flow's
  receive direction (its 4-tuple reversed) with the sending core's queue.  Every
  transmitted packet is a learning event here (``sample_every`` 1: the 82599's driver
  samples transmitted packets; its sampling rate is not in FACTS.md).

In both Flow Director modes a filter that does not fit (its bucket's 4 slots are taken:
``FlowDirectorError``; at most 8,192 filters) is not installed and the flow stays on RSS.

**Traffic.**  Phase ``open``: every flow's owner sends one packet (flows in random order),
then ``packets_per_flow`` packets of each flow arrive, shuffled.  Phase ``moved``: a
fraction ``moved_fraction`` of the flows change owner (to another core, e.g. the scheduler
moved the thread); their new owner sends one packet, then every flow's packets arrive again.
ATR follows the move, EP as programmed does not.

**Measured**: per mode and phase, the share of received packets whose queue is their flow's
owner's, the filters installed and refused, the Flow Director's hit/miss counts.  Natively
(the JIT program) always; on the simulated IXP2800 (``chip_share``) for a sample of the
packets, with the chip's tables copied from the native program's, frame for frame compared.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from npkit.base.headers import ipv4_header
from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.runtime.flow_atr import AtrLearner
from npkit.runtime.flow_director import L4, Action, FlowDirector, FlowDirectorError, FlowKey
from npkit.runtime.rss import MICROSOFT_KEY, program_rss, spread_reta

MICROBLOCKS = Path(str(resources.files("npkit.microblocks")))
MODES = ("rss", "fd-ep", "fd-atr")
PHASES = ("open", "moved")
LOCAL_BASE = 0xC0000200  # 192.0.2.0/24 (documentation range): the local addresses
REMOTE_BASE = 0xC6120000  # 198.18.0.0/15: the remote ends
ETH = bytes.fromhex("020000000001" "02000000ee01" "0800")
# flow_director, then a stage that writes meta.queue into the Ethernet source address, so a
# chip run shows each packet's queue in the frame (tests/mbl/test_steering_chip.py's probe)
PROBE_SOURCE = f"""
import "{MICROBLOCKS / 'flow_director.mbl'}";
block show_queue {{
    let eth = packet<ethernet_t>(0) else drop(runt);
    eth.src = meta.queue as bit<48>;
    forward(meta.in_port);
}}
pipeline fd_probe {{
    stage fd = flow_director;
    stage show = show_queue;
    fd -> show;
}}
"""
PROBE = "fd_probe"


@dataclass(frozen=True)
class Flow:
    remote: int
    rport: int
    local: int
    lport: int

    def rx_key(self) -> FlowKey:
        """The filter key of the packets the flow receives."""
        return FlowKey(self.remote, self.local, self.rport, self.lport, L4.TCP)

    def rx_frame(self, seq: int) -> bytes:
        return tcp_frame(self.remote, self.local, self.rport, self.lport, seq)

    def tx_frame(self, seq: int) -> bytes:
        """A packet the owner sends (what ATR learns from)."""
        return tcp_frame(self.local, self.remote, self.lport, self.rport, seq)


def tcp_frame(src: int, dst: int, sport: int, dport: int, seq: int) -> bytes:
    """Ethernet + IPv4 + a 20-byte TCP header (ACK), no payload: 54 bytes."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x10, 65535, 0, 0)
    return ETH + ipv4_header(src, dst, 6, len(tcp), flags_fragment=0x4000) + tcp


@dataclass(frozen=True)
class AffinityConfig:
    flows: int = 10_000
    cores: int = 4
    packets_per_flow: int = 4
    moved_fraction: float = 0.25
    seed: int = 1
    chip_sample: int = 0  # received packets of phase ``open`` also run on the chip (0: none)


@dataclass(frozen=True)
class AffinityPoint:
    """One mode in one phase."""

    flows: int
    cores: int
    mode: str
    phase: str
    packets: int
    on_owner: int
    filters: int  # installed at the end of the phase
    refused: int  # learning / programming attempts that found the bucket full (so far)
    fd_hits: int
    fd_misses: int
    chip_packets: int = 0  # of the sample run on the chip
    chip_on_owner: int = 0
    chip_same_as_native: bool | None = None

    @property
    def share(self) -> float:
        return self.on_owner / self.packets if self.packets else 0.0


@dataclass
class _World:
    """The flows, their owners in each phase, and the packets."""

    flows: list[Flow]
    owners: dict[str, list[int]]
    order: list[int]  # the order flows open (and EP programs them)
    moved: list[int]  # flows whose owner changes in phase ``moved``
    arrivals: dict[str, list[int]]  # per phase: the flow of each received packet, in order
    _frames: dict[str, list[bytes]] = field(default_factory=dict)

    def frames(self, phase: str) -> list[bytes]:
        """The received packets of ``phase`` (built once: every mode gets the same)."""
        if phase not in self._frames:
            self._frames[phase] = [self.flows[f].rx_frame(i)
                                   for i, f in enumerate(self.arrivals[phase])]
        return self._frames[phase]


def make_world(config: AffinityConfig) -> _World:
    rng = random.Random(config.seed)
    seen: set[tuple[int, int, int, int]] = set()
    flows: list[Flow] = []
    while len(flows) < config.flows:
        flow = Flow(REMOTE_BASE | rng.getrandbits(17), rng.randrange(1024, 65536),
                    LOCAL_BASE | rng.randrange(1, 255), rng.choice((80, 443, 8080)))
        key = (flow.remote, flow.rport, flow.local, flow.lport)
        if key not in seen:
            seen.add(key)
            flows.append(flow)
    opened = [rng.randrange(config.cores) for _ in flows]
    order = list(range(len(flows)))
    rng.shuffle(order)
    moved = sorted(rng.sample(range(len(flows)), round(config.moved_fraction * len(flows))))
    later = list(opened)
    for f in moved:
        later[f] = (opened[f] + 1 + rng.randrange(config.cores - 1)) % config.cores \
            if config.cores > 1 else opened[f]
    arrivals = {}
    for phase in PHASES:
        packets = [f for f in range(len(flows)) for _ in range(config.packets_per_flow)]
        rng.shuffle(packets)
        arrivals[phase] = packets
    return _World(flows, {"open": opened, "moved": later}, order, moved, arrivals)


def _steering(cores: int) -> NativeProgram:
    program = compile_source(PROBE_SOURCE, "affinity_probe.mbl")
    steer = NativeProgram(program, PROBE)
    program_rss(steer, MICROSOFT_KEY, reta=spread_reta(cores))
    return steer


def _learn(table: FlowDirector, flow: Flow, core: int) -> bool:
    """Program (or update) the flow's receive filter to ``core``'s queue; False if refused."""
    try:
        table.insert(flow.rx_key(), Action(queue=core))
    except FlowDirectorError:
        return False
    return True


def run_affinity(config: AffinityConfig, world: _World | None = None,
                 chip: Any = None) -> list[AffinityPoint]:
    """Every mode in both phases, natively; ``chip`` (a ``ChipProbe``) also runs the first
    ``config.chip_sample`` received packets of each mode's ``open`` phase on the chip."""
    world = world or make_world(config)
    steer = _steering(config.cores)
    points = []
    for mode in MODES:
        table = FlowDirector(steer)
        learner = AtrLearner(table)
        refused = 0
        for phase in PHASES:
            owners = world.owners[phase]
            if mode == "fd-ep" and phase == "open":
                refused += sum(not _learn(table, world.flows[f], owners[f])
                               for f in world.order)
            if mode == "fd-atr":
                senders = world.order if phase == "open" else world.moved
                for f in senders:
                    learner.transmitted(world.flows[f].tx_frame(0), owners[f])
                refused = learner.refused
            table.reset_counters()
            arrivals = world.arrivals[phase]
            frames = world.frames(phase)
            verdicts = steer.run(frames, 0)
            queues = [v.queue for v in verdicts]
            on_owner = sum(q == owners[f] for q, f in zip(queues, arrivals, strict=True))
            hits, misses = table.hits_and_misses()
            point = AffinityPoint(config.flows, config.cores, mode, phase, len(frames),
                                  on_owner, len(table), refused, hits, misses)
            if chip is not None and phase == "open" and config.chip_sample:
                n = min(config.chip_sample, len(frames))
                got = chip.queues(steer, frames[:n])
                point = _with_chip(point, got, queues[:n], [owners[f] for f in arrivals[:n]])
            points.append(point)
    return points


def _with_chip(point: AffinityPoint, chip_queues: Sequence[int], native: Sequence[int],
               owners: Sequence[int]) -> AffinityPoint:
    on_owner = sum(q == o for q, o in zip(chip_queues, owners, strict=False))
    return replace(point, chip_packets=len(chip_queues), chip_on_owner=on_owner,
                   chip_same_as_native=list(chip_queues) == list(native))


class ChipProbe:
    """The probe pipeline compiled for the MEs and linked once (2 x 10GbE); ``queues``
    runs frames through it on a fresh simulated IXP2800 holding a native program's tables."""

    def __init__(self, load: float = 0.2) -> None:
        from npkit.compiler.me import compile_me
        from npkit.link import link

        self.program = compile_source(PROBE_SOURCE, "affinity_probe.mbl")
        self.linked = link(self.program, compile_me(self.program, PROBE), "ixp2800-2x10gbe")
        self.load = load

    def queues(self, tables: NativeProgram, frames: Sequence[bytes]) -> list[int]:
        """The queue of every frame out of the chip, in order (one input port)."""
        from npkit.runtime.compiled import CompiledRun

        run = CompiledRun(self.linked)
        run.load_memories(tables)
        result = run.run({0: list(frames)}, load=self.load)
        return [int.from_bytes(f[6:12], "big") for f in result.frames(0)]
