"""The front end on small MBL programs, each run on the native target and, as WIR, on the
interpreter: integer widths (canonical narrow values, wide arithmetic with carries, shifts
by constants and by registers, comparisons), loops, memories, tables and intrinsics; plus
the errors for unsupported constructs and the entry choice."""

from __future__ import annotations

import re

import pytest
from harness import compile_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl import CompileError, compile_source
from npkit.compiler.mbl.types import META_FIELDS
from npkit.compiler.me import wir
from npkit.compiler.me.front import FrontError, to_wir
from npkit.compiler.me.front.pipeline import PASSES, run_passes

WIDTHS = [1, 4, 8, 13, 16, 24, 32, 48, 64, 100, 128]


def _mask(w: int) -> int:
    return (1 << w) - 1


@st.composite
def expressions(draw, depth: int = 3) -> tuple[str, int]:
    """(MBL expression text over a and c, its width)."""
    w = draw(st.sampled_from(WIDTHS))
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.sampled_from(["a", "c", "k"]))
        if leaf == "k":
            return f"({draw(st.integers(0, _mask(w)))} as bit<{w}>)", w
        return f"({leaf} as bit<{w}>)", w
    kind = draw(st.sampled_from(["bin", "bin", "shift", "unary", "slice", "cmp"]))
    x, xw = draw(expressions(depth - 1))
    if kind == "unary":
        return f"({draw(st.sampled_from('~-'))}{x})", xw
    if kind == "slice":
        hi = draw(st.integers(0, xw - 1))
        lo = draw(st.integers(0, hi))
        return f"({x}[{hi}:{lo}])", hi - lo + 1
    y, yw = draw(expressions(depth - 1))
    y = f"({y} as bit<{xw}>)"
    if kind == "shift":
        op = draw(st.sampled_from(["<<", ">>"]))
        amount = draw(st.one_of(st.integers(0, xw + 3).map(str), st.just(y)))
        return f"({x} {op} {amount})", xw
    if kind == "cmp":
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        return f"(({x} {op} {y}) as bit<1>)", 1
    return f"({x} {draw(st.sampled_from(['+', '-', '*', '&', '|', '^']))} {y})", xw


@st.composite
def expression_programs(draw) -> tuple[str, list[int]]:
    exprs = draw(st.lists(expressions(), min_size=1, max_size=3))
    body = "\n".join(f"    out[{i}] = ({e} as bit<128>);" for i, (e, _) in enumerate(exprs))
    inputs = [draw(st.integers(0, _mask(128))) for _ in range(2)]
    return f"""
array inp : bit<128> [2] in sram;
array out : bit<128> [4] in sram;
block b {{
    let a = inp[0];
    let c = inp[1];
{body}
    drop(done);
}}""", inputs


def _forbids_wide_mul(text: str) -> bool:
    """The ME backend multiplies 32-bit words only; skip products of wider values."""
    return "*" in text


@settings(max_examples=25, deadline=None)
@given(expression_programs())
def test_random_expressions_match_native(case):
    source, inputs = case
    try:
        pair = compile_pair(source=source, entry="b")
    except CompileError as e:
        assert "multiplication" in str(e) and _forbids_wide_mul(source)
        return
    for k, v in enumerate(inputs):
        pair.native.write("inp", k, v)
    pair.check(b"\0")


