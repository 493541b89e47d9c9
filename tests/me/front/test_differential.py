"""The front end's WIR (run by the WIR interpreter) against the native target on the
standard microblocks: same tables, same packets (scapy, hypothesis), same verdict, code,
out_port, next_hop, packet bytes and memories (counters)."""

from __future__ import annotations

import ipaddress

import pytest
from harness import REPO, Pair, compile_pair, load_router_tables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, Ether, IPv6, IPv6ExtHdrHopByHop, raw

from npkit.compiler.me.front.cfg import instruction_count
from npkit.runtime.lpm import route_memories

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _pair(path: str, entry: str | None) -> Pair:
    pair = compile_pair(REPO / path, entry)
    load_router_tables(pair.native)
    return pair


@pytest.fixture(scope="module")
def ipv4() -> Pair:
    return _pair("microblocks/ipv4_fwd.mbl", "ipv4_fwd")


@pytest.fixture(scope="module")
def ipv6() -> Pair:
    return _pair("microblocks/ipv6_fwd.mbl", "ipv6_fwd")


@pytest.fixture(scope="module")
def router() -> Pair:
    return _pair("examples/router/router.mbl", None)


@pytest.fixture(scope="module")
def bridge() -> Pair:
    pair = compile_pair(REPO / "microblocks/l2_bridge.mbl", None)
    for port in range(16):
        pair.native.write("port_pair", port, port ^ 1)
    for k, mac in enumerate((0x020000000001, 0x020000000002, 0x02000000FF03, 0x0A0B0C0D0E0F)):
        pair.native.table_add("mac_table", mac, k % 4)
    return pair


def eth(**kw) -> Ether:
    return Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01", **kw)


V4_ADDRS = ["10.2.3.4", "10.1.2.3", "10.1.2.200", "10.9.9.9", "8.8.8.8", "10.0.0.1",
            "192.0.2.1", "192.0.2.9", "127.0.0.1", "0.1.2.3", "240.0.0.1", "255.255.255.255",
            "1.2.3.4", "100.64.1.1", "198.18.0.1"]
V6_ADDRS = ["2001:db8::1", "2001:db8::2", "2001:db8:5::1", "2001:db8:5::7", "2001:db8:6::9",
            "2001:db8:6:1::1", "2001:db8:6:1:2:3:4:5", "2001:db8:6:1:2:3:4:6", "3000::1",
            "4000::1", "::", "::1", "fe80::1", "febf::1", "ff02::1", "2001:db8:7::1"]

v4_addr = st.one_of(st.sampled_from(V4_ADDRS),
                    st.integers(0, 2**32 - 1).map(lambda a: str(ipaddress.IPv4Address(a))))
v6_addr = st.sampled_from(V6_ADDRS)


@st.composite
def ipv4_frames(draw) -> bytes:
    ip = IP(src=draw(v4_addr), dst=draw(v4_addr), ttl=draw(st.sampled_from([0, 1, 2, 64])),
            flags=draw(st.sampled_from([0, 2])), id=draw(st.integers(0, 0xFFFF)))
    if draw(st.booleans()):
        ip.options = [b"\x01" * 4]
    l4 = UDP(sport=1, dport=2) if draw(st.booleans()) else TCP()
    size = draw(st.sampled_from([0, 10, 100, 560, 1000, 1400, 1500]))
    frame = bytearray(raw(eth() / ip / l4 / (b"q" * size)))
    mangle = draw(st.sampled_from(["none", "none", "none", "truncate", "byte", "ethertype"]))
    if mangle == "truncate":
        frame = frame[:draw(st.integers(0, len(frame)))]
    elif mangle == "byte":
        at = draw(st.integers(14, 33))
        frame[at] = draw(st.integers(0, 255))
    elif mangle == "ethertype":
        frame[12:14] = draw(st.sampled_from([b"\x86\xdd", b"\x08\x06", b"\x00\x00"]))
    return bytes(frame)


