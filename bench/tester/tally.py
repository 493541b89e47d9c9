"""Per-port summaries of the frames a streamed trial sent and received, kept without holding
the frames: what the lab's rates need besides the analyzer's report (``npf.rate_point``:
IP bits sent and received, frames out by the end of the sending time; the overload test:
an output line's busy span and wire time; the trial's last bit sent).

A ``PortTally`` takes frames a batch at a time (send or last-bit times in ps and the frame
bytes) and keeps a few integers per frame *length*, not per frame, so a trial of any length
costs the same memory.  Every figure is exactly what the same computation over the held
records gives (``tests/bench/test_tester_tally.py``): IP lengths are read from the IP header
as ``npf._ip_bits`` reads them (``ip_lengths``' rule, one C++ pass over the batch with the
per-length counts: ``_fast.tally_batch``; frames too short for that go through the
per-frame rule), wire times are ``PortModel.wire_ps`` per length.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from npkit.bench.tester import _fast
from npkit.bench.tester.media import (
    ETH_HEADER,
    ETHERTYPE,
    POS_HEADER,
    PPP_ADDRESS,
    PPP_CONTROL,
    PPP_PROTOCOL,
    PS_PER_S,
    PortModel,
)
from npkit.bench.tester.packet import split_link
from npkit.sim.frames import PackedFrames

IPV6_FIXED = 40  # an IPv6 packet's length is its payload length plus this header


def ip_length(framing: str, data: bytes) -> int:
    """The IP length of one frame by its IP header (0: not IP), the rule ``ip_lengths``
    applies to a batch."""
    split = split_link(framing, data)  # type: ignore[arg-type]
    if split is None:
        return 0
    family, _, rest = split
    if family == 4:
        return int.from_bytes(rest[2:4], "big")
    return IPV6_FIXED + int.from_bytes(rest[4:6], "big")


def ip_lengths(framing: str, datas: Sequence[bytes], lengths: np.ndarray | None = None
               ) -> np.ndarray:
    """``ip_length`` of every frame of ``datas`` (int64), read from one joined buffer with
    numpy: no Python per frame, but for frames shorter than the link header + 6 bytes."""
    n = len(datas)
    if lengths is None:
        lengths = np.fromiter(map(len, datas), dtype=np.int64, count=n)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    pos = framing == "pos"
    link = POS_HEADER if pos else ETH_HEADER
    buffer = np.frombuffer(b"".join(datas), dtype=np.uint8)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    whole = lengths >= link + 6
    at = starts[whole]

    def byte(k: int) -> np.ndarray:
        return buffer[at + k].astype(np.int64)

    def word(k: int) -> np.ndarray:
        return (byte(k) << 8) | byte(k + 1)

    if pos:
        ppp = (byte(0) == PPP_ADDRESS) & (byte(1) == PPP_CONTROL)
        kind = np.where(ppp, word(2), -1)
        v4, v6 = kind == PPP_PROTOCOL[4], kind == PPP_PROTOCOL[6]
    else:
        kind = word(12)
        v4, v6 = kind == ETHERTYPE[4], kind == ETHERTYPE[6]
    out[whole] = np.where(v4, word(link + 2), np.where(v6, IPV6_FIXED + word(link + 4), 0))
    for index in np.flatnonzero(~whole).tolist():
        out[index] = ip_length(framing, datas[index])
    return out


@dataclass
class PortTally:
    """What one port sent or received, per frame length: frames, earliest and latest time;
    in all: IP bits, and frames at or before ``until_ps`` (when given with the batch)."""

    framing: str
    frames: int = 0
    ip_bits: int = 0
    by_length: Counter[int] = field(default_factory=Counter)  # frame bytes -> frames
    first_ps: dict[int, int] = field(default_factory=dict)  # frame bytes -> earliest time
    last_ps: dict[int, int] = field(default_factory=dict)  # frame bytes -> latest time
    until: int = 0  # frames at or before the ``until_ps`` their batch was given

    def add(self, times_ps: np.ndarray | Sequence[int], datas: Sequence[bytes],
            until_ps: int | None = None) -> None:
        """A batch of frames (times: send or last-bit, ps)."""
        if not len(datas):
            return
        if not isinstance(datas, list | PackedFrames):  # the C++ reads these two as they are
            datas = list(datas)
        # one C++ pass (tally.cpp): ip_lengths' rule, per length its count and time span
        ip_bytes, until, short, rows = _fast.tally_batch(self.framing == "pos", times_ps,
                                                         datas, until_ps)
        ip_bytes += sum(ip_length(self.framing, datas[i]) for i in short)
        self.frames += len(datas)
        self.ip_bits += 8 * ip_bytes
        self.until += until
        for size, count, low, high in rows:
            self.by_length[size] += count
            self.first_ps[size] = min(low, self.first_ps.get(size, low))
            self.last_ps[size] = max(high, self.last_ps.get(size, high))

    @property
    def earliest_ps(self) -> int | None:
        return min(self.first_ps.values(), default=None)

    def last_bit_ps(self, model: PortModel) -> Fraction:
        """Send times: the last bit of the latest frame on the line (exact; 0: none), as
        ``Traffic.last_bit_ps`` gives it."""
        return max((self.last_ps[size] + model.wire_ps(size) for size in self.last_ps),
                   default=Fraction(0))

    def line_use(self, model: PortModel) -> tuple[float, float]:
        """Last-bit times of an output line: (frames per second, busy fraction) from the
        first bit of its first frame to the last bit of its last, as ``npf._output_use``
        computes them over the held frames."""
        if not self.frames:
            return 0.0, 0.0
        start = min(self.first_ps[size] - model.wire_ps(size) for size in self.first_ps)
        span = max(self.last_ps.values()) - start
        if span <= 0:
            return 0.0, 0.0
        wire = sum((count * model.wire_ps(size) for size, count in self.by_length.items()),
                   Fraction(0))
        return float(self.frames * PS_PER_S / span), float(wire / span)


@dataclass
class TrialTally:
    """Both sides of a streamed trial, per tester port.  ``window_ps``: the sending time
    (the streams' duration) after the first frame sent; received frames whose last bit is
    at or before the end of it are counted (``received_by_end``), for which every port's
    first frame must have been tallied before the first received one."""

    framing: str
    window_ps: int | None = None
    sent: dict[int, PortTally] = field(default_factory=dict)
    received: dict[int, PortTally] = field(default_factory=dict)

    def _port(self, side: dict[int, PortTally], port: int) -> PortTally:
        if port not in side:
            side[port] = PortTally(self.framing)
        return side[port]

    def add_sent(self, port: int, times_ps: np.ndarray, datas: Sequence[bytes]) -> None:
        self._port(self.sent, port).add(times_ps, datas)

    def add_received(self, port: int, times_ps: Sequence[int] | np.ndarray,
                     datas: Sequence[bytes]) -> None:
        """One port's received frames (last-bit times)."""
        end = self.end_ps
        if self.window_ps is not None and end is None and len(datas):
            raise RuntimeError("a received frame was tallied before any sent one")
        self._port(self.received, port).add(times_ps, datas, end)

    @property
    def end_ps(self) -> int | None:
        """The end of the sending time: the first frame sent + ``window_ps``."""
        first = [t.earliest_ps for t in self.sent.values() if t.frames]
        if self.window_ps is None or not first:
            return None
        return min(first) + self.window_ps  # type: ignore[type-var]

    def sent_ip_bits(self) -> int:
        return sum(t.ip_bits for t in self.sent.values())

    def received_ip_bits(self) -> int:
        return sum(t.ip_bits for t in self.received.values())

    def received_by_end(self) -> int | None:
        return None if self.end_ps is None else sum(t.until for t in self.received.values())

    def last_bit_ps(self, models: dict[int, PortModel]) -> Fraction:
        return max((t.last_bit_ps(models[p]) for p, t in self.sent.items()),
                   default=Fraction(0))


__all__ = ["PortTally", "TrialTally", "ip_length", "ip_lengths"]
