"""The POS router with its receive and transmit written in MBL on the chip (issue 12 item 2;
docs/datapath.md, "Receive stages on the chip"): tests/mbl/programs/media_pos_router.mbl is
pos_router.mbl's stages with `frame_rx` first and `frame_tx` last (microblocks/media_rx.mbl,
media_tx.mbl), compiled with LM_WINDOW_ABI and linked as the pool (link/dispatch/pool.uc,
four MEs per port, 2 x OC-192 POS).  frame_rx runs once per RBUF element: a frame of several
elements is gathered with buffer.alloc / store / attach in a buffer of the port's freelist.
Reference: the native target running the same program on the same frames cut into 128-byte
mpackets (NativeProgram.run_media).  Frames of 44..1,504 bytes (1 to 12 elements, with the
element boundaries), IPv4 and IPv6, routed, unrouted, TTL / hop limit 1, bad checksums
(scapy).  The chip forwards exactly the native target's frames, each input port's in order,
drops and exceptions as natively, frame_tx's counters as natively, every buffer back on its
freelist and every RBUF element free; the DRAM bytes are the design's, counted independently.

    .venv/bin/python -m pytest -q tests/me/link/test_pool_media.py -s
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from pathlib import Path

import pytest
from scapy.all import HDLC, IP, PPP, UDP, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file, compile_source
from npkit.compiler.mbl.native import BufferPool
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import LM_WINDOW_ABI
from npkit.link import Manifest, link
from npkit.link.pool import link_pool
from npkit.runtime.compiled import CompiledRun, paced
from npkit.runtime.loader import leak_check
from npkit.runtime.lpm import RouteTables
from npkit.sim.packets import ListSink, ListSource, RxFrame

from .harness import drive, exceptions_by_port, is_interleaving
from .test_pool_path import WIRE, rbuf_in_use, sized
from .test_pool_pos_router import NEXT_HOPS, START_S, V4_DESTS, V4_ROUTES, V6_DESTS, V6_ROUTES

REPO = Path(__file__).resolve().parents[3]
MEDIA_POS_ROUTER = REPO / "tests" / "mbl" / "programs" / "media_pos_router.mbl"
POS_ROUTER = REPO / "examples" / "pos_router" / "pos_router.mbl"
POOL_MES = 4                        # per input port
ELEMENT = 128                       # the RBUF element (ixp2800.toml [msf] element_bytes)
WINDOW = 56                         # pool.uc's header window
LOAD = 0.2                          # of line rate: MBL reassembly is serial per port (docs)
FRAMES = 160                        # per port
# frame lengths: one element (at and around the window), two, and up to twelve, with the
# element boundaries
LENGTHS = (44, 56, 57, 64, 100, 128, 129, 136, 200, 256, 257, 300, 384, 385, 576, 700, 850,
           1000, 1100, 1280, 1300, 1500, 1504)


def frame(length: int, uid: int, port: int, rng: random.Random) -> bytes:
    """A PPP frame of `length` bytes: IPv4 (routed, unrouted, TTL 1, bad checksum) or IPv6
    (routed, unrouted, hop limit 1)."""
    roll = rng.random()
    if roll < 0.25 and length >= 48:
        f = raw(HDLC() / PPP(proto=0x0057) / IPv6(
            src="2001:db8:ffff::1", dst=rng.choice(V6_DESTS), tc=port, fl=uid,
            hlim=1 if rng.random() < 0.05 else 64, nh=59) / (b"6" * (length - 44)))
        return f[:length]
    f = bytearray(raw(HDLC() / PPP() / IP(
        src="198.18.0.1", dst=rng.choice(V4_DESTS), id=uid, tos=port,
        ttl=1 if rng.random() < 0.05 else 64) / UDP(sport=9, dport=uid & 0xFFFF)
        / (b"4" * (length - 32))))
    if roll > 0.96:
        f[14] ^= 0x5A                       # a bad header checksum
    return bytes(f)


def offered_frames(count: int, port: int) -> list[bytes]:
    rng = random.Random(17 + port)
    lengths = [LENGTHS[k % len(LENGTHS)] for k in range(count)]
    rng.shuffle(lengths)
    return [frame(n, k, port, rng) for k, n in enumerate(lengths)]


def tables(native: NativeProgram) -> NativeProgram:
    for index in range(NEXT_HOPS):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 4470})
    RouteTables.of(native).load(V4_ROUTES, V6_ROUTES)
    return native


@functools.cache
def linked(source: Path, entry: str, mes_per_port: int, rx_ports: int | None) -> Manifest:
    """The program compiled for the MEs and linked, once per process for each set of
    arguments: compile_me and link take ~9 s of CPU a call, and this file ran them 23 times
    for three sets of arguments.  A run only reads the manifest (CompiledRun builds a fresh
    chip from it)."""
    program = compile_file(source)
    # link(): the SRAM memories placed on the chip's channels, as every product path
    return link(program, compile_me(program, entry, LM_WINDOW_ABI), "ixp2800-2xoc192pos",
                pool_mes_per_port=mes_per_port, rx_ports=rx_ports)


def run_on_pool(source: Path, entry: str, offered: dict[int, list[bytes]],
                native: NativeProgram, load: float = LOAD, mes_per_port: int = POOL_MES,
                rx_ports: int | None = None):
    run = CompiledRun(linked(source, entry, mes_per_port, rx_ports))
    run.load_memories(native)
    chip = run.chip
    sinks = {p: ListSink() for p in (0, 1)}
    for p, sink in sinks.items():
        chip.attach_sink(p, sink)
    for p, fs in offered.items():
        chip.attach_source(p, ListSource([
            RxFrame(f.data, START_S + (f.time_s or 0.0))
            for f in paced(fs, load, chip.config.ports[p])]))
    exceptions = drive(run, sum(map(len, offered.values())), sinks)
    return run, sinks, exceptions


@pytest.fixture(scope="module")
def media_run():
    program = compile_file(MEDIA_POS_ROUTER)
    native = tables(NativeProgram(program, "media_pos_router",
                                  buffers=BufferPool(count=256, buffer_bytes=2048)))
    offered = {p: offered_frames(FRAMES, p) for p in (0, 1)}
    # the chip's memories from the tables before the native run counts anything
    run, sinks, exceptions = run_on_pool(MEDIA_POS_ROUTER, "media_pos_router", offered,
                                         native)
    verdicts = {p: [v for _, v in native.run_media([(f, p) for f in fs],
                                                   element_bytes=ELEMENT)]
                for p, fs in offered.items()}
    return native, offered, verdicts, run, sinks, exceptions


def test_the_mbl_receive_and_transmit_give_the_native_target_s_frames(media_run) -> None:
    native, offered, verdicts, run, sinks, exceptions = media_run
    assert all(len(verdicts[p]) == len(offered[p]) for p in (0, 1))     # one per frame
    elements = {-(-len(f) // ELEMENT) for fs in offered.values() for f in fs}
    assert elements == set(range(1, 13))
    for q in (0, 1):
        by_input = [[v.data for v in verdicts[p] if v.kind == "forward" and v.port == q]
                    for p in (0, 1)]
        out = [f.data for f in sinks[q].frames]
        assert is_interleaving(out, *by_input), (q, len(out), [len(b) for b in by_input])
    drops = Counter(v.reason for vs in verdicts.values() for v in vs if v.kind == "drop")
    assert run.drop_counts() == dict(drops)
    assert exceptions_by_port(exceptions) == {
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    kinds = Counter(v.kind for vs in verdicts.values() for v in vs)
    assert kinds["forward"] > FRAMES and kinds["drop"] and kinds["exception"]
    assert run.receive_drops() == {}
    # frame_tx's counter and frame_rx's on the chip as natively
    assert list(run.read_memory("tx_frames")[:2]) == [native.read("tx_frames", q)
                                                     for q in (0, 1)]
    assert not any(run.read_memory("rx_incomplete")) and not any(run.read_memory("rx_frame"))


def test_every_buffer_and_element_comes_back(media_run) -> None:
    _, _, _, run, _, _ = media_run
    assert all(r.ok for r in leak_check(run.loaded))
    assert rbuf_in_use(run) == 0


def qw(n: int) -> int:
    """Bytes of the quadwords that hold n bytes."""
    return 8 * -(-n // 8)


def media_dram_bytes(offered: dict[int, list[bytes]], verdicts: dict) -> int:
    """DRAM bytes of the MBL path, from the design (independent of the chip's counters):
    a one-element frame as pool.uc's own receive (bytes 56.. written and, forwarded, read);
    a longer one has its first element's bytes 56.. stored by frame_rx's buffer.store at 0
    (the window stays in the RBUF element, where buffer.attach reads it) and every later
    element stored whole, and, forwarded, bytes 56.. read to the TBUF: as pool.uc's own
    reassembly; an exception writes its 56-byte window back."""
    total = 0
    for p, fs in offered.items():
        for f, v in zip(fs, verdicts[p], strict=True):
            n = len(f)
            if n <= ELEMENT:
                tail = qw(n - WINDOW) if n > WINDOW else 0
                total += tail + (tail if v.kind == "forward" else 0)
            else:
                total += qw(ELEMENT - WINDOW)
                total += sum(qw(min(ELEMENT, n - at)) for at in range(ELEMENT, n, ELEMENT))
                total += qw(n - WINDOW) if v.kind == "forward" else 0
            total += WINDOW if v.kind == "exception" else 0
    return total


def test_the_dram_bytes_are_the_design_s(media_run) -> None:
    _, offered, verdicts, run, _, _ = media_run
    dram = sum(ch["bytes"] for ch in run.chip.counters()["channels"]["dram"])
    assert dram == media_dram_bytes(offered, verdicts)


def test_cost_against_pool_uc_s_own_receive(media_run) -> None:
    """The figures of docs/datapath.md: instructions per frame and DRAM bytes per packet
    of the MBL receive and transmit against the plain POS router on the same frames, whose
    receive and transmit are pool.uc's own."""
    _, offered, verdicts, run, sinks, _ = media_run
    plain = tables(NativeProgram(compile_file(POS_ROUTER)))
    plain_run, plain_sinks, _ = run_on_pool(POS_ROUTER, "pos_router", offered, plain)
    frames = sum(map(len, offered.values()))
    multi = sum(len(f) > ELEMENT for fs in offered.values() for f in fs)
    figures = {}
    for name, r in (("MBL frame_rx/frame_tx", run), ("pool.uc's own", plain_run)):
        counters = r.chip.counters()
        figures[name] = (sum(me["instructions"] for me in counters["mes"]),
                         sum(ch["bytes"] for ch in counters["channels"]["dram"]))
    print(f"\n{frames} frames (44..1,504 B, {multi} of several elements) at {LOAD:.0%} of "
          f"2 x OC-192 POS, {POOL_MES} MEs per port:")
    for name, (instructions, dram) in figures.items():
        print(f"  {name}: {instructions / frames:.1f} instructions per frame, "
              f"{dram / frames:.1f} DRAM bytes per frame")
    assert plain_run.receive_drops() == {}
    for q in (0, 1):              # the same frames leave (the ports' interleaving may differ)
        assert Counter(f.data for f in plain_sinks[q].frames) == Counter(
            f.data for f in sinks[q].frames)
    # the same DRAM bytes: the MBL path keeps a frame's window in its first RBUF element as
    # pool.uc's own reassembly does (before, it stored it and read it back: 112 B a frame
    # of several elements)
    assert multi and figures["MBL frame_rx/frame_tx"][1] == figures["pool.uc's own"][1]


SOP_ONLY = WIRE + """
block first_only {                      // a frame's first element is the packet
    if !media.sop() { media.consume(); }
    next;
}

pipeline firsts {
    ports 0..1;
    stage rx = first_only;
    stage w = wire;
    rx -> w;
}
"""


def test_an_mpacket_passed_on_without_attach_leaves_whole() -> None:
    """A receive stage may pass a frame's first element on as the packet, without a buffer
    of its own: pool.uc copies its bytes past the window to a buffer at the body's exit,
    as for a one-element frame, and the chip sends the native target's 128-byte packets."""
    program = compile_source(SOP_ONLY, "firsts.mbl")
    manifest = link_pool(program, compile_me(program, "firsts", LM_WINDOW_ABI),
                         "ixp2800-2xoc192pos", mes_per_port=POOL_MES)
    native = NativeProgram(program, "firsts")
    offered = {p: sized(120, p, p + 11) for p in (0, 1)}
    run = CompiledRun(manifest)
    sinks = {p: ListSink() for p in (0, 1)}
    for p, fs in offered.items():
        run.chip.attach_source(p, ListSource(paced(fs, LOAD, run.chip.config.ports[p])))
        run.chip.attach_sink(p, sinks[p])
    exceptions = drive(run, sum(map(len, offered.values())), sinks)
    verdicts = {p: [v for _, v in native.run_media([(f, p) for f in fs],
                                                   element_bytes=ELEMENT)]
                for p, fs in offered.items()}
    forwarded = [v for vs in verdicts.values() for v in vs if v.kind == "forward"]
    assert any(len(v.data) == ELEMENT for v in forwarded)      # first elements passed on
    for q in (0, 1):
        assert [f.data for f in sinks[q].frames] == [
            v.data for p in (0, 1) for v in verdicts[p] if v.kind == "forward" and v.port == q]
    assert exceptions_by_port(exceptions) == {
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    assert run.receive_drops() == {}
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0


def routed(length: int, uid: int, port: int) -> bytes:
    """A routed IPv4 frame of `length` bytes (next hop 3: port 1)."""
    return raw(HDLC() / PPP() / IP(src="198.18.0.1", dst="10.1.2.3", id=uid, tos=port)
               / UDP(sport=9, dport=uid) / (b"s" * (length - 32)))


def test_cost_by_frame_size() -> None:
    """docs/datapath.md's table: per routed frame of one size (one to twelve elements), the
    instructions (all MEs) and DRAM bytes of the MBL receive and transmit and of pool.uc's
    own, 60 frames per port at 20 % of line rate; the MBL path's DRAM bytes are the
    design's (media_dram_bytes) and pool.uc's."""
    rows = []
    for length in (44, 128, 260, 580, 1504):
        offered = {p: [routed(length, k, p) for k in range(60)] for p in (0, 1)}
        media = tables(NativeProgram(compile_file(MEDIA_POS_ROUTER), "media_pos_router",
                                     buffers=BufferPool(count=256, buffer_bytes=2048)))
        plain = tables(NativeProgram(compile_file(POS_ROUTER)))
        cost = []
        for source, entry, native in ((MEDIA_POS_ROUTER, "media_pos_router", media),
                                      (POS_ROUTER, "pos_router", plain)):
            run, sinks, _ = run_on_pool(source, entry, offered, native)
            assert run.receive_drops() == {} and len(sinks[1].frames) == 120
            counters = run.chip.counters()
            cost.append((sum(me["instructions"] for me in counters["mes"]) / 120,
                         sum(ch["bytes"] for ch in counters["channels"]["dram"]) / 120))
        verdicts = {p: [v for _, v in media.run_media([(f, p) for f in fs],
                                                      element_bytes=ELEMENT)]
                    for p, fs in offered.items()}
        assert cost[0][1] * 120 == media_dram_bytes(offered, verdicts)
        assert cost[0][1] == cost[1][1]
        rows.append((length, *cost[0], *cost[1]))
    print("\nframe B | MBL instr/frame | MBL DRAM B | pool.uc instr/frame | pool.uc DRAM B")
    for row in rows:
        print("{} | {:.1f} | {:.0f} | {:.1f} | {:.0f}".format(*row))


def test_the_receive_rate_the_serial_receive_turn_allows() -> None:
    """frame_rx's turns (media.turn_begin() .. turn_end(): its state in scratch changes in
    mpacket order) are serial per port: the rate they allow, in RBUF drops at a load, with
    44-byte frames and with this file's mix of sizes, on 2 ports x 4 MEs (docs/datapath.md,
    "Receive stages on the chip").  The mix at 70 % loses nothing (before frame_rx's turn
    waited for nothing: 6 of 320 at 50 %)."""
    drops = {}
    for name, make, loads in (("44 B", lambda p: [routed(44, k, p) for k in range(400)],
                               (0.4, 0.45)),
                              ("mix", lambda p: offered_frames(FRAMES, p), (0.7, 1.0))):
        offered = {p: make(p) for p in (0, 1)}
        for load in loads:
            native = tables(NativeProgram(compile_file(MEDIA_POS_ROUTER), "media_pos_router",
                                          buffers=BufferPool(count=256, buffer_bytes=2048)))
            run, _, _ = run_on_pool(MEDIA_POS_ROUTER, "media_pos_router", offered, native,
                                    load)
            drops[name, load] = sum(run.receive_drops().values())
            assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0
    print("\nRBUF drops of 2 x", {k: len(v) for k, v in (("44 B", range(400)),
                                                          ("mix", range(FRAMES)))},
          "frames:", {f"{name} at {load:.0%}": n for (name, load), n in drops.items()})
    assert drops["44 B", 0.4] == 0 and drops["mix", 0.7] == 0


def test_a_frame_longer_than_a_buffer_is_dropped_as_natively() -> None:
    """frame_rx's store fails once a frame passes the buffer's 1,920 data bytes: the chip
    takes the `else` (buffer back, drop too_long, the frame's later elements consumed) at
    the same mpacket as the native target; frames of exactly 1,920 bytes and the frames
    around the long ones leave as natively."""
    lengths = [44, 1921, 300, 1920, 2400, 44, 1504, 1928, 44]
    offered = {0: [routed(n, k, 0) for k, n in enumerate(lengths)], 1: []}
    # the native buffers as large as the chip's data area (link.media's Layout: 2,048-byte
    # buffers, data from byte 128)
    native = tables(NativeProgram(compile_file(MEDIA_POS_ROUTER), "media_pos_router",
                                  buffers=BufferPool(count=256, buffer_bytes=1920)))
    run, sinks, _ = run_on_pool(MEDIA_POS_ROUTER, "media_pos_router", offered, native)
    verdicts = [v for _, v in native.run_media([(f, 0) for f in offered[0]],
                                               element_bytes=ELEMENT)]
    assert [v.reason for v in verdicts if v.kind == "drop"] == ["too_long"] * 3
    assert [f.data for f in sinks[1].frames] == [v.data for v in verdicts
                                                 if v.kind == "forward"]
    assert run.drop_counts() == {"too_long": 3} and run.receive_drops() == {}
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0


def test_the_receive_rate_on_the_npf_chip() -> None:
    """The same on the NPF system's chip: one receiving port, a pool of all 16 MEs.  A
    one-element frame holds the receive turn for a few instructions only (frame_rx touches
    no per-port state for it): 44-byte frames at line rate lose nothing; an mpacket of a
    longer frame holds it for a few instructions and scratch commands it does not wait for
    there: 260-byte frames (three elements in ~270 cycles) and the mix at line rate lose
    nothing either; nor do 132-byte frames (two elements, the second 4 bytes, four frames
    in the 640 cycles of one ME's 8 contexts: 47 dropped of 300 while the first mpacket's
    store waited for its DRAM copy and descriptor write before the turn, docs/datapath.md,
    "Not done yet" 1 (c))."""
    drops = {}
    for name, make, loads in (("44 B", lambda: [routed(44, k, 0) for k in range(400)],
                               (0.8, 1.0)),
                              ("260 B", lambda: [routed(260, k, 0) for k in range(300)],
                               (1.0,)),
                              ("132 B", lambda: [routed(132, k, 0) for k in range(300)],
                               (1.0,)),
                              ("mix", lambda: offered_frames(FRAMES, 0), (0.5, 1.0))):
        offered = {0: make()}
        for load in loads:
            native = tables(NativeProgram(compile_file(MEDIA_POS_ROUTER), "media_pos_router",
                                          buffers=BufferPool(count=256, buffer_bytes=2048)))
            run, _, _ = run_on_pool(MEDIA_POS_ROUTER, "media_pos_router", offered, native,
                                    load, mes_per_port=16, rx_ports=1)
            drops[name, load] = sum(run.receive_drops().values())
            assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0
    print("\nRBUF drops, one port, 16 MEs (400 44-byte frames, 300 of 260 B and of 132 B, "
          "160 of the mix):", {f"{name} at {load:.0%}": n for (name, load), n in drops.items()})
    assert drops["44 B", 1.0] == 0 and drops["260 B", 1.0] == 0 and drops["mix", 1.0] == 0
    assert drops["132 B", 1.0] == 0
