"""A prefetch slice's checks that only decide whether to prefetch: taken as passed.

The prefetch slice (native.py, _PrefetchSliceOps) changes nothing: its only effect is which
cache lines it prefetches.  So a check whose failing side prefetches nothing more (a drop or
an exception before the walk: version, lengths, the header checksum, martians, TTL...) may
be taken as passed: for a packet that fails it, the slice prefetches lines its block will
not read, which costs a line and changes no result.  Recomputing the check in every slice
run costs more (for IPv4 forwarding the checksum alone is ~8 ns a run, two runs a packet).

The rule, on the slice after the fixed pipeline (one function, everything inlined), in
LLVM's text form: a conditional branch (`br i1` or `switch`) exactly one of whose successors
can reach a prefetch gets the constant condition that takes it there, unless

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
_SWITCH = re.compile(rf"^(\s+switch )i(\d+) %({_NAME})(, label %({_NAME}) \[.*)$")
_CASE = re.compile(rf"^\s+i\d+ (-?\d+), label %({_NAME})")
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


def unquote(name: str) -> str:
    """A value or label name of IR text without its quotes."""
    return name[1:-1] if name.startswith('"') else name


def function_lines(lines: list[str], function: str) -> tuple[int, int]:
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
            name = unquote(label.group(1))
            current = blocks.setdefault(name, _Block(name))
            continue
        if not line.strip() or line.lstrip().startswith(";"):
            continue
        current.lines.append(i)
        current.successors += [unquote(s) for s in _SUCCESSOR.findall(line)]
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


@dataclass(frozen=True)
class _Decision:
    """A block's conditional terminator: `br i1 %cond` (targets: then, else) or `switch`
    (targets: default, then the cases, whose values are `values`)."""

    line: int
    cond: str
    targets: tuple[str, ...]
    values: tuple[int, ...] = ()
    width: int = 1


def _decisions(lines: list[str], blocks: dict[str, _Block]) -> dict[str, _Decision]:
    out = {}
    for block in blocks.values():
        for i in block.lines:
            branch = _CONDITIONAL.match(lines[i])
            if branch:
                out[block.name] = _Decision(i, unquote(branch.group(2)), (
                    unquote(branch.group(4)), unquote(branch.group(5))))
                break
            switch = _SWITCH.match(lines[i])
            if switch:
                cases = [_CASE.match(lines[k]) for k in block.lines if k > i]
                cases = [c for c in cases if c]
                out[block.name] = _Decision(
                    i, unquote(switch.group(3)),
                    (unquote(switch.group(5)), *(unquote(c.group(2)) for c in cases)),
                    tuple(int(c.group(1)) for c in cases), int(switch.group(2)))
                break
    return out


def _kept(lines: list[str], blocks: dict[str, _Block],
          decisions: dict[str, _Decision]) -> set[str]:
    """Values depending on a KEEP_MARK call, and blocks whose decision is one.  A value
    depends on its operands; a phi also on a kept decision two of whose targets reach
    different sets of the phi's incoming blocks (it merges that decision's sides)."""
    defs: dict[str, tuple[list[str], bool]] = {}
    phis: dict[str, list[str]] = {}  # phi -> its incoming blocks
    for block in blocks.values():
        for i in block.lines:
            m = _DEF.match(lines[i])
            if m:
                name, rhs = unquote(m.group(1)), m.group(2)
                operands = [unquote(v) for v in _VALUE.findall(rhs)]
                defs[name] = (operands, bool(_MARK_CALL.search(rhs)))
                if rhs.startswith("phi "):
                    phis[name] = [v for v in operands if v in blocks]
    kept = {name for name, (_, marked) in defs.items() if marked}
    reach: dict[str, set[str]] = {}
    changed = True
    while changed:  # to a fixpoint: phis may depend on each other in loops
        changed = False
        for name, (operands, _) in defs.items():
            if name not in kept and any(v in kept for v in operands):
                kept.add(name)
                changed = True
        splits = [(d.targets[0], t) for d in decisions.values() if d.cond in kept
                  for t in d.targets[1:]]
        for name, incoming in phis.items():
            if name in kept:
                continue
            if any({p for p in incoming if p in _reach(blocks, a, reach)}
                   != {p for p in incoming if p in _reach(blocks, b, reach)}
                   for a, b in splits):
                kept.add(name)
                changed = True
    return kept | {b for b, d in decisions.items() if d.cond in kept}


def _constant(decision: _Decision, target: str) -> str:
    """The condition value that sends `decision` to `target`."""
    if not decision.values:  # br i1
        return "true" if decision.targets[0] == target else "false"
    for value, t in zip(decision.values, decision.targets[1:], strict=True):
        if t == target:
            return str(value)
    taken = {v % (1 << decision.width) for v in decision.values}  # the default: no case's
    return str(next(v for v in range(len(taken) + 1) if v not in taken))


def drop_prefetch_guards(text: str, function: str) -> tuple[str, int]:
    """The module text with `function`'s prefetch-only checks taken as passed (module
    docstring) and the KEEP_MARK declarations made identities; and how many decisions
    (`br i1` or `switch`) were fixed.  A switch is fixed only when exactly one of its
    targets can reach a prefetch (a dispatch to two walks stays)."""
    lines = text.split("\n")
    first, end = function_lines(lines, function)
    blocks = _blocks(lines, first, end)
    useful = _reaching(blocks, {b.name for b in blocks.values() if b.prefetches})
    decisions = _decisions(lines, blocks)
    kept = _kept(lines, blocks, decisions)
    dropped = 0
    for name, decision in decisions.items():
        wanted = {t for t in decision.targets if t in useful}
        if name in kept or len(wanted) != 1 or len(wanted) == len(set(decision.targets)) \
                or _in_cycle(blocks, name):
            continue
        i = decision.line
        cond = lines[i].index("%", lines[i].index(" i"))  # the condition's first character
        rest = lines[i][cond:]
        lines[i] = lines[i][:cond] + _constant(decision, wanted.pop()) \
            + rest[rest.index(","):]
        dropped += 1
    out = "\n".join(lines)
    out = _MARK_DECLARE.sub(
        lambda m: f"define internal {m.group(1)} {m.group(2)}({m.group(1)} %v) alwaysinline "
                  f"{{\n  ret {m.group(1)} %v\n}}", out)
    return out, dropped
