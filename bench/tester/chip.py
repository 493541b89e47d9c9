"""Connect the tester to the simulated chip (npkit.sim): sources in, sinks out.

The chip's port sources already replay timestamps (``sim/packets.py``: an ``RxFrame`` with
``time_s`` is not started before that instant; ``ListSource`` holds them), so the tester
only converts: its send times (ps) become ``RxFrame.time_s``, and the chip's ``TxFrame``
(last bit at ``last_bit_cycle``) becomes an ``RxRecord`` with the exact picosecond of that
cycle.  The chip starts a frame at the first whole cycle at or after ``floor(time_s *
clock)``, so a measured latency may differ from the device's own by under one cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

from npkit.bench.tester.analyzer import RxRecord
from npkit.bench.tester.generator import Traffic
from npkit.bench.tester.media import PS_PER_S, PortModel
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
    ps_per_cycle = PS_PER_S / Fraction(clock_hz)
    return [RxRecord(f.port, round(f.last_bit_cycle * ps_per_cycle), f.data) for f in frames]
