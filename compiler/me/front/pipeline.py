"""The order of the front end's passes, with a hook to print the IR after each.

`PASSES` names them in order (each once; the WIR passes run in rounds, so `simplify` and
others run several times): prepare (LLVM IR lowered, inlined, optimized, unrolled), read
(into plain data), legalize (to WIR), then the WIR passes of `_wir_passes()`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from npkit.compiler.mbl.sema import Program

from .. import wir
from . import bitfields, checksums, cse, headers, simplify, window
from .coalesce import coalesce
from .legalize import legalize
from .prepare import prepare
from .read import read_function

Pass = Callable[[wir.Function], None]
Trace = Callable[[str, str], None]


def _wir_passes() -> list[tuple[str, Pass]]:
    rounds = [("cse", cse.cse), ("headers", headers.forward_header_words),
              ("simplify", simplify.simplify), ("bitfields", bitfields.combine),
              ("simplify", simplify.simplify)]
    return [("simplify", simplify.simplify), *rounds, *rounds, *rounds,
            ("checksums", checksums.combine), ("simplify", simplify.simplify),
            ("bitfields", bitfields.combine), ("cse", cse.cse), ("coalesce", coalesce),
            ("simplify", simplify.simplify),
            ("cse", cse.cse), ("simplify", simplify.simplify),
            ("window", window.size_window)]


PASSES = ("prepare", "read", "legalize", *dict.fromkeys(n for n, _ in _wir_passes()))


def run_passes(program: Program, entry: str | None, window_max: int, *,
               print_after: Collection[str] = (), trace: Trace | None = None,
               receive: bool = False) -> wir.Function:
    """All passes; `trace(name, text)` sees the IR after each run of a pass named in
    `print_after`: the entry's LLVM IR after prepare and read (read changes its form, not
    its content), the WIR after the others."""
    def show(name: str, text: Callable[[], str]) -> None:
        if trace is not None and name in print_after:
            trace(name, text())

    prepared = prepare(program, entry, receive)
    show("prepare", lambda: str(prepared.function))
    lfn = read_function(prepared.function, prepared.locate, prepared.values)
    show("read", lambda: str(prepared.function))
    fn = legalize(lfn, prepared.entry.name, window_max, program.sources, prepared.entry.loc)
    show("legalize", lambda: str(fn))
    for name, run in _wir_passes():
        run(fn)
        show(name, lambda: str(fn))
    return fn
