"""Pass: the header window is the header words the function reads or writes, from byte 0,
rounded up to 8 bytes (the dispatch reads it in quadwords).  Legalize already sent every
byte at or beyond `window_max` to PktLoad8/PktStore8."""

from __future__ import annotations

from .. import wir


def size_window(fn: wir.Function) -> None:
    end = 0
    for b in fn.blocks:
        for i in b.instrs:
            if isinstance(i, wir.HdrRead | wir.HdrWrite):
                end = max(end, 4 * i.word + 4)
    fn.window_bytes = (end + 7) // 8 * 8
