"""docs/datapath.md's compiled data path with a compiled body (link/dispatch/pool.uc): a
pool of four forwarding MEs per input port receives each frame, runs the body compiled with
the window in local memory (LM_WINDOW_ABI) and transmits it from the same thread; no RX or
TX ME, DRAM only for exceptions.  Two OC-192 POS ports at 90 % of line rate with 40-byte IPv4
packets (44-byte frames) built with scapy; the reference is the native target running the
same MBL block: the chip sends exactly the frames the native target forwards, byte for
byte, in arrival order per port, counts the drops by reason as natively, and puts the
exceptions (code, next hop, the frame as rewritten) on the exception ring in arrival
order.  Linked by npkit.link.pool (link_pool), loaded by CompiledRun.

    .venv/bin/python -m pytest -q tests/me/link/test_pool_path.py -s
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from scapy.all import HDLC, IP, PPP, UDP, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import LM_WINDOW_ABI
from npkit.link import LinkError, Manifest, link, mapping
from npkit.link.pool import link_pool
from npkit.runtime.compiled import CompiledRun, paced
from npkit.runtime.loader import leak_check
from npkit.sim.packets import ListSink, ListSource, RxFrame

from .harness import drive, exceptions_by_port

REPO = Path(__file__).resolve().parents[3]
POOL_MES = 4                       # per input port
LOAD = 0.9                         # of line rate: exceptions write their frame to DRAM
START_S = 20e-6                    # the first frame: 28,000 cycles in, after the pool's
                                   # threads registered (~3 us), as the lab offers them

# l2wire-like forwarding with a header rewrite: PPP checks, TTL and checksum, port ^ 1
WIRE = """
import "std/headers.mbl";

