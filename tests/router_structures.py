"""The example router with a chosen route-table structure, whatever the default is
(microblocks/router_common.mbl imports lpm.mbl or lpm_poptrie.mbl), for tests that need
one structure's memory layout or run on both.  Importable from any test: tests/conftest.py
puts this folder on sys.path."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# structure (route_manager's `structure` names) -> the MBL file that declares its memories
FILES = {"16-8-8": "lpm.mbl", "poptrie": "lpm_poptrie.mbl"}


def router_with(structure: str, root: Path) -> Path:
    """A copy of examples/router/router.mbl under `root` whose microblocks import the
    `structure`'s walkers under both LPM file names; the path of its router.mbl."""
    shutil.copytree(REPO / "microblocks", root / "microblocks")
    for name in FILES.values():
        shutil.copy(REPO / "microblocks" / FILES[structure], root / "microblocks" / name)
    (root / "examples" / "router").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "router" / "router.mbl", root / "examples" / "router")
    return root / "examples" / "router" / "router.mbl"
