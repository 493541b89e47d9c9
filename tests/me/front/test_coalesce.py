"""Read coalescing (compiler/me/front/coalesce.py) on small MBL programs: which reads become
one memory command, checked against rules written out per case, and every program run on
the native target and as WIR on the interpreter over indices up to the memory's end, so a
join of words that are not adjacent (an index that wraps at the memory's size) fails."""

from __future__ import annotations

import random

import pytest
from harness import compile_pair

from npkit.compiler.me import wir

# `m` after `pad`: its words sit at 1024.. of the SRAM space, so an index reaches the read as
# `(n + k) & ~1024 | 1024`, which only the exact-value (affine) key sees through; the
# structural key (base register + small constant) keeps its first rule (any gap, any
# dominated block), which test_passes' record reads cover.
HEAD = """
array pad : bit<32> [1024] in sram;
array m : bit<32> [1024] in sram;
array inp : bit<32> [4] in sram;
array out : bit<32> [8] in scratch;   // not m's space: no write between the reads
"""

# `n` is a node index clamped to the last word a 4-word record may start at (as the Poptrie
# walker clamps its node pointers): m[n + k] is then exactly k words after m[n].
CLAMP = """
    var n = inp[0] & 0x3ff;
    if n > 1020 { n = 1020; }
"""


def reads(pair) -> list[int]:
    """The word count of every read of `m` (the reads at a computed address), in block
    order."""
    return [len(i.dsts) for b in pair.fn.blocks for i in b.instrs
            if isinstance(i, wir.MemRead) and not isinstance(i.addr, int)]


def run_all(pair, indices, extra=(0, 1, 0x20, 0x21)) -> None:
    rng = random.Random(5)
    for k in range(1024):
        pair.native.write("m", k, rng.getrandbits(32))
    for n in indices:
        for e in extra:
            pair.native.write("inp", 0, n)
            pair.native.write("inp", 1, e)
            pair.check(b"\0")


PROGRAMS = {
    # adjacent words of a clamped index in one block: one 4-word read
    "clamped_same_block": (CLAMP + """
    out[0] = m[n];
    out[1] = m[n + 1];
    out[2] = m[n + 2] ^ m[n + 3];
""", [4]),
    # without the clamp, n + 1 wraps to word 0 at n = 1023: two reads
    "masked_index_wraps": ("""
    let n = inp[0];
    out[0] = m[n];
    out[1] = m[n + 1];
""", [1, 1]),
    # a gap (word n + 2 unread) is not read for nothing: two reads
    "gap": (CLAMP + """
    out[0] = m[n];
    out[1] = m[n + 1];
    out[2] = m[n + 3];
""", [2, 1]),
    # a read in a branch does not widen the read before it (words read on every path)
    "branch": (CLAMP + """
    let a = m[n];
    var b: bit<32> = 0;
    if inp[1] != 0 { b = m[n + 1]; }
    out[0] = a + b;
""", [1, 1]),
    # a read every path reaches after the first joins it
    "after_the_branch": (CLAMP + """
    let a = m[n];
    var b: bit<32> = 7;
    if inp[1] != 0 { b = inp[2]; }
    out[0] = a + b + m[n + 1];
""", [2]),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_reads_joined_as_written_and_equal_to_native(name: str) -> None:
    body, want = PROGRAMS[name]
    pair = compile_pair(source=HEAD + "block b {" + body + "    drop(done);\n}", entry="b")
    assert reads(pair) == want
    run_all(pair, [0, 1, 7, 511, 1019, 1020, 1021, 1022, 1023, 0xfffffc00 | 1023,
                   0xffffffff])
