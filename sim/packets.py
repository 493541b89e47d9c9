"""Packet sources and sinks for the simulated ports.

A *source* yields ``RxFrame`` objects (bytes plus, when paced by timestamps, the time the
frame may start arriving); the chip feeds them into the core a chunk at a time.  A *sink*
receives every transmitted ``TxFrame`` with its simulated departure time.

Sources: ``PcapSource`` (pcap or pcapng, read by ``npkit.base.packetfile``), ``Generator``
(built-in Ethernet/IPv4/UDP frames), ``ListSource``.  Sinks: ``PcapSink``, ``ListSink``.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from npkit.base.headers import ipv4_header
from npkit.base.packetfile import (
    LINKTYPE_ETHERNET,
    PacketFileError,
    PcapWriter,
    read_packets,
)


@dataclass(frozen=True)
class RxFrame:
    """A frame offered to a port.  ``time_s`` is None for back-to-back at line rate."""

    data: bytes
    time_s: float | None = None


@dataclass(frozen=True)
class TxFrame:
    """A frame that left a port, with the simulated times of its first and last bit."""

    port: int
    first_bit_cycle: int
    last_bit_cycle: int
    data: bytes
    time_ns: int  # last bit, in nanoseconds of simulated time

    @property
    def time_s(self) -> float:
        return self.time_ns / 1e9


class Source(Protocol):
    def frames(self) -> Iterator[RxFrame]: ...


class Sink(Protocol):
    def write(self, frame: TxFrame) -> None: ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------- sources
@dataclass
class PcapSource:
    """Frames from a pcap/pcapng file.

    ``pace="line"`` sends them back to back at the port's line rate; ``"timestamps"``
    replays the capture's timing: a frame does not start arriving before its timestamp
    (relative to the first record).  The file is read lazily, frame by frame.
    """

    path: str | Path
    pace: str = "line"

    def __post_init__(self) -> None:
        if self.pace not in ("line", "timestamps"):
            raise PacketFileError(f"pace must be 'line' or 'timestamps', got {self.pace!r}")
        if not Path(self.path).is_file():
            raise PacketFileError(f"{self.path}: no such packet file")

    def frames(self) -> Iterator[RxFrame]:
        first: float | None = None
        for ts, data in read_packets(self.path):
            if self.pace == "line":
                yield RxFrame(data)
                continue
            first = ts if first is None else first
            yield RxFrame(data, max(0.0, ts - first))

    def count(self) -> int:
        """Number of records (reads the whole file)."""
        return sum(1 for _ in read_packets(self.path))


@dataclass
class ListSource:
    """Frames from memory (tests, scripted traffic)."""

    items: Sequence[bytes | RxFrame]

    def frames(self) -> Iterator[RxFrame]:
        for item in self.items:
            yield item if isinstance(item, RxFrame) else RxFrame(bytes(item))

    def count(self) -> int:
        return len(self.items)


# --------------------------------------------------------------------------- generator
ETH_HEADER = 14
IPV4_HEADER = 20
UDP_HEADER = 8
TAG_BYTES = 8  # b"NP" + stream id (2 bytes) + sequence number (4 bytes)
TAG_MAGIC = b"NP"
FCS_BYTES = 4
FILLER = bytes(range(256)) * 40  # payload bytes: (seq + i) & 0xFF, sliced, never rebuilt


def _mac_bytes(mac: str) -> bytes:
    parts = mac.split(":")
    if len(parts) != 6:
        raise ValueError(f"bad MAC address {mac!r}: expected six hex bytes like 02:00:00:00:00:01")
    try:
        return bytes(int(p, 16) for p in parts)
    except ValueError:
        raise ValueError(f"bad MAC address {mac!r}") from None


def _ipv4_bytes(address: str) -> bytes:
    parts = address.split(".")
    try:
        if len(parts) == 4 and all(0 <= int(p) <= 255 for p in parts):
            return bytes(int(p) for p in parts)
    except ValueError:
        pass
    raise ValueError(f"bad IPv4 address {address!r}: expected a dotted quad like 198.18.0.1")


def parse_tag(frame: bytes) -> tuple[int, int] | None:
    """(stream, sequence) of a frame made by ``Generator``, or None for any other frame."""
    offset = ETH_HEADER + IPV4_HEADER + UDP_HEADER
    tag = frame[offset:offset + TAG_BYTES]
    if len(tag) < TAG_BYTES or tag[:2] != TAG_MAGIC:
        return None
    stream, seq = struct.unpack("!HI", tag[2:])
    return stream, seq


@dataclass
class Generator:
    """Valid Ethernet II / IPv4 / UDP frames of the given sizes.

    ``sizes`` are frame sizes on the wire *including* the 4-byte FCS (RFC 2544 sizes: 64,
    128, ... 1518); with ``fcs=True`` (default) the frame bytes end with a correct CRC-32
    FCS so the line timing is exact, with ``fcs=False`` the FCS is left out (as most pcaps
    do).  Several sizes are drawn at random (seeded) with ``weights``.  Addresses come from
    the RFC 2544 test range 198.18.0.0/15; UDP ports vary over ``flows`` flows.  Each UDP
    payload starts with a tag (``stream``, sequence number) that ``parse_tag`` reads back,
    so a test can tell which frames arrived.
    """

    sizes: Sequence[int] | int = (64,)
    count: int = 100
    seed: int = 1
    weights: Sequence[float] | None = None
    src_mac: str = "02:00:00:00:00:01"
    dst_mac: str = "02:00:00:00:00:02"
    src_ip: str = "198.18.0.1"
    dst_ip: str = "198.19.0.1"
    flows: int = 1
    stream: int = 0
    fcs: bool = True
    times_s: Sequence[float] | None = None  # optional explicit start times (else line rate)
    pace_bps: float | None = None  # or: space frames as if sent at this rate (load < line)
    overhead_bytes: int = 20  # per-frame wire overhead used with pace_bps
    _sizes: tuple[int, ...] = field(init=False, repr=False)
    _eth: bytes = field(init=False, repr=False)  # header bytes, built once
    _src: int = field(init=False, repr=False)
    _dst: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._sizes = (self.sizes,) if isinstance(self.sizes, int) else tuple(self.sizes)
        smallest = ETH_HEADER + IPV4_HEADER + UDP_HEADER + TAG_BYTES + FCS_BYTES
        if not self._sizes:
            raise ValueError("Generator: sizes is empty")
        for size in self._sizes:
            if not smallest <= size <= 9600:
                raise ValueError(f"Generator: frame size {size} out of range {smallest}..9600")
        if self.pace_bps is not None and not self.pace_bps > 0:
            raise ValueError("Generator: pace_bps must be > 0")
        if self.weights is not None and len(self.weights) != len(self._sizes):
            raise ValueError("Generator: weights must have one entry per size")
        if self.count < 0 or self.flows < 1 or not 0 <= self.stream <= 0xFFFF:
            raise ValueError("Generator: count >= 0, flows >= 1, stream 0..65535")
        self._eth = _mac_bytes(self.dst_mac) + _mac_bytes(self.src_mac) + b"\x08\x00"
        self._src = int.from_bytes(_ipv4_bytes(self.src_ip), "big")
        self._dst = int.from_bytes(_ipv4_bytes(self.dst_ip), "big")

    def frames(self) -> Iterator[RxFrame]:
        rng = random.Random(self.seed)
        paced_s = 0.0
        for seq in range(self.count):
            size = self._pick_size(rng)
            time_s = None if self.times_s is None else float(self.times_s[seq])
            if self.pace_bps is not None:
                time_s = paced_s
                paced_s += (size + self.overhead_bytes) * 8 / self.pace_bps
            yield RxFrame(self.frame(seq, size), time_s)

    def _pick_size(self, rng: random.Random) -> int:
        if len(self._sizes) == 1:
            return self._sizes[0]
        return rng.choices(self._sizes, weights=self.weights)[0]

    def frame(self, seq: int, size: int) -> bytes:
        """Frame number ``seq`` of ``size`` bytes on the wire (FCS included)."""
        ip_len = size - FCS_BYTES - ETH_HEADER
        flow = seq % self.flows
        udp = struct.pack("!HHHH", 1024 + flow, 1024 + flow, ip_len - IPV4_HEADER, 0)
        tag = TAG_MAGIC + struct.pack("!HI", self.stream, seq)
        start = seq & 0xFF
        filler = FILLER[start:start + ip_len - IPV4_HEADER - UDP_HEADER - TAG_BYTES]
        ip = ipv4_header(self._src, self._dst, 17, ip_len - IPV4_HEADER, ident=seq)
        body = self._eth + ip + udp + tag + filler
        if not self.fcs:
            return body
        return body + struct.pack("<I", zlib.crc32(body))

    def total(self) -> int:
        return self.count


# --------------------------------------------------------------------------- sinks
@dataclass
class ListSink:
    """Keeps every transmitted frame in ``frames`` (tests, analysis)."""

    frames: list[TxFrame] = field(default_factory=list)

    def write(self, frame: TxFrame) -> None:
        self.frames.append(frame)

    def close(self) -> None:
        pass


class PcapSink:
    """Writes transmitted frames to a nanosecond pcap stamped with simulated time (the
    time of each frame's last bit).  The file is created at once, so an empty run still
    leaves a valid, empty pcap."""

    def __init__(self, path: str | Path, linktype: int = LINKTYPE_ETHERNET) -> None:
        self._writer = PcapWriter(path, linktype)
        self.path = self._writer.path

    @property
    def written(self) -> int:
        return self._writer.written

    def write(self, frame: TxFrame) -> None:
        self._writer.write_ns(frame.data, frame.time_ns)

    def close(self) -> None:
        self._writer.close()


def frames_of(items: Iterable[TxFrame], port: int | None = None) -> list[bytes]:
    """The bytes of the frames (optionally of one port), in order."""
    return [f.data for f in items if port is None or f.port == port]
