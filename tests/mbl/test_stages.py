"""The depth analysis and rewrite of the depth-staged slices (npkit.compiler.mbl.stages),
on hand-written LLVM text whose read depths are known by construction."""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from npkit.compiler.mbl.stages import COLD_READ, read_depths, stage_text

# r1 reads at an address from the argument (depth 1); r2's address comes from r1 (2); in
# `leaf` r3 depends on r2 (3) and r4 on r1 only, through arithmetic (2); the phi merges a
# depth-3 and a depth-2 value (3), and r5 reads at it (4); r6 depends on no read (1).
WALK = f"""
declare i32 @"{COLD_READ}"(ptr)

define i32 @walk(ptr %base, i32 %key) {{
entry:
  %i1 = lshr i32 %key, 14
  %p1 = getelementptr i32, ptr %base, i32 %i1
  %r1 = call i32 @"{COLD_READ}"(ptr %p1)
  %p2 = getelementptr i32, ptr %base, i32 %r1
  %r2 = call i32 @"{COLD_READ}"(ptr %p2)
  %c = icmp slt i32 %r2, 0
  br i1 %c, label %leaf, label %child
leaf:
  %p3 = getelementptr i32, ptr %base, i32 %r2
  %r3 = call i32 @"{COLD_READ}"(ptr %p3)
  %a = add i32 %r1, 4
  %p4 = getelementptr i32, ptr %base, i32 %a
  %r4 = call i32 @"{COLD_READ}"(ptr %p4)
  %s = add i32 %r3, %r4
  br label %join
child:
  %k = and i32 %key, 63
  br label %join
join:
  %w = phi i32 [ %s, %leaf ], [ %k, %child ]
  %p5 = getelementptr i32, ptr %base, i32 %w
  %r5 = call i32 @"{COLD_READ}"(ptr %p5)
  %p6 = getelementptr i32, ptr %base, i32 7
  %r6 = call i32 @"{COLD_READ}"(ptr %p6)
  %out = add i32 %r5, %r6
  ret i32 %out
}}
"""
EXPECTED = {"r1": 1, "r2": 2, "r3": 3, "r4": 2, "r5": 4, "r6": 1}


def test_read_depths_follow_the_data_dependences():
    lines = WALK.split("\n")
    depths = {re.search(r"%(r\d)", lines[i]).group(1): d
              for i, d in read_depths(WALK, "walk").items()}
    assert depths == EXPECTED


def test_a_stage_loads_prefetches_and_zeroes_by_depth():
    for stage in range(5):
        text = stage_text(WALK, "walk", stage)
        llvm.parse_assembly(text).verify()  # still valid LLVM
        for name, depth in EXPECTED.items():
            line = next(x for x in text.split("\n") if x.strip().startswith(f"%{name} ="))
            kind = "load" if depth <= stage else "prefetch" if depth == stage + 1 else "zero"
            assert f'@"mbl.cold.{kind}"(' in line, (stage, name, line)
