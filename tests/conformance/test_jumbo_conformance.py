"""The probes longer than 1,514 bytes (the MTU probes arriving on the 9000-byte port 1:
forwarded toward MTU 1500 / 1280 ports with DF set and clear, IPv6, large echoes
answered over a smaller MTU, and the `jumbo_out` class: jumbo echoes answered and jumbo
packets forwarded back out of port 1, which stream through its TBUF partition) through
Linux and through the compiled router on the chip linked with 16 KB buffers
(link/media.py, docs/link.md "Buffer size"): every difference is one the rules of
test_linux_differential explain.

The chip side differs from run_both.chip_side in two ways, both for these probes: they go
GAP_S apart and the run lasts two gaps past the last (router_targets.run_chip with
cycles), since chip_side's run stops once as many frames left as were offered, which the
fragments of these probes reach early; and a frame is paired with the probe sent last
before it, since the router's later IPv6 fragments carry no marker and would be paired
with the frame before them on the port.  Needs root and `ip netns`, as that suite;
skipped with the reason otherwise."""

from __future__ import annotations

import pytest
from differential import canonical
from linux_router import available
from probes import probes
from run_both import (
    CHIP_MAX_FRAME,
    CHIP_PLATFORM,
    CONFIG,
    ROUTER,
    differences,
    linux_side,
    router_addresses,
)
from scapy.layers.l2 import Ether
from test_linux_differential import explain

from npkit.link.media import buffer_bytes_for_mtu
from npkit.runtime import router_targets as rt
from npkit.runtime.router_config import RouterConfig

pytestmark = pytest.mark.skipif((reason := available()) is not None,
                                reason=f"Linux differential suite: {reason}")

GAP_S = 500e-6          # between probes: the XScale model answers each within it


def jumbo_chip_side(config: RouterConfig, items: list, buf_bytes: int) -> tuple[list, dict]:
    from npkit.runtime.compiled_router import CompiledRouter, link_router

    router = CompiledRouter(linked=link_router(ROUTER, CHIP_PLATFORM, buf_bytes=buf_bytes),
                            resolve=True)
    router.configure(config)
    router.control.exceptions.limiter = None
    timed = [rt.TimedFrame(i * GAP_S, p.port, p.frame) for i, p in enumerate(items)]
    # a fixed length (run_until_drained once stopped before the last probe arrived: 27 of
    # 28; it now waits for the frames on the wire, tests/runtime/test_jumbo_chip.py)
    cycles = int((len(items) + 2) * GAP_S * router.chip.config.clock_hz)
    result = rt.run_chip(router, timed, cycles=cycles)
    own = router_addresses(config)
    answers: list[list] = [[] for _ in items]
    for port in sorted(result.out):
        for time_s, data in result.out[port]:
            i = int(time_s // GAP_S)
            assert 0 <= i < len(items)
            answers[i].append(canonical(port, data, own))
    return answers, router.counters()


def test_the_jumbo_probes_on_the_chip_differ_only_as_explained():
    config = RouterConfig.load(CONFIG)
    items = [p for p in probes() if len(p.frame) > CHIP_MAX_FRAME]
    assert len(items) >= 20 and max(len(p.frame) for p in items) > 8000
    assert {p.port for p in items} == {1}
    buf = buffer_bytes_for_mtu(max(p.mtu for p in config.ports))
    ours, counters = jumbo_chip_side(config, items, buf)
    diffs = differences(items, linux_side(config, items), ours)
    assert not counters.get("receive_drops"), counters.get("receive_drops")
    unexplained = [d for d in diffs if explain(d) is None]
    report = "\n".join(f"[{d.probe.cls}] {Ether(d.probe.frame).summary()}\n    {d.describe()}"
                       for d in unexplained[:20])
    assert not unexplained, f"{len(unexplained)} unexplained differences:\n{report}"
    assert all(ours), "every probe was answered on the chip"
