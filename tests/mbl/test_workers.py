"""npkit.compiler.mbl.workers: N worker threads, each running its queue's packets to
completion; the results against one program running every packet in arrival order."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.all import IP, UDP, Ether, raw

from npkit.compiler.mbl import NativeProgram, compile_file, compile_source
from npkit.compiler.mbl.native import NativeError
from npkit.compiler.mbl.workers import NativeWorkers, steer, written_spaces
from npkit.runtime.rss import MICROSOFT_KEY, program_rss, spread_reta

REPO = Path(__file__).resolve().parents[2]

# Per-flow state: each packet carries the number of packets of its flow (UDP source port)
# that the program saw before it, so a packet processed out of its flow's order, or by a
# worker without the flow's earlier packets, carries a wrong number.
COUNTING = """
import "std/headers.mbl";
header seq_t { v: bit<32>; }
register seen : bit<32> [4096] in sram;
counter pkts [2] in scratch;
table port_of : hash(bit<32>) -> bit<16> [64] in sram;
block b {
    let ip = packet<ipv4_t>(14) else drop(runt);
    let u = packet<udp_t>(34) else drop(runt);
    let s = packet<seq_t>(42) else drop(runt);
    s.v = seen.add(u.src_port as bit<32>, 1);
    pkts.count(0);
    let port = port_of.lookup(ip.dst) else forward(0);
    forward(port);
}
"""


def _program() -> NativeProgram:
    return NativeProgram(compile_source(COUNTING, "counting.mbl"), "b")


@pytest.fixture(scope="module")
def rss() -> NativeProgram:
    program = NativeProgram(compile_file(REPO / "microblocks" / "rss.mbl"), "rss_steer")
    program_rss(program, MICROSOFT_KEY, reta=spread_reta(4))
    return program


def _frame(flow: int, dst: int) -> bytes:
    return raw(Ether() / IP(src="10.0.0.1", dst=f"192.168.0.{dst}")
               / UDP(sport=flow, dport=53) / bytes(8))


@pytest.fixture(scope="module")
def loaded() -> NativeProgram:
    program = _program()
    program.table_add("port_of", 0xC0A80002, 5)
    return program


@settings(max_examples=25, deadline=None)
@given(workers=st.integers(1, 3), arrivals=st.lists(st.integers(1, 40), max_size=300))
def test_workers_match_one_program_and_keep_flow_order(rss, loaded, workers, arrivals):
    # a flow: one UDP source port, to one destination (so RSS sees one 4-tuple)
    packets = [_frame(flow, flow % 3 + 1) for flow in arrivals]
    single = loaded.replica()  # fresh memories: copies of the loaded, unused program
    pool = NativeWorkers(loaded.replica(), workers)
    expected = single.run(packets, 1)
    run = pool.run(packets, 1, steer(rss, packets, [1] * len(packets)))
    assert run.verdicts == expected
    assert pool.read_total("pkts", 0) == len(packets)
    # every worker ran its packets in arrival order, and a flow stayed on one worker
    owner: dict[int, int] = {}
    for w, order in enumerate(run.order):
        assert order == sorted(order)
        for i in order:
            assert owner.setdefault(arrivals[i], w) == w
    assert sorted(i for order in run.order for i in order) == list(range(len(packets)))


def test_queues_map_to_workers_and_each_changes_every_replica():
    pool = NativeWorkers(_program(), 2)
    pool.each(lambda p: p.table_add("port_of", 0xC0A80003, 7))
    packets = [_frame(9, 3)] * 4
    run = pool.run(packets, 0, [0, 1, 2, 3])
    assert [v.port for v in run.verdicts] == [7] * 4
    assert run.order == [[0, 2], [1, 3]]
    assert [p.read("pkts", 0) for p in pool.programs] == [2, 2]
    # replicas have their own memories: worker 1 saw flow 9 twice, as worker 0 did
    assert [int.from_bytes(v.data[42:46], "big") for v in run.verdicts] == [0, 0, 1, 1]


def test_steering_drops_reach_no_worker():
    fd = NativeProgram(compile_file(REPO / "microblocks" / "flow_director.mbl"), "fd_steer")
    from npkit.runtime.flow_director import L4, Action, FlowDirector, FlowKey
    program_rss(fd, MICROSOFT_KEY, reta=spread_reta(2))
    FlowDirector(fd).insert(FlowKey(0x0A000001, 0xC0A80001, 5, 53, L4.UDP), Action(drop=True))
    packets = [_frame(5, 1), _frame(6, 1)]
    pool = NativeWorkers(_program(), 2)
    run = pool.run(packets, 0, steer(fd, packets, [0, 0]))
    assert run.verdicts[0].kind == "drop" and run.verdicts[0].reason == "fd_drop"
    assert run.verdicts[1].kind == "forward"
    assert pool.read_total("pkts", 0) == 1


def test_bad_arguments():
    with pytest.raises(NativeError):
        NativeWorkers(_program(), 0)
    with pytest.raises(NativeError):
        NativeWorkers(_program(), 2).run([_frame(1, 1)], 0, [0, 1])


# Reads its tables (sram) and counts in scratch: the tables can be one copy for all workers.
READ_ONLY_TABLES = """
import "std/headers.mbl";
counter pkts [2] in scratch;
table port_of : hash(bit<32>) -> bit<16> [64] in sram;
block b {
    let ip = packet<ipv4_t>(14) else drop(runt);
    pkts.count(0);
    let port = port_of.lookup(ip.dst) else forward(0);
    forward(port);
}
"""


def test_written_spaces_from_the_code():
    assert written_spaces(compile_source(COUNTING, "counting.mbl")) == {"sram", "scratch"}
    assert written_spaces(compile_source(READ_ONLY_TABLES, "ro.mbl")) == {"scratch"}
    assert written_spaces(compile_file(REPO / "examples" / "router" / "router.mbl")) == \
        {"scratch"}


def test_read_only_spaces_are_shared_and_written_ones_are_not():
    program = NativeProgram(compile_source(READ_ONLY_TABLES, "ro.mbl"), "b")
    with NativeWorkers(program, 2) as pool:
        assert pool.shared == {"sram", "local"}
        a, b = pool.programs
        assert a.memory["sram"] is b.memory["sram"]
        assert a.memory["scratch"] is not b.memory["scratch"]
        pool.each(lambda p: p.table_add("port_of", 0xC0A80003, 7))  # twice on one copy
        pool.each(lambda p: p.table_add("port_of", 0xC0A80003, 9))
        run = pool.run([_frame(9, 3)] * 4, 0, [0, 1, 2, 3])
        assert [v.port for v in run.verdicts] == [9] * 4
        assert [p.read("pkts", 0) for p in pool.programs] == [2, 2]
        assert pool.read_total("pkts", 0) == 4
        slot = next(i for i in range(64) if pool.programs[0].read("port_of", i))
        once = pool.programs[0].read("port_of", slot) & 0xFFFFFFFF  # shared: counted once
        assert pool.read_total("port_of", slot) == once
    with NativeWorkers(NativeProgram(compile_source(READ_ONLY_TABLES, "ro.mbl"), "b"), 2,
                       share=False) as pool:
        assert pool.shared == frozenset()
        assert pool.programs[0].memory["sram"] is not pool.programs[1].memory["sram"]
    # the per-flow program writes sram (its register): nothing shared, as before
    assert NativeWorkers(_program(), 2).shared == {"local"}


def test_helper_threads_persist_report_errors_and_stop():
    pool = NativeWorkers(_program(), 3)
    assert [t.name for t in pool.threads] == ["npkit-worker-1", "npkit-worker-2"]
    assert all(t.is_alive() for t in pool.threads)
    packets = [_frame(f, 1) for f in range(30)]
    plan = pool.lay_out(packets, [0] * 30, [f % 3 for f in range(30)])
    timings = pool.execute(plan)
    assert [t.packets for t in timings] == [10, 10, 10]
    assert all(0 <= t.start <= t.end and t.cpu >= 0 for t in timings)
    assert pool.execute(pool.lay_out(packets, [0] * 30, [0] * 30))[1].packets == 0
    broken = pool.lay_out(packets, [0] * 30, [f % 3 for f in range(30)])
    broken.batches[2][0].buf = None  # a helper thread fails on it
    with pytest.raises(AttributeError):
        pool.execute(broken)
    helpers = pool.threads
    pool.close()
    assert not any(t.is_alive() for t in helpers)
    with pytest.raises(NativeError):
        pool.execute(plan)


def test_an_unused_pool_is_collected_with_its_threads():
    pool = NativeWorkers(_program(), 2)
    pool.run([_frame(1, 1)], 0, [1])
    [thread] = pool.threads
    del pool
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()
