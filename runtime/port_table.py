"""The `port_table` array of microblocks/router_common.mbl: what the data plane knows of
each receive port.

ipv4_fwd / ipv6_fwd read the arrival port's record once per packet: a unicast frame whose
destination MAC is not the port's is dropped (`other_host`), as an Ethernet interface's
address filter drops it.  A port without a record (MAC 0) accepts every destination, so
a program run without a router config forwards as before.

Layout (port_t, MSB first): word 0 = MAC bits 47..16, word 1 = MAC bits 15..0 << 16 |
the 16-bit flags field.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npkit.runtime.neighbours import NeighbourError, Writer

PORT_WORDS = 2          # port_t: 48 + 16 bits


def pack_port(mac: int, flags: int = 0) -> tuple[int, int]:
    return mac >> 16, (mac & 0xFFFF) << 16 | flags


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

    def set(self, port: int, mac: int, flags: int = 0) -> None:
        """Port `port`'s record: its MAC (0: accept every destination) and flags."""
        if self.words is None:
            return
        if not 0 <= port < self.size:
            raise NeighbourError(f"port {port}: the {self.MEMORY} memory holds ports "
                                 f"0..{self.size - 1}")
        new = pack_port(mac, flags)
        base = port * PORT_WORDS
        if tuple(int(w) for w in self.words[base:base + PORT_WORDS]) != new:
            self._write(base, new)

    def clear(self, port: int) -> None:
        self.set(port, 0, 0)

    def get(self, port: int) -> tuple[int, int]:
        """(MAC, flags) of `port` as the words hold them."""
        if self.words is None or not 0 <= port < self.size:
            return 0, 0
        w0, w1 = (int(w) for w in self.words[port * PORT_WORDS:(port + 1) * PORT_WORDS])
        return w0 << 16 | w1 >> 16, w1 & 0xFFFF

    def _write(self, word_index: int, values: Sequence[int]) -> None:
        assert self.words is not None
        self.words[word_index:word_index + len(values)] = values
        if self.writer is not None:
            self.writer(self.MEMORY, word_index, list(values))
