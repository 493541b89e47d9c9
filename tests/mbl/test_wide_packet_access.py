"""The native target's wide packet accesses (lower(wide=True): fields read and written in
pieces of 2, 4 or 8 bytes with a byte swap, `csum` over 32-bit words) against references
written here: int.from_bytes / to_bytes and RFC 1071's 16-bit ones-complement sum, on
random bytes, every field width and byte position of the headers below, and checksums of
every header length from 1 to 23 bytes (odd lengths: the last byte is a word's high half)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.mbl import compile_source
from npkit.compiler.mbl.native import NativeProgram

# (name, bit width) in order: odd widths and positions (3, 5, 6, 7 bytes, a field that
# starts mid-byte), and whole-byte fields of 2, 4, 8 and 16 bytes
FIELDS = [("a", 8), ("b", 16), ("c", 24), ("d", 4), ("e", 12), ("f", 40), ("g", 48),
          ("h", 56), ("i", 64), ("j", 128), ("k", 32)]
HEADER_BYTES = sum(w for _, w in FIELDS) // 8
SIZES = range(1, 24)


def fields_program() -> str:
    header = " ".join(f"{n}: bit<{w}>;" for n, w in FIELDS)
    reads = "\n".join(f"    out[{2 * k}] = (h.{n} >> 32) as bit<32>; "
                      f"out[{2 * k + 1}] = h.{n} as bit<32>;" if w > 32 else
                      f"    out[{2 * k + 1}] = h.{n} as bit<32>;"
                      for k, (n, w) in enumerate(FIELDS) if w <= 64)
    sums = "\n".join(f"    let c{s} = packet<s{s}_t>(0) else drop(short{s});\n"
                     f"    out[{40 + s}] = csum(c{s}) as bit<32>;" for s in SIZES)
    sized = "\n".join(f"header s{s}_t {{ " + " ".join(f"x{i}: bit<8>;" for i in range(s))
                      + " }" for s in SIZES)
    return f"""
header h_t {{ {header} }}
{sized}
array out : bit<32> [64] in sram;
block b {{
    let h = packet<h_t>(0) else drop(runt);
{reads}
    out[30] = (h.j >> 96) as bit<32>; out[31] = (h.j >> 64) as bit<32>;
    out[32] = (h.j >> 32) as bit<32>; out[33] = h.j as bit<32>;
{sums}
    // rewrite: every whole-byte field gets its bytes reversed in value
    h.b = h.b + 1; h.c = ~h.c; h.f = h.f ^ 0x0102030405; h.g = h.g + 7;
    h.h = ~h.h; h.i = h.i + 0x100000001; h.j = ~h.j; h.k = h.k - 3;
    h.d = h.d + 1; h.e = h.e ^ 0xabc;
    forward(0);
}}
"""


def split(data: bytes) -> dict[str, int]:
    value = int.from_bytes(data[:HEADER_BYTES], "big")
    out, left = {}, HEADER_BYTES * 8
    for name, width in FIELDS:
        left -= width
        out[name] = (value >> left) & ((1 << width) - 1)
    return out


def join(values: dict[str, int]) -> bytes:
    total = 0
    for name, width in FIELDS:
        total = (total << width) | (values[name] & ((1 << width) - 1))
    return total.to_bytes(HEADER_BYTES, "big")


def rfc1071(data: bytes) -> int:
    """~(16-bit ones-complement sum), an odd last byte padded with a zero byte."""
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[k:k + 2], "big") for k in range(0, len(data), 2))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


_NATIVE: list[NativeProgram] = []


def native() -> NativeProgram:
    if not _NATIVE:
        _NATIVE.append(NativeProgram(compile_source(fields_program(), "wide.mbl"), "b"))
    return _NATIVE[0]


packet = st.one_of(st.binary(min_size=HEADER_BYTES, max_size=HEADER_BYTES + 8),
                   st.sampled_from([bytes(HEADER_BYTES), b"\xff" * HEADER_BYTES]))


@settings(max_examples=60, deadline=None)
@given(packet)
def test_fields_checksums_and_rewrites_match_the_references(data: bytes) -> None:
    p = native()
    (verdict,) = p.run([data])
    fields = split(data)
    for k, (name, width) in enumerate(FIELDS):
        if width > 64:
            continue
        got = p.read("out", 2 * k + 1) | (p.read("out", 2 * k) << 32 if width > 32 else 0)
        assert got == fields[name], name
    j = sum(p.read("out", 30 + w) << (32 * (3 - w)) for w in range(4))
    assert j == fields["j"]
    for s in SIZES:
        assert p.read("out", 40 + s) == rfc1071(data[:s]), s
    new = dict(fields)
    new["b"] += 1
    new["c"] = ~new["c"]
    new["f"] ^= 0x0102030405
    new["g"] += 7
    new["h"] = ~new["h"]
    new["i"] += 0x100000001
    new["j"] = ~new["j"]
    new["k"] -= 3
    new["d"] += 1
    new["e"] ^= 0xABC
    assert verdict.kind == "forward"
    assert verdict.data == join(new) + data[HEADER_BYTES:]
