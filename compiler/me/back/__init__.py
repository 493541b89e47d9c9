"""The ME back end: WIR -> a body .uc fragment (docs/me-backend.md, "The body fragment").

    from npkit.compiler.me.back import compile_body
    body = compile_body(fn)          # fn: npkit.compiler.me.wir.Function
    print(body.uc)                   # the fragment: body_entry# ... br[body_exit#]
    print(body.listing)              # the machine IR after register allocation

The passes, one module each, run in the order of `pipeline.PASSES` (the table of contents:
prefetch, thread, sink, layout, bytetests, compares on WIR; isel to machine IR; dead-code,
hoist, forward, xfer, regalloc, drop-copies, peephole, defer on it; emit to text).
`compile_body(fn, print_after=..., trace=...)` shows the IR after any of them; `skip`
drops an optional one.  Errors are npkit.compiler.mbl.CompileError.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from .. import wir
from ..abi import BodyABI
from .errors import compile_error
from .options import DEFAULT_OPTIONS, BackOptions
from .pipeline import OPTIONAL, PASS_NAMES, Trace, run_passes


@dataclass
class Body:
    """A compiled body fragment and what it costs."""

    name: str
    uc: str
    window_bytes: int
    gprs_used: tuple[str, ...]
    spill_words: int
    instructions: int
    signals_used: tuple[int, ...]
    block_labels: dict[str, str]      # WIR block label -> .uc label
    listing: str                      # machine IR with allocated registers
    # loop bounds by .uc label, for the compile report (`analyze_body(loop_trips=...)`)
    loop_trips: dict[str, int] = field(default_factory=dict)
    header_lm_word: int | None = None  # the ABI's: where the header window is (abi.py)


DEFAULT_ABI = BodyABI()


def compile_body(fn: wir.Function, abi: BodyABI = DEFAULT_ABI,
                 options: BackOptions = DEFAULT_OPTIONS, *, skip: Collection[str] = (),
                 print_after: Collection[str] = (), trace: Trace | None = None) -> Body:
    """Compile one WIR function to the body fragment; raises CompileError.  `skip`: optional
    passes left out (pipeline.OPTIONAL); `trace(name, text)` sees the IR after each pass
    named in `print_after`."""
    if fn.window_bytes % 8 or not 0 <= fn.window_bytes <= abi.window_max_bytes:
        raise compile_error("me-window", f"{fn.name}: header window of {fn.window_bytes} "
                            f"bytes (0..{abi.window_max_bytes}, a multiple of 8)", fn.loc,
                            "the front end chooses the window")
    c = run_passes(fn, abi, options, skip=skip, print_after=print_after, trace=trace)
    assert c.mfn is not None and c.alloc is not None and c.threaded is not None
    mfn, alloc = c.mfn, c.alloc
    labels = {b.wir_label: b.label for b in mfn.blocks if b.wir_label}
    trips = {labels[b.label]: b.max_trips for b in c.threaded.blocks
             if b.max_trips and b.label in labels}
    return Body(fn.name, c.uc, fn.window_bytes, alloc.gprs_used, alloc.spill_words,
                c.instructions, mfn.signals_used, labels, mfn.listing(alloc.names), trips,
                abi.header_lm_word)


__all__ = ["BackOptions", "Body", "OPTIONAL", "PASS_NAMES", "Trace", "compile_body"]
