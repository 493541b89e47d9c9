"""examples/l2fwd (DPDK's l2fwd port pairing in MBL) on both targets, against a reference
written here with scapy: a frame in on port p leaves on p ^ 1 with destination
02:00:00:00:00:<out> and source 02:00:00:00:01:<out>, every other byte unchanged, in order."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.link import chip_manifest
from npkit.runtime.compiled import paced
from npkit.runtime.loader import build_from_manifest, leak_check
from npkit.sim.packets import ListSink, ListSource

L2FWD = Path(__file__).parents[2] / "examples" / "l2fwd" / "l2fwd.mbl"
PLATFORM = "ixp2800-4x10gbe"
PORTS = 4


def reference(port: int, frame: bytes) -> tuple[int, bytes]:
    """What DPDK's l2fwd with MAC updating sends: (output port, frame)."""
    out = port ^ 1
    eth = Ether(frame)
    eth.dst = f"02:00:00:00:00:{out:02x}"
    eth.src = f"02:00:00:00:01:{out:02x}"
    return out, raw(eth)


def traffic(port: int, count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    frames = []
    for i in range(count):
        pad = b"x" * rng.randrange(18, 1400)
        if rng.random() < 0.5:
            head = Ether(src="00:11:22:33:44:55", dst="66:77:88:99:aa:bb") / IP(
                src="10.0.0.1", dst=f"10.{port}.0.{i}") / UDP(sport=i, dport=9)
        else:
            head = Ether(src="00:11:22:33:44:56", dst="ff:ff:ff:ff:ff:ff") / IPv6(
                src="2001:db8::1", dst=f"2001:db8::{i + 1:x}") / UDP(sport=i, dport=9)
        frames.append(raw(head / pad))
    return frames


@pytest.fixture(scope="module")
def program():
    return compile_file(L2FWD)


@pytest.fixture(scope="module")
def native(program) -> NativeProgram:
    return NativeProgram(program)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, PORTS - 1), st.binary(min_size=14, max_size=200)),
                min_size=1, max_size=20))
def test_native_pairs_ports_and_rewrites_macs(native, packets: list[tuple[int, bytes]]
                                              ) -> None:
    verdicts = native.run([f for _, f in packets], [p for p, _ in packets])
    assert all(v.kind == "forward" for v in verdicts)
    assert [(v.port, v.data) for v in verdicts] == [reference(p, f) for p, f in packets]


def test_native_drops_runts(native) -> None:
    [verdict] = native.run([b"\x00" * 13], 0)
    assert (verdict.kind, verdict.reason) == ("drop", "runt")


def test_chip_forwards_what_the_reference_does_on_four_ports(program) -> None:
    manifest = chip_manifest(program, PLATFORM)
    loaded = build_from_manifest(manifest)
    chip = loaded.chip
    feeds = {p: traffic(p, 12, seed=p) for p in range(PORTS)}
    sinks = {q: ListSink() for q in range(PORTS)}
    for q, sink in sinks.items():
        chip.attach_sink(q, sink)
    for p, frames in feeds.items():
        chip.attach_source(p, ListSource(paced(frames, 0.3, manifest.ports[p])))
    chip.run(cycles=600_000)
    chip.close_sinks()
    for p, frames in feeds.items():
        out, _ = reference(p, frames[0])
        # the chip's frames carry the FCS the media appends: compare the frame before it
        got = [f.data[:len(want)] for f, want in
               zip(sinks[out].frames, (reference(p, f)[1] for f in frames), strict=True)]
        assert got == [reference(p, f)[1] for f in frames]
    assert all(r.ok for r in leak_check(loaded))
