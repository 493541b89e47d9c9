"""The compiled dual-stack router (examples/router/router.mbl) on the simulated chip against
the native target, with hypothesis-generated route tables as well as packet mixes: IPv4
and IPv6 prefixes of every length (mostly at the tries' level boundaries and one off them),
nested prefixes and siblings, with or without a default route, tables reached by updates
after the bulk build, up to all 1024 next hops with small MTUs, local addresses; frames
aimed at the prefixes' edges, valid and malformed, at, under and over the MTUs.

Both targets get the same memory image (the native target's, copied word for word), so a
difference is the compiled code's.  The native verdicts are also checked against a
linear-scan longest-prefix match, so the tables really steer the traffic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me import compile_me
from npkit.link import Manifest, link
from npkit.runtime.compiled import CompiledResult, CompiledRun
from npkit.runtime.lpm import RouteTables

from .harness import check_against_native, expected
from .route_mixes import (
    DMAC_BASE,
    NEXTHOP_SLOTS,
    OUT_PORTS,
    V4_BITS,
    V6_BITS,
    RouterTables,
    longest_match,
    scenario,
)

ROUTER = Path(__file__).parents[3] / "examples" / "router" / "router.mbl"

NO_ROUTE = {2, 18}                   # Exc.no_route, Exc.no_route6
PAST_MTU = {5, 6, 19}                # Exc.frag_needed, Exc.fragment, Exc.too_big
FORWARDED = "ip_forwarded"           # the program's counter: [0] IPv4, [1] IPv6
LOAD = 0.2                           # of line rate per input port
DIFF_SETTINGS = settings(deadline=None, derandomize=True, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])


class Router:
    """The router for both targets; the native memories are refilled per example.  Not a
    dataclass: hypothesis would print every field of the program with a failing case."""

    def __init__(self, linked: Manifest, native: NativeProgram) -> None:
        self.linked, self.native = linked, native

    def __repr__(self) -> str:
        return f"Router({ROUTER.name})"


@pytest.fixture(scope="module")
def router() -> Router:
    """Compiled and linked once per module (the slow part)."""
    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), "ixp2800-2x10gbe")
    return Router(linked, NativeProgram(program))


def load_native(native: NativeProgram, tables: RouterTables) -> None:
    """Fresh zeroed memories (lazily allocated, so the 96 MB of tries cost only the pages
    a table touches), then the control plane's view of `tables`."""
    native.memory = {space: np.zeros(words.shape, words.dtype)
                     for space, words in native.memory.items()}
    for index, hop in tables.nexthops.items():
        native.write("nexthops", index, hop.record(index))
    tries = RouteTables.of(native)
    tries.load(tables.v4, tables.v6)
    for op in tables.updates:
        trie = tries.v4 if op.family == 4 else tries.v6
        if op.next_hop is None:
            trie.delete(*op.prefix)
        else:
            trie.add(*op.prefix, op.next_hop)
        trie.reclaim()                   # later updates reuse the plies this one retired
    for address in tables.local4:
        native.table_add("local4", address, 1)
    for address in tables.local6:
        native.table_add("local6", address, 1)


def routed_address(frame: bytes) -> tuple[int, int] | None:
    """(key bits, destination) of an IPv4/IPv6 frame long enough to hold it."""
    ethertype = frame[12:14]
    if ethertype == b"\x08\x00" and len(frame) >= 34:
        return V4_BITS, int.from_bytes(frame[30:34], "big")
    if ethertype == b"\x86\xdd" and len(frame) >= 54:
        return V6_BITS, int.from_bytes(frame[38:54], "big")
    return None


def check_native_routes(native: NativeProgram, tables: RouterTables,
                        frames: dict[int, list[bytes]]) -> None:
    """Every routing decision the native target made is the reference longest match."""
    for port, port_frames in frames.items():
        for frame, verdict in zip(port_frames, native.run(port_frames, port) if port_frames
                                  else [], strict=True):
            address = routed_address(frame)
            if address is None or verdict.kind not in ("forward", "exception"):
                continue
            bits, dst = address
            want = longest_match(tables.final4 if bits == V4_BITS else tables.final6, dst, bits)
            if verdict.kind == "forward":
                slot = want % NEXTHOP_SLOTS          # the index is masked to the array
                assert int.from_bytes(verdict.data[:6], "big") == DMAC_BASE | slot
                assert verdict.port == tables.nexthops[slot].port
            elif verdict.code in NO_ROUTE:
                assert want is None, f"{dst:x}: no route, reference says next hop {want}"
            elif verdict.code in PAST_MTU:
                assert verdict.next_hop == want


def run_both(router: Router, tables: RouterTables, frames: dict[int, list[bytes]]) -> None:
    native = router.native
    note(tables.describe())
    load_native(native, tables)
    result, forwarded = on_chip(router.linked, native, frames)
    check_native_routes(native, tables, frames)
    assert set(expected(native, frames)[0]) <= set(OUT_PORTS)
    native.region(FORWARDED)[:] = 0              # count the next run only
    check_against_native(result, native, frames)
    assert list(forwarded) == list(native.region(FORWARDED))


def on_chip(linked: Manifest, native: NativeProgram,
            frames: dict[int, list[bytes]]) -> tuple[CompiledResult, np.ndarray]:
    """The chip's outputs and its `ip_forwarded` counters, on a fresh chip holding the
    native memories.  Its own frame, so a failing comparison's traceback (which hypothesis
    keeps while it shrinks) does not hold a chip and its hundreds of MB of memories."""
    chip = CompiledRun(linked)
    chip.load_memories(native)
    return chip.run(frames, load=LOAD), chip.read_memory(FORWARDED)


@settings(DIFF_SETTINGS, max_examples=80)
@given(scenario(max_frames=30))
def test_random_tables_and_mixes_match_the_native_router(router, case) -> None:
    run_both(router, *case)


@pytest.mark.slow
@settings(DIFF_SETTINGS, max_examples=300, derandomize=False)
@given(scenario(max_frames=60))
def test_random_tables_soak(router, case) -> None:
    run_both(router, *case)
