"""Per-packet traces (issue 18, item 1 and acceptance 3) and the utilisation view (item 4).

A 10,000-frame run of the compiled examples/router with planted faults (bad IPv4
checksums, a foreign ethertype, TTL 1) is followed frame by frame; the journeys are checked
against what the tester saw (the frames out, with their wire cycles, and the drop counters),
every verdict against the MBL source text of its line, the trace file against the
trace-event format and its size cap.  The native target's journey is checked against these
in tests/runtime/test_native_packet_trace.py; the Perfetto trace processor is not used: it
downloads a binary at run time, which this machine cannot (tests/sim/test_perfetto_proto.py
checks the protobuf file instead).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from scapy.all import IP, UDP, Ether, IPv6, Raw

from npkit.bench import router4_load as r4l
from npkit.bench.compiled_load import ROUTER, tables
from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledResult, CompiledRun
from npkit.runtime.packet_trace import (
    FlowSpec,
    ProgramTrace,
    five_tuple,
    keep_filter,
    trace_program,
)
from npkit.sim import utilisation as util
from npkit.sim.packet_trace import Journey, Selection, TraceOptions, write_packet_trace

FRAMES_PER_PORT = 5000
CAP = 10_000_000
SOURCE = re.compile(r"^(?P<file>.+\.mbl):(?P<line>\d+):\d+$")


@cache
def _router() -> tuple[Any, Any]:
    """examples/router compiled and linked (2 forwarding MEs a port) once for the module:
    each run loads the manifest on a fresh chip (CompiledRun) and nothing writes to it."""
    program = compile_file(ROUTER)
    return program, link(program, compile_me(program, "router"), fwd_mes_per_port=2)


def _plant(frames: list[bytes], port: int) -> list[bytes]:
    """Every 97th frame a bad IPv4 checksum, every 89th IP version 5, every 83rd TTL 1 and
    every 79th a foreign ethertype (both exceptions), shifted per port so the ports differ."""
    out = []
    for i, f in enumerate(frames):
        b = bytearray(f)
        k = i + 7 * port
        if k % 97 == 0:
            b[24] ^= 0xFF
        elif k % 89 == 0 or k % 83 == 0:
            if k % 89 == 0:
                b[14] = 0x55
            else:
                b[22] = 1
            b[24:26] = b"\x00\x00"
            b[24:26] = _ipv4_checksum(bytes(b[14:34])).to_bytes(2, "big")
        elif k % 79 == 0:
            b[12:14] = b"\x88\xb5"
        out.append(bytes(b))
    return out


def _ipv4_checksum(header: bytes) -> int:
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class Traced:
    def __init__(self, trace: ProgramTrace, result: CompiledResult, run: CompiledRun,
                 frames: dict[int, list[bytes]]) -> None:
        self.trace, self.result, self.run, self.frames = trace, result, run, frames
        self.journeys = trace.journeys()
        self.blocks = set(_router()[0].blocks)


@pytest.fixture(scope="module")
def traced() -> Traced:
    program, linked = _router()
    workload = r4l.Workload.make(5, 300, FRAMES_PER_PORT, 64)
    frames = {p: _plant(f, p) for p, f in workload.frames.items()}
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    trace = trace_program(run.chip, run.program, Selection(max_events=4_000_000))
    result = run.run(frames, load=0.9)
    return Traced(trace, result, run, frames)


def test_ten_thousand_frames_every_one_followed(traced: Traced) -> None:
    assert sum(len(f) for f in traced.frames.values()) == 2 * FRAMES_PER_PORT == 10_000
    assert traced.trace.log.status()["lost"] == 0
    assert len(traced.journeys) == 10_000
    for j in traced.journeys.values():
        assert j.length == len(traced.frames[j.port][j.seq])


def test_journeys_match_what_the_tester_saw(traced: Traced) -> None:
    out = Counter((f.port, f.first_bit_cycle, f.last_bit_cycle, f.data)
                  for frames in traced.result.out.values() for f in frames)
    sent = [j for j in traced.journeys.values() if j.departed is not None]
    assert len(sent) == sum(out.values())
    # each departure is a frame the sink got, at the same wire cycles, with the length of
    # the frame that arrived (the router rewrites bytes, not lengths)
    by_wire = {k[:3]: k for k in out}
    assert len(by_wire) == len(out)
    departed = Counter()
    for j in sent:
        key = by_wire[(j.out_port, *j.departed)]
        assert len(key[3]) == j.length
        departed[key] += 1
    assert departed == out
    # drops: per reason, the counters the tester reads
    dropped = Counter(j.drop_reason for j in traced.journeys.values()
                      if j.departed is None and j.drop_reason is not None)
    want = Counter(traced.result.drops)
    for key, n in traced.result.receive_drops.items():
        want[re.sub(r"\d+$", "", key)] += n
    assert dropped == want
    assert want["bad_checksum"] > 0 and want["bad_version"] > 0
    # exceptions: a verdict, no departure, no drop counter
    exceptions = [j for j in traced.journeys.values()
                  if j.verdict is not None and j.verdict.label == "exception"]
    assert len(exceptions) == len(traced.result.exceptions) > 0
    assert all(j.departed is None and j.drop_reason is None for j in exceptions)
    # every frame accounted for exactly once
    assert len(sent) + sum(dropped.values()) + len(exceptions) == 10_000


def test_planted_frames_have_the_planted_outcome(traced: Traced) -> None:
    by_key = {(j.port, j.seq): j for j in traced.journeys.values()}
    for port, frames in traced.frames.items():
        for i in range(len(frames)):
            k = i + 7 * port
            j = by_key[(port, i)]
            if j.drop_reason in ("rx_no_buffer", "rbuf_full"):
                continue  # no buffer for it: dropped before the body looked
            if k % 97 == 0:
                assert j.drop_reason == "bad_checksum", (port, i, j.outcome)
            elif k % 89 == 0:
                assert j.drop_reason == "bad_version", (port, i, j.outcome)
            elif k % 83 == 0 or k % 79 == 0:
                assert j.verdict is not None and j.verdict.label == "exception", j.outcome


def _line_text(source: str) -> str:
    m = SOURCE.match(source)
    assert m, source
    return Path(m["file"]).read_text().splitlines()[int(m["line"]) - 1]


def test_every_verdict_names_its_mbl_line(traced: Traced) -> None:
    """A body verdict's trace point is the statement's MBL line: the line's text holds the
    verdict (and the drop's reason), read from the source file."""
    verdicts = received = 0
    for j in traced.journeys.values():
        if j.drop_reason in ("rx_no_buffer", "rbuf_full"):
            received += 1
            assert j.verdict is None  # dropped before any body ran
            continue
        assert j.verdict is not None and j.verdict_at is not None, j.outcome
        text = _line_text(traced.trace.source_of(j.verdict_at.me, j.verdict_at.pc))
        word = {"forward": "forward(", "drop": "drop(", "exception": "exception("}
        assert word[j.verdict.label] in text, (j.verdict.label, text)
        if j.drop_reason is not None:
            assert f"drop({j.drop_reason})" in text
        # the block the line is in, by the line's text, is a block of the program
        assert traced.trace.block_of(j.verdict_at.me, j.verdict_at.pc) in traced.blocks
        verdicts += 1
    assert verdicts == 10_000 - received > 5000


def _check_schema(doc: dict) -> Counter:
    """The trace-event format's rules for the phases we write."""
    assert set(doc) == {"displayTimeUnit", "otherData", "traceEvents"}
    phases: Counter = Counter()
    flows: dict[int, list[tuple[str, float]]] = {}
    open_async: dict[tuple[int, str], float] = {}
    complete: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for e in doc["traceEvents"]:
        ph = e["ph"]
        phases[ph] += 1
        assert isinstance(e["name"], str) and isinstance(e["pid"], int)
        if ph == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index")
            continue
        assert isinstance(e["ts"], float | int) and e["ts"] >= 0
        if ph == "X":
            assert e["dur"] >= 0 and isinstance(e["tid"], int)
            complete.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1e6), round((e["ts"] + e["dur"]) * 1e6)))
        elif ph in ("b", "e"):
            key = (e["id"], e["cat"])
            if ph == "b":
                assert key not in open_async
                open_async[key] = e["ts"]
            else:
                assert e["ts"] >= open_async.pop(key)
        elif ph in ("s", "t", "f"):
            flows.setdefault(e["id"], []).append((ph, e["ts"]))
            assert ph == "s" or e["bp"] == "e"
        elif ph == "i":
            assert e["s"] in ("t", "p", "g")
        elif ph == "C":
            assert all(isinstance(v, int | float) for v in e["args"].values())
        else:
            raise AssertionError(f"unexpected phase {ph}")
    assert not open_async
    for spans in complete.values():     # slices on one track nest or are disjoint
        spans.sort(key=lambda se: (se[0], -se[1]))
        stack: list[float] = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            assert not stack or end <= stack[-1], (start, end, stack[-1])
            stack.append(end)
    for steps in flows.values():
        kinds = [k for k, _ in steps]
        assert kinds[0] == "s" and kinds[-1] == "f" and set(kinds[1:-1]) <= {"t"}
        times = [t for _, t in steps]
        assert times == sorted(times)
    return phases


