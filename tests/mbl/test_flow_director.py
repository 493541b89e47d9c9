"""microblocks/flow_director.mbl and npkit.runtime.flow_director against a separately written
dictionary model: insert, delete, collisions, full buckets, miss -> RSS, every action and the
counters, on the native target."""

from __future__ import annotations

import ipaddress
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import IP, TCP, UDP, Ether, raw

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.runtime.flow_director import (
    L4,
    Action,
    FlowDirector,
    FlowDirectorError,
    FlowKey,
)
from npkit.runtime.rss import MICROSOFT_KEY, program_rss, spread_reta, toeplitz

REPO = Path(__file__).resolve().parents[2]
RSS_QUEUES = 16

# The steering pipeline plus a last stage that shows meta.flow_id (mark or RSS hash) in the
# low 32 bits of the Ethernet source address (flow_id() reads it back).
PROBE = f"""
import "{REPO / 'microblocks' / 'flow_director.mbl'}";
block show_flow_id {{
    let eth = packet<ethernet_t>(0) else drop(runt);
    eth.src = (eth.src & 0xffff00000000) | meta.flow_id as bit<48>;
    forward(meta.in_port);
}}
pipeline fd_probe {{
    stage fd = flow_director;
    stage out = show_flow_id;
    fd -> out;
}}
"""


@pytest.fixture(scope="module")
def native() -> NativeProgram:
    program = NativeProgram(compile_source(PROBE, "fd_probe.mbl"), "fd_probe")
    program_rss(program, MICROSOFT_KEY, reta=spread_reta(RSS_QUEUES))
    return program


# ---- the model: a dict of filters, buckets of four by CRC-32 of the documented key ---------

def model_key(k: FlowKey) -> tuple[int, int, int, int]:
    """What the filter compares: the documented key (an OTHER flow's ports are not in it)."""
    ports = 0 if k.l4 == L4.OTHER else k.sport << 16 | k.dport
    return (k.src, k.dst, ports, 0x400 | k.l4)


def model_bucket(k: FlowKey, buckets: int) -> int:
    return zlib.crc32(struct.pack(">IIII", *model_key(k))) % buckets


def rss_expect(k: FlowKey) -> tuple[int, int]:
    """(queue, hash) by RSS with the default fields: 4-tuple for TCP/UDP, else addresses."""
    data = struct.pack(">II", k.src, k.dst)
    if k.l4 != L4.OTHER:
        data += struct.pack(">HH", k.sport, k.dport)
    h = toeplitz(data, MICROSOFT_KEY)
    return (h & 127) % RSS_QUEUES, h


def flow_id(v) -> int:
    return int.from_bytes(v.data[8:12], "big")


def frame(k: FlowKey) -> bytes:
    ip = IP(src=str(ipaddress.IPv4Address(k.src)), dst=str(ipaddress.IPv4Address(k.dst)))
    if k.l4 == L4.TCP:
        return raw(Ether() / ip / TCP(sport=k.sport, dport=k.dport))
    if k.l4 == L4.UDP:
        return raw(Ether() / ip / UDP(sport=k.sport, dport=k.dport))
    ip.proto = 47  # GRE: "other", no ports
    return raw(Ether() / ip / bytes(8))


keys = st.builds(FlowKey, src=st.integers(0, 3) | st.integers(0, 2**32 - 1),
                 dst=st.sampled_from([0x0A000001, 0xC0A80001]),
                 sport=st.integers(0, 2), dport=st.sampled_from([80, 443]),
                 l4=st.sampled_from(list(L4)))
actions = st.builds(Action, queue=st.integers(0, 255), drop=st.booleans(),
                    counter=st.none() | st.integers(0, 511),
                    mark=st.none() | st.integers(0, 2**32 - 1))
