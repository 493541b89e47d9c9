"""The device-under-test contract of the lab.

A benchmark procedure never touches a simulator directly: it describes a **trial** -- the
streams to send, which ports they use -- and hands it to a ``Device``, which runs it from a
clean state and returns what came out plus the device's own counters.  Trials are
independent and deterministic: the same ``Trial`` on the same device gives the same
``TrialResult`` (this is what lets a dask sweep reproduce a serial run byte for byte).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from npkit.bench.tester import PortModel, Report, RxRecord, Stream, Traffic
from npkit.bench.tester.tally import TrialTally


@dataclass(frozen=True)
class Trial:
    """One run of traffic through the device: the streams (each names its input port) and
    a label for progress output.  ``settle_ps`` is how long after the last frame is sent
    the device keeps running so frames in flight can leave (they count as received)."""

    streams: tuple[Stream, ...]
    label: str = ""
    settle_ps: int = 200_000_000  # 200 us


@dataclass
class TrialResult:
    """What a trial produced: the tester's analysis, the raw records, the device counters.

    A streamed trial (a chip device with ``streamed=True``, as the NPF lab builds them:
    frames generated, fed and analysed in batches, none held) has ``traffic`` None and
    ``received`` empty and carries ``tally`` instead: per port what was sent and received
    (frames, IP bits, frames out by the end of the sending time, line use), all a
    procedure's rates need (``npf.rate_point``).

    ``counters`` is flat and JSON-friendly (str -> int | float): the device's own view
    (e.g. ``me3.busy_fraction``, ``dram.busy_fraction``, ``drop.no_route``,
    ``rx_dropped_rbuf_full``) so reports can explain from the counters where a figure comes
    from.  ``sim_ps`` is the simulated time the trial ran."""

    report: Report
    traffic: Traffic | None
    received: list[RxRecord]
    counters: dict[str, float] = field(default_factory=dict)
    sim_ps: int = 0
    tally: TrialTally | None = None


class Device(Protocol):
    """A device under test."""

    name: str

    @property
    def ports(self) -> Mapping[int, PortModel]:
        """Port number -> the tester's model of that port (rate, overhead, framing)."""
        ...

    def run(self, trial: Trial) -> TrialResult:
        """Run ``trial`` from a clean state (fresh chip, same tables) and analyze it."""
        ...

    def describe(self) -> dict[str, Any]:
        """The device's whole configuration, JSON-friendly (goes into the results)."""
        ...


@dataclass
class DeviceProxy:
    """A device that runs its trials on another one; procedures subclass it to keep what
    the trials showed (counters behind a figure) while passing everything else through."""

    device: Device

    def run(self, trial: Trial) -> TrialResult:
        return self.device.run(trial)

    @property
    def ports(self) -> Mapping[int, PortModel]:
        return self.device.ports

    @property
    def name(self) -> str:
        return getattr(self.device, "name", "device")

    def describe(self) -> dict[str, Any]:
        return self.device.describe()
