"""Independent references for the media tests: port presets and wire-time arithmetic done
with exact fractions, from the definitions in FACTS.md section 2 (not from the model)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil, floor
from typing import Any

# Port presets, FACTS.md section 2: rate on the wire and bytes added per frame.
TEN_GBE: dict[str, Any] = {"rate_bps": 10e9, "overhead_bytes": 20}  # preamble+SFD 8, gap 12
ONE_GBE: dict[str, Any] = {"rate_bps": 1e9, "overhead_bytes": 20}
# POS frames carry the 4-byte PPP header (RFC 1662); the line adds HDLC flag 1 + FCS-32 4
POS_OVERHEAD = 5
PPP_HEADER = 4
OC192_POS: dict[str, Any] = {"rate_bps": 9.58464e9, "overhead_bytes": POS_OVERHEAD}
ME_CLOCK_HZ = 1.4e9
CLOCK = Fraction(1_400_000_000)
RATES = {"10gbe": Fraction(10**10), "1gbe": Fraction(10**9), "oc192pos": Fraction(9_584_640_000)}


def frame_cycles(rate: Fraction, length: int, overhead: int) -> Fraction:
    """ME cycles one frame occupies the wire: (length + overhead) * 8 bits at `rate`."""
    return Fraction((length + overhead) * 8) * CLOCK / rate


def back_to_back_arrivals(rate: Fraction, length: int, overhead: int, n: int) -> list[int]:
    """Cycle of the last bit of frames 0..n-1 sent back to back from cycle 0 (rounded up)."""
    per = frame_cycles(rate, length, overhead)
    return [ceil(per * (k + 1)) for k in range(n)]


def frames_within(rate: Fraction, length: int, overhead: int, seconds: Fraction) -> int:
    """Frames whose last bit has arrived by `seconds`, back to back from time 0."""
    return floor(seconds * rate / ((length + overhead) * 8))


# --------------------------------------------------------------------------- RX reference
# Status word layout, docs/architecture.md "Receive" (written out here on purpose: the test
# checks the model against the documented layout).
SOP = 1 << 24
EOP = 1 << 25


@dataclass
class _RefPort:
    rate: Fraction
    overhead: int
    freelist: int
    first: int  # first global element of the partition
    line_free: Fraction = Fraction(0)
    pending: deque[tuple[int, int]] = field(default_factory=deque)  # (arrival, length)
    hint: int = 0
    waiting: int = 0


class RxReference:
    """A separate, slow model of the receive side as docs/media.md specifies it."""

    def __init__(self, rbuf_bytes: int, element_bytes: int, latency: int,
                 ports: list[tuple[Fraction, int, int]]) -> None:
        self.eb = element_bytes
        self.latency = latency
        self.elements = rbuf_bytes // element_bytes // len(ports)
        self.ports = [_RefPort(r, o, f, i * self.elements) for i, (r, o, f) in enumerate(ports)]
        self.state = ["free"] * (self.elements * len(ports))
        self.frames: dict[int, deque[tuple[int, int, int, int, int]]] = {}
        self.threads: dict[int, deque[tuple[int, int, int, int, int]]] = {}
        self.pushes: list[tuple[int, int, tuple[int, int, int, list[int], int, int]]] = []
        self.seq = 0
        self.now = 0
        self.counters = [{"rx_frames": 0, "rx_dropped_rbuf_full": 0, "rx_dropped_too_long": 0,
                          "in_use": 0, "high": 0, "waiting_high": 0} for _ in ports]

    def add(self, port: int, length: int) -> None:
        p = self.ports[port]
        start = max(p.line_free, Fraction(self.now))
        p.line_free = start + Fraction((length + p.overhead) * 8) * CLOCK / p.rate
        p.pending.append((ceil(p.line_free), length))

    def register(self, me: int, ctx: int, lst: int, xfer: int, sig: int, t: int) -> None:
        frames = self.frames.setdefault(lst, deque())
        if frames:
            frame = frames.popleft()
            self.ports[frame[0]].waiting -= 1
            self._pair(frame, (me, ctx, xfer, sig, t))
        else:
            self.threads.setdefault(lst, deque()).append((me, ctx, xfer, sig, t))

    def free(self, first: int, count: int) -> None:
        for e in range(first, first + count):
            assert self.state[e] == "handed"
            self.state[e] = "free"
        self.counters[first // self.elements]["in_use"] -= count

    def _pair(self, frame: tuple[int, int, int, int, int],
              thread: tuple[int, int, int, int, int]) -> None:
        port, first, count, length, arrival = frame
        me, ctx, xfer, sig, since = thread
        when = max(arrival, since) + self.latency
        words = [length | port << 16 | SOP | EOP, first | count << 16]
        self.pushes.append((when, self.seq, (me, ctx, xfer, words, sig, when)))
        self.seq += 1

    def _arrive(self, index: int) -> None:
        p = self.ports[index]
        arrival, length = p.pending.popleft()
        c = self.counters[index]
        count = -(-length // self.eb)
        if count > self.elements:
            c["rx_dropped_too_long"] += 1
            return
        last = self.elements - count
        hint = p.hint if p.hint <= last else 0
        for k in range(last + 1):
            s = (hint + k) % (last + 1)
            if all(self.state[p.first + s + j] == "free" for j in range(count)):
                break
        else:
            c["rx_dropped_rbuf_full"] += 1
            return
        for j in range(count):
            self.state[p.first + s + j] = "waiting"
        p.hint = (s + count) % self.elements
        c["rx_frames"] += 1
        c["in_use"] += count
        c["high"] = max(c["high"], c["in_use"])
        frame = (index, p.first + s, count, length, arrival)
        threads = self.threads.setdefault(p.freelist, deque())
        if threads:
            self._pair(frame, threads.popleft())
        else:
            self.frames.setdefault(p.freelist, deque()).append(frame)
            p.waiting += 1
            c["waiting_high"] = max(c["waiting_high"], p.waiting)

    def advance(self, t: int) -> list[tuple[int, int, int, list[int], int, int]]:
        """Process everything due by t; return the autopushes delivered, in order."""
        out = []
        while True:
            arrivals = [(p.pending[0][0], i) for i, p in enumerate(self.ports) if p.pending]
            first_arrival = min(arrivals, default=None)
            first_push = min(self.pushes, default=None)
            if first_arrival and first_arrival[0] <= t and (
                    first_push is None or first_arrival[0] <= first_push[0]):
                self._arrive(first_arrival[1])
            elif first_push and first_push[0] <= t:
                self.pushes.remove(first_push)
                record = first_push[2]
                first, count = record[3][1] & 0xFFFF, record[3][1] >> 16
                for e in range(first, first + count):
                    self.state[e] = "handed"
                out.append(record)
            else:
                break
        self.now = max(self.now, t)
        return out
