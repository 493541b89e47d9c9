"""npkit.base.packetfile: captures written by scapy (pcap, nanosecond pcap, big-endian pcap,
pcapng) read back identically; what PcapWriter writes is read identically by scapy; bad
files raise PacketFileError naming the file and what is wrong."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import PcapNgWriter, rdpcap, wrpcap
from scapy.utils import PcapWriter as ScapyPcapWriter

from npkit.base.errors import NpkitError
from npkit.base.packetfile import PacketFileError, PacketRecord, PcapWriter, read_packets


def frames(count: int) -> list[Ether]:
    out = []
    for i in range(count):
        packet = Ether() / IP(dst=f"198.18.0.{i + 1}") / UDP(dport=1000 + i) / bytes(i * 7)
        packet.time = Decimal(1_700_000_000) + Decimal(i) / 8  # exact in binary and decimal
        out.append(packet)
    return out


def assert_same(records: list[PacketRecord], packets: list[Ether]) -> None:
    assert [r.data for r in records] == [bytes(p) for p in packets]
    assert [r.time_s for r in records] == pytest.approx([float(p.time) for p in packets],
                                                        abs=1e-6)


def test_pcap_written_by_scapy(tmp_path):
    path = tmp_path / "in.pcap"
    packets = frames(5)
    wrpcap(str(path), packets)
    assert_same(list(read_packets(path)), packets)


@pytest.mark.parametrize("endian", ["<", ">"])
def test_nanosecond_pcap_either_byte_order(tmp_path, endian):
    path = tmp_path / "in.pcap"
    packets = frames(4)
    with ScapyPcapWriter(str(path), nano=True, endianness=endian) as writer:
        writer.write(packets)
    assert_same(list(read_packets(path)), packets)


def test_pcapng_written_by_scapy(tmp_path):
    path = tmp_path / "in.pcapng"
    packets = frames(6)
    with PcapNgWriter(str(path)) as writer:
        for packet in packets:
            writer.write(packet)
    records = list(read_packets(path))
    assert_same(records, packets)
    time_s, data = records[2]  # a record unpacks like a tuple
    assert (time_s, data) == (float(packets[2].time), bytes(packets[2]))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=1600),
                          st.integers(0, 2**32 * 10**9 - 1)), max_size=8))
def test_pcap_writer_read_by_scapy_and_by_us(tmp_path, records):
    path = tmp_path / "out.pcap"
    with PcapWriter(path) as writer:
        for data, time_ns in records:
            writer.write_ns(data, time_ns)
    assert writer.written == len(records)
    theirs = rdpcap(str(path))
    assert [bytes(p) for p in theirs] == [data for data, _ in records]
    assert [int(p.time * 10**9) for p in theirs] == [t for _, t in records]
    ours = list(read_packets(path))
    assert [r.data for r in ours] == [data for data, _ in records]


def test_write_in_seconds(tmp_path):
    path = tmp_path / "out.pcap"
    with PcapWriter(path) as writer:
        writer.write(b"\x01" * 60, 1.5)
        writer.write(b"\x02" * 60)
    assert [(float(p.time), bytes(p)) for p in rdpcap(str(path))] == \
        [(1.5, b"\x01" * 60), (0.0, b"\x02" * 60)]


def test_an_empty_writer_leaves_a_valid_capture(tmp_path):
    path = tmp_path / "empty.pcap"
    PcapWriter(path).close()
    assert list(read_packets(path)) == []
    assert len(rdpcap(str(path))) == 0


def test_writer_errors(tmp_path):
    with pytest.raises(PacketFileError, match="cannot write"):
        PcapWriter(tmp_path / "no" / "out.pcap")
    writer = PcapWriter(tmp_path / "out.pcap")
    with pytest.raises(PacketFileError, match="negative timestamp"):
        writer.write_ns(b"x", -1)
    writer.close()
    with pytest.raises(PacketFileError, match="already closed"):
        writer.write(b"x")


def test_error_is_a_user_error():
    assert issubclass(PacketFileError, NpkitError)


def test_missing_file(tmp_path):
    path = tmp_path / "absent.pcap"
    with pytest.raises(PacketFileError, match=rf"{path}: cannot open packet file"):
        list(read_packets(path))


def test_not_a_capture(tmp_path):
    path = tmp_path / "routes.txt"
    path.write_text("10.0.0.0/8 1\n" * 10)
    with pytest.raises(PacketFileError, match=rf"{path}: not a pcap or pcapng file"):
        list(read_packets(path))


def test_truncated_pcap_names_the_record(tmp_path):
    path = tmp_path / "cut.pcap"
    wrpcap(str(path), frames(3))
    path.write_bytes(path.read_bytes()[:-5])
    records = read_packets(path)
    assert len(next(records).data) > 0 and len(next(records).data) > 0
    with pytest.raises(PacketFileError, match=rf"{path}: record 3: truncated packet data"):
        next(records)


def test_short_file_header(tmp_path):
    path = tmp_path / "short.pcap"
    path.write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00")
    with pytest.raises(PacketFileError, match="truncated pcap file header"):
        list(read_packets(path))


def test_truncated_pcapng_names_the_record(tmp_path):
    path = tmp_path / "cut.pcapng"
    with PcapNgWriter(str(path)) as writer:
        for packet in frames(3):
            writer.write(packet)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(PacketFileError, match=rf"{path}: record 3: truncated or corrupt pcapng"):
        list(read_packets(path))
