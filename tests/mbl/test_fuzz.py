"""Fuzzing: random and mutated programs never produce a Python traceback.

Every input must end in diagnostics or a clean program; clean programs must also lower to
IR that LLVM verifies.
"""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl import check_source
from npkit.compiler.mbl.lower import lower

PROGRAMS = Path(__file__).parent / "programs"
MICROBLOCKS = Path(__file__).resolve().parents[2] / "microblocks"
SEEDS = [
    (MICROBLOCKS / "ipv4_fwd.mbl").read_text(),
    (MICROBLOCKS / "ipv6_fwd.mbl").read_text(),
    (MICROBLOCKS / "router.mbl").read_text(),
    (PROGRAMS / "ipv4_ttl.mbl").read_text(),
    (Path(__file__).resolve().parents[2] / "microblocks" / "l2_bridge.mbl").read_text(),
    (Path(__file__).resolve().parents[2] / "microblocks" / "eth_to_pos.mbl").read_text(),
    """
    struct s_t { a: bit<12>; b: bit<20>; }
    array arr : s_t [8] in scratch;
    register r : bit<16> [4] in local;
    enum E : bit<4> { x = 1, y = 2 }
    fn f(v: bit<16>) -> bit<16> { var t: bit<16> = v; for i in 0..4 { t += 1; } return t; }
    block b {
        let e = arr[meta.in_port];
        e.a = e.b[11:0] ^ 0xfff;
        if r.add(1, f(3)) == 7 && !(meta.len < 64) { exception(E.x as bit<8>); }
        forward(r[2] as bit<16>, 1);
    }
    block c { if meta.len > 60 { next(big); } packet.pull(2) else drop(r); next; }
    pipeline p { ports 0..3; stage s = c on me(0, 1); stage t = b; s.big -> t; s -> t; }
    """,
]
TOKENS = ("block fn const enum header struct table array counter register pipeline stage "
          "ports import let var if else for in return forward drop exception next packet "
          "push pull lpm hash sram scratch local as bit bool true false meta csum crc32 toeplitz "
          "csum_update hash48 hash64 hash128 contains lookup count add "
          "{ } ( ) [ ] < > ; : , . .. -> = == != <= >= + - * & | ^ ~ ! << >> && || += "
          "0 1 255 0xffff 128 129 99999999999999999999999999999999999999999 x y ip eth "
          "ipv4_t ethernet_t bit<8> bit<0> bit<32> \"std/headers.mbl\" // /* */ @ $ \\").split()


def _compile(text: str) -> None:
    # imports resolve next to the standard microblocks
    program, bag = check_source(text, "fuzz.mbl", path=MICROBLOCKS / "fuzz.mbl")
    rendered = bag.render(program.sources)  # rendering must not fail either
    assert isinstance(rendered, str)
    assert all(d.hint for d in bag.items), [d.kind for d in bag.items if not d.hint]
    if not bag.errors and program.blocks:
        llvm.parse_assembly(str(lower(program))).verify()


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_random_token_soup(tokens):
    _compile(" ".join(tokens))


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        j = min(len(text), i + draw(st.integers(0, 12)))
        op = draw(st.sampled_from(["delete", "insert", "dup", "token"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.text(max_size=6)) + text[i:]
        elif op == "dup":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + " " + draw(st.sampled_from(TOKENS)) + " " + text[j:]
    return text


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_mutated_programs(text):
    _compile(text)


def test_seeds_are_valid():
    for seed in SEEDS:
        program, bag = check_source(seed, "seed.mbl", path=MICROBLOCKS / "seed.mbl")
        assert not bag.errors, bag.render(program.sources)
