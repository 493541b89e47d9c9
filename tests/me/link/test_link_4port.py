"""The ME linker on 4 ports (RFC 2544's 4-port configurations): the mapping fits the chip's
16 MEs and 16 scratch rings, and the compiled router (examples/router/router.mbl) on the
chip forwards, drops and raises exceptions frame for frame as the native target does,
with frames in on all 4 ports and next hops on all 4."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import ARP, IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.sema import Program
from npkit.compiler.me import MEBuild, compile_me
from npkit.link import LinkError, Manifest, for_ports, link, mapping
from npkit.runtime.compiled import CompiledResult, CompiledRun
from npkit.runtime.loader import chip_config_for
from npkit.runtime.lpm import RouteTables

from .harness import expected

ROUTER = Path(__file__).parents[3] / "examples" / "router" / "router.mbl"

PORTS = 4
# next hop h + 1 leaves on port h; 10.h.0.0/16 routes to it; 10.9.0.0/16 to port 7 (bad)
NEXTHOPS = {h + 1: (0x02AA00000000 + h, 0x02BB00000000 + h, h, 1500) for h in range(PORTS)}
NEXTHOPS[9] = (0x02AA00000009, 0x02BB00000009, 7, 1500)
ROUTES4 = {(0x0A000000 | h << 16, 16): h + 1 for h in range(PORTS)} | {(0x0A090000, 16): 9}
ROUTES6 = {(0x20010DB8 << 96 | h << 80, 48): h + 1 for h in range(PORTS)}
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}


@pytest.fixture(scope="module")
def router(tmp_path_factory) -> tuple[Manifest, NativeProgram, Program, MEBuild, str]:
    """(manifest, filled native tables, program, build, layout.h)"""
    program = compile_file(ROUTER)
    build = compile_me(program, "router")
    folder = tmp_path_factory.mktemp("link4")
    linked = link(program, build, "ixp2800-4x10gbe", build_dir=folder)
    native = NativeProgram(program)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(ROUTES4, ROUTES6)
    native.table_add("local4", 0x0A000001, 1)
    return linked, native, program, build, (folder / "layout.h").read_text()


def v4(dst: str, payload: int = 18, **kw) -> bytes:
    return raw(Ether(**MACS) / IP(src="198.18.0.1", dst=dst, **kw) / UDP(sport=1, dport=2)
               / (b"p" * payload))


def v6(dst: str, payload: int = 18, **kw) -> bytes:
    return raw(Ether(**MACS) / IPv6(src="2001:db8:ffff::1", dst=dst, **kw)
               / UDP(sport=1, dport=2) / (b"q" * payload))


def is_merge(out: list[bytes], inputs: list[list[bytes]]) -> bool:
    """out merges the inputs keeping each one's order (a search over positions)."""
    if len(out) != sum(map(len, inputs)):
        return False
    states = {(0,) * len(inputs)}
    for frame in out:
        states = {s[:k] + (s[k] + 1,) + s[k + 1:] for s in states
                  for k, seq in enumerate(inputs) if s[k] < len(seq) and seq[s[k]] == frame}
        if not states:
            return False
    return True


def check(result: CompiledResult, native: NativeProgram,
          frames: dict[int, list[bytes]]) -> None:
    out, drops, exceptions = expected(native, frames)
    assert result.receive_drops == {}
    for q in range(PORTS):
        by_input = out.get(q, {})
        assert is_merge(result.frames(q), [by_input.get(p, []) for p in range(PORTS)]), \
            f"port {q}: {len(result.frames(q))} frames out, expected " \
            f"{sum(map(len, by_input.values()))}"
    assert set(result.out) == set(range(PORTS))
    # the chip has no port >= 4: the dispatch drops those forwards as bad_port
    bad = sum(len(f) for q, by_input in out.items() if q >= PORTS for f in by_input.values())
    assert result.drops == dict(drops) | ({"bad_port": bad} if bad else {})
    got: dict[int, list[tuple[int, int, bytes]]] = {}
    for e in result.exceptions:
        got.setdefault(e.in_port, []).append((e.code, e.next_hop, e.frame))
    assert got == exceptions
    assert result.accounted == result.offered
    assert result.leak_free, [r.describe() for r in result.leaks]


def run(router, frames: dict[int, list[bytes]], load: float = 0.2) -> CompiledResult:
    linked, native = router[:2]
    chip = CompiledRun(linked)
    chip.load_memories(native)
    return chip.run(frames, load=load)


# --------------------------------------------------------------------------- the mapping
def test_four_ports_fit_sixteen_mes_without_sharing_one(router) -> None:
    rt = router[0].program
    assert rt.rx_mes == (0, 1, 2, 3)
    assert rt.fwd_mes == tuple(range(4, 12))
    assert rt.tx_mes == (12, 13, 14, 15)          # hardware 0x14..0x17: port = ME & 3
    assert [rt.chain(p) for p in range(PORTS)] == [(4, 5), (6, 7), (8, 9), (10, 11)]
    assert [me.me for me in mapping(router[0]).mes] == list(range(16))


