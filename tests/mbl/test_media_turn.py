"""The receive turn a receive block marks itself (`media.turn_begin()` / `media.turn_end()`,
docs/datapath.md "Receive blocks"): the front end's turn-order check, the markers doing
nothing natively, and frame_rx's rules that the split of its work around the turn gives
(microblocks/media_rx.mbl).  On the chip: tests/me/back/test_back_buffers.py (nothing
waited for in frame_rx's turns) and tests/me/link/test_pool_media.py (frames equal to the
native target's)."""

from __future__ import annotations

import pytest
from test_media import media_router
from test_pos_router import v4

from npkit.compiler.mbl import CompileError, NativeProgram, compile_source
from npkit.compiler.mbl.native import BufferPool
from npkit.compiler.mbl.types import MEDIA_EOP, MEDIA_SOP

SOP, EOP, ONE = MEDIA_SOP, MEDIA_EOP, MEDIA_SOP | MEDIA_EOP

PIPELINE = """
register r : bit<32> [4] in scratch;
counter c [4] in scratch;
block rx {{
{body}
}}
block f {{ forward(0); }}
pipeline p {{ stage a = rx; stage b = f; a -> b; }}
"""

GOOD = """
    c.count(0);
    if media.sop() {
        media.turn_begin();
        r[0] = r[0] + 1;
        media.turn_end();
    } else {
        media.turn_begin();
        let x = r[0];
        media.turn_end();
        if x == 0 { drop(no_buffer); }
    }
    c.count(1);
    if !media.eop() { media.consume(); }
    next;"""


@pytest.mark.parametrize(("body", "line", "message"), [
    # line 5 is the body's first line
    ("media.turn_begin(); let x = r[0]; media.turn_end(); r[1] = x; next;", 5,
     "r is per-port state"),
    ("let x = r[0]; media.turn_begin(); media.turn_end(); next;", 5, "r is per-port state"),
    ("media.turn_begin(); media.turn_begin(); media.turn_end(); next;", 5,
     "media.turn_begin() once"),
    ("media.turn_end(); next;", 5, "media.turn_begin() once"),
    ("if media.sop() { media.turn_begin(); r[0] = 1; }\nmedia.turn_end(); next;", 5,
     "paths meet here inside and outside"),
    ("for i in 0..2 { media.turn_begin(); media.turn_end(); }\nnext;", 5,
     "cannot begin or end in a loop"),
])
def test_the_turn_order_is_checked_at_its_location(body: str, line: int, message: str) -> None:
    with pytest.raises(CompileError) as info:
        compile_source(PIPELINE.format(body=body), "turn.mbl")
    found = [d for d in info.value.diagnostics if d.kind == "turn-order"]
    assert found and message in found[0].message
    assert (found[0].location.file, found[0].location.line) == ("turn.mbl", line)


def test_the_markers_do_nothing_natively() -> None:
    """The same block with and without its markers: the same verdicts and state."""
    marked = NativeProgram(compile_source(PIPELINE.format(body=GOOD), "turn.mbl"), "p")
    plain_src = PIPELINE.format(body=GOOD.replace("media.turn_begin();", "")
                                .replace("media.turn_end();", ""))
    plain = NativeProgram(compile_source(plain_src, "plain.mbl"), "p")
    items = [(v4(), 0, SOP), (v4(), 0, EOP), (v4(), 0, 0), (v4(), 0, ONE)]
    for prog in (marked, plain):
        got = [v.kind for v in prog.run_mpackets(items)]
        assert got == ["consumed", "forward", "consumed", "forward"]
        assert (prog.read("r", 0), prog.read("c", 0), prog.read("c", 1)) == (2, 4, 4)


def test_a_frame_past_its_buffer_is_dropped_once_at_its_last_mpacket() -> None:
    """frame_rx stores a middle mpacket after its turn, so a store that does not fit does
    not change the port's state: the mpackets are consumed and the frame is dropped
    (too_long) at its last one, its buffer back; the next frame is received whole."""
    media = media_router("media_pos_router", BufferPool(count=2, buffer_bytes=256))
    big = v4() + b"y" * 600                            # 5 mpackets of 128 B, 2 past 256 B
    cut = [big[k:k + 128] for k in range(0, len(big), 128)]
    items = [(cut[0], 0, SOP), *[(c, 0, 0) for c in cut[1:-1]], (cut[-1], 0, EOP)]
    got = list(media.run_mpackets(items))
    assert [v.kind for v in got] == ["consumed"] * (len(cut) - 1) + ["drop"]
    assert got[-1].reason == "too_long" and media.buffers_free() == 2
    small = v4() + b"z" * 150
    again = list(media.run_mpackets([(small[:128], 0, SOP), (small[128:], 0, EOP)]))
    assert [v.kind for v in again] == ["consumed", "forward"]
    assert len(again[1].data) == len(small) and media.buffers_free() == 2
    assert media.read("rx_incomplete", 0) == 0
