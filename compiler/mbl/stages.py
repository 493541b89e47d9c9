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
"""

from __future__ import annotations

import re

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


def _unquote(name: str) -> str:
    return name[1:-1] if name.startswith('"') else name


def _function_span(lines: list[str], function: str) -> tuple[int, int]:
    heads = (f"@{function}(", f'@"{function}"(')
    for i, line in enumerate(lines):
        if line.startswith("define") and any(h in line for h in heads):
            return i + 1, lines.index("}", i)
    raise ValueError(f"no definition of @{function}")


def read_depths(text: str, function: str) -> dict[int, int]:
    """{line number: depth} of every COLD_READ call in `function` (module text)."""
    lines = text.split("\n")
    first, end = _function_span(lines, function)
    defs: dict[str, int] = {}  # value name -> its line
    for i in range(first, end):
        m = _DEF.match(lines[i])
        if m:
            defs[_unquote(m.group(1))] = i
    memo: dict[int, int] = {}

    def depth_of_line(i: int) -> int:
        if i in memo:
            return memo[i]
        memo[i] = 0  # a cycle (a loop's phi) adds nothing while it is being resolved
        m = _DEF.match(lines[i])
        body = m.group(2) if m else lines[i]
        deepest = max((depth_of_line(defs[name]) for name in map(_unquote, _VALUE.findall(body))
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
