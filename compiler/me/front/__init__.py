"""The ME backend's front end: optimized LLVM IR -> WIR (docs/me-backend.md).

    from npkit.compiler.me.front import to_wir
    fn = to_wir(program, "router")          # a wir.Function; print(fn) lists it

Passes, one module each: prepare (lower, inline the pipeline's blocks, optimize, unroll),
read (llvmlite -> plain data), legalize (words, out of SSA, switches, allocas, npu.*
expansion via intrinsics), then on WIR: simplify (copy propagation, constant folding,
dead code), cse (dominator-scoped common reads and expressions), headers (forward header
writes to reads, drop overwritten ones), bitfields (bit provenance: fields built byte by
byte become one shift/mask or funnel shift), checksums (csum/csum_update as 32-bit
end-around-carry sums, RFC 1624 updates folded), coalesce (adjacent memory reads in one
command), window (the header window's size).
"""

from __future__ import annotations

from npkit.compiler.mbl.sema import Program

from .. import wir
from ..abi import WINDOW_MAX_BYTES
from .errors import FrontError
from .pipeline import PASSES, run_passes


def to_wir(program: Program, entry: str | None = None,
           window_max: int = WINDOW_MAX_BYTES) -> wir.Function:
    """Compile a pipeline or block of a checked program to WIR.  Raises CompileError (with
    the MBL location) for constructs the ME backend does not support, FrontError for an
    unknown or ambiguous entry."""
    return run_passes(program, entry, window_max)


__all__ = ["to_wir", "FrontError", "PASSES", "run_passes"]
