"""The choices of instruction selection that a test switches off to compare its code with
the plain one: `compile_body(fn, options=BackOptions(field_merges=False))`.

Whole passes are not switched here: `compile_body(fn, skip={"sink"})` drops an optional
pass from the list (back/pipeline.py).  Every switch below is turned off by a test; one
that nothing turns off is no switch (the optimisation is simply always on)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackOptions:
    shifted_constants: bool = True  # `x + 0xFFFFFF00` as `alu_shf[.., -, 1, <<8]`
    field_merges: bool = True       # `(p & m) | (q & ~m)` as one ld_field


DEFAULT_OPTIONS = BackOptions()
