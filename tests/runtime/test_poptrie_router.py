"""The dual-stack router (examples/router/router.mbl) with Poptrie route tables
(microblocks/lpm_poptrie.mbl in place of lpm.mbl): the native target against a
brute-force longest match, and the compiled router on the simulated IXP2800 (real memory
sizes: 4 x 8 MB SRAM) against the native target, with updates applied between runs."""

from __future__ import annotations

import ipaddress
import random
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from lpm_reference import brute_force
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import RouteTables
from npkit.runtime.poptrie import Poptrie
from npkit.runtime.routes import default_next_hop

REPO = Path(__file__).parents[2]
PORTS = 2
HOPS = 8


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The router's sources with lpm.mbl replaced by the Poptrie walker."""
    root = tmp_path_factory.mktemp("poptrie_router")
    shutil.copytree(REPO / "microblocks", root / "microblocks")
    shutil.copy(REPO / "microblocks" / "lpm_poptrie.mbl", root / "microblocks" / "lpm.mbl")
    (root / "examples" / "router").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "router" / "router.mbl", root / "examples" / "router")
    return compile_file(root / "examples" / "router" / "router.mbl")


def random_routes(rng: random.Random, bits: int, count: int) -> dict[tuple[int, int], int]:
    bases = [0x0A000000, 0xC0A80000, 0x0A01FF00] if bits == 32 else \
        [0x20010DB8 << 96, 0x2A000000 << 96, (0x20010DB8 << 96) | (7 << 80)]
    routes = {}
    for _ in range(count):
        length = rng.choice([0, 8, 16, 18, 19, 22, 24, 25, 30, 32] if bits == 32 else
                            [0, 16, 20, 21, 32, 44, 48, 56, 64, 128])
        value = (rng.choice(bases) ^ rng.getrandbits(12) << rng.choice([0, 6, bits - 24])) \
            & ~((1 << (bits - length)) - 1) & ((1 << bits) - 1)
        routes[(value, length)] = rng.randrange(HOPS)
    return routes


def frames_for(rng: random.Random, v4: dict, v6: dict, count: int) -> list[bytes]:
    out = []
    for _ in range(count):
        family, routes = rng.choice([(4, v4), (6, v6)])
        bits = 32 if family == 4 else 128
        network, length = rng.choice(list(routes))
        dst = network | rng.getrandbits(bits - length) if length < bits else network
        if family == 4:
            pkt = Ether(dst="02:00:00:00:00:01") / IP(src="10.9.9.9", dst=str(
                ipaddress.IPv4Address(dst)), ttl=64) / UDP() / (b"x" * 18)
        else:
            pkt = Ether(dst="02:00:00:00:00:01") / IPv6(src="2001:db8::9", dst=str(
                ipaddress.IPv6Address(dst)), hlim=64) / UDP() / (b"x" * 18)
        out.append(bytes(pkt))
    return out


def verdicts(native: NativeProgram, frames: list[bytes]) -> list[tuple]:
    return [(v.kind, v.port if v.kind == "forward" else None, v.data) for v in
            native.run(frames, in_ports=0)]


def test_poptrie_router_native_and_chip(program) -> None:
    rng = random.Random(19)
    native = NativeProgram(program)
    tables = RouteTables.of(native)
    assert isinstance(tables.v4, Poptrie) and isinstance(tables.v6, Poptrie)
    for nh in range(HOPS):
        native.write("nexthops", nh, default_next_hop(nh, PORTS))
    v4, v6 = random_routes(rng, 32, 60), random_routes(rng, 128, 60)
    tables.load(v4, v6)
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    for round_ in range(2):
        frames = frames_for(rng, v4, v6, 40)
        native_out = verdicts(native, frames)
        for frame, (kind, port, data) in zip(frames, native_out, strict=True):
            if kind == "forward":  # the destination MAC names the next hop
                nh = int.from_bytes(data[:6], "big") & 0xFFFF
                dst, bits, routes = (int.from_bytes(frame[30:34], "big"), 32, v4) \
                    if frame[12:14] == b"\x08\x00" else \
                    (int.from_bytes(frame[38:54], "big"), 128, v6)
                assert nh == brute_force(routes, bits, dst)
                assert port == nh % PORTS
        assert Counter(k for k, _, _ in native_out)["forward"] > 20
        chip = CompiledRun(linked)
        chip.load_memories(native)
        result = chip.run({0: frames}, load=0.2)
        for port in range(PORTS):
            want = sorted(d for k, p, d in native_out if k == "forward" and p == port)
            assert sorted(result.frames(port)) == want
        if round_ == 0:  # updates between the runs: deletes and new routes
            for key in rng.sample(sorted(v4), 15):
                tables.v4.delete(*key)
                del v4[key]
            for key in rng.sample(sorted(v6), 15):
                tables.v6.delete(*key)
                del v6[key]
            for key, nh in random_routes(rng, 32, 20).items():
                tables.v4.add(*key, nh)
                v4[key] = nh
            for key, nh in random_routes(rng, 128, 20).items():
                tables.v6.add(*key, nh)
                v6[key] = nh
            tables.v4.reclaim()
            tables.v6.reclaim()
    assert np.count_nonzero(native.region("fib4_poptrie")) > 0


@pytest.mark.parametrize("bits", [32, 128])
def test_mbl_walker_matches_brute_force_through_updates(bits: int) -> None:
    """tests/runtime/programs/lpm_poptrie_probe.mbl (the packet is the key) on the native
    target, against the brute force, after a bulk build and after single updates."""
    program = compile_file(Path(__file__).parent / "programs" / "lpm_poptrie_probe.mbl")
    native = NativeProgram(program, "probe4" if bits == 32 else "probe6")
    tables = RouteTables.of(native)
    table = tables.v4 if bits == 32 else tables.v6
    rng = random.Random(bits)
    routes = random_routes(rng, bits, 120)
    table.build(routes)
    for step in range(3):
        addresses = [network | rng.getrandbits(bits - length) if length < bits else network
                     for network, length in routes] + [rng.getrandbits(bits) for _ in range(50)]
        got = [v.port if v.kind == "forward" else None for v in
               native.run([a.to_bytes(bits // 8, "big") for a in addresses])]
        assert got == [brute_force(routes, bits, a) for a in addresses], step
        for key in rng.sample(sorted(routes), min(30, len(routes))):
            table.delete(*key)
            del routes[key]
        for key, nh in random_routes(rng, bits, 30).items():
            table.add(*key, nh)
            routes[key] = nh
        table.reclaim()
