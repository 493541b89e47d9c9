"""MBL variables on the chip for random packets (hypothesis): a hand-written block with
arithmetic, a function, a reassigned `var`, both arms of an `if` and a loop, compiled, linked
and stepped by MBL line; every located variable equals the native line trace's value at
that line, and the verdict the chip gives is the native one."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mbl_variables import compare

from npkit.compiler.mbl import compile_source
from npkit.compiler.mbl.linetrace import LineTracer
from npkit.compiler.me import compile_me
from npkit.link import link

from .varsteps import step_by_line

SOURCE = """\
header eth_t { dst: bit<48>; src: bit<48>; ethertype: bit<16>; }
header h_t { a: bit<32>; b: bit<16>; c: bit<16>; d: bit<32>; }

fn mix(v: bit<32>, k: bit<32>) -> bit<32> {
    let t = v ^ k;
    return t + (t >> 3);
}

block vars {
    let eth = packet<eth_t>(0) else drop(short);
    let h = packet<h_t>(14) else drop(short);
    let x = h.a + h.d;
    var y: bit<32> = mix(x, 0x5a5a);
    if h.b > h.c {
        let gap = h.b - h.c;
        y = y - gap as bit<32>;
    } else {
        y = y + 7;
    }
    var acc: bit<32> = 0;
    for i in 0..3 {
        acc = acc + (y >> i);
    }
    let z = acc & 0xffff;
    meta.user = z;
    h.d = y;
    forward(1);
}
"""


@pytest.fixture(scope="module")
def built():
    program = compile_source(SOURCE, "vars.mbl")
    linked = link(program, compile_me(program, "vars"), "ixp2800-2x10gbe")
    return linked, LineTracer(program)


# a chip per example (~3 s): few examples, no shrinking (a failure prints its packet)
@settings(max_examples=6, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(0, 0xFFFFFFFF), b=st.integers(0, 0xFFFF), c=st.integers(0, 0xFFFF),
       d=st.integers(0, 0xFFFFFFFF))
def test_random_packets(built, a: int, b: int, c: int, d: int) -> None:
    linked, tracer = built
    frame = bytes(range(12)) + b"\x88\xb5" + struct.pack(">IHHI", a, b, c, d) + bytes(34)
    native = tracer.trace(frame, 0)
    assert native.verdict.kind == "forward"
    stops = step_by_line(linked, tracer, frame)
    agreed, wrong = compare(stops, native)
    assert not wrong, "\n".join(wrong)
    assert agreed >= 3