ops = st.lists(st.tuples(st.sampled_from(["insert", "insert", "delete"]), st.integers(0, 15),
                         actions), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(buckets=st.sampled_from([1, 2, 4, 2048]),
       pool=st.lists(keys, min_size=1, max_size=16, unique=True), script=ops,
       repeats=st.integers(1, 3))
def test_filters_against_the_dict_model(native, buckets, pool, script, repeats):
    fd = FlowDirector(native, buckets)
    fd.reset_counters()
    model: dict[tuple[int, ...], tuple[FlowKey, Action]] = {}
    for op, i, action in script:
        key = pool[i % len(pool)]
        mk = model_key(key)
        if op == "delete":
            assert fd.delete(key) == (mk in model)
            model.pop(mk, None)
            continue
        in_bucket = sum(model_bucket(k, buckets) == model_bucket(key, buckets)
                        for k, _ in model.values())
        if mk not in model and in_bucket == 4:
            with pytest.raises(FlowDirectorError):
                fd.insert(key, action)
            continue
        fd.insert(key, action)
        model[mk] = (key, action)
    assert len(fd) == len(model)

    packets = [k for k in pool for _ in range(repeats)]
    verdicts = native.run([frame(k) for k in packets], in_ports=2)
    counters: dict[int, int] = {}
    hits = 0
    for k, v in zip(packets, verdicts, strict=True):
        a = model.get(model_key(k), (None, None))[1]
        if a is None:
            queue, h = rss_expect(k)
            assert (v.kind, v.port, v.queue, flow_id(v)) == ("forward", 2, queue, h)
            continue
        hits += 1
        if a.counter is not None:
            counters[a.counter] = counters.get(a.counter, 0) + 1
        if a.drop:
            assert (v.kind, v.reason) == ("drop", "fd_drop")
            continue
        expect_id = a.mark if a.mark is not None else rss_expect(k)[1]
        assert (v.kind, v.port, v.queue, flow_id(v)) == ("forward", 2, a.queue, expect_id)
    for c in {a.counter for _, a in model.values() if a.counter is not None}:
        assert fd.counter(c) == counters.get(c, 0)
    assert fd.hits_and_misses() == (hits, len(packets) - hits)


def test_a_full_bucket_refuses_a_fifth_filter_and_frees_a_slot_on_delete(native):
    fd = FlowDirector(native, buckets=1)
    flows = [FlowKey(0x0A000001, 0x0A000002, p, 80) for p in range(5)]
    for k in flows[:4]:
        fd.insert(k, Action(queue=7))
    with pytest.raises(FlowDirectorError, match="full"):
        fd.insert(flows[4], Action(queue=7))
    assert fd.delete(flows[1]) and not fd.delete(flows[1])
    fd.insert(flows[4], Action(queue=9))
    v = native.run([frame(k) for k in flows])
    assert [x.queue for x in v] == [7, rss_expect(flows[1])[0], 7, 7, 9]


def test_ipv6_and_non_ip_go_to_rss(native):
    from scapy.all import IPv6
    fd = FlowDirector(native)
    fd.reset_counters()
    pkt = raw(Ether() / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=1, dport=2))
    [v] = native.run([pkt])
    h = toeplitz(ipaddress.IPv6Address("2001:db8::1").packed
                 + ipaddress.IPv6Address("2001:db8::2").packed + bytes([0, 1, 0, 2]))
    assert (v.kind, v.queue, flow_id(v)) == ("forward", (h & 127) % RSS_QUEUES, h)
    assert fd.hits_and_misses() == (0, 1)


def test_bad_actions_and_sizes_are_errors(native):
    with pytest.raises(FlowDirectorError):
        FlowDirector(native, buckets=3)
    fd = FlowDirector(native, buckets=4)
    for bad in (Action(queue=256), Action(counter=512), Action(mark=2**32)):
        with pytest.raises(FlowDirectorError):
            fd.insert(FlowKey(1, 2, 3, 4), bad)
    assert len(fd) == 0


