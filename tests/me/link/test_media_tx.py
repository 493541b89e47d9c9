"""A pipeline with an MBL transmit stage (docs/datapath.md: `frame_tx` runs after every
forward) compiled by the ME backend and linked for two OC-192 POS ports: the chip does what
the native target does, frame for frame (scapy-built PPP frames), and the transmit stage's
own counter (`tx_frames`, scratch) counts on the chip exactly what it counts natively.
The transmit stage is part of the compiled body here; the linker still wraps the
platform's tx_eth.uc around it (docs/datapath.md, "Not done yet")."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.all import HDLC, IP, PPP, UDP, raw

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun

from .harness import check_against_native

MEDIA_TX = Path(__file__).resolve().parents[3] / "microblocks" / "media_tx.mbl"
SOURCE = f"""
import "std/headers.mbl";
import "{MEDIA_TX}";

array out_of : bit<16> [256] in sram;      // output port by the destination's top byte

block fwd {{
    let ppp = packet<ppp_t>(0) else drop(runt);
    if ppp.protocol != PPP_IPV4 {{ exception(1); }}
    let ip = packet<ipv4_t>(4) else drop(short4);
    if ip.ttl <= 1 {{ exception(3); }}
    ip.ttl -= 1;
    forward(out_of[ip.dst[31:24]]);
}}

pipeline p {{
    ports 0..1;
    stage s = fwd;
    stage t = frame_tx;
}}
"""


@pytest.fixture(scope="module")
def compiled() -> tuple[CompiledRun, NativeProgram]:
    program = compile_source(SOURCE, "media_tx_test.mbl")
    linked = link(program, compile_me(program, "p"), "ixp2800-2xoc192pos")
    native = NativeProgram(program, "p")
    for top in range(256):
        native.write("out_of", top, (top * 5 >> 2) & 1)
    run = CompiledRun(linked)
    run.load_memories(native)
    return run, native


def frame(dst: str, ttl: int) -> bytes:
    return raw(HDLC() / PPP() / IP(src="198.18.0.1", dst=dst, ttl=ttl) / UDP(sport=1, dport=2)
               / (b"p" * 12))


def test_the_transmit_stage_runs_on_the_chip_as_natively(compiled) -> None:
    run, native = compiled
    frames = {p: [frame(f"{i}.0.0.{p}", 1 if i % 7 == 0 else 64) for i in range(1, 80)]
              for p in (0, 1)}
    frames[1].append(raw(HDLC() / PPP(proto=0x0057) / (b"\x60" * 40)))  # IPv6: exception
    before = [native.read("tx_frames", q) for q in (0, 1)]
    result = run.run(frames, load=0.5)
    check_against_native(result, native, frames)  # runs the native pipeline too
    counted = [native.read("tx_frames", q) - before[q] for q in (0, 1)]
    assert counted == [len(result.frames(q)) for q in (0, 1)] and min(counted) > 0
    chip = run.read_memory("tx_frames")
    assert [int(chip[q]) for q in (0, 1)] == counted


def test_a_receive_stage_is_refused_at_its_line() -> None:
    """Until the receive-stage dispatch exists (docs/datapath.md, "Not done yet"), the ME
    backend refuses a receive stage where it first uses a receive operation, instead of
    running it on whole frames with an empty status."""
    from npkit.compiler.mbl import CompileError

    source = 'block r { if media.sop() { media.consume(); } forward(1); }\n' \
             "pipeline p { stage s = r; }\n"
    program = compile_source(source, "rx.mbl")
    with pytest.raises(CompileError) as info:
        compile_me(program, "p")
    (d,) = info.value.diagnostics
    assert (d.kind, d.location.line, d.location.column) == ("unsupported", 1, 14)
    assert "block r is a receive stage" in d.message
