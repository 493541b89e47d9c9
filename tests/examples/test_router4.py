"""router4 (microblocks/uc/*.uc, examples/router4): the hand-written IPv4 router on the
simulated chip against the MBL ipv4_fwd block run natively, frame for frame.

The reference is tests/examples/router4_ref.mbl (the standard microblocks/ipv4_fwd.mbl behind
an IPv4-only eth_classify) compiled by npkit.compiler.mbl and run on the host with the same
route table, next hops and local addresses.  Frames are built with scapy, valid and broken
in every way RFC 1812 names; the chip must forward the same bytes to the same ports in
arrival order, count the same drops by reason and raise the same exceptions (code, next
hop, bytes).  Every run ends with the freelist leak check.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import ARP, IP, UDP, Ether, IPv6, raw
from scapy.utils import checksum as scapy_checksum

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.microblocks.uc import router4 as r4
from npkit.runtime.loader import LoadedRun, leak_check, load_manifest
from npkit.runtime.lpm import IPV4, MultibitTrie, RouteTables
from npkit.sim.packets import ListSink, ListSource, RxFrame

REFERENCE = Path(__file__).parent / "router4_ref.mbl"
CLOCK_HZ = 1.4e9
LINE_BPS = 10e9
WIRE_OVERHEAD = 20
SETTLE_CYCLES = 30_000  # after the last frame left: let the last commands complete
# the differential tests check what is forwarded, not how fast: below router4's lossless
# load (docs/performance.md, "router4"), so no frame is lost for lack of a buffer
DIFFERENTIAL_LOAD = 0.5


@dataclass(frozen=True)
class Tables:
    routes: dict[tuple[int, int], int]  # (prefix, length) -> next-hop index
    nexthops: dict[int, tuple[int, int, int, int]]  # index -> (dmac, smac, port, mtu)
    local4: tuple[int, ...]


@dataclass
class Expected:
    out: dict[tuple[int, int], list[bytes]] = field(default_factory=dict)  # (in, out port)
    drops: Counter = field(default_factory=Counter)
    exceptions: dict[int, list[tuple[int, int, bytes]]] = field(default_factory=dict)


@dataclass
class ChipResult:
    run: LoadedRun
    out: dict[int, list[bytes]]
    exceptions: dict[int, list[tuple[int, int, bytes]]]
    counters: dict[str, int]
    chip_counters: dict
    sinks: dict[int, ListSink]


# --------------------------------------------------------------------------- the reference
@pytest.fixture(scope="module")
def native() -> NativeProgram:
    return NativeProgram(compile_file(REFERENCE), "router4")


def load_reference(native: NativeProgram, tables: Tables) -> None:
    native.region("local4")[:] = 0
    for index, (dmac, smac, port, mtu) in tables.nexthops.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(tables.routes, {})
    for address in tables.local4:
        native.table_add("local4", address, 1)


# Checks the MBL block gained in the Linux conformance work (docs/conformance.md) that the
# hand-written router4, the hand baseline, predates: bytes after the IP total length
# (exception trailer, RFC 1812 5.2.2), a link-layer broadcast/multicast destination (drop
# l2_multicast, RFC 1812 5.3.4) and multicast IP sources and destinations (RFC 1812
# 5.3.7, RFC 5771).  Frames the block decides by one of them are left out of the
# comparison (router4 answers them as it did before those checks).
TRAILER = 7
NEWER_DROPS = ("l2_multicast",)


def _multicast_ip(frame: bytes) -> bool:
    return (len(frame) >= 34 and frame[12:14] == b"\x08\x00"
            and (frame[26] >> 4 == 14 or frame[30] >> 4 == 14))


def within_router4(native: NativeProgram, tables: Tables,
                   frames: dict[int, list[bytes]]) -> dict[int, list[bytes]]:
    """``frames`` without those the MBL block decides by a check router4 predates."""
    load_reference(native, tables)
    kept: dict[int, list[bytes]] = {}
    for p, port_frames in frames.items():
        verdicts = native.run(port_frames, in_ports=p) if port_frames else []
        kept[p] = [f for f, v in zip(port_frames, verdicts, strict=True)
                   if not ((v.kind == "exception" and v.code == TRAILER)
                           or (v.kind == "drop" and v.reason in NEWER_DROPS)
                           or _multicast_ip(f))]
    return kept


def expected_outcome(native: NativeProgram, tables: Tables,
                     frames: dict[int, list[bytes]]) -> Expected:
    load_reference(native, tables)
    exp = Expected()
    for p, port_frames in frames.items():
        exp.exceptions[p] = []
        for v in native.run(port_frames, in_ports=p) if port_frames else []:
            if v.kind == "forward":
                exp.out.setdefault((p, v.port), []).append(v.data)
            elif v.kind == "drop":
                exp.drops[v.reason] += 1
            else:
                exp.exceptions[p].append((v.code, v.next_hop, v.data))
    return exp


# --------------------------------------------------------------------------- the chip
def load_router(tables: Tables) -> LoadedRun:
    run = load_manifest(r4.MANIFEST)
    chip = run.chip
    MultibitTrie(IPV4, r4.trie_view(chip)).build(tables.routes)
    for index, (dmac, smac, port, mtu) in tables.nexthops.items():
        r4.write_next_hop(chip, index, dmac, smac, port, mtu)
    for address in tables.local4:
        r4.local4_add(chip, address)
    return run


def run_chip(tables: Tables, feeds: dict[int, list[RxFrame]], frames_out: int,
             max_cycles: int) -> ChipResult:
    run = load_router(tables)
    chip = run.chip
    sinks = {p: ListSink() for p in range(r4.LAYOUT.ports)}
    for p, sink in sinks.items():
        chip.attach_sink(p, sink)
    for p, feed in feeds.items():
        chip.attach_source(p, ListSource(feed))
    chip.run(packets=frames_out, cycles=max_cycles)
    chip.run(cycles=SETTLE_CYCLES)
    chip.close_sinks()
    exceptions: dict[int, list[tuple[int, int, bytes]]] = {p: [] for p in feeds}
    while (exc := r4.take_exception(chip)) is not None:
        exceptions.setdefault(exc.input_port, []).append((exc.code, exc.next_hop, exc.frame))
    return ChipResult(run, {p: [f.data for f in s.frames] for p, s in sinks.items()},
                      exceptions, r4.counters(chip), chip.counters(), sinks)


def is_interleaving(out: list[bytes], a: list[bytes], b: list[bytes]) -> bool:
    """out is a merge of a and b that keeps the order of each (frames of one input port
    leave an output port in arrival order; the two input ports interleave freely)."""
    if len(out) != len(a) + len(b):
        return False
    states = {(0, 0)}
    for frame in out:
        states = {s for i, j in states
                  for s, ok in (((i + 1, j), i < len(a) and a[i] == frame),
                                ((i, j + 1), j < len(b) and b[j] == frame)) if ok}
        if not states:
            return False
    return True


def assert_all_buffers_back(run: LoadedRun) -> None:
    for report in leak_check(run):
        assert report.ok, report.describe()


def paced(frames: list[bytes], load: float) -> list[RxFrame]:
    """The frames offered at `load` (fraction of line rate) by their timestamps."""
    out, start = [], 0.0
    for frame in frames:
        out.append(RxFrame(frame, time_s=start))
        start += (len(frame) + WIRE_OVERHEAD) * 8 / LINE_BPS / load
    return out


def check_differential(native: NativeProgram, tables: Tables,
                       frames: dict[int, list[bytes]]) -> ChipResult:
    frames = within_router4(native, tables, frames)
    exp = expected_outcome(native, tables, frames)
    forwarded = sum(len(v) for v in exp.out.values())
    wire = max(sum(len(f) + WIRE_OVERHEAD for f in fs) for fs in frames.values())
    budget = int(wire * 8 / LINE_BPS * CLOCK_HZ * 4) + 400_000
    got = run_chip(tables, {p: paced(fs, DIFFERENTIAL_LOAD) for p, fs in frames.items()},
                   forwarded, 2 * budget)
    for p in frames:
        assert got.counters[f"rx_no_buffer{p}"] == 0 and got.counters[f"rx_too_long{p}"] == 0
        assert got.chip_counters["ports"][p]["rx_dropped_rbuf_full"] == 0
    for q in range(r4.LAYOUT.ports):
        a, b = exp.out.get((0, q), []), exp.out.get((1, q), [])
        assert is_interleaving(got.out[q], a, b), (
            f"port {q}: {len(got.out[q])} frames out, expected {len(a)} from port 0 and "
            f"{len(b)} from port 1 in order")
    for reason in r4.DROP_REASONS:
        assert got.counters[reason] == exp.drops[reason], reason
    assert got.counters["bad_port"] == 0
    for p in frames:  # the pair's two exception streams interleave: compare as multisets
        assert sorted(got.exceptions.get(p, [])) == sorted(exp.exceptions[p]), \
            f"exceptions of port {p}"
    assert got.counters["ip_forwarded"] == forwarded
    assert_all_buffers_back(got.run)
    return got


# --------------------------------------------------------------------------- frames
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}
MARTIAN_SOURCES = ("0.1.2.3", "127.0.0.1", "240.0.0.1", "255.255.255.255", "250.9.9.9")
MARTIAN_DESTINATIONS = ("0.0.0.7", "127.1.1.1", "250.1.2.3", "240.0.0.0")


def _ip(value: int) -> str:
    return ".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0))


def _fix_checksum(frame: bytearray, ihl: int) -> None:
    frame[24:26] = b"\0\0"
    frame[24:26] = scapy_checksum(bytes(frame[14:14 + 4 * ihl])).to_bytes(2, "big")


@st.composite
def frame_strategy(draw: st.DrawFn, tables: Tables, uid: int) -> bytes:
    """One frame: mostly routable IPv4, with every kind of breakage RFC 1812 names."""
    routes = list(tables.routes)
    kind = draw(st.sampled_from(["route"] * 12 + ["random", "local", "broadcast",
                                                 "martian_src", "martian_dst", "options",
                                                 "other", "runt"]))
    if kind == "runt":
        return bytes(draw(st.binary(min_size=1, max_size=13)))
    if kind == "other":
        layer = draw(st.sampled_from(["arp", "ipv6", "vlan"]))
        if layer == "arp":
            return raw(Ether(**MACS) / ARP(pdst="10.0.0.1"))
        if layer == "ipv6":
            return raw(Ether(**MACS) / IPv6(dst="2001:db8::1") / UDP() / (b"6" * 20))
        return raw(Ether(**MACS, type=0x8100) / (b"\x00\x01\x08\x00" + b"v" * 50))
    if kind == "route" and routes:
        prefix, length = draw(st.sampled_from(routes))
        host = draw(st.integers(0, (1 << (32 - length)) - 1)) if length < 32 else 0
        dst = _ip(prefix | host)
    elif kind == "local" and tables.local4:
        dst = _ip(draw(st.sampled_from(tables.local4)))
    elif kind == "broadcast":
        dst = "255.255.255.255"
    elif kind == "martian_dst":
        dst = draw(st.sampled_from(MARTIAN_DESTINATIONS))
    else:
        dst = _ip(draw(st.integers(0, 0xFFFFFFFF)))
    src = draw(st.sampled_from(MARTIAN_SOURCES)) if kind == "martian_src" else "198.18.0.1"
    ttl = draw(st.sampled_from([0, 1] + [2, 64, 255] * 4))
    df = draw(st.booleans())
    payload = draw(st.sampled_from([0, 6, 18, 26, 100, 570, 700, 1200, 1472]))
    options = b"\x01\x01\x01\x00" if kind == "options" else b""
    frame = bytearray(raw(Ether(**MACS) / IP(src=src, dst=dst, ttl=ttl, id=uid & 0xFFFF,
                                            flags="DF" if df else 0, options=options)
                          / UDP(sport=uid >> 16, dport=7) / (b"u" * payload)))
    ihl = frame[14] & 15
    breakage = draw(st.sampled_from(["none"] * 16 + ["checksum", "version", "ihl", "short_len",
                                                    "long_len", "truncate", "pad"]))
    if breakage == "checksum":
        frame[24] ^= 1 << draw(st.integers(0, 7))
    elif breakage == "version":
        frame[14] = (draw(st.sampled_from([0, 5, 6, 15])) << 4) | ihl
        _fix_checksum(frame, ihl)
    elif breakage == "ihl":
        frame[14] = 0x40 | draw(st.sampled_from([0, 3, 4, 6, 15]))
        _fix_checksum(frame, 5)
    elif breakage == "short_len":
        frame[16:18] = draw(st.integers(0, 4 * ihl - 1)).to_bytes(2, "big")
        _fix_checksum(frame, ihl)
    elif breakage == "long_len":
        total = len(frame) - 14 + draw(st.integers(1, 100))
        frame[16:18] = total.to_bytes(2, "big")
        _fix_checksum(frame, ihl)
    elif breakage == "truncate":
        frame = frame[:draw(st.integers(14, len(frame) - 1))]
    elif breakage == "pad":  # Ethernet padding: more bytes delivered than the IP length
        frame += bytes(draw(st.integers(1, 40)))
    return bytes(frame)


@st.composite
def tables_strategy(draw: st.DrawFn) -> Tables:
    count = draw(st.integers(1, 8))
    nexthops = {i: (0x02AA00000000 | i, 0x02BB00000000 | i, draw(st.integers(0, 1)),
                    draw(st.sampled_from([68, 576, 600, 1280, 1500, 9000])))
                for i in range(1, count + 1)}
    routes = {}
    for _ in range(draw(st.integers(1, 60))):
        length = draw(st.sampled_from([0, 8, 12, 16, 17, 20, 24, 25, 28, 32]))
        first = draw(st.integers(1, 223).filter(lambda b: b != 127))  # not martian
        value = (first << 24 | draw(st.integers(0, 0xFFFFFF))) >> (32 - length) \
            << (32 - length) if length else 0
        routes[(value, length)] = draw(st.integers(1, count))
    local4 = tuple(draw(st.lists(st.integers(0x01000000, 0xDFFFFFFF), max_size=5,
                                 unique=True)))
    return Tables(routes, nexthops, local4)


@st.composite
def scenario(draw: st.DrawFn, max_frames: int) -> tuple[Tables, dict[int, list[bytes]]]:
    tables = draw(tables_strategy())
    frames = {}
    for p in (0, 1):
        n = draw(st.integers(0, max_frames))
        frames[p] = [draw(frame_strategy(tables, (p << 15) | i)) for i in range(n)]
    return tables, frames


# --------------------------------------------------------------------------- tests
FIXED = Tables(
    routes={(0x0A000000, 8): 1, (0x0A010000, 16): 2, (0xC0000200, 24): 3,
            (0x0A010203, 32): 1, (0x64400000, 10): 1},
    nexthops={1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
              2: (0x02AA00000002, 0x02BB00000002, 0, 600),
              3: (0x02AA00000003, 0x02BB00000003, 1, 1280)},
    local4=(0x0A000001, 0xC0000201))


def v4(dst: str, src: str = "198.18.0.1", payload: int = 18, **kw) -> bytes:
    return raw(Ether(**MACS) / IP(src=src, dst=dst, **kw) / UDP(sport=1, dport=2)
               / (b"p" * payload))


def test_every_rule_once_matches_the_mbl_block(native: NativeProgram) -> None:
    """One frame per rule of FACTS.md section 4 and each exception code, on both ports."""
    frames = [v4("10.2.3.4"), v4("10.1.2.3"), v4("192.0.2.9", ttl=2), v4("10.1.2.3"),
              v4("10.0.0.1"), v4("192.0.2.1"), v4("255.255.255.255"), v4("10.1.2.3", ttl=1),
              v4("10.1.2.3", ttl=0), v4("11.0.0.1"), v4("127.0.0.1"), v4("10.9.9.9", "0.1.2.3"),
              v4("10.1.0.9", payload=700, flags="DF"), v4("10.1.0.9", payload=700),
              v4("10.1.2.3")[:30], b"\x00" * 10, v4("10.1.2.3", options=b"\x01\x01\x01\x00"),
              v4("10.1.2.3")[:-1], raw(Ether(**MACS) / ARP()), raw(Ether(**MACS) / IPv6()),
              v4("100.100.1.1", payload=1472)]
    got = check_differential(native, FIXED, {0: frames, 1: frames[::-1]})
    assert sum(len(v) for v in got.out.values()) == 2 * 5
    assert {code for excs in got.exceptions.values() for code, _, _ in excs} == \
        {1, 2, 3, 4, 5, 6, 0x100}


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenario(max_frames=60))
def test_random_frames_and_tables_match_the_mbl_block(native: NativeProgram,
                                                      case: tuple[Tables, dict]) -> None:
    tables, frames = case
    check_differential(native, tables, frames)


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenario(max_frames=200))
def test_random_frames_and_tables_match_the_mbl_block_many(native: NativeProgram,
                                                           case: tuple[Tables, dict]) -> None:
    tables, frames = case
    check_differential(native, tables, frames)


def test_injected_frames_leave_their_port_and_the_buffers_come_back() -> None:
    """The control plane's path: frames from the XScale's freelist, on a TX ring."""
    run = load_router(FIXED)
    chip = run.chip
    sinks = {p: ListSink() for p in (0, 1)}
    for p, sink in sinks.items():
        chip.attach_sink(p, sink)
    sent = {p: [v4("10.0.0.9", payload=10 + 37 * i + p) for i in range(20)] for p in (0, 1)}
    for i in range(20):
        for p in (0, 1):
            r4.inject(chip, p, sent[p][i])
    chip.run(packets=40, cycles=2_000_000)
    chip.run(cycles=SETTLE_CYCLES)
    for p in (0, 1):
        assert [f.data for f in sinks[p].frames] == sent[p]
    assert_all_buffers_back(run)


# --------------------------------------------------------------------------- full load
def line_rate_frames(tables: Tables, count: int, port: int, seed: int) -> list[bytes]:
    """64-byte frames (60 + a 4-byte FCS stand-in), each to a random routed destination,
    each one distinct (IP id)."""
    rng = random.Random(seed)
    routes = list(tables.routes)
    frames = []
    for i in range(count):
        prefix, length = rng.choice(routes)
        dst = prefix | (rng.getrandbits(32 - length) if length < 32 else 0)
        frame = raw(Ether(**MACS) / IP(src="198.18.0.1", dst=_ip(dst), ttl=64,
                                       id=i & 0xFFFF, tos=port) / UDP(sport=i >> 16, dport=9))
        frames.append(frame + bytes(64 - len(frame)))
    return frames


def route_table(count: int, seed: int) -> Tables:
    """A few thousand routes: /8../16 (one trie read), /17../24 (two), /25../32 (three)."""
    rng = random.Random(seed)
    nexthops = {i: (0x02AA00000000 | i, 0x02BB00000000 | i, i & 1, 1500) for i in range(1, 17)}
    routes: dict[tuple[int, int], int] = {}
    while len(routes) < count:
        length = rng.choice([8, 12, 16] + [18, 20, 22, 24] * 6 + [26, 28, 32])
        first = rng.choice([1, 2, 3, 5, 11, 23, 45, 60, 66, 98, 100, 150, 172, 185, 200, 212])
        value = (first << 24 | rng.getrandbits(24)) >> (32 - length) << (32 - length)
        routes[(value, length)] = rng.randint(1, 16)
    return Tables(routes, nexthops, (0x0A000001,))


# Loads are fractions of 10GbE line rate on both ports.  `python -m npkit.bench.router4_load
# --loads 50,62,90 --resolution 0` (100,000 64-byte frames per port, seeds 1..3) measured:
# 50 % and 62 % lose nothing in any run, 90 % loses 0.05 % (median) / 0.11 % (worst run), all
# of it rx_no_buffer; 64..88 % lose ~0.1 % to rx_dropped_rbuf_full now and then, and
# 100 % ~11 % (the full sweep, docs/performance.md, "router4").  So zero loss is asserted
# well below 62 %, and at 90 % and 100 % only that every frame not transmitted is counted,
# with its reason, and that the loss stays near the measured one.
LOSSLESS_LOAD = 0.5  # margin below 62 %, the highest load measured lossless
FULL_LOAD_FRAMES = 6000  # per port
CYCLES_PER_FRAME_AT_LINE_RATE = (64 + WIRE_OVERHEAD) * 8 / LINE_BPS * CLOCK_HZ  # 94.08


def offered(frames: list[bytes], load: float) -> list[RxFrame]:
    gap = (64 + WIRE_OVERHEAD) * 8 / LINE_BPS / load
    return [RxFrame(f, i * gap) for i, f in enumerate(frames)]


@dataclass(frozen=True)
class LoadCase:
    tables: Tables
    frames: dict[int, list[bytes]]  # input port -> 64-byte frames, all distinct
    expected: Expected  # the MBL block's verdicts: every frame forwarded


@pytest.fixture(scope="module")
def load_case(native: NativeProgram) -> LoadCase:
    tables = route_table(3000, seed=5)
    frames = {p: line_rate_frames(tables, FULL_LOAD_FRAMES, p, seed=10 + p) for p in (0, 1)}
    assert len({f for fs in frames.values() for f in fs}) == 2 * FULL_LOAD_FRAMES
    exp = expected_outcome(native, tables, frames)
    assert sum(len(v) for v in exp.out.values()) == 2 * FULL_LOAD_FRAMES
    return LoadCase(tables, frames, exp)


def run_at_load(case: LoadCase, load: float) -> ChipResult:
    cycles = int(FULL_LOAD_FRAMES * CYCLES_PER_FRAME_AT_LINE_RATE / load * 2) + 200_000
    return run_chip(case.tables, {p: offered(fs, load) for p, fs in case.frames.items()},
                    2 * FULL_LOAD_FRAMES, cycles)


def forwarded_in_order(case: LoadCase, got: ChipResult) -> Counter:
    """Frames transmitted per input port, after checking that each one left by the port the
    reference chose, unchanged from the reference's bytes, and that the frames of one input
    port leave each output port in arrival order (lost frames may leave gaps)."""
    origin = {frame: (p, q, k) for (p, q), frames in case.expected.out.items()
              for k, frame in enumerate(frames)}
    per_input: Counter = Counter()
    for q, out in got.out.items():
        last = {0: -1, 1: -1}
        for frame in out:
            assert frame in origin, f"port {q}: a frame the reference does not forward"
            p, expected_q, k = origin[frame]
            assert expected_q == q, f"a frame of port {p} left by port {q}, not {expected_q}"
            assert k > last[p], f"port {q}: frames of port {p} out of arrival order"
            last[p] = k
            per_input[p] += 1
    return per_input


def counted_drops(got: ChipResult, p: int) -> dict[str, int]:
    """Every place a received frame of input port p can be dropped for lack of room, with
    its count: the media's RBUF (full, too long) and the router's receive ME."""
    media = got.chip_counters["ports"][p]
    return {"rx_dropped_rbuf_full": media["rx_dropped_rbuf_full"],
            "rx_dropped_too_long": media["rx_dropped_too_long"],
            f"rx_no_buffer{p}": got.counters[f"rx_no_buffer{p}"],
            f"rx_too_long{p}": got.counters[f"rx_too_long{p}"]}


def test_64_byte_frames_below_the_lossless_load_lose_nothing_and_keep_order(
        load_case: LoadCase) -> None:
    got = run_at_load(load_case, LOSSLESS_LOAD)
    for p in (0, 1):
        assert counted_drops(got, p) == dict.fromkeys(counted_drops(got, p), 0)
    for q in (0, 1):
        assert is_interleaving(got.out[q], load_case.expected.out.get((0, q), []),
                               load_case.expected.out.get((1, q), []))
    assert got.counters["ip_forwarded"] == 2 * FULL_LOAD_FRAMES
    assert_all_buffers_back(got.run)


# the worst loss allowed: 90 % measured 0.11 % at worst (above); at 100 % the DRAM ceiling
# (~89 % of line rate forwarded, docs/performance.md) loses 10.6 % (median) / 10.9 % (worst)
@pytest.mark.parametrize("load, max_loss", [(0.9, 0.005), (1.0, 0.15)])
def test_64_byte_frames_near_line_rate_lose_only_frames_the_counters_explain(
        load_case: LoadCase, load: float, max_loss: float) -> None:
    got = run_at_load(load_case, load)
    transmitted = forwarded_in_order(load_case, got)
    for p in (0, 1):
        drops = counted_drops(got, p)
        lost = FULL_LOAD_FRAMES - transmitted[p]
        assert lost == sum(drops.values()), f"port {p}: {lost} frames lost, counted {drops}"
        assert lost <= max_loss * FULL_LOAD_FRAMES, f"port {p}: {lost} lost, {drops}"
    # nothing was dropped by the forwarding checks or sent to the slow path
    assert all(got.counters[reason] == 0 for reason in r4.DROP_REASONS)
    assert got.counters["bad_port"] == 0
    assert not any(got.exceptions.values())
    assert got.counters["ip_forwarded"] == sum(transmitted.values())
    if load >= 1.0:  # beyond the DRAM ceiling: the accounting above had losses to explain
        assert sum(transmitted.values()) < 2 * FULL_LOAD_FRAMES
    assert_all_buffers_back(got.run)
