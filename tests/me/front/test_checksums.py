"""The checksums pass (compiler/me/front/checksums.py, affine.py): `csum` and
`csum_update` as 32-bit end-around-carry sums folded once, the TTL decrement's RFC 1624
update folded to a constant.  References: scapy's RFC 1071 checksum, RFC 1624 in Python,
the native target (NativeProgram) and, for wir.OnesSum's instruction selection, the chip."""

from __future__ import annotations

import functools
import importlib.util
import sys

import pytest
from harness import REPO, compile_pair, load_router_tables
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, UDP, Ether, raw
from scapy.utils import checksum as rfc1071

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.interp import Machine, run


def rfc1624(hc: int, old: int, new: int) -> int:
    """HC' = ~(~HC + ~m + m') in 16-bit ones-complement arithmetic (RFC 1624 eqn. 3)."""
    total = (~hc & 0xFFFF) + (~old & 0xFFFF) + new
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ops(fn: wir.Function, kind: type) -> list[wir.Instr]:
    return [i for b in fn.blocks for i in b.instrs if isinstance(i, kind)]


def constants(fn: wir.Function) -> set[int]:
    return {u for b in fn.blocks for i in b.instrs for u in i.uses() if isinstance(u, int)}


# ---- csum: the checksum of a header at any offset, written back into the packet

def csum_source(offset: int, words: int) -> str:
    fields = "\n".join(f"    w{k}: bit<16>;" for k in range(words))
    return f"""
header h_t {{
{fields}
}}
block b {{
    let h = packet<h_t>({offset}) else drop(short);
    h.w0 = csum(h);
    forward(0);
}}"""


@functools.cache
def csum_pair(offset: int, words: int):
    return compile_pair(source=csum_source(offset, words), entry="b")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(0, 10), (14, 10), (13, 10), (2, 4), (6, 2), (1, 7)]),
       st.data())
def test_csum_is_rfc1071(shape, data):
    offset, words = shape
    pair = csum_pair(offset, words)
    assert ops(pair.fn, wir.OnesSum) or words <= 2 or offset % 2, "the pass did not fire"
    # all-zero, all-ones and random headers
    fill = data.draw(st.sampled_from(["zero", "ones", "random"]))
    size = offset + 2 * words + 4
    body = {"zero": bytes(size), "ones": b"\xff" * size}.get(fill) or \
        data.draw(st.binary(min_size=size, max_size=size))
    out = pair.check(body)
    header = bytearray(body[offset:offset + 2 * words])
    assert out.data[offset:offset + 2] == rfc1071(bytes(header)).to_bytes(2, "big")


# ---- csum_update with a TTL decrement: the constant ~m + m' = 0xFEFF

UPDATE = """
header h_t {{ ttl: bit<8>; protocol: bit<8>; checksum: bit<16>; }}
block b {{
    let h = packet<h_t>({offset}) else drop(short);
    {guard}
    let old: bit<16> = h.ttl as bit<16> << 8 | h.protocol as bit<16>;
    h.ttl -= 1;
    let new: bit<16> = h.ttl as bit<16> << 8 | h.protocol as bit<16>;
    h.checksum = csum_update(h.checksum, old, new);
    forward(0);
}}"""
GUARD = "if h.ttl <= 1 { drop(expired); }"


@functools.cache
def update_pair(offset: int, guarded: bool):
    return compile_pair(source=UPDATE.format(offset=offset, guard=GUARD if guarded else ""),
                        entry="b")


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([0, 1, 2, 3, 14]), st.booleans(), st.integers(0, 255),
       st.integers(0, 255), st.sampled_from([0, 0xFFFF, 0xFEFF, 0x0100, 0x00FF, None]),
       st.integers(0, 0xFFFF))
def test_ttl_update_matches_rfc1624_and_native(offset, guarded, ttl, proto, corner, other):
    pair = update_pair(offset, guarded)
    if guarded and offset != 3:                   # 3: the word spans two header words
        assert 0xFEFF in constants(pair.fn), "the update was not folded to a constant"
    hc = other if corner is None else corner
    frame = bytes(offset) + bytes([ttl, proto]) + hc.to_bytes(2, "big") + bytes(6)
    out = pair.check(frame)
    if guarded and ttl <= 1:
        return
    new_ttl = (ttl - 1) & 0xFF
    want = rfc1624(hc, ttl << 8 | proto, new_ttl << 8 | proto)
    assert out.data[offset:offset + 4] == bytes([new_ttl, proto]) + want.to_bytes(2, "big")


# ---- the router block: every TTL, protocol and checksum corner, forwarded

def ipv4_frame(ttl: int, proto: int, checksum: int) -> bytes:
    """An IPv4 frame whose header checksum field holds `checksum` and is still correct
    (the identification field absorbs the difference)."""
    ip = IP(src="198.18.0.1", dst="10.1.2.3", ttl=ttl, proto=proto, id=0, chksum=checksum)
    frame = bytearray(raw(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01") / ip
                          / UDP(sport=1, dport=2) / (b"p" * 18)))
    frame[14 + 10:14 + 12] = checksum.to_bytes(2, "big")
    frame[14 + 4:14 + 6] = bytes(2)
    ident = rfc1071(bytes(frame[14:34]))          # makes the ones-complement sum 0xFFFF
    frame[14 + 4:14 + 6] = ident.to_bytes(2, "big")
    assert rfc1071(bytes(frame[14:34])) == 0
    return bytes(frame)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 255), st.sampled_from([6, 17, 1, 0, 255]),
       st.one_of(st.sampled_from([0, 0xFFFF, 0xFEFF, 0x0100, 0xFF00]), st.integers(0, 0xFFFF)),
       st.sampled_from([0, 0, 0, 0xFFFF, 1, 0x8000]))
