"""What a trial's device counters say per forwarded packet: DRAM bytes per packet and the
busiest units.

Both read the flat ``TrialResult.counters`` of the chip devices (``devices.chip_counters``):

* **DRAM bytes per forwarded packet** = the bytes every DRAM channel moved over the whole
  trial (``dramN.bytes``: each ``dram[...]`` command's transfer, reads and writes, RBUF ->
  DRAM and DRAM -> TBUF included) / the frames the ports transmitted (``portN.tx_frames``).
  At the throughput nothing is lost, so it is the data path's DRAM traffic per packet; above
  it, the traffic of dropped packets is spread over those forwarded.  None when the
  counters have no DRAM bytes (a reference device, a result from before they were kept) or
  nothing was forwarded.
  A system's counters (``system_device``: ``east.dram0.bytes``, ``east.port1.tx_frames``)
  give one figure per chip (``dram_bytes_per_packet_by_chip``); ``dram_bytes_per_packet``
  is then the worst chip's.
* **busiest units**: the ``*.busy_fraction`` counters (MEs, SRAM / DRAM channels, scratch,
  a reference device's engine), highest first, over the offered traffic's span; the
  forwarding-ME average ``fwd.busy_fraction`` is left out (its MEs are listed themselves).

    per_packet = dram_bytes_per_packet(case.counters_at_throughput)   # e.g. 192.0
    busiest_units(case.counters_at_throughput, 3)  # (("dram1", 0.91), ("me4", 0.88), ...)
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# "dram0.bytes" / "port1.tx_frames", or a system chip's "east.dram0.bytes"
_PER_CHIP = re.compile(r"^(?:(?P<chip>[^.]+)\.)?(?P<what>dram\d+\.bytes|port\d+\.tx_frames)$")


def dram_bytes(counters: Mapping[str, float]) -> float | None:
    """Bytes moved by all DRAM channels (None when the counters do not have them)."""
    values = [v for k, v in counters.items() if k.startswith("dram") and k.endswith(".bytes")]
    return float(sum(values)) if values else None


def packets_forwarded(counters: Mapping[str, float]) -> int:
    """Frames transmitted by all ports."""
    return int(sum(v for k, v in counters.items()
                   if k.startswith("port") and k.endswith(".tx_frames")))


def dram_bytes_per_packet_by_chip(counters: Mapping[str, float]) -> dict[str, float]:
    """Per chip ("" for a single chip's unprefixed counters), DRAM bytes moved per packet
    that chip transmitted; chips with no DRAM counters or nothing out are left out."""
    moved: dict[str, float] = {}
    out: dict[str, float] = {}
    for key, value in counters.items():
        found = _PER_CHIP.match(key)
        if found is None:
            continue
        chip = found["chip"] or ""
        into = moved if found["what"].startswith("dram") else out
        into[chip] = into.get(chip, 0.0) + float(value)
    return {chip: moved[chip] / out[chip] for chip in sorted(moved) if out.get(chip)}


def dram_bytes_per_packet(counters: Mapping[str, float]) -> float | None:
    """DRAM bytes moved per forwarded packet, the worst chip's for a system (None: no DRAM
    counters, or nothing out)."""
    per_chip = dram_bytes_per_packet_by_chip(counters)
    return max(per_chip.values()) if per_chip else None


def busiest_units(counters: Mapping[str, float], count: int = 3) -> tuple[tuple[str, float], ...]:
    """The ``count`` busiest units, (name, busy fraction), highest first (ties by name)."""
    busy = [(k.removesuffix(".busy_fraction"), float(v)) for k, v in counters.items()
            if k.endswith(".busy_fraction") and not f".{k}".count(".fwd.")]
    busy.sort(key=lambda item: (-item[1], item[0]))
    return tuple(busy[:count])


__all__ = ["busiest_units", "dram_bytes", "dram_bytes_per_packet",
           "dram_bytes_per_packet_by_chip", "packets_forwarded"]
