"""The depth analysis and rewrite of the depth-staged slices (npkit.compiler.mbl.stages),
on hand-written LLVM text whose read depths are known by construction."""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from npkit.compiler.mbl.stages import COLD_READ, flatten, read_depths, stage_text

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


# --- flatten: a stage as branch-free code -----------------------------------------------
#
# A two-level walk over a table `t` of 64 words, written with branches as a stage is after
# its rewrite (loads, a prefetch, phis): word w = t[k & 63]; a negative w is a pointer:
# n = t[w & 63], and if n is odd the answer is t[(n + k) & 63] (a prefetch of it first),
# else n; a non-negative w is the answer.  The flattened function must give the answers
# of this definition, computed here in Python, for every key and table below.
BRANCHY = """
declare void @llvm.prefetch.p0(ptr, i32, i32, i32)

define i32 @walk(ptr %t, i32 %k) {
entry:
  %i = and i32 %k, 63
  %p = getelementptr inbounds i32, ptr %t, i32 %i
  %w = load i32, ptr %p, align 4
  %leaf = icmp sge i32 %w, 0
  br i1 %leaf, label %done, label %node
node:
  %j = and i32 %w, 63
  %q = getelementptr inbounds i32, ptr %t, i32 %j
  %n = load i32, ptr %q, align 4
  %odd = trunc nuw i32 %n to i1
  br i1 %odd, label %deep, label %done
deep:
  %s = add nsw i32 %n, %k
  %m = and i32 %s, 63
  %r = getelementptr inbounds i32, ptr %t, i32 %m
  call void @llvm.prefetch.p0(ptr %r, i32 0, i32 3, i32 1)
  %v = load i32, ptr %r, align 4
  ret i32 %v
done:
  %out = phi i32 [ %w, %entry ], [ %n, %node ]
  ret i32 %out
}
"""


def _reference_walk(t: list[int], k: int) -> int:
    w = t[k & 63]
    if w >= 0:
        return w
    n = t[w & 63]
    return t[(n + k) & 63] if n & 1 else n


def _jit_walk(text: str):
    import ctypes

    from npkit.compiler.mbl.native import host_target_machine

    module = llvm.parse_assembly(text)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, host_target_machine())
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32)(
        engine.get_function_address("walk"))
    return engine, fn


def test_flatten_leaves_one_block_with_the_same_answers():
    import ctypes
    import random

    flat = flatten(BRANCHY, "walk")
    assert flat is not None
    body = flat.split("define i32 @walk", 1)[1].split("\n}", 1)[0]
    assert "br " not in body and "phi " not in body and body.count("ret ") == 1
    assert "prefetch" in body
    engine, walk = _jit_walk(flat)
    rng = random.Random(19)
    for _ in range(40):  # tables whose words are leaves, pointers, odd and even
        t = [rng.choice([rng.randrange(0, 1 << 20), -rng.randrange(1, 1 << 20)])
             for _ in range(64)]
        table = (ctypes.c_int32 * 64)(*t)
        for k in range(256):
            assert walk(ctypes.addressof(table), k) == _reference_walk(t, k), (t, k)
    del engine


def test_flatten_drops_what_makes_poison_on_a_path_not_taken():
    flat = flatten(BRANCHY, "walk")
    assert flat is not None
    body = flat.split("define i32 @walk", 1)[1]
    for flag in (" nsw ", " nuw ", " inbounds "):
        assert flag not in body


def test_flatten_refuses_what_may_not_run_speculatively():
    store = BRANCHY.replace("  ret i32 %v\n", "  store i32 0, ptr %t, align 4\n  ret i32 %v\n")
    divide = BRANCHY.replace("%s = add nsw i32 %n, %k", "%s = udiv i32 %k, %n")
    loop = BRANCHY.replace("br i1 %odd, label %deep, label %done",
                           "br i1 %odd, label %node, label %done")
    clear = "  call void @llvm.memset.p0.i64(ptr %t, i8 0, i64 4, i1 false)\n"
    memset = BRANCHY.replace("  ret i32 %v\n", clear + "  ret i32 %v\n") + \
        "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n"
    for text in (store, divide, loop, memset):
        llvm.parse_assembly(text).verify()
        assert flatten(text, "walk") is None
    straight = "define i32 @walk(ptr %t, i32 %k) {\nentry:\n  ret i32 %k\n}\n"
    assert flatten(straight, "walk") is None  # nothing to flatten


def test_poptrie_stages_have_no_branch_when_flat():
    """The IPv4 Poptrie walker's stages: each one block (no branch on a loaded word) when
    flat, branching as the walker does when not; their answers are tested against a
    brute-force LPM in tests/mbl/test_key_function.py (drivers "staged", "staged-branching")."""
    from pathlib import Path

    from npkit.compiler.mbl import compile_file
    from npkit.compiler.mbl.native import _stages_of

    probe = Path(__file__).resolve().parents[1] / "runtime" / "programs" / \
        "lpm_poptrie_probe.mbl"
    program = compile_file(probe)
    branches = {}
    for flat in (True, False):
        text = str(_stages_of(program, "mbl.fn.fib4_lookup", None, 3, flat))
        bodies = dict(re.findall(r"^define [^@]*@([\w.]+)\((.*?)^}", text, re.M | re.S))
        assert sorted(bodies) == [f"mbl.stage{k}.mbl.fn.fib4_lookup" for k in range(3)]
        branches[flat] = sum(b.count("br i1") for b in bodies.values())
        assert text.count("@llvm.prefetch.p0(ptr") >= 3
    assert branches[True] == 0 and branches[False] >= 2


# blocks written out of their topological order, with numbered values: `late` (its value
# %1) comes before `early` (%2) in the text but after it in the flattened block
OUT_OF_ORDER = """
define i32 @walk(ptr %t, i32 %k) {
entry:
  %0 = and i32 %k, 63
  %c = icmp ult i32 %0, 32
  br i1 %c, label %early, label %late
late:
  %1 = phi i32 [ %0, %entry ], [ %2, %early ]
  ret i32 %1
early:
  %2 = add i32 %0, 100
  br label %late
}
"""


def test_flatten_keeps_numbered_values_valid():
    flat = flatten(OUT_OF_ORDER, "walk")
    assert flat is not None
    engine, walk = _jit_walk(flat)
    for k in range(200):
        assert walk(0, k) == (k & 63) + (100 if k & 63 < 32 else 0)
    del engine
