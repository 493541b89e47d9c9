"""The linker + dispatch loop + runtime (npkit.link, link/dispatch/fwd.uc,
runtime/compiled.py) with hand-written body fragments (tests/me/link/bodies/*.uc) that obey
the body contract, each the microcode of a small MBL block next to it (*.mbl).

The reference is that MBL block run by the native target (NativeProgram) on the same
scapy-built frames: the chip must send the same bytes out of the same ports in arrival
order per input port, count the same drops by reason name, raise the same exceptions, and
give every buffer back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import ARP, IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.sema import Program
from npkit.link import Manifest
from npkit.link import link_body as link
from npkit.link.plan import BAD_PORT, NO_VERDICT
from npkit.runtime.compiled import CompiledRun

from .harness import check_against_native

BODIES = Path(__file__).parent / "bodies"
WINDOWS = {"swap": 16, "classify": 16, "table": 8, "junk": 8}


def linked(name: str, program_name: str | None = None) -> tuple[Manifest, Program]:
    program = compile_file(BODIES / f"{program_name or name}.mbl")
    body = (BODIES / f"{name}.uc").read_text(encoding="utf-8")
    return link(program, body, WINDOWS[name], pipeline=program_name or name), program


# --------------------------------------------------------------------------- frames
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}


def v4(i: int, payload: int = 18) -> bytes:
    return raw(Ether(**MACS) / IP(src="198.18.0.1", dst=f"10.0.{i >> 8 & 255}.{i & 255}",
                                  id=i & 0xFFFF) / UDP(sport=1, dport=2) / (b"p" * payload))


@st.composite
def frame(draw: st.DrawFn, uid: int) -> bytes:
    kind = draw(st.sampled_from(["v4"] * 6 + ["arp", "v6", "runt", "short", "long"]))
    if kind == "arp":
        return raw(Ether(**MACS) / ARP(pdst=f"10.0.0.{uid & 255}"))
    if kind == "v6":
        return raw(Ether(**MACS) / IPv6(dst="2001:db8::1") / UDP(sport=uid & 0xFFFF) / (b"6" * 20))
    if kind == "runt":
        return bytes(draw(st.binary(min_size=1, max_size=13)))
    if kind == "short":
        return v4(uid)[:draw(st.integers(14, 63))]
    return v4(uid, draw(st.sampled_from([18, 100, 500, 1400] if kind == "long" else [18, 40])))


@st.composite
def traffic(draw: st.DrawFn, max_frames: int) -> dict[int, list[bytes]]:
    return {p: [draw(frame((p << 12) | i)) for i in range(draw(st.integers(0, max_frames)))]
            for p in (0, 1)}


# --------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def swap() -> tuple[Manifest, NativeProgram]:
    program, mbl = linked("swap")
    return program, NativeProgram(mbl)


@pytest.fixture(scope="module")
def classify() -> tuple[Manifest, NativeProgram]:
    program, mbl = linked("classify")
    return program, NativeProgram(mbl)


def test_swap_rewrites_and_crosses_ports(swap) -> None:
    program, native = swap
    frames = {0: [v4(i, 18 + 37 * i) for i in range(12)] + [b"\x01" * 10],
              1: [v4(100 + i) for i in range(7)] + [b"\x02" * 13, v4(7)]}
    result = CompiledRun(program).run(frames, load=0.5)
    check_against_native(result, native, frames)
    assert result.drops == {"runt": 2}
    assert result.frames(1)[0][6:12] == bytes.fromhex("024e50000000")
    assert result.frames(0)[0][6:12] == bytes.fromhex("024e50000001")


def test_classify_verdicts_exceptions_and_drops(classify) -> None:
    program, native = classify
    arp = raw(Ether(**MACS) / ARP(pdst="10.0.0.1")) + bytes(22)    # 64 bytes
    v6 = raw(Ether(**MACS) / IPv6(dst="2001:db8::1") / UDP() / (b"6" * 30))
    frames = {0: [v4(1, 30), arp, v4(2)[:40], v6, v4(3, 600), arp + b"\x01"],
              1: [v6, v4(4, 30), arp, v4(5), b"\x00" * 20]}
    result = CompiledRun(program).run(frames, load=0.5)
    check_against_native(result, native, frames)
    assert result.drops == {"short": 3, "ipv6": 2}
    assert [(e.in_port, e.code, e.next_hop) for e in result.exceptions if e.in_port == 0] == \
        [(0, 7, 0x1234), (0, 7, 0x1234)]


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(frames=traffic(max_frames=40))
def test_random_traffic_matches_the_mbl_block(classify, frames) -> None:
    program, native = classify
    check_against_native(CompiledRun(program).run(frames, load=0.5), native, frames)


def test_tables_in_every_space_are_where_the_memory_map_says() -> None:
    program, mbl = linked("table")
    placed = {m.name: (m.space, m.address, m.bytes) for m in program.program.memories}
    assert placed["out_of"] == ("sram", 4 * 128, 4 * 256)
    assert placed["seen"] == ("scratch", 4 * 4, 8)
    assert placed["bias"] == ("local", 4 * 4, 8)
    native = NativeProgram(mbl)
    for i in range(256):
        native.write("out_of", i, (i * 7) & 1)
    native.write("bias", 1, 1)
    native.write("pad", 0, 0xFFFF)        # never read: in_port 7 does not exist
    run = CompiledRun(program)
    run.load_memories(native)
    assert list(run.read_memory("out_of")) == list(native.region("out_of"))
    frames = {p: [raw(Ether(dst=f"02:00:00:00:00:{i:02x}", src="02:00:00:00:00:01")
                      / IP(dst="10.0.0.1", id=i) / UDP()) for i in range(p, 60, 3)]
              for p in (0, 1)}
    before = native.region("seen").copy()
    result = run.run(frames, load=0.5)
    check_against_native(result, native, frames)
    counted = native.region("seen") - before
    assert list(run.read_memory("seen")) == list(counted) == [20, 20]
    assert all(run.read_memory(name).sum() == 0 for name in ("pad_seen",))


def test_the_dispatch_survives_a_body_that_breaks_the_rules() -> None:
    """Bad port, no verdict, an unknown reason: reserved drop counters; the body clobbers
    every register it may use and the dispatch still finds its handle and port."""
    program, _ = linked("junk", "swap")
    assert program.program.drop_reasons == {0: NO_VERDICT, 1: "runt", 2: BAD_PORT}
    frames = {0: [b"\xff" + v4(1)[1:], v4(2), b"\xfe" + v4(3)[1:], b"\xfd" + v4(4)[1:], v4(5)],
              1: [v4(6), b"\xfe" + v4(7)[1:], v4(8)]}
    result = CompiledRun(program).run(frames, load=0.5)
    assert result.frames(1) == [v4(2), v4(5)]
    assert result.frames(0) == [v4(6), v4(8)]
    assert result.drops == {NO_VERDICT: 3, BAD_PORT: 1}
    assert result.exceptions == []
    assert result.leak_free


def test_order_and_no_loss_with_many_small_frames(swap) -> None:
    """500 64-byte frames per port back to back at 30 % of line rate: every thread of
    every forwarding ME busy, frames of each port still leave in arrival order."""
    program, native = swap
    frames = {p: [v4((p << 10) | i, 18)[:60] + bytes(4) for i in range(500)] for p in (0, 1)}
    result = CompiledRun(program).run(frames, load=0.3)
    check_against_native(result, native, frames)
    assert len(result.frames(0)) == len(result.frames(1)) == 500
