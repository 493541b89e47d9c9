"""The ME back end: WIR -> a body .uc fragment (docs/me-backend.md, "The body fragment").

    from npkit.compiler.me.back import compile_body
    body = compile_body(fn)          # fn: npkit.compiler.me.wir.Function
    print(body.uc)                   # the fragment: body_entry# ... br[body_exit#]
    print(body.listing)              # the machine IR after register allocation

Passes (one module each): `isel` (instruction selection, with latency hiding of unit
commands), `liveness` + `regalloc` (A/B banks, spills to *l$index0), `defer` (branch defer
slots), `emit` (text with `.loc` lines).  Errors are npkit.compiler.mbl.CompileError.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import wir
from ..abi import BodyABI
from .compares import normalize_compares
from .defer import fill_defer_slots
from .emit import emit
from .errors import compile_error
from .isel import select
from .layout import layout
from .liveness import remove_dead_code
from .regalloc import allocate, drop_coalesced_copies


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


DEFAULT_ABI = BodyABI()


def compile_body(fn: wir.Function, abi: BodyABI = DEFAULT_ABI) -> Body:
    """Compile one WIR function to the body fragment; raises CompileError."""
    if fn.window_bytes % 8 or not 0 <= fn.window_bytes <= abi.window_max_bytes:
        raise compile_error("me-window", f"{fn.name}: header window of {fn.window_bytes} "
                            f"bytes (0..{abi.window_max_bytes}, a multiple of 8)", fn.loc,
                            "the front end chooses the window")
    mfn, def_loc = select(normalize_compares(layout(fn)), abi)
    remove_dead_code(mfn)
    alloc = allocate(mfn, abi, def_loc)
    drop_coalesced_copies(mfn, alloc.names)
    fill_defer_slots(mfn, alloc.names)
    text, count = emit(mfn, alloc.names)
    labels = {b.wir_label: b.label for b in mfn.blocks if b.wir_label}
    return Body(fn.name, text, fn.window_bytes, alloc.gprs_used, alloc.spill_words, count,
                mfn.signals_used, labels, mfn.listing(alloc.names))


__all__ = ["Body", "compile_body"]
