"""Several forwarding MEs per input port (link(..., fwd_mes_per_port=N), link/
dispatch/fwd.uc's chain): the compiled dual-stack router with 3,000 routes carries a load
one ME per port cannot, keeping every port's order and every buffer; the placement (rings,
next-neighbour links, local memory) is what the Mapping and the memory map say."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.bench import router4_load as r4l
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me.graph import to_dot
from npkit.link import DEFAULT_PLATFORM, LinkError, Manifest, mapping
from npkit.link import link_body as link
from npkit.link.platform import as_platform
from npkit.link.sram import placed
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.lpm import RouteTables
from npkit.sim.config import ChipConfig

from .harness import check_against_native

ROUTER = Path(__file__).parents[3] / "examples" / "router" / "router.mbl"
SWAP = Path(__file__).parent / "bodies"
# Measured (docs/me-backend.md, "Dispatch and link"; this workload, seed 7): one ME per
# port lossless up to ~34 % of line rate (36 %: drops), two to ~55 % (65 %: drops).  In
# between, with margin on both sides:
LOAD_BETWEEN = 0.45
FRAMES = 1000        # per port: enough for one ME's backlog to outgrow its 128 buffers


@pytest.fixture(scope="module")
def router() -> tuple[object, str, int, NativeProgram, dict[int, list[bytes]]]:
    from npkit.compiler.me.back import compile_body
    from npkit.compiler.me.front import to_wir

    flat = compile_file(ROUTER)
    # the body is compiled for the memories where the linker puts them (a table too big
    # for the preset's channels stays flat on 64 MB ones); the native target keeps the flat
    # layout (link/sram.py)
    program = placed(flat, as_platform(DEFAULT_PLATFORM).chip_config())
    fn = to_wir(program, "router")
    workload = r4l.Workload.make(7, 3000, FRAMES, 64)
    native = NativeProgram(flat)
    for index in range(1, r4l.NEXT_HOPS + 1):
        native.write("nexthops", index, {"dmac": 0x02AA00000000 | index,
                                         "smac": 0x02BB00000000 | index,
                                         "port": index & 1, "mtu": 1500})
    RouteTables.of(native).load(workload.routes, {})
    return program, compile_body(fn).uc, fn.window_bytes, native, workload.frames


def run_router(router, per_port: int):
    program, body, window, native, frames = router
    linked = link(program, body, window, pipeline="router", fwd_mes_per_port=per_port)
    run = CompiledRun(linked)
    run.load_memories(native)
    return run.run(frames, load=LOAD_BETWEEN)


def test_one_me_per_port_loses_frames_at_the_load(router) -> None:
    result = run_router(router, 1)
    assert sum(result.receive_drops.values()) > 0
    assert result.accounted == result.offered
    assert result.leak_free, [r.describe() for r in result.leaks]


def test_two_mes_per_port_carry_it_in_order_without_loss(router) -> None:
    _program, _body, _window, native, frames = router
    result = run_router(router, 2)
    check_against_native(result, native, frames)      # order per input port, no leak
    assert sum(len(v) for v in result.out.values()) == 2 * FRAMES


# --------------------------------------------------------------------------- placement
def linked_swap(per_port: int, build_dir: Path | None = None) -> Manifest:
    program = compile_file(SWAP / "swap.mbl")
    body = (SWAP / "swap.uc").read_text(encoding="utf-8")
    return link(program, body, 16, pipeline="swap", fwd_mes_per_port=per_port,
                build_dir=build_dir)


def defines(header: str) -> dict[str, int]:
    """layout.h's numeric #defines."""
    return {parts[1]: int(parts[2], 0) for line in header.splitlines()
            if (parts := line.split()) and parts[0] == "#define" and len(parts) == 3
            and parts[2][:1].isdigit()}


@pytest.mark.parametrize("per_port", [1, 2, 3, 4])
def test_rings_mes_and_local_memory_fit_the_chip(per_port: int, tmp_path: Path) -> None:
    linked = linked_swap(per_port, tmp_path)
    cfg = ChipConfig.load("ixp2800")
    rt = linked.program
    numbers = [r.number for r in linked.rings]
    assert len(set(numbers)) == len(numbers) == 2 * per_port + 3
    assert all(0 <= n < cfg.scratch_rings for n in numbers)
    assert {rt.layout().tx_ring(0), rt.layout().tx_ring(1), rt.layout().exc_ring} == {4, 5, 6}
    spans = sorted((r.base_word, r.base_word + r.size_words) for r in linked.rings)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))  # no overlap
    assert rt.drop_counter_base >= 4 * spans[-1][1]
    assert rt.drop_counter_base + 4 * rt.drop_counters <= cfg.scratch_bytes
    mes = [*rt.rx_mes, *rt.fwd_mes, *rt.tx_mes]
    assert len(set(mes)) == len(mes) and max(mes) < 16
    assert [t & 1 for t in rt.tx_mes] == [0, 1]                 # tx_eth.uc: port = ME & 1
    for p in (0, 1):
        chain = rt.chain(p)
        assert list(chain) == list(range(chain[0], chain[0] + per_port))   # NN-adjacent
    lm = defines((tmp_path / "layout.h").read_text())
    assert lm["SHARED_LM_BYTE"] >= lm["DISPATCH_LM_BYTE"] + 4 * 8 * 32
    assert lm["SHARED_LM_BYTE"] < 4 * cfg.local_memory_words


def test_the_mapping_shows_the_chains() -> None:
    linked = linked_swap(3)
    rt = linked.program
    by_me = {a.me: a for a in mapping(linked).mes}
    for p in (0, 1):
        rings = rt.rx_rings[p]
        assert by_me[rt.rx_mes[p]].writes == tuple(f"ring {r}" for r in rings)
        first, middle, last = (by_me[me] for me in rt.chain(p))
        assert first.reads == (f"ring {rings[0]}",)
        assert first.writes == (f"nn {middle.me}",)
        assert middle.reads == (f"ring {rings[1]}", f"nn {middle.me}")
        assert middle.writes == (f"nn {last.me}",)
        assert last.reads == (f"ring {rings[2]}", f"nn {last.me}")
        assert last.writes == ("ring 4", "ring 5", "exception ring 6")
    dashed = {line.split("[")[0].strip() for line in to_dot(mapping(linked)).splitlines()
              if "style=dashed" in line}
    assert dashed == {"me2 -> me3", "me3 -> me4", "me5 -> me6", "me6 -> me7"}


def test_too_many_forwarding_mes_is_a_link_error() -> None:
    with pytest.raises(LinkError, match="fwd_mes_per_port=5"):
        linked_swap(5)
    with pytest.raises(LinkError, match="fwd_mes_per_port=0"):
        linked_swap(0)
