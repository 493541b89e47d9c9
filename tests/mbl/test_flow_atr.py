"""ATR (npkit.runtime.flow_atr): Flow Director filters learned from transmitted packets,
against a dictionary model written here: packets built with scapy, the receive key by
swapping the sent packet's addresses and ports, buckets of four by zlib's CRC-32 of the
documented key, a learned flow's queue updated in place, everything else on RSS (the
reference Toeplitz of npkit.runtime.rss, checked against Microsoft's published values in
test_rss.py).  The received packets run through microblocks/flow_director.mbl natively."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.all import ARP, IP, TCP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_source
from npkit.runtime.flow_atr import AtrLearner, receive_key
from npkit.runtime.flow_director import L4, FlowDirector, FlowDirectorError, FlowKey
from npkit.runtime.rss import MICROSOFT_KEY, program_rss, spread_reta, toeplitz

REPO = Path(__file__).resolve().parents[2]
QUEUES = 8
PROBE = f"""
import "{REPO / 'microblocks' / 'flow_director.mbl'}";
block pass_on {{
    forward(meta.in_port);
}}
pipeline fd_probe {{
    stage fd = flow_director;
    stage out = pass_on;
    fd -> out;
}}
"""
# a small pool of flows (local end, remote end), so scripts revisit flows and fill buckets
LOCALS = ["192.0.2.1", "192.0.2.2"]
REMOTES = ["198.18.0.1", "198.18.7.9", "203.0.113.5"]
PORTS = [80, 443, 50000, 50001]


@pytest.fixture(scope="module")
def native() -> NativeProgram:
    program = NativeProgram(compile_source(PROBE, "atr_probe.mbl"), "fd_probe")
    program_rss(program, MICROSOFT_KEY, reta=spread_reta(QUEUES))
    return program


def ip_int(text: str) -> int:
    return int.from_bytes(bytes(map(int, text.split("."))), "big")


# ---- the model -----------------------------------------------------------------------------
def sent_frame(kind: str, local: str, remote: str, lport: int, rport: int) -> bytes:
    """What a core transmits: the local end is the source."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if kind == "tcp":
        return raw(eth / IP(src=local, dst=remote) / TCP(sport=lport, dport=rport))
    if kind == "udp":
        return raw(eth / IP(src=local, dst=remote) / UDP(sport=lport, dport=rport))
    if kind == "fragment":
        return raw(eth / IP(src=local, dst=remote, flags="MF") / UDP(sport=lport, dport=rport))
    if kind == "ipv6":
        return raw(eth / IPv6(src="2001:db8::1", dst="2001:db8::2") / TCP(sport=lport,
                                                                          dport=rport))
    return raw(eth / ARP(psrc=local, pdst=remote))


def model_key(kind: str, local: str, remote: str, lport: int, rport: int) -> tuple | None:
    """The receive direction's documented key, or None when the packet teaches nothing."""
    l4 = {"tcp": 1, "udp": 2}.get(kind)
    if l4 is None:
        return None
    return (ip_int(remote), ip_int(local), rport << 16 | lport, 0x400 | l4)


def bucket_of(key: tuple, buckets: int) -> int:
    return zlib.crc32(b"".join(w.to_bytes(4, "big") for w in key)) & (buckets - 1)


def received_frame(kind: str, local: str, remote: str, lport: int, rport: int) -> bytes:
    """A reply: the remote end is the source."""
    eth = Ether(src="02:00:00:00:00:02", dst="02:00:00:00:00:01")
    l4 = TCP(sport=rport, dport=lport) if kind == "tcp" else UDP(sport=rport, dport=lport)
    return raw(eth / IP(src=remote, dst=local) / l4)


def rss_queue(kind: str, local: str, remote: str, lport: int, rport: int) -> int:
    data = b"".join((ip_int(remote).to_bytes(4, "big"), ip_int(local).to_bytes(4, "big"),
                     rport.to_bytes(2, "big"), lport.to_bytes(2, "big")))
    return spread_reta(QUEUES)[toeplitz(data) & 127]


events = st.lists(st.tuples(
    st.sampled_from(["tcp", "tcp", "udp", "udp", "fragment", "ipv6", "arp"]),
    st.sampled_from(LOCALS), st.sampled_from(REMOTES), st.sampled_from(PORTS),
    st.sampled_from(PORTS), st.integers(0, QUEUES - 1)), max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=events, buckets=st.sampled_from([1, 2, 4, 2048]),
       sample_every=st.sampled_from([1, 1, 2, 3]))
def test_learned_filters_match_the_model(native, script, buckets, sample_every) -> None:
    learner = AtrLearner(FlowDirector(native, buckets), sample_every)
    table: dict[tuple, int] = {}  # key -> queue
    refused = learned = candidates = 0
    for kind, local, remote, lport, rport, queue in script:
        got = learner.transmitted(sent_frame(kind, local, remote, lport, rport), queue)
        key = model_key(kind, local, remote, lport, rport)
        want = False
        if key is not None:
            candidates += 1
            if (candidates - 1) % sample_every == 0:
                if key in table:
                    want = table[key] != queue
                    table[key] = queue
                elif sum(bucket_of(k, buckets) == bucket_of(key, buckets) for k in table) < 4:
                    table[key] = queue
                    want = True
                else:
                    refused += 1
        learned += want
        assert got == want
    assert (learner.learned, learner.refused) == (learned, refused)
    flows = [(kind, lo, re, lp, rp) for kind in ("tcp", "udp") for lo in LOCALS
             for re in REMOTES for lp in PORTS for rp in PORTS]
    verdicts = native.run([received_frame(*f) for f in flows], 0)
    for flow, v in zip(flows, verdicts, strict=True):
        key = model_key(*flow)
        assert v.kind == "forward"
        assert v.queue == table.get(key, rss_queue(*flow)), flow


def test_receive_key_swaps_the_ends() -> None:
    frame = sent_frame("udp", "192.0.2.1", "198.18.0.1", 50000, 53)
    assert receive_key(frame) == FlowKey(ip_int("198.18.0.1"), ip_int("192.0.2.1"), 53, 50000,
                                         L4.UDP)
    for kind in ("fragment", "ipv6", "arp"):
        assert receive_key(sent_frame(kind, "192.0.2.1", "198.18.0.1", 1, 2)) is None
    assert receive_key(sent_frame("tcp", "192.0.2.1", "198.18.0.1", 1, 2)[:36]) is None


def test_sampling_must_be_positive(native) -> None:
    with pytest.raises(FlowDirectorError):
        AtrLearner(FlowDirector(native, 4), sample_every=0)
