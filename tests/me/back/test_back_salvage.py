"""A variable whose value isel never computes (a header byte only tested in place,
`br=byte`) is rebuilt from the header word it comes from (compiler/me/back/salvage.py):
the image's location for it gives the byte of the transfer register for any word, as
Python's shift and mask say."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from npkit.compiler.mbl import compile_source
from npkit.compiler.me import compile_me
from npkit.compiler.me.report import wrap_body
from npkit.compiler.uc.assembler import assemble_text

SOURCE = """\
header h_t { a: bit<32>; b: bit<32>; }

block b {
    let h = packet<h_t>(0) else drop(short);
    let first = h.a[31:24];
    if first == 10 { drop(ten); }
    if first == 12 { drop(twelve); }
    forward(1);
}
"""


def first_locations():
    body = compile_me(compile_source(SOURCE, "salvage.mbl"), "b").body.uc
    image = assemble_text(wrap_body(body))
    return [v for pc in range(len(image.words)) for v in image.variables_at(pc)
            if v.variable.name == "first" and v.location is not None]


def test_the_byte_is_located() -> None:
    located = first_locations()
    assert located, "first is never located"
    assert all("DW_OP_shr" in loc.location.expr for loc in located)


@given(word=st.integers(0, 0xFFFFFFFF))
def test_the_rebuilt_value_is_the_byte(word: int) -> None:
    located = first_locations()
    assert located
    for v in located[:2]:
        (place,) = v.parts
        assert v.value({place: word}.__getitem__) == word >> 24