block wire {
    let ppp = packet<ppp_t>(0) else drop(runt);
    if ppp.address != 0xff || ppp.control != 0x03 { drop(bad_hdlc); }
    if ppp.protocol != PPP_IPV4 { exception(1); }
    let ip = packet<ipv4_t>(4) else drop(short4);
    if ip.ttl <= 1 { exception(3); }
    let old: bit<16> = ip.ttl as bit<16> << 8 | ip.protocol as bit<16>;
    ip.ttl -= 1;
    let new: bit<16> = ip.ttl as bit<16> << 8 | ip.protocol as bit<16>;
    ip.checksum = csum_update(ip.checksum, old, new);
    forward(meta.in_port ^ 1);
}
"""


def build() -> tuple[Manifest, NativeProgram]:
    program = compile_source(WIRE, "wire.mbl")
    manifest = link_pool(program, compile_me(program, "wire", LM_WINDOW_ABI),
                         "ixp2800-2xoc192pos", mes_per_port=POOL_MES)
    return manifest, NativeProgram(program, "wire")


def frames(count: int, port: int) -> list[bytes]:
    """44-byte frames: 40-byte IPv4/UDP packets, every 16th with TTL 1 (an exception), every
    23rd IPv6 (an exception in this block), every 37th with a bad HDLC address (a drop)."""
    out = []
    for k in range(count):
        if k % 23 == 22:
            out.append(raw(HDLC() / PPP(proto=0x0057) / IPv6(dst="2001:db8::1", plen=0))[:44])
            continue
        f = raw(HDLC() / PPP(proto=0x0021) / IP(src="198.18.0.1", dst="10.0.0.9", id=k,
                                                  ttl=1 if k % 16 == 15 else 64, tos=port)
                / UDP(sport=9, dport=k) / (b"p" * 12))
        out.append(b"\x0f" + f[1:] if k % 37 == 36 else f)
    return out


@pytest.fixture(scope="module")
def pool_run():
    manifest, native = build()
    count = 2000
    offered = {p: frames(count, p) for p in (0, 1)}
    run = CompiledRun(manifest)
    chip = run.chip
    sinks = {p: ListSink() for p in (0, 1)}
    for p, fs in offered.items():
        chip.attach_source(p, ListSource(offered_at(fs, LOAD, chip.config.ports[p])))
        chip.attach_sink(p, sinks[p])
    verdicts = {p: native.run(fs, p) for p, fs in offered.items()}
    expected_out = {p: [v.data for q in (0, 1) for v in verdicts[q]
                        if v.kind == "forward" and v.port == p] for p in (0, 1)}
    exceptions = drive(run, sum(map(len, offered.values())), sinks)
    return manifest, run, offered, verdicts, expected_out, sinks, exceptions


def offered_at(frames: list[bytes], load: float, port) -> list[RxFrame]:
    """`frames` back to back at `load` x the port's line rate from START_S on: a device that
    is up (frames from cycle 0 met the pool still registering its threads, and 44-byte
    frames at 90 % lost a few at the RBUF then, depending on the dispatch's code layout)."""
    return [RxFrame(f.data, START_S + (f.time_s or 0.0)) for f in paced(frames, load, port)]


def test_the_pool_forwards_what_the_native_target_forwards(pool_run) -> None:
    manifest, run, offered, verdicts, expected_out, sinks, exceptions = pool_run
    for p in (0, 1):
        assert [f.data for f in sinks[p].frames] == expected_out[p]   # bytes and order
    drops = Counter(v.reason for vs in verdicts.values() for v in vs if v.kind == "drop")
    assert run.drop_counts() == dict(drops)
    assert exceptions_by_port(exceptions) == {   # code, next hop, the frame as rewritten
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    assert run.receive_drops() == {}          # no RBUF overflow, nothing too long


def test_only_exceptions_move_dram_bytes(pool_run) -> None:
    _, run, offered, verdicts, expected_out, _, _ = pool_run
    counters = run.chip.counters()
    dram = sum(ch["bytes"] for ch in counters["channels"]["dram"])
    frames_in = sum(map(len, offered.values()))
    per_me = {me["number"]: round((me["busy_cycles"] + me["stalled_cycles"]) / frames_in
                                  * 2 * POOL_MES, 1)
              for me in counters["mes"] if me["instructions"]}
    instructions = sum(me["instructions"] for me in counters["mes"]) / frames_in
    print(f"\npool ({POOL_MES} MEs per port, 44-byte frames at {LOAD:.0%} of OC-192): "
          f"{frames_in} frames in, {sum(map(len, expected_out.values()))} forwarded, "
          f"DRAM {dram / frames_in:.1f} B/frame, {instructions:.1f} instructions/frame, "
          f"busy+stalled cycles per frame an ME handles {per_me} "
          f"(a port's frame every 57.26 cycles at line rate)")
    exceptions = sum(v.kind == "exception" for vs in verdicts.values() for v in vs)
    assert dram == 56 * exceptions            # an exception's 56-byte window; nothing else


def test_link_selects_the_pool_by_an_option() -> None:
    program = compile_source(WIRE, "wire.mbl")
    build = compile_me(program, "wire")                # the default ABI: link()'s mapping
    default = link(program, build, "ixp2800-2xoc192pos")
    pool = link(program, build, "ixp2800-2xoc192pos", pool_mes_per_port=2)
    assert [s.path.name for s in default.images] == ["rx.uc", "fwd.uc", "tx.uc"]
    assert [(s.path.name, s.mes) for s in pool.images] == [("pool.uc", (0, 1, 2, 3))]
    assert pool.program is not None and pool.program.rx_mes == pool.program.tx_mes == ()
    with pytest.raises(LinkError, match="pool mapping needs a body compiled with"):
        link_pool(program, build, "ixp2800-2xoc192pos")
    with pytest.raises(LinkError, match="the pools need 18 MEs"):
        link(program, build, "ixp2800-2xoc192pos", pool_mes_per_port=9)


def sized(count: int, port: int, rng_seed: int) -> list[bytes]:
    """IPv4/UDP frames of 44..1,504 bytes (payload drawn: 1 to 12 RBUF elements), every
    16th with TTL 1."""
    rng = random.Random(rng_seed)
    return [raw(HDLC() / PPP(proto=0x0021) / IP(src="198.18.0.1", dst="10.0.0.9", id=k,
                                                 ttl=1 if k % 16 == 15 else 64, tos=port)
                / UDP(sport=9, dport=k) / (b"q" * rng.choice((12, 13, 24, 40, 60, 96, 120,
                                                               156, 228, 548, 1472))))
            for k in range(count)]


def test_frames_longer_than_the_window_take_a_buffer_for_their_tail() -> None:
    """A frame longer than the 56-byte window: its bytes 56.. go RBUF -> DRAM
    (dram[rbuf_rd]) and DRAM -> TBUF (dram[tbuf_wr]) in quadwords, the header as for short
    frames; a frame of several elements (up to 1,504 bytes: 12) is reassembled in its buffer
    mpacket by mpacket (docs/datapath.md, "Mpackets"); every buffer is back on its freelist and
    every RBUF element free afterwards."""
    manifest, native = build()
    offered = {p: sized(600, p, p + 7) for p in (0, 1)}
    assert any(len(f) > 128 for f in offered[0])
    run = CompiledRun(manifest)
    sinks = {p: ListSink() for p in (0, 1)}
    for p, fs in offered.items():
        run.chip.attach_source(p, ListSource(offered_at(fs, LOAD, run.chip.config.ports[p])))
        run.chip.attach_sink(p, sinks[p])
    exceptions = drive(run, sum(map(len, offered.values())), sinks)
    verdicts = {p: native.run(fs, p) for p, fs in offered.items()}
    for q in (0, 1):
        assert [f.data for f in sinks[q].frames] == [
            v.data for p in (0, 1) for v in verdicts[p] if v.kind == "forward" and v.port == q]
    assert exceptions_by_port(exceptions) == {
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    assert run.receive_drops() == {}
    assert dram_tail_bytes(offered, verdicts) + 56 * len(exceptions) == sum(
        ch["bytes"] for ch in run.chip.counters()["channels"]["dram"])
    assert all(r.ok for r in leak_check(run.loaded))   # every buffer back on its freelist
    assert rbuf_in_use(run) == 0


def dram_tail_bytes(offered: dict[int, list[bytes]], verdicts: dict) -> int:
    """DRAM bytes pool.uc moves for frames past the window (an independent count from the
    design): written, before the verdict, per RBUF element in quadwords (the first
    element's bytes 56..127, every later element's bytes), read back for a forward in
    commands of up to 16 quadwords from byte 56 (a drop's or an exception's is not)."""
    total = 0
    for p, fs in offered.items():
        for f, v in zip(fs, verdicts[p], strict=True):
            if len(f) <= 56:
                continue
            written = 8 * -(-(min(len(f), 128) - 56) // 8)
            written += sum(8 * -(-min(128, len(f) - at) // 8) for at in range(128, len(f), 128))
            total += written + (8 * -(-(len(f) - 56) // 8) if v.kind == "forward" else 0)
    return total


def rbuf_in_use(run: CompiledRun) -> int:
    """RBUF elements not free now (the media's per-port counters)."""
    return sum(int(port["rbuf_elements_in_use"]) for port in run.chip.counters()["ports"])


def test_the_pool_mapping_as_data() -> None:
    program = compile_source(WIRE, "wire.mbl")
    pool = link(program, compile_me(program, "wire"), "ixp2800-2xoc192pos",
                pool_mes_per_port=2)
    mes = mapping(pool).mes
    assert [(a.me, a.role, a.reads) for a in mes] == [
        (0, "fwd", ("port 0",)), (1, "fwd", ("port 0",)),
        (2, "fwd", ("port 1",)), (3, "fwd", ("port 1",))]
    assert all(a.writes[:2] == ("port 0", "port 1") and a.image == "pool.uc" for a in mes)


RX_STAGE = WIRE + """
block rx_one {                          // a receive stage without buffers
    if !media.eop() { media.consume(); }
    if !media.sop() { drop(too_long); } // the last element of a frame of several
    next;
}

pipeline wired {
    ports 0..1;
    stage rx = rx_one;
    stage w = wire;
    rx -> w;
}
"""


def test_a_receive_stage_runs_once_per_element_with_its_status() -> None:
    """pool.uc gives a receive stage every RBUF element with SOP/EOP in metadata word 11 and
    takes media.consume() as an idle turn: frames of one element go on to the next stage,
    frames of several are consumed and dropped at their last element, as the native target
    does with 128-byte elements (NativeProgram.run_media)."""
    program = compile_source(RX_STAGE, "rx_stage.mbl")
    manifest = link(program, compile_me(program, "wired", LM_WINDOW_ABI),
                    "ixp2800-2xoc192pos", pool_mes_per_port=POOL_MES)
    native = NativeProgram(program, "wired")
    offered = {p: sized(300, p, p + 3) for p in (0, 1)}
    run = CompiledRun(manifest)
    sinks = {p: ListSink() for p in (0, 1)}
    for p, fs in offered.items():
        run.chip.attach_source(p, ListSource(offered_at(fs, LOAD, run.chip.config.ports[p])))
        run.chip.attach_sink(p, sinks[p])
    exceptions = drive(run, sum(map(len, offered.values())), sinks)
    verdicts = {p: [v for _, v in native.run_media([(f, p) for f in fs], element_bytes=128)]
                for p, fs in offered.items()}
    assert all(len(verdicts[p]) == len(offered[p]) for p in (0, 1))   # one per frame
    for q in (0, 1):
        assert [f.data for f in sinks[q].frames] == [
            v.data for p in (0, 1) for v in verdicts[p] if v.kind == "forward" and v.port == q]
    drops = Counter(v.reason for vs in verdicts.values() for v in vs if v.kind == "drop")
    assert drops["too_long"] and run.drop_counts() == dict(drops)
    assert exceptions_by_port(exceptions) == {
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    assert run.receive_drops() == {}
    assert all(r.ok for r in leak_check(run.loaded))


def test_buffer_operations_compile_for_the_pool_only() -> None:
    """frame_rx (buffer operations) compiles for pool.uc's body; fwd.uc's refuses its
    receive stage (tests/me/back/test_back_buffers.py, tests/me/link/test_pool_media.py)."""
    from npkit.compiler.mbl import CompileError, compile_file

    program = compile_file(REPO / "tests" / "mbl" / "programs" / "media_pos_router.mbl")
    compile_me(program, "media_pos_router", LM_WINDOW_ABI)
    with pytest.raises(CompileError) as info:
        compile_me(program, "media_pos_router")
    (d,) = info.value.diagnostics
    assert d.kind == "unsupported" and d.location.file.endswith("media_rx.mbl")


def test_a_frame_longer_than_its_buffer_is_counted_not_stored() -> None:
    """A buffer holds 1,920 frame bytes (2,048 less the 128-byte data offset, link.media's
    Layout): a frame of 1,921 bytes or more is counted once under the media's rx_too_long
    and its buffer and elements go back; one of exactly 1,920 bytes and the frames around
    them leave as natively."""
    manifest, native = build()

    def frame(length: int, k: int) -> bytes:
        return raw(HDLC() / PPP(proto=0x0021) / IP(src="198.18.0.1", dst="10.0.0.9", id=k)
                   / UDP(sport=9, dport=k) / (b"r" * (length - 32)))

    lengths = [44, 1921, 300, 1920, 2400, 44, 1504, 1922, 44]
    offered = {0: [frame(n, k) for k, n in enumerate(lengths)], 1: []}
    run = CompiledRun(manifest)
    sinks = {p: ListSink() for p in (0, 1)}
    run.chip.attach_source(0, ListSource(offered_at(offered[0], 0.5, run.chip.config.ports[0])))
    for p in (0, 1):
        run.chip.attach_sink(p, sinks[p])
    drive(run, len(lengths), sinks)
    fits = [f for f in offered[0] if len(f) <= 1920]
    assert [f.data for f in sinks[1].frames] == [v.data for v in native.run(fits, 0)]
    assert run.receive_drops() == {"rx_too_long0": 3}
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0
