"""Generators for the fuzz stage (issue 20): MBL programs, microcode programs and images,
malformed frames.  Hypothesis strategies, shared by tests/hardening/test_fuzz_stage.py (the
bounded CI stage) and scripts/fuzz (the longer campaign).

* ``mbl_programs()``: programs built from the grammar of docs/language.md (declarations,
  helpers, a block of checked packet views, arithmetic, loops, table lookups, memories,
  push/pull, verdicts) -- mostly valid, so they reach the LLVM lowering, the native JIT and
  the ME back end -- then sometimes mutated (tests/mbl/test_fuzz.py's seeds and edits) so
  the error paths are reached too.
* ``uc_programs()`` / ``uc_images()``: tests/uc/test_uc_roundtrip.py's generators (one
  template per mnemonic of the ISA table; legal words), mutated and bit-flipped.
* ``malformed_frames(seed, count)``: frames cut, bit-flipped, with wrong lengths, options,
  odd EtherTypes and sizes from 0 to 65,535 bytes, from valid IPv4 / IPv6 / ARP frames.
"""

from __future__ import annotations

import importlib.util
import random
import struct
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parents[1]


def _module(path: Path, name: str) -> ModuleType:
    """A sibling test folder's module (they are not packages) under a private name."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_MBL_FUZZ = _module(TESTS / "mbl" / "test_fuzz.py", "_npkit_fuzz_mbl_seeds")
_UC_ROUNDTRIP = _module(TESTS / "uc" / "test_uc_roundtrip.py", "_npkit_fuzz_uc_gen")

# --------------------------------------------------------------------------- MBL
WIDTHS = (1, 4, 8, 12, 16, 24, 32)
LITERALS = ("0", "1", "2", "7", "255", "0xff", "0xffff", "0x8000", "60", "1500", "0b101",
            "65535", "4096", "0xffffffff", "31", "16", "14")
VERDICT_REASONS = ("runt", "bad", "no_route", "martian", "short", "odd")


@st.composite
def _expr(draw: st.DrawFn, names: list[str], depth: int = 0) -> str:
    """A bit<16> expression (casts make every operand bit<16>)."""
    atoms = [*names, "meta.in_port", "meta.len", "(eth.ethertype)", "(ip.ttl as bit<16>)",
             "(ip.total_len)", "(ip.protocol as bit<16>)", "(ip.dst[15:0])",
             "(meta.flow_id[15:0])", "(reg[1] as bit<16>)", "(cnt[2][15:0])"]
    if depth > 2 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return draw(st.sampled_from(atoms))
        return f"({draw(st.sampled_from(LITERALS))} as bit<16>)" if draw(st.booleans()) \
            else str(draw(st.integers(0, 0xFFFF)))
    kind = draw(st.integers(0, 6))
    a = draw(_expr(names, depth + 1))
    b = draw(_expr(names, depth + 1))
    if kind == 0:
        return f"({a} {draw(st.sampled_from(['+', '-', '&', '|', '^', '*']))} {b})"
    if kind == 1:
        return f"({a} {draw(st.sampled_from(['<<', '>>']))} {draw(st.integers(0, 17))})"
    if kind == 2:
        return f"(~{a})"
    if kind == 3:
        return f"helper({a})"
    if kind == 4:
        return f"(({a} as bit<32>) + {draw(st.sampled_from(LITERALS))})[15:0]"
    if kind == 5:
        return f"(crc32({a} as bit<16>, {b} as bit<16>)[15:0])"
    return f"(hash64((({a}) as bit<16> as bit<64>) << 8)[15:0])"


@st.composite
def _cond(draw: st.DrawFn, names: list[str]) -> str:
    a, b = draw(_expr(names)), draw(_expr(names))
    op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
    c = f"{a} {op} {b}"
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return f"!({c})"
    if kind == 1:
        return f"{c} && {draw(_expr(names))} != 0"
    if kind == 2:
        return f"{c} || fib_has(ip.dst)"
    return c


@st.composite
def _statements(draw: st.DrawFn, names: list[str], depth: int = 0,
                in_loop: bool = False) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(0, 5 if depth == 0 else 3))):
        kind = draw(st.integers(0, 13))
        if kind == 0:
            name = f"v{len(names)}_{depth}"
            out.append(f"var {name}: bit<16> = {draw(_expr(names))};")
            names = [*names, name]
        elif kind == 1 and any(n.startswith("v") for n in names):
            target = draw(st.sampled_from([n for n in names if n.startswith("v")]))
            out.append(f"{target} {draw(st.sampled_from(['=', '+=', '^=', '&=', '|=']))} "
                       f"{draw(_expr(names))};")
        elif kind == 2 and depth < 2:
            then = draw(_statements(names, depth + 1, in_loop))
            other = draw(_statements(names, depth + 1, in_loop)) if draw(st.booleans()) else None
            text = f"if {draw(_cond(names))} {{ {' '.join(then)} }}"
            if other is not None:
                text += f" else {{ {' '.join(other)} }}"
            out.append(text)
        elif kind == 3 and depth < 2:
            body = draw(_statements(names, depth + 1, True))
            hi = draw(st.sampled_from([0, 1, 3, 8, 64]))
            out.append(f"for i{depth} in 0..{hi} {{ {' '.join(body)} }}")
        elif kind == 4:
            out.append(f"cnt.count({draw(_expr(names))});")
        elif kind == 5:
            out.append(f"reg.add({draw(st.integers(0, 3))}, {draw(_expr(names))} as bit<32>);")
        elif kind == 6:
            out.append(f"ip.ttl -= 1; ip.checksum = csum_update(ip.checksum, 0, "
                       f"{draw(_expr(names))});")
        elif kind == 7:
            out.append(f"meta.flow_id = {draw(_expr(names))} as bit<32>;")
        elif kind == 8 and not in_loop:
            reason = draw(st.sampled_from(VERDICT_REASONS))
            out.append(f"if {draw(_cond(names))} {{ drop({reason}); }}")
        elif kind == 9 and not in_loop:
            out.append(f"if {draw(_cond(names))} {{ exception({draw(st.integers(0, 300))}); }}")
        elif kind == 10:
            out.append(f"arr[{draw(_expr(names))}] = {draw(_expr(names))} as bit<32>;")
        elif kind == 11:
            out.append(f"eth.src = eth.src ^ ({draw(_expr(names))} as bit<48>);")
        elif kind == 12 and not in_loop:
            out.append(f"if {draw(_cond(names))} {{ forward({draw(_expr(names))}); }}")
        elif kind == 13 and not in_loop:
            n = draw(st.sampled_from(["2", "4", "0", "14", "60", "0xffffffff", "65536",
                                      "(ip.ihl as bit<32>) * 4"]))
            op = draw(st.sampled_from(["pull", "push"]))
            out.append(f"if {draw(_cond(names))} {{ packet.{op}({n}) else drop(short); "
                       f"let e2 = packet<ethernet_t>(0) else drop(runt2); "
                       f"forward(e2.ethertype); }}")
    return out


@st.composite
def valid_mbl(draw: st.DrawFn) -> str:
    """A program in the language's grammar: most check cleanly."""
    size = draw(st.sampled_from([16, 64, 256]))
    helper = draw(st.sampled_from([
        "fn helper(x: bit<16>) -> bit<16> { return x ^ 0x5a5a; }",
        "fn helper(x: bit<16>) -> bit<16> { var t: bit<16> = x; for k in 0..4 { t += k[15:0]; }"
        " return t; }",
        "fn helper(x: bit<16>) -> bit<16> { if x > 100 { return x - 100; } return x + 1; }",
    ]))
    header = (
        'import "std/headers.mbl";\n'
        f"table fib : lpm(bit<32>) -> bit<16> [{size}] in sram;\n"
        "table macs : hash(bit<48>) -> bit<16> [16] in sram;\n"
        f"counter cnt [{size}] in scratch;\n"
        "register reg : bit<32> [4] in local;\n"
        "array arr : bit<32> [8] in sram;\n"
        f"{helper}\n"
        "fn fib_has(a: bit<32>) -> bool { return fib.contains(a); }\n")
    body = draw(_statements(["x"]))
    tail = draw(st.sampled_from([
        "let port = fib.lookup(ip.dst) else drop(no_route); forward(port);",
        "let port = macs.lookup(eth.dst) else forward(x); forward(port, 1);",
        "forward(x);", "drop(end);", "exception(7);"]))
    block = ("block b {\n"
             "  let eth = packet<ethernet_t>(0) else drop(runt);\n"
             "  let ip = packet<ipv4_t>(14) else drop(runt);\n"
             f"  var x: bit<16> = {draw(_expr([]))};\n"
             + "".join(f"  {s}\n" for s in body) + f"  {tail}\n}}\n")
    return header + block


