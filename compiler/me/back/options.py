"""The back end's optimizations that can be switched off (to measure them, or to compare
their code with the plain one); `compile_body(fn, options=BackOptions(...))`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackOptions:
    early_reads: bool = True        # prefetch.py: reads issued before their block
    overlap_return: bool = True     # a return waits once, for its write-back and the rest
    loop_constants: bool = True     # hoist.py: constants loaded before a loop, not per trip
    thread_jumps: bool = True       # thread.py: a jump to a test a constant decides
    fold_addresses: bool = True     # isel: `x * k + c` into a command's address operands
    forward_copies: bool = True     # forward.py: results computed into $$ / metadata words
    drop_tests: bool = True         # peephole.py: zero tests the previous ALU result made
    halfword_tests: bool = True     # isel: `(w >> 16) == c` as two byte compares of w
    narrow_sums: bool = True        # compares.py: `(x + c) & 0xFFFF` with c under 64
    shifted_constants: bool = True  # isel: `x + 0xFFFFFF00` as `alu_shf[.., -, 1, <<8]`
    field_merges: bool = True       # isel: `(p & m) | (q & ~m)` as one ld_field
    xfer_operands: bool = True      # xfer.py: `$k` read in place, not copied to a GPR first
    unmask_fields: bool = True      # isel: an address field `(x & 0xFFFF) << 2 & 0xFFC` of x
    sink_values: bool = True        # sink.py: a value computed in the block that reads it
    byte_tests: bool = True         # bytetests.py: a header byte tested in place (br=byte)


DEFAULT_OPTIONS = BackOptions()
