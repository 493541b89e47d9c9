"""Packet files: reading frames with their timestamps from pcap and pcapng, writing pcap.

The one place npkit reads or writes a capture (built on dpkt).  Reading is checked: a
truncated or corrupt file raises :class:`PacketFileError` naming the file, the record and
what is wrong, never a dpkt or struct exception.  Writing produces a nanosecond pcap, which
every tool reads and which keeps the simulator's timestamps exact.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, NamedTuple

import dpkt

from npkit.base.errors import NpkitError

PCAPNG_MAGIC = 0x0A0D0D0A
LINKTYPE_ETHERNET = 1
MAX_FRAME_BYTES = 65535


class PacketFileError(NpkitError):
    """A packet file is missing, unreadable, not a capture, truncated or corrupt."""


class PacketRecord(NamedTuple):
    """One captured frame: its timestamp in seconds and its bytes."""

    time_s: float
    data: bytes


def read_packets(path: str | Path) -> Iterator[PacketRecord]:
    """Every record of a pcap (microsecond or nanosecond, either byte order) or pcapng file,
    read lazily.  Raises :class:`PacketFileError` at the first ``next()`` for a file that
    cannot be opened, and at the record concerned for a truncated or corrupt one."""
    where = str(path)
    try:
        f = open(path, "rb")  # noqa: SIM115 -- closed by the with below, after the check
    except OSError as err:
        raise PacketFileError(f"{where}: cannot open packet file: {err.strerror}") from None
    with f:
        head = f.read(4)
        f.seek(0)
        if len(head) == 4 and struct.unpack("<I", head)[0] == PCAPNG_MAGIC:
            yield from _pcapng_records(f, where)
        else:
            yield from _pcap_records(f, where)


def _pcap_records(f: BinaryIO, where: str) -> Iterator[PacketRecord]:
    """Classic pcap records, checked: a short header or body names the record."""
    head = f.read(dpkt.pcap.FileHdr.__hdr_len__)
    if len(head) < dpkt.pcap.FileHdr.__hdr_len__:
        raise PacketFileError(f"{where}: truncated pcap file header ({len(head)} of "
                              f"{dpkt.pcap.FileHdr.__hdr_len__} bytes)")
    magic = dpkt.pcap.FileHdr(head).magic
    if magic not in dpkt.pcap.MAGIC_TO_PKT_HDR:
        raise PacketFileError(f"{where}: not a pcap or pcapng file (magic {magic:#010x})")
    nano = magic in (dpkt.pcap.TCPDUMP_MAGIC_NANO, dpkt.pcap.PMUDPCT_MAGIC_NANO)
    header_class = dpkt.pcap.MAGIC_TO_PKT_HDR[magic]
    header_len = header_class.__hdr_len__
    record = 0
    while True:
        record += 1
        buf = f.read(header_len)
        if not buf:
            return
        if len(buf) < header_len:
            raise PacketFileError(f"{where}: record {record}: truncated record header "
                                  f"({len(buf)} of {header_len} bytes)")
        hdr = header_class(buf)
        if hdr.caplen > MAX_FRAME_BYTES or hdr.caplen > hdr.len or hdr.caplen == 0:
            raise PacketFileError(f"{where}: record {record}: corrupt record header "
                                  f"(captured {hdr.caplen} bytes, original {hdr.len})")
        body = f.read(hdr.caplen)
        if len(body) < hdr.caplen:
            raise PacketFileError(f"{where}: record {record}: truncated packet data "
                                  f"({len(body)} of {hdr.caplen} bytes)")
        fraction = hdr.tv_usec / (1e9 if nano else 1e6)
        yield PacketRecord(hdr.tv_sec + fraction, body)


def _pcapng_records(f: BinaryIO, where: str) -> Iterator[PacketRecord]:
    try:
        reader = dpkt.pcapng.Reader(f)
    except (ValueError, dpkt.UnpackError, struct.error) as err:
        raise PacketFileError(f"{where}: corrupt pcapng section header: {err}") from None
    records = iter(reader)
    record = 0
    while True:
        record += 1
        try:
            ts, body = next(records)
        except StopIteration:
            return
        except (ValueError, dpkt.UnpackError, struct.error) as err:
            raise PacketFileError(f"{where}: record {record}: truncated or corrupt pcapng "
                                  f"block: {err or type(err).__name__}") from None
        if not body:
            raise PacketFileError(f"{where}: record {record}: empty packet")
        yield PacketRecord(float(ts), bytes(body))


class PcapWriter:
    """Writes a little-endian nanosecond pcap.  The file is created at once, so a writer
    closed without records leaves a valid, empty capture."""

    def __init__(self, path: str | Path, linktype: int = LINKTYPE_ETHERNET) -> None:
        self.path = Path(path)
        self.written = 0
        try:
            self._file: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 -- close()
        except OSError as err:
            raise PacketFileError(f"{self.path}: cannot write: {err.strerror}") from None
        header = dpkt.pcap.LEFileHdr(magic=dpkt.pcap.TCPDUMP_MAGIC_NANO,
                                     snaplen=MAX_FRAME_BYTES, linktype=linktype)
        self._file.write(bytes(header))

    def write(self, data: bytes, time_s: float = 0.0) -> None:
        """One record stamped ``time_s`` seconds (rounded to the nanosecond)."""
        self.write_ns(data, round(time_s * 1e9))

    def write_ns(self, data: bytes, time_ns: int) -> None:
        """One record stamped ``time_ns`` nanoseconds."""
        if self._file is None:
            raise PacketFileError(f"{self.path}: writer already closed")
        if time_ns < 0:
            raise PacketFileError(f"{self.path}: negative timestamp {time_ns} ns")
        sec, nsec = divmod(time_ns, 1_000_000_000)
        n = len(data)
        record = dpkt.pcap.LEPktHdr(tv_sec=sec, tv_usec=nsec, caplen=n, len=n)
        self._file.write(bytes(record) + bytes(data))
        self.written += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> PcapWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()
