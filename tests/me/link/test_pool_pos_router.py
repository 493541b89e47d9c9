"""The compiled POS router (examples/pos_router/pos_router.mbl: ppp_classify -> ipv4_pos_fwd |
ipv6_pos_fwd) on docs/datapath.md's compiled data path (npkit.link.pool: a pool of four
forwarding MEs per port, link/dispatch/pool.uc, the body compiled with the window in local
memory), 2 x OC-192 POS at line rate.  Reference: the native target with the same tables
(a handful of IPv4 and IPv6 routes, 16 next hops: next hop i leaves by port i & 1): every
frame it forwards leaves the chip's port byte for byte, each input port's frames in order,
drops are counted by reason and exceptions per input port as natively.  Traffic: scapy-built
44-byte frames (40-byte IPv4 and IPv6 packets), routed, unrouted, TTL / hop limit 1,
to the router itself, with bad checksums.  The DRAM bytes per frame (issue 12's acceptance:
at most 96 B at 40 B) come from the chip's counters:

    .venv/bin/python -m pytest -q tests/me/link/test_pool_pos_router.py -s
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from scapy.all import HDLC, IP, PPP, UDP, IPv6, raw

from npkit.bench.tester.stream import IMIX_SIZES, IMIX_WEIGHTS
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import LM_WINDOW_ABI
from npkit.link import link
from npkit.runtime.compiled import CompiledRun, paced
from npkit.runtime.loader import leak_check
from npkit.runtime.lpm import RouteTables
from npkit.sim.packets import ListSink, ListSource, RxFrame

from .harness import drive, exceptions_by_port, is_interleaving
from .test_pool_path import dram_tail_bytes, rbuf_in_use

REPO = Path(__file__).resolve().parents[3]
POS_ROUTER = REPO / "examples" / "pos_router" / "pos_router.mbl"
POOL_MES = 8
NEXT_HOPS = 16
START_S = 20e-6                     # the first frame: 28,000 cycles in (start-up)
FRAMES = 2000                       # per port
LOAD = 0.75                         # of line rate: the pool keeps up (see the last test)
V4_ROUTES = {(0x0A000000, 8): 1, (0x0A010000, 16): 2, (0x0A010200, 24): 3,
             (0xC6336400, 24): 4, (0x64400000, 10): 5, (0x0B000000, 8): 6}
V6_ROUTES = {(0x20010DB8 << 96, 32): 7, (0x20010DB8000100000000000000000000, 48): 8,
             (0x2A000000 << 96, 12): 9}
V4_DESTS = ["10.9.8.7", "10.1.7.7", "10.1.2.3", "198.51.100.20", "100.64.1.1", "11.2.3.4",
            "192.0.2.1"]                                # the last one: no route
V6_DESTS = ["2001:db8::5", "2001:db8:1::9", "2a00:1::1", "3fff::1"]


def v4(dst: str, uid: int, ttl: int = 64, port: int = 0, ip_bytes: int = 40) -> bytes:
    return raw(HDLC() / PPP() / IP(src="198.18.0.1", dst=dst, ttl=ttl, id=uid, tos=port)
               / UDP(sport=1000 + uid % 7, dport=53) / (b"p" * (ip_bytes - 28)))


def v6(dst: str, uid: int, hlim: int = 64, port: int = 0) -> bytes:
    return raw(HDLC() / PPP(proto=0x0057) / IPv6(src="2001:db8:ffff::1", dst=dst, hlim=hlim,
                                                 tc=port,
                                                 fl=uid & 0xFFFFF, nh=59, plen=0))


def frames(count: int, port: int) -> list[bytes]:
    """Unique frames (IP id / flow label = index, TOS / traffic class = port)."""
    rng = random.Random(port + 1)
    out = []
    for uid in range(count):
        roll = rng.random()
        if roll < 0.7:
            out.append(v4(rng.choice(V4_DESTS), uid, 1 if rng.random() < 0.03 else 64, port))
        elif roll < 0.95:
            out.append(v6(rng.choice(V6_DESTS), uid, 1 if rng.random() < 0.03 else 64, port))
        else:
            f = bytearray(v4(rng.choice(V4_DESTS), uid, port=port))
            f[14] ^= 0x5A                                # a bad header checksum
            out.append(bytes(f))
    return out


def run_at(load: float | None, mes_per_port: int = POOL_MES, rx_ports: int | None = None,
           count: int = FRAMES, make=None):
    """The router on the pool, `count` frames per receiving port offered at `load` x line
    rate (None: back to back); (manifest, run, offered, native verdicts, sinks,
    exceptions)."""
    program = compile_file(POS_ROUTER)
    entry = next(iter(program.pipelines))
    # link(), as every product path: it places the SRAM memories on the chip's channels
    # (link_pool alone leaves the flat layout on invented 64 MB channels)
    manifest = link(program, compile_me(program, entry, LM_WINDOW_ABI), "ixp2800-2xoc192pos",
                    pool_mes_per_port=mes_per_port, rx_ports=rx_ports)
    native = NativeProgram(program)
    for index in range(NEXT_HOPS):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 4470})
    RouteTables.of(native).load(V4_ROUTES, V6_ROUTES)
    run = CompiledRun(manifest)
    run.load_memories(native)
    offered = {p: (make or frames)(count, p) for p in range(rx_ports or 2)}
    verdicts = {p: native.run(fs, p) for p, fs in offered.items()}
    chip = run.chip
    sinks = {p: ListSink() for p in (0, 1)}
    for p, sink in sinks.items():
        chip.attach_sink(p, sink)
    for p, fs in offered.items():            # after the threads have registered
        chip.attach_source(p, ListSource([
            RxFrame(f.data, START_S + (f.time_s or 0.0))
            for f in paced(fs, load or 1.0, chip.config.ports[p])]))
    exceptions = drive(run, sum(map(len, offered.values())), sinks)
    return manifest, run, offered, verdicts, sinks, exceptions


@pytest.fixture(scope="module")
def pos_run():
    result = run_at(LOAD)
    assert all(len(f) == 44 for fs in result[2].values() for f in fs)
    return result


def test_the_pool_routes_as_the_native_router(pos_run) -> None:
    manifest, run, offered, verdicts, sinks, exceptions = pos_run
    for q in (0, 1):
        by_input = [[v.data for v in verdicts[p] if v.kind == "forward" and v.port == q]
                    for p in (0, 1)]
        out = [f.data for f in sinks[q].frames]
        assert is_interleaving(out, *by_input), (q, len(out), [len(b) for b in by_input])
    drops = Counter(v.reason for vs in verdicts.values() for v in vs if v.kind == "drop")
    assert run.drop_counts() == dict(drops)
    assert exceptions_by_port(exceptions) == {   # code, next hop, the frame as rewritten
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    assert run.receive_drops() == {}
    kinds = Counter(v.kind for vs in verdicts.values() for v in vs)
    assert kinds["forward"] > 3000 and kinds["drop"] and kinds["exception"]


def test_dram_bytes_per_40_byte_packet(pos_run) -> None:
    """Forwarded frames move no DRAM byte; an exception writes its 56-byte window to its
    buffer (the XScale's copy): nothing else touches DRAM."""
    _, run, offered, verdicts, _, exceptions = pos_run
    counters = run.chip.counters()
    frames_in = sum(map(len, offered.values()))
    forwarded = sum(v.kind == "forward" for vs in verdicts.values() for v in vs)
    dram = sum(ch["bytes"] for ch in counters["channels"]["dram"])
    sram = sum(ch["bytes"] for ch in counters["channels"]["sram"])
    per_me = {me["number"]: round((me["busy_cycles"] + me["stalled_cycles"]) / frames_in
                                  * 2 * POOL_MES, 1)
              for me in counters["mes"] if me["instructions"]}
    instructions = sum(me["instructions"] for me in counters["mes"]) / frames_in
    print(f"\npos_router on the pool ({POOL_MES} MEs per port), {frames_in} 44-byte frames "
          f"at {LOAD:.0%} of 2 x OC-192 POS line rate: {forwarded} forwarded, "
          f"{len(exceptions)} exceptions; DRAM {dram} B = {dram / frames_in:.1f} B/frame, "
          f"of which forwarded frames {dram - 56 * len(exceptions)} B; SRAM "
          f"{sram / frames_in:.1f} B/frame, {instructions:.1f} instructions/frame, "
          f"busy+stalled cycles per frame an ME handles {per_me} ({57.26 * POOL_MES:.0f} "
          f"at line rate)")
    assert dram == 56 * len(exceptions)           # forwarding: 0 B (issue 12: at most 96)


def test_back_to_back_at_line_rate() -> None:
    """At 100 % the pool falls a little behind (RBUF drops, printed): what leaves is still
    exactly native frames in each input port's order, and only exceptions touch DRAM."""
    _, run, offered, verdicts, sinks, exceptions = run_at(None)
    for q in (0, 1):
        out = [f.data for f in sinks[q].frames]
        for p in (0, 1):
            mine = [v.data for v in verdicts[p] if v.kind == "forward" and v.port == q]
            sent = iter(mine)
            assert all(any(f == m for m in sent) for f in out if f in set(mine))
    counters = run.chip.counters()
    frames_in = sum(map(len, offered.values()))
    lost = sum(run.receive_drops().values())
    span = FRAMES * 57.26                      # cycles the offer lasts at line rate (44 B)
    busy = [round(ch["busy_cycles"] / span, 2) for ch in counters["channels"]["sram"]]
    print(f"\nback to back at line rate: {lost} of {frames_in} frames dropped at the RBUF "
          f"({lost / frames_in:.1%}), {sum(len(s.frames) for s in sinks.values())} sent; "
          f"SRAM channels busy {busy} of the offer's {span:.0f} cycles")
    assert sum(ch["bytes"] for ch in counters["channels"]["dram"]) == 56 * len(exceptions)


def test_one_port_per_chip_with_all_sixteen_mes_at_line_rate() -> None:
    """The NPF system's chip (FACTS.md section 1a: one OC-192 POS port per chip; port 0
    receives, both ports transmit): one pool of 16 MEs, 4,000 frames back to back."""
    _, run, offered, verdicts, sinks, exceptions = run_at(None, 16, 1, 4000)
    counters = run.chip.counters()
    dram = sum(ch["bytes"] for ch in counters["channels"]["dram"])
    per_me = [round((me["busy_cycles"] + me["stalled_cycles"]) / 4000 * 16)
              for me in counters["mes"] if me["instructions"]]
    print(f"\none port, 16 MEs, 4000 44-byte frames back to back: RBUF drops "
          f"{run.receive_drops()}, DRAM {dram} B ({len(exceptions)} exceptions x 56), "
          f"busy+stalled cycles per frame an ME handles {min(per_me)}..{max(per_me)} "
          f"({57.26 * 16:.0f} at line rate)")
    assert run.receive_drops() == {}
    for q in (0, 1):
        assert [f.data for f in sinks[q].frames] == [
            v.data for v in verdicts[0] if v.kind == "forward" and v.port == q]
    assert exceptions_by_port(exceptions) == {
        0: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[0]
            if v.kind == "exception"]}
    assert dram == 56 * len(exceptions)