@st.composite
def mbl_programs(draw: st.DrawFn) -> str:
    """Grammar programs (70 %), some edited, and tests/mbl's mutated seeds (30 %)."""
    if draw(st.integers(0, 9)) < 3:
        return draw(_MBL_FUZZ.mutated())
    text = draw(valid_mbl())
    if draw(st.integers(0, 4)) == 0:  # one edit: the error paths of a near-valid program
        i = draw(st.integers(0, len(text) - 1))
        j = min(len(text), i + draw(st.integers(0, 8)))
        piece = draw(st.sampled_from(_MBL_FUZZ.TOKENS))
        text = text[:i] + draw(st.sampled_from(["", f" {piece} ", text[i:j]])) + text[j:]
    return text


# --------------------------------------------------------------------------- microcode
@st.composite
def uc_programs(draw: st.DrawFn) -> str:
    """tests/uc's template programs (one template per mnemonic), sometimes edited."""
    text = draw(_UC_ROUNDTRIP.programs())
    if draw(st.integers(0, 3)) == 0:
        i = draw(st.integers(0, len(text) - 1))
        j = min(len(text), i + draw(st.integers(0, 10)))
        piece = draw(st.sampled_from(_UC_PIECES))
        text = text[:i] + piece + text[j:]
    return text


_UC_PIECES = ["[", "]", ",", "#", ".reg", "--", "0x", "99999999999999999999", "(" * 50,
              "br[", "defer[3]", "ctx_swap[", "\n", "a99", "$$40", "*l$index2", ".me 40\n"]