def test_trace_file_under_the_cap_and_well_formed(traced: Traced, tmp_path: Path) -> None:
    path = tmp_path / "packets.json"
    status = traced.trace.log.status()
    raw = traced.trace.log.utilisation_raw()
    counters = util.counter_events(raw, status["units"], status["bucket_cycles"],
                                   traced.run.chip.config.clock_hz)
    result = write_packet_trace(path, traced.journeys, traced.run.chip.config.clock_hz,
                                traced.trace.source_of, traced.run.chip.config.me_label,
                                TraceOptions(cap_bytes=CAP), status, counters)
    size = path.stat().st_size
    assert size == result.bytes <= CAP
    doc = json.loads(path.read_text())
    meta = doc["otherData"]
    assert meta["cap_bytes"] == CAP and meta["frames_selected"] == 10_000
    assert meta["frames_written"] == result.frames
    assert meta["cap_reached"] == (result.frames < 10_000)
    phases = _check_schema(doc)
    assert phases["C"] > 0 and phases["s"] == phases["f"] > 0
    # every verdict instant names an MBL line holding that verdict
    instants = [e for e in doc["traceEvents"] if e["ph"] == "i" and "verdict" in e["args"]]
    assert len(instants) > 0
    for e in instants:
        assert re.match(r"^[\w.]+\.mbl:\d+:\d+$", e["args"]["source"]), e


