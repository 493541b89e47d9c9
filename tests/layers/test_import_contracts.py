"""The import contracts (.importlinter, docs/architecture.md "Layers") as CI checks them:
scripts/lint-imports lays the tree out as the installed package and runs import-linter.

Each seeded import below breaks one contract in a copy of the tree, so these tests fail if
the layout or the contracts ever stop seeing what they are there to catch (an empty graph
keeps every contract)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    path = str(ROOT / "scripts" / "lint-imports")
    loader = importlib.machinery.SourceFileLoader("lint_imports", path)
    spec = importlib.util.spec_from_loader("lint_imports", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


LINT = _script()


def _lint(tree: Path, contract: str) -> subprocess.CompletedProcess[str]:
    command = [*LINT.lint_imports_command(), "--no-cache", "--no-logo", str(LINT.CONFIG),
               "--contract", contract]
    return subprocess.run(command, cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)),
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("layout")
    LINT.lay_out(LINT.package_folders(ROOT / "setup.py"), out)
    return out


def _module_file(tree: Path, module: str) -> Path:
    path = tree.joinpath(*module.split(".")).with_suffix(".py")
    return path if path.exists() else tree.joinpath(*module.split("."), "__init__.py")


def test_every_package_folder_is_laid_out(tree: Path) -> None:
    assert LINT.unmapped_packages(LINT.package_folders(ROOT / "setup.py")) == []
    for module in ("npkit/sim/isa.py", "npkit/compiler/uc/assembler.py", "npkit/link/__init__.py",
                   "npkit/bench/lab/report.py", "npkit/cli/__init__.py"):
        assert (tree / module).is_file(), module


@pytest.mark.parametrize(("contract", "module", "body", "message"), [
    ("layers", "npkit.sim.isa", "def _later():\n    from npkit.runtime import lpm\n    return lpm",
     "npkit.sim.isa is not allowed to import npkit.runtime"),
    ("layers", "npkit.compiler.uc.image", "def _chip():\n    from npkit.sim import Chip\n"
     "    return Chip", "npkit.compiler.uc is not allowed to import npkit.sim.chip"),
    ("click", "npkit.link.manifest", "def _cli():\n    import click\n    return click",
     "npkit.link is not allowed to import click"),
    ("acyclic", "npkit.bench.tester.media", "def _loop():\n    from npkit.bench.tester import "
     "packet\n    return packet", "No cycles are allowed in npkit.bench.tester"),
], ids=["upward-inside-a-function", "through-the-lazy-sim-package", "click", "cycle"])
def test_a_seeded_import_breaks_its_contract(tree: Path, contract: str, module: str, body: str,
                                             message: str) -> None:
    path = _module_file(tree, module)
    original = path.read_text()
    path.write_text(f"{original}\n\n{body}\n")
    try:
        broken = _lint(tree, contract)
    finally:
        path.write_text(original)
    assert broken.returncode == 1 and message in broken.stdout, broken.stdout + broken.stderr
    assert _lint(tree, contract).returncode == 0  # the contract holds without it


def test_the_tree_keeps_every_contract() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts/lint-imports")], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
