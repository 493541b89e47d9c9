"""The RTL stays hardware: Yosys (Debian's 0.23) elaborates npk_me and finds no problem.

The full synthesis (sim/rtl/synth.ys, python -m npkit.sim.rtl.synth, ~2 min of CPU) is
recorded in docs/rtl.md; this test runs the front end and `check -assert` (undriven or
multiply driven signals, combinational loops), a few seconds, so that an edit outside the
SystemVerilog Yosys reads (docs/rtl.md, "Writing the RTL") fails here.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from npkit.sim.rtl import gen_decoder


@pytest.mark.skipif(shutil.which("yosys") is None,
                    reason="yosys is not installed (apt-get install yosys)")
def test_yosys_elaborates_and_checks_the_rtl():
    done = subprocess.run(
        ["yosys", "-q", "-p",
         "read_verilog -sv npk_me.sv; hierarchy -check -top npk_me; proc; check -assert"],
        cwd=gen_decoder.HERE, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
