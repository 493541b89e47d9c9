"""Depth-staged prefetch slices of a function (native target only; the ME never sees them).

A walk over a large memory (a route trie) is a chain of dependent reads: the root word
gives the node's address, the node the leaf's.  Its *depth* view: a read of a large
memory whose address depends, through data, on no other such read has depth 1; one whose
address depends on reads of depth at most d has depth d + 1.  The stage-k slice of the
function is its code with the large-memory reads of depth <= k left as loads, those of
depth k + 1 turned into prefetches (reading 0), and the deeper ones into 0 without
touching memory; then optimized, so what is left is the walk up to the prefetch of its
(k + 1)-th dependent line.  Run stage 0, 1, ... of a key some keys apart before the
function itself (native._staged_key_driver), each stage finds the lines the stage before
prefetched in cache and prefetches the next: each key's dependent misses overlap other
keys' work, and nothing is counted at run time (the slice pipeline of _PrefetchSliceOps
counts lines with a budget at every read instead).

The depth is found on the optimized function in LLVM's text form, where each
large-memory read is a call of COLD_READ (an opaque function: nothing hoists, merges or
drops it before the rewrite): a value's depth is the largest depth among the values on
its line (a phi's incoming values included: the depth of a value merged from two paths is
the deeper one's; block labels and arguments are depth 0), plus one for a COLD_READ call.
A slice changes nothing (its writes are dropped, see _PrefetchSliceOps), so reading 0 for
a prefetched word only changes which lines it prefetches, never a result.

flatten() then makes a stage branch-free (see its comment block below): native._stages_of
applies it to each optimized stage unless `flat` is off.
"""

from __future__ import annotations

import re

from .slice_guards import function_lines, unquote

COLD_READ = "mbl.cold.read"  # i32 (ptr): a read of a large memory, before the rewrite
_LOAD, _PREFETCH, _ZERO = "mbl.cold.load", "mbl.cold.prefetch", "mbl.cold.zero"

_NAME = r'(?:[-\w$.]+|"[^"]*")'
_DEF = re.compile(rf"^\s+%({_NAME}) = (.*)$")
_VALUE = re.compile(rf"%({_NAME})")
_CALL = re.compile(rf'@"?{re.escape(COLD_READ)}"?\(')

# The three bodies a COLD_READ call becomes (internal, always inlined by the next
# optimization): read, high temporal locality (3), data cache (1) for the prefetch.
BODIES = f"""
define internal i32 @"{_LOAD}"(ptr %p) alwaysinline {{
  %v = load i32, ptr %p, align 4
  ret i32 %v
}}
define internal i32 @"{_PREFETCH}"(ptr %p) alwaysinline {{
  call void @llvm.prefetch.p0(ptr %p, i32 0, i32 3, i32 1)
  ret i32 0
}}
define internal i32 @"{_ZERO}"(ptr %p) alwaysinline {{
  ret i32 0
}}
"""
_PREFETCH_DECLARE = "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)"


def read_depths(text: str, function: str) -> dict[int, int]:
    """{line number: depth} of every COLD_READ call in `function` (module text)."""
    lines = text.split("\n")
    first, end = function_lines(lines, function)
    defs: dict[str, int] = {}  # value name -> its line
    for i in range(first, end):
        m = _DEF.match(lines[i])
        if m:
            defs[unquote(m.group(1))] = i
    memo: dict[int, int] = {}

    def depth_of_line(i: int) -> int:
        if i in memo:
            return memo[i]
        memo[i] = 0  # a cycle (a loop's phi) adds nothing while it is being resolved
        m = _DEF.match(lines[i])
        body = m.group(2) if m else lines[i]
        deepest = max((depth_of_line(defs[name]) for name in map(unquote, _VALUE.findall(body))
                       if name in defs), default=0)
        memo[i] = deepest + (1 if _CALL.search(body) else 0)
        return memo[i]

    return {i: depth_of_line(i) for i in range(first, end) if _CALL.search(lines[i])}


def stage_text(text: str, function: str, stage: int, keep_mark: str | None = None) -> str:
    """The module text with `function`'s COLD_READ calls rewritten for stage `stage` (reads
    of depth <= stage load, depth stage + 1 prefetch, deeper read 0) and the three bodies
    appended; optimize it again to inline them.  `keep_mark` (slice_guards.KEEP_MARK +
    "i32"): the loaded words pass through it, so that drop_prefetch_guards keeps the
    branches of the walk (a block's stages: their checks before the walk are dropped)."""
    lines = text.split("\n")
    for i, depth in read_depths(text, function).items():
        target = _LOAD if depth <= stage else _PREFETCH if depth == stage + 1 else _ZERO
        lines[i] = _CALL.sub(f'@"{target}"(', lines[i])
    out = "\n".join(lines) + BODIES
    if keep_mark:
        out = out.replace("  ret i32 %v\n}", f'  %k = call i32 @"{keep_mark}"(i32 %v)\n'
                          "  ret i32 %k\n}", 1)
        if f'@"{keep_mark}"(' not in text and f"@{keep_mark}(" not in text:
            out += f'declare i32 @"{keep_mark}"(i32) nounwind memory(none)\n'
    if "@llvm.prefetch.p0(" not in text:
        out += _PREFETCH_DECLARE + "\n"
    return out


