"""Streams: what one tester port sends (sizes, rate, count or duration, destinations)."""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal, Protocol

from npkit.bench.tester.media import (
    ETHERNET_SIZES,
    IMIX_SIZES,
    IMIX_WEIGHTS,
    POS_IPV4_SIZES,
    Framing,
    SizeUnit,
    frame_bytes,
)
from npkit.bench.tester.packet import Transport, smallest_ip

FamilyChoice = Literal[4, 6, "mixed"]

# Streams out of phase (issue 12 item 3).  A real tester does not start every port's stream
# at one instant, back to back with the others: Spirent TestCenter's asynchronous start
# begins each port's emission "at best effort" (Spirent, "TestCenter implementation
# enhancement for asynchronous timer traffic", 2016), and even a synchronised start leaves
# each stream's packets at their own phase against the device's clocks.  ``out_of_phase``
# starts each stream at its own seeded offset, uniform in [0, window).  The default window
# is a guess [U]: 1 us, the NPF procedure's confirmation-trial window
# (``NpfConfig.phase_window_ps``) -- 24 packet slots of 40-byte POS at OC-192, so the
# ports' packets meet at every relative phase, and short against any trial (>= 25 us).
PHASE_WINDOW_PS = 1_000_000  # [U] see above


def standard_sizes(framing: Framing, family: int) -> tuple[tuple[int, ...], SizeUnit]:
    """The standard size list of a medium and family, and its unit."""
    smallest = smallest_ip(family)
    if framing == "pos":
        base = POS_IPV4_SIZES
        return tuple(sorted({max(smallest, s) for s in base})), "ip"
    least = frame_bytes(smallest, "ethernet")
    return tuple(sorted({max(least, s) for s in ETHERNET_SIZES})), "frame"


class Destinations(Protocol):
    """Where packets go: ``draw(k, rng)`` -> (index of the route or address used, address)."""

    family: int

    def draw(self, k: int, rng: random.Random) -> tuple[int, int]: ...


def phase_offset(stream_id: int, seed: int | str, window_ps: int = PHASE_WINDOW_PS) -> int:
    """The start offset (ps) of stream ``stream_id``: uniform in [0, ``window_ps``), drawn
    from a generator seeded by (``seed``, ``stream_id``) alone, so adding or dropping other
    streams moves no stream's phase."""
    if window_ps < 0:
        raise ValueError(f"phase window must be >= 0 ps, got {window_ps}")
    if window_ps == 0:
        return 0
    return random.Random(f"npkit-stream-phase:{seed}:{stream_id}").randrange(window_ps)


def out_of_phase(streams: Sequence[Stream], seed: int | str,
                 window_ps: int = PHASE_WINDOW_PS) -> tuple[Stream, ...]:
    """``streams``, each starting ``phase_offset(id, seed, window_ps)`` later than it did."""
    return tuple(replace(s, start_ps=s.start_ps + phase_offset(s.id, seed, window_ps))
                 for s in streams)


@dataclass(frozen=True)
class FixedDestinations:
    """Destinations from a plain address list, used in turn (no route table)."""

    family: int
    addresses: tuple[int, ...]

    @classmethod
    def of(cls, *texts: str) -> FixedDestinations:
        addresses = tuple(int(ipaddress.ip_address(t)) for t in texts)
        family = ipaddress.ip_address(texts[0]).version
        return cls(family, addresses)

    def draw(self, k: int, rng: random.Random) -> tuple[int, int]:
        index = k % len(self.addresses)
        return index, self.addresses[index]


