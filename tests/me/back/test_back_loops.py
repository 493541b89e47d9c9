"""Loop, address and compare code quality: memory addresses `x * k + c` folded into the
command's two address operands (isel), constants hoisted out of loops (hoist.py), a loop's
first test threaded when a constant decides it (thread.py), sums read through a low mask
with small constants (compares.py), halfword tests as byte compares (isel).  Each on WIR
built to exercise it, run on the chip and compared with the WIR interpreter (the
independent model)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npkit.compiler.me import wir
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.back.isel import byte_mask
from npkit.compiler.me.back.thread import thread_constant_jumps
from npkit.compiler.me.report import analyze_body

from . import gen
from .test_back_props import packet_for, run_checked

R = wir.Reg
LOOPS = settings(max_examples=40, deadline=None)


def probe_loop(space: int, scale: int, offset: int, trips: int, limit: int, kind: str
               ) -> wir.Function:
    """A probing loop: `i = 0; head: if i < limit`; body: a command at word
    `((h + i) & 7) * scale + MEM_BASE + offset`, summed into meta word 3."""
    h, i, idx, m, addr, acc, v = R(1), R(2), R(3), R(4), R(5), R(6), R(7)
    body: list[wir.Instr] = [wir.Bin(idx, "add", h, i), wir.Bin(idx, "and", idx, 7),
                             wir.Bin(m, "mul", idx, scale),
                             wir.Bin(addr, "add", m, gen.MEM_BASE + offset)]
    if kind == "read":
        body += [wir.MemRead((v, R(8)), space, addr), wir.Bin(acc, "xor", acc, v),
                 wir.Bin(acc, "add", acc, R(8))]
    elif kind == "write":
        body += [wir.MemWrite(space, addr, (acc, i))]
    else:
        body += [wir.MemAdd(v, space, addr, h), wir.Bin(acc, "add", acc, v)]
    body += [wir.Bin(acc, "add", acc, 0x12345678), wir.Bin(i, "add", i, 1),
             wir.Jump("head")]
    return wir.Function("probe", [
        wir.Block("entry", [wir.HdrRead(h, 0), wir.Copy(i, 0), wir.Copy(acc, 0),
                            wir.Jump("head")]),
        wir.Block("head", [wir.Branch("ult", i, limit, "body", "out")], max_trips=trips + 1),
        wir.Block("body", body),
        wir.Block("out", [wir.MetaWrite(3, acc), wir.MetaWrite(4, i), wir.Ret()]),
    ], window_bytes=8, next_reg=9, loc=wir.Loc("probe.mbl", 1, 1))


@LOOPS
@given(st.sampled_from([wir.SRAM, wir.SCRATCH]), st.sampled_from([1, 2, 3, 4, 5, 6, 7, 12]),
       st.integers(0, 8), st.integers(0, 3), st.sampled_from(["read", "write", "add"]),
       st.integers(0, 2**31))
def test_folded_addresses_and_hoisted_constants_match_the_interpreter(
        space: int, scale: int, offset: int, trips: int, kind: str, seed: int) -> None:
    fn = probe_loop(space, scale, offset, trips, trips, kind)
    run_checked(fn, seed)


def test_the_base_leaves_the_loop_and_the_scale_merges_with_the_byte_shift() -> None:
    uc = compile_body(probe_loop(wir.SRAM, 3, 0, 3, 3, "read")).uc
    lines = [s.strip() for s in uc.splitlines() if not s.startswith(".loc")]
    body = lines[lines.index("b_body#:    ; body"):]
    body = body[:next(k for k, s in enumerate(body) if s.startswith("b_head#"))]
    assert not any(s.startswith("immed") for s in body)         # 0x100 and 0x12345678 out
    assert any("<<3]" in s for s in body) and any("<<2]" in s for s in body)   # x * 12
    read = next(s for s in body if s.startswith("sram[read"))
    assert ", 0, 2]" not in read                                # the base: second operand


def test_the_first_test_of_a_counted_loop_is_threaded() -> None:
    fn = probe_loop(wir.SRAM, 1, 0, 3, 3, "read")
    entry = thread_constant_jumps(fn).block("entry")
    assert entry.terminator == wir.Jump("body")
    none = thread_constant_jumps(probe_loop(wir.SRAM, 1, 0, 0, 0, "read")).block("entry")
    assert none.terminator == wir.Jump("out")                  # zero trips: straight out
    assert fn.block("entry").terminator == wir.Jump("head")    # the input is left alone
    body = compile_body(fn)            # the report can still bound the loop entered at body
    assert body.loop_trips == {"b_head": 4, "b_body": 4}
    stats = analyze_body(body.uc, loop_trips=body.loop_trips)
    assert not stats.lower_bound


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(0, 3), st.integers(0, 5))
def test_a_test_decided_by_a_constant_copy_matches_the_interpreter(seed: int, k: int,
                                                                   c: int) -> None:
    """`x = k; jump t` with `t: if x < c`; the register also set elsewhere (not threaded
    on that path: its value is not known there)."""
    x = R(1)
    fn = wir.Function("thr", [
        wir.Block("entry", [wir.HdrRead(R(2), 0), wir.Branch("ult", R(2), 0x80000000,
                                                             "known", "other")]),
        wir.Block("known", [wir.Copy(x, k), wir.Jump("t")]),
        wir.Block("other", [wir.Bin(x, "and", R(2), 7), wir.Jump("t")]),
        wir.Block("t", [wir.Branch("ult", x, c, "yes", "no")]),
        wir.Block("yes", [wir.MetaWrite(3, 1), wir.MetaWrite(4, x), wir.Ret()]),
        wir.Block("no", [wir.MetaWrite(3, 2), wir.MetaWrite(4, x), wir.Ret()]),
    ], window_bytes=8, next_reg=3, loc=wir.Loc("thr.mbl", 1, 1))
    threaded = thread_constant_jumps(fn)
    assert threaded.block("known").terminator == wir.Jump("yes" if k < c else "no")
    assert threaded.block("other").terminator == wir.Jump("t")
    run_checked(fn, seed)


@LOOPS
@given(st.integers(0, wir.MASK32), st.integers(0, wir.MASK32), st.sampled_from(["add", "sub"]),
       st.integers(1, 31), st.integers(0, 80), st.booleans(), st.integers(0, 2**31))
def test_sums_read_through_a_low_mask_match_the_interpreter(x: int, c: int, op: str, k: int,
                                                            near: int, both: bool,
                                                            seed: int) -> None:
    """`(x op c) & (2^k - 1)`, c often just under a multiple of 2^k (what narrows to a small
    constant); `both`: the sum is also read unmasked (it must then stay as it is)."""
    if seed % 2:
        c = ((c >> k) << k) - near & wir.MASK32 if k < 32 else c
    s, t = R(2), R(3)
    instrs: list[wir.Instr] = [wir.Copy(R(1), x), wir.Bin(s, op, R(1), c),
                               wir.Bin(t, "and", s, (1 << k) - 1), wir.MetaWrite(3, t)]
    if both:
        instrs.append(wir.MetaWrite(4, s))
    fn = wir.Function("narrow", [wir.Block("entry", [*instrs, wir.Ret()])], window_bytes=8,
                      next_reg=4, loc=wir.Loc("narrow.mbl", 1, 1))
    run_checked(fn, seed)


def test_a_masked_sum_takes_a_small_constant() -> None:
    s, t = R(2), R(3)
    fn = wir.Function("narrow", [wir.Block("entry", [
        wir.MetaRead(R(1), 1), wir.Bin(R(4), "and", R(1), 0xFFFF),
        wir.Bin(s, "add", R(4), 0xFFF2), wir.Bin(t, "and", s, 0xFFFF), wir.MetaWrite(3, t),
        wir.Ret()])], window_bytes=8, next_reg=5, loc=wir.Loc("narrow.mbl", 1, 1))
    uc = compile_body(fn).uc
    assert "0xfff2" not in uc and "-, 14]" in uc


@LOOPS
@given(st.integers(0, wir.MASK32), st.sampled_from(["eq", "ne"]), st.integers(0, 3),
       st.booleans(), st.booleans(), st.integers(0, 2**31))
def test_halfword_tests_by_bytes_match_the_interpreter(x: int, pred: str, same: int,
                                                       then_first: bool, from_header: bool,
                                                       seed: int) -> None:
    """`(w >> 16) pred c` as two byte compares: c equal to the high half, or differing in
    its high byte, low byte or both; the shift tested twice; w a header word or a value."""
    if from_header:
        x = int.from_bytes(packet_for(seed)[:4], "big")
    half = x >> 16
    c = half ^ (0, 0x100, 0x1, 0x101)[same]
    w, r = R(1), R(2)
    source: wir.Instr = wir.HdrRead(w, 0) if from_header else wir.Copy(w, x)
    yes = wir.Block("yes", [wir.MetaWrite(3, 1), wir.Branch(pred, r, half, "done", "no")])
    no = wir.Block("no", [wir.MetaWrite(4, 2), wir.Jump("done")])
    order = [yes, no] if then_first else [no, yes]
    fn = wir.Function("half", [
        wir.Block("entry", [source, wir.Bin(r, "lshr", w, 16), wir.Branch(pred, r, c, "yes",
                                                                          "no")]),
        *order, wir.Block("done", [wir.MetaWrite(5, w), wir.Ret()])],
        window_bytes=8, next_reg=3, loc=wir.Loc("half.mbl", 1, 1))
    uc = compile_body(fn).uc
    assert "br=byte" in uc or "br!=byte" in uc
    run_checked(fn, seed)


@st.composite
def complement_bounds(draw: st.DrawFn) -> tuple[str, int, int]:
    """An unsigned compare with a bound just under 2^32: 2^32 - (k << s), k <= 63."""
    k, s = draw(st.integers(1, 63)), draw(st.integers(0, 26))
    c = ((1 << 32) - (k << s) - draw(st.sampled_from([0, 1]))) & wir.MASK32
    x = draw(st.sampled_from([(c + d) & wir.MASK32 for d in (-2, -1, 0, 1, 2)])
             | st.integers(0, wir.MASK32))
    return draw(st.sampled_from(["ult", "ule", "ugt", "uge"])), x, c


@LOOPS
@given(complement_bounds(), st.integers(0, 2**31))
def test_compares_with_bounds_near_the_top_use_the_carry_like_the_interpreter(
        case, seed: int) -> None:
    pred, x, c = case
    fn = wir.Function("top", [
        wir.Block("entry", [wir.HdrRead(R(2), 0), wir.Bin(R(1), "xor", R(2), R(2)),
                            wir.Bin(R(1), "add", R(1), x), wir.Branch(pred, R(1), c, "y", "n")]),
        wir.Block("y", [wir.MetaWrite(3, 1), wir.Ret()]),
        wir.Block("n", [wir.MetaWrite(3, 2), wir.Ret()]),
    ], window_bytes=8, next_reg=3, loc=wir.Loc("top.mbl", 1, 1))
    run_checked(fn, seed)


@LOOPS
@given(st.integers(0, wir.MASK32), st.integers(1, 31), st.sampled_from(["shl", "lshr"]),
       st.sampled_from([0xFF, 0xFF00, 0xFFFF, 0xFF00FF, 0xFFFF0000, 0xFFFFFF]),
       st.integers(0, 2**31))
def test_shifted_byte_fields_match_the_interpreter(x: int, s: int, op: str, mask: int,
                                                  seed: int) -> None:
    """`(x << s) & bytes` and `(x >> s) & bytes`: one `ld_field_w_clr` with the shift."""
    fn = wir.Function("fld", [wir.Block("entry", [
        wir.HdrRead(R(4), 0), wir.Bin(R(1), "xor", R(4), R(4)), wir.Bin(R(1), "or", R(1), x),
        wir.Bin(R(2), op, R(1), s), wir.Bin(R(3), "and", R(2), mask), wir.MetaWrite(3, R(3)),
        wir.Ret()])], window_bytes=8, next_reg=5, loc=wir.Loc("fld.mbl", 1, 1))
    if mask > 63:
        assert f", {'<<' if op == 'shl' else '>>'}{s}]" in compile_body(fn).uc
    run_checked(fn, seed)


@LOOPS
@given(st.sampled_from([wir.SRAM, wir.SCRATCH]), st.integers(0, 5), st.integers(1, 11),
       st.integers(0, 4), st.booleans(), st.sampled_from(["read", "write", "add"]),
       st.integers(0, 2**31))
def test_masked_field_addresses_match_the_interpreter(space: int, p: int, w: int, s: int,
                                                     based: bool, kind: str,
                                                     seed: int) -> None:
    """Word address `((h << s) & mask) [+ base]`, mask = w ones from bit p (a field: two
    shifts when h's bits under p are 0, i.e. s >= p; else computed as written)."""
    w = min(w, 11 - p)          # word addresses < 4096 - MEM_BASE (scratch is 16 KB)
    mask = ((1 << w) - 1) << p
    h, y, f, addr, v = R(1), R(2), R(3), R(4), R(5)
    instrs: list[wir.Instr] = [wir.HdrRead(h, 0)]
    instrs.append(wir.Bin(y, "shl", h, s) if s else wir.Copy(y, h))
    instrs.append(wir.Bin(f, "and", y, mask))
    if based:
        instrs.append(wir.Bin(addr, "add", f, gen.MEM_BASE))
    else:
        addr = f
    if kind == "read":
        instrs += [wir.MemRead((v,), space, addr), wir.MetaWrite(3, v)]
    elif kind == "write":
        instrs.append(wir.MemWrite(space, addr, (h,)))
    else:
        instrs += [wir.MemAdd(v, space, addr, h), wir.MetaWrite(3, v)]
    fn = wir.Function("field", [wir.Block("entry", [*instrs, wir.Ret()])], window_bytes=8,
                      next_reg=6, loc=wir.Loc("field.mbl", 1, 1))
    if s >= p and mask > 63 and byte_mask(mask) is None:   # whole bytes: ld_field_w_clr
        assert f"<<{32 - p - w + s}]" in compile_body(fn).uc
    run_checked(fn, seed)


@LOOPS
@given(st.sampled_from([wir.SRAM, wir.SCRATCH]), st.sampled_from(["shl", "lshr"]),
       st.integers(1, 3), st.sampled_from(["read", "write", "add"]), st.integers(0, 2**31))
def test_shifted_then_based_addresses_match_the_interpreter(space: int, op: str, s: int,
                                                           kind: str, seed: int) -> None:
    """Word address `((h & 15) op s) + base`: the shift feeds the `add` (folded into it
    when alone), the `add` folds into the command."""
    h, m, y, addr, v = R(1), R(2), R(3), R(4), R(5)
    instrs: list[wir.Instr] = [wir.HdrRead(h, 0), wir.Bin(m, "and", h, 15),
                               wir.Bin(y, op, m, s), wir.Bin(addr, "add", y, gen.MEM_BASE)]
    if kind == "read":
        instrs += [wir.MemRead((v,), space, addr), wir.MetaWrite(3, v)]
    elif kind == "write":
        instrs.append(wir.MemWrite(space, addr, (h,)))
    else:
        instrs += [wir.MemAdd(v, space, addr, h), wir.MetaWrite(3, v)]
    fn = wir.Function("sh", [wir.Block("entry", [*instrs, wir.Ret()])], window_bytes=8,
                      next_reg=6, loc=wir.Loc("sh.mbl", 1, 1))
    run_checked(fn, seed)
