"""SRAM placement (link/sram.py): a program's SRAM memories on the chip's channels, each in
one channel of its real size (the IXP2800 preset: 4 x 8 MB), deterministic, a located
error naming the memories when they do not fit; and a compiled program whose memories
were moved reads them where the linker put them (a frame per array on the simulated chip)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from npkit.compiler.mbl import CompileError, NativeProgram, compile_source
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.link.sram import (
    BIG_CHANNEL_BYTES,
    CHANNEL_SHIFT,
    SramFitError,
    fits_channels,
    place_sram,
    placed,
)
from npkit.runtime.compiled import CompiledRun
from npkit.sim.config import ChipConfig

MB = 1 << 20
CFG = ChipConfig.load("ixp2800")
REPO = Path(__file__).parents[2]

# three 4 MB arrays and a small one: 12 MB, more than one 8 MB channel
SOURCE = """
header key_t { index: bit<32>; }
array big_a : bit<32> [1048576] in sram;
array big_b : bit<32> [1048576] in sram;
array big_c : bit<32> [1048576] in sram;
array small : bit<32> [16] in sram;

block pick {
    let key = packet<key_t>(0) else drop(runt);
    let port = big_a[key.index] + big_b[key.index] + big_c[key.index] + small[key.index];
    forward(port[15:0]);
}
"""


def _spans(addresses: dict[str, int], sizes: dict[str, int]) -> list[tuple[int, int, int]]:
    """(channel, first byte, end byte) of each memory."""
    return [(a >> CHANNEL_SHIFT, a & (BIG_CHANNEL_BYTES - 1),
             (a & (BIG_CHANNEL_BYTES - 1)) + sizes[n]) for n, a in addresses.items()]


def test_memories_fit_on_channels_without_straddling_or_overlap() -> None:
    sizes = {"fib4": 8 * MB, "fib6": 8 * MB, "nexthops": 16 * 1024, "local4": 256,
             "local6": 384}
    addresses = place_sram(sizes, 4, 8 * MB)
    spans = _spans(addresses, sizes)
    assert all(end <= 8 * MB and ch < 4 for ch, _, end in spans)
    for i, (ch, lo, hi) in enumerate(spans):      # no two memories overlap
        for ch2, lo2, hi2 in spans[i + 1:]:
            assert ch != ch2 or hi <= lo2 or hi2 <= lo
    # from the top down: the two full channels, the small tables together below them, and
    # channel 0 left to the runtime's receive descriptors (port 0's, link/plan.py)
    assert {addresses["fib4"] >> CHANNEL_SHIFT, addresses["fib6"] >> CHANNEL_SHIFT} == {2, 3}
    assert {addresses[n] >> CHANNEL_SHIFT for n in ("nexthops", "local4", "local6")} == {1}


def test_placement_is_deterministic_whatever_the_order() -> None:
    sizes = {f"m{i}": (i % 4 + 1) * MB for i in range(11)}   # 26 MB
    reordered = dict(reversed(list(sizes.items())))
    assert place_sram(sizes, 4, 8 * MB) == place_sram(reordered, 4, 8 * MB)


def test_memories_that_do_not_fit_name_every_memory() -> None:
    sizes = {"fib4_trie": 32 * MB, "nexthops": 16 * 1024}
    with pytest.raises(SramFitError, match=r"fib4_trie \(33,554,432 B\) has no channel") as e:
        place_sram(sizes, 4, 8 * MB)
    assert "nexthops 0.02 MB" in str(e.value) and "4 SRAM channels of 8.00 MB" in str(e.value)
    # capacity alone is not enough: 5 x 6 MB on 4 x 8 MB (30 of 32 MB) cannot be placed
    with pytest.raises(SramFitError, match="m4"):
        place_sram({f"m{i}": 6 * MB for i in range(5)}, 4, 8 * MB)
    # the first two channels keep room for the runtime's descriptors: four full 8 MB
    # memories do not fit (they link on big channels instead)
    with pytest.raises(SramFitError, match="m2"):
        place_sram({f"m{i}": 8 * MB for i in range(4)}, 4, 8 * MB)
    assert place_sram({f"m{i}": 8 * MB for i in range(4)}, 4, 8 * MB, reserve=0)


def test_a_small_program_keeps_its_flat_layout() -> None:
    program = compile_source(SOURCE.replace("1048576", "1024"))
    assert placed(program, CFG) is program


def test_the_16_8_8_router_does_not_fit_the_populated_channels(tmp_path) -> None:
    from router_structures import router_with

    from npkit.compiler.mbl import compile_file

    program = compile_file(router_with("16-8-8", tmp_path))
    assert placed(program, CFG) is program          # big channels allowed: the flat layout
    with pytest.raises(CompileError, match="fib6_trie") as e:
        placed(program, CFG, big_channels=False)
    text = str(e.value)
    assert "lpm.mbl" in text and "link-sram" in text and "lpm_poptrie.mbl" in text


@pytest.fixture(scope="module")
def linked():
    program = compile_source(SOURCE)
    return program, link(program, compile_me(program, "pick"), "ixp2800-2x10gbe")


def test_the_link_places_each_array_in_one_real_channel(linked) -> None:
    _, manifest = linked
    assert manifest.overrides == {}                 # the preset's 8 MB channels
    memories = manifest.program.memories
    assert fits_channels(memories, CFG.sram_channels, CFG.sram_channel_bytes)
    # largest first, ties by name, each on the highest channel with room
    assert {m.name: m.address for m in memories if m.space == "sram"} == {
        "big_a": 3 << CHANNEL_SHIFT, "big_b": (3 << CHANNEL_SHIFT) + 4 * MB,
        "big_c": 2 << CHANNEL_SHIFT, "small": (2 << CHANNEL_SHIFT) + 4 * MB}
    # the receive descriptors on the channels the memories left (port 0's alone on 0)
    assert [fl.channel for fl in manifest.freelists] == [0, 1]
    # the freelists' descriptors are clear of the memories, the XScale's too: router4.h's
    # channel 3 holds big_a and big_b, so they go after the ports' on channel 1
    from npkit.runtime.compiled_router import xscale_freelist

    xscale = xscale_freelist(manifest)        # raises ValueError on an overlap
    assert xscale.channel == 1
    for fl in (*manifest.freelists, xscale):
        low = (fl.channel << CHANNEL_SHIFT) + fl.descriptor_base
        high = low + fl.count * fl.descriptor_bytes
        assert all(m.address + m.bytes <= low or high <= m.address for m in memories)


def _frame(index: int) -> bytes:
    return index.to_bytes(4, "big") + bytes(56)


def test_the_compiled_code_reads_the_moved_arrays(linked) -> None:
    program, manifest = linked
    native = NativeProgram(program)
    for name, index in (("big_a", 5), ("big_b", 1_000_000), ("big_c", 1_048_575),
                        ("small", 3)):
        native.region(name)[index] = 1        # port 1 for that index, port 0 elsewhere
    frames = [_frame(i) for i in (5, 6, 1_000_000, 1_048_575, 1_048_574, 3, 19, 0)]
    want = native.run(frames, in_ports=0)
    assert [v.port for v in want] == [1, 0, 1, 1, 0, 1, 1, 0]   # small[19 & 15] = small[3]
    chip = CompiledRun(manifest)
    chip.load_memories(native)
    result = chip.run({0: frames}, load=0.1)
    for port in (0, 1):
        sent = sorted(result.frames(port))
        assert [f[:60] for f in sent] == sorted(v.data[:60] for v in want if v.port == port)
    assert np.all(np.asarray(native.region("small")) <= 1)
