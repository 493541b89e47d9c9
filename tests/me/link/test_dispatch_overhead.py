"""The dispatch loop's per-frame metadata set-up (compiler/me/metasetup.py `meta_setup`,
dispatch/fwd.uc): it zeroes per frame only the metadata words the body may read before
writing them (and may write), writes in_port once at init, and the body ABI still holds
for every word a body can observe.

References: a brute-force walk of every path of small random WIR functions (for the
analysis), and the native target on scapy-built frames (for the chip: a stale word from a
context's previous frame would change a verdict the native target computes from zero)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import Ether, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me.metasetup import MetaSetup, meta_setup, read_before_written
from npkit.compiler.me.wir import Block, Branch, Function, Jump, MetaRead, MetaWrite, Reg, Ret
from npkit.link import link, link_body
from npkit.runtime.compiled import CompiledRun

from .harness import check_against_native

# What fwd.uc reads after the body, written out from its body_exit code (not from link.py):
# the verdict always; forward: out_port (2); drop: code (9); exception: code, next_hop (5).
VERDICT, CODE, OUT_PORT, NEXT_HOP = 8, 9, 2, 5
DISPATCH_READS = {1: {VERDICT, OUT_PORT}, 2: {VERDICT, CODE},
                  3: {VERDICT, CODE, NEXT_HOP}}
ALL_DISPATCH_READS = {VERDICT, CODE, OUT_PORT, NEXT_HOP}


# --------------------------------------------------------------------------- the analysis
def paths(fn: Function) -> Iterator[list[Block]]:
    """Every entry-to-Ret path of an acyclic function."""
    blocks = {b.label: b for b in fn.blocks}

    def walk(label: str, so_far: list[Block]) -> Iterator[list[Block]]:
        here = so_far + [blocks[label]]
        successors = blocks[label].successors()
        if not successors:
            yield here
        for succ in successors:
            yield from walk(succ, here)

    yield from walk(fn.blocks[0].label, [])


def brute_force_reads(fn: Function) -> set[int]:
    reads: set[int] = set()
    for path in paths(fn):
        written: set[int] = set()
        verdict: int | None = None          # None: unknown (not a constant)
        for ins in (i for b in path for i in b.instrs):
            if isinstance(ins, MetaRead) and ins.word not in written:
                reads.add(ins.word)
            elif isinstance(ins, MetaWrite):
                written.add(ins.word)
                if ins.word == VERDICT:
                    verdict = ins.src if isinstance(ins.src, int) else None
            elif isinstance(ins, Ret):
                wanted = ALL_DISPATCH_READS if verdict is None else \
                    DISPATCH_READS.get(verdict, {VERDICT})
                reads |= wanted - written
    return reads


WORDS = st.sampled_from([2, 3, 5, 7, VERDICT, CODE])


@st.composite
def meta_op(draw: st.DrawFn) -> MetaRead | MetaWrite:
    word = draw(WORDS)
    if draw(st.booleans()):
        return MetaRead(Reg(1), word)
    if word == VERDICT:
        return MetaWrite(word, draw(st.sampled_from([0, 1, 2, 3, 4, Reg(2)])))
    return MetaWrite(word, draw(st.sampled_from([0, 7, Reg(3)])))


@st.composite
def acyclic_function(draw: st.DrawFn) -> Function:
    """Blocks b0..bn-1; block i jumps or branches only forward; the last one returns."""
    count = draw(st.integers(1, 6))
    blocks = []
    for i in range(count):
        instrs: list = draw(st.lists(meta_op(), max_size=4))
        later = [f"b{j}" for j in range(i + 1, count)]
        shape = draw(st.sampled_from(["ret", "jump", "branch"])) if later else "ret"
        if shape == "jump":
            instrs.append(Jump(draw(st.sampled_from(later))))
        elif shape == "branch":
            instrs.append(Branch("eq", Reg(4), 0, draw(st.sampled_from(later)),
                                 draw(st.sampled_from(later))))
        else:
            instrs.append(Ret())
        blocks.append(Block(f"b{i}", instrs))
    return Function("random", blocks, 16)


@settings(max_examples=300, deadline=None)
@given(acyclic_function())
def test_read_before_written_is_every_path_s(fn: Function) -> None:
    assert read_before_written(fn) == brute_force_reads(fn)


def test_a_loop_reads_what_a_later_trip_writes() -> None:
    # head: read user; body: write user and queue; back to head -- the first trip reads
    # user unwritten; out reads queue, unwritten when the loop ran no trip
    fn = Function("loop", [
        Block("entry", [MetaWrite(VERDICT, 1), MetaWrite(OUT_PORT, 0), Jump("head")]),
        Block("head", [MetaRead(Reg(1), 7), Branch("eq", Reg(1), 0, "body", "out")],
              max_trips=4),
        Block("body", [MetaWrite(7, 1), MetaWrite(3, 1), Jump("head")]),
        Block("out", [MetaRead(Reg(2), 3), MetaRead(Reg(3), OUT_PORT), Ret()])], 16)
    assert read_before_written(fn) == {7, 3}
    assert meta_setup(fn) == MetaSetup(frozenset({3, 7}), in_port_per_frame=False)


def test_a_word_the_body_never_writes_is_not_zeroed_per_frame() -> None:
    # reads user and queue first, writes only queue; forward without out_port: init's 0
    fn = Function("f", [Block("entry", [
        MetaRead(Reg(1), 7), MetaRead(Reg(2), 3), MetaWrite(3, 1), MetaWrite(VERDICT, 1),
        MetaWrite(CODE, 0), Ret()])], 16)
    assert read_before_written(fn) == {7, 3, OUT_PORT}
    assert meta_setup(fn).clear == {3}


# --------------------------------------------------------------------------- on the chip
STALE_MBL = """
import "std/headers.mbl";

