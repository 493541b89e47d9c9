"""The generator without Python per frame: the streams' frames built by the C++ extension
``npkit.bench.tester._fast`` (``bench/tester/cpp``) in bounded batches.

The results are the Python generator's (``generator.generate_python``), frame for frame:
the C++ side continues each stream's ``random.Random`` from its state (CPython's Mersenne
Twister, ``random()``, ``getrandbits``, ``_randbelow`` and ``choices``' bisection), and keeps
time as integers in units of 1/D ps, D the common denominator of the port's exact intervals
and wire slots (computed here with ``fractions`` once per stream and frame length), so no
``Fraction`` is made per frame and nothing is rounded until a send time is recorded (up, to
a whole picosecond).  ``tests/bench/test_tester_fast.py`` compares the two on IPv4, IPv6 and
mixed traffic, IMIX, size lists, several streams per port, pps and count-limited streams.

Streams whose destinations are neither a ``DestinationSet`` nor ``FixedDestinations`` (any
other object with ``draw``), or whose schedule would not fit 126 bits, go through the
Python generator (``eligible`` says which).  The destination self-check of
``DestinationSet.address`` (every drawn address's longest match is its prefix) is not
repeated per frame here: the ranges it draws from are built to make it true, and the test
checks it on the drawn addresses.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate
from typing import Any

import numpy as np

from npkit.bench.tester import _fast
from npkit.bench.tester.destinations import DestinationSet
from npkit.bench.tester.media import (
    ETH_MAX_FRAME,
    POS_MAX_IP,
    PS_PER_S,
    PortModel,
    frame_bytes,
    ip_bytes,
)
from npkit.bench.tester.packet import FILLER, mac_bytes, smallest_ip
from npkit.bench.tester.stream import FixedDestinations, Stream
from npkit.sim.frames import PackedFrames

BATCH_FRAMES = 65_536  # frames per batch: ~3 MB of 40-byte frames, bounded whatever the run
_TRANSPORT = {"auto": 0, "udp": 1, "raw": 2}
_LIMIT_BITS = 126  # the C++ schedule is unsigned 128-bit; keep a margin for the sums


@dataclass(frozen=True)
class Batch:
    """Consecutive frames of one port in sending order: send times (ps, first bit), the
    frame bytes (``port_batches``: packed in one buffer, ``npkit.sim.frames``; a list of
    bytes also does), and each frame's stream and sequence number."""

    port: int
    times_ps: np.ndarray  # int64
    datas: Sequence[bytes]  # PackedFrames or list[bytes]
    streams: np.ndarray  # int32
    seqs: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.datas)


def eligible(stream: Stream) -> bool:
    """True when the C++ generator can make ``stream``'s frames (an empty destination set,
    which the Python generator fails on, is left to it, so the error is the same)."""
    return (all(_drawable(stream.destinations.get(f)) for f in stream.families())
            and isinstance(stream.v6_share, int | float)
            and (stream.sizes.weights is None or _cum_weights(stream) is not None))


def _drawable(dest: Any) -> bool:
    if type(dest) is FixedDestinations:
        return len(dest.addresses) > 0
    if type(dest) is DestinationSet:
        return len(dest.prefixes) > 0 and all(
            ranges and all(lo <= hi for lo, hi in ranges) for ranges in dest.free)
    return False


def _cum_weights(stream: Stream) -> list[float] | None:
    weights = stream.sizes.weights
    if weights is None:
        return []
    cum = list(accumulate(weights))
    total = cum[-1] + 0.0
    if not (total > 0.0 and math.isfinite(total)):
        return None  # random.choices raises; the Python generator says so
    return [float(c) for c in cum]


def _intervals(stream: Stream, model: PortModel) -> dict[int, tuple[Fraction, Fraction]]:
    """Frame length -> (exact interval to the stream's next packet, wire slot), ps."""
    load = None if stream.load_percent is None else Fraction(str(stream.load_percent)) / 100
    pps_interval = None if stream.pps is None else PS_PER_S / Fraction(str(stream.pps))
    out = {}
    for length in _frame_lengths(stream):
        slot = model.wire_ps(length)
        interval = pps_interval if load is None else slot / load
        out[length] = (interval, slot)  # type: ignore[assignment]
    return out