PROGRAMS = {
    "loops_and_register_shifts": ("""
array inp : bit<128> [2] in sram;
array out : bit<32> [16] in sram;
block b {
    let a = inp[0];
    var s: bit<32> = 0;
    for i in 0..12 {
        s = s + ((a >> (inp[1] as bit<32> + i * 9)) as bit<32> & 0xff);
    }
    out[0] = s;
    var t: bit<64> = a as bit<64>;
    for i in 0..8 { t = (t << 3) ^ (t >> 5) + 0x9e3779b97f4a7c15; }
    out[1] = t[63:32];
    out[2] = t[31:0];
    drop(done);
}""", [lambda r: r.getrandbits(128), lambda r: r.randrange(140)]),
    "memories_tables_intrinsics": ("""
import "std/headers.mbl";
table t6 : lpm(bit<128>) -> bit<16> [8];
table t4 : lpm(bit<32>) -> bit<16> [8];
table h : hash(bit<48>) -> bit<8> [16];
register r : bit<32> [4] in local;
counter c [4] in scratch;
array inp : bit<128> [2] in sram;
array out : bit<32> [8] in scratch;
block b {
    let ip = packet<ipv4_t>(0) else drop(runt);
    out[0] = crc32(ip.src, ip.dst);
    out[1] = hash64(inp[0] as bit<64>)[40:9] as bit<32>;
    out[2] = hash128(inp[0])[100:69] as bit<32>;
    out[3] = hash48(inp[1] as bit<48>)[47:16] as bit<32>;
    out[4] = r.add(ip.ttl as bit<32>, 5);
    c.count(ip.protocol);
    let p = t6.lookup(inp[0]) else drop(miss6);
    let q = t4.lookup(ip.dst) else drop(miss4);
    let v = h.lookup(inp[1] as bit<48>) else exception(q as bit<32>);
    out[5] = (p as bit<32>) << 16 | v as bit<32>;
    ip.ttl = ip.ttl - 1;
    ip.checksum = csum(ip);
    forward(p);
}""", [lambda r: r.choice([0x20010DB8 << 96 | r.getrandbits(80), r.getrandbits(128)]),
       lambda r: r.choice([0xAABBCCDDEEFF, 0x010203040506, r.getrandbits(48)])]),
    # LLVM turns these clamps into llvm.usub.sat / llvm.uadd.sat at every width
    "saturating_arithmetic": ("""
array inp : bit<128> [2] in sram;
array out : bit<32> [16] in sram;
block b {
    let a = inp[0];
    let c = inp[1];
    let a4 = a[3:0];
    let c4 = c[3:0];
    var d4: bit<4> = 0;
    if a4 >= c4 { d4 = a4 - c4; }
    out[0] = d4 as bit<32>;
    let a32 = a[63:32];
    let c32 = c[63:32];
    var d32: bit<32> = 0;
    if a32 > c32 { d32 = a32 - c32; }
    out[1] = d32;
    let s32 = a32 + c32;
    var u32: bit<32> = s32;
    if s32 < a32 { u32 = 0xffffffff; }
    out[2] = u32;
    let a64 = a[127:64] as bit<64>;
    let c64 = c[127:64] as bit<64>;
    var d64: bit<64> = 0;
    if a64 >= c64 { d64 = a64 - c64; }
    out[3] = d64[63:32];
    out[4] = d64[31:0];
    let s64 = a64 + c64;
    var u64: bit<64> = s64;
    if s64 < a64 { u64 = 0xffffffffffffffff; }
    out[5] = u64[63:32];
    out[6] = u64[31:0];
    drop(done);
}""", [lambda r: r.choice([r.getrandbits(128), (1 << 128) - 1 - r.getrandbits(8)]),
       lambda r: r.choice([r.getrandbits(128), r.getrandbits(70), (1 << 128) - 1])]),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_small_programs_match_native(name):
    import ipaddress
    import random

    source, draws = PROGRAMS[name]
    pair = compile_pair(source=source, entry="b")
    n = pair.native
    if "t6" in pair.program.memories:
        for net, port in (("2001:db8::/32", 1), ("2001:db8:1::/48", 2), ("::/0", 3)):
            net6 = ipaddress.ip_network(net)
            n.table_add("t6", int(net6.network_address), port, net6.prefixlen)
        for net, port in (("10.0.0.0/8", 4), ("10.1.0.0/16", 5)):
            net4 = ipaddress.ip_network(net)
            n.table_add("t4", int(net4.network_address), port, net4.prefixlen)
        n.table_add("h", 0xAABBCCDDEEFF, 9)
        n.table_add("h", 0x010203040506, 7)
    rng = random.Random(7)
    for _ in range(30):
        for k, draw in enumerate(draws):
            n.write("inp", k, draw(rng))
        frame = bytes([0x45, 0, 0, 20, 0, 0, 0, 0, rng.randrange(256), rng.randrange(256),
                       0, 0, 1, 2, 3, 4, 10, rng.choice([0, 1, 2]), 0, 1]) + b"pp"
        pair.check(frame[:rng.choice([19, 20, 22])])


# ---- the passes ----
def test_fields_built_byte_by_byte_become_one_shift():
    """ethertype (bytes 12-13) compares straight from header word 3 shifted, and the IPv4
    destination spanning words 7 and 8 is one funnel shift."""
    fn = to_wir(compile_source("""
import "std/headers.mbl";
block b {
    let eth = packet<ethernet_t>(0) else drop(runt);
    let ip = packet<ipv4_t>(14) else drop(short);
    if eth.ethertype != 0x0800 { drop(other); }
    meta.user = ip.dst;
    forward(0);
}""", "t.mbl"))
    text = str(fn)
    assert "pkt8" not in text
    assert re.search(r"= lshr %\d+, 0x10", text)
    assert re.search(r"fsh %\d+:%\d+ >> 16", text)
    assert fn.window_bytes == 40


def test_ethernet_rewrite_is_three_whole_word_writes_from_one_read():
    fn = to_wir(compile_source("""
import "std/headers.mbl";
struct nh_t { dmac: bit<48>; smac: bit<48>; port: bit<16>; mtu: bit<16>; }
array nh : nh_t [4] in sram;
block b {
    let eth = packet<ethernet_t>(0) else drop(runt);
    let e = nh[meta.in_port];
    eth.dst = e.dmac;
    eth.src = e.smac;
    forward(e.port);
}""", "t.mbl"))
    instrs = [i for b in fn.blocks for i in b.instrs]
    reads = [i for i in instrs if isinstance(i, wir.MemRead)]
    writes = [i for i in instrs if isinstance(i, wir.HdrWrite)]
    assert len(reads) == 1 and len(reads[0].dsts) == 4
    assert sorted(w.word for w in writes) == [0, 1, 2]
    assert all(w.src in reads[0].dsts for w in writes)


def test_every_pass_leaves_a_printable_function():
    seen = []
    run_passes(compile_source("""
import "std/headers.mbl";
block b { let eth = packet<ethernet_t>(0) else drop(runt); forward(eth.ethertype); }
""", "t.mbl"), None, 56, print_after=PASSES, trace=lambda name, text: seen.append((name, text)))
    assert [name for name, _ in seen[:4]] == ["prepare", "read", "legalize", "simplify"]
    assert seen[-1][0] == "window" and {name for name, _ in seen} == set(PASSES)
    assert "define" in seen[0][1] and "define" in seen[1][1]      # LLVM IR
    assert all(text.startswith("function b") for _, text in seen[2:])


def test_locations_point_into_the_source():
    fn = to_wir(compile_source("""import "std/headers.mbl";
block b {
    let eth = packet<ethernet_t>(0) else drop(runt);
    meta.user = eth.ethertype as bit<32> + 3;
    forward(0);
}""", "t.mbl"))
    user = next(i for b in fn.blocks for i in b.instrs
                if isinstance(i, wir.MetaWrite) and i.word == META_FIELDS["user"].word)
    assert (user.loc.file, user.loc.line) == ("t.mbl", 4)
    located = [i for b in fn.blocks for i in b.instrs if i.loc is not None]
    assert len(located) >= 0.9 * sum(len(b.instrs) for b in fn.blocks)


# ---- errors ----
def test_push_pull_is_a_compile_error_at_the_statement():
    source = """import "std/headers.mbl";
block b {
    let eth = packet<ethernet_t>(0) else drop(runt);
    packet.pull(14) else drop(runt);
    forward(0);
}"""
    with pytest.raises(CompileError) as e:
        to_wir(compile_source(source, "push.mbl"))
    text = str(e.value)
    assert "packet.push/pull is not supported by the ME backend yet" in text
    assert text.startswith("push.mbl:4:5:")
    assert e.value.kinds() == ["unsupported"]


def test_wide_multiplication_is_a_compile_error_at_the_expression():
    source = """array inp : bit<64> [2] in sram;
block b {
    inp[1] = inp[0] * inp[1];
    drop(done);
}"""
    with pytest.raises(CompileError) as e:
        to_wir(compile_source(source, "mul.mbl"))
    assert re.match(r"mul\.mbl:3:\d+: error: multiplication of 64-bit", str(e.value))


def test_entry_choice():
    two = compile_source("""
block one { drop(a); }
block two { drop(b); }""", "t.mbl")
    with pytest.raises(FrontError, match="block one, block two"):
        to_wir(two)
    with pytest.raises(FrontError, match="no pipeline or block named 'three'"):
        to_wir(two, "three")
    assert to_wir(two, "two").name == "two"
