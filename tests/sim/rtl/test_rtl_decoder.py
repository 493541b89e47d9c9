"""The RTL decoder is generated from the ISA table and the committed file is up to date."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from npkit.sim import isa
from npkit.sim.rtl import gen_decoder


def test_generated_decoder_is_up_to_date():
    assert gen_decoder.OUTPUT.read_text() == gen_decoder.generate(), (
        "sim/rtl/npk_isa.svh is stale: run python sim/rtl/gen_decoder.py")


def test_every_opcode_and_format_is_in_the_package():
    text = gen_decoder.OUTPUT.read_text()
    for ins in isa.INSTRUCTIONS:
        assert f"OP_{gen_decoder.sv_name(ins.name)} = 5'd{ins.opcode};" in text
    for fmt in isa.FORMATS.values():
        assert f"}} fmt_{fmt.name}_t;" in text


@pytest.mark.skipif(shutil.which("verilator") is None, reason="verilator is not installed")
def test_rtl_lints_clean():
    here = gen_decoder.HERE
    done = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", "npk_me_sim",
                           f"-I{here}", str(here / "npk_me.sv"), str(here / "npk_me_sim.sv")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
