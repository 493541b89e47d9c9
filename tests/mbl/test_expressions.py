"""Differential test: random well-typed expressions, run natively, against a Python model
of the documented semantics (wrapping bit<N>, shifts past the width give 0, casts truncate
or zero-extend, slices)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st


@dataclass(frozen=True)
class Expr:
    text: str
    width: int
    value: int  # the model's result


def _mask(w: int) -> int:
    return (1 << w) - 1


def leaves(a: int, c: int, w: int) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.just(Expr("a", w, a)), st.just(Expr("c", w, c)),
        st.integers(0, _mask(w)).map(lambda k: Expr(f"({k} as bit<{w}>)", w, k)))


def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    def binary(pair_op):
        (x, y), op = pair_op
        if x.width != y.width:
            y = Expr(f"({y.text} as bit<{x.width}>)", x.width, y.value & _mask(x.width))
        m = _mask(x.width)
        value = {"+": x.value + y.value, "-": x.value - y.value, "*": x.value * y.value,
                 "&": x.value & y.value, "|": x.value | y.value, "^": x.value ^ y.value}[op]
        return Expr(f"({x.text} {op} {y.text})", x.width, value & m)

    def shift(args):
        x, y, op = args
        amount = y.value
        if amount >= x.width:
            value = 0
        else:
            value = (x.value << amount if op == "<<" else x.value >> amount) & _mask(x.width)
        return Expr(f"({x.text} {op} {y.text})", x.width, value)

    def unary(args):
        x, op = args
        value = (~x.value if op == "~" else -x.value) & _mask(x.width)
        return Expr(f"({op}{x.text})", x.width, value)

    def cast(args):
        x, w = args
        return Expr(f"({x.text} as bit<{w}>)", w, x.value & _mask(w))

    def slice_(args):
        x, hi, lo = args
        hi, lo = max(hi, lo) % x.width, min(hi, lo) % x.width
        hi, lo = max(hi, lo), min(hi, lo)
        return Expr(f"{_paren(x.text)}[{hi}:{lo}]", hi - lo + 1,
                    (x.value >> lo) & _mask(hi - lo + 1))

    widths = st.sampled_from([1, 8, 13, 32, 64, 100, 128])
    return st.one_of(
        st.tuples(st.tuples(children, children), st.sampled_from("+-*&|^")).map(binary),
        st.tuples(children, children, st.sampled_from(["<<", ">>"])).map(shift),
        st.tuples(children, st.sampled_from("~-")).map(unary),
        st.tuples(children, widths).map(cast),
        st.tuples(children, st.integers(0, 127), st.integers(0, 127)).map(slice_),
    )


def _paren(text: str) -> str:
    return text if text.startswith("(") else f"({text})"


@st.composite
def programs(draw):
    w = draw(st.sampled_from([8, 16, 32, 64, 128]))
    a = draw(st.integers(0, _mask(w)))
    c = draw(st.integers(0, _mask(w)))
    exprs = draw(st.lists(st.recursive(leaves(a, c, w), extend, max_leaves=8),
                          min_size=1, max_size=4))
    return w, a, c, exprs


@settings(max_examples=60, deadline=None)
@given(programs())
def test_random_expressions_match_model(native_from, case):
    w, a, c, exprs = case
    body = "\n".join(f"    out[{i}] = ({e.text}) as bit<128>;" for i, e in enumerate(exprs))
    native = native_from(f"""
    array inp : bit<{w}> [2] in sram;
    array out : bit<128> [4] in sram;
    block b {{
        let a = inp[0];
        let c = inp[1];
{body}
        drop(done);
    }}""")
    native.write("inp", 0, a)
    native.write("inp", 1, c)
    native.run([b"\0"])
    assert [native.read("out", i) for i in range(len(exprs))] == [e.value for e in exprs]
