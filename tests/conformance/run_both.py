"""Run the probes through the Linux router and our router (native target) and pair each
probe with what each side sent.  `python tests/conformance/run_both.py` prints every
difference by class (the tool behind docs/conformance.md)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # as a script and under pytest

from differential import Out, canonical, compare, is_noise, marker  # noqa: E402
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
    own = router_addresses(config)
    answers: list[list[Out]] = [[] for _ in items]
    with LinuxRouter(config) as linux:
        for captured in linux.send([(p.port, p.frame) for p in items]):
            if captured.index >= 0 and not is_noise(captured.frame):
                answers[captured.index].append(canonical(captured.port, captured.frame, own))
    return answers


def native_router(config: RouterConfig) -> NativeRouter:
    from npkit.compiler.mbl import NativeProgram, compile_file

    router = NativeRouter(NativeProgram(compile_file(ROUTER)), ports=len(config.ports),
                          config=config)
    router.control.exceptions.limiter = None          # Linux runs without rate limits too
    return router


def our_side(config: RouterConfig, items: Sequence[Probe]) -> list[list[Out]]:
    own = router_addresses(config)
    router = native_router(config)
    answers = []
    for p in items:
        out = router.forward([p.frame], p.port).out
        answers.append([canonical(port, f, own) for port in sorted(out) for f in out[port]])
    return answers


def main() -> None:
    config = RouterConfig.load(CONFIG)
    items = probes()
    linux, ours = linux_side(config, items), our_side(config, items)
    diffs = compare(items, linux, ours)
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


def chip_side(config: RouterConfig, items: Sequence[Probe], load: float = 0.1
              ) -> list[list[Out]]:
    """The compiled router on the simulated chip with its control plane in the XScale
    model: every probe offered at once (`load` x line rate per port); frames are paired
    with probes by their marker (differential.marker), each probe's sorted by port."""
    from npkit.runtime.compiled_router import CompiledRouter, link_router

    own = router_addresses(config)
    router = CompiledRouter(linked=link_router(ROUTER, CHIP_PLATFORM))
    router.configure(config)
    router.control.exceptions.limiter = None
    frames: dict[int, list[bytes]] = {}
    for p in items:
        frames.setdefault(p.port, []).append(p.frame)
    result = router.forward(frames, load=load)
    index = {p.marker: i for i, p in enumerate(items)}
    answers: list[list[Out]] = [[] for _ in items]
    for port in sorted(result.out):
        for tx in result.out[port]:
            i = index.get(marker(tx.data))
            if i is not None:
                answers[i].append(canonical(port, tx.data, own))
    return answers
