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
# Status word layout, docs/media.md "Receive" (written out here on purpose: the test checks
# the model against the documented layout).  One status per mpacket (one RBUF element).
SOP = 1 << 24
EOP = 1 << 25


def default_partitions(ports: int) -> int:
    """docs/media.md, "RBUF partitions": one per port for 1, 2 or 4 ports, 4 for 3, else 1."""
    return max(ports, 1) if ports <= 2 else 4 if ports <= 4 else 1


@dataclass
class _RefFrame:
    length: int
    times: list[int]  # cycle each mpacket is complete in the RBUF (on the wire)
    next: int = 0
    ready: int = 0  # cycle the next mpacket is due (later than its wire time after a stall)


@dataclass
class _RefPort:
    rate: Fraction
    overhead: int
    freelist: int
    partition: int
    line_free: Fraction = Fraction(0)
    pending: deque[_RefFrame] = field(default_factory=deque)
    waiting: int = 0
    stalled: bool = False


class RxReference:
    """A separate, slow model of the receive side as docs/media.md specifies it."""

    def __init__(self, rbuf_bytes: int, element_bytes: int, latency: int,
                 ports: list[tuple[Fraction, int, int]], partitions: int = 0) -> None:
        self.eb = element_bytes
        self.latency = latency
        parts = partitions or default_partitions(len(ports))
        self.elements = rbuf_bytes // element_bytes // parts
        self.ports = [_RefPort(r, o, f, i % parts) for i, (r, o, f) in enumerate(ports)]
        self.free_list = [deque(range(k * self.elements, (k + 1) * self.elements))
                          for k in range(parts)]
        self.state = ["free"] * (self.elements * parts)
        self.owner = [0] * (self.elements * parts)
        self.frames: dict[int, deque[tuple[int, int, int, bool, bool, int]]] = {}
        self.threads: dict[int, deque[tuple[int, int, int, int, int]]] = {}
        self.pushes: list[tuple[int, int, tuple[int, int, int, list[int], int, int]]] = []
        self.seq = 0
        self.now = 0
        self.counters = [{"rx_frames": 0, "rx_dropped_rbuf_full": 0, "rx_dropped_too_long": 0,
                          "in_use": 0, "high": 0, "waiting_high": 0, "mpackets": 0,
                          "stalls": 0}
                         for _ in ports]

    def add(self, port: int, length: int) -> None:
        p = self.ports[port]
        start = max(p.line_free, Fraction(self.now))
        per_bit = CLOCK / p.rate
        p.line_free = start + Fraction((length + p.overhead) * 8) * per_bit
        count = -(-length // self.eb)
        times = [ceil(start + (k + 1) * self.eb * 8 * per_bit) for k in range(count - 1)]
        all_times = [*times, ceil(p.line_free)]
        p.pending.append(_RefFrame(length, all_times, 0, all_times[0]))

    def register(self, me: int, ctx: int, lst: int, xfer: int, sig: int, t: int) -> None:
        frames = self.frames.setdefault(lst, deque())
        if frames:
            mpacket = frames.popleft()
            self.ports[mpacket[0]].waiting -= 1
            self._pair(mpacket, (me, ctx, xfer, sig, t))
        else:
            self.threads.setdefault(lst, deque()).append((me, ctx, xfer, sig, t))

    def free(self, element: int) -> None:
        assert self.state[element] == "handed"
        self.state[element] = "free"
        partition = element // self.elements
        self.free_list[partition].append(element)
        self.counters[self.owner[element]]["in_use"] -= 1
        for p in self.ports:  # flow control released: stalled mpackets may go on now
            if p.stalled and p.partition == partition:
                p.stalled = False
                p.pending[0].ready = max(p.pending[0].ready, self.now)

    def _pair(self, mpacket: tuple[int, int, int, bool, bool, int],
              thread: tuple[int, int, int, int, int]) -> None:
        port, element, length, sop, eop, arrival = mpacket
        me, ctx, xfer, sig, since = thread
        when = max(arrival, since) + self.latency
        words = [length | port << 16 | (SOP if sop else 0) | (EOP if eop else 0),
                 element | 1 << 16]
        self.pushes.append((when, self.seq, (me, ctx, xfer, words, sig, when)))
        self.seq += 1

    def _pop(self, p: _RefPort, t: int) -> None:
        p.pending.popleft()
        if p.pending:
            p.pending[0].ready = max(p.pending[0].ready, t)

    def _arrive(self, index: int) -> None:
        p = self.ports[index]
        frame = p.pending[0]
        c = self.counters[index]
        count = len(frame.times)
        free = self.free_list[p.partition]
        k = frame.next
        if not free:  # SOP: the frame is dropped; later: flow control holds it
            if k == 0:
                c["rx_dropped_rbuf_full"] += 1
                self._pop(p, frame.ready)
            else:
                p.stalled = True
                c["stalls"] += 1
            return
        e = free.popleft()
        self.state[e] = "waiting"
        self.owner[e] = index
        c["in_use"] += 1
        c["high"] = max(c["high"], c["in_use"])
        now = frame.ready
        mpacket = (index, e, min(self.eb, frame.length - k * self.eb), k == 0,
                   k == count - 1, now)
        frame.next += 1
        if k == count - 1:
            c["rx_frames"] += 1
            self._pop(p, now)
        else:
            frame.ready = max(frame.times[k + 1], now)
        threads = self.threads.setdefault(p.freelist, deque())
        if threads:
            self._pair(mpacket, threads.popleft())
        else:
            self.frames.setdefault(p.freelist, deque()).append(mpacket)
            p.waiting += 1
            c["waiting_high"] = max(c["waiting_high"], p.waiting)

    def advance(self, t: int) -> list[tuple[int, int, int, list[int], int, int]]:
        """Process everything due by t; return the autopushes delivered, in order."""
        out = []
        while True:
            arrivals = [(p.pending[0].ready, i)
                        for i, p in enumerate(self.ports) if p.pending and not p.stalled]
            first_arrival = min(arrivals, default=None)
            first_push = min(self.pushes, default=None)
            if first_arrival and first_arrival[0] <= t and (
                    first_push is None or first_arrival[0] <= first_push[0]):
                self._arrive(first_arrival[1])
            elif first_push and first_push[0] <= t:
                self.pushes.remove(first_push)
                record = first_push[2]
                element = record[3][1] & 0xFFFF
                self.state[element] = "handed"
                self.counters[record[3][0] >> 16 & 0xFF]["mpackets"] += 1
                out.append(record)
            else:
                break
        self.now = max(self.now, t)
        return out