def test_rings_freelists_and_counters_are_disjoint_and_fit_the_scratch(router) -> None:
    linked = router[0]
    rt = linked.program
    rings = sorted(linked.rings, key=lambda r: r.base_word)
    assert sorted(r.number for r in rings) == list(range(13))        # 16 on the chip
    for a, b in zip(rings, rings[1:], strict=False):
        assert a.base_word + a.size_words <= b.base_word
    assert rt.drop_counter_base >= 4 * (rings[-1].base_word + rings[-1].size_words)
    assert rt.drop_counter_base + 4 * rt.drop_counters <= 16384
    assert rt.rx_rings == ((0, 1), (2, 3), (4, 5), (6, 7))
    # every buffer of a port fits its RX ring; all received buffers fit one TX ring
    bufs = {f.count for f in linked.freelists}
    assert bufs == {64}
    size = {r.number: r.size_words for r in rings}
    assert all(size[r] >= 2 * 64 for r in range(8))
    assert all(size[8 + q] >= 4 * 64 for q in range(PORTS))
    assert size[12] >= 2 * 4 * 64
    queues = {(f.channel, f.queue) for f in linked.freelists}
    assert len(queues) == PORTS
    handles = [f.handle(i) & 0x03FFFFFF for f in linked.freelists for i in range(f.count)]
    assert len(set(handles)) == len(handles)        # the DRAM buffer follows from the offset
    # the descriptors clear of every SRAM memory (below the Poptries: link/sram.py)
    sram = [(m.address, m.address + m.bytes) for m in linked.program.memories
            if m.space == "sram"]
    for f in linked.freelists:
        low = (f.channel << 26) + f.descriptor_base
        high = low + f.count * f.descriptor_bytes
        assert all(end <= low or high <= start for start, end in sram)
    header = router[4]
    assert "#define TBUF_PART_ELEMENTS 0x10" in header   # 8192 / 4 / 128
    assert "#define TX_RING_EMPTY_3 SCR_Ring11_Empty" in header


def test_four_ports_refuse_more_forwarding_mes_than_fit(router) -> None:
    _linked, _native, program, build, _header = router
    with pytest.raises(LinkError, match="16 MEs"):
        link(program, build, "ixp2800-4x10gbe", fwd_mes_per_port=3)
    with pytest.raises(LinkError, match="2 or 4"):
        link(program, build, for_ports(("10gbe",) * 3))


# --------------------------------------------------------------------------- chip vs native
def mesh(p: int, count: int) -> list[bytes]:
    """Port p's frames to every output port in turn (the RFC 2544 full mesh)."""
    return [v4(f"10.{(p + k) % PORTS}.{p}.{k}", id=k) for k in range(count)]


def test_a_full_mesh_on_four_ports_matches_the_native_router(router) -> None:
    frames = {p: mesh(p, 24) for p in range(PORTS)}
    result = run(router, frames, load=0.3)
    check(result, router[1], frames)
    assert [len(result.out[q]) for q in range(PORTS)] == [24] * PORTS


RULES = [v4("10.2.3.4"), v4("10.3.2.1", ttl=1), v4("10.9.1.1"), v4("11.0.0.1"),
         v4("10.0.0.1"), v4("10.1.0.9", payload=1400, flags="DF"), v4("10.1.2.3")[:30],
         raw(Ether(**MACS) / ARP()), v6("2001:db8:3::9"), v6("2001:db8:2::9", hlim=1),
         v6("2002::1"), v4("10.3.0.7", payload=600)]


def test_every_rule_on_every_port_matches_the_native_router(router) -> None:
    frames = {p: RULES[p:] + RULES[:p] for p in range(PORTS)}
    result = run(router, frames)
    check(result, router[1], frames)
    assert result.drops.get("bad_port") == PORTS       # next hop 9 names port 7
    assert {e.in_port for e in result.exceptions} == set(range(PORTS))


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_frames_on_four_ports_match_the_native_router(router, data) -> None:
    def one(uid: int) -> bytes:
        net = data.draw(st.sampled_from(["10.0", "10.1", "10.2", "10.3", "10.9", "12.0"]))
        return v4(f"{net}.{uid >> 8 & 255}.{uid & 255}", id=uid,
                  ttl=data.draw(st.sampled_from([1, 64, 64])),
                  payload=data.draw(st.sampled_from([0, 18, 300, 1400])))
    frames = {p: [one(p << 12 | i) for i in range(data.draw(st.integers(0, 16)))]
              for p in range(PORTS)}
    check(run(router, frames), router[1], frames)


def test_four_port_kinds_give_the_chip_four_such_ports(router) -> None:
    _linked, _native, program, build, _header = router
    linked = link(program, build, "ixp2800-4x1gbe")
    assert [p.rate_bps for p in chip_config_for(linked).ports] == [1e9] * 4
    assert [p.rate_bps for p in chip_config_for(link(program, build, for_ports(
        ("1gbe",) * 4))).ports] == [1e9] * 4
    with pytest.raises(LinkError, match="3 ports"):
        for_ports(("1gbe",) * 3)


def test_the_rfc2544_device_links_four_ports_with_two_forwarding_mes_each() -> None:
    from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice

    device = CompiledChipDevice(ChipOptions(port_kinds=("10gbe",) * 4), fwd_mes_per_port=4)
    assert device.fwd_mes_per_port == 2
    assert len(device.linked.ports) == 4 and device.linked.program.fwd_mes_per_port == 2