@st.composite
def uc_images(draw: st.DrawFn) -> dict:
    """A legal image (tests/uc's generator), then 0..3 bit flips of its words: the loader
    and the core must reject or run it, never crash."""
    image = draw(_UC_ROUNDTRIP.images())
    words = list(image.words)
    for _ in range(draw(st.integers(0, 3)) if words else 0):
        k = draw(st.integers(0, len(words) - 1))
        words[k] ^= 1 << draw(st.integers(0, 39))
    return {"words": words, "ctx_mode": image.ctx_mode, "mes": list(image.mes)}


# --------------------------------------------------------------------------- frames
MAC_DST = bytes.fromhex("0200000000fe")
MAC_SRC = bytes.fromhex("020000000001")


def _ipv4(rng: random.Random) -> bytes:
    payload = rng.randbytes(rng.choice([0, 8, 26, 100, 1400, rng.randrange(2000)]))
    ihl = 5 if rng.random() < 0.8 else rng.randrange(16)
    options = rng.randbytes(max(0, ihl - 5) * 4)
    total = 20 + len(options) + len(payload)
    if rng.random() < 0.2:
        total = rng.randrange(0x10000)
    ttl = rng.choice([0, 1, 2, 64, 255])
    dst = rng.choice([0x0A010203, 0x0A000001, 0xC0000209, 0x7F000001, 0xFFFFFFFF,
                      rng.getrandbits(32)])
    head = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl if rng.random() < 0.9 else
                       rng.getrandbits(8), 0, total & 0xFFFF, rng.getrandbits(16), 0, ttl,
                       rng.choice([1, 6, 17, 47]), 0, rng.getrandbits(32).to_bytes(4, "big"),
                       dst.to_bytes(4, "big")) + options
    if rng.random() < 0.8:  # a right checksum most of the time, so the path goes deeper
        total_sum = sum(struct.unpack(f"!{len(head) // 2}H", head[:len(head) // 2 * 2]))
        while total_sum >> 16:
            total_sum = (total_sum & 0xFFFF) + (total_sum >> 16)
        head = head[:10] + struct.pack("!H", ~total_sum & 0xFFFF) + head[12:]
    return MAC_DST + MAC_SRC + b"\x08\x00" + head + payload


def _ipv6(rng: random.Random) -> bytes:
    payload = rng.randbytes(rng.choice([0, 8, 40, 1200, rng.randrange(1500)]))
    plen = len(payload) if rng.random() < 0.8 else rng.randrange(0x10000)
    dst = rng.choice([0x20010DB8 << 96 | 1, 0x20010DB8_00010000 << 64 | 5, 1,
                      0xFE80 << 112 | 1, rng.getrandbits(128)])
    head = struct.pack("!IHBB16s16s", 0x60000000, plen, rng.choice([17, 58, 0, 43, 59]),
                       rng.choice([0, 1, 2, 64, 255]), rng.getrandbits(128).to_bytes(16, "big"),
                       dst.to_bytes(16, "big"))
    return MAC_DST + MAC_SRC + b"\x86\xdd" + head + payload


def malformed_frame(rng: random.Random) -> bytes:
    """One frame: valid-looking IPv4 / IPv6 / other, then cut, padded or bit-flipped."""
    kind = rng.random()
    if kind < 0.45:
        frame = _ipv4(rng)
    elif kind < 0.8:
        frame = _ipv6(rng)
    elif kind < 0.9:
        frame = MAC_DST + MAC_SRC + rng.randbytes(2) + rng.randbytes(rng.randrange(60))
    else:
        frame = rng.randbytes(rng.randrange(1, 80))
    edit = rng.random()
    if edit < 0.25:
        frame = frame[:rng.randrange(1, len(frame) + 1)]
    elif edit < 0.5:
        for _ in range(rng.randrange(1, 4)):
            k = rng.randrange(len(frame))
            frame = frame[:k] + bytes([frame[k] ^ 1 << rng.randrange(8)]) + frame[k + 1:]
    elif edit < 0.52:
        frame = frame + bytes(rng.choice([9000, 65535]) - len(frame))
    if rng.random() < 0.0005:
        frame = rng.randbytes(65535)  # the largest frame a pcap holds, among small ones
    return frame[:65535] or b"\x00"


def malformed_frames(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [malformed_frame(rng) for _ in range(count)]
