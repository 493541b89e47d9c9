"""Control-plane programming of the RSS microblock (microblocks/rss.mbl, docs/steering.md):
the 40-byte Toeplitz key expanded into per-byte tables, the hashed fields per packet type,
and the 128-entry indirection table.

The writer is anything with `region(name)` (a writable word view of a memory) and
`write(name, index, value)`, such as `npkit.compiler.mbl.NativeProgram`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Protocol

import numpy as np

from npkit.base.errors import NpkitError

# Microsoft's default RSS key ("Verifying the RSS hash calculation"; FACTS.md 1b).
MICROSOFT_KEY = bytes.fromhex(
    "6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
KEY_BYTES = 40
INPUT_BYTES = 36  # IPv6 source + destination address + two ports
RETA_SIZE = 128

ADDRS = 1  # hash the address pair
PORTS = 2  # hash the port pair (TCP/UDP types only)


class PacketType(IntEnum):
    """The index of a packet type in rss_fields (constants RSS_* of rss.mbl)."""

    IPV4_TCP = 0
    IPV4_UDP = 1
    IPV4_OTHER = 2
    IPV6_TCP = 3
    IPV6_UDP = 4
    IPV6_OTHER = 5


# Microsoft's hash types: 4-tuple for TCP (and here UDP), address pair otherwise.
DEFAULT_FIELDS: dict[PacketType, int] = {
    PacketType.IPV4_TCP: ADDRS | PORTS, PacketType.IPV4_UDP: ADDRS | PORTS,
    PacketType.IPV4_OTHER: ADDRS, PacketType.IPV6_TCP: ADDRS | PORTS,
    PacketType.IPV6_UDP: ADDRS | PORTS, PacketType.IPV6_OTHER: ADDRS,
}


class RssError(NpkitError):
    """A bad RSS configuration (key length, field bits, indirection table)."""


class MemoryWriter(Protocol):
    def region(self, name: str) -> np.ndarray: ...
    def write(self, name: str, index: int, value: int) -> None: ...


def toeplitz(data: bytes, key: bytes = MICROSOFT_KEY) -> int:
    """The Toeplitz hash of data (bit i of the input selects the 32-bit key window that starts
    at key bit i), written from the Microsoft RSS specification."""
    k = int.from_bytes(key, "big")
    kbits = len(key) * 8
    if len(data) + 4 > len(key):
        raise RssError(f"{len(data)} input bytes need a key of {len(data) + 4} bytes")
    result = 0
    for i in range(len(data) * 8):
        if data[i // 8] >> (7 - i % 8) & 1:
            result ^= (k >> (kbits - 32 - i)) & 0xFFFFFFFF
    return result


def key_table(key: bytes = MICROSOFT_KEY) -> np.ndarray:
    """rss_key_table's words: entry pos * 256 + v is the hash of byte v at input position pos
    (the 32-bit key window of each of its bits XORed), for the 36 positions."""
    if len(key) != KEY_BYTES:
        raise RssError(f"an RSS key has {KEY_BYTES} bytes, not {len(key)}")
    k = int.from_bytes(key, "big")
    table = np.zeros(INPUT_BYTES * 256, dtype=np.uint32)
    for pos in range(INPUT_BYTES):
        windows = [(k >> (KEY_BYTES * 8 - 32 - (pos * 8 + b))) & 0xFFFFFFFF for b in range(8)]
        for v in range(256):
            h = 0
            for b in range(8):
                if v >> (7 - b) & 1:
                    h ^= windows[b]
            table[pos * 256 + v] = h
    return table


def spread_reta(queues: int) -> list[int]:
    """The usual indirection table: entry i -> queue i mod queues."""
    if not 1 <= queues <= 256:
        raise RssError(f"{queues} queues: 1..256")
    return [i % queues for i in range(RETA_SIZE)]


def program_rss(target: MemoryWriter, key: bytes = MICROSOFT_KEY,
                fields: Mapping[PacketType, int] | None = None,
                reta: Sequence[int] | None = None) -> None:
    """Write the key tables, the field selection per packet type and the indirection table
    (default: DEFAULT_FIELDS, and all 128 entries to queue 0)."""
    table = key_table(key)
    target.region("rss_key_table")[:len(table)] = table
    chosen = DEFAULT_FIELDS if fields is None else fields
    for ptype in PacketType:
        bits = chosen.get(ptype, 0)
        if bits & ~(ADDRS | PORTS):
            raise RssError(f"field bits {bits:#x} for {ptype.name}: only ADDRS | PORTS")
        target.write("rss_fields", int(ptype), bits)
    set_reta(target, reta if reta is not None else [0] * RETA_SIZE)


def set_reta(target: MemoryWriter, reta: Sequence[int]) -> None:
    """Rewrite the indirection table (live: each entry is one word write)."""
    if len(reta) != RETA_SIZE or not all(0 <= q <= 255 for q in reta):
        raise RssError(f"an indirection table has {RETA_SIZE} entries of queues 0..255")
    for i, q in enumerate(reta):
        target.write("rss_reta", i, q)
