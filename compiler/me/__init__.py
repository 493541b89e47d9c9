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
        """The chip images; a body that overflows the control store is a CompileError at
        the entry's MBL declaration (the assembler's message would point into the body)."""
        from ..uc import AsmError
        from .back.errors import compile_error
        from .link import link, meta_setup

        options.setdefault("meta", meta_setup(self.wir))   # zero only what the body needs
        try:
            return link(self.program, self.body.uc, self.body.window_bytes,
                        pipeline=self.entry, **options)
        except AsmError as e:
            overflow = next((d for d in e.diagnostics
                             if d.message.startswith("control store overflow")), None)
            if overflow is None:
                raise
            raise compile_error(
                "me-control-store",
                f"{self.entry} does not fit in the control store: its body is "
                f"{self.body.instructions} instructions, and with the dispatch loop "
                f"{overflow.message.removeprefix('control store overflow: ')}",
                self.wir.loc, "shorten the block (fewer unrolled loop trips, smaller "
                "functions) or split the pipeline") from None


def compile_me(program: Program, entry: str | None = None,
               abi: BodyABI | None = None) -> MEBuild:
    """Front end then back end; raises npkit.compiler.mbl.CompileError with MBL locations."""
    from .back import compile_body
    from .front import to_wir

    fn = to_wir(program, entry, window_max=(abi or BodyABI()).window_max_bytes)
    body = compile_body(fn, abi or BodyABI())
    return MEBuild(program, entry or fn.name, fn, body)


__all__ = ["BodyABI", "MEBuild", "compile_me"]