@pytest.mark.parametrize("ip_bytes", [40, 64, 124, 128, 256, 576, 1500])
def test_dram_bytes_per_forwarded_packet_by_size(ip_bytes: int) -> None:
    """Routed IPv4 packets of one size on one port with 16 MEs, back to back: the DRAM
    bytes per packet are the tail's (bytes 56.. of the frame, in quadwords) written once and
    read once, as docs/datapath.md's table has them (a frame of several RBUF elements
    writes its bytes element by element: the same quadwords)."""
    def make(count: int, port: int) -> list[bytes]:
        rng = random.Random(port + 11)
        return [v4(rng.choice(V4_DESTS[:-1]), uid, 64, port, ip_bytes) for uid in range(count)]

    count = 2000 if ip_bytes <= 256 else 500
    _, run, offered, verdicts, sinks, exceptions = run_at(None, 16, 1, count, make)
    frame = ip_bytes + 4
    counters = run.chip.counters()
    dram = sum(ch["bytes"] for ch in counters["channels"]["dram"])
    sent = sum(len(s.frames) for s in sinks.values())
    print(f"\n{ip_bytes}-byte IPv4 ({frame}-byte frames), one port, 16 MEs, back to back: "
          f"{sent} of {count} sent, RBUF drops {run.receive_drops()}, DRAM "
          f"{dram / count:.1f} B per packet")
    assert sent == count and not exceptions and run.receive_drops() == {}
    for q in (0, 1):
        assert [f.data for f in sinks[q].frames] == [
            v.data for v in verdicts[0] if v.kind == "forward" and v.port == q]
    assert dram == count * 2 * 8 * max(0, -(-(frame - 56) // 8))
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0


def sized_mix(sizes: list[int] | None, seed: int, imix: bool = False):
    """A frame maker for run_at: IPv4 and IPv6 packets of the given IP sizes in turn (None:
    a random mix of the NPF sizes and sizes drawn from 40..1,500; imix: 40 / 576 / 1,500
    drawn 7:4:1, bench.tester's IMIX), routed, unrouted, TTL / hop limit 1, bad IPv4
    checksums, as frames() draws them."""
    def make(count: int, port: int) -> list[bytes]:
        rng = random.Random(seed + port)
        out = []
        for uid in range(count):
            if imix:
                size = rng.choices(IMIX_SIZES, IMIX_WEIGHTS)[0]
            else:
                size = (sizes[uid % len(sizes)] if sizes else
                        rng.choice((40, 64, 128, 256, 576, 1500, rng.randrange(40, 1501))))
            roll = rng.random()
            if roll < 0.7:
                out.append(v4(rng.choice(V4_DESTS), uid, 1 if rng.random() < 0.03 else 64,
                              port, size))
            elif roll < 0.95:
                out.append(raw(HDLC() / PPP(proto=0x0057)
                               / IPv6(src="2001:db8:ffff::1", dst=rng.choice(V6_DESTS),
                                      hlim=1 if rng.random() < 0.03 else 64, tc=port,
                                      fl=uid & 0xFFFFF, nh=59) / (b"s" * (size - 40))))
            else:
                f = bytearray(v4(rng.choice(V4_DESTS), uid, port=port, ip_bytes=size))
                f[14] ^= 0x5A                            # a bad header checksum
                out.append(bytes(f))
        return out
    return make


@pytest.mark.parametrize("sizes", [[40], [128], [256], [576], [1500], None],
                         ids=["40", "128", "256", "576", "1500", "mix"])
def test_frames_of_several_elements_on_two_ports(sizes: list[int] | None) -> None:
    """Frames of 1..12 RBUF elements (128 B each) on 2 x OC-192 POS at 75 % of line rate
    (back to back, 40 B loses frames at the RBUF on two ports: see the line-rate test), 8
    MEs per port: each output port's frames are the native target's, each input port's in order;
    drops and exceptions (with their whole frames) as natively; every buffer back on its
    freelist and every RBUF element free; the DRAM bytes are exactly the design's (the
    bytes past the window stored per element, read back once when forwarded, 56 B per
    exception's window: docs/datapath.md, "Mpackets")."""
    count = 300 if sizes is None or max(sizes) > 256 else 600
    _, run, offered, verdicts, sinks, exceptions = run_at(
        LOAD, count=count, make=sized_mix(sizes, 31))
    for q in (0, 1):
        by_input = [[v.data for v in verdicts[p] if v.kind == "forward" and v.port == q]
                    for p in (0, 1)]
        assert is_interleaving([f.data for f in sinks[q].frames], *by_input), q
    drops = Counter(v.reason for vs in verdicts.values() for v in vs if v.kind == "drop")
    assert run.drop_counts() == dict(drops)
    assert exceptions_by_port(exceptions) == {
        p: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[p] if v.kind == "exception"]
        for p in (0, 1)}
    assert run.receive_drops() == {}
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0
    dram = sum(ch["bytes"] for ch in run.chip.counters()["channels"]["dram"])
    assert dram == dram_tail_bytes(offered, verdicts) + 56 * len(exceptions)
    forwarded = [(len(f), v) for p in (0, 1) for f, v in zip(offered[p], verdicts[p],
                                                             strict=True)
                 if v.kind == "forward"]
    fwd_dram = dram_tail_bytes({0: [b"x" * n for n, _ in forwarded]},
                               {0: [v for _, v in forwarded]})
    frames_in = sum(map(len, offered.values()))
    print(f"\nIP sizes {sizes or 'mix'}: {frames_in} frames at {LOAD:.0%} of 2 x OC-192 POS, "
          f"{len(forwarded)} forwarded, {len(exceptions)} exceptions, "
          f"{sum(drops.values())} drops; DRAM {dram} B = {dram / frames_in:.1f} B/frame, "
          f"{fwd_dram / max(1, len(forwarded)):.1f} B per forwarded packet")


def test_one_port_per_chip_at_line_rate_with_the_imix() -> None:
    """The NPF system's chip (one OC-192 POS port, 16 MEs) back to back at 100 % of line rate
    with IMIX sizes (40 / 576 / 1,500 IP bytes, 7:4:1) and frames()'s kinds: no RBUF drop;
    what leaves is the native target's frames in order, exceptions as natively, the DRAM
    bytes exactly the design's (printed per packet), every buffer and element back."""
    count = 2000
    _, run, offered, verdicts, sinks, exceptions = run_at(
        None, 16, 1, count, sized_mix(None, 41, imix=True))
    counters = run.chip.counters()
    dram = sum(ch["bytes"] for ch in counters["channels"]["dram"])
    busy = [round(ch["busy_cycles"] / run.chip.now, 2) for ch in counters["channels"]["dram"]]
    forwarded = sum(v.kind == "forward" for v in verdicts[0])
    print(f"\none port, 16 MEs, {count} IMIX frames back to back: RBUF drops "
          f"{run.receive_drops()}, DRAM {dram} B = {dram / count:.1f} B per packet "
          f"(channels busy {busy} of {run.chip.now} cycles), {forwarded} forwarded, "
          f"{len(exceptions)} exceptions")
    assert run.receive_drops() == {}
    for q in (0, 1):
        assert [f.data for f in sinks[q].frames] == [
            v.data for v in verdicts[0] if v.kind == "forward" and v.port == q]
    assert exceptions_by_port(exceptions) == {
        0: [(v.code, v.next_hop & 0xFFFF, v.data) for v in verdicts[0]
            if v.kind == "exception"]}
    assert dram == dram_tail_bytes(offered, verdicts) + 56 * len(exceptions)
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0


def test_one_port_per_chip_keeps_its_line_busy_with_1284_byte_frames() -> None:
    """The NPF system's chip (one OC-192 POS port, 16 MEs), 2,000 1,280-byte IPv4 packets
    (1,284-byte frames: 11 RBUF / TBUF elements, the last of 4 bytes) back to back at 100 %
    of line rate, all routed to the other port, as the NPF lab sends them: no RBUF drop, the
    frames are the native target's in order, and the output line (as fast as the input)
    idles only while the first frames go through (printed).  Before pool.uc wrote each TBUF
    element as soon as it was free, a frame waited for the whole frame ahead to leave (two
    such frames fill a port's 32-element partition) and then for its copies, longer than a
    frame takes on the line: the line idled every other frame and 12 of the first 300
    frames were lost (docs/datapath.md, "Line rate with frames of several elements")."""
    count = 2000

    def make(n: int, port: int) -> list[bytes]:
        return [v4(V4_DESTS[0], uid, 64, port, 1280) for uid in range(n)]

    _, run, offered, verdicts, sinks, exceptions = run_at(None, 16, 1, count, make)
    out = sinks[1].frames
    idle = [(out[k].first_bit_cycle - out[k - 1].last_bit_cycle, k) for k in range(1, len(out))
            if out[k].first_bit_cycle > out[k - 1].last_bit_cycle]
    print(f"\none port, 16 MEs, {count} 1,284-byte frames back to back: RBUF drops "
          f"{run.receive_drops()}, {len(out)} sent; the output line idled "
          f"{sum(g for g, _ in idle)} cycles before {len(idle)} frames {idle[:8]} "
          f"(one frame: {out[1].last_bit_cycle - out[1].first_bit_cycle} cycles)")
    assert run.receive_drops() == {} and not exceptions
    assert [f.data for f in out] == [v.data for v in verdicts[0] if v.kind == "forward"]
    assert not sinks[0].frames
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0


def test_one_port_per_chip_frees_the_first_element_of_two_element_frames_early() -> None:
    """The NPF chip's pool (one port, 16 MEs), 2,000 128-byte IPv6 packets (132-byte
    frames: two RBUF elements, the second of 4 bytes) back to back at line rate: the frames
    are the native target's in order, and the RBUF keeps room.  A frame of two mpackets
    frees its first element once its EOP thread has stored that element's bytes 56.. and
    read the header window, before the body; when it was held until the EOP thread's
    ALLOC turn (~3,000 cycles after the frame's last bit, through the IPv6 body), all 32
    elements of the partition filled (high water 32) and the NPF 128-byte IPv6 trials lost
    a frame in ~175,000 (docs/datapath.md, "Line rate with frames of several elements");
    now the high water is 18 (printed)."""
    def make(n: int, port: int) -> list[bytes]:
        return [raw(HDLC() / PPP(proto=0x0057) / IPv6(src="2001:db8:ffff::1", dst=V6_DESTS[0],
                                                      hlim=64, tc=port, fl=uid & 0xFFFFF,
                                                      nh=59) / (b"s" * 88))
                for uid in range(n)]

    _, run, offered, verdicts, sinks, exceptions = run_at(None, 16, 1, 2000, make)
    port = run.chip.counters()["ports"][0]
    print(f"\none port, 16 MEs, 2000 132-byte IPv6 frames back to back: RBUF drops "
          f"{run.receive_drops()}, RBUF high water {port['rbuf_high_water_elements']} of the "
          f"partition's 32 elements")
    assert len(offered[0][0]) == 132 and run.receive_drops() == {} and not exceptions
    assert [f.data for f in sinks[1].frames] == [v.data for v in verdicts[0]
                                                 if v.kind == "forward"]
    assert len(sinks[1].frames) == 2000 and not sinks[0].frames
    assert port["rbuf_high_water_elements"] <= 24
    assert all(r.ok for r in leak_check(run.loaded)) and rbuf_in_use(run) == 0
