"""Acceptance (issue 3): the native dual-stack router loaded with the real Internet table
(901,899 IPv4 + 160,147 IPv6 prefixes) handles a hypothesis mix of valid and malformed
packets exactly as an independent reference says: scapy for the packets, and a brute-force
longest-prefix match (one dict per prefix length, longest first) written here from the
route file, with next hops assigned by the documented rule of docs/lpm.md."""

from __future__ import annotations

import gzip
import ipaddress
import socket
import time
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from router_reference import RouterModel, outcome
from scapy.all import ICMP, IP, TCP, UDP, Ether, IPv6, IPv6ExtHdrHopByHop, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.runtime.lpm import RouteTables
from npkit.runtime.routes import REAL_TABLE, read_routes

REPO = Path(__file__).resolve().parents[2]
SEED, NEXT_HOP_COUNT = 2024, 16
# next hop i: port i % 4, MTU 1500, except two narrow links to exercise frag / too big
NEXTHOPS = {i: (0x02AA_0000_0000 | i, 0x02BB_0000_0000 | i, i % 4,
                {5: 600, 9: 1280}.get(i, 1500)) for i in range(NEXT_HOP_COUNT)}
LOCAL4 = frozenset({"192.0.2.1"})
LOCAL6 = frozenset({"2001:db8::1"})


class BruteForceLpm:
    """Prefixes by length: the longest length whose masked address is present wins."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.by_length: list[dict[int, int]] = [{} for _ in range(bits + 1)]

    def add(self, network: int, length: int, nh: int) -> None:
        self.by_length[length][network >> (self.bits - length)] = nh

    def __call__(self, address) -> int | None:
        value = int(address)
        for length in range(self.bits, -1, -1):
            nh = self.by_length[length].get(value >> (self.bits - length))
            if nh is not None:
                return nh
        return None


def reference_tables() -> tuple[BruteForceLpm, BruteForceLpm, list, list]:
    """Read the table independently: docs/lpm.md's rule gives prefix text -> next hop."""
    lpm4, lpm6 = BruteForceLpm(32), BruteForceLpm(128)
    v4, v6 = [], []
    with gzip.open(REAL_TABLE, "rt") as fh:
        for line in fh:
            text = line.strip()
            if not text:
                continue
            addr, length_text = text.split("/")
            nh = zlib.crc32(text.encode(), SEED) % NEXT_HOP_COUNT
            if ":" in addr:
                net = int.from_bytes(socket.inet_pton(socket.AF_INET6, addr), "big")
                lpm6.add(net, int(length_text), nh)
                v6.append((net, int(length_text)))
            else:
                net = int.from_bytes(socket.inet_aton(addr), "big")
                lpm4.add(net, int(length_text), nh)
                v4.append((net, int(length_text)))
    return lpm4, lpm6, v4, v6


@pytest.fixture(scope="module")
def real():
    if not REAL_TABLE.exists():
        pytest.skip(f"the real route table is not at {REAL_TABLE} (clone ../shared next to "
                    f"the repository)")
    native = NativeProgram(compile_file(REPO / "examples" / "router" / "router.mbl"), "router")
    routes = read_routes(REAL_TABLE, SEED, NEXT_HOP_COUNT)
    start = time.perf_counter()
    RouteTables.of(native).load(routes.v4, routes.v6)
    build_seconds = time.perf_counter() - start
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    for a in LOCAL4:
        native.table_add("local4", int(ipaddress.ip_address(a)), 1)
    for a in LOCAL6:
        native.table_add("local6", int(ipaddress.ip_address(a)), 1)
    lpm4, lpm6, v4, v6 = reference_tables()
    model = RouterModel(NEXTHOPS, LOCAL4, LOCAL6, lpm4, lpm6)
    return native, model, v4, v6, build_seconds


def test_real_table_has_the_documented_size_and_builds_fast(real):
    _, _, v4, v6, build_seconds = real
    assert (len(set(v4)), len(set(v6))) == (901_899, 160_147)
    assert build_seconds < 10