@dataclass(frozen=True)
class Sizes:
    """Packet sizes: one value, a list used in turn (``weights`` None), or a weighted random
    mix (seeded).  ``unit``: "ip" (IP packet bytes) or "frame" (frame bytes, Ethernet with
    FCS); None means the medium's usual unit: IP bytes on POS, frame bytes on Ethernet.
    ``clamp``: a size below the smallest packet of its family that carries the signature
    (e.g. 40 bytes of IPv6 in a mixed-family Internet mix) is sent at that smallest size
    instead of being an error."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None
    unit: SizeUnit | None = None
    clamp: bool = False

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("Sizes: give at least one size")
        if self.weights is not None and len(self.weights) != len(self.values):
            raise ValueError("Sizes: weights must have one entry per size")

    @classmethod
    def fixed(cls, size: int, unit: SizeUnit | None = None) -> Sizes:
        return cls((size,), None, unit)

    @classmethod
    def imix(cls, values: Sequence[int] = IMIX_SIZES,
             weights: Sequence[float] = IMIX_WEIGHTS, clamp: bool = False) -> Sizes:
        """The Internet mix, by default 7:4:1 of 40/576/1500 IP bytes."""
        return cls(tuple(values), tuple(weights), "ip", clamp)

    @classmethod
    def standard(cls, framing: Framing, family: int) -> Sizes:
        values, unit = standard_sizes(framing, family)
        return cls(values, None, unit)

    def unit_for(self, framing: Framing) -> SizeUnit:
        return self.unit or ("ip" if framing == "pos" else "frame")

    def pick(self, k: int, rng: random.Random) -> int:
        if self.weights is None:
            return self.values[k % len(self.values)]
        return rng.choices(self.values, weights=self.weights)[0]


@dataclass(frozen=True)
class Stream:
    """One stream of test packets entering the device on ``port``.

    Rate: ``load_percent`` of the port's line rate (each packet's interval is its own wire
    slot divided by the load), or ``pps`` packets per second; give one.  Length: ``count``
    packets, or every packet whose scheduled start is before ``duration_ps``; give one.
    ``destinations`` maps a family (4, 6) to its destination set (``pick_destinations`` or
    ``FixedDestinations``); ``family="mixed"`` draws IPv6 with probability ``v6_share``.
    ``start_ps``: when the stream's first packet is scheduled (0: the tester's epoch; a lab
    procedure puts its streams out of phase with ``out_of_phase``).
    """

    id: int
    port: int
    destinations: Mapping[int, Destinations]
    framing: Framing = "ethernet"
    family: FamilyChoice = 4
    sizes: Sizes = field(default_factory=lambda: Sizes.fixed(64))
    load_percent: float | Fraction | None = 100
    pps: float | Fraction | None = None
    count: int | None = None
    duration_ps: int | None = None
    seed: int = 1
    v6_share: float = 0.5
    start_ps: int = 0
    transport: Transport = "auto"
    src4: str = "198.18.0.1"  # RFC 2544 test range
    src6: str = "2001:2::1"  # RFC 5180 benchmarking range
    dst_mac: str = "02:00:00:00:00:01"  # the device's port
    src_mac: str = "02:00:00:00:ee:01"  # the tester's port
    sport: int = 49152
    dport: int = 49153

    def __post_init__(self) -> None:
        if not 0 <= self.id <= 0xFFFF:
            raise ValueError(f"stream {self.id}: id must be 0..65535")
        if (self.load_percent is None) == (self.pps is None):
            raise ValueError(f"stream {self.id}: give load_percent or pps, not both")
        if self.load_percent is not None and not 0 < self.load_percent <= 100:
            raise ValueError(f"stream {self.id}: load_percent must be in (0, 100]")
        if self.pps is not None and not self.pps > 0:
            raise ValueError(f"stream {self.id}: pps must be > 0")
        if (self.count is None) == (self.duration_ps is None):
            raise ValueError(f"stream {self.id}: give count or duration_ps, not both")
        if self.framing not in ("ethernet", "pos"):
            raise ValueError(f"stream {self.id}: framing must be 'ethernet' or 'pos'")
        for family in self.families():
            if family not in self.destinations:
                raise ValueError(f"stream {self.id}: no IPv{family} destinations")

    def families(self) -> tuple[int, ...]:
        if self.family == "mixed":
            return (4, 6)
        if self.family not in (4, 6):
            raise ValueError(f"stream {self.id}: family must be 4, 6 or 'mixed'")
        return (self.family,)

    def rng(self) -> random.Random:
        return random.Random(f"npkit-stream:{self.seed}:{self.id}")
