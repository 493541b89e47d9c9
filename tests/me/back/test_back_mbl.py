"""Real MBL blocks through the front end and the back end, run on the chip, against the
WIR interpreter on the same WIR (and the baseline microcode size for scale)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from scapy.utils import checksum as scapy_checksum

from npkit.compiler.mbl import compile_file
from npkit.compiler.me import front, interp

from . import harness

ROOT = Path(__file__).resolve().parents[3]


def ipv4_frame(ttl: int = 64, dst: bytes = bytes([10, 0, 0, 1]), length: int = 64) -> bytes:
    eth = bytes.fromhex("001122334455" "66778899aabb" "0800")
    ip = bytearray([0x45, 0, 0, 46, 0, 1, 0, 0, ttl, 17, 0, 0, 192, 168, 1, 1]) + dst
    ip[10:12] = scapy_checksum(bytes(ip)).to_bytes(2, "big")
    frame = eth + bytes(ip)
    return frame + bytes(length - len(frame))


@pytest.mark.parametrize("source", ["ipv4_fwd.mbl", "l2_bridge.mbl"])
def test_compiled_block_matches_interpreter(source: str) -> None:
    from npkit.compiler.me.back import compile_body
    fn = front.to_wir(compile_file(str(ROOT / "microblocks" / source)))
    body = compile_body(fn)
    image = harness.build(body.uc, fn.window_bytes)
    rng = random.Random(7)
    frames = [ipv4_frame(), ipv4_frame(ttl=1), ipv4_frame(dst=bytes([127, 0, 0, 1])),
              rng.randbytes(64), ipv4_frame()[:14] + rng.randbytes(50)]
    for frame in frames:
        meta = [1, len(frame)] + [0] * 14
        got = harness.run(image, fn.window_bytes, [harness.Context(frame, list(meta))],
                          sram_channel_bytes=64 << 20)
        got.check_clean()
        want = interp.run(fn, interp.Machine(bytearray(frame), list(meta)))
        assert got.packets[0] == bytes(want.packet)
        assert got.metas[0][:12] == want.meta[:12]
