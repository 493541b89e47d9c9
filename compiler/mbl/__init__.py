"""MBL, the microblock language: parser, checks, LLVM lowering and the native target.

    from npkit.compiler.mbl import compile_file, emit, NativeProgram
    program = compile_file("x.mbl")            # raises CompileError with all diagnostics
    print(emit(program, "llvm-opt"))
    native = NativeProgram(program, "ipv4_fwd")
    verdicts = native.run([packet_bytes, ...], in_ports=0)
"""

from __future__ import annotations

from pathlib import Path

from npkit.base.diagnostics import Diagnostic, SourceLocation

from .diagnostics import CompileError, DiagnosticBag
from .sema import Program, check_file, check_source

EMIT_KINDS = ("ast", "llvm", "llvm-opt")


def compile_file(path: str | Path) -> Program:
    """Parse and check a file; raise CompileError carrying every error of the file."""
    program, bag = check_file(path)
    if bag.errors:
        raise CompileError(bag.items, program.sources)
    return program


def compile_source(text: str, file: str = "<input>") -> Program:
    program, bag = check_source(text, file)
    if bag.errors:
        raise CompileError(bag.items, program.sources)
    return program


def emit(program: Program, kind: str) -> str:
    """Render a stage of the pipeline: the AST, the LLVM IR, or the optimized IR."""
    # Imported here, not at the top, only because lowering and the passes load llvmlite,
    # which `npkit check` (parse + checks) does not need.
    if kind == "ast":
        from .astdump import dump

        return dump(program.modules[-1])  # the root file (imports come first)
    from .lower import lower

    module = lower(program)
    if kind == "llvm":
        return str(module)
    if kind == "llvm-opt":
        from .passes import optimize

        return str(optimize(module))
    raise ValueError(f"unknown emit kind {kind!r}; choose from {', '.join(EMIT_KINDS)}")


def __getattr__(name: str):  # the native target loads LLVM's JIT only when asked for
    if name in ("NativeProgram", "Verdict", "NativeError", "HashUnit"):
        from . import native

        return getattr(native, name)
    raise AttributeError(name)


__all__ = ["CompileError", "Diagnostic", "DiagnosticBag", "SourceLocation", "Program", "check_file",
           "check_source", "compile_file", "compile_source", "emit", "EMIT_KINDS",
           "NativeProgram", "Verdict", "NativeError", "HashUnit"]