def test_live_inserts_and_deletes_lose_and_misdirect_nothing(native):
    """A host thread inserts, changes and deletes filters while batches run (the JIT call
    releases the GIL, so the writes land in the middle of batches): every packet is forwarded,
    either by its own filter (one of its two actions) or by RSS, never by half a filter.  A
    smoke test: races are rare, so passing proves little (a run with 2 shared buckets once
    caught the block reading the header word field by field, a delete between the valid test
    and the action's reads giving queue 0; it reads the word once now)."""
    import threading

    # Each flow in a bucket of its own: a freed slot is only ever reused by its own flow.
    # (A slot reused by another flow while a packet is between reading the header word and
    # the key words is a race the design does not close: docs/steering.md.)
    fd = FlowDirector(native, buckets=2048)
    flows = [FlowKey(0x0A000001, 0x0A000002, p, 80, L4.UDP) for p in range(6)]
    assert len({model_bucket(k, 2048) for k in flows}) == len(flows)
    allowed = {}
    for i, k in enumerate(flows):
        queue, h = rss_expect(k)
        allowed[k] = {(queue, h), (100 + i, 0x1000 + i), (150 + i, 0x2000 + i)}
    stop = threading.Event()
    changes = 0

    def control_plane() -> None:
        nonlocal changes
        while not stop.is_set():
            for i, k in enumerate(flows):
                if k in fd and changes % 3 == 0:
                    fd.delete(k)
                else:
                    flip = changes % 2
                    try:
                        fd.insert(k, Action(queue=(100, 150)[flip] + i,
                                            mark=(0x1000, 0x2000)[flip] + i))
                    except FlowDirectorError:
                        pass  # this bucket is full now; the flow stays on RSS
                changes += 1

    writer = threading.Thread(target=control_plane)
    writer.start()
    try:
        packets = [k for _ in range(300) for k in flows]
        frames = [frame(k) for k in packets]
        for _ in range(20):
            for k, v in zip(packets, native.run(frames), strict=True):
                assert v.kind == "forward"
                assert (v.queue, flow_id(v)) in allowed[k]
    finally:
        stop.set()
        writer.join()
    assert changes > 100


class _Stepping(np.ndarray):
    """fd_table's words, running a check after every write the control plane makes."""

    after_write = None

    def __setitem__(self, index, value) -> None:
        super().__setitem__(index, value)
        if self.after_write is not None:
            self.after_write()


class _SteppingTarget:
    def __init__(self, native: NativeProgram, check) -> None:
        self.native = native
        self.check = check

    def region(self, name: str) -> np.ndarray:
        words = self.native.region(name)
        if name != "fd_table":
            return words
        stepping = words.view(_Stepping)
        stepping.after_write = self.check
        return stepping

    def write(self, name: str, index: int, value: int) -> None:
        self.native.write(name, index, value)

    def read(self, name: str, index: int) -> int:
        return self.native.read(name, index)


def test_every_intermediate_table_state_misdirects_nothing(native):
    """After each single write of inserts, changes and deletes (a deleted flow's slot reused
    by another flow), every flow's packet goes by its own filter's old or new action or by
    RSS: no state in between sends a packet by another flow's filter."""
    flows = [FlowKey(0x0A000001, 0x0A000002, p, 80, L4.UDP) for p in range(5)]
    allowed = {k: {rss_expect(k), (100 + i, 0x1000 + i), (150 + i, 0x2000 + i)}
               for i, k in enumerate(flows)}
    frames = [frame(k) for k in flows]
    checks = 0

    def check() -> None:
        nonlocal checks
        checks += 1
        for k, v in zip(flows, native.run(frames), strict=True):
            assert v.kind == "forward"
            assert (v.queue, flow_id(v)) in allowed[k], (k, v.queue, hex(flow_id(v)))

    fd = FlowDirector(_SteppingTarget(native, check), buckets=1)  # one bucket of 4 slots
    for i, k in enumerate(flows[:4]):
        fd.insert(k, Action(queue=100 + i, mark=0x1000 + i))
    fd.insert(flows[1], Action(queue=151, mark=0x2001))   # change in place
    fd.delete(flows[0])
    fd.insert(flows[4], Action(queue=104, mark=0x1004))   # reuses flow 0's slot
    fd.delete(flows[2])
    fd.insert(flows[0], Action(queue=150, mark=0x2000))   # reuses flow 2's slot
    assert checks >= 14
