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
from npkit.compiler.me.abi import LM_WINDOW_ABI, RX_TURN_LABEL, RX_TURN_RET
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
    # two buffer.store sites, each one dram[rbuf_rd] of 1..16 quadwords through a table
    counts = [int(c) for c in re.findall(r"dram\[rbuf_rd, --, \w+, \w+, (\d+)\]", uc)]
    assert sorted(counts) == sorted(list(range(1, 17)) * 2)
    assert len(re.findall(r"jump\[\w+, ", uc)) == 2
    # buffer.attach: the window (56 bytes) from the buffer into local memory
    assert len(re.findall(r"dram\[read, \$\$0, \w+, 0, 7\]", uc)) == 1
    # the receive stage's end: a call of the dispatch's turn routine, and on the paths that
    # jump there with scratch writes in flight an earlier call (test below)
    calls = uc.count(f"br[{RX_TURN_LABEL}#]")
    assert calls >= 1 and len(re.findall(rf"load_addr\[{RX_TURN_RET}, ", uc)) == calls
    # the window stays in local memory: $$ only between the attach's read and the copies
    assert set(re.findall(r"\$\$\d+", uc)) == {f"$${k}" for k in range(14)}
    assert not re.search(r"alu\[\$\$", uc)


def test_the_receive_stage_polls_its_waits_in_the_turn(media_build) -> None:
    """In the receive turn a wait polls (br_!signal) instead of sleeping: the turn passes
    without waiting for the ME's other contexts; after it, waits sleep as usual."""
    uc = media_build.body.uc
    polls = re.findall(r"(b_poll\d+)#:\n\s*br_!signal\[\d+, (b_poll\d+)#\]", uc)
    assert polls and all(a == b for a, b in polls)          # each spins on itself
    assert "ctx_arb[" in uc                                  # the later stages sleep
    # a block without a receive stage is compiled as before: no poll
    plain = compile_me(compile_file(REPO / "examples" / "pos_router" / "pos_router.mbl"),
                       None, LM_WINDOW_ABI).body.uc
    assert "br_!signal" not in plain


def test_the_receive_stage_s_scratch_writes_are_awaited_after_its_turn(media_build) -> None:
    """frame_rx's writes of its per-port state (rx_frame, rx_bytes) are issued in the turn
    and waited for once the turn has passed (buffers.select_turn_write): the first mpacket's
    two, a middle one's, the last one's and a too long frame's each by a sleeping wait right
    after a call of the turn routine, never by a poll in the turn (only the rare stale-frame
    path, whose write precedes the buffer.alloc, waits in the turn)."""
    uc = media_build.body.uc
    writes = re.findall(r"scratch\[write, \$\d+, \w+, \w+, 1\], sig_done\[(\d+)\]", uc)
    after_pass = re.findall(rf"br\[{RX_TURN_LABEL}#\]\n(b_rxturn\d+)#:\n\s*ctx_arb\[([\d, ]+)\]",
                            uc)
    slept = {int(sig) for _, sigs in after_pass for sig in sigs.split(", ")}
    assert len(after_pass) == 4 and {int(sig) for sig in writes} == slept
    assert any(sigs == f"{min(slept)}, {max(slept)}" for _, sigs in after_pass)   # the SOP's
    polled = [sig for sig in slept if f"br_!signal[{sig}, " in uc]
    assert len(polled) == 1 and len(re.findall(rf"br_!signal\[{polled[0]}, ", uc)) == 1


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
    assert {"dram rbuf_rd", "dram read", "sram enqueue"} <= set(stats.memory_detail)


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


def test_the_receive_turn_ends_right_after_the_receive_stage(media_build) -> None:
    fn = media_build.wir
    markers = [i for b in fn.blocks for i in b.instrs if isinstance(i, wir.RxTurnDone)]
    assert len(markers) == 1
    ret, before = _ret_reachable_without_marker(fn)
    assert not ret                           # every path passes the turn on
    rx_state = [i for b in fn.blocks for i in b.instrs
                if isinstance(i, wir.MemRead | wir.MemWrite | wir.MemAdd | wir.BufAttach)
                and i.loc is not None and i.loc.file.endswith("media_rx.mbl")]
    assert rx_state and all(id(i) in before for i in rx_state)
    routing = [i for b in fn.blocks for i in b.instrs if isinstance(i, wir.HdrRead)]
    assert routing and not any(id(i) in before for i in routing)


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
