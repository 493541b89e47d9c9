"""Run the probes through the Linux router and our router (native target) and pair each
probe with what each side sent.  `python tests/conformance/run_both.py` prints every
difference by class (the tool behind docs/conformance.md)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # as a script and under pytest

from differential import Difference, Out, canonical, is_noise, marker  # noqa: E402
from linux_router import LinuxRouter  # noqa: E402
from probes import Probe, probes  # noqa: E402

from npkit.runtime.control_plane import NativeRouter  # noqa: E402
from npkit.runtime.router_config import RouterConfig  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples/router/control.toml"
ROUTER = REPO / "examples/router/router.mbl"


def router_addresses(config: RouterConfig) -> frozenset[bytes]:
    found = set()
    for p in config.ports:
        for iface in (*p.ipv4, *p.ipv6):
            found.add(iface.ip.packed)
            if iface.version == 6:                    # the Subnet-Router anycast address
                found.add(iface.network.network_address.packed)
    return frozenset(found)


def linux_side(config: RouterConfig, items: Sequence[Probe]) -> list[list[Out]]:
    """What the Linux router sent for each probe: a frame goes to the probe whose marker
    it carries, else (ARP, Neighbor Solicitations: no marker) to the probe sent last
    before it arrived, so a late frame on a loaded machine still finds its probe."""
    own = router_addresses(config)
    answers: list[list[Out]] = [[] for _ in items]
    index = {p.marker: i for i, p in enumerate(items)}
    with LinuxRouter(config) as linux:
        for captured in linux.send([(p.port, p.frame) for p in items]):
            if captured.index < 0 or is_noise(captured.frame):
                continue
            i = index.get(marker(captured.frame, own), captured.index)
            answers[i].append(canonical(captured.port, captured.frame, own))
    return answers


def by_marker(items: Sequence[Probe], answers: Sequence[Sequence[Out]]
              ) -> dict[int, tuple[Out, ...]]:
    """The answers keyed by probe marker, each sorted by port (stable): the two fragments
    of a fragmented probe share one marker, and frames are paired with probes by it."""
    grouped: dict[int, list[Out]] = {}
    for p, outs in zip(items, answers, strict=True):
        grouped.setdefault(p.marker, []).extend(outs)
    return {m: tuple(sorted(v, key=lambda o: o.port)) for m, v in grouped.items()}


def differences(items: Sequence[Probe], linux: Sequence[Sequence[Out]],
                ours: Sequence[Sequence[Out]]) -> list[Difference]:
    """Per marker: the answers differ, or a checksum on either side is wrong.  A
    difference names the last probe with that marker."""
    a, b = by_marker(items, linux), by_marker(items, ours)
    last = {p.marker: p for p in items}
    return [Difference(last[m], a[m], b[m]) for m in a
            if a[m] != b[m] or not all(o.checksums_ok for o in a[m] + b[m])]


def native_router(config: RouterConfig) -> NativeRouter:
    from npkit.compiler.mbl import NativeProgram, compile_file

    router = NativeRouter(NativeProgram(compile_file(ROUTER)), ports=len(config.ports),
                          config=config)
    router.control.exceptions.limiter = None          # Linux runs without rate limits too
    return router


SEND_GAP_NS = 2_000_000      # LinuxRouter.send's gap: our clock advances as Linux's does


def our_side(config: RouterConfig, items: Sequence[Probe]) -> list[list[Out]]:
    """Each probe through the native router at the time the tester sends it to Linux
    (the redirect back-off and the other timers see the same spacing)."""
    own = router_addresses(config)
    router = native_router(config)
    answers = []
    for i, p in enumerate(items):
        out = router.forward([p.frame], p.port, now_ns=i * SEND_GAP_NS).out
        answers.append([canonical(port, f, own) for port in sorted(out) for f in out[port]])
    return answers


def main() -> None:
    config = RouterConfig.load(CONFIG)
    items = probes()
    linux, ours = linux_side(config, items), our_side(config, items)
    diffs = differences(items, linux, ours)
    print(f"{len(items)} probes, {len(diffs)} differences")
    print(Counter(p.cls for p in items))
    for d in diffs:
        p = d.probe
        from scapy.layers.l2 import Ether
        print(f"[{p.cls}] port {p.port} {Ether(p.frame).summary()}\n    {d.describe()}")


if __name__ == "__main__":
    main()


CHIP_PLATFORM = "ixp2800-4x10gbe"         # the config's 4 ports
CHIP_MAX_FRAME = 1514                     # larger frames are dropped at receive (issue 16)


def resolution_target(frame: bytes) -> bytes | None:
    """The address an ARP request / reply or a Neighbor Solicitation / Advertisement (no
    extension headers) is about: what pairs an answer with its question."""
    if frame[12:14] == b"\x08\x06" and len(frame) >= 42:
        op = frame[21]
        return frame[38:42] if op == 1 else frame[28:32] if op == 2 else None
    if frame[12:14] == b"\x86\xdd" and len(frame) >= 78 and frame[20] == 58 and \
            frame[54] in (135, 136):
        return frame[62:78]
    return None


def chip_side(config: RouterConfig, items: Sequence[Probe], load: float = 0.1,
              counters: dict | None = None) -> list[list[Out]]:
    """The compiled router on the simulated chip with its control plane in the XScale
    model: every probe offered at once (`load` x line rate per port); frames are paired
    with probes by their marker (differential.marker), an ARP reply / Neighbor
    Advertisement with the first unanswered request / solicitation for its address on its
    port, another frame without a marker (a later fragment of the router's own packet) with
    the probe of the frame before it.  `counters` (a dict) receives the chip's counters."""
    from npkit.runtime.compiled_router import CompiledRouter, link_router
    from npkit.runtime.coverage import coverage_from_env

    own = router_addresses(config)
    router = CompiledRouter(linked=link_router(ROUTER, CHIP_PLATFORM), resolve=True)
    router.configure(config)
    router.control.exceptions.limiter = None
    frames: dict[int, list[bytes]] = {}
    for p in items:
        frames.setdefault(p.port, []).append(p.frame)
    with coverage_from_env(router.chip):   # NPKIT_COVERAGE=FILE.info adds the run's coverage
        result = router.forward(frames, load=load)
    if counters is not None:                  # the run's counters, for the caller to read
        counters.update(router.counters())
    index = {p.marker: i for i, p in enumerate(items)}
    asked: dict[tuple[int, bytes], list[int]] = {}
    for i, p in enumerate(items):
        if (target := resolution_target(p.frame)) is not None:
            asked.setdefault((p.port, target), []).append(i)
    answers: list[list[Out]] = [[] for _ in items]
    for port in sorted(result.out):
        last = None                 # a later fragment follows its first one on the port
        for tx in result.out[port]:
            target = resolution_target(tx.data)
            if target is not None and asked.get((port, target)):
                answers[asked[(port, target)].pop(0)].append(canonical(port, tx.data, own))
                continue
            i = index.get(marker(tx.data, own), last)
            if i is not None:
                answers[i].append(canonical(port, tx.data, own))
                last = i
    return answers
