"""The `port_table` array of microblocks/router_common.mbl: what the data plane knows of
each receive port.

ipv4_fwd / ipv6_fwd read the arrival port's record once per packet: a unicast frame whose
destination MAC is not the port's is dropped (`other_host`), as an Ethernet interface's
address filter drops it; an IPv4 packet from the port's (first) subnet whose next hop is
on the same port goes to the slow path for an ICMP Redirect.  A port without a record
(MAC 0, mask 0) accepts every destination and redirects nothing, so a program run without
a router config forwards as before.

Layout (port_t, MSB first): word 0 = MAC bits 47..16, word 1 = MAC bits 15..0 << 16 |
the FCS bytes its frames lack (fcs_absent), word 2 = the IPv4 subnet's network address,
word 3 = its mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from npkit.runtime.neighbours import NeighbourError, Writer

PORT_WORDS = 4          # port_t: 48 + 16 + 32 + 32 bits


@dataclass(frozen=True)
class PortRecord:
    mac: int = 0
    fcs_absent: int = 0     # FCS bytes the port's frames lack: 4 for pcaps, 0 with an FCS
    net4: int = 0           # the subnet whose hosts get redirects, with
    mask4: int = 0          # its mask (0: none)

    def words(self) -> tuple[int, int, int, int]:
        return (self.mac >> 16, (self.mac & 0xFFFF) << 16 | self.fcs_absent, self.net4,
                self.mask4)


class PortTable:
    """Writes port records into the program's `port_table` words (and through `writer`,
    for a target that replays table writes in simulated time).  `words` None: the program
    has no port table (it checks no MACs); every call is then a no-op."""

    MEMORY = "port_table"

    def __init__(self, words: np.ndarray | None, writer: Writer | None = None) -> None:
        if words is not None and len(words) % PORT_WORDS:
            raise NeighbourError(f"the {self.MEMORY} memory has {len(words)} words, not a "
                                 f"multiple of {PORT_WORDS}")
        self.words = words
        self.writer = writer
        self.size = 0 if words is None else len(words) // PORT_WORDS

    def set(self, port: int, record: PortRecord) -> None:
        """Port `port`'s record (PortRecord(): accept every destination, no redirects)."""
        if self.words is None:
            return
        if not 0 <= port < self.size:
            raise NeighbourError(f"port {port}: the {self.MEMORY} memory holds ports "
                                 f"0..{self.size - 1}")
        new = record.words()
        base = port * PORT_WORDS
        if tuple(int(w) for w in self.words[base:base + PORT_WORDS]) != new:
            self._write(base, new)

    def clear(self, port: int) -> None:
        self.set(port, PortRecord())

    def get(self, port: int) -> PortRecord:
        """`port`'s record as the words hold it."""
        if self.words is None or not 0 <= port < self.size:
            return PortRecord()
        w0, w1, net4, mask4 = (int(w) for w in
                               self.words[port * PORT_WORDS:(port + 1) * PORT_WORDS])
        return PortRecord(w0 << 16 | w1 >> 16, w1 & 0xFFFF, net4, mask4)

    def _write(self, word_index: int, values: Sequence[int]) -> None:
        assert self.words is not None
        self.words[word_index:word_index + len(values)] = values
        if self.writer is not None:
            self.writer(self.MEMORY, word_index, list(values))
