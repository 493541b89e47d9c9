"""The order of the front end's passes, with a hook to print the WIR after each."""

from __future__ import annotations

from collections.abc import Callable

from npkit.compiler.mbl.sema import Program

from .. import wir
from .legalize import legalize
from .prepare import prepare
from .read import read_function

Pass = Callable[[wir.Function], None]


def _wir_passes() -> list[tuple[str, Pass]]:
    from . import bitfields, checksums, cse, headers, simplify, window
    from .coalesce import coalesce

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


def run_passes(program: Program, entry: str | None, window_max: int,
               trace: Callable[[str, wir.Function], None] | None = None) -> wir.Function:
    """All passes; `trace(name, fn)` sees the WIR after each WIR pass."""
    prepared = prepare(program, entry)
    lfn = read_function(prepared.function, prepared.locate)
    fn = legalize(lfn, prepared.entry.name, window_max, program.sources, prepared.entry.loc)
    if trace:
        trace("legalize", fn)
    for name, run in _wir_passes():
        run(fn)
        if trace:
            trace(name, fn)
    return fn
