"""The published two-chip system on two host threads (System(threads=2)): the chips share
no data, so every transmitted frame (bytes, port, first and last bit) and every counter is
the serial run's; and a frame a chip sends to a port whose transmit side leads nowhere is
counted by name ("unconnected"), never lost silently."""

from __future__ import annotations

import random
from importlib import resources
from pathlib import Path

from npkit.runtime.system import System, SystemSpec
from npkit.sim.packets import ListSink, ListSource, RxFrame

POS_BPS = 9_584_640_000  # OC-192 POS payload (FACTS.md 2)
POS_OVERHEAD = 5  # HDLC flag + FCS-32 (the frames carry the PPP header)


def l2wire() -> Path:
    return Path(str(resources.files("npkit.examples") / "l2wire" / "l2wire.toml"))


def scapy_frames(count: int, seed: int) -> list[bytes]:
    """PPP-framed IPv4/UDP packets of random sizes (scapy builds the headers)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.ppp import HDLC, PPP
    from scapy.packet import Raw

    rng = random.Random(seed)
    frames = []
    for i in range(count):
        head = HDLC() / PPP(proto=0x0021) / IP(src="198.18.0.1", dst="198.19.0.1",
                                                  id=i) / UDP(sport=1024, dport=7)
        size = rng.randint(40, 1500)
        frames.append(bytes(head / Raw(rng.randbytes(max(0, size - len(head))))))
    return frames


def paced(frames: list[bytes], load: float) -> list[float]:
    times, t = [], 0.0
    for frame in frames:
        times.append(t)
        t += (len(frame) + POS_OVERHEAD) * 8 / POS_BPS / load
    return times


def _run(spec: SystemSpec, threads: int, load: float = 0.9) -> tuple[list, dict]:
    system = System.from_manifests(spec, {c.name: l2wire() for c in spec.chips},
                                   threads=threads)
    sinks = {}
    for index, port in enumerate(spec.ports):
        frames = scapy_frames(300, seed=11 + index)
        times = paced(frames, load)
        system.attach_source(port.name, ListSource([RxFrame(f, t) for f, t in
                                                    zip(frames, times, strict=True)]))
        sinks[port.name] = ListSink()
        system.attach_sink(port.name, sinks[port.name])
    system.run(600_000)
    out = [(name, f.port, f.first_bit_cycle, f.last_bit_cycle, f.data)
           for name, sink in sinks.items() for f in sink.frames]
    return out, system.counters()


def test_two_threads_give_the_serial_run_bit_for_bit() -> None:
    spec = SystemSpec.load("dual-ixp2800-npf")
    serial, serial_counters = _run(spec, 1)
    threaded, threaded_counters = _run(spec, 2)
    # l2wire forwards port 0 -> 1: east carries pos0 -> pos1, west pos1 -> pos0
    assert {name for name, *_ in serial} == {"pos0", "pos1"} and len(serial) > 400
    assert threaded == serial
    assert threaded_counters == serial_counters
    assert serial_counters["unconnected"] == {"east:0": 0, "west:0": 0}


def test_frames_to_a_port_leading_nowhere_are_counted(tmp_path: Path) -> None:
    shipped = resources.files("npkit.sim") / "systems" / "dual-ixp2800-npf.toml"
    toml = shipped.read_text(encoding="utf-8")
    # pos1 transmitted by east's port 0 instead of its port 1: east's l2wire output
    # (port 1) now leads nowhere
    toml = toml.replace('tx = "east:1"', 'tx = "east:0"')
    path = tmp_path / "miswired.toml"
    path.write_text(toml, encoding="utf-8")
    spec = SystemSpec.load(path)
    assert spec.unconnected("east") == [1]
    out, counters = _run(spec, 2)
    assert counters["ports"]["pos0"]["frames_in"] == 300
    sent = counters["chips"]["east"]["ports"][1]["tx_frames"]
    assert counters["unconnected"]["east:1"] == sent > 250
    assert not [f for f in out if f[0] == "pos1"]
