"""One receive port (link(..., rx_ports=1), link/plan.py): a chip of the dual system
receives port 0 alone and may give it up to 8 forwarding MEs.  The mapping follows the
rules docs/link.md writes down, and the compiled router forwards every frame of port 0,
in order and leak free, with the longest chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.bench import router4_load as r4l
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.link import LinkError, mapping
from npkit.link import link_body as link
from npkit.link.plan import MAX_FWD_MES_ONE_RX
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import RouteTables

ROUTER = Path(__file__).parents[2] / "examples" / "router" / "router.mbl"


@pytest.fixture(scope="module")
def router():
    from npkit.compiler.me.back import compile_body
    from npkit.compiler.me.front import to_wir
    from npkit.link.sram import placed
    from npkit.sim.config import ChipConfig

    # the body is compiled at the memories' chip addresses (the Poptrie tables are placed
    # on the SRAM channels: link/sram.py), as link() does
    program = placed(compile_file(ROUTER), ChipConfig.load("ixp2800"))
    fn = to_wir(program, "router")
    return program, compile_body(fn).uc, fn.window_bytes


def _link(router, per_port: int, rx_ports: int | None = 1):
    program, body, window = router
    return link(program, body, window, pipeline="router", fwd_mes_per_port=per_port,
                rx_ports=rx_ports)


@pytest.mark.parametrize("per_port", [1, 2, 4, 5, 8])
def test_the_one_port_mapping(router, per_port: int) -> None:
    info = _link(router, per_port).program
    assert info.rx_mes == (0,)
    assert info.fwd_mes == tuple(range(1, 1 + per_port))
    first_tx = max(6, 1 + per_port + (1 + per_port) % 2)
    assert info.tx_mes == (first_tx, first_tx + 1) and first_tx % 2 == 0
    # port 0's rings below the TX rings 4, 5 when they fit, else past the exception ring 6
    base = 0 if per_port <= 4 else 7
    assert info.rx_rings == (tuple(range(base, base + per_port)), ())
    roles = [a.role for a in mapping(_link(router, per_port)).mes]
    assert roles.count("fwd") == per_port and roles.count("rx") == 1


def test_more_than_the_dispatch_can_test_is_an_error(router) -> None:
    with pytest.raises(LinkError, match=f"1..{MAX_FWD_MES_ONE_RX}"):
        _link(router, MAX_FWD_MES_ONE_RX + 1)
    with pytest.raises(LinkError, match="at most 4"):
        _link(router, 5, rx_ports=None)  # both ports receive: the platform's 4


def test_eight_forwarding_mes_forward_every_frame_in_order(router) -> None:
    workload = r4l.Workload.make(7, 3000, 400, 64)
    native = NativeProgram(compile_file(ROUTER))   # the flat layout (the fixture's is placed)
    for index in range(1, r4l.NEXT_HOPS + 1):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": 1, "mtu": 1500})
    RouteTables.of(native).load(workload.routes, {})
    run = CompiledRun(_link(router, MAX_FWD_MES_ONE_RX))
    run.load_memories(native)
    frames = {0: workload.frames[0]}
    result = run.run(frames, load=0.5)
    assert result.accounted == result.offered == len(frames[0])
    assert not result.receive_drops and result.leak_free
    out = result.frames(1)
    forwarded = len(frames[0]) - sum(result.drops.values()) - len(result.exceptions)
    assert len(out) == forwarded > 0
    # the order of port 0's frames is kept (the tester's signature: the IP identification)
    ids = [int.from_bytes(f[18:20], "big") for f in out]
    sent = [int.from_bytes(f[18:20], "big") for f in frames[0]]
    kept = [i for i in sent if i in set(ids)]
    assert ids == kept
