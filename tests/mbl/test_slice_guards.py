"""The prefetch slice's rule (compiler/mbl/slice_guards.py): a check whose failing side
prefetches nothing is taken as passed, except in loops and on values the walk read (marked
with KEEP_MARK); the results stay those of the blocks alone."""

from __future__ import annotations

import random

import llvmlite.binding as llvm
import numpy as np

from npkit.compiler.mbl import compile_source
from npkit.compiler.mbl.native import NativeProgram, prefetch_slice
from npkit.compiler.mbl.passes import optimize
from npkit.compiler.mbl.slice_guards import KEEP_MARK, drop_prefetch_guards

HEAD = f"""declare void @llvm.prefetch.p0(ptr, i32, i32, i32)
declare i32 @"s.{KEEP_MARK}i32"(i32)

define void @slice(ptr %ctx, i32 %x, i32 %n) {{
entry:
"""


def module(body: str) -> str:
    return HEAD + body + "}\n"


PREFETCH = "  call void @llvm.prefetch.p0(ptr %ctx, i32 0, i32 3, i32 1)\n"


def branches(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("br i1")]


def test_a_check_that_only_skips_the_prefetch_is_taken_as_passed() -> None:
    text = module("  %bad = icmp eq i32 %x, 7\n  br i1 %bad, label %drop, label %walk\n"
                  "drop:\n  ret void\nwalk:\n" + PREFETCH + "  ret void\n")
    out, dropped = drop_prefetch_guards(text, "slice")
    assert dropped == 1
    assert branches(out) == ["br i1 false, label %drop, label %walk"]
    llvm.parse_assembly(out).verify()


def test_a_branch_on_a_kept_value_stays() -> None:
    text = module(f'  %w = call i32 @"s.{KEEP_MARK}i32"(i32 %x)\n'
                  "  %leaf = icmp eq i32 %w, 0\n  br i1 %leaf, label %done, label %more\n"
                  "done:\n  ret void\nmore:\n" + PREFETCH + "  ret void\n")
    out, dropped = drop_prefetch_guards(text, "slice")
    assert dropped == 0
    assert branches(out) == ["br i1 %leaf, label %done, label %more"]
    # the mark is an identity now, inlined by the next optimization
    assert f'define internal i32 @"s.{KEEP_MARK}i32"(i32 %v) alwaysinline' in out
    assert KEEP_MARK not in str(optimize(out))


def test_a_phi_merging_a_kept_branch_is_kept() -> None:
    text = module(f'  %w = call i32 @"s.{KEEP_MARK}i32"(i32 %x)\n'
                  "  %leaf = icmp eq i32 %w, 0\n  br i1 %leaf, label %a, label %b\n"
                  "a:\n  br label %join\nb:\n  br label %join\n"
                  "join:\n  %found = phi i1 [ true, %a ], [ false, %b ]\n"
                  "  br i1 %found, label %more, label %done\n"
                  "done:\n  ret void\nmore:\n" + PREFETCH + "  ret void\n")
    assert drop_prefetch_guards(text, "slice")[1] == 0


def test_a_loop_exit_stays() -> None:
    text = module("  br label %head\n"
                  "head:\n  %i = phi i32 [ 0, %entry ], [ %j, %head ]\n"
                  "  %j = add i32 %i, 1\n  %again = icmp ult i32 %j, %n\n"
                  "  br i1 %again, label %head, label %out\n"
                  "out:\n  %bad = icmp eq i32 %j, %x\n  br i1 %bad, label %drop, label %walk\n"
                  "drop:\n  ret void\nwalk:\n" + PREFETCH + "  ret void\n")
    out, dropped = drop_prefetch_guards(text, "slice")
    assert dropped == 1  # the check after the loop, not the loop's own exit
    assert branches(out) == ["br i1 %again, label %head, label %out",
                             "br i1 false, label %drop, label %walk"]


def test_a_branch_with_prefetches_on_both_sides_stays() -> None:
    text = module("  %v6 = icmp eq i32 %x, 34525\n  br i1 %v6, label %a, label %b\n"
                  "a:\n" + PREFETCH + "  ret void\nb:\n" + PREFETCH + "  ret void\n")
    assert drop_prefetch_guards(text, "slice")[1] == 0


def test_a_switch_with_one_way_on_is_fixed_and_a_dispatch_stays() -> None:
    text = module("  switch i8 %t, label %walk [\n    i8 0, label %drop\n"
                  "    i8 127, label %drop\n  ]\n"
                  "walk:\n  switch i16 %e, label %drop [\n    i16 2048, label %v4\n"
                  "    i16 -31011, label %v6\n  ]\n"
                  "v4:\n" + PREFETCH + "  ret void\nv6:\n" + PREFETCH + "  ret void\n"
                  "drop:\n  ret void\n").replace(
        "entry:\n", "entry:\n  %t = trunc i32 %x to i8\n  %e = trunc i32 %n to i16\n")
    out, dropped = drop_prefetch_guards(text, "slice")
    assert dropped == 1
    assert "  switch i8 1, label %walk [" in out  # no case's value: the default
    assert "  switch i16 %e, label %drop [" in out  # two walks: unchanged
    llvm.parse_assembly(out).verify()


CHECKED_WALK = """
header h_t { a: bit<16>; b: bit<16>; c: bit<16>; key: bit<16>; }
array big : bit<32> [1048576] in sram;
block b {
    let h = packet<h_t>(0) else drop(runt);
    if csum(h) != 0 { drop(bad_checksum); }
    if h.a == 7 { drop(seven); }
    let first = big[h.key as bit<32>];
    let second = big[first & 0xfffff];
    forward(second[1:0]);
}
"""


def fold(total: int) -> int:
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def reference(words: list[int], big: np.ndarray) -> tuple[str, int]:
    """CHECKED_WALK's verdict, written out: (drop reason or "forward", port)."""
    if fold(sum(words)) != 0xFFFF:
        return "bad_checksum", 0
    if words[0] == 7:
        return "seven", 0
    first = int(big[words[3]])
    return "forward", int(big[first & 0xFFFFF]) & 3


def test_the_checks_leave_the_slice_and_the_verdicts_stay() -> None:
    program = compile_source(CHECKED_WALK, "walk.mbl")
    text = str(optimize(str(prefetch_slice(program, "b"))))
    assert "icmp eq i16" not in text and "icmp ne i16" not in text  # checksum, `a == 7`
    native = NativeProgram(program, "b")
    big = (np.arange(1 << 20, dtype=np.uint32) * 7919 + 3) & 0xFFFFF
    native.region("big")[:] = big
    rng = random.Random(5)
    packets, expected = [], []
    for k in range(300):  # longer than the pipeline's depth
        words = [7 if k % 5 == 0 else rng.getrandbits(16), k, 0, rng.getrandbits(16)]
        words[2] = 0xFFFF - fold(sum(words))
        if k % 3 == 0:  # every third a bad checksum
            words[2] ^= 0x0100
        packets.append(b"".join(w.to_bytes(2, "big") for w in words))
        expected.append(reference(words, big))
    got = [(v.reason or v.kind, v.port) for v in native.run(packets)]
    assert got == expected
    assert {"forward", "seven", "bad_checksum"} <= {kind for kind, _ in got}


def test_the_rewritten_slice_verifies() -> None:
    prefetch_slice(compile_source(CHECKED_WALK, "walk.mbl"), "b").verify()
