"""The names of the ME compiler's passes and IR kinds, for `--print-after` and `--emit`.

The lists themselves are the pipelines' (front/pipeline.py, back/pipeline.py): this module
only joins them and checks a user's choice against them.
"""

from __future__ import annotations

import sys
from collections.abc import Collection

from npkit.base.errors import NpkitError

from .back.pipeline import PASS_NAMES as BACK_PASSES
from .front.pipeline import PASSES as FRONT_PASSES

PASSES: tuple[str, ...] = FRONT_PASSES + BACK_PASSES
ALL = "all"                     # `--print-after all`: after every pass
# ast, llvm, llvm-opt: npkit.compiler.mbl.emit; wir: the front end's output; mir: the
# machine IR after register allocation; uc: the body fragment
EMIT_KINDS: tuple[str, ...] = ("ast", "llvm", "llvm-opt", "wir", "mir", "uc")
assert len(set(PASSES)) == len(PASSES), "a pass name is used by both ends"


class UnknownPassError(NpkitError):
    """A pass name that is not in PASSES (the message lists them)."""


def check_pass_names(names: Collection[str]) -> None:
    """UnknownPassError unless every name is a pass or `all`."""
    unknown = [n for n in names if n not in PASSES and n != ALL]
    if unknown:
        raise UnknownPassError(
            f"unknown pass {', '.join(map(repr, unknown))}; the passes are, in order: "
            f"{', '.join(FRONT_PASSES)} (front end), {', '.join(BACK_PASSES)} (back end), "
            f"or {ALL}")


def selected(names: Collection[str]) -> frozenset[str]:
    """The pass names to print after (`all` expanded); checks them first."""
    check_pass_names(names)
    return frozenset(PASSES) if ALL in names else frozenset(names)


def stderr_trace(name: str, text: str) -> None:
    """The default dump: a header line and the IR, on standard error."""
    print(f"; *** IR after {name} ***\n{text.rstrip()}\n", file=sys.stderr)
