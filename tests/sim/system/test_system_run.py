"""Running a system (npkit.sim.system.System): two IXP2800s running the l2wire microcode
(examples/l2wire: receive port 0 -> transmit port 1), joined by a CSIX link.

The references are independent of the system runner: frames are built with scapy, the line
times are computed here from the port rates, and each chip's transit is measured by running
that chip alone (the same microcode, fed the same arrivals): the system's end-to-end latency
must be exactly framer in + ingress chip + link latency + egress chip + framer out.
"""

from __future__ import annotations

import dataclasses
import math
import random
from fractions import Fraction
from importlib import resources
from pathlib import Path

from npkit.link.manifest import parse_manifest
from npkit.sim.chip import Chip
from npkit.sim.loader import build_from_manifest, leak_check
from npkit.sim.packets import ListSink, ListSource, RxFrame
from npkit.sim.system import System, SystemSpec

CLOCK_HZ = 1_400_000_000  # sim/chips/ixp2800.toml
POS_BPS = 9_584_640_000  # OC-192 POS payload (FACTS.md 2)
POS_OVERHEAD = 5  # HDLC flag + FCS-32 (the frames carry the PPP header)
CSIX_BPS = 16 * 400_000_000 * 2  # ixp2800-ingress-egress.toml: 16 bits DDR at 400 MHz
CSIX_OVERHEAD = 8
LINK_LATENCY = 140  # 100 ns at 1.4 GHz
FRAMER = 700  # 500 ns at 1.4 GHz, each way
L2WIRE_SCRATCH_DROPS = 0x2000 // 4  # l2wire.h CNT_BASE: no buffer, too long, tx race (x2)


def l2wire() -> Path:
    return Path(str(resources.files("npkit.examples") / "l2wire" / "l2wire.toml"))


