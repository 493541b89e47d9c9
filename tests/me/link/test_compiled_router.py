"""The dual-stack router (examples/router/router.mbl: eth_classify -> ipv4_fwd | ipv6_fwd)
compiled by the ME backend (front, back, link) and run on the simulated chip, against the
same program run by the native target with the same tables, frame for frame."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from router_structures import router_with
from scapy.all import ARP, IP, UDP, Ether, ICMPv6EchoRequest, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.link import DEFAULT_PLATFORM, Manifest, link
from npkit.link.platform import as_platform
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import ROUTE_MEMORIES, RouteTables, route_memories

from .harness import check_against_native

ROUTER = Path(__file__).parents[3] / "examples" / "router" / "router.mbl"

ROUTES4 = {(0x0A000000, 8): 1, (0x0A010000, 16): 2, (0xC0000200, 24): 3, (0x0A010203, 32): 1}
ROUTES6 = {(0x20010DB8 << 96, 32): 1, (0x20010DB8_00010000 << 64, 48): 2}
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 0, 600),
            3: (0x02AA00000003, 0x02BB00000003, 1, 1280)}
LOCAL4 = (0x0A000001, 0xC0000201)
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}


@pytest.fixture(scope="module")
def router() -> tuple[Manifest, NativeProgram]:
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    native = NativeProgram(program)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(ROUTES4, ROUTES6)
    for address in LOCAL4:
        native.table_add("local4", address, 1)
    return linked, native


def loaded(router) -> CompiledRun:
    linked, native = router
    run = CompiledRun(linked)
    run.load_memories(native)
    return run


@pytest.mark.parametrize("structure", ["16-8-8", "poptrie"])
def test_the_router_memory_map_keeps_the_runtime_clear_of_the_tables(structure,
                                                                     tmp_path) -> None:
    program = compile_file(router_with(structure, tmp_path))
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    mem = {m.name: m for m in linked.program.memories}
    tables = route_memories(mem)
    assert tables == dict(zip(("16-8-8", "poptrie"), ROUTE_MEMORIES, strict=True))[structure]
    for name in tables:                     # each table whole, as the program declares it
        assert mem[name].bytes == 4 * program.memories[name].words
    sram = sorted((m.address, m.address + m.bytes) for m in mem.values() if m.space == "sram")
    assert all(end <= start for (_, end), (start, _) in pairwise(sram))     # disjoint
    # 64 MB channels only for tables the preset's channels cannot hold (16-8-8's)
    channel = as_platform(DEFAULT_PLATFORM).chip_config().sram_channel_bytes
    big = any(mem[name].bytes > channel for name in tables)
    assert linked.overrides == ({"sram": {"channel_bytes": 64 << 20}} if big else {})
    for spec in linked.freelists:      # descriptors clear of every table (below them, with
        low = (spec.channel << 26) + spec.descriptor_base       # the top-down placement)
        high = low + spec.count * spec.descriptor_bytes
        assert all(end <= low or high <= start for start, end in sram)
    scratch_end = max(m.address + m.bytes for m in mem.values() if m.space == "scratch")
    assert min(r.base_word for r in linked.rings) * 4 >= scratch_end
    assert linked.program.drop_counter_base >= 4 * max(r.base_word + r.size_words
                                                   for r in linked.rings)
    ids = compile_file(ROUTER).reasons.ids
    assert linked.program.drop_reasons[ids["bad_checksum"]] == "bad_checksum"


def v4(dst: str, src: str = "198.18.0.1", payload: int = 18, **kw) -> bytes:
    return raw(Ether(**MACS) / IP(src=src, dst=dst, **kw) / UDP(sport=1, dport=2)
               / (b"p" * payload))


def v6(dst: str, src: str = "2001:db8:ffff::1", payload: int = 18, **kw) -> bytes:
    return raw(Ether(**MACS) / IPv6(src=src, dst=dst, **kw) / UDP(sport=1, dport=2)
               / (b"q" * payload))


RULES = [v4("10.2.3.4"), v4("10.1.2.3"), v4("192.0.2.9", ttl=2), v4("10.0.0.1"),
         v4("255.255.255.255"), v4("10.1.2.3", ttl=1), v4("11.0.0.1"), v4("127.0.0.1"),
         v4("10.9.9.9", "0.1.2.3"), v4("10.1.0.9", payload=700, flags="DF"),
         v4("10.1.0.9", payload=700), v4("10.1.2.3")[:30], b"\x00" * 10,
         v4("10.1.2.3", options=b"\x01\x01\x01\x00"), v4("10.1.2.3")[:-1],
         raw(Ether(**MACS) / ARP()), v6("2001:db8::7"), v6("2001:db8:1::9", hlim=1),
         v6("2001:db8:1::9", payload=700), v6("2002::1"), v6("2001:db8::7", src="::"),
         v6("2001:db8::7", src="ff02::1"), v6("::1"), v6("fe80::1"),
         raw(Ether(**MACS) / IPv6(dst="2001:db8::8", nh=0) / ICMPv6EchoRequest()),
         v6("2001:db8::7")[:40]]


def test_every_rule_once_matches_the_native_router(router) -> None:
    frames = {0: RULES, 1: RULES[::-1]}
    result = loaded(router).run(frames, load=0.2)
    check_against_native(result, router[1], frames)
    assert sum(len(v) for v in result.out.values()) >= 8


@st.composite
def frame(draw: st.DrawFn, uid: int) -> bytes:
    kind = draw(st.sampled_from(["v4"] * 5 + ["v6"] * 3 + ["broken", "runt"]))
    if kind == "runt":
        return bytes(draw(st.binary(min_size=1, max_size=20)))
    if kind == "v6":
        net = draw(st.sampled_from(["2001:db8::", "2001:db8:1::", "2001:db9::", "fe80::"]))
        return v6(f"{net}{uid & 0xFFFF:x}", hlim=draw(st.sampled_from([0, 1, 64])),
                  payload=draw(st.sampled_from([0, 18, 600, 1300])))
    first = draw(st.sampled_from(["10.1.2", "10.1.9", "10.7.7", "192.0.2", "11.1.1", "0.0.0"]))
    data = bytearray(v4(f"{first}.{uid & 255}", ttl=draw(st.sampled_from([1, 2, 64])),
                        id=uid, payload=draw(st.sampled_from([0, 18, 600, 1400])),
                        flags=draw(st.sampled_from([0, 2]))))
    if kind == "broken":
        data[draw(st.integers(12, min(40, len(data) - 1)))] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_frames_match_the_native_router(router, data: st.DataObject) -> None:
    frames = {p: [data.draw(frame((p << 14) | i)) for i in range(data.draw(st.integers(0, 40)))]
              for p in (0, 1)}
    check_against_native(loaded(router).run(frames, load=0.2), router[1], frames)