def test_ipv4_fwd_rewrite_matches_native(ipv4_pair, ttl, proto, checksum, corrupt):
    """`corrupt` flips identification bits: a wrong checksum, except that 0x0000 and
    0xFFFF are the same ones-complement number (the check must still pass then)."""
    frame = bytearray(ipv4_frame(ttl, proto, checksum))
    frame[18] ^= corrupt >> 8
    frame[19] ^= corrupt & 0xFF
    out = ipv4_pair.check(bytes(frame), 0)
    if out.kind == 1:
        header = out.data[14:34]
        assert header[8] == ttl - 1 and rfc1071(header) == 0
    if corrupt and frame[18:20] not in (b"\0\0", b"\xff\xff") and ttl > 1:
        assert out.kind != 1, "a bad checksum was forwarded"


# ---- any field decremented below a guard: one subtraction from its word

FIELD = """
header h_t {{ a: bit<{wa}>; f: bit<{wf}>; b: bit<{wb}>; }}
block b {{
    let h = packet<h_t>({offset}) else drop(short);
    if h.f < {k} {{ drop(small); }}
    h.f -= {k};
    forward(0);
}}"""
FIELDS = [(8, 8, 16), (16, 8, 8), (4, 12, 16), (0, 16, 16), (20, 4, 8), (8, 16, 8)]


@functools.cache
def field_pair(shape: tuple[int, int, int], k: int, offset: int):
    wa, wf, wb = shape
    text = FIELD.format(wa=wa, wf=wf, wb=wb, k=k, offset=offset)
    if not wa:
        text = text.replace("a: bit<0>; ", "")
    return compile_pair(source=text, entry="b")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FIELDS), st.sampled_from([1, 3]), st.sampled_from([0, 4]),
       st.binary(min_size=8, max_size=8))
def test_guarded_field_decrement(shape, k, offset, data):
    pair = field_pair(shape, k, offset)
    wa, wf, wb = shape
    if wa % 8 == 0 and wf == 8:         # a byte (a wider field is stored byte by byte:
        # a borrow between its bytes is not recognised)
        assert (-(k << wb)) & 0xFFFFFFFF in constants(pair.fn), "not one subtraction"
    pair.check(data)


def test_ipv4_fwd_checksums_are_combined(ipv4_pair):
    fn = ipv4_pair.fn
    (check,) = ops(fn, wir.OnesSum)                   # the header check: four words
    assert len(check.srcs) == 5                       # + bytes 14, 15 : 32, 33 as one
    assert 0xFEFF in constants(fn)                    # the update
    assert 0xFFFFFF00 in constants(fn)                # ttl -= 1 as one subtraction


# ---- wir.OnesSum on the chip (its instruction selection)

@functools.cache
def _back_harness():
    """tests/me/back/harness.py (the chip harness of the back end's tests)."""
    path = REPO / "tests/me/back/harness.py"
    spec = importlib.util.spec_from_file_location("me_back_harness", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module             # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def ones_sum(values: list[int]) -> int:
    total = sum(values)
    while total >> 32:
        total = (total & 0xFFFFFFFF) + (total >> 32)
    return total


@settings(max_examples=12, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([0, 1, 0xFFFFFFFF, 0x80000000, 63, 64]),
                          st.integers(0, 0xFFFFFFFF)), min_size=2, max_size=6),
       st.lists(st.booleans(), min_size=6, max_size=6))
def test_onessum_on_chip_and_interpreter(values, as_const):
    chip = _back_harness()
    srcs: list[wir.Operand] = []
    instrs: list[wir.Instr] = []
    for k, v in enumerate(values):
        if as_const[k]:
            srcs.append(v)
        else:
            r = wir.Reg(k)
            instrs.append(wir.MemRead((r,), wir.SRAM, 4 * k))
            srcs.append(r)
    dst = wir.Reg(50)
    instrs += [wir.OnesSum(dst, tuple(srcs)), wir.MetaWrite(5, dst), wir.Ret()]
    fn = wir.Function("t", [wir.Block("entry", instrs)], 8, 60)
    want = ones_sum(values)
    sram = {4 * k: v for k, v in enumerate(values)}
    m = run(fn, Machine(bytearray(8), memory={wir.SRAM: dict(sram)}))
    assert m.meta[5] == want
    body = compile_body(fn)
    result = chip.run(chip.build(body.uc, 8), 8, [chip.Context(bytes(8))],
                      sram={4 * k: v for k, v in enumerate(values)})
    result.check_clean()
    assert result.metas[0][5] == want


# ---- fixtures

@pytest.fixture(scope="module")
def ipv4_pair():
    pair = compile_pair(REPO / "microblocks/ipv4_fwd.mbl", "ipv4_fwd")
    load_router_tables(pair.native)
    return pair