def routed(prefixes: list, bits: int, version) -> st.SearchStrategy:
    """An address inside a random prefix of the table (any host bits)."""
    def pick(index: int, host: int):
        net, length = prefixes[index]
        return str(version(net | (host & ((1 << (bits - length)) - 1))))
    return st.builds(pick, st.integers(0, len(prefixes) - 1), st.integers(0, 2**bits - 1))


ODD4 = ["192.0.2.1", "127.0.0.1", "0.0.0.1", "255.255.255.255", "240.0.0.9", "10.0.0.1"]
ODD6 = ["2001:db8::1", "::", "::1", "fe80::1", "ff02::1", "3fff::1"]
payload = st.binary(max_size=40) | st.sampled_from([b"y" * 700, b"z" * 1300])
rare = st.integers(0, 5).map(lambda x: x == 0)


@st.composite
def frames(draw, v4: list, v6: list) -> bytes:
    eth = Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
    addr4 = st.one_of(routed(v4, 32, ipaddress.IPv4Address), routed(v4, 32,
                      ipaddress.IPv4Address), st.sampled_from(ODD4),
                      st.integers(0, 2**32 - 1).map(lambda x: str(ipaddress.IPv4Address(x))))
    addr6 = st.one_of(routed(v6, 128, ipaddress.IPv6Address), routed(v6, 128,
                      ipaddress.IPv6Address), st.sampled_from(ODD6),
                      st.integers(0, 2**128 - 1).map(lambda x: str(ipaddress.IPv6Address(x))))
    ttl = st.one_of(st.sampled_from([2, 64, 255]), st.integers(0, 255))
    kind = draw(st.sampled_from(["v4", "v4", "v6", "v6", "other"]))
    if kind == "v4":
        ip = IP(src=draw(st.one_of(st.just("198.18.0.1"), addr4)), dst=draw(addr4),
                ttl=draw(ttl), flags=draw(st.sampled_from(["", "DF"])),
                options=b"\x01\x01\x01\x00" if draw(rare) else b"")
        frame = bytearray(raw(eth / ip / draw(st.sampled_from([UDP(), TCP(), ICMP()]))
                              / draw(payload)))
    elif kind == "v6":
        ip = IPv6(src=draw(st.one_of(st.just("2001:db8:99::1"), addr6)), dst=draw(addr6),
                  hlim=draw(ttl))
        pkt = eth / ip / IPv6ExtHdrHopByHop() / UDP() if draw(rare) else eth / ip / UDP()
        frame = bytearray(raw(pkt / draw(payload)))
    else:
        frame = bytearray(raw(Ether(type=draw(st.integers(0, 0xFFFF))) / draw(payload)))
    if draw(rare):  # corruption: flip a byte
        i = draw(st.integers(0, len(frame) - 1))
        frame[i] ^= draw(st.integers(1, 255))
    if draw(rare):  # truncation
        frame = frame[:draw(st.integers(0, len(frame)))]
    return bytes(frame)


def test_router_with_real_table_matches_reference_on_random_mix(real):
    native, model, v4, v6, _ = real

    @settings(max_examples=150, deadline=None)
    @given(st.lists(frames(v4, v6), min_size=1, max_size=16))
    def check(batch):
        assert outcome(native, batch) == [model.reference(f) for f in batch]

    check()


def test_router_with_real_table_forwards_most_routed_destinations(real):
    """A sanity check on the mix above: routed destinations really are forwarded."""
    native, model, v4, v6, _ = real
    eth = Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
    batch = [raw(eth / IP(src="198.18.0.1", dst=str(ipaddress.IPv4Address(net)), ttl=9) / UDP())
             for net, _ in v4[::9000]]
    batch += [raw(eth / IPv6(src="2001:db8:99::1", dst=str(ipaddress.IPv6Address(net)), hlim=9)
                  / UDP()) for net, _ in v6[::1600]]
    got = outcome(native, batch)
    assert got == [model.reference(f) for f in batch]
    forwarded = sum(1 for g in got if g[0] == "forward")
    assert forwarded >= 0.9 * len(batch)
    assert {g[1] for g in got if g[0] == "forward"} == {0, 1, 2, 3}
