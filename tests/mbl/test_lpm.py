"""The route tries of npkit.runtime.lpm, walked by the MBL code of microblocks/lpm.mbl on the
native target, against a brute-force longest-prefix match: random route sets built in bulk,
then random single-route adds and deletes, IPv4 and IPv6."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from conftest import PROGRAMS
from hypothesis import given, settings
from hypothesis import strategies as st
from lpm_reference import brute_force

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.runtime.lpm import IPV4, IPV6, LpmError, MultibitTrie, RouteTables


@dataclass
class Family:
    bits: int
    native: NativeProgram
    trie: MultibitTrie

    def walk(self, addresses: list[int]) -> list[int | None]:
        """Next hops the MBL walker finds (None: no route)."""
        packets = [a.to_bytes(self.bits // 8, "big") for a in addresses]
        return [v.port if v.kind == "forward" else None for v in self.native.run(packets)]


@pytest.fixture(scope="module")
def families() -> dict[int, Family]:
    program = compile_file(PROGRAMS / "lpm_probe.mbl")
    out = {}
    for bits, block in ((32, "probe4"), (128, "probe6")):
        native = NativeProgram(program, block)
        tables = RouteTables.of(native)
        out[bits] = Family(bits, native, tables.v4 if bits == 32 else tables.v6)
    return out


# Prefixes cluster under a few bases so they nest, and lengths straddle the stride
# boundaries (16, 24, 32, ...), where the trie changes level.
BASES = {32: [0x0A000000, 0x0A010000, 0xC0000200, 0x0A01FF00],
         128: [0x20010DB8 << 96, (0x20010DB8 << 96) | (5 << 80), 0x2A000000 << 96]}


@st.composite
def prefixes(draw, bits: int) -> tuple[int, int]:
    length = draw(st.one_of(st.integers(0, bits), st.sampled_from(
        [8, 15, 16, 17, 23, 24, 25, 31, 32] if bits == 32 else [16, 24, 32, 40, 47, 48, 49,
                                                                 64, 127, 128])))
    base = draw(st.one_of(st.sampled_from(BASES[bits]), st.integers(0, 2**bits - 1)))
    noise = draw(st.integers(0, 2**bits - 1)) >> draw(st.integers(0, bits))
    value = (base ^ noise) & ~((1 << (bits - length)) - 1) & ((1 << bits) - 1)
    return value, length


def operations(bits: int):
    route = st.tuples(prefixes(bits), st.integers(0, 3))  # few next hops: equal leaves
    return st.tuples(
        st.lists(route, max_size=40),
        st.lists(st.one_of(st.tuples(st.just("add"), route),
                           st.tuples(st.just("delete"), st.integers(0, 10**6)),
                           st.tuples(st.just("reclaim"), st.none())), max_size=30))


def probes(routes: dict[tuple[int, int], int], bits: int, rng: np.random.Generator) -> list[int]:
    """Both edges of every prefix, one address inside, and random ones."""
    def random() -> int:
        return int.from_bytes(rng.bytes(bits // 8), "big")

    out = []
    for network, length in routes:
        last = network | ((1 << (bits - length)) - 1)
        inside = network | (random() & ((1 << (bits - length)) - 1))
        out += [network, last, inside, (last + 1) % 2**bits, (network - 1) % 2**bits]
    return out + [random() for _ in range(16)] + [0, 2**bits - 1]


def check(family: Family, routes: dict[tuple[int, int], int], seed: int) -> None:
    addresses = probes(routes, family.bits, np.random.default_rng(seed))
    expected = [brute_force(routes, family.bits, a) for a in addresses]
    assert family.walk(addresses) == expected
    assert [family.trie.lookup(a) for a in addresses] == expected


@pytest.mark.parametrize("bits", [32, 128])
def test_trie_matches_brute_force_through_adds_and_deletes(families, bits):
    family = families[bits]

    @settings(max_examples=150, deadline=None)
    @given(operations(bits))
    def run(ops):
        initial, updates = ops
        routes = {prefix: nh for prefix, nh in initial}
        family.trie.build(routes)
        check(family, routes, 0)
        for step, (kind, arg) in enumerate(updates):
            if kind == "add":
                (network, length), nh = arg
                family.trie.add(network, length, nh)
                routes[(network, length)] = nh
            elif kind == "delete" and routes:
                victim = sorted(routes)[arg % len(routes)]
                family.trie.delete(*victim)
                del routes[victim]
            elif kind == "reclaim":
                family.trie.reclaim()
            if step % 5 == 4:
                check(family, routes, step)
        check(family, routes, 99)
        assert family.trie.routes == routes

    run()


@pytest.mark.parametrize("bits", [32, 128])
def test_deleting_every_route_frees_every_ply(families, bits):
    family = families[bits]
    shape = IPV4 if bits == 32 else IPV6
    network = BASES[bits][1]
    routes = {(network, 8): 1, (network, bits - 1): 2, (network, bits): 3}
    family.trie.build({})
    for (value, length), nh in routes.items():
        family.trie.add(value & ~((1 << (bits - length)) - 1), length, nh)
    assert family.trie.words_used > shape.root_words
    for value, length in list(family.trie.routes):
        family.trie.delete(value, length)
    assert family.trie.words_used == shape.root_words
    assert family.walk([network]) == [None]


def test_bulk_build_equals_route_by_route_adds(families):
    """Two independent paths to the same table give the same answers."""
    family = families[32]
    rng = np.random.default_rng(7)
    routes = {}
    for _ in range(300):
        length = int(rng.integers(8, 33))
        value = int(rng.integers(0, 2**32)) & ~((1 << (32 - length)) - 1) & 0xFFFFFFFF
        routes[(value, length)] = int(rng.integers(0, 1000))
    family.trie.build({})
    for (value, length), nh in routes.items():
        family.trie.add(value, length, nh)
    addresses = probes(routes, 32, rng)
    by_adds = family.walk(addresses)
    family.trie.build(routes)
    assert family.walk(addresses) == by_adds == [brute_force(routes, 32, a) for a in addresses]


def test_errors_name_the_problem():
    trie = MultibitTrie(IPV4, np.zeros(IPV4.root_words + IPV4.ply_words, dtype=np.uint32))
    trie.add(0x0A000000, 24, 1)  # one ply fits
    with pytest.raises(LpmError, match="memory is full"):
        trie.add(0x0B000000, 24, 1)
    with pytest.raises(LpmError, match="host bits"):
        trie.add(0x0A000001, 24, 1)
    with pytest.raises(LpmError, match="no route 10.9.0.0/16"):
        trie.delete(0x0A090000, 16)
    with pytest.raises(LpmError, match="next hop"):
        trie.add(0x0A000000, 8, 70000)
    with pytest.raises(LpmError, match="host bits"):
        trie.build({(0x0A000001, 24): 1})


def test_a_ply_of_equal_longer_routes_is_not_collapsed(families):
    """Two /17s with one next hop fill a ply exactly like a /16 would; after the /24 below
    them goes, deleting one /17 must still uncover its half."""
    family = families[32]
    family.trie.build({(0x0A000000, 17): 4, (0x0A008000, 17): 4, (0x0A000000, 24): 5})
    family.trie.delete(0x0A000000, 24)
    family.trie.delete(0x0A008000, 17)
    assert family.walk([0x0A000001, 0x0A008001]) == [4, None]


def test_npkit_run_with_routes_forwards_by_longest_prefix(tmp_path):
    from click.testing import CliRunner
    from scapy.all import IP, UDP, Ether, IPv6, rdpcap, wrpcap

    from npkit.cli import main

    router = PROGRAMS.parents[2] / "examples" / "router" / "router.mbl"
    (tmp_path / "routes.txt").write_text("10.0.0.0/8 1\n10.1.0.0/16 2  # longer\n"
                                         "2001:db8::/32 3\n")
    eth = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    wrpcap(str(tmp_path / "in.pcap"), [
        eth / IP(src="198.18.0.1", dst="10.1.2.3", ttl=9) / UDP(),
        eth / IP(src="198.18.0.1", dst="10.9.9.9", ttl=9) / UDP(),
        eth / IPv6(src="2001:db8:9::1", dst="2001:db8:7::1") / UDP(),
        eth / IP(src="198.18.0.1", dst="11.0.0.1", ttl=9) / UDP()])
    r = CliRunner().invoke(main, ["run", str(router), "--target", "native",
                                  "--in", f"0={tmp_path}/in.pcap",
                                  "--out", f"2={tmp_path}/out2.pcap",
                                  "--routes", str(tmp_path / "routes.txt")])
    assert r.exit_code == 0, r.output
    assert "routes: 2 IPv4 + 1 IPv6" in r.output
    # default next hops: port = index % 4
    for line in ("forward port 1: 1", "forward port 2: 1", "forward port 3: 1",
                 "exception code 2: 1"):
        assert line in r.output
    (out,) = rdpcap(str(tmp_path / "out2.pcap"))
    assert out[IP].dst == "10.1.2.3" and out[IP].ttl == 8 and out.dst == "02:00:00:01:00:02"
    (tmp_path / "bad.txt").write_text("10.0.0.0/8 1\n10.0.0.1/8 2\n")
    bad = CliRunner().invoke(main, ["run", str(router), "--target", "native",
                                    "--routes", str(tmp_path / "bad.txt")])
    assert bad.exit_code != 0 and "bad.txt:2" in bad.output and "host bits" in bad.output
    assert "Traceback" not in bad.output