def scapy_frames(count: int, seed: int, smallest: int = 64, largest: int = 1500) -> list[bytes]:
    """PPP-framed IPv4/UDP packets of random sizes (scapy builds the IP and UDP headers)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.ppp import HDLC, PPP
    from scapy.packet import Raw

    rng = random.Random(seed)
    frames = []
    for i in range(count):
        head = HDLC() / PPP(proto=0x0021) / IP(src="198.18.0.1", dst="198.19.0.1",
                                                  id=i) / UDP(sport=1024, dport=7)
        size = rng.randint(smallest, largest)
        frames.append(bytes(head / Raw(rng.randbytes(max(0, size - len(head))))))
    return frames


def cycles(size: int, overhead: int, rate_bps: int) -> int:
    return math.ceil(Fraction((size + overhead) * 8 * CLOCK_HZ, rate_bps))


def paced(frames: list[bytes], load: float) -> list[float]:
    times, t = [], 0.0
    for frame in frames:
        times.append(t)
        t += (len(frame) + POS_OVERHEAD) * 8 / POS_BPS / load
    return times


def accounted(system: System) -> tuple[int, int, int]:
    """(frames in, frames out, frames dropped and counted anywhere)."""
    counters = system.counters()
    fed = sum(p["frames_in"] for p in counters["ports"].values())
    out = sum(p["frames_out"] for p in counters["ports"].values())
    dropped = sum(link["dropped_queue_full"] for link in counters["links"].values())
    for name, chip in system.chips.items():
        for port in counters["chips"][name]["ports"]:
            dropped += sum(int(v) for k, v in port.items() if k.startswith("rx_dropped"))
        words = chip.scratch()[L2WIRE_SCRATCH_DROPS:L2WIRE_SCRATCH_DROPS + 4]
        dropped += int(words[0]) + int(words[1]) + int(words[2]) + int(words[3])
    return fed, out, dropped


def alone(spec: SystemSpec, chip: str, frames: list[bytes], dues: list[int],
          out_port: int, run_cycles: int) -> list[tuple[int, int]]:
    """Run one chip of the system by itself, fed ``frames`` due at ``dues`` on port 0:
    (first bit, last bit) of what it transmits on ``out_port``."""
    manifest = dataclasses.replace(parse_manifest(l2wire()),
                                   ports=spec.chip_config(chip).ports)
    sim: Chip = build_from_manifest(manifest).chip
    sim.attach_source(0, ListSource([RxFrame(f, (d + 0.5) / CLOCK_HZ)
                                     for f, d in zip(frames, dues, strict=True)]))
    sink = ListSink()
    sim.attach_sink(out_port, sink)
    sim.run(cycles=run_cycles)
    return [(f.first_bit_cycle, f.last_bit_cycle) for f in sink.frames]


def test_frames_cross_the_link_in_order_with_the_latency_of_their_parts() -> None:
    spec = SystemSpec.load("ixp2800-ingress-egress")
    frames = scapy_frames(200, seed=3)
    times = paced(frames, load=0.5)
    system = System.from_manifests(spec, {"ingress": l2wire(), "egress": l2wire()},
                                   record=True)
    # lookahead: the latency less the fast receive line's time for a 4 KB RBUF partition
    assert system.step == LINK_LATENCY - math.ceil(Fraction(4096 * 8 * CLOCK_HZ, 10**13))
    system.attach_source("pos0", ListSource([RxFrame(f, t) for f, t in
                                             zip(frames, times, strict=True)]))
    sink = ListSink()
    system.attach_sink("pos0", sink)
    system.run_until_out(len(frames), 3_000_000)
    out = sink.frames
    assert [f.data for f in out] == frames, "bytes and order kept end to end"
    assert accounted(system) == (len(frames), len(frames), 0)
    records = system.link_records("csix")
    assert [r.size for r in records] == [len(f) for f in frames]

    # the line: each frame's last bit at the ingress chip, from the POS rate + framer delay
    line_in = [math.floor(t * CLOCK_HZ) + FRAMER + cycles(len(f), POS_OVERHEAD, POS_BPS)
               for f, t in zip(frames, times, strict=True)]
    dues = [math.floor(t * CLOCK_HZ) + FRAMER for t in times]
    run = system.now
    ingress = alone(spec, "ingress", frames, dues, 1, run)
    assert ingress == [(r.first_bit_cycle, r.sent) for r in records], \
        "the ingress chip in the system behaves exactly as alone"
    arrivals = [r.arrived for r in records]
    egress_dues = [a - math.ceil(Fraction(len(f) * 8 * CLOCK_HZ, 10**13))
                   for a, f in zip(arrivals, frames, strict=True)]
    egress = alone(spec, "egress", frames, egress_dues, 1, run)
    assert [last + FRAMER for _, last in egress] == [f.last_bit_cycle for f in out]

    for i, (frame, record) in enumerate(zip(frames, records, strict=True)):
        # the link's serialisation (the core keeps the line in fractions of a cycle and
        # reports whole cycles: the two ends of a frame round separately)
        serial = Fraction((len(frame) + CSIX_OVERHEAD) * 8 * CLOCK_HZ, CSIX_BPS)
        assert abs(record.sent - record.first_bit_cycle - serial) < 1, i
        assert record.arrived - record.sent == LINK_LATENCY, i  # no flow control at 50 %
        chip_a = record.sent - line_in[i]
        chip_b = egress[i][1] - record.arrived
        assert 0 < chip_a < 20_000 and 0 < chip_b < 20_000, (i, chip_a, chip_b)
        total = out[i].last_bit_cycle - (line_in[i] - FRAMER)
        assert total == FRAMER + chip_a + LINK_LATENCY + chip_b + FRAMER, i
        pos = Fraction((len(frame) + POS_OVERHEAD) * 8 * CLOCK_HZ, POS_BPS)
        assert abs(out[i].last_bit_cycle - out[i].first_bit_cycle - pos) < 1, i
    counters = system.counters()["links"]["csix"]
    assert counters["frames_held"] == 0 and counters["dropped_queue_full"] == 0
    system.run(20_000)  # the last buffers go back to their freelists
    for loaded in system.runs.values():
        assert all(report.ok for report in leak_check(loaded))


def slowed_egress(tmp_path: Path) -> SystemSpec:
    """The ingress/egress system with the egress chip's DRAM 26x slower: its receive DMA
    cannot keep up with the link, so its RBUF fills and link flow control must engage."""
    text = (resources.files("npkit.sim") / "systems" / "ixp2800-ingress-egress.toml") \
        .read_text(encoding="utf-8")
    marker = 'name = "egress"\n'
    assert marker in text
    text = text.replace(marker, marker + "overrides = { dram = { bytes_per_cycle = 0.05 } }\n")
    path = tmp_path / "slow.toml"
    path.write_text(text)
    return SystemSpec.load(path)


def test_flow_control_engages_and_every_frame_is_accounted(tmp_path: Path) -> None:
    spec = slowed_egress(tmp_path)
    frames = scapy_frames(150, seed=4, largest=200)
    system = System.from_manifests(spec, {"ingress": l2wire(), "egress": l2wire()},
                                   record=True)
    system.attach_source("pos0", ListSource(frames))  # back to back at line rate
    sink = ListSink()
    system.attach_sink("pos0", sink)
    system.run(500_000)
    link = system.counters()["links"]["csix"]
    assert link["frames_held"] > 0 and link["xoff_steps"] > 0, "flow control engaged"
    assert link["dropped_queue_full"] > 0, "the bounded queue overflowed, and says so"
    assert 0 < link["queue_high_water_bytes"] <= 4096, "bounded by queue_bytes"
    egress_rx = system.counters()["chips"]["egress"]["ports"][0]
    assert egress_rx["rx_dropped_rbuf_full"] == 0, "flow control kept the RBUF from overflowing"
    assert system.in_links() == 0
    fed, out, dropped = accounted(system)
    assert fed == len(frames)
    assert out + dropped == fed, "every frame is forwarded or counted where it was dropped"
    assert link["frames_in"] == link["frames_delivered"] + link["dropped_queue_full"]
    data = iter(frames)
    assert all(any(f.data == g for g in data) for f in sink.frames), "order kept"
    held = [r for r in system.link_records("csix") if r.arrived - r.sent > LINK_LATENCY]
    assert held, "held frames arrive later than the link latency"
    arrivals = [r.arrived for r in system.link_records("csix")]
    assert arrivals == sorted(arrivals)


def test_published_system_forwards_each_port_through_one_chip() -> None:
    spec = SystemSpec.load("dual-ixp2800-npf")
    system = System.from_manifests(spec, {"east": l2wire(), "west": l2wire()})
    frames = {p: scapy_frames(100, seed=5 + p) for p in (0, 1)}
    sinks = {p: ListSink() for p in (0, 1)}
    for p in (0, 1):
        system.attach_source(f"pos{p}", ListSource(frames[p]))
        system.attach_sink(f"pos{p}", sinks[p])
    system.run_until_out(200, 2_000_000)
    assert [f.data for f in sinks[1].frames] == frames[0], "pos0 -> east -> pos1"
    assert [f.data for f in sinks[0].frames] == frames[1], "pos1 -> west -> pos0"
    assert accounted(system) == (200, 200, 0)
    first = sinks[1].frames[0]
    earliest = 2 * FRAMER + cycles(len(frames[0][0]), POS_OVERHEAD, POS_BPS)
    assert first.last_bit_cycle > earliest


def test_single_chip_system_is_the_chip_plus_its_framers() -> None:
    spec = SystemSpec.load("single-ixp2800")
    frames = scapy_frames(50, seed=7)
    system = System.from_manifests(spec, {"npu": l2wire()})
    system.attach_source("pos0", ListSource(frames))
    sink = ListSink()
    system.attach_sink("pos1", sink)
    system.run_until_out(50, 1_000_000)
    manifest = dataclasses.replace(parse_manifest(l2wire()), ports=spec.chip_config("npu").ports)
    chip = build_from_manifest(manifest).chip
    chip.attach_source(0, ListSource([RxFrame(frames[0], (FRAMER + 0.5) / CLOCK_HZ),
                                      *frames[1:]]))
    alone_sink = ListSink()
    chip.attach_sink(1, alone_sink)
    chip.run(cycles=system.now)
    assert [f.last_bit_cycle + FRAMER for f in alone_sink.frames] == \
        [f.last_bit_cycle for f in sink.frames]
    assert [f.data for f in sink.frames] == frames
