"""The router against the Linux kernel (issue 16 item 1): the same ~1,200 generated frames
(tests/conformance/probes.py) through a Linux router in network namespaces configured like
examples/router/control.toml and through our router (native target, with its control
plane); per probe the ports, bytes, TTL / hop limit, checksums, ICMP type/code and quoted
bytes must agree (tests/conformance/differential.py).

Every difference must be one that docs/conformance.md explains; `KNOWN` below names each by
the section of that document, with a predicate that recognises exactly it.  A difference
no rule explains fails the test with both sides' frames.  Needs root and `ip netns`
(CI runs as root); skipped with the reason otherwise.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from differential import Difference
from linux_router import available
from probes import ROUTER4, Probe, probes
from run_both import CHIP_MAX_FRAME, CONFIG, chip_side, differences, linux_side, our_side
from scapy.layers.inet import ICMP, IP
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrRouting,
    IPv6ExtHdrSegmentRouting,
)
from scapy.layers.l2 import Ether

from npkit.runtime.router_config import RouterConfig

pytestmark = pytest.mark.skipif((reason := available()) is not None,
                                reason=f"Linux differential suite: {reason}")

def _ip(d: Difference) -> IP | IPv6 | None:
    eth = Ether(d.probe.frame)
    return eth[IP] if eth.haslayer(IP) else eth[IPv6] if eth.haslayer(IPv6) else None


def _addr(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


def _first_icmp4(outs) -> tuple[int, int] | None:
    for o in outs:
        eth = Ether(o.frame)
        if eth.haslayer(ICMP):
            return eth[ICMP].type, eth[ICMP].code
    return None


@dataclass(frozen=True)
class Known:
    section: str                       # the heading in docs/conformance.md
    matches: Callable[[Difference], bool]


def _reassembly(d: Difference) -> bool:
    return d.probe.cls == "fragments_local" and not d.ours


def _timestamp_clock(d: Difference) -> bool:
    """Same frames but the Timestamp option's value (a clock reading, RFC 791)."""
    ip = _ip(d)
    if not (isinstance(ip, IP) and bytes(ip)[20:21] == b"\x44" and len(d.linux) == 1
            and len(d.ours) == 1):
        return False
    a, b = bytearray(d.linux[0].frame), bytearray(d.ours[0].frame)
    if len(a) != len(b):
        return False
    for frame in (a, b):          # the 8 stamp bytes and the two checksums they move
        frame[14 + 24:14 + 32] = bytes(8)
        frame[14 + 10:14 + 12] = bytes(2)
    return a == b


def _option_pointer(d: Difference) -> bool:
    """Parameter Problem for a malformed option: Linux points at the option's type octet,
    we at its length octet (RFC 792: "the octet where an error was detected")."""
    return (_first_icmp4(d.linux) == (12, 0) == _first_icmp4(d.ours)
            and len(d.linux[0].frame) == len(d.ours[0].frame))


def _options_in_replies(d: Difference) -> bool:
    return d.probe.cls == "options_local" and len(d.linux) == len(d.ours) == 1 and \
        _first_icmp4(d.linux) == _first_icmp4(d.ours)


def _error_source(d: Difference) -> bool:
    """An ICMP error about a datagram for the router: Linux sends it from the datagram's
    destination, we from the outgoing port's address (RFC 1812 4.3.2.4)."""
    ip = _ip(d)
    if not (isinstance(ip, IP) and len(d.linux) == len(d.ours) == 1
            and _first_icmp4(d.linux) == _first_icmp4(d.ours)):
        return False
    a, b = bytearray(d.linux[0].frame), bytearray(d.ours[0].frame)
    if len(a) != len(b) or bytes(a[26:30]) != _addr(ip.dst).packed:
        return False
    for frame in (a, b):      # the source address and the two checksums it moves
        frame[24:30] = bytes(6)
        frame[36:38] = bytes(2)
    return a == b


# the probe classes that send packets back out of their arrival port on purpose: the
# redirect probes, and the jumbo frames forwarded back out of the 9000-byte port
REDIRECTING = frozenset({"redirect", "jumbo_out"})


def _redirect_back_off(d: Difference) -> bool:
    """One side sent an ICMP Redirect (type 5) the other's back-off held back (both use
    Linux's; which probe it lets through depends on the senders' clocks); all else equal."""
    def others(outs):
        return [o for o in outs if not (Ether(o.frame).haslayer(ICMP)
                                        and Ether(o.frame)[ICMP].type == 5)]
    return d.probe.cls in REDIRECTING and others(d.linux) == others(d.ours) and \
        abs(len(d.linux) - len(d.ours)) == 1


