"""ICMP Redirect for Host (RFC 792; RFC 1812 5.2.7.2): a packet the router forwards out of
the port it arrived on, from a host on that port's subnet, is forwarded and its source
gets a Redirect naming the next hop; a packet from a source elsewhere is only forwarded.
Redirects to one source back off as Linux's do (runtime/icmp.RedirectLimiter).  Native
target and the compiled router on the chip; expected frames from scapy."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, UDP, IPerror
from scapy.layers.l2 import Ether

from npkit.runtime.control_plane import NativeRouter
from npkit.runtime.icmp import RedirectLimiter
from npkit.runtime.router_config import RouterConfig

REPO = Path(__file__).resolve().parents[2]
ROUTER = REPO / "examples/router/router.mbl"
MS = 1_000_000
CONFIG = """
[[port]]
port = 0
mac = "02:00:00:00:00:10"
ipv4 = ["192.0.2.1/24"]

[[port]]
port = 1
mac = "02:00:00:00:00:11"
ipv4 = ["198.51.100.1/24"]

[[neighbour]]
port = 0
ip = "192.0.2.2"
mac = "02:00:00:00:10:02"

[[neighbour]]
port = 0
ip = "192.0.2.3"
mac = "02:00:00:00:10:03"

[[neighbour]]
port = 1
ip = "198.51.100.2"
mac = "02:00:00:00:11:02"

[[route]]
prefix = "10.0.0.0/8"
via = "192.0.2.3"

[[route]]
prefix = "172.16.0.0/12"
via = "198.51.100.2"
"""
PORT0_MAC, HOST_MAC, GATEWAY_MAC = "02:00:00:00:00:10", "02:00:00:00:10:02", "02:00:00:00:10:03"


def packet(src: str = "192.0.2.2", ttl: int = 9, ident: int = 1) -> Ether:
    return (Ether(src=HOST_MAC, dst=PORT0_MAC) / IP(src=src, dst="10.1.2.3", ttl=ttl, id=ident)
            / UDP(sport=1000, dport=2000) / (b"r" * 30))


def forwarded(sent: Ether) -> bytes:
    out = sent.copy()
    out.src, out.dst = PORT0_MAC, GATEWAY_MAC
    out[IP].ttl -= 1
    del out[IP].chksum
    return bytes(Ether(bytes(out)))


def check_redirect(frame: bytes, sent: Ether) -> None:
    got = Ether(frame)
    assert (got.src, got.dst) == (PORT0_MAC, HOST_MAC)
    assert (got[IP].src, got[IP].dst, got[IP].proto) == ("192.0.2.1", "192.0.2.2", 1)
    assert (got[ICMP].type, got[ICMP].code, got[ICMP].gw) == (5, 1, "192.0.2.3")
    quoted = IP(forwarded(sent)[14:])
    assert bytes(got[IPerror])[:28] == bytes(quoted)[:28]      # header + 8 bytes, TTL - 1
    fresh = Ether(frame)
    del fresh[IP].chksum, fresh[ICMP].chksum
    rebuilt = Ether(bytes(fresh))
    assert (rebuilt[IP].chksum, rebuilt[ICMP].chksum) == (got[IP].chksum, got[ICMP].chksum)


@pytest.fixture(scope="module")
def program():
    from npkit.compiler.mbl import NativeProgram, compile_file

    return NativeProgram(compile_file(ROUTER))


@pytest.fixture
def router(program) -> NativeRouter:
    for name in program.program.memories:
        program.region(name)[:] = 0
    return NativeRouter(program, ports=2, config=RouterConfig.loads(CONFIG))


def test_a_hairpin_from_a_local_host_is_forwarded_and_redirected(router):
    sent = packet()
    out = router.forward([bytes(sent)], 0).out
    redirect, data = out[0]
    check_redirect(redirect, sent)
    assert data == forwarded(sent)
    assert router.control.exceptions.counters["redirects_sent.code_1"] == 1


def test_a_hairpin_from_a_remote_source_is_only_forwarded(router):
    sent = packet(src="172.16.0.9")
    assert router.forward([bytes(sent)], 0).out == {0: [forwarded(sent)]}


def test_redirects_to_one_source_back_off_as_linux(router):
    sent = [packet(ident=i) for i in range(4)]
    times = [0, 10 * MS, 41 * MS, 122 * MS]   # > 40 ms after the 1st, > 80 ms after the 2nd
    counts = [len(router.forward([bytes(s)], 0, now_ns=t).out[0]) for s, t in zip(
        sent, times, strict=True)]
    assert counts == [2, 1, 2, 2]


def test_the_limiter_matches_linux_ip_rt_send_redirect():
    limiter = RedirectLimiter()
    # 9 redirects at the back-off's pace (> 20 ms << n after the n-th), then none until
    # the source has been quiet for 20.48 s
    at, sent = 0, []
    for n in range(12):
        sent.append(limiter.allow(7, at))
        at += (20 * MS << (n + 1)) + 1 if n < 8 else 1000 * MS
    assert sent == [True] * 9 + [False] * 3
    assert not limiter.allow(7, at)                  # each ignored one restarts the quiet
    assert limiter.allow(7, at + 20_480 * MS + 1)


def test_the_chip_forwards_and_redirects_a_hairpin():
    from npkit.runtime.compiled_router import CompiledRouter, link_router

    router = CompiledRouter(linked=link_router(ROUTER))
    router.configure(RouterConfig.loads(CONFIG))
    sent = [packet(), packet(src="172.16.0.9", ident=2)]
    result = router.forward({0: [bytes(s) for s in sent]}, load=0.05)
    frames = result.frames(0)
    redirects = [f for f in frames if Ether(f).haslayer(ICMP)]
    assert len(redirects) == 1
    check_redirect(redirects[0], sent[0])
    assert sorted(f for f in frames if f not in redirects) == sorted(map(forwarded, sent))
