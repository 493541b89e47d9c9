"""The order of the back end's passes: WIR -> machine IR (MIR) -> the body's microcode.

`PASSES` below is the back end's table of contents, one pass per module (docs/me-backend.md,
"The back end").  Each pass reads and updates one `Compilation`; after a pass runs,
`trace(name, text)` may see the IR it left: WIR up to `compares`, the machine IR from
`isel` to `defer` (virtual registers until `regalloc` names them), the .uc text after
`emit`.  A pass marked optional can be dropped (`run_passes(..., skip={"sink"})`) to
measure it or to compare its code with the plain one; the others are needed for a body.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from .. import wir
from ..abi import BodyABI
from .bytetests import ByteField, find_byte_tests, fixed_operands
from .compares import normalize_compares
from .defer import fill_defer_slots
from .emit import emit
from .forward import forward_copy_destinations
from .hdrwrite import plan_header_writes
from .hoist import hoist_loop_constants
from .isel import select
from .layout import layout
from .liveness import remove_dead_code
from .mir import MFunction, VReg
from .options import DEFAULT_OPTIONS, BackOptions
from .peephole import drop_redundant_tests
from .prefetch import Slot, hoist_reads
from .regalloc import Allocation, allocate, drop_coalesced_copies
from .sink import sink_to_uses
from .thread import thread_constant_jumps
from .varlocs import coalesced, locate
from .xfer import read_transfer_operands

Trace = Callable[[str, str], None]


@dataclass
class Compilation:
    """One function on its way through the back end: what the passes hand on."""

    fn: wir.Function                    # the WIR (rewritten by the WIR passes)
    abi: BodyABI
    options: BackOptions = DEFAULT_OPTIONS
    slots: dict[int, Slot] = field(default_factory=dict)        # prefetch: early reads
    threaded: wir.Function | None = None    # the WIR before layout (loop bounds by label)
    byte_tests: dict[int, ByteField] = field(default_factory=dict)
    mfn: MFunction | None = None        # isel on: the machine IR
    def_loc: dict[VReg, wir.Loc | None] = field(default_factory=dict)
    alloc: Allocation | None = None     # regalloc on: the registers
    coalesced: dict[VReg, VReg] = field(default_factory=dict)   # copies given one place
    uc: str = ""                        # emit: the body fragment
    instructions: int = 0

    @property
    def names(self) -> dict[VReg, str]:
        assert self.alloc is not None, "regalloc has not run"
        return self.alloc.names

    def text(self) -> str:
        """The IR as it is now: .uc text, else the machine IR, else the WIR."""
        if self.uc:
            return self.uc
        if self.mfn is not None:
            return self.mfn.listing(self.alloc.names if self.alloc else None)
        tested = "".join(f"\n; {field.word} byte {field.byte} tested in place (%{r})"
                         for r, field in sorted(self.byte_tests.items()))
        return str(self.fn) + tested.lstrip("\n") + ("\n" if tested else "")


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[Compilation], None]
    optional: bool = False          # may be skipped; the body is correct without it


def _prefetch(c: Compilation) -> None:
    hoisted = hoist_reads(c.fn, c.abi.signals, c.abi.xfer_regs)
    c.fn, c.slots = hoisted.fn, hoisted.slots


def _thread(c: Compilation) -> None:
    c.fn = thread_constant_jumps(c.fn)


def _sink(c: Compilation) -> None:
    c.fn = sink_to_uses(c.fn)


def _layout(c: Compilation) -> None:
    c.threaded = c.fn
    c.fn = layout(c.fn)


def _bytetests(c: Compilation) -> None:
    plan = plan_header_writes(c.fn, in_place=c.abi.header_lm_word is not None)
    c.byte_tests = find_byte_tests(c.fn, fixed_operands(c.fn, plan, c.abi))


def _compares(c: Compilation) -> None:
    c.fn = normalize_compares(c.fn, frozenset(c.byte_tests))


def _isel(c: Compilation) -> None:
    c.mfn, c.def_loc = select(c.fn, c.abi, c.slots, c.options, c.byte_tests)


def _mir(c: Compilation) -> MFunction:
    assert c.mfn is not None, "isel has not run"
    return c.mfn


def _regalloc(c: Compilation) -> None:
    c.alloc = allocate(_mir(c), c.abi, c.def_loc)
    c.coalesced = coalesced(_mir(c), c.names)     # for the variables' locations (debug)


def _emit(c: Compilation) -> None:
    views = locate(_mir(c), c.names, c.coalesced)
    c.uc, c.instructions = emit(_mir(c), c.names, views)


PASSES: tuple[Pass, ...] = (
    # on WIR
    Pass("prefetch", _prefetch, optional=True),   # reads issued blocks early
    Pass("thread", _thread),                      # jumps to a test a constant decides
    Pass("sink", _sink, optional=True),           # values computed where they are read
    Pass("layout", _layout),                      # the common path falls through
    Pass("bytetests", _bytetests, optional=True),  # header bytes tested in place
    Pass("compares", _compares),                  # compare constants the ALU takes inline
    # WIR -> machine IR
    Pass("isel", _isel),                          # instruction selection, latency hiding
    Pass("dead-code", lambda c: remove_dead_code(_mir(c))),
    Pass("hoist", lambda c: hoist_loop_constants(_mir(c))),  # constants out of loops
    Pass("forward", lambda c: forward_copy_destinations(_mir(c)), optional=True),
    Pass("xfer", lambda c: read_transfer_operands(_mir(c)), optional=True),
    Pass("regalloc", _regalloc),                  # A/B banks, spills to local memory
    Pass("drop-copies", lambda c: drop_coalesced_copies(_mir(c), c.names)),
    Pass("peephole", lambda c: drop_redundant_tests(_mir(c), c.names), optional=True),
    Pass("defer", lambda c: fill_defer_slots(_mir(c), c.names)),   # branch defer slots
    # machine IR -> text
    Pass("emit", _emit),
)

PASS_NAMES: tuple[str, ...] = tuple(p.name for p in PASSES)
OPTIONAL: tuple[str, ...] = tuple(p.name for p in PASSES if p.optional)


def check_skip(skip: Collection[str]) -> None:
    """ValueError unless every name is an optional pass (a test's mistake, not a user's)."""
    wrong = sorted(set(skip) - set(OPTIONAL))
    if wrong:
        raise ValueError(f"cannot skip {', '.join(wrong)}: the optional passes are "
                         f"{', '.join(OPTIONAL)}")


def run_passes(fn: wir.Function, abi: BodyABI, options: BackOptions = DEFAULT_OPTIONS, *,
               skip: Collection[str] = (), print_after: Collection[str] = (),
               trace: Trace | None = None) -> Compilation:
    """Every pass in order but those in `skip`; `trace(name, text)` after each pass named
    in `print_after` (the IR is rendered only for those)."""
    check_skip(skip)
    c = Compilation(fn, abi, options)
    for p in PASSES:
        if p.name in skip:
            continue
        p.run(c)
        if trace is not None and p.name in print_after:
            trace(p.name, c.text())
    return c