# --- if-conversion: a stage as one straight-line block (flatten) ---------------------------
#
# A stage branches on the words it loads (a leaf or a child?), and each branch on a word that
# has just arrived from memory stalls or mispredicts; a stage that computes every arm and
# picks with selects has no branch to predict, so the out-of-order core runs the next key's
# stage while this one's loads are still in flight (docs/performance.md, section 3, sixth
# round).  flatten() turns an acyclic stage into one block: each block's instructions run
# unconditionally, in a topological order, under a predicate (an i1: the block would have
# run); a phi becomes selects on its incoming edges' predicates, the returns one select.
# That is sound for a stage because all its instructions may run speculatively:
#
# * its reads are in range whatever the path: a large memory's index is masked or clamped to
#   the memory by the MBL lowering (lpm_half's clamp, `& 2097151`), the packet reads of a
#   slice are bounded (_PrefetchSliceOps.packet_ops), and a prefetch never faults;
# * it has no writes (a slice's are dropped), and anything else that could trap or write
#   (stores, divisions, atomic or volatile loads, calls of anything but the pure intrinsics
#   and the prefetch) leaves the stage as it was;
# * values computed on a path not taken must not be poison (a load at a poison address is
#   undefined): the flags and attributes that make poison (nuw, nsw, exact, nneg, inbounds,
#   range(...), noundef, !range...) are dropped from every instruction, and a phi's poison or
#   undef incoming value becomes 0.
# A cycle, a switch, `unreachable` or a return of anything but an integer or a pointer also
# leaves the stage as it was (flatten returns None).

_LABEL = re.compile(rf"^({_NAME}):")
_TERMINATOR = re.compile(r"^\s+(br|ret|switch|unreachable|indirectbr|resume|callbr)\b")
_BR = re.compile(rf"^\s+br label %({_NAME})")
_CBR = re.compile(rf"^\s+br i1 (%{_NAME}|true|false), label %({_NAME}), label %({_NAME})")
_RET = re.compile(r"^\s+ret (void|(i\d+|ptr) (.+?))(, !.*)?$")
_PHI = re.compile(rf"^\s+%({_NAME}) = phi (?:\w+ )*?(\S+) (\[.*\])(, !.*)?$")
_INCOMING = re.compile(rf"\[ ([^\[\],]+), %({_NAME}) \]")
_UNSAFE = re.compile(r"^\s+(?:%\S+ = )?(?:store|fence|atomicrmw|cmpxchg|va_arg|invoke|alloca)\b"
                     r"|= (?:udiv|sdiv|urem|srem) |load (?:atomic|volatile)"
                     r"|call [^@]*@(?!llvm\.(?:prefetch|ctpop|ctlz|cttz|bswap|bitreverse|fsh[lr]|"
                     r"[us]m(?:in|ax)|abs|[us](?:add|sub|mul)\.with\.overflow|dbg)\.)")
_NUMBERED = re.compile(r"%(\d+)\b")
_LABEL_NUMBER = re.compile(r"^(\d+):")
_POISON_FLAGS = re.compile(r"(?<![%@\w.\"])(?:nuw|nsw|exact|nneg|disjoint|samesign|inbounds|"
                           r"nusw|noundef|nonnull) ")
_POISON_ATTRS = re.compile(r"\brange\([^)]*\) |, !(?:range|noundef|nonnull|align|"
                           r"dereferenceable(?:_or_null)?) !\d+")


def _stage_blocks(lines: list[str], first: int, end: int) -> dict[str, list[int]] | None:
    blocks: dict[str, list[int]] = {}
    current: list[int] | None = None
    for i in range(first, end):
        label = _LABEL.match(lines[i])
        if label:
            current = blocks.setdefault(unquote(label.group(1)), [])
            continue
        if not lines[i].strip() or lines[i].lstrip().startswith(";"):
            continue
        if current is None:  # an unnamed entry block
            current = blocks.setdefault("", [])
        current.append(i)
    return blocks


