"""Buffer operations and receive stages in the ME back end (docs/datapath.md, "Receive stages
on the chip"; compiler/me/back/buffers.py): what the body of link/dispatch/pool.uc does for
buffer.alloc / store / attach / free and where the receive stage's turn ends, checked on
the emitted microcode, and the located errors for what the chip cannot do.  The behaviour
on the chip (frames equal to the native target's) is tests/me/link/test_pool_media.py's.

    .venv/bin/python -m pytest -q tests/me/back/test_back_buffers.py -s
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from npkit.compiler.mbl import CompileError, compile_file, compile_source
from npkit.compiler.me import compile_me, wir
from npkit.compiler.me.abi import (
    LM_WINDOW_ABI,
    RX_KEEP_DESC_BYTE,
    RX_STORE_SIGNAL,
    RX_TURN_LABEL,
    RX_TURN_RET,
    RX_TURN_TAKE_LABEL,
)
from npkit.compiler.me.report import abi_violations, analyze_body

REPO = Path(__file__).resolve().parents[3]
MEDIA_POS_ROUTER = REPO / "tests" / "mbl" / "programs" / "media_pos_router.mbl"


@pytest.fixture(scope="module")
def media_build():
    return compile_me(compile_file(MEDIA_POS_ROUTER), "media_pos_router", LM_WINDOW_ABI)


def test_frame_rx_compiles_to_the_pool_s_buffer_commands(media_build) -> None:
    uc = media_build.body.uc
    assert len(re.findall(r"sram\[dequeue, ", uc)) == 1           # buffer.alloc
    assert len(re.findall(r"sram\[enqueue, ", uc)) >= 3           # free (x2), attach's
    # two buffer.store sites (a middle and the last mpacket's) and the attach's copy of the
    # kept first element's bytes 56.. (the store at 0 copies nothing), each one
    # dram[rbuf_rd] of 1..16 quadwords through a table
    counts = [int(c) for c in re.findall(r"dram\[rbuf_rd, --, \w+, \w+, (\d+)\]", uc)]
    assert sorted(counts) == sorted(list(range(1, 17)) * 3)
    assert len(re.findall(r"jump\[\w+, ", uc)) == 3
    # buffer.attach: the window (56 bytes) from the buffer into local memory
    assert len(re.findall(r"dram\[read, \$\$0, \w+, 0, 7\]", uc)) == 1
    # the receive turn: each media.turn_begin() a call of the dispatch's turn-taking
    # routine, each media.turn_end() and the receive stage's end one of its passing routine
    takes, calls = uc.count(f"br[{RX_TURN_TAKE_LABEL}#]"), uc.count(f"br[{RX_TURN_LABEL}#]")
    assert takes == 5 and calls == takes + 1
    assert len(re.findall(rf"load_addr\[{RX_TURN_RET}, ", uc)) == takes + calls
    # the window stays in local memory: $$ only between the attach's read and the copies
    assert set(re.findall(r"\$\$\d+", uc)) == {f"$${k}" for k in range(14)}
    assert not re.search(r"alu\[\$\$", uc)


def test_the_receive_stage_polls_its_waits_in_the_turn() -> None:
    """In the receive turn a wait polls (br_!signal) instead of sleeping: the turn passes
    without waiting for the ME's other contexts; after it, waits sleep as usual (a stage
    whose turn is its whole body and reads its state there: frame_rx waits for nothing in
    its turn, below)."""
    uc = compile_me(compile_source(RX_READS_AFTER_ATTACH, "gather.mbl"), "p",
                    LM_WINDOW_ABI).body.uc
    polls = re.findall(r"(b_poll\d+)#:\n\s*br_!signal\[\d+, (b_poll\d+)#\]", uc)
    assert polls and all(a == b for a, b in polls)          # each spins on itself
    assert "ctx_arb[" in uc                                  # the later stages sleep
    # a block without a receive stage is compiled as before: no poll
    plain = compile_me(compile_file(REPO / "examples" / "pos_router" / "pos_router.mbl"),
                       None, LM_WINDOW_ABI).body.uc
    assert "br_!signal" not in plain


def _turns(uc: str) -> list[str]:
    """The code between each call of the turn-taking routine and the next call of the
    turn-passing one (frame_rx's turns: media.turn_begin() .. media.turn_end())."""
    return re.findall(rf"br\[{RX_TURN_TAKE_LABEL}#\](.*?)br\[{RX_TURN_LABEL}#\]", uc, re.S)


def test_frame_rx_waits_for_nothing_in_its_turn(media_build) -> None:
    """frame_rx's turns (the first mpacket's, given up for no buffer or too long, a middle
    one's, the last one's) only issue their scratch commands: the reads of rx_frame /
    rx_bytes, the middle mpacket's test_and_add, the writes; each is waited for by a
    sleeping wait after the call of the turn-passing routine (buffers.select_turn_write,
    and isel's pending reads, collected at their first use), never by a poll in the turn.
    The buffer and the first mpacket's store come before the turn."""
    uc = media_build.body.uc
    turns = _turns(uc)
    assert len(turns) == 5
    for turn in turns:
        assert "br_!signal" not in turn and "ctx_arb" not in turn
        assert "sram[" not in turn and "dram[" not in turn
        assert re.search(r"scratch\[(read|write|test_and_add), ", turn)
    assert "br_!signal" not in uc                            # no poll anywhere
    commands = [c for t in turns for c in re.findall(r"scratch\[(\w+), ", t)]
    assert sorted(set(commands)) == ["read", "test_and_add", "write"]
    # every signal a turn's command raises is slept for after the pass
    after = re.split(rf"br\[{RX_TURN_TAKE_LABEL}#\]", uc)[1:]
    for turn, rest in zip(turns, after, strict=True):
        tail = rest[len(turn):]
        for sig in re.findall(r"sig_done\[(\d+)\]", turn):
            assert re.search(rf"ctx_arb\[[\d, ]*\b{sig}\b", tail)


def test_the_first_mpacket_s_store_leaves_its_descriptor_write_in_flight(media_build) -> None:
    """buffer.store(first, 0, 0) only names the kept RBUF element in the buffer's descriptor:
    one sram[write] on pool.uc's store signal (awaited at the body's exit, not before the
    turn), from a transfer register no other instruction of the body writes (the write may
    still read it after the turn); the element's bytes 56.. are copied by the attach."""
    uc = media_build.body.uc
    writes = re.findall(rf"sram\[write, \$(\d+), \w+, {RX_KEEP_DESC_BYTE}, 1\], "
                        rf"sig_done\[(\d+)\]", uc)
    kept = [x for x, sig in writes if int(sig) == RX_STORE_SIGNAL]
    assert len(kept) == 1
    assert len(re.findall(rf"\w+\[\${kept[0]}, ", uc)) == 1  # set once: for this write
    assert f"ctx_arb[{RX_STORE_SIGNAL}]" in uc        # other stores' waits, not this one's


def test_the_body_assembles_and_keeps_to_the_pool_abi(media_build) -> None:
    body = media_build.body
    stats = analyze_body(body.uc, loop_trips=body.loop_trips)
    print(f"\nmedia_pos_router body: {body.instructions} instructions, worst path "
          f"{stats.path_instructions} instructions / {stats.path_cycles} cycles, "
          f"memory {stats.memory_detail}")
    # the only departures are the receive-stage contract's: the return address of the turn
    # routine, and a buffer.store left in flight for pool.uc to wait for at body_exit
    assert abi_violations(stats, LM_WINDOW_ABI) == [
        f"uses dispatch registers {RX_TURN_RET}", "waits for dispatch signals 14",
        "leaves with signals pending: 14"]
    assert {"dram rbuf_rd", "msf read", "sram enqueue"} <= set(stats.memory_detail)


def _ret_reachable_without_marker(fn: wir.Function) -> tuple[bool, set[int]]:
    """(a Ret is reachable from the entry without passing RxTurnDone, the id()s of the
    instructions before the marker on some path)."""
    blocks = {b.label: b for b in fn.blocks}
    seen, before, work = set(), set(), [fn.blocks[0].label]
    ret = False
    while work:
        label = work.pop()
        if label in seen:
            continue
        seen.add(label)
        for i in blocks[label].instrs:
            if isinstance(i, wir.RxTurnDone):
                break
            before.add(id(i))
            ret |= isinstance(i, wir.Ret)
        else:
            work += blocks[label].successors()
    return ret, before


def _in_turn(fn: wir.Function) -> set[int]:
    """The id()s of the instructions some path runs holding the turn (after an RxTurnTake,
    before an RxTurnDone), from a walk of every path (the CFG has no cycle here)."""
    blocks = {b.label: b for b in fn.blocks}
    inside: set[int] = set()
    work, seen = [(fn.blocks[0].label, False)], set()
    while work:
        label, holds = work.pop()
        if (label, holds) in seen:
            continue
        seen.add((label, holds))
        for i in blocks[label].instrs:
            holds = True if isinstance(i, wir.RxTurnTake) else (
                False if isinstance(i, wir.RxTurnDone) else holds)
            if holds:
                inside.add(id(i))
        work += [(s, holds) for s in blocks[label].successors()]
    return inside


def test_the_receive_turn_ends_right_after_the_receive_stage(media_build) -> None:
    fn = media_build.wir
    ret, before = _ret_reachable_without_marker(fn)
    assert not ret                           # every path passes the turn on
    # frame_rx's reads and writes of its registers are inside a turn, its counter outside
    inside = _in_turn(fn)
    rx_state = [i for b in fn.blocks for i in b.instrs
                if isinstance(i, wir.MemRead | wir.MemWrite | wir.MemAdd)
                and i.loc is not None and i.loc.file.endswith("media_rx.mbl")]
    registers = [i for i in rx_state if not (isinstance(i, wir.MemAdd) and i.dst is None)]
    assert len(registers) >= 8 and all(id(i) in inside for i in registers)
    assert not any(id(i) in inside for b in fn.blocks for i in b.instrs
                   if isinstance(i, wir.BufAlloc | wir.BufStore | wir.BufAttach))
    routing = [i for b in fn.blocks for i in b.instrs if isinstance(i, wir.HdrRead)]
    assert routing and not any(id(i) in before or id(i) in inside for i in routing)


RX_READS_AFTER_ATTACH = """
import "std/headers.mbl";
register held : bit<32> [4] in scratch;
block gather {
    if media.sop() && media.eop() { next; }
    if media.sop() {
        let h = buffer.alloc() else drop(no_buffer);
        let n = buffer.store(h, 0, 0) else { buffer.free(h); drop(too_long); }
        held[0] = h;
        media.consume();
    }
    let h = held[0];
    let n = buffer.store(h, 128, 0) else { buffer.free(h); drop(too_long); }
    buffer.attach(h, n as bit<16>);
    let ppp = packet<ppp_t>(0) else drop(runt);   // reads the window: the read must be done
    if ppp.protocol != 0x21 { drop(not_ip); }
    next;
}
block fwd { forward(1); }
pipeline p { stage g = gather; stage f = fwd; g -> f; }
"""


def _after_window_read(uc: str) -> list[str]:
    """The instruction after each buffer.attach's window read."""
    return re.findall(r"dram\[read, \$\$0, \w+, 0, 7\], sig_done\[\d+\]\n\s*(\S+)", uc)


def test_the_window_read_waits_when_the_receive_stage_reads_the_window(media_build) -> None:
    # frame_rx: nothing reads the window before the stage ends, the read completes after
    # the turn has passed (waited for after the call of the turn routine)
    (after,) = _after_window_read(media_build.body.uc)
    assert not after.startswith(("ctx_arb", "b_poll"))
    program = compile_source(RX_READS_AFTER_ATTACH, "gather.mbl")
    uc = compile_me(program, "p", LM_WINDOW_ABI).body.uc
    (after,) = _after_window_read(uc)           # waited for at once, polling in the turn
    assert after.startswith("b_poll")


UNALIGNED = """
block rx {
    let h = buffer.alloc() else drop(no_buffer);
    let n = buffer.store(h, 4, 0) else { buffer.free(h); drop(too_long); }
    buffer.attach(h, n as bit<16>);
    next;
}
block f { forward(0); }
pipeline p { stage r = rx; stage s = f; r -> s; }
"""


def test_an_unaligned_constant_store_is_an_error_at_its_location() -> None:
    program = compile_source(UNALIGNED, "unaligned.mbl")
    with pytest.raises(CompileError) as info:
        compile_me(program, "p", LM_WINDOW_ABI)
    (d,) = info.value.diagnostics
    assert d.kind == "unsupported" and "multiple of 8" in d.message
    assert (d.location.file, d.location.line) == ("unaligned.mbl", 4)


ALLOC_IN_A_FORWARDING_BLOCK = """
block f {
    let h = buffer.alloc() else drop(no_buffer);
    buffer.free(h);
    forward(0);
}
"""


def test_buffer_operations_need_the_pool_s_body() -> None:
    program = compile_source(ALLOC_IN_A_FORWARDING_BLOCK, "alloc.mbl")
    compile_me(program, "f", LM_WINDOW_ABI)                   # the pool's body: fine
    with pytest.raises(CompileError) as info:
        compile_me(program, "f")                               # fwd.uc's: refused
    (d,) = info.value.diagnostics
    assert d.kind == "unsupported" and "pool mapping" in d.message
    assert (d.location.file, d.location.line) == ("alloc.mbl", 3)


def test_a_receive_stage_is_refused_for_the_forwarding_dispatch() -> None:
    with pytest.raises(CompileError) as info:
        compile_me(compile_file(MEDIA_POS_ROUTER), "media_pos_router")
    (d,) = info.value.diagnostics
    assert d.kind == "unsupported" and d.location.file.endswith("media_rx.mbl")
