"""The ME backend: MBL programs compiled to multi-threaded microcode (docs/me-backend.md).

    from npkit.compiler.mbl import compile_file
    from npkit.compiler.me import compile_me
    build = compile_me(compile_file("examples/router/router.mbl"))   # -> MEBuild
    print(build.wir)            # the word IR the front end made
    print(build.body.uc)        # the compiled body (.uc fragment)
    linked = build.link()       # ME images, memory map, mapping (compiler/me/link.py)

The parts: `front` (optimized LLVM IR -> WIR), `back` (WIR -> body microcode), `link`
(dispatch loop, media stages, memory map, images), `report` and `graph`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .abi import BodyABI

if TYPE_CHECKING:
    from ..mbl.sema import Program
    from .back import Body
    from .link import LinkedProgram
    from .wir import Function


@dataclass
class MEBuild:
    """One MBL entry (pipeline or block) compiled for the forwarding MEs."""

    program: Program
    entry: str
    wir: Function
    body: Body

    def link(self, **options) -> LinkedProgram:
        from .link import link
        return link(self.program, self.body.uc, self.body.window_bytes,
                    pipeline=self.entry, **options)


def compile_me(program: Program, entry: str | None = None,
               abi: BodyABI | None = None) -> MEBuild:
    """Front end then back end; raises npkit.compiler.mbl.CompileError with MBL locations."""
    from .back import compile_body
    from .front import to_wir

    fn = to_wir(program, entry, window_max=(abi or BodyABI()).window_max_bytes)
    body = compile_body(fn, abi or BodyABI())
    return MEBuild(program, entry or fn.name, fn, body)


__all__ = ["BodyABI", "MEBuild", "compile_me"]
