"""The ME back end: WIR -> a body .uc fragment (docs/me-backend.md, "The body fragment").

    from npkit.compiler.me.back import compile_body
    body = compile_body(fn)          # fn: npkit.compiler.me.wir.Function
    print(body.uc)                   # the fragment: body_entry# ... br[body_exit#]
    print(body.listing)              # the machine IR after register allocation

Passes (one module each): `prefetch` (reads issued blocks early, waited for at first use),
`thread` (jumps to a test a constant decides), `sink` (values computed in the one block
that reads them), `layout`, `compares`, `isel` (instruction selection, with latency hiding
of unit commands; `bytetests`: header bytes tested in place), `hoist` (constants out of
loops), `forward` (results computed straight into transfer registers and metadata words),
`xfer` (read transfer registers used in place, not copied first),
`liveness` + `regalloc` (A/B banks, spills to *l$index0), `peephole` (zero tests the
previous instruction made), `defer` (branch defer slots),
`emit` (text with `.loc` lines).  Errors are npkit.compiler.mbl.CompileError.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import wir
from ..abi import BodyABI
from .bytetests import find_byte_tests, fixed_operands
from .compares import normalize_compares
from .defer import fill_defer_slots
from .emit import emit
from .errors import compile_error
from .forward import forward_copy_destinations
from .hdrwrite import plan_header_writes
from .hoist import hoist_loop_constants
from .isel import select
from .layout import layout
from .liveness import remove_dead_code
from .options import DEFAULT_OPTIONS, BackOptions
from .peephole import drop_redundant_tests
from .prefetch import hoist_reads
from .regalloc import allocate, drop_coalesced_copies
from .sink import sink_to_uses
from .thread import thread_constant_jumps
from .xfer import read_transfer_operands


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


DEFAULT_ABI = BodyABI()


def compile_body(fn: wir.Function, abi: BodyABI = DEFAULT_ABI,
                 options: BackOptions = DEFAULT_OPTIONS) -> Body:
    """Compile one WIR function to the body fragment; raises CompileError."""
    if fn.window_bytes % 8 or not 0 <= fn.window_bytes <= abi.window_max_bytes:
        raise compile_error("me-window", f"{fn.name}: header window of {fn.window_bytes} "
                            f"bytes (0..{abi.window_max_bytes}, a multiple of 8)", fn.loc,
                            "the front end chooses the window")
    hoisted = hoist_reads(fn, abi.signals) if options.early_reads else None
    source = hoisted.fn if hoisted else fn
    if options.thread_jumps:
        source = thread_constant_jumps(source)
    if options.sink_values:
        source = sink_to_uses(source)
    laid = layout(source)
    keep = frozenset(find_byte_tests(laid, fixed_operands(laid, plan_header_writes(laid)))
                     if options.byte_tests else ())
    mfn, def_loc = select(normalize_compares(laid, options.narrow_sums, keep), abi,
                          hoisted.slots if hoisted else None, options)
    remove_dead_code(mfn)
    if options.loop_constants:
        hoist_loop_constants(mfn)
    if options.forward_copies:
        forward_copy_destinations(mfn)
    if options.xfer_operands:
        read_transfer_operands(mfn)
    alloc = allocate(mfn, abi, def_loc)
    drop_coalesced_copies(mfn, alloc.names)
    if options.drop_tests:
        drop_redundant_tests(mfn, alloc.names)
    fill_defer_slots(mfn, alloc.names)
    text, count = emit(mfn, alloc.names)
    labels = {b.wir_label: b.label for b in mfn.blocks if b.wir_label}
    trips = {labels[b.label]: b.max_trips for b in source.blocks
             if b.max_trips and b.label in labels}
    return Body(fn.name, text, fn.window_bytes, alloc.gprs_used, alloc.spill_words, count,
                mfn.signals_used, labels, mfn.listing(alloc.names), trips)


__all__ = ["BackOptions", "Body", "compile_body"]
