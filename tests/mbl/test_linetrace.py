"""The native reference per MBL line (npkit.compiler.mbl.linetrace): the statements one
packet executes, in order, with the values of the variables in scope before each, against
values computed here in Python from the packet bytes; the normal builds have no hooks."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl import compile_source
from npkit.compiler.mbl.linetrace import LineTracer, native_line_trace
from npkit.compiler.mbl.lower import TRACE_LINE, lower
from npkit.compiler.mbl.native import NativeProgram

SOURCE = """\
header h_t { a: bit<32>; b: bit<16>; c: bit<16>; }

fn twice(v: bit<32>) -> bit<32> {
    let d = v + v;
    return d;
}

block b {
    let h = packet<h_t>(0) else drop(short);
    let x = h.a + 1;
    var y: bit<32> = twice(x);
    if h.b == 7 {
        let z = h.c;
        y = y + z as bit<32>;
    }
    for i in 0..2 {
        y = y ^ i;
    }
    meta.user = y;
    forward(1);
}
"""


def line_of(snippet: str) -> int:
    return SOURCE.splitlines().index(next(t for t in SOURCE.splitlines() if snippet in t)) + 1


def expected(packet: bytes) -> list[tuple[int, dict[str, int]]]:
    """(line, values before it) of every statement, written out from the source above."""
    a, b, c = struct.unpack(">IHH", packet[:8])
    x = (a + 1) & 0xFFFFFFFF
    out = [(line_of("let h ="), {}), (line_of("let x ="), {}),
           (line_of("var y"), {"x": x}),
           (line_of("let d ="), {"v": x}), (line_of("return d"), {"v": x, "d": 2 * x & 0xFFFFFFFF})]
    y = 2 * x & 0xFFFFFFFF
    out.append((line_of("if h.b"), {"x": x, "y": y}))
    if b == 7:
        out.append((line_of("let z ="), {"x": x, "y": y}))
        out.append((line_of("y = y + z"), {"x": x, "y": y, "z": c}))
        y = (y + c) & 0xFFFFFFFF
    out.append((line_of("for i"), {"x": x, "y": y}))
    for i in range(2):
        out.append((line_of("y = y ^ i"), {"x": x, "y": y, "i": i}))
        y ^= i
    out.append((line_of("meta.user"), {"x": x, "y": y}))
    out.append((line_of("forward(1)"), {"x": x, "y": y}))
    return out


@pytest.fixture(scope="module")
def tracer() -> LineTracer:
    return LineTracer(compile_source(SOURCE, "trace.mbl"))


@settings(max_examples=40, deadline=None)
@given(a=st.integers(0, 0xFFFFFFFF), b=st.sampled_from([7, 8, 0xFFFF]),
       c=st.integers(0, 0xFFFF))
def test_states_match_the_source_written_out(tracer: LineTracer, a: int, b: int,
                                             c: int) -> None:
    packet = struct.pack(">IHH", a, b, c) + bytes(8)
    run = tracer.trace(packet)
    got = [(s.line, s.values) for s in run.states]
    assert got == expected(packet)
    assert run.verdict.kind == "forward"
    assert run.verdict.port == 1
    y = expected(packet)[-1][1]["y"]
    # the traced build computes what the normal one does
    assert NativeProgram(compile_source(SOURCE, "trace.mbl")).run([packet])[0] == run.verdict
    assert y == run.states[-1].values["y"]


def test_a_short_packet_stops_at_the_drop(tracer: LineTracer) -> None:
    states = native_line_trace(compile_source(SOURCE, "trace.mbl"), b"\x01\x02")
    assert [s.line for s in states] == [line_of("let h ="), line_of("let h =")]
    assert tracer.trace(b"\x01\x02").verdict.kind == "drop"


def test_states_name_their_variables_declarations(tracer: LineTracer) -> None:
    run = tracer.trace(struct.pack(">IHH", 1, 7, 3))
    inner = next(s for s in run.states if "z" in s.values)
    assert inner.variables["z"].decl.line == line_of("let z =")
    assert inner.variables["z"].width == 16
    assert inner.variables["y"].decl.line == line_of("var y")


def test_normal_builds_have_no_hooks() -> None:
    for variables in (False, True):
        text = str(lower(compile_source(SOURCE, "trace.mbl"), variables=variables))
        assert TRACE_LINE not in text
        assert ("llvm.dbg.declare" in text) == variables   # the ME's build describes them
