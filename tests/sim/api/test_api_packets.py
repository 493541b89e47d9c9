"""Packet sources and sinks against scapy as the independent reference."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap, wrpcapng

from npkit.sim import (
    Generator,
    ListSink,
    PacketFileError,
    PcapSink,
    PcapSource,
    TxFrame,
    parse_tag,
    read_packets,
)


def _scapy_frames(n: int) -> list:
    frames = []
    for i in range(n):
        pkt = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
               / IP(src="10.0.0.1", dst=f"10.0.1.{i}") / UDP(sport=7, dport=9)
               / Raw(bytes([i]) * (10 + 37 * i)))
        pkt.time = 1_700_000_000 + i * 0.25
        frames.append(pkt)
    return frames


@pytest.fixture
def scapy_pcap(tmp_path: Path) -> tuple[Path, list]:
    frames = _scapy_frames(5)
    path = tmp_path / "in.pcap"
    wrpcap(str(path), frames)
    return path, frames


def test_pcap_source_reads_scapy_pcap(scapy_pcap: tuple[Path, list]) -> None:
    path, frames = scapy_pcap
    got = list(PcapSource(path).frames())
    assert [f.data for f in got] == [bytes(p) for p in frames]
    assert all(f.time_s is None for f in got)  # line pacing
    assert PcapSource(path).count() == 5


def test_timestamp_pacing_is_relative_to_first(scapy_pcap: tuple[Path, list]) -> None:
    path, _ = scapy_pcap
    times = [f.time_s for f in PcapSource(path, pace="timestamps").frames()]
    assert times == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])


def test_pcapng_from_scapy(tmp_path: Path) -> None:
    frames = _scapy_frames(4)
    path = tmp_path / "in.pcapng"
    wrpcapng(str(path), frames)
    got = list(PcapSource(path, pace="timestamps").frames())
    assert [f.data for f in got] == [bytes(p) for p in frames]
    assert [f.time_s for f in got] == pytest.approx([0.0, 0.25, 0.5, 0.75], abs=1e-6)


def test_truncated_packet_data_names_file_and_record(scapy_pcap: tuple[Path, list]) -> None:
    path, _ = scapy_pcap
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    with pytest.raises(PacketFileError, match=rf"{path}: record 5: truncated packet data"):
        list(PcapSource(path).frames())


def test_truncated_record_header(scapy_pcap: tuple[Path, list]) -> None:
    path, frames = scapy_pcap
    # keep file header + first record + 6 bytes of the second record's header
    first = 24 + 16 + len(bytes(frames[0]))
    path.write_bytes(path.read_bytes()[:first + 6])
    with pytest.raises(PacketFileError, match=r"record 2: truncated record header"):
        list(read_packets(path))


def test_corrupt_record_length(scapy_pcap: tuple[Path, list]) -> None:
    path, frames = scapy_pcap
    data = bytearray(path.read_bytes())
    second = 24 + 16 + len(bytes(frames[0]))
    struct.pack_into("<I", data, second + 8, 0x7FFFFFFF)  # caplen of record 2
    path.write_bytes(bytes(data))
    with pytest.raises(PacketFileError, match=r"record 2: corrupt record header"):
        list(read_packets(path))


@pytest.mark.parametrize(("content", "message"), [
    (b"", "truncated pcap file header"),
    (b"\xd4\xc3\xb2", "truncated pcap file header"),
    (b"GIF89a" + bytes(40), "not a pcap or pcapng file"),
])
def test_not_a_pcap(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.pcap"
    path.write_bytes(content)
    with pytest.raises(PacketFileError, match=message):
        list(read_packets(path))


def test_truncated_pcapng(tmp_path: Path) -> None:
    path = tmp_path / "in.pcapng"
    wrpcapng(str(path), _scapy_frames(3))
    path.write_bytes(path.read_bytes()[:-9])
    with pytest.raises(PacketFileError, match=rf"{path}: record 3"):
        list(read_packets(path))


def test_missing_file_and_bad_pace(tmp_path: Path) -> None:
    with pytest.raises(PacketFileError, match="no such packet file"):
        PcapSource(tmp_path / "nope.pcap")
    (tmp_path / "a.pcap").write_bytes(b"")
    with pytest.raises(PacketFileError, match="pace must be"):
        PcapSource(tmp_path / "a.pcap", pace="fast")


# ---------------------------------------------------------------- sink
def test_pcap_sink_round_trip_through_scapy(tmp_path: Path) -> None:
    path = tmp_path / "out.pcap"
    sink = PcapSink(path)
    frames = [bytes(p) for p in _scapy_frames(3)]
    times_ns = [1_234, 2_000_000_001, 3_500_000_000]
    for i, (data, t) in enumerate(zip(frames, times_ns, strict=True)):
        sink.write(TxFrame(i % 2, 0, 0, data, t))
    sink.close()
    sink.close()  # closing twice is harmless and keeps the data
    packets = rdpcap(str(path))
    assert [bytes(p) for p in packets] == frames
    # scapy keeps pcap timestamps as exact decimals: compare in integer nanoseconds
    assert [int(p.time * 10**9) for p in packets] == times_ns


def test_empty_sink_leaves_valid_pcap(tmp_path: Path) -> None:
    path = tmp_path / "empty.pcap"
    PcapSink(path).close()
    assert len(rdpcap(str(path))) == 0
    assert list(read_packets(path)) == []


def test_sink_in_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(PacketFileError, match="cannot write"):
        PcapSink(tmp_path / "no" / "out.pcap")


def test_list_sink_keeps_frames() -> None:
    sink = ListSink()
    frame = TxFrame(1, 10, 20, b"abc", 14)
    sink.write(frame)
    assert sink.frames == [frame]
    assert frame.time_s == pytest.approx(14e-9)


# ---------------------------------------------------------------- generator
def _check_frame_with_scapy(frame: bytes, size: int, fcs: bool) -> Ether:
    assert len(frame) == (size if fcs else size - 4)
    body = frame[:-4] if fcs else frame
    if fcs:
        assert struct.unpack("<I", frame[-4:])[0] == zlib.crc32(body)
    pkt = Ether(body)
    assert pkt.type == 0x0800 and IP in pkt and UDP in pkt
    ip = pkt[IP]
    assert ip.len == len(body) - 14
    assert ip.ihl == 5 and ip.ttl == 64 and ip.proto == 17
    rebuilt = IP(bytes(ip))
    del rebuilt.chksum
    assert IP(bytes(rebuilt)).chksum == ip.chksum  # scapy recomputes the same checksum
    assert pkt[UDP].len == ip.len - 20
    return pkt


def test_generator_frames_parse_with_scapy() -> None:
    gen = Generator(sizes=(64, 1518), count=20, seed=3, flows=4, stream=7,
                    src_ip="198.18.0.9", dst_ip="198.19.1.2")
    for seq, rx in enumerate(gen.frames()):
        size = len(rx.data)
        assert size in (64, 1518)
        pkt = _check_frame_with_scapy(rx.data, size, fcs=True)
        assert pkt[IP].src == "198.18.0.9" and pkt[IP].dst == "198.19.1.2"
        assert pkt.src == "02:00:00:00:00:01" and pkt.dst == "02:00:00:00:00:02"
        assert pkt[UDP].sport == 1024 + seq % 4
        assert parse_tag(rx.data) == (7, seq)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(min_value=64, max_value=9600), fcs=st.booleans(),
       seq=st.integers(min_value=0, max_value=2**32 - 1))
def test_generator_any_size(size: int, fcs: bool, seq: int) -> None:
    frame = Generator(sizes=size, fcs=fcs).frame(seq, size)
    _check_frame_with_scapy(frame, size, fcs)
    assert parse_tag(frame) == (0, seq)


def test_generator_is_deterministic_per_seed() -> None:
    def sizes(seed: int) -> list[int]:
        return [len(f.data) for f in Generator(sizes=(64, 128, 256), count=50,
                                                seed=seed).frames()]
    assert sizes(1) == sizes(1)
    assert sizes(1) != sizes(2)
    assert set(sizes(1)) == {64, 128, 256}


def test_generator_weights_and_errors() -> None:
    only_big = [len(f.data) for f in Generator(sizes=(64, 512), weights=(0, 1), count=10)
                .frames()]
    assert only_big == [512] * 10
    with pytest.raises(ValueError, match="out of range"):
        Generator(sizes=(20,))
    with pytest.raises(ValueError, match="bad MAC"):
        Generator(src_mac="zz")
    with pytest.raises(ValueError, match="bad IPv4 address '198.18.0'"):
        Generator(dst_ip="198.18.0")


def test_parse_tag_ignores_other_frames() -> None:
    assert parse_tag(bytes(Ether() / IP() / UDP() / Raw(b"hello world"))) is None
    assert parse_tag(b"short") is None


def test_generator_pacing_below_line_rate() -> None:
    gen = Generator(sizes=(64, 1518), count=30, seed=4, pace_bps=5e9)
    frames = list(gen.frames())
    assert frames[0].time_s == 0.0
    for a, b in zip(frames, frames[1:], strict=False):
        # the next frame starts when the previous one would have left a 5 Gb/s line
        assert b.time_s - a.time_s == pytest.approx((len(a.data) + 20) * 8 / 5e9)
    assert all(f.time_s is None for f in Generator(count=3).frames())


@settings(max_examples=25, deadline=None)
@given(frames=st.lists(st.tuples(st.binary(min_size=1, max_size=300),
                                 st.integers(min_value=0, max_value=10**12)),
                       min_size=0, max_size=8))
def test_sink_then_source_round_trip(tmp_path_factory: pytest.TempPathFactory,
                                     frames: list[tuple[bytes, int]]) -> None:
    path = tmp_path_factory.mktemp("rt") / "x.pcap"
    sink = PcapSink(path)
    for data, t_ns in frames:
        sink.write(TxFrame(0, 0, 0, data, t_ns))
    sink.close()
    # scapy (independent reader) sees the same bytes and nanosecond times
    assert [(bytes(p), int(p.time * 10**9)) for p in rdpcap(str(path))] == frames
    got = list(PcapSource(path, pace="timestamps").frames())
    assert [f.data for f in got] == [d for d, _ in frames]
    if frames:
        first = frames[0][1]
        assert [f.time_s for f in got] == pytest.approx(
            [max(0.0, (t - first) / 1e9) for _, t in frames], abs=1e-9)