def test_filters_select_by_outcome(traced: Traced, tmp_path: Path) -> None:
    keep = keep_filter(verdict="bad_checksum")
    result = write_packet_trace(tmp_path / "bad.json", traced.journeys,
                                traced.run.chip.config.clock_hz, traced.trace.source_of,
                                options=TraceOptions(keep=keep))
    assert result.frames == traced.result.drops["bad_checksum"] and not result.truncated
    small = write_packet_trace(tmp_path / "small.json", traced.journeys,
                               traced.run.chip.config.clock_hz, traced.trace.source_of,
                               options=TraceOptions(cap_bytes=200_000))
    assert small.truncated and 0 < small.frames < 10_000
    assert (tmp_path / "small.json").stat().st_size <= 200_000
    assert json.loads((tmp_path / "small.json").read_text())["otherData"]["cap_reached"]


def test_utilisation_adds_up(traced: Traced) -> None:
    chip = traced.run.chip
    log = traced.trace.log
    units = log.status()["units"]
    raw = log.utilisation_raw()
    shares = util.me_shares(raw, log.baseline, units, chip.config.me_label)
    assert {s.me for s in shares} == set(traced.run.program.rx_mes + traced.run.program.fwd_mes
                                         + traced.run.program.tx_mes)
    for s in shares:
        # attached at cycle 0; an ME's own time ends within a burst of now (a running ME
        # is not brought up to now, its last instruction may pass it)
        assert abs(s.cycles - chip.now) <= 64
        assert sum(s.idle_waiting.values()) + s.idle_open == s.cycles - s.executing - s.stalled
        assert abs(sum(s.shares().values()) - 1) < 1e-9
    # the commands per unit in the series are the core's own unit counters
    counters = chip.counters()
    summary = util.unit_summary(raw, units)
    # every unit the core counted commands on (which SRAM channels depends on where the
    # linker placed the router's tables: link/sram.py)
    used = [name for name in ("scratch", "sram0", "sram1", "sram2", "sram3", "dram0", "dram1",
                              "dram2", "msf") if _unit_commands(counters, name)]
    assert len(used) >= 6
    for name in used:
        assert summary[name]["commands"] == _unit_commands(counters, name)
    assert "executing" in util.table(shares)


def _unit_commands(counters: dict, name: str) -> int:
    channels = counters["channels"]
    if name[-1].isdigit():                       # sram0, dram2: a list per kind
        return int(channels[name[:-1]][int(name[-1])]["commands"])
    return int(channels[name]["commands"])


