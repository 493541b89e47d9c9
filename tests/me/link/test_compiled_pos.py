"""A compiled pipeline on two OC-192 POS ports (platform ixp2800-2xoc192pos):
the chip's ports run at the STS-192c payload rate with 5 bytes of line overhead per frame,
CompiledRun offers frames at that rate, and a small PPP-classifying program compiled by the
ME backend does on the chip what the native target does with the same tables, frame for
frame, on scapy-built HDLC/PPP frames (44-byte frames: 40-byte IPv4 packets)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import HDLC, IP, PPP, UDP, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.compiler.me import compile_me
from npkit.link import LinkError, Manifest, for_ports, link, load_platform
from npkit.runtime.compiled import CompiledRun, paced
from npkit.sim.config import Port
from npkit.sim.loader import chip_config_for

from .harness import check_against_native

POS = ("oc192pos", "oc192pos")
# STS-192c payload (FACTS.md section 2), and what the line adds to a frame that already
# carries the 4-byte PPP header: flag 1 + FCS-32 4.
POS_RATE_BPS = Fraction(9_584_640_000)
POS_LINE_BYTES = 5

# A PPP classifier with a header rewrite, a table in SRAM and counters in scratch.
POS_TINY = """
import "std/headers.mbl";

array out_of : bit<16> [256] in sram;     // output port by the IPv4 destination's top byte
counter by_family [2] in scratch;

