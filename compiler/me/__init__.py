"""The ME backend: MBL programs compiled to multi-threaded microcode (docs/me-backend.md).

    from npkit.compiler.mbl import compile_file
    from npkit.compiler.me import compile_me
    build = compile_me(compile_file("examples/router/router.mbl"))   # -> MEBuild
    print(build.wir)            # the word IR the front end made
    print(build.body.uc)        # the compiled body (.uc fragment)
    compile_me(program, print_after={"simplify", "isel"})   # the IR after passes, on stderr
    # linking (dispatch loop, media stages, manifest): npkit.link.link(program, build, platform)

The parts: `front` (optimized LLVM IR -> WIR) and `back` (WIR -> body microcode), each a
list of passes (`front/pipeline.py`, `back/pipeline.py`; names in PASSES), `fold` (WIR
operations on constants), `metasetup` (the metadata set-up a body needs), `report` and
`graph`.  The linker is a layer above, `npkit.link`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npkit.base.errors import NpkitError

from .abi import BodyABI

Trace = Callable[[str, str], None]       # trace(pass name, the IR after it)

if TYPE_CHECKING:
    from ..mbl.sema import Program
    from .back import Body
    from .wir import Function


@dataclass
class MEBuild:
    """One MBL entry (pipeline or block) compiled for the forwarding MEs."""

    program: Program
    entry: str
    wir: Function
    body: Body


def compile_me(program: Program, entry: str | None = None, abi: BodyABI | None = None, *,
               print_after: Collection[str] = (), trace: Trace | None = None) -> MEBuild:
    """Front end then back end; raises npkit.compiler.mbl.CompileError with MBL locations.
    `trace(name, text)` sees the IR after each run of a pass named in `print_after` (names
    from PASSES, or "all"; an unknown one is an UnknownPassError before any work); with
    no `trace`, the IR goes to standard error."""
    from .back import compile_body
    from .front.pipeline import run_passes
    from .passes import selected, stderr_trace

    wanted = selected(print_after)
    tracer = (trace or stderr_trace) if wanted else None
    abi = abi or BodyABI()
    # a body with the window in local memory is pool.uc's, which gives a receive stage its
    # per-mpacket status
    fn = run_passes(program, entry, abi.window_max_bytes, print_after=wanted, trace=tracer,
                    receive=abi.header_lm_word is not None)
    body = compile_body(fn, abi, print_after=wanted, trace=tracer)
    return MEBuild(program, entry or fn.name, fn, body)


def emit_text(program: Program, kind: str, entry: str | None = None) -> str:
    """One IR of the program as text (EMIT_KINDS): the MBL stages (ast, llvm, llvm-opt) by
    npkit.compiler.mbl.emit; wir, mir (the machine IR after register allocation) and uc
    (the body fragment) of the entry compiled for the MEs."""
    from ..mbl import EMIT_KINDS as MBL_KINDS
    from ..mbl import emit
    from .passes import EMIT_KINDS

    if kind in MBL_KINDS:
        return emit(program, kind)
    if kind not in EMIT_KINDS:
        raise NpkitError(f"unknown IR kind {kind!r}; choose from {', '.join(EMIT_KINDS)}")
    build = compile_me(program, entry)
    return {"wir": str(build.wir), "mir": build.body.listing, "uc": build.body.uc}[kind]


_PASS_NAMES = ("FRONT_PASSES", "BACK_PASSES", "PASSES", "EMIT_KINDS", "UnknownPassError",
               "check_pass_names")


def __getattr__(name: str):  # the pass lists load the compiler (LLVM) only when asked for
    if name in _PASS_NAMES:
        from . import passes

        return getattr(passes, name)
    raise AttributeError(name)


__all__ = ["BodyABI", "MEBuild", "compile_me", "emit_text", *_PASS_NAMES]
