"""A prefetch slice's checks that only decide whether to prefetch: taken as passed.

The prefetch slice (native.py, _PrefetchSliceOps) changes nothing: its only effect is which
cache lines it prefetches.  So a check whose failing side prefetches nothing more (a drop or
an exception before the walk: version, lengths, the header checksum, martians, TTL...) may
be taken as passed: for a packet that fails it, the slice prefetches lines its block will
not read, which costs a line and changes no result.  Recomputing the check in every slice
run costs more (for IPv4 forwarding the checksum alone is ~8 ns a run, two runs a packet).

The rule, on the slice after the fixed pipeline (one function, everything inlined), in
LLVM's text form: a conditional branch whose one successor can reach a prefetch and whose
other cannot becomes a branch to the first, unless

* its block is in a cycle (a loop's exit must stay: the loop would not end), or
* its condition depends on a value marked with KEEP_MARK (the slice's budget state and what
  it read from large memories: the walk's own decisions, which say *which* line to
  prefetch), directly or through a phi merging the two sides of such a branch.

The marks are identities; afterwards they become internal always-inline definitions, so the
next optimization removes them (and, with the branches gone, the checks' computations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KEEP_MARK = "mbl.keep."  # + the LLVM type: `iN @mbl.keep.iN(iN)`, an opaque identity

_NAME = r'(?:[-\w$.]+|"[^"]*")'
_LABEL = re.compile(rf"^({_NAME}):")
_DEF = re.compile(rf"^\s+%({_NAME}) = (.*)$")
_VALUE = re.compile(rf"%({_NAME})")
_SUCCESSOR = re.compile(rf"label %({_NAME})")
_CONDITIONAL = re.compile(rf"^(\s+br i1 )%({_NAME})(, label %({_NAME}), label %({_NAME}).*)$")
_MARK_CALL = re.compile(rf'call \w+ @"?[-\w$.]*{re.escape(KEEP_MARK)}i\d+"?\(')
_MARK_DECLARE = re.compile(
    rf'^declare (?:\w+ )*?(i\d+) (@"?[-\w$.]*{re.escape(KEEP_MARK)}i\d+"?)\(.*$', re.M)
_PREFETCH = "@llvm.prefetch"
_ENTRY = "<entry>"


@dataclass
class _Block:
    name: str
    lines: list[int] = field(default_factory=list)  # indices into the function's lines
    successors: list[str] = field(default_factory=list)
    prefetches: bool = False


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _function_lines(lines: list[str], function: str) -> tuple[int, int]:
    """(first body line, closing line) of `define ... @function(`."""
    heads = (f"@{function}(", f'@"{function}"(')
    for i, line in enumerate(lines):
        if line.startswith("define") and any(h in line for h in heads):
            end = lines.index("}", i)
            return i + 1, end
    raise ValueError(f"no definition of @{function}")


def _blocks(lines: list[str], first: int, end: int) -> dict[str, _Block]:
    blocks: dict[str, _Block] = {}
    current = blocks.setdefault(_ENTRY, _Block(_ENTRY))
    for i in range(first, end):
        line = lines[i]
        label = _LABEL.match(line)
        if label:
            name = _unquote(label.group(1))
            current = blocks.setdefault(name, _Block(name))
            continue
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        current.lines.append(i)
        current.successors += [_unquote(s) for s in _SUCCESSOR.findall(line)]
        current.prefetches |= _PREFETCH in line
    return blocks


def _reaching(blocks: dict[str, _Block], targets: set[str]) -> set[str]:
    """Blocks from which one of `targets` can be reached (themselves included)."""
    preds: dict[str, list[str]] = {name: [] for name in blocks}
    for block in blocks.values():
        for s in block.successors:
            preds.setdefault(s, []).append(block.name)
    seen, work = set(targets), list(targets)
    while work:
        for p in preds.get(work.pop(), []):
            if p not in seen:
                seen.add(p)
                work.append(p)
    return seen


def _in_cycle(blocks: dict[str, _Block], name: str) -> bool:
    seen, work = set(), list(blocks[name].successors)
    while work:
        b = work.pop()
        if b == name:
            return True
        if b not in seen and b in blocks:
            seen.add(b)
            work.extend(blocks[b].successors)
    return False


def _reach(blocks: dict[str, _Block], name: str, cache: dict[str, set[str]]) -> set[str]:
    """Blocks reachable from `name` (itself included)."""
    if name not in cache:
        seen, work = {name}, [name]
        while work:
            block = blocks.get(work.pop())
            for s in block.successors if block else ():
                if s not in seen:
                    seen.add(s)
                    work.append(s)
        cache[name] = seen
    return cache[name]


def _kept(lines: list[str], blocks: dict[str, _Block]) -> set[str]:
    """Values depending on a KEEP_MARK call, and blocks whose branch condition is one.  A
    value depends on its operands; a phi also on a kept branch whose two successors reach
    different sets of the phi's incoming blocks (it merges that branch's two sides)."""
    defs: dict[str, tuple[list[str], bool]] = {}
    phis: dict[str, list[str]] = {}  # phi -> its incoming blocks
    for block in blocks.values():
        for i in block.lines:
            m = _DEF.match(lines[i])
            if m:
                name, rhs = _unquote(m.group(1)), m.group(2)
                operands = [_unquote(v) for v in _VALUE.findall(rhs)]
                defs[name] = (operands, bool(_MARK_CALL.search(rhs)))
                if rhs.startswith("phi "):
                    phis[name] = [v for v in operands if v in blocks]
    conditions = {}
    for block in blocks.values():
        if block.lines:
            branch = _CONDITIONAL.match(lines[block.lines[-1]])
            if branch:
                conditions[block.name] = (_unquote(branch.group(2)),
                                          _unquote(branch.group(4)), _unquote(branch.group(5)))
    kept = {name for name, (_, marked) in defs.items() if marked}
    reach: dict[str, set[str]] = {}
    changed = True
    while changed:  # to a fixpoint: phis may depend on each other in loops
        changed = False
        for name, (operands, _) in defs.items():
            if name not in kept and any(v in kept for v in operands):
                kept.add(name)
                changed = True
        splits = [(t, f) for c, t, f in conditions.values() if c in kept]
        for name, incoming in phis.items():
            if name in kept:
                continue
            if any({p for p in incoming if p in _reach(blocks, t, reach)}
                   != {p for p in incoming if p in _reach(blocks, f, reach)}
                   for t, f in splits):
                kept.add(name)
                changed = True
    return kept | {b for b, (c, _, _) in conditions.items() if c in kept}


def drop_prefetch_guards(text: str, function: str) -> tuple[str, int]:
    """The module text with `function`'s prefetch-only checks taken as passed (module
    docstring) and the KEEP_MARK declarations made identities; and how many branches."""
    lines = text.split("\n")
    first, end = _function_lines(lines, function)
    blocks = _blocks(lines, first, end)
    useful = _reaching(blocks, {b.name for b in blocks.values() if b.prefetches})
    kept = _kept(lines, blocks)
    dropped = 0
    for block in blocks.values():
        if not block.lines or block.name in kept:
            continue
        i = block.lines[-1]
        branch = _CONDITIONAL.match(lines[i])
        if not branch:
            continue
        then, other = _unquote(branch.group(4)), _unquote(branch.group(5))
        if (then in useful) == (other in useful) or _in_cycle(blocks, block.name):
            continue
        taken = "true" if then in useful else "false"
        lines[i] = f"{branch.group(1)}{taken}{branch.group(3)}"
        dropped += 1
    out = "\n".join(lines)
    out = _MARK_DECLARE.sub(
        lambda m: f"define internal {m.group(1)} {m.group(2)}({m.group(1)} %v) alwaysinline "
                  f"{{\n  ret {m.group(1)} %v\n}}", out)
    return out, dropped
