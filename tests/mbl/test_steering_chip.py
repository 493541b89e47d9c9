"""RSS and Flow Director on the simulated IXP2800 (ME backend, linked, run by
npkit.runtime.compiled): Microsoft's published RSS values (the rows of tests/mbl/test_rss.py)
and a filter hit, the same as on the native target.

The pipelines: rss, or flow_director, then a stage that writes meta.queue and meta.flow_id
into the Ethernet source address (with no filter, flow_director's packets all miss and take
the RSS path)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.all import IP, TCP, Ether, IPv6, raw
from test_rss import MS_IPV4, MS_IPV6

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.flow_director import L4, Action, FlowDirector, FlowKey
from npkit.runtime.rss import ADDRS, MICROSOFT_KEY, PacketType, program_rss, spread_reta

REPO = Path(__file__).resolve().parents[2]
SOURCE = f"""
import "{REPO / 'microblocks' / 'flow_director.mbl'}";
block show_ids {{
    let eth = packet<ethernet_t>(0) else drop(runt);
    eth.src = (meta.queue as bit<48>) << 32 | meta.flow_id as bit<48>;
    forward(meta.in_port);
}}
pipeline steer_probe {{
    stage fd = flow_director;
    stage show = show_ids;
    fd -> show;
}}
pipeline rss_probe {{
    stage hash = rss;
    stage show = show_ids;
    hash -> show;
}}
"""
QUEUES = 4


@pytest.fixture(scope="module")
def program():
    return compile_source(SOURCE, "steer_probe.mbl")


@pytest.fixture(scope="module", params=["rss_probe", "steer_probe"])
def built(program, request):
    return program, request.param, link(program, compile_me(program, request.param),
                                        "ixp2800-2x10gbe")


def _frames() -> list[bytes]:
    out = []
    for dst, dport, src, sport, _, _ in MS_IPV4:
        out.append(raw(Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport)))
    for dst, dport, src, sport, _, _ in MS_IPV6:
        out.append(raw(Ether() / IPv6(src=src, dst=dst) / TCP(sport=sport, dport=dport)))
    return out


def _on_chip(built, configure) -> list[tuple[int, int]]:
    """(queue, flow id) of every frame out of the chip, in order (one input port)."""
    program, pipeline, linked = built
    native = NativeProgram(program, pipeline)
    configure(native)
    run = CompiledRun(linked)
    run.load_memories(native)
    result = run.run({0: _frames()}, load=0.2)
    native_out = [(v.data[6:8], v.data[8:12]) for v in native.run(_frames())]
    chip_out = [(f[6:8], f[8:12]) for f in result.frames(0)]
    assert chip_out == native_out
    return [(int.from_bytes(q, "big"), int.from_bytes(h, "big")) for q, h in chip_out]


def test_microsoft_values_on_the_chip_with_and_without_ports(built):
    def four_tuple(native):
        program_rss(native, MICROSOFT_KEY, reta=spread_reta(QUEUES))
        FlowDirector(native)

    def addresses(native):
        program_rss(native, MICROSOFT_KEY, {t: ADDRS for t in PacketType},
                    reta=spread_reta(QUEUES))
        FlowDirector(native)

    rows = MS_IPV4 + MS_IPV6
    assert _on_chip(built, four_tuple) == [((r[5] & 127) % QUEUES, r[5]) for r in rows]
    assert _on_chip(built, addresses) == [((r[4] & 127) % QUEUES, r[4]) for r in rows]


def test_a_filter_hit_on_the_chip(program):
    built = program, "steer_probe", link(program, compile_me(program, "steer_probe"),
                                         "ixp2800-2x10gbe")
    dst, dport, src, sport, _, _ = MS_IPV4[2]

    def one_filter(native):
        program_rss(native, MICROSOFT_KEY, reta=spread_reta(QUEUES))
        key = FlowKey(int.from_bytes(bytes(map(int, src.split("."))), "big"),
                      int.from_bytes(bytes(map(int, dst.split("."))), "big"), sport, dport, L4.TCP)
        FlowDirector(native, 16).insert(key, Action(queue=9, mark=0xFEED, counter=3))

    out = _on_chip(built, one_filter)
    assert out[2] == (9, 0xFEED)
    assert out[0] == ((MS_IPV4[0][5] & 127) % QUEUES, MS_IPV4[0][5])
