"""The debugger (runtime/debugger.py) on the compiled dual-stack router: a drop-reason
breakpoint stops in the context that holds the dropped frame, and that frame is the one the
native target drops for that reason; checkpoints replay exactly; stepping by MBL line
follows one packet through its block; coverage comes out as lcov with the executed and the
never-executed lines where the traffic says they must be."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from scapy.all import IP, UDP, Ether, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.coverage import Coverage, parse_lcov
from npkit.runtime.debug_condition import ConditionError
from npkit.runtime.debugger import DebugError, Debugger
from npkit.runtime.lpm import RouteTables

ROOT = Path(__file__).parents[2]
ROUTER = ROOT / "examples" / "router" / "router.mbl"
ROUTES4 = {(0x0A000000, 8): 1, (0x0A010000, 16): 2}
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 0, 1500)}
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}


@pytest.fixture(scope="module")
def router():
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    native = NativeProgram(program)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(ROUTES4, {})
    return linked, native


def v4(dst: str, ident: int, **kw) -> bytes:
    return raw(Ether(**MACS) / IP(src="198.18.0.1", dst=dst, id=ident, **kw)
               / UDP(sport=1, dport=2) / (b"p" * 18))


def bad_checksum(dst: str, ident: int) -> bytes:
    return raw(Ether(**MACS) / IP(src="198.18.0.1", dst=dst, id=ident, chksum=0x1234)
               / UDP(sport=1, dport=2) / (b"p" * 18))


FRAMES = [v4("10.1.2.3", 1), v4("10.2.3.4", 2), bad_checksum("10.1.2.3", 3),
          v4("10.1.0.7", 4), v4("10.9.9.9", 5, ttl=1), bad_checksum("10.2.0.1", 6),
          v4("10.1.2.4", 7), v4("10.3.3.3", 8)]


def debugger(router) -> Debugger:
    linked, native = router
    run = CompiledRun(linked)
    run.load_memories(native)
    dbg = Debugger(run.chip, run.program)
    dbg.offer(0, FRAMES)
    return dbg


def test_a_drop_breakpoint_stops_in_the_context_holding_the_dropped_frame(router) -> None:
    native = router[1]
    verdicts = native.run(FRAMES, in_ports=0)
    dropped = [k for k, v in enumerate(verdicts)
               if v.kind == "drop" and v.reason == "bad_checksum"]
    assert dropped == [2, 5]   # the native target's verdicts, frame by frame
    dbg = debugger(router)
    bp = dbg.break_drop("bad_checksum")
    for k in dropped:
        stop = dbg.cont()
        assert stop.reason == "drop" and stop.breakpoint == bp.id, stop.describe()
        assert stop.me in dbg.program.fwd_mes
        assert dbg.packet(stop.me, stop.ctx) == FRAMES[k]
    assert dbg.drop_counts()["bad_checksum"] == 2
    final = dbg.cont(max_cycles=200_000)
    assert final.reason == "cycles"    # no third one


def test_the_dissection_is_scapys(router) -> None:
    dbg = debugger(router)
    dbg.break_drop("bad_checksum")
    stop = dbg.cont()
    text = dbg.dissect(stop.me, stop.ctx)
    assert "chksum    = 0x1234" in text and "dst       = 10.1.2.3" in text


def state(dbg: Debugger) -> tuple:
    chip = dbg.chip
    h = hashlib.sha256()
    for ch in range(chip.config.sram_channels):
        h.update(chip.sram(ch).tobytes())
    h.update(chip.dram().tobytes())
    h.update(chip.scratch().tobytes())
    out = [(f.port, f.first_bit_cycle, f.last_bit_cycle, f.data) for f in dbg.output()]
    contexts = [dbg.chip.context_state(me, c) for me in dbg.loaded_mes() for c in range(8)]
    return chip.now, chip.counters(), h.hexdigest(), out, contexts


def test_reverse_to_a_checkpoint_replays_exactly(router) -> None:
    dbg = debugger(router)
    assert dbg.cont(max_cycles=301).reason == "cycles"   # before the first frame is in
    dbg.checkpoint()
    end = dbg.chip.now + 40_000
    dbg.cont(max_cycles=40_000)
    first = state(dbg)
    assert len(first[3]) == 5, "the five forwarded frames left"
    dbg.reverse()
    dbg.cont(max_cycles=40_000)
    assert state(dbg) == first
    # and through breakpoints: the same stops, the same end
    dbg.reverse()
    dbg.break_drop("bad_checksum")
    stops = [dbg.cont(max_cycles=end - dbg.chip.now) for _ in range(3)]
    assert [s.reason for s in stops] == ["drop", "drop", "cycles"]
    assert state(dbg) == first


def test_breakpoints_on_lines_labels_and_bad_requests(router) -> None:
    dbg = debugger(router)
    bp = dbg.break_line("ipv4_fwd.mbl:68")
    assert set(bp.pcs) == set(dbg.program.fwd_mes)
    stop = dbg.cont()
    assert stop.reason == "breakpoint" and "ipv4_fwd.mbl:68" in (stop.source or "")
    assert "ipv4_fwd.mbl:68" in dbg.where(stop.me, stop.ctx)
    dbg.delete(bp.id)
    with pytest.raises(DebugError, match="no instruction"):
        dbg.break_line("ipv4_fwd.mbl:27")     # a comment
    with pytest.raises(DebugError, match="no loaded image"):
        dbg.break_line("nosuch.mbl:3")
    with pytest.raises(DebugError, match="no drop reason"):
        dbg.break_drop("bad_karma")
    with pytest.raises(DebugError, match="unknown register"):
        dbg.reg(stop.me, stop.ctx, "q7")
    label = dbg.break_label("drop_count")
    stop = dbg.cont()
    assert stop.reason == "breakpoint" and stop.breakpoint == label.id
    assert dbg.packet(stop.me, stop.ctx) == FRAMES[2]


def test_step_line_walks_one_packet_through_mbl_lines(router) -> None:
    dbg = debugger(router)
    dbg.break_line("ipv4_fwd.mbl:68")
    stop = dbg.cont()
    me, ctx = stop.me, stop.ctx
    for bp in list(dbg.breakpoints):
        dbg.delete(bp)
    frame = dbg.packet(me, ctx)
    lines, moved_on = [68], False
    for _ in range(200):
        stop = dbg.step_line(me, ctx)
        assert stop.reason == "step"
        file, line = dbg.info(me).line_of(dbg.context(me, ctx)["pc"])
        assert file.endswith(".mbl")
        if dbg.packet(me, ctx) != frame:   # the context has moved on to its next frame
            moved_on = True
            break
        if file.endswith("ipv4_fwd.mbl"):
            lines.append(line)
    assert moved_on
    # frame 0 is forwarded: ipv4_fwd's checks in order, then into ipv4_route (line 30 on,
    # inlined), no drop taken, and the block's end (the forwarded counter, line 101)
    assert lines[:6] == [68, 69, 71, 72, 73, 30]
    assert 79 not in lines and lines[-1] == 101


def test_coverage_lcov_marks_executed_and_unexecuted_lines(router, tmp_path) -> None:
    dbg = debugger(router)
    dbg.chip.enable_coverage()
    dbg.cont(max_cycles=120_000)
    path = tmp_path / "run.info"
    dbg.coverage().write_lcov(path)
    lines = parse_lcov(path.read_text())
    v4 = next(v for f, v in lines.items() if f.endswith("microblocks/ipv4_fwd.mbl"))
    v6 = next(v for f, v in lines.items() if f.endswith("microblocks/ipv6_fwd.mbl"))
    assert v4[69] == len(FRAMES)              # every frame is IPv4: the ethertype check
    assert all(count == 0 for count in v6.values())   # no IPv6 frame was sent
    assert sum(v6.values()) == 0 and len(v6) > 10
    rx = next(v for f, v in lines.items() if f.endswith("rx_eth.uc"))
    assert max(rx.values()) >= len(FRAMES)


def test_coverage_summary_counts_what_the_lcov_file_holds(tmp_path) -> None:
    """A file that is gone (a linker's temporary body .uc) is in neither the lcov file nor
    the summary that `npkit run --coverage` and bench/coverage_pos.py print, unless asked."""
    real = tmp_path / "kept.mbl"
    real.write_text("a\nb\nc\n")
    gone = str(tmp_path / "gone" / "body.uc")
    cov = Coverage({str(real): {1: 4, 2: 0, 3: 1}, gone: {7: 0, 8: 2}})
    written = {str(Path(f).resolve()): (sum(1 for c in v.values() if c), len(v))
               for f, v in parse_lcov(cov.to_lcov()).items()}
    assert written == {str(real.resolve()): (2, 3)}
    assert {str(Path(f).resolve()): n for f, n in cov.summary().items()} == written
    assert cov.summary(missing_files=True) == {str(real): (2, 3), gone: (1, 2)}


SPIN_AND_FAULT = """\
.me 1
.reg count
.reg $x
.sig s
    immed[count, 0]
loop#:
    alu[count, count, +, 1]
    alu[--, count, -, 5]
    bne[loop#]
    immed[a0, 0x8000]
    scratch[read, $x, a0, 0, 1], ctx_swap[s]
    ctx_arb[kill]
"""


def test_hand_written_microcode_labels_registers_and_a_fault() -> None:
    from npkit.compiler.uc.assembler import assemble_text
    from npkit.sim.chip import Chip

    chip = Chip("ixp2800", seed=1)
    chip.load(assemble_text(SPIN_AND_FAULT, "spin.uc"))
    dbg = Debugger(chip)
    dbg.break_label("loop")
    stop = dbg.cont()
    assert stop.reason == "breakpoint" and stop.source == "spin.uc:7:5" and stop.me == 1
    counts = [dbg.reg(1, stop.ctx, "count")]
    for _ in range(4):                    # context 0 loops 5 times before the others run
        assert dbg.cont().ctx == stop.ctx
        counts.append(dbg.reg(1, stop.ctx, "count"))
    assert counts == [0, 1, 2, 3, 4]
    dbg.delete(1)
    with pytest.raises(DebugError, match="linked MBL program"):
        dbg.break_drop("anything")
    fault = dbg.cont()
    assert fault.reason == "fault" and fault.source == "spin.uc:11:5"
    assert fault.detail.startswith("bad_address")


@pytest.mark.parametrize(("condition", "expected"), [
    ("packet.IP.id == 5", 4),                          # a field as a number
    ("packet.IP.dst == 10.1.0.7", 3),                  # as text (scapy's spelling)
    ("packet.IP.id >= 7 and packet.ttl == 64", 6),     # both must hold
])
def test_a_conditional_breakpoint_stops_at_the_frame_it_names(router, condition: str,
                                                               expected: int) -> None:
    dbg = debugger(router)
    bp = dbg.break_line("ipv4_fwd.mbl:68")             # every IPv4 frame runs this line
    dbg.set_condition(bp.id, condition)
    stop = dbg.cont()
    assert stop.reason == "breakpoint" and stop.breakpoint == bp.id, stop.describe()
    assert dbg.packet(stop.me, stop.ctx) == FRAMES[expected]


def test_a_condition_that_never_holds_lets_every_frame_through(router) -> None:
    dbg = debugger(router)
    bp = dbg.break_line("ipv4_fwd.mbl:68")
    dbg.set_condition(bp.id, "packet.IP.id == 99")
    assert dbg.cont(max_cycles=60_000).reason == "cycles"
    assert len(dbg.output()) == 5                      # as without the breakpoint
    dbg.set_condition(bp.id, None)                     # removed: the next frame stops
    assert dbg.breakpoints[bp.id].condition is None


def test_conditions_that_cannot_be_read_or_evaluated(router) -> None:
    dbg = debugger(router)
    bp = dbg.break_line("ipv4_fwd.mbl:68")
    with pytest.raises(ConditionError, match="expected NAME OP VALUE"):
        dbg.set_condition(bp.id, "ttl is 1")
    arrivals = dbg.break_packet(3)
    with pytest.raises(DebugError, match="packet breakpoint stops no context"):
        dbg.set_condition(arrivals.id, "a0 == 1")
    dbg.delete(arrivals.id)
    with pytest.raises(DebugError, match="no breakpoint 99"):
        dbg.set_condition(99, "a0 == 1")
    # evaluated where it fires: a name nothing knows stops there and says why
    dbg.set_condition(bp.id, "nosuch == 3")
    stop = dbg.cont()
    assert stop.reason == "breakpoint" and "not evaluated: unknown register 'nosuch'" \
        in stop.detail
    dbg.set_condition(bp.id, "packet.IP.dst > 3")
    assert "only == and != compare it" in dbg.cont().detail
