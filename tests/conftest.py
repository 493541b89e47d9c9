"""Session-wide checks for the whole test tree.

The C++ extensions are part of the product, not optional extras: a test run without them
must fail at once with a message that says how to build them, not skip the chip's tests
(or fail hundreds of them one import error at a time)."""

from __future__ import annotations

import importlib

import pytest

# (module, what it is) -- built by `scripts/setup` (pip install -e .)
EXTENSIONS = (("npkit.sim._core", "the simulator core, sim/core"),
              ("npkit.runtime._trie", "the route table's trie helper, runtime/trie"))


def missing_extensions() -> list[str]:
    missing = []
    for module, what in EXTENSIONS:
        try:
            importlib.import_module(module)
        except ImportError as error:
            missing.append(f"  {module} ({what}): {error}")
    return missing


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = missing_extensions()
    if missing:
        pytest.exit("the C++ extensions are not built or do not load:\n" + "\n".join(missing)
                    + "\nbuild them with: bash scripts/setup",
                    returncode=pytest.ExitCode.INTERNAL_ERROR)
