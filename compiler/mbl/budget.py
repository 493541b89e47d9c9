"""The code-size budget: functions are always inlined, so a few lines that call a helper
twice, whose helper calls its own helper twice, and so on, ask LLVM for 2^depth copies.
Before anything is lowered, this check adds up what every function, block and pipeline
becomes once inlined, and reports a program over the budget as `too-large` at the MBL call
site that crosses it -- so compile time and memory stay bounded per program.

The unit is one AST node (an expression or a statement, about one to a few LLVM
instructions); an intrinsic adds what it expands to (per byte or bit it hashes, per
header byte it sums).  Loops count once: the lowering keeps them loops, and the ME back
end's unroller has its own size limit.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Protocol

from . import ast as A
from .diagnostics import DiagnosticBag
from .types import Bits, Type, View


class Program(Protocol):
    """What the budget reads of a checked program (sema.Program, which calls this check)."""

    functions: dict[str, A.Function]
    blocks: dict[str, A.Microblock]
    pipelines: dict[str, A.Pipeline]

    def type_of(self, e: A.Expr) -> Type: ...

# One function, block or pipeline, inlined: 20 times the router's largest block (466 --
# 800 for its pipeline), and about 10 s of ME back end in the worst shape we know (doubling
# helpers full of branches and memory reads; LLVM alone takes ~0.1 s).
MAX_NODES = 10_000
# The whole program: every function and block is lowered (and inlined into) once.
MAX_PROGRAM_NODES = 4 * MAX_NODES


@dataclass
class _Body:
    own: int                 # nodes of the body itself, intrinsics expanded
    calls: list[A.Call]      # calls of MBL functions, in source order


def check_code_size(program: Program, bag: DiagnosticBag) -> None:
    """Report (`too-large`) a function, block or pipeline whose inlined size is over
    MAX_NODES, at the call site that crosses it, and a program over MAX_PROGRAM_NODES."""
    sizes: dict[str, int] = {}
    over: set[str] = set()        # already reported (inside, or a callee of it)

    def size_of(name: str, decl: A.Function | A.Microblock, kind: str) -> int:
        body = _scan(decl.body, program)
        total = body.own
        for call in body.calls:
            callee = call.func
            if callee not in sizes:  # callees first; the checker has ruled out cycles
                sizes[callee] = size_of(callee, program.functions[callee], "function")
            total += sizes[callee]
            if callee in over:
                over.add(name)
            elif total > MAX_NODES and name not in over:
                over.add(name)
                bag.error("too-large", f"inlining {callee} here makes {kind} {name} "
                          f"larger than {MAX_NODES:,} operations", call.span,
                          "every call inlines the whole function: call it once and keep "
                          "the result in a let, or split the work over pipeline stages")
        return min(total, MAX_NODES + 1)

    program_total = 0
    for kind, table in (("function", program.functions), ("block", program.blocks)):
        for name, decl in table.items():
            if name not in sizes:
                sizes[name] = size_of(name, decl, kind)
            program_total += sizes[name]
            if program_total > MAX_PROGRAM_NODES and not over:
                over.add(name)
                bag.error("too-large", f"the program is larger than {MAX_PROGRAM_NODES:,} "
                          f"operations once its functions are inlined (at {kind} {name})",
                          decl.span, "call big functions from fewer places")
    for name, pl in program.pipelines.items():  # the ME back end inlines a pipeline's stages
        total = 0
        for stage in pl.stages:
            total += sizes.get(stage.block, 0)
            if total > MAX_NODES and not over:
                over.add(name)
                bag.error("too-large", f"pipeline {name} is larger than {MAX_NODES:,} "
                          f"operations once its stages are inlined", stage.span,
                          "make the blocks smaller or run fewer stages in one pipeline")
                break


def _scan(body: A.Block, program: Program) -> _Body:
    own, calls = 0, []
    stack: list[object] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, A.Expr | A.Stmt):
            continue
        own += 1
        if isinstance(node, A.Call):
            if node.func in program.functions:
                calls.append(node)
            else:
                own += _intrinsic_nodes(node, program)
        for f in fields(node):
            value = getattr(node, f.name)
            if isinstance(value, A.Expr | A.Stmt | list):
                stack.append(value)
    calls.sort(key=lambda c: (c.span.file, c.span.line, c.span.column))
    return _Body(own, calls)


def _intrinsic_nodes(call: A.Call, program: Program) -> int:
    """About how many operations an intrinsic expands to."""
    bits = 0
    for a in call.args:
        t = program.type_of(a)
        if isinstance(t, Bits):
            bits += t.width
        elif isinstance(t, View):
            bits += t.layout.bytes * 8
    if call.func == "toeplitz":
        return 4 * bits            # a select and an xor per input bit
    if call.func in ("crc32", "csum"):
        return bits // 2           # a few operations per byte / 16-bit word
    if call.func == "pop_count":
        return max(1, bits // 32)  # one count per word (and the adds)
    return 4
