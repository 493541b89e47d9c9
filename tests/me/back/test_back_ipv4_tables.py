"""microblocks/ipv4_fwd.mbl compiled by the back end (with its early reads: the route
table's root read issued before the checks, for the 16-8-8 trie) and run in the back-end
harness with real tables (routes of three depths, local addresses, next hops), against the
native target and the WIR interpreter, frame by frame over every verdict path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scapy.all import IP, UDP, Ether, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import front, interp, wir
from npkit.compiler.me.back import compile_body
from npkit.runtime.lpm import POPTRIE4_MEMORY, RouteTables, route_memories

from . import harness

ROOT = Path(__file__).resolve().parents[3]
CHANNEL_BITS = 26           # SRAM byte address: channel in bits 26..27
SPACES = {"sram": wir.SRAM, "scratch": wir.SCRATCH}


def frame(dst: str, src: str = "198.18.0.1", ttl: int = 64, **ip: object) -> bytes:
    return raw(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
               / IP(src=src, dst=dst, ttl=ttl, **ip) / UDP(sport=1, dport=2) / (b"p" * 18))


def bad_checksum(f: bytes) -> bytes:
    return f[:24] + bytes([f[24] ^ 0x5A]) + f[25:]


FRAMES = [frame("10.1.2.3"), frame("10.9.9.9"), frame("10.1.7.7"), frame("10.0.0.1"),
          frame("10.1.2.3", ttl=1), frame("11.0.0.1"), frame("127.0.0.1"),
          frame("10.1.2.3", src="0.1.2.3"), frame("255.255.255.255"),
          frame("10.1.2.3", flags="DF", len=1600), bad_checksum(frame("10.1.2.3")),
          frame("10.1.2.3")[:20], frame("10.2.0.5"), frame("10.2.0.5", flags="DF")]


@pytest.fixture(scope="module")
def setup():
    prog = compile_file(str(ROOT / "microblocks" / "ipv4_fwd.mbl"))
    native = NativeProgram(prog)
    for index, port, mtu in ((1, 1, 1500), (2, 0, 1500), (3, 1, 40)):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 + index,
                                         "smac": 0x02BB00000000 + index, "port": port,
                                         "mtu": mtu})
    RouteTables.of(native).load({(0x0A000000, 8): 1, (0x0A010000, 16): 2,
                                 (0x0A010200, 24): 1, (0x0A020000, 16): 3}, {})
    native.table_add("local4", 0x0A000001, 1)
    memory: dict[int, dict[int, int]] = {wir.SRAM: {}, wir.SCRATCH: {}}
    for name, m in prog.memories.items():
        if m.space not in SPACES:
            continue
        words = native.region(name)
        for w in np.nonzero(words)[0]:
            memory[SPACES[m.space]][m.word_offset + int(w)] = int(words[w])
    return prog, native, front.to_wir(prog, "ipv4_fwd"), memory


def run_on_chip(uc: str, fn: wir.Function, f: bytes, memory: dict[int, dict[int, int]]
                ) -> harness.Result:
    image = harness.build(uc, fn.window_bytes)
    chip = harness.Chip(harness.small_config(64 << 20), seed=1)
    chip.load(image)
    for word, value in memory[wir.SRAM].items():
        at = 4 * word
        chip.sram(at >> CHANNEL_BITS)[(at & ((1 << CHANNEL_BITS) - 1)) // 4] = value
    for word, value in memory[wir.SCRATCH].items():
        chip.scratch()[word] = value
    dram = chip.dram()
    dram[harness.PKT_BASE:harness.PKT_BASE + len(f)] = np.frombuffer(f, dtype=np.uint8)
    meta = [1, len(f)] + [0] * 14
    meta[12] = harness.PKT_BASE
    lm = chip.local_memory(0)
    lm[harness.META_BASE:harness.META_BASE + 16] = meta
    chip.run(until_idle=True, quiet_cycles=2_000_000)
    metas = [[int(x) for x in lm[harness.META_BASE:harness.META_BASE + 16]]]
    out = harness.Result([bytes(dram[harness.PKT_BASE:harness.PKT_BASE + len(f)])], metas,
                         np.array([]), np.array([]), np.array([]), chip.now,
                         chip.instructions_retired)
    out.check_clean()
    return out


@pytest.mark.parametrize("index", range(len(FRAMES)))
def test_every_path_matches_native_and_interpreter(setup, index: int) -> None:
    prog, native, fn, memory = setup
    body = compile_body(fn)
    f = FRAMES[index]
    got = run_on_chip(body.uc, fn, f, memory)
    want = interp.run(fn, interp.Machine(bytearray(f), [1, len(f)] + [0] * 14,
                                         {k: dict(v) for k, v in memory.items()}))
    assert got.metas[0][:12] == want.meta[:12]
    assert got.packets[0] == bytes(want.packet)
    verdict = native.run([f], 1)[0]
    kind = {1: "forward", 2: "drop", 3: "exception"}[got.metas[0][8]]
    assert kind == verdict.kind
    if kind == "forward":
        assert got.metas[0][2] == verdict.port
        assert got.packets[0] == verdict.data
    elif kind == "exception":
        assert got.metas[0][9] == verdict.code


def root_read_is_late(prog) -> bool:
    """Known gap with Poptrie: its direct index (dst >> 14) is computed in the read's own
    block, and back/prefetch.py moves a read only up to its address's definition, so the
    root read is not issued early (the 16-8-8 index, dst >> 16, is computed earlier for
    the address checks).  When prefetch learns to move the address computation along,
    the tests below fail on Poptrie: then drop this."""
    return route_memories(prog.memories)[0] == POPTRIE4_MEMORY


def test_the_route_table_root_is_read_early(setup) -> None:
    prog, _, fn, _ = setup
    early = "sig_done[10]" in compile_body(fn).uc
    assert early is not root_read_is_late(prog)


def test_early_reads_shorten_the_forwarded_frame(setup) -> None:
    prog, _, fn, memory = setup
    cycles = [run_on_chip(compile_body(fn, skip=() if early else {"prefetch"}).uc, fn,
                          FRAMES[0], memory).cycles for early in (False, True)]
    hidden = cycles[1] < cycles[0] - 100    # an SRAM read's latency
    assert hidden is not root_read_is_late(prog)
