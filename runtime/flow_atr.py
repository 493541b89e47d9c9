"""ATR, Flow Director's learning mode: filters learned from transmitted packets (FACTS.md §3:
"ATR mode learns filters from transmitted packets"; docs/steering.md).

When a core transmits a TCP or UDP packet over IPv4, the flow's *receive* direction (the
packet's 4-tuple reversed: its destination is the remote end, which sends the replies) gets
a perfect-match filter to that core's queue, through the control plane
(``FlowDirector.insert``: a new filter, or the existing one's queue changed in place when the
flow moved to another core).  A packet that is not IPv4 TCP/UDP, or an IPv4 fragment, teaches
nothing (the filters are IPv4 only, and a fragment's ports are not all there).  A filter
whose bucket is full is not learned (``refused`` counts those); its flow stays on RSS.

``sample_every``: learn from every n-th transmitted TCP/UDP packet (1: every one).  The
82599's driver samples transmitted packets; its rate is not in FACTS.md, so it is a
parameter here [U], default 1.

On the NIC this happens in hardware on the transmit path; here it is the host's (native
runner or control plane next to the chip) part: ``transmitted(frame, queue)`` per packet a
core sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from npkit.runtime.flow_director import L4, Action, FlowDirector, FlowDirectorError, FlowKey

ETHERTYPE_IPV4 = 0x0800
ETH_HEADER = 14
PROTOCOLS = {6: L4.TCP, 17: L4.UDP}


def receive_key(frame: bytes) -> FlowKey | None:
    """The filter key of the replies to an Ethernet + IPv4 + TCP/UDP ``frame`` (addresses
    and ports swapped); None for anything else (not IPv4, other protocols, fragments, a
    header cut short)."""
    if len(frame) < ETH_HEADER + 20 or int.from_bytes(frame[12:14], "big") != ETHERTYPE_IPV4:
        return None
    ip = frame[ETH_HEADER:]
    header = (ip[0] & 0xF) * 4
    if ip[0] >> 4 != 4 or header < 20 or len(ip) < header + 4:
        return None
    l4 = PROTOCOLS.get(ip[9])
    fragment = int.from_bytes(ip[6:8], "big") & 0x3FFF  # MF or an offset
    if l4 is None or fragment:
        return None
    src, dst = int.from_bytes(ip[12:16], "big"), int.from_bytes(ip[16:20], "big")
    sport = int.from_bytes(ip[header:header + 2], "big")
    dport = int.from_bytes(ip[header + 2:header + 4], "big")
    return FlowKey(dst, src, dport, sport, l4)


@dataclass
class AtrLearner:
    """Learns Flow Director filters from the packets the cores transmit."""

    table: FlowDirector
    sample_every: int = 1
    learned: int = 0  # inserts and in-place changes made
    refused: int = 0  # learning attempts whose bucket was full
    _candidates: int = 0  # TCP/UDP IPv4 packets seen (the sampling counts these)
    _queues: dict[tuple[int, ...], int] = field(default_factory=dict)  # what it taught


    def __post_init__(self) -> None:
        if self.sample_every < 1:
            raise FlowDirectorError(f"sample_every {self.sample_every}: at least 1")

    def transmitted(self, frame: bytes, queue: int) -> bool:
        """A core whose receive queue is ``queue`` sent ``frame``; True if a filter was
        learned (or changed) from it.  A filter it taught that already sends the flow to
        ``queue`` is left alone."""
        key = receive_key(frame)
        if key is None:
            return False
        self._candidates += 1
        if (self._candidates - 1) % self.sample_every:
            return False
        words = key.words()
        if key in self.table and self._queues.get(words) == queue:
            return False  # already there: rewriting it would only take it away a moment
        try:
            self.table.insert(key, Action(queue=queue))
        except FlowDirectorError:
            self.refused += 1
            return False
        self._queues[words] = queue
        self.learned += 1
        return True
