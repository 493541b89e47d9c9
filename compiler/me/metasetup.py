"""The dispatch loop's per-frame metadata set-up a compiled body needs (docs/me-backend.md,
"Dispatch and link"): which metadata words a WIR function may read before it writes them.

The linker (`npkit.link`) turns a `MetaSetup` into fwd.uc's switches; the analysis is the
back end's, over WIR, so it lives here below the linker.
"""

from __future__ import annotations

from dataclasses import dataclass

from npkit.compiler.mbl.types import (
    META_CODE,
    META_FIELDS,
    META_VERDICT,
    META_WORDS,
    VERDICT_DROP,
    VERDICT_EXCEPTION,
    VERDICT_FORWARD,
)
from npkit.compiler.me.wir import Block, Function, MetaRead, MetaWrite, Ret

META_ZEROED = frozenset(range(2, META_WORDS))   # the body ABI: 0 on entry (words 2..11)
# what fwd.uc reads of the metadata after the body, by the verdict the body left
EXIT_READS: dict[int, frozenset[int]] = {
    VERDICT_FORWARD: frozenset({META_VERDICT, META_FIELDS["out_port"].word}),
    VERDICT_DROP: frozenset({META_VERDICT, META_CODE}),
    VERDICT_EXCEPTION: frozenset({META_VERDICT, META_CODE, META_FIELDS["next_hop"].word})}
ANY_EXIT_READS = frozenset().union(*EXIT_READS.values())
# per path class: the verdict constant the paths wrote last (None: not known) -> the meta
# words every path of the class has written
Paths = dict[int | None, frozenset[int]]


@dataclass(frozen=True)
class MetaSetup:
    """What fwd.uc writes into a frame's metadata before the body.  Init zeroes words
    2..11 once; per frame it zeroes `clear` and writes len, the DRAM address and (with
    `in_port_per_frame`, else once at init) in_port.  The default suits any body."""

    clear: frozenset[int] = META_ZEROED
    in_port_per_frame: bool = True


def meta_setup(fn: Function) -> MetaSetup:
    """The per-frame set-up a WIR function needs for the body ABI ("every other word 0")
    to hold for every word it can observe: zero again only the words it may read (or the
    dispatch may read after it) before writing them AND may write -- a word it never writes
    keeps init's 0; write in_port per frame only when it may write it."""
    written = {i.word for b in fn.blocks for i in b.instrs if isinstance(i, MetaWrite)}
    return MetaSetup(frozenset(read_before_written(fn) & written & META_ZEROED),
                     META_FIELDS["in_port"].word in written)


def read_before_written(fn: Function) -> set[int]:
    """Meta words some path may read before it wrote them: MetaReads, and at Ret what the
    dispatch reads for the verdict the path left (all of ANY_EXIT_READS when unknown)."""
    reads: set[int] = set()
    for block, paths in _block_entries(fn):
        _walk(block, paths, reads)
    return reads


def _block_entries(fn: Function) -> list[tuple[Block, Paths]]:
    """The paths' state at the entry of every reachable block (a forward fixpoint: the
    written sets only shrink and the verdict constants are finite)."""
    blocks = {b.label: b for b in fn.blocks}
    states: dict[str, Paths] = {fn.blocks[0].label: {None: frozenset()}}
    work = [fn.blocks[0].label]
    while work:
        label = work.pop()
        out = _walk(blocks[label], states[label], None)
        for succ in blocks[label].successors():
            merged = _join(states.get(succ), out)
            if merged != states.get(succ):
                states[succ] = merged
                work.append(succ)
    return [(blocks[label], paths) for label, paths in states.items()]


def _join(a: Paths | None, b: Paths) -> Paths:
    joined = dict(a or {})
    for verdict, words in b.items():
        joined[verdict] = joined[verdict] & words if verdict in joined else words
    return joined


def _walk(block: Block, paths: Paths, reads: set[int] | None) -> Paths:
    """The state after `block`; with `reads`, collect the words read before written."""
    for ins in block.instrs:
        if isinstance(ins, MetaWrite):
            verdict = ins.src if isinstance(ins.src, int) else None
            after: Paths = {}
            for v, words in paths.items():
                after = _join(after, {verdict if ins.word == META_VERDICT else v:
                                      words | {ins.word}})
            paths = after
        elif reads is None:
            continue
        elif isinstance(ins, MetaRead):
            reads.update(ins.word for words in paths.values() if ins.word not in words)
        elif isinstance(ins, Ret):
            for v, words in paths.items():
                wanted = ANY_EXIT_READS if v is None else EXIT_READS.get(v, {META_VERDICT})
                reads.update(wanted - words)
    return paths

