"""The analyzer against injected faults: a router written here with scapy forwards the
tester's traffic perfectly, then a random fault plan (hypothesis) loses, duplicates,
reorders, corrupts (a flipped payload bit; a wrong TTL / hop limit), misroutes frames and
adds foreign ones; every count must equal the plan exactly."""

from __future__ import annotations

import functools
import random
from collections import Counter
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.bench.tester import (
    Analyzer,
    RouteReference,
    RxRecord,
    Sizes,
    Stream,
    TxRecord,
    generate,
    pick_destinations,
)
from npkit.runtime.routes import committed_histogram, generate_routes

PORTS = {p: "10gbe" for p in range(4)}
DELAY_PS = 4_000_000  # the model router's first-bit-in to last-bit-out latency


def out_port(next_hop: int) -> int:
    return next_hop % 4


def out_macs(next_hop: int) -> tuple[str, str]:
    return f"02:00:00:01:00:{next_hop:02x}", f"02:00:00:00:00:{out_port(next_hop):02x}"


def mac_bytes(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def lpm(routes: dict[tuple[int, int], int], address: int, bits: int) -> int:
    for length in range(bits, -1, -1):
        network = address >> (bits - length) << (bits - length) if length else 0
        if (network, length) in routes:
            return routes[(network, length)]
    raise AssertionError("no route")


def scapy_router(record: TxRecord, tables: dict[int, dict]) -> RxRecord:
    """Forward one frame: LPM, TTL / hop limit - 1 (scapy recomputes the checksum), next
    hop MACs, padding and a zero FCS stand-in."""
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    eth = Ether(record.data)
    if eth.type == 0x0800:
        ip = IP(record.data[14:14 + eth[IP].len])
        hop = lpm(tables[4], int.from_bytes(bytes(ip)[16:20], "big"), 32)
        ip.ttl -= 1
        del ip.chksum
    else:
        ip = IPv6(record.data[14:14 + 40 + eth[IPv6].plen])
        hop = lpm(tables[6], int.from_bytes(bytes(ip)[24:40], "big"), 128)
        ip.hlim -= 1
    dst, src = out_macs(hop)
    body = bytes(Ether(dst=dst, src=src, type=eth.type) / ip)
    body += bytes(max(0, 60 - len(body)))
    return RxRecord(out_port(hop), record.time_ps + DELAY_PS, body + bytes(4))


@dataclass(frozen=True)
class Lab:
    sent: list[TxRecord]
    perfect: list[RxRecord]  # what the model router sends, one per sent frame, same order
    tables: dict[int, dict]

    def analyzer(self) -> Analyzer:
        def link(hop: int, family: int) -> bytes:
            dst, src = out_macs(hop)
            return mac_bytes(dst) + mac_bytes(src) + (b"\x08\x00" if family == 4 else b"\x86\xdd")

        return Analyzer(PORTS, RouteReference(self.tables, out_port, link))


@functools.cache
def lab() -> Lab:
    tables = {4: generate_routes(4, 400, seed=7, histogram=committed_histogram(4)),
              6: generate_routes(6, 120, seed=7, histogram=committed_histogram(6))}
    dests = {4: pick_destinations(tables[4], 4, 40, seed=3),
             6: pick_destinations(tables[6], 6, 20, seed=3)}
    streams = [
        Stream(id=1, port=0, family=4, sizes=Sizes.fixed(64), count=80, destinations=dests),
        Stream(id=2, port=1, family=6, sizes=Sizes.fixed(128), count=60, destinations=dests),
        Stream(id=7, port=2, family="mixed", sizes=Sizes.imix(clamp=True), count=60,
               load_percent=70, destinations=dests),
    ]
    sent = generate(streams, PORTS).records()
    return Lab(sent, [scapy_router(r, tables) for r in sent], tables)


def test_perfect_router_counts_no_errors() -> None:
    world = lab()
    report = world.analyzer().analyze(world.sent, world.perfect)
    assert report.errors == 0 and report.total.received == len(world.sent) == 200
    assert report.total.latency.min_ps == report.total.latency.max_ps == DELAY_PS
    assert report.total.latency.count == 200


def flip_payload_bit(data: bytes, rng: random.Random) -> bytes:
    """Flip one bit in the last 10 bytes of the IP packet: always after the signature's
    magic, stream id and sequence number (the signature is 20 bytes, then filler)."""
    ip_len = int.from_bytes(data[16:18], "big") if data[12:14] == b"\x08\x00" else \
        40 + int.from_bytes(data[18:20], "big")
    position = 14 + ip_len - 1 - rng.randrange(10)
    out = bytearray(data)
    out[position] ^= 1 << rng.randrange(8)
    return bytes(out)


def wrong_ttl(data: bytes) -> bytes:
    """One hop too many, with a correct checksum: only the reference can tell."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether

    pkt = Ether(data)
    if IP in pkt:
        pkt[IP].ttl -= 1
        del pkt[IP].chksum
    else:
        pkt.payload.hlim -= 1
    return bytes(pkt)


def late_windows(sent: list[TxRecord], count: int, rng: random.Random) -> list[tuple[int, int]]:
    """``count`` disjoint (first, last) index windows, each within one stream."""
    windows: list[tuple[int, int]] = []
    used: set[int] = set()
    for i in rng.sample(range(len(sent)), len(sent)):
        if len(windows) == count:
            break
        j = i + rng.randint(1, 4)
        inside = range(i, j + 1)
        if j < len(sent) and sent[j].stream == sent[i].stream and not used & set(inside):
            windows.append((i, j))
            used.update(inside)
    return windows


FAULTS = ("lost", "duplicates", "payload", "ttl", "misrouted")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), pairs=st.integers(0, 6),
       counts=st.tuples(*(st.integers(0, 6) for _ in FAULTS)), foreign=st.integers(0, 4))
def test_injected_faults_are_counted_exactly(seed: int, pairs: int, counts: tuple[int, ...],
                                             foreign: int) -> None:
    world = lab()
    rng = random.Random(seed)
    rx = list(world.perfect)
    sent = world.sent
    # reordering: in disjoint windows of 2..5 consecutive packets of one stream, the first
    # arrives just after the last (one late packet per window, RFC 4737)
    windows = late_windows(sent, pairs, rng)
    assert len(windows) == pairs
    untouched = set(range(len(sent))) - {k for i, j in windows for k in range(i, j + 1)}
    chosen = rng.sample(sorted(untouched), sum(counts))
    plan: dict[str, list[int]] = {}
    for name, n in zip(FAULTS, counts, strict=True):
        plan[name], chosen = chosen[:n], chosen[n:]

    for i, j in windows:
        rx[i] = RxRecord(rx[i].port, rx[j].time_ps + 1, rx[i].data)
    for k in plan["payload"]:
        rx[k] = RxRecord(rx[k].port, rx[k].time_ps, flip_payload_bit(rx[k].data, rng))
    for k in plan["ttl"]:
        rx[k] = RxRecord(rx[k].port, rx[k].time_ps, wrong_ttl(rx[k].data))
    for k in plan["misrouted"]:
        rx[k] = RxRecord((rx[k].port + 1 + rng.randrange(3)) % 4, rx[k].time_ps, rx[k].data)
    extra = [rx[k] for k in plan["duplicates"]]  # a copy right behind the original
    extra += [RxRecord(rng.randrange(4), rng.randrange(10**9), rng.randbytes(rng.randint(60, 200)))
              for _ in range(foreign)]
    lost = set(plan["lost"])
    rx = [r for k, r in enumerate(rx) if k not in lost] + extra

    report = world.analyzer().analyze(sent, rx)
    total = report.total
    assert (total.lost, total.duplicates, total.reordered, total.misrouted, total.corrupted,
            report.foreign) == (counts[0], counts[1], pairs, counts[4], counts[2] + counts[3],
                                foreign)
    assert total.received == len(sent) - counts[0] and report.unknown == 0
    assert report.errors == sum(counts) + pairs + foreign
    assert total.latency.count == total.received - counts[4] - counts[2] - counts[3]
    # per stream as well
    per_stream = {name: Counter(sent[k].stream for k in plan[name]) for name in FAULTS}
    late = Counter(sent[i].stream for i, _ in windows)
    for sid, stats in report.streams.items():
        assert stats.lost == per_stream["lost"][sid]
        assert stats.duplicates == per_stream["duplicates"][sid]
        assert stats.misrouted == per_stream["misrouted"][sid]
        assert stats.corrupted == per_stream["payload"][sid] + per_stream["ttl"][sid]
        assert stats.reordered == late[sid]