block pos_tiny {
    let ppp = packet<ppp_t>(0) else drop(runt);
    if ppp.address != 0xff || ppp.control != 0x03 { drop(bad_hdlc); }
    if ppp.protocol == PPP_IPV6 {
        let ip6 = packet<ipv6_t>(4) else drop(short6);
        if ip6.hop_limit <= 1 { exception(2); }
        ip6.hop_limit -= 1;
        by_family.count(1);
        forward(meta.in_port ^ 1);
    }
    if ppp.protocol != PPP_IPV4 { exception(1); }
    let ip = packet<ipv4_t>(4) else drop(short4);
    if ip.ttl <= 1 { exception(3); }
    let old: bit<16> = ip.ttl as bit<16> << 8 | ip.protocol as bit<16>;
    ip.ttl -= 1;
    let new: bit<16> = ip.ttl as bit<16> << 8 | ip.protocol as bit<16>;
    ip.checksum = csum_update(ip.checksum, old, new);
    by_family.count(0);
    forward(out_of[ip.dst[31:24]]);
}
"""


@pytest.fixture(scope="module")
def pos_tiny() -> tuple[Manifest, NativeProgram]:
    program = compile_source(POS_TINY, "pos_tiny.mbl")
    linked = link(program, compile_me(program, "pos_tiny"), "ixp2800-2xoc192pos")
    native = NativeProgram(program)
    for top in range(256):
        native.write("out_of", top, (top * 7 >> 3) & 1)
    return linked, native


def loaded(pos_tiny) -> CompiledRun:
    linked, native = pos_tiny
    run = CompiledRun(linked)
    run.load_memories(native)
    return run


def v4(dst: str, ttl: int = 64, payload: int = 12, uid: int = 0) -> bytes:
    """A POS frame of a 40-byte IPv4 packet by default (20 + 8 + 12)."""
    return raw(HDLC() / PPP() / IP(src="198.18.0.1", dst=dst, ttl=ttl, id=uid & 0xFFFF)
               / UDP(sport=1, dport=2) / (b"p" * payload))


def v6(dst: str, hlim: int = 64, payload: int = 8) -> bytes:
    return raw(HDLC() / PPP() / IPv6(src="2001:db8::1", dst=dst, hlim=hlim)
               / UDP(sport=1, dport=2) / (b"q" * payload))


# --------------------------------------------------------------------------- the ports
def test_link_gives_the_chip_pos_ports(pos_tiny) -> None:
    linked, _ = pos_tiny
    ports = chip_config_for(linked).ports
    assert [(p.kind, Fraction(p.rate_bps), p.overhead_bytes) for p in ports] == \
        [("oc192pos", POS_RATE_BPS, POS_LINE_BYTES)] * 2


def test_platforms_reject_a_wrong_port_list() -> None:
    with pytest.raises(LinkError, match="1 ports"):
        for_ports(("oc192pos",))
    with pytest.raises(LinkError, match="unknown port kind"):
        for_ports(("oc192pos", "oc48"))
    with pytest.raises(LinkError, match="unknown platform"):
        load_platform("ixp2800-3xoc48")


@given(st.lists(st.integers(20, 1500), min_size=1, max_size=30),
       st.sampled_from([Fraction(1), Fraction(3, 4), Fraction(1, 2), Fraction(1, 4)]))
@settings(max_examples=40, deadline=None)
def test_offered_times_follow_the_pos_line_rate(ip_sizes: list[int], load: Fraction) -> None:
    frames = [bytes(4 + n) for n in ip_sizes]         # PPP header + IP packet
    got = paced(frames, float(load), Port.oc192_pos())
    start = Fraction(0)
    for frame, rx in zip(frames, got, strict=True):
        assert rx.time_s == pytest.approx(float(start), rel=1e-12, abs=1e-15)
        start += Fraction((len(frame) + POS_LINE_BYTES) * 8) / POS_RATE_BPS / load


def test_forty_byte_packets_at_line_rate_are_24_45_mpps_per_port() -> None:
    frames = [bytes(44)] * 1001
    times = [rx.time_s for rx in paced(frames, 1.0, Port.oc192_pos())]
    pps = Fraction(1000) / Fraction(times[-1])
    assert abs(pps - POS_RATE_BPS / ((40 + 9) * 8)) < 1    # 24,450,612.2...: 24.451 Mpps (FACTS.md)
    assert round(pps / 1000) == 24_451


def test_a_line_rate_burst_of_forty_byte_packets_matches_native(pos_tiny) -> None:
    """64 back-to-back 44-byte frames on each port (the 128 buffers per port absorb a
    burst) on a chip whose ports are POS ports."""
    run = loaded(pos_tiny)
    assert [p.kind for p in run.chip.config.ports] == list(POS)
    frames = {p: [v4(f"{10 + 100 * p}.0.0.{i}", uid=i) for i in range(64)] for p in (0, 1)}
    result = run.run(frames, load=1.0)
    check_against_native(result, pos_tiny[1], frames)
    assert sum(len(v) for v in result.out.values()) == 128


# --------------------------------------------------------------------------- chip vs native
RULES = [v4("10.1.2.3"), v4("200.1.2.3"), v4("10.1.2.3", ttl=1), v4("9.9.9.9", ttl=2),
         v4("128.0.0.1", payload=600), v6("2001:db8::7"), v6("2001:db8::7", hlim=1),
         raw(HDLC() / PPP(proto=0xC021) / (b"\x01" * 20)),     # LCP: to the control plane
         b"\xff\x03", b"\xfe\x03\x00\x21" + v4("10.0.0.1")[4:],
         v4("10.1.2.3")[:20], v6("2001:db8::9")[:30]]


def test_every_rule_once_matches_the_native_program(pos_tiny) -> None:
    frames = {0: RULES, 1: RULES[::-1]}
    run = loaded(pos_tiny)
    result = run.run(frames, load=0.5)
    check_against_native(result, pos_tiny[1], frames)
    native = pos_tiny[1]
    assert list(run.read_memory("by_family")) == list(native.region("by_family"))
    assert sum(len(v) for v in result.out.values()) >= 8


@st.composite
def pos_frame(draw: st.DrawFn, uid: int) -> bytes:
    kind = draw(st.sampled_from(["v4"] * 6 + ["v6"] * 2 + ["other", "cut"]))
    if kind == "v6":
        return v6(f"2001:db8::{uid:x}", hlim=draw(st.sampled_from([1, 2, 64])),
                  payload=draw(st.sampled_from([0, 8, 300])))
    if kind == "other":
        return raw(HDLC() / PPP(proto=draw(st.sampled_from([0xC021, 0x8021, 0x0281])))
                   / (b"x" * draw(st.integers(0, 40))))
    frame = v4(f"{draw(st.integers(1, 223))}.{uid >> 8 & 255}.{uid & 255}.1",
               ttl=draw(st.sampled_from([1, 2, 64])), uid=uid,
               payload=draw(st.sampled_from([12, 12, 12, 100, 1400])))
    return frame[:draw(st.integers(1, 23))] if kind == "cut" else frame


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_pos_frames_match_the_native_program(pos_tiny, data: st.DataObject) -> None:
    frames = {p: [data.draw(pos_frame((p << 14) | i)) for i in range(data.draw(st.integers(0, 60)))]
              for p in (0, 1)}
    check_against_native(loaded(pos_tiny).run(frames, load=0.8), pos_tiny[1], frames)


def test_the_steady_window_spans_the_asked_part_of_the_offer(pos_tiny) -> None:
    """run(..., window=(a, b)) snapshots the counters a and b of the way through the offered
    span (POS wire time / load, computed here with fractions)."""
    frames = {p: [v4(f"10.0.{p}.{i}", uid=i) for i in range(100)] for p in (0, 1)}
    load = Fraction(1, 2)
    result = loaded(pos_tiny).run(frames, load=float(load), window=(0.25, 0.75))
    assert result.window is not None
    first, last = result.window
    span = Fraction(100 * (44 + POS_LINE_BYTES) * 8) / POS_RATE_BPS / load * 1_400_000_000
    assert abs(Fraction(last["cycles"] - first["cycles"]) - span / 2) <= 2
    forwarded = sum(b["tx_frames"] - a["tx_frames"]
                    for a, b in zip(first["ports"], last["ports"], strict=True))
    assert 0 < forwarded < 200