// Every verdict here depends on a metadata word that a previous frame of the same
// context may have written: only a correct per-frame set-up gives the native verdicts.
block stale {
    let eth = packet<ethernet_t>(0) else drop(runt);
    let kind = eth.ethertype;
    if (kind & 0x100) == 0x100 { meta.user = 1; }
    if kind == 1 { meta.next_hop = 0x1234; exception(3); }
    if kind == 2 { exception(4); }
    if kind == 3 { meta.out_port = 1; drop(odd); }
    if kind == 4 { forward(meta.out_port); }
    forward((meta.user as bit<16>) ^ meta.in_port);
}
"""
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}
KINDS = [1, 2, 3, 4, 0x100, 0, 0x101, 0x800]


def frame(kind: int, uid: int) -> bytes:
    return raw(Ether(type=kind, **MACS) / (uid.to_bytes(2, "big") * 23))


@pytest.fixture(scope="module")
def stale(tmp_path_factory) -> tuple:
    from npkit.compiler.me import compile_me

    source: Path = tmp_path_factory.mktemp("stale") / "stale.mbl"
    source.write_text(STALE_MBL, encoding="utf-8")
    build = compile_me(compile_file(source), "stale")
    return build, NativeProgram(build.program)


def run(build, native, frames: dict[int, list[bytes]], **options):
    if "meta" in options:       # a set-up other than the body's own
        linked = link_body(build.program, build.body.uc, build.body.window_bytes,
                           pipeline=build.entry, **options)
    else:
        linked = link(build.program, build, **options)
    run = CompiledRun(linked)
    run.load_memories(native)
    return run.run(frames, load=0.1)


def every_context_sees_each_pair() -> dict[int, list[bytes]]:
    """One ME per port, 8 contexts: 8 frames of a kind reach every context once, so each
    context sees kind 1 before 2, 3 before 4, 0x100 before 0."""
    order = [1, 2, 3, 4, 0x100, 0, 0x101, 0x800, 0]
    return {p: [frame(kind, 64 * p + 8 * k + i) for k, kind in enumerate(order)
                for i in range(8)] for p in (0, 1)}


def test_the_set_up_zeroes_what_the_block_reads_first(stale, tmp_path: Path) -> None:
    build, _ = stale
    # next_hop (exception 4 without it), out_port (kind 4), user (read after an if);
    # not the verdict or code (every path writes them), in_port once at init
    assert meta_setup(build.wir) == MetaSetup(frozenset({OUT_PORT, NEXT_HOP, 7}), False)
    link(build.program, build, build_dir=tmp_path, fwd_mes_per_port=1)
    header = (tmp_path / "layout.h").read_text()
    assert {line.split()[1] for line in header.splitlines() if "META_CLEAR_" in line} == \
        {"META_CLEAR_2", "META_CLEAR_5", "META_CLEAR_7"}
    assert "META_IN_PORT_PER_FRAME" not in header


@pytest.mark.parametrize("per_port", [1, 2, 3])
def test_stale_metadata_never_shows(stale, per_port: int) -> None:
    build, native = stale
    frames = every_context_sees_each_pair()
    check_against_native(run(build, native, frames, fwd_mes_per_port=per_port), native,
                         frames)


def test_without_the_set_up_stale_words_show(stale) -> None:
    """The check above can fail: with nothing zeroed per frame the chip leaks values."""
    build, native = stale
    frames = every_context_sees_each_pair()
    result = run(build, native, frames, fwd_mes_per_port=1,
                 meta=MetaSetup(frozenset(), in_port_per_frame=False))
    with pytest.raises(AssertionError):
        check_against_native(result, native, frames)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.lists(st.sampled_from(KINDS), max_size=40), st.lists(st.sampled_from(KINDS),
                                                                max_size=40),
       st.sampled_from([1, 2, 4]))
def test_random_kinds_match_the_native_target(stale, kinds0, kinds1, per_port) -> None:
    build, native = stale
    frames = {0: [frame(k, i) for i, k in enumerate(kinds0)],
              1: [frame(k, 1000 + i) for i, k in enumerate(kinds1)]}
    check_against_native(run(build, native, frames, fwd_mes_per_port=per_port), native,
                         frames)


# --------------------------------------------------------------------------- verdict records
# A hand-written body that leaves whatever verdict the frame spells, so every record kind
# (and every bad one) reaches every chain position: frame byte 0 = meta.verdict, bytes 1..4
# = meta.out_port (a whole word: the dispatch must drop any out_port >= PORTS), byte 5 =
# meta.code, bytes 6..7 = meta.next_hop.  It writes no header word.
SPELLED_UC = """
body_entry:
    alu_shf[a0, --, B, $$0, >>24]
    dbl_shf[a1, $$0, $$1, >>24]
    alu_shf[a2, --, B, $$1, <<8]
    alu_shf[a2, --, B, a2, >>24]
    immed[a3, 0xFFFF]
    alu[a3, a3, AND, $$1]
    alu[*l$index1[2], --, B, a1]
    alu[*l$index1[5], --, B, a3]
    alu[*l$index1[9], --, B, a2]
    alu[*l$index1[8], --, B, a0]
    br[body_exit#]
"""
BODIES = Path(__file__).parent / "bodies"
RUNT = 1                                    # swap.mbl's only reason: id 1


@st.composite
def spelled(draw: st.DrawFn, uid: int) -> bytes:
    verdict = draw(st.sampled_from([1, 1, 1, 1, 2, 3, 0, 4, 0x81]))
    out_port = draw(st.sampled_from([0, 1, 0, 1, 2, 3, 9, 0x80000000, 0x10000]))
    code = draw(st.sampled_from([RUNT, 0, 7, 200]))
    next_hop = draw(st.integers(0, 0xFFFF))
    head = bytes([verdict]) + out_port.to_bytes(4, "big") + bytes([code]) + \
        next_hop.to_bytes(2, "big") + uid.to_bytes(4, "big")
    return head + bytes(60 - len(head))


def spelled_expectation(frames: dict[int, list[bytes]]):
    """The dispatch's contract written out (docs/me-backend.md, "Dispatch and link"):
    (out port -> {in port -> frames}, drops by reason, in port -> exceptions)."""
    out: dict[int, dict[int, list[bytes]]] = {}
    drops: dict[str, int] = {}
    exceptions: dict[int, list[tuple[int, int, bytes]]] = {}
    for p, port_frames in frames.items():
        for f in port_frames:
            verdict, out_port, code = f[0], int.from_bytes(f[1:5], "big"), f[5]
            next_hop = int.from_bytes(f[6:8], "big")
            if verdict == 1 and out_port < 2:
                out.setdefault(out_port, {}).setdefault(p, []).append(f)
                continue
            if verdict == 3:
                exceptions.setdefault(p, []).append((code, next_hop, f))
                continue
            reason = "bad_port" if verdict == 1 else \
                "runt" if verdict == 2 and code == RUNT else "no_verdict"
            drops[reason] = drops.get(reason, 0) + 1
    return out, drops, exceptions


def run_spelled(per_port: int, frames: dict[int, list[bytes]]):
    from .harness import is_interleaving

    program = compile_file(BODIES / "swap.mbl")
    linked = link_body(program, SPELLED_UC, 8, pipeline="swap", fwd_mes_per_port=per_port)
    result = CompiledRun(linked).run(frames, load=0.5)
    out, drops, exceptions = spelled_expectation(frames)
    for q in (0, 1):
        by_input = out.get(q, {})
        assert is_interleaving(result.frames(q), by_input.get(0, []), by_input.get(1, [])), q
    assert result.drops == drops
    got: dict[int, list[tuple[int, int, bytes]]] = {}
    for e in result.exceptions:
        got.setdefault(e.in_port, []).append((e.code, e.next_hop, e.frame))
    assert got == exceptions
    assert result.leak_free
    return linked


def test_the_header_names_the_port_shift(tmp_path: Path) -> None:
    program = compile_file(BODIES / "swap.mbl")
    link_body(program, SPELLED_UC, 8, pipeline="swap", fwd_mes_per_port=2, build_dir=tmp_path)
    header = (tmp_path / "layout.h").read_text()
    assert "#define PORTS_SHIFT 0x1" in header      # 2 ports: out_port >> 1 == 0


@pytest.mark.parametrize("per_port", [1, 2, 3, 4])
def test_every_record_kind_at_every_chain_position(per_port: int) -> None:
    """Frame k of a port goes to chain position k mod N: 4 rounds of 9 kinds (forwards to
    both ports, a bad port, a drop of each counter, exceptions) put each kind on every
    position, between forwards, both as the own record and as an upstream one."""
    kinds = [(1, 0), (2, 0), (1, 1), (3, 0), (1, 0), (1, 2), (0, 1), (1, 1), (4, 0)]
    frames: dict[int, list[bytes]] = {}
    for p in (0, 1):
        frames[p] = []
        for i in range(4 * len(kinds)):
            verdict, out_port = kinds[(i + p) % len(kinds)]
            head = bytes([verdict]) + out_port.to_bytes(4, "big") + \
                bytes([RUNT if i % 2 else 9]) + (i * 77 & 0xFFFF).to_bytes(2, "big") + \
                (1000 * p + i).to_bytes(4, "big")
            frames[p].append(head + bytes(60 - len(head)))
    run_spelled(per_port, frames)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(st.data(), st.sampled_from([1, 2, 2, 3, 4]))
def test_random_verdicts_keep_the_contract(data: st.DataObject, per_port: int) -> None:
    frames = {p: [data.draw(spelled(1000 * p + i)) for i in
                  range(data.draw(st.integers(0, 30)))] for p in (0, 1)}
    run_spelled(per_port, frames)
