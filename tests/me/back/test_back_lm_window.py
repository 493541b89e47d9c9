"""The header window in local memory (compiler/me/abi.py LM_WINDOW_ABI, docs/datapath.md
"The register budget"): the compiled data path reads the window from the RBUF into SRAM-in
transfer registers, which the body needs for its own reads, so the dispatch copies it to
local memory and the body reads and writes it there.  Checked on the two routers: no DRAM
transfer register and no DRAM write-back is left, the body names no transfer register the
receive status takes ($14, $15) and no local-memory word past the context's 16, and the
window words it rewrites are written in place.  The figures of docs/datapath.md come from

    .venv/bin/python -m pytest -q tests/me/back/test_back_lm_window.py -s
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import LM_WINDOW_ABI, BodyABI
from npkit.compiler.me.report import abi_violations, analyze_body

REPO = Path(__file__).resolve().parents[3]
ROUTERS = [REPO / "examples" / "pos_router" / "pos_router.mbl",
           REPO / "examples" / "router" / "router.mbl"]


@pytest.mark.parametrize("source", ROUTERS, ids=lambda p: p.stem)
def test_the_window_in_local_memory_leaves_the_receive_status_alone(source: Path) -> None:
    program = compile_file(source)
    entry = next(iter(program.pipelines))
    dram = compile_me(program, entry).body
    lm = compile_me(program, entry, LM_WINDOW_ABI).body
    assert "$$" in dram.uc and "$$" not in lm.uc            # no DRAM transfer register at all
    assert "dram[" in dram.uc and "dram[" not in lm.uc      # no write-back
    sram = {int(k) for k in re.findall(r"(?<![$\w])\$(\d+)", lm.uc)}
    assert sram and max(sram) < LM_WINDOW_ABI.xfer_regs     # $14, $15: the receive status
    assert LM_WINDOW_ABI.header_lm_word is not None
    first = LM_WINDOW_ABI.header_lm_word
    words = {int(k) for k in re.findall(r"\*l\$index0\[(\d+)\]", lm.uc)}
    # the window's words, and the spill words below it (the router has used one since its
    # issue-16 checks, 35ba627)
    assert lm.spill_words <= first
    assert words <= set(range(lm.spill_words)) | set(range(first, first + lm.window_bytes // 4))
    # the TTL / hop limit word is rewritten in place
    assert re.search(r"alu\[\*l\$index0\[\d+\], ", lm.uc)
    stats = {abi: analyze_body(b.uc, loop_trips=b.loop_trips)
             for abi, b in (("dram", dram), ("lm", lm))}
    assert abi_violations(stats["lm"], LM_WINDOW_ABI) == []
    for name, s in stats.items():
        body = dram if name == "dram" else lm
        print(f"\n{source.stem} window {body.window_bytes} B, header in {name}: "
              f"{body.instructions} instructions, worst path {s.path_instructions} "
              f"instructions / {s.path_cycles} cycles, memory {s.memory_detail}")


def test_the_default_abi_keeps_the_window_in_dram_transfer_registers() -> None:
    assert BodyABI().header_word(3) == "$$3"
    assert LM_WINDOW_ABI.header_word(3) == "*l$index0[5]"
