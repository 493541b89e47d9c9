"""LLVM's `-unroll-threshold` is one process-wide option: the ME back end sets it high for
its full unrolls, so a native build after an ME compile in the same process must set its own
(passes.set_unroll_threshold) or it gets other code, and up to 100 x the compile time (the
fuzz stage's MBL programs ran 2.7 x longer).  Checked in a fresh interpreter, where the
first native build sees LLVM's defaults."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# Two walks of a small LPM table: the host's -O3 unrolls their level loops further under the
# ME's limit than under its own (without set_unroll_threshold: 11 k against 84 k characters
# of IR).
PROGRAM = """
import "std/headers.mbl";
table fib : lpm(bit<32>) -> bit<16> [256] in sram;
fn fib_has(a: bit<32>) -> bool { return fib.contains(a); }
block b {
  let ip = packet<ipv4_t>(14) else drop(runt);
  if fib_has(ip.dst) { exception(0); }
  let port = fib.lookup(ip.dst) else drop(no_route);
  forward(port);
}
"""

SCRIPT = textwrap.dedent("""
    import sys
    from npkit.compiler.mbl import check_source
    from npkit.compiler.mbl.native import NativeProgram
    from npkit.compiler.me import emit_text

    program, bag = check_source(sys.stdin.read(), "unroll.mbl")
    assert not bag.errors, bag.render(program.sources)
    first = NativeProgram(program)
    emit_text(program, "uc", None)
    second = NativeProgram(program)
    before, after = str(first.ir), str(second.ir)
    print("same" if before == after else "differ", len(before), len(after))
""")


def test_a_native_build_after_an_me_compile_gets_the_same_code() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], input=PROGRAM, text=True,
                         capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("same"), out.stdout