def test_selection_and_core_event_cap() -> None:
    program, linked = _router()
    workload = r4l.Workload.make(5, 300, 200, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    trace = trace_program(run.chip, run.program, Selection(10, 40, ports=(1,), sample_every=3))
    run.run(workload.frames, load=0.5)
    frames = trace.journeys()
    assert sorted((j.port, j.seq) for j in frames.values()) == [(1, s) for s in range(10, 40, 3)]
    assert all(j.departed is not None for j in frames.values())

    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    trace = trace_program(run.chip, run.program, Selection(max_events=500))
    run.run(workload.frames, load=0.5)
    status = trace.log.status()
    assert status["recorded"] == 500 and status["lost"] > 0 and status["full_at"] > 0
    assert len(trace.log.events()) == 500


@pytest.mark.parametrize("pkt", [
    Ether() / IP(src="10.1.2.3", dst="192.0.2.9") / UDP(sport=1234, dport=53) / Raw(b"x" * 8),
    Ether() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=7, dport=9),
    Ether() / IP(src="10.1.2.3", dst="192.0.2.9", proto=1) / Raw(b"\x08\x00" + b"\x00" * 6),
])
def test_five_tuple_against_scapy(pkt: Ether) -> None:
    layer = pkt[IP] if IP in pkt else pkt[IPv6]
    ports = (pkt[UDP].sport, pkt[UDP].dport) if UDP in pkt else (None, None)
    proto = layer.proto if IP in pkt else layer.nh
    assert five_tuple(bytes(pkt)) == (layer.src, layer.dst, proto, *ports)
    pos = b"\xff\x03" + (b"\x00\x21" if IP in pkt else b"\x00\x57") + bytes(layer)
    assert five_tuple(pos) == five_tuple(bytes(pkt))
    spec = FlowSpec.parse(f"src={layer.src},proto={proto}")
    assert spec.matches(bytes(pkt)) and not FlowSpec.parse("dst=203.0.113.0/24").matches(
        bytes(pkt))


def test_flow_spec_errors() -> None:
    with pytest.raises(ValueError, match="keys are"):
        FlowSpec.parse("port=3")
    with pytest.raises(ValueError):
        FlowSpec.parse("src=not-an-address")


def test_journey_outcome_words() -> None:
    j = Journey(1, port=0, seq=0)
    assert j.outcome == "not seen to leave"
    j.drop_reason = "ttl"
    assert j.outcome == "dropped: ttl"


def _router_run(log: bool) -> tuple[list, dict]:
    program, linked = _router()
    workload = r4l.Workload.make(9, 300, 600, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    if log:
        trace_program(run.chip, run.program, Selection())
    result = run.run(workload.frames, load=0.95)
    frames = [(f.port, f.first_bit_cycle, f.last_bit_cycle, f.data)
              for q in sorted(result.out) for f in result.out[q]]
    return frames, run.chip.counters()


def test_the_log_changes_no_simulated_result() -> None:
    """Observation only: with every frame followed and the verdicts made trace points, the
    frames out (wire cycles, bytes) and every counter are those of a run without the log."""
    with_log, counters_log = _router_run(True)
    without, counters = _router_run(False)
    assert len(without) > 900  # frames did go through (973 with the Poptrie router)
    assert with_log == without
    assert counters_log == counters


def test_thread_timeline_names_what_a_sleeping_context_waits_on(tmp_path: Path) -> None:
    """With the thread timeline on, its sleeping spans name the unit awaited; per context and
    unit their cycles are the probe's own sleeping counters (two separate recordings)."""
    program, linked = _router()
    workload = r4l.Workload.make(9, 300, 150, 64)
    run = CompiledRun(linked, trace=True)
    run.load_memories(tables(program, workload))
    run.run(workload.frames, load=0.5)
    path = tmp_path / "threads.json"
    run.chip.write_trace(path)
    spans = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    named: Counter = Counter()
    for e in spans:
        if e["name"].startswith("sleeping: "):
            unit = e["name"].removeprefix("sleeping: ")
            named[(e["pid"], e["tid"], unit)] += e["args"]["end_cycle"] - e["args"]["start_cycle"]
    assert named and {u for _, _, u in named} >= {"dram0", "scratch", "media"}
    log = run.chip.frame_log
    units = log.status()["units"]
    counted: Counter = Counter()
    for m in log.utilisation_raw()["mes"]:
        for ctx, per_unit in enumerate(m["ctx_sleeping"]):
            for u, cycles in enumerate(per_unit):
                if cycles:
                    counted[(m["me"], ctx, units[u])] = cycles
    assert named == counted


def test_trace_points_in_a_snapshot_restore_without_a_log() -> None:
    """A snapshot taken with trace points set, restored after the log was detached, runs its
    instructions' own semantics: the same frames out as a chip that never had a log."""
    program, linked = _router()
    workload = r4l.Workload.make(9, 300, 300, 64)

    def fresh() -> CompiledRun:
        run = CompiledRun(linked)
        run.load_memories(tables(program, workload))
        return run

    plain = fresh()
    want = plain.run(workload.frames, load=0.8)
    run = fresh()
    trace = trace_program(run.chip, run.program, Selection())
    assert trace.points
    snap = run.chip.snapshot()
    run.chip.disable_frame_log()
    run.chip.restore(snap)
    got = run.run(workload.frames, load=0.8)
    key = lambda r: [(f.port, f.first_bit_cycle, f.last_bit_cycle, f.data)  # noqa: E731
                     for q in sorted(r.out) for f in r.out[q]]
    assert len(key(want)) > 400 and key(got) == key(want)
    assert run.chip.counters() == plain.chip.counters()
