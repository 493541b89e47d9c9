"""Comparing the MBL variables a compiled program shows on the chip with the native
target's line trace (npkit.compiler.mbl.linetrace): shared by the stepping tests of
tests/me/link (varsteps.py) and the debugger's (tests/runtime/test_debugger_variables.py).
Importable from any test: tests/conftest.py puts this folder on sys.path."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from npkit.compiler.mbl.linetrace import LineRun

# one stop: (file, line, {(name, declaration): value, None where optimised out})
Stop = tuple[str, int, dict]


def compare(stops: list[Stop], native: LineRun) -> tuple[int, list[str]]:
    """How many values agree; what disagrees.  A line the scheduled code reaches more than
    once, or the native code runs more than once (a loop), matches any of its visits."""
    at = defaultdict(list)
    for s in native.states:
        at[(s.loc.file, s.loc.line)].append(s)
    agreed, wrong = 0, []
    for file, line, values in stops:
        for (name, decl), value in values.items():
            if value is None:
                continue
            seen = {s.values[name] for s in at[(file, line)]
                    if name in s.values and s.variables[name].decl == decl}
            if not seen:
                continue        # not yet assigned in the source's order (scheduled early)
            if value in seen:
                agreed += 1
            else:
                wrong.append(f"{Path(file).name}:{line} {name} = {value:#x}, native "
                             f"{sorted(map(hex, seen))}")
    return agreed, wrong