def _shape_rows(stream: Stream) -> dict[int, list[tuple[int, int, str]]]:
    """Per family: per size choice, (IP length, frame length, the error to raise or "")."""
    unit = stream.sizes.unit_for(stream.framing)
    rows: dict[int, list[tuple[int, int, str]]] = {}
    for family in stream.families():
        least = smallest_ip(family, stream.transport)
        most = POS_MAX_IP if stream.framing == "pos" else ETH_MAX_FRAME - 18
        rows[family] = []
        for size in stream.sizes.values:
            ip_len = ip_bytes(size, unit, stream.framing)
            if stream.sizes.clamp:
                ip_len = max(ip_len, smallest_ip(family, stream.transport))
            error = "" if least <= ip_len <= most else (
                f"stream {stream.id}: IPv{family} packet of {ip_len} IP bytes on "
                f"{stream.framing} is outside {least}..{most} (the signature needs "
                f"{least}; Sizes(clamp=True) sends smaller sizes at {least})")
            rows[family].append((ip_len, frame_bytes(ip_len, stream.framing), error))
    return rows


def _frame_lengths(stream: Stream) -> set[int]:
    return {length for rows in _shape_rows(stream).values() for _, length, error in rows
            if not error}


def _destinations(dest: Any) -> tuple[str, Any]:
    if isinstance(dest, FixedDestinations):
        return "fixed", list(dest.addresses)
    return "set", [list(ranges) for ranges in dest.free]


def port_generator(model: PortModel, streams: list[Stream]) -> Any | None:
    """The C++ generator of one port's ``streams`` (in their order on the port), or None
    when the schedule would not fit (then the Python generator makes them)."""
    per_stream = [_intervals(s, model) for s in streams]
    denominator = 1
    for table in per_stream:
        for interval, slot in table.values():
            denominator = math.lcm(denominator, interval.denominator, slot.denominator)
    bound = 0
    for s, table in zip(streams, per_stream, strict=True):
        longest = max((i for i, _ in table.values()), default=Fraction(0))
        slots = max((sl for _, sl in table.values()), default=Fraction(0))
        if s.duration_ps is not None:
            bound += s.start_ps + s.duration_ps + longest + slots * (s.duration_ps + 1)
        else:
            bound += s.start_ps + (s.count or 0) * (longest + slots) + longest
    if math.ceil(bound * denominator).bit_length() > _LIMIT_BITS:
        return None
    specs = []
    for s, table in zip(streams, per_stream, strict=True):
        rows = _shape_rows(s)
        shapes: list[list[tuple[int, int, int, str]]] = [[], []]
        for family, family_rows in rows.items():
            for ip_len, length, error in family_rows:
                interval, slot = table.get(length, (Fraction(0), Fraction(0)))
                shapes[family == 6].append((ip_len, int(interval * denominator),
                                            int(slot * denominator), error))
        dests = [None, None]
        for family in s.families():
            dests[family == 6] = _destinations(s.destinations[family])
        specs.append({
            "id": s.id, "mt_state": list(s.rng().getstate()[1]), "mixed": s.family == "mixed",
            "family": s.families()[0], "v6_share": float(s.v6_share),
            "sizes": len(s.sizes.values), "cum_weights": _cum_weights(s), "shapes": shapes,
            "dests": dests, "start": s.start_ps * denominator,
            "end": None if s.duration_ps is None else (s.start_ps + s.duration_ps) * denominator,
            "count": s.count, "pos": s.framing == "pos", "transport": _TRANSPORT[s.transport],
            "sport": s.sport, "dport": s.dport, "src4": int(ipaddress.IPv4Address(s.src4)),
            "src6": int(ipaddress.IPv6Address(s.src6)), "dst_mac": mac_bytes(s.dst_mac),
            "src_mac": mac_bytes(s.src_mac)})
    return _fast.PortGenerator(denominator, specs, FILLER)


def port_batches(port: int, generator: Any, limit: int = BATCH_FRAMES) -> Iterator[Batch]:
    """The port's frames in batches of at most ``limit``, until the streams end; the frames
    packed in one buffer (``PackedFrames``: no ``bytes`` object per frame; the generator
    builds them without the GIL)."""
    while True:
        times, data, offsets, ids, seqs = generator.take_packed(limit)
        if not len(times):
            return
        yield Batch(port, times, PackedFrames(data, offsets), ids, seqs)


def by_port(streams: Iterable[Stream]) -> dict[int, list[Stream]]:
    out: dict[int, list[Stream]] = {}
    for s in streams:
        out.setdefault(s.port, []).append(s)
    return out


def batches(streams: Iterable[Stream], models: Mapping[int, PortModel],
            limit: int = BATCH_FRAMES) -> dict[int, Iterator[Batch]]:
    """Per port, its frames as a lazy sequence of bounded batches (``generate``'s checks of
    the streams are the caller's: ``generator.check_streams``)."""
    out = {}
    for port, port_streams in by_port(streams).items():
        generator = port_generator(models[port], port_streams)
        if generator is None:
            raise ValueError(f"port {port}: the streams' schedule does not fit the C++ "
                             "generator's 126 bits; use generator.generate_python")
        out[port] = port_batches(port, generator, limit)
    return out