@st.composite
def ipv6_frames(draw) -> bytes:
    ip = IPv6(src=draw(v6_addr), dst=draw(v6_addr), hlim=draw(st.sampled_from([0, 1, 2, 64])))
    if draw(st.integers(0, 5)) == 0:
        ip = ip / IPv6ExtHdrHopByHop()
    size = draw(st.sampled_from([0, 10, 100, 560, 1240, 1300, 1450]))
    frame = bytearray(raw(eth() / ip / UDP(sport=1, dport=2) / (b"q" * size)))
    mangle = draw(st.sampled_from(["none", "none", "none", "truncate", "byte", "ethertype"]))
    if mangle == "truncate":
        frame = frame[:draw(st.integers(0, len(frame)))]
    elif mangle == "byte":
        at = draw(st.integers(14, 53))
        frame[at] = draw(st.integers(0, 255))
    elif mangle == "ethertype":
        frame[12:14] = draw(st.sampled_from([b"\x08\x00", b"\x08\x06"]))
    return bytes(frame)


ports = st.integers(0, 3)


@SETTINGS
@given(frame=ipv4_frames(), port=ports)
def test_ipv4_fwd_matches_native(ipv4, frame, port):
    ipv4.check(frame, port)


@SETTINGS
@given(frame=ipv6_frames(), port=ports)
def test_ipv6_fwd_matches_native(ipv6, frame, port):
    ipv6.check(frame, port)


@SETTINGS
@given(frame=st.one_of(ipv4_frames(), ipv6_frames(), st.binary(max_size=80)), port=ports)
def test_router_pipeline_matches_native(router, frame, port):
    router.check(frame, port)


@SETTINGS
@given(dst=st.sampled_from([0x020000000001, 0x020000000002, 0x02000000FF03, 0x0A0B0C0D0E0F,
                            0x010203040506, 0x030000000001, 0x020000000009]),
       port=st.integers(0, 15), size=st.sampled_from([0, 5, 13, 14, 60, 200]))
def test_l2_bridge_matches_native(bridge, dst, port, size):
    frame = dst.to_bytes(6, "big") + bytes.fromhex("020000000077") + b"\x08\x00" + b"z" * 50
    bridge.check(frame[:size] if size < 60 else frame + b"y" * (size - 60), port)


def test_fixed_ipv4_cases_cover_every_verdict(ipv4):
    """Every IPv4 outcome at least once (forward, each exception, several drops)."""
    frames = [raw(eth() / IP(src="198.18.0.1", dst=d, ttl=t, flags=f) / UDP() / (b"x" * n))
              for d in ("10.2.3.4", "10.1.2.3", "10.1.2.200", "8.8.8.8", "10.0.0.1")
              for t in (1, 2) for f in (0, 2) for n in (10, 1000)]
    kinds = {ipv4.check(f, 1).kind for f in frames}
    assert kinds == {1, 3}


def test_counters_count(router):
    frame = raw(eth() / IP(src="198.18.0.1", dst="10.2.3.4") / UDP() / b"x")
    before = int(router.native.memory["scratch"].sum())
    router.check(frame, 0)
    router.check(frame, 0)
    assert int(router.native.memory["scratch"].sum()) == before + 2


def test_instruction_counts(ipv4, ipv6, router):
    """A loose regression bound on the size of the compiled code (printed with -s)."""
    for name, pair in (("ipv4_fwd", ipv4), ("ipv6_fwd", ipv6), ("router", router)):
        print(f"{name}: {instruction_count(pair.fn)} WIR instructions, "
              f"{len(pair.fn.blocks)} blocks, window {pair.fn.window_bytes} bytes")
    v4 = raw(eth() / IP(src="198.18.0.1", dst="10.1.2.3") / UDP() / (b"x" * 64))
    v6 = raw(eth() / IPv6(src="2001:db8:9::9", dst="2001:db8:6:1:2:3:4:5") / UDP()
               / (b"x" * 64))
    for name, pair, frame in (("ipv4_fwd", ipv4, v4), ("ipv6_fwd", ipv6, v6),
                              ("router v4", router, v4), ("router v6", router, v6)):
        outcome, machine = pair.wir_outcome(frame, 0, pair.memory())
        assert outcome.kind == 1
        print(f"{name}: {machine.steps} WIR instructions executed to forward")
    # loose bounds, ~1.35x the counts when set: the 16-8-8 walker 224, Poptrie's 435
    # (pop_count; its three 6-bit levels after the direct read are more code than 8-8)
    bound = {"fib4_trie": 300, "fib4_poptrie": 600}[route_memories(ipv4.program.memories)[0]]
    assert instruction_count(ipv4.fn) < bound