def flatten(text: str, function: str) -> str | None:
    """The module text with `function` (acyclic, no switch) turned into one block of
    predicated straight-line code (see above), or None when it cannot be."""
    lines = text.split("\n")
    first, end = function_lines(lines, function)
    for i in range(first, end):  # numbered values must stay in order: name them
        lines[i] = _LABEL_NUMBER.sub(r"ifc.v\1:", _NUMBERED.sub(r"%ifc.v\1", lines[i]))
    blocks = _stage_blocks(lines, first, end)
    if not blocks or len(blocks) == 1:
        return None
    names = list(blocks)
    successors: dict[str, list[tuple[str, str | None]]] = {}  # (block, condition, taken?)
    rets: list[tuple[str, str | None, str | None]] = []  # (block, type, value)
    for name, body in blocks.items():
        last = lines[body[-1]]
        if any(_TERMINATOR.match(lines[i]) for i in body[:-1]):
            return None
        if any(_UNSAFE.search(lines[i]) for i in body[:-1]):
            return None
        if m := _BR.match(last):
            successors[name] = [(unquote(m.group(1)), None)]
        elif m := _CBR.match(last):
            c = m.group(1)
            successors[name] = [(unquote(m.group(2)), c), (unquote(m.group(3)), "!" + c)]
        elif m := _RET.match(last):
            successors[name] = []
            rets.append((name, m.group(2), m.group(3)))
        else:
            return None  # switch, unreachable...
    # topological order from the entry (a cycle: no order)
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> bool:
        if state.get(name) == 1:
            return False
        if state.get(name) == 2:
            return True
        state[name] = 1
        if not all(visit(s) for s, _ in successors[name]):
            return False
        state[name] = 2
        order.append(name)
        return True

    if not visit(names[0]) or len(order) != len(names):
        return None
    order.reverse()
    out: list[str] = []
    fresh = iter(range(1 << 30))

    def new() -> str:
        return f"%ifc.{next(fresh)}"

    def emit_or(values: list[str]) -> str:
        acc = values[0]
        for v in values[1:]:
            name = new()
            out.append(f"  {name} = or i1 {acc}, {v}")
            acc = name
        return acc

    def chain(pairs: list[tuple[str, str]], ty: str) -> str:
        """select over (predicate, value) pairs: the last value when no predicate holds."""
        acc = pairs[-1][1]
        for pred, value in reversed(pairs[:-1]):
            name = new()
            out.append(f"  {name} = select i1 {pred}, {ty} {value}, {ty} {acc}")
            acc = name
        return acc

    edges: dict[tuple[str, str], list[str]] = {}  # (from, to) -> edge predicates
    preds: dict[str, str] = {names[0]: "true"}
    for name in order:
        body = blocks[name]
        if name != names[0]:
            incoming = [p for (src, dst), ps in edges.items() if dst == name for p in ps]
            preds[name] = emit_or(incoming)
        for i in body[:-1]:
            line = _POISON_ATTRS.sub("", _POISON_FLAGS.sub("", lines[i]))
            phi = _PHI.match(line)
            if not phi:
                out.append(line)
                continue
            target, ty, arms = phi.group(1), phi.group(2), phi.group(3)
            pairs = _INCOMING.findall(arms)
            if ", ".join(f"[ {v}, %{b} ]" for v, b in pairs) != arms:
                return None
            choices = []
            for value, block in pairs:
                value = "0" if value in ("poison", "undef") else value
                choices.append((emit_or(edges[unquote(block), name]), value))
            value = chain(choices, ty)
            if choices[1:]:  # rename the last select to the phi's name
                last = out.pop()
                out.append(last.replace(value, f"%{target}", 1))
            else:
                out.append(f"  %{target} = select i1 true, {ty} {value}, {ty} {value}")
        for succ, cond in successors[name]:
            if cond is None:
                edge = preds[name]
            else:
                c = cond.lstrip("!")
                if cond.startswith("!"):
                    negated = new()
                    out.append(f"  {negated} = xor i1 {c}, true")
                    c = negated
                edge = new()
                out.append(f"  {edge} = and i1 {preds[name]}, {c}")
            edges.setdefault((name, succ), []).append(edge)
    if rets[0][1] is None:
        out.append("  ret void")
    else:
        ty = rets[0][1]
        value = chain([(preds[b], v) for b, _, v in rets], ty)
        out.append(f"  ret {ty} {value}")
    if names[0] == "" or not _LABEL.match(lines[blocks[names[0]][0] - 1]):
        return None  # an unnamed entry: naming it would renumber the values
    label = lines[blocks[names[0]][0] - 1]
    return "\n".join(lines[:first] + [label] + out + lines[end:])
