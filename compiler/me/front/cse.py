"""Pass: common subexpressions and redundant reads, over the dominator tree.

A pure instruction whose operands are constants or single-definition registers is
replaced by an equal one in a dominating position.  Reads of header words, metadata words
and memory are replaced too when nothing that could change them (a write to the same word
or space) lies on any path between the two; a header or metadata write makes its value
available to later reads the same way (store-to-load forwarding)."""

from __future__ import annotations

from collections.abc import Hashable

from .. import wir
from ..wir import Operand, Reg
from . import cfg
from .rewrite import map_uses

COMMUTATIVE = {"add", "and", "or", "xor", "mul"}
Pos = tuple[str, int]


def _opkey(o: Operand) -> Hashable:
    return ("r", o.id) if isinstance(o, Reg) else ("c", o)


def pure_key(i: wir.Instr) -> Hashable | None:
    if isinstance(i, wir.Bin):
        a, b = _opkey(i.a), _opkey(i.b)
        if i.op in COMMUTATIVE and b < a:
            a, b = b, a
        return ("bin", i.op, a, b)
    if isinstance(i, wir.Fsh):
        return ("fsh", _opkey(i.hi), _opkey(i.lo), i.amount)
    if isinstance(i, wir.PopCount):
        return ("popcount", _opkey(i.src))
    if isinstance(i, wir.Cmp):
        return ("cmp", i.pred, _opkey(i.a), _opkey(i.b))
    if isinstance(i, wir.Select):
        return ("sel", _opkey(i.cond), _opkey(i.a), _opkey(i.b))
    if isinstance(i, wir.Hash):
        return ("hash", i.width, tuple(map(_opkey, i.srcs)))
    if isinstance(i, wir.OnesSum):          # order does not matter
        return ("onessum", tuple(sorted(map(_opkey, i.srcs))))
    return None


def read_key(i: wir.Instr) -> Hashable | None:
    """The location a read reads (header word, metadata word, memory words)."""
    if isinstance(i, wir.HdrRead):
        return ("hdr", i.word)
    if isinstance(i, wir.MetaRead):
        return ("meta", i.word)
    if isinstance(i, wir.MemRead):
        return ("mem", i.space, _opkey(i.addr), len(i.dsts))
    return None


def kills(i: wir.Instr, key: Hashable) -> bool:
    """Could instruction i change what a read of `key` gives?"""
    kind = key[0]  # type: ignore[index]
    if isinstance(i, wir.BufAttach):        # a new packet: its window and length
        return kind in ("hdr", "meta")
    if kind == "hdr":
        return (isinstance(i, wir.HdrWrite) and i.word == key[1]) \
            or isinstance(i, wir.PktStore8)  # type: ignore[index]
    if kind == "meta":
        return isinstance(i, wir.MetaWrite) and i.word == key[1]  # type: ignore[index]
    if kind == "mem":
        return isinstance(i, wir.MemWrite | wir.MemAdd) and i.space == key[1]  # type: ignore
    return False


class _CSE:
    def __init__(self, fn: wir.Function) -> None:
        self.fn = fn
        self.defs = cfg.def_counts(fn)
        self.reach = cfg.reachable_from(fn)
        self.children = cfg.dominator_children(fn)
        self.by_label = {b.label: b for b in fn.blocks}
        self.replace: dict[int, Operand] = {}
        self.table: dict[Hashable, tuple[Pos, tuple[Operand, ...]]] = {}
        self.killers: dict[Hashable, list[Pos]] = {}

    def stable(self, o: Operand) -> bool:
        return isinstance(o, int) or self.defs[o.id] == 1

    def killer_positions(self, key: Hashable) -> list[Pos]:
        if key not in self.killers:
            self.killers[key] = [(b.label, k) for b in self.fn.blocks
                                 for k, i in enumerate(b.instrs) if kills(i, key)]
        return self.killers[key]

    def killed_between(self, key: Hashable, start: Pos, end: Pos) -> bool:
        (d, i_d), (b, i_b) = start, end
        for x, i_x in self.killer_positions(key):
            if (x, i_x) == start:
                continue
            after_start = (x == d and i_x > i_d) or x in self.reach[d]
            before_end = (x == b and i_x < i_b) or b in self.reach[x]
            if d == b == x and i_d < i_x < i_b:
                return True
            if after_start and before_end:
                return True
        return False

    def run(self) -> bool:
        stack: list[tuple[str, bool]] = [(self.fn.blocks[0].label, False)]
        undo_marks: list[list[tuple[Hashable, object]]] = []
        while stack:
            label, leaving = stack.pop()
            if leaving:
                for key, old in reversed(undo_marks.pop()):
                    if old is None:
                        self.table.pop(key, None)
                    else:
                        self.table[key] = old  # type: ignore[assignment]
                continue
            log: list[tuple[Hashable, object]] = []
            undo_marks.append(log)
            self.visit(self.by_label[label], log)
            stack.append((label, True))
            for child in reversed(self.children[label]):
                stack.append((child, False))
        if not self.replace:
            return False
        for b in self.fn.blocks:
            for i in b.instrs:
                map_uses(i, self.resolve)
        return True

    def resolve(self, o: Operand) -> Operand:
        while isinstance(o, Reg) and o.id in self.replace:
            o = self.replace[o.id]
        return o

    def record(self, key: Hashable, pos: Pos, values: tuple[Operand, ...], log) -> None:
        log.append((key, self.table.get(key)))
        self.table[key] = (pos, values)

    def visit(self, block: wir.Block, log) -> None:
        for k, i in enumerate(block.instrs):
            map_uses(i, self.resolve)
            pos = (block.label, k)
            if isinstance(i, wir.HdrWrite | wir.MetaWrite):
                key = ("hdr" if isinstance(i, wir.HdrWrite) else "meta", i.word)
                if self.stable(i.src):
                    self.record(key, pos, (i.src,), log)
                else:
                    log.append((key, self.table.get(key)))
                    self.table.pop(key, None)
                continue
            dsts = i.defs()
            if not dsts or any(self.defs[d.id] != 1 for d in dsts):
                continue
            if not all(self.stable(u) for u in i.uses()):
                continue
            key = pure_key(i)
            is_read = key is None
            if is_read:
                key = read_key(i)
                if key is None:
                    continue
            found = self.table.get(key)
            if found is not None and (not is_read or not self.killed_between(key, found[0],
                                                                              pos)):
                for d, v in zip(dsts, found[1], strict=True):
                    self.replace[d.id] = v
                continue
            self.record(key, pos, dsts, log)


def cse(fn: wir.Function) -> None:
    _CSE(fn).run()
