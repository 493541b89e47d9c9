"""A function whose `let`s follow calls of other MBL functions (a table walk written as a
chain of steps, as microblocks/lpm_poptrie.mbl's walkers can be): every variable's alloca
sits at the top of its function's entry block, so LLVM's inliner leaves no dynamic alloca
and wraps nothing in llvm.stacksave / stackrestore, which the ME back end cannot lower (it
refused such a program before lower.hoist_allocas)."""

from __future__ import annotations

import llvmlite.ir as ir

from npkit.compiler.mbl import compile_source
from npkit.compiler.mbl.lower import lower
from npkit.compiler.me import emit_text

WALK = """
array table : bit<32> [1024] in sram;
header key_t { addr: bit<32>; }
fn step(word: bit<32>, v: bit<32>) -> bit<32> {
    if (word & 0x80000000) == 0 { return word; }
    return table[(word & 0x3ff) ^ v];
}
fn walk(a: bit<32>) -> bit<32> {
    let w0 = table[a & 0x3ff];
    let w1 = step(w0, a[15:8] as bit<32>);
    let w2 = step(w1, a[7:4] as bit<32>);
    let w3 = step(w2, a[3:0] as bit<32>);
    return w3;
}
block probe {
    let key = packet<key_t>(0) else drop(runt);
    forward(walk(key.addr)[3:0]);
}
"""


def test_every_alloca_is_at_the_top_of_its_entry_block() -> None:
    module = lower(compile_source(WALK, "walk.mbl"), variables=True)
    for fn in module.functions:
        if not fn.blocks:
            continue
        entry = fn.blocks[0].instructions
        allocas = [i for i in entry if isinstance(i, ir.AllocaInstr)]
        assert entry[:len(allocas)] == allocas, fn.name
        for block in fn.blocks[1:]:
            assert not any(isinstance(i, ir.AllocaInstr) for i in block.instructions), fn.name


def test_a_chain_of_lets_after_calls_compiles_for_the_chip() -> None:
    microcode = emit_text(compile_source(WALK, "walk.mbl"), "uc", None)
    assert "probe" in microcode
