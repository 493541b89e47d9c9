"""The NPF lab pays its set-up once per run (issue 13): the update streams' table filtering
is kept per protected set (``updates.UpdateStreams``) and the update tests' routers reuse
one JIT-compiled host shadow per chip, the first being the NativeProgram the chips' tables
were packed in.  Reusing them must give the very streams and routers the per-use work
gave."""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from npkit.bench.lab import npf
from npkit.bench.lab.devices import CompiledChipDevice
from npkit.bench.lab.updates import BITS, UpdateStreams, _Near, _Protection, _sample
from npkit.runtime.route_manager import RouteUpdate
from npkit.runtime.routes import committed_histogram, generate_routes


def _reference_stream(table, spare, family, count, seed, protected, next_hops=16,
                      near_share=0.5):
    """``updates.update_stream`` as it was at b5c7f87, before the filtering was kept: the
    table filtered for every stream."""
    protected = tuple(protected)
    touches = _Protection(protected, BITS[family])
    is_near = _Near(protected, family)
    rng = random.Random(f"npkit-npf-updates:{family}:{seed}")
    pairs = max(1, count // 6)
    existing = [p for p in sorted(table) if not touches(p)]
    fresh = [p for p in sorted(spare) if p not in table and not touches(p)]
    near = [p for p in existing if is_near(p)] if protected else []
    chosen = _sample(rng, existing, near, 2 * pairs, round(2 * pairs * near_share))
    rng.shuffle(chosen)
    deleted, replaced = chosen[:pairs], chosen[pairs:]
    added = rng.sample(fresh, pairs)
    first = ([RouteUpdate("delete", family, *p) for p in deleted]
             + [RouteUpdate("add", family, *p, spare[p]) for p in added]
             + [RouteUpdate("add", family, *p, (table[p] + 1) % next_hops) for p in replaced])
    second = ([RouteUpdate("add", family, *p, table[p]) for p in deleted]
              + [RouteUpdate("delete", family, *p) for p in added]
              + [RouteUpdate("add", family, *p, table[p]) for p in replaced])
    rng.shuffle(first)
    rng.shuffle(second)
    return first + second


def test_one_update_streams_object_gives_every_streams_per_stream_result() -> None:
    for family, size in ((4, 3_000), (6, 700)):
        table = generate_routes(family, size, seed=5, histogram=committed_histogram(family))
        spare = generate_routes(family, 300, seed=9, histogram=committed_histogram(family))
        keys = sorted(table)
        sets = [(), tuple(keys[::97][:20]), tuple(keys[5::61][:7])]
        streams = UpdateStreams(table, spare, family)
        # interleaved protected sets, counts and seeds: what one set's kept filtering holds
        # must not leak into another's stream
        for k, (protected, count, seed) in enumerate(
                [(s, c, d) for c, d in ((6, 1), (60, 2), (186, 1)) for s in sets] * 2):
            got = streams.stream(count, seed, protected)
            assert got == _reference_stream(table, spare, family, count, seed, protected), k


def _device():
    chosen = npf.preset("ixp2800-npf", quick=True)
    chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(3_000, 400, source=""))
    return npf.chip_device(chosen)


def test_the_system_devices_streams_are_the_compiled_devices() -> None:
    device = _device()
    protected = tuple(sorted(device.tables.routes[4])[::50][:30])
    for family, count, seed, kept in ((4, 200, 1, ()), (4, 37, 1, protected),
                                      (4, 200, 2, protected), (6, 24, 1, ())):
        assert device.update_stream(family, count, seed, kept) == \
            CompiledChipDevice.update_stream(device, family, count, seed, kept)


def _router_state(router) -> dict[str, np.ndarray]:
    """The router's host shadow and the chip's copy of every memory of the program."""
    out = {f"shadow {space}": words.copy() for space, words in router.native.memory.items()}
    for placement in router.compiled.program.memories:
        out[placement.name] = router.compiled.read_memory(placement.name)
    return out


def test_a_reused_shadow_gives_a_fresh_shadows_router() -> None:
    reused = _device()
    reused.chip_loadables  # noqa: B018 (the tables packed in the NativeProgram kept)
    assert "_spare_native" in reused.__dict__
    reused.measure_update_rate(4, 12, seed=1)  # the update rate's router takes it first
    first = _router_state(reused.system_router("east"))
    again = _router_state(reused.system_router("east"))  # the same shadow, cleared again
    fresh = _device()
    fresh.chip_loadables  # noqa: B018
    fresh.__dict__.pop("_spare_native")  # a NativeProgram of its own, as before
    expected = _router_state(fresh.system_router("east"))
    assert first.keys() == expected.keys() == again.keys()
    for name, words in expected.items():
        assert np.array_equal(first[name], words), name
        assert np.array_equal(again[name], words), name
