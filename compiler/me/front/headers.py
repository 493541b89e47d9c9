"""Pass: header writes that a later write of the same word overwrites in the same block,
with no read of that word (or of the packet) between, are dropped.  Reads after a write
already take the written value (cse forwards it), so a run of byte stores to one word
leaves only its last write."""

from __future__ import annotations

from .. import wir


def _reads_word(i: wir.Instr, word: int) -> bool:
    return (isinstance(i, wir.HdrRead) and i.word == word) or isinstance(i, wir.PktLoad8)


def forward_header_words(fn: wir.Function) -> None:
    for b in fn.blocks:
        dead: set[int] = set()
        for k, i in enumerate(b.instrs):
            if not isinstance(i, wir.HdrWrite):
                continue
            for later in b.instrs[k + 1:]:
                if _reads_word(later, i.word):
                    break
                if isinstance(later, wir.HdrWrite) and later.word == i.word:
                    dead.add(k)
                    break
        b.instrs = [i for k, i in enumerate(b.instrs) if k not in dead]