def _reserved_ipv4(d: Difference) -> bool:
    """0/8 and 240/4 sources and destinations: we drop them (RFC 1812 5.3.7), Linux
    forwards them (or answers their TTL expiry)."""
    ip = _ip(d)
    return isinstance(ip, IP) and not d.ours and any(
        _addr(a).packed[0] == 0 or _addr(a).packed[0] >= 240 for a in (ip.src, ip.dst)
        if a != "255.255.255.255")


def _own_source(d: Difference) -> bool:
    ip = _ip(d)
    return isinstance(ip, IP) and ip.src in ROUTER4.values() and not d.linux


def _broadcast_source(d: Difference) -> bool:
    ip = _ip(d)
    return isinstance(ip, IP) and ip.src == "192.0.2.127" and not d.ours and \
        _first_icmp4(d.linux) == (11, 0)


def _link_local_scope(d: Difference) -> bool:
    ip = _ip(d)
    return isinstance(ip, IPv6) and not d.ours and (
        _addr(ip.src).is_link_local or _addr(ip.dst).is_link_local)


def _site_all_routers(d: Difference) -> bool:
    ip = _ip(d)
    return isinstance(ip, IPv6) and ip.dst == "ff05::2" and not d.linux and \
        Ether(d.probe.frame).haslayer(ICMPv6EchoRequest)


def _rpl_and_srh(d: Difference) -> bool:
    eth = Ether(d.probe.frame)           # scapy dissects type 4 as its own layer
    routing = eth.haslayer(IPv6ExtHdrSegmentRouting) or (
        eth.haslayer(IPv6ExtHdrRouting) and eth[IPv6ExtHdrRouting].type == 3)
    return bool(routing) and not d.linux


KNOWN = (
    Known("Reassembly", _reassembly),
    Known("Timestamp values", _timestamp_clock),
    Known("Parameter Problem pointer for a bad option length", _option_pointer),
    Known("Options in replies", _options_in_replies),
    Known("Redirect back-off", _redirect_back_off),
    Known("Source address of errors about datagrams for the router", _error_source),
    Known("0/8 and 240/4", _reserved_ipv4),
    Known("The router's own address as source", _own_source),
    Known("Errors to a broadcast source", _broadcast_source),
    Known("Link-local scope", _link_local_scope),
    Known("Site-scope All-Routers", _site_all_routers),
    Known("RPL and Segment Routing headers", _rpl_and_srh),
)


@pytest.fixture(scope="module")
def native() -> tuple[list[Probe], list[Difference]]:
    config = RouterConfig.load(CONFIG)
    items = probes()
    return items, differences(items, linux_side(config, items), our_side(config, items))


def explain(d: Difference) -> str | None:
    return next((k.section for k in KNOWN if k.matches(d)), None)


def test_at_least_1000_probes_in_every_class(native):
    items, _ = native
    classes = Counter(p.cls for p in items)
    assert len(items) >= 1000
    assert len(classes) >= 20 and min(classes.values()) >= 8, classes


def test_every_difference_from_linux_is_explained(native):
    _, diffs = native
    unexplained = [d for d in diffs if explain(d) is None]
    report = "\n".join(f"[{d.probe.cls}] {Ether(d.probe.frame).summary()}\n    {d.describe()}"
                       for d in unexplained[:20])
    assert not unexplained, f"{len(unexplained)} unexplained differences:\n{report}"


CHIP_EVERY = 4          # the chip runs every 4th probe: a subset of every class
CHIP_LOAD = 0.02        # x line rate per port: the exception path keeps up (no rx_no_buffer)


def test_the_compiled_router_on_the_chip_differs_only_as_explained():
    """The compiled router (ixp2800-4x10gbe, the XScale model polling the exception ring)
    on a subset: frames up to 1,514 bytes (larger ones are dropped at receive, issue 16
    item 4), every CHIP_EVERY-th, all offered at CHIP_LOAD."""
    config = RouterConfig.load(CONFIG)
    items = [p for p in probes() if len(p.frame) <= CHIP_MAX_FRAME][::CHIP_EVERY]
    diffs = differences(items, linux_side(config, items),
                        chip_side(config, items, load=CHIP_LOAD))
    unexplained = [d for d in diffs if explain(d) is None]
    report = "\n".join(f"[{d.probe.cls}] {Ether(d.probe.frame).summary()}\n    {d.describe()}"
                       for d in unexplained[:20])
    assert len(items) >= 250
    assert not unexplained, f"{len(unexplained)} unexplained differences:\n{report}"


def test_the_explanations_name_sections_of_the_docs():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs/conformance.md").read_text()
    missing = [k.section for k in KNOWN if f"### {k.section}" not in text]
    assert not missing
