"""``npkit.sim`` re-exports lazily: its data layer (ISA table, chip configs) loads without the
chip, and every public name still resolves to the object its submodule defines."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import npkit.sim

CHIP_MODULES = ("npkit.sim.chip", "npkit.sim.packets", "npkit.sim.trace", "npkit.sim._core")


def _modules_after(statement: str) -> set[str]:
    """The npkit modules loaded by ``statement`` in a fresh interpreter."""
    code = f"import sys\n{statement}\nprint(*sorted(m for m in sys.modules if 'npkit' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return set(out.split())


@pytest.mark.parametrize("statement", ["import npkit.sim.isa", "import npkit.sim.config",
                                       "from npkit.sim import isa"])
def test_the_data_layer_loads_without_the_chip(statement: str) -> None:
    loaded = _modules_after(statement)
    assert loaded & {"npkit.sim.isa", "npkit.sim.config"}
    assert not loaded & set(CHIP_MODULES), loaded


def test_a_chip_name_loads_its_module_on_first_use() -> None:
    loaded = _modules_after("from npkit.sim import Chip")
    assert "npkit.sim.chip" in loaded
    assert "npkit.sim._core" not in loaded  # the C++ core waits for Chip()


@pytest.mark.parametrize("name", npkit.sim.__all__)
def test_every_public_name_is_its_submodules_object(name: str) -> None:
    module = importlib.import_module(f"npkit.sim.{npkit.sim._EXPORTS[name]}")
    assert getattr(npkit.sim, name) is getattr(module, name)
    assert name in dir(npkit.sim)


def test_the_export_table_and_all_agree() -> None:
    assert sorted(npkit.sim.__all__) == sorted(npkit.sim._EXPORTS)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="npkit.sim' has no attribute 'Nope'"):
        npkit.sim.Nope  # noqa: B018
