"""`npkit build X.mbl --images DIR` then `npkit run DIR/manifest.toml` forwards what
`npkit run X.mbl --target chip` forwards (issue 17's acceptance), and both what the native
target forwards: examples/router/router.mbl with routes, next hops and an own address,
scapy-built IPv4 and IPv6 frames on both ports.

The library calls under those commands: `npkit.link.build_images` (the folder: images,
memory files, manifest.toml) and `npkit.link.chip_manifest` (the same manifest in memory);
both chips are built by the one loader, `npkit.sim.loader.build_from_manifest`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scapy.all import IP, UDP, Ether, IPv6, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.link import Manifest, build_images, chip_manifest, parse_manifest
from npkit.runtime.compiled import CompiledRun, paced
from npkit.runtime.lpm import RouteTables
from npkit.sim.loader import build_from_manifest
from npkit.sim.packets import ListSink, ListSource

from .harness import check_against_native, expected, is_interleaving

ROUTER = Path(__file__).parents[3] / "examples" / "router" / "router.mbl"
PLATFORM = "ixp2800-2x10gbe"
ROUTES4 = {(0x0A000000, 8): 1, (0x0A010000, 16): 2, (0xC0000200, 24): 3}
ROUTES6 = {(0x20010DB8 << 96, 32): 1, (0x20010DB8_00010000 << 64, 48): 2}
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 0, 1500),
            3: (0x02AA00000003, 0x02BB00000003, 1, 1500)}
MACS = {"dst": "02:00:00:00:00:fe", "src": "02:00:00:00:00:01"}
RUN_CYCLES = 400_000        # the 40 frames at 20 % of line rate take ~20,000


def v4(dst: str, uid: int, **kw) -> bytes:
    return raw(Ether(**MACS) / IP(src="198.18.0.1", dst=dst, id=uid, **kw)
               / UDP(sport=1, dport=2) / (b"p" * 18))


def v6(dst: str, uid: int, **kw) -> bytes:
    return raw(Ether(**MACS) / IPv6(src="2001:db8:ffff::1", dst=dst, fl=uid, **kw)
               / UDP(sport=1, dport=2) / (b"q" * 18))


def traffic(port: int) -> list[bytes]:
    """Forwarded to both ports, dropped (bad checksum, TTL 1 is an exception, no route)."""
    frames = []
    for i in range(5):
        uid = port << 8 | i
        frames += [v4(f"10.1.{port}.{i}", uid), v4(f"10.2.{i}.1", uid),
                   v4(f"192.0.2.{i + 1}", uid), v6(f"2001:db8::{i + 1}", uid),
                   v6(f"2001:db8:1::{i + 1}", uid), v4("10.3.0.1", uid, ttl=1),
                   v4("11.0.0.1", uid), bytes(v4("10.1.0.1", uid)[:24]) + b"\xff" * 20]
    return frames


@pytest.fixture(scope="module")
def router() -> tuple:
    program = compile_file(ROUTER)
    native = NativeProgram(program)
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    RouteTables.of(native).load(ROUTES4, ROUTES6)
    native.table_add("local4", 0x0A000001, 1)
    return program, native


def forwarded(manifest: Manifest, frames: dict[int, list[bytes]]) -> dict[int, list[bytes]]:
    """Each port's output frames of a chip the loader built from `manifest`."""
    chip = build_from_manifest(manifest).chip
    sinks = {q: ListSink() for q in range(len(manifest.ports))}
    for q, sink in sinks.items():
        chip.attach_sink(q, sink)
    for p, port_frames in frames.items():
        chip.attach_source(p, ListSource(paced(port_frames, 0.2, manifest.ports[p])))
    chip.run(cycles=RUN_CYCLES)
    chip.close_sinks()
    return {q: [f.data for f in sink.frames] for q, sink in sinks.items()}


def test_built_images_forward_what_the_in_memory_link_and_native_do(router,
                                                                    tmp_path: Path) -> None:
    program, native = router
    out = tmp_path / "out"
    path = build_images(program, PLATFORM, out, tables=native)
    assert path == out / "manifest.toml"
    names = [p.name for p in out.iterdir()]
    assert {"rx.img", "fwd.img", "tx.img"} <= set(names)
    assert any(n.endswith(".bin") for n in names)          # the tries: memory files
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", n) for n in names), names

    frames = {p: traffic(p) for p in (0, 1)}
    from_files = forwarded(parse_manifest(path), frames)
    in_memory = forwarded(chip_manifest(program, PLATFORM, tables=native), frames)
    assert from_files == in_memory

    want, _drops, _exceptions = expected(native, frames)
    for q in (0, 1):
        by_input = want.get(q, {})
        assert by_input, f"the traffic forwards nothing to port {q}"
        assert is_interleaving(from_files[q], by_input.get(0, []), by_input.get(1, [])), \
            f"port {q}: chip {len(from_files[q])} frames, native " \
            f"{[len(v) for v in by_input.values()]}"


def test_the_written_manifest_carries_the_compiled_runtime(router, tmp_path: Path) -> None:
    """The [program] table read back from the folder is all CompiledRun needs (tables
    from the memory files, drops by reason, exceptions off the ring): it matches the
    native target frame for frame, drops and exceptions included."""
    program, native = router
    path = build_images(program, PLATFORM, tmp_path, tables=native)
    frames = {p: traffic(p) for p in (0, 1)}
    result = CompiledRun(parse_manifest(path)).run(frames, load=0.2)
    check_against_native(result, native, frames)
    assert result.drops and result.exceptions      # the traffic exercises both


def test_the_written_manifest_reads_back_equal(router, tmp_path: Path) -> None:
    program, native = router
    manifest = chip_manifest(program, PLATFORM, tables=native)
    again = parse_manifest(build_images(program, PLATFORM, tmp_path, tables=native))
    assert again.program == manifest.program
    assert (again.rings, again.freelists, again.ports, again.overrides) == \
        (manifest.rings, manifest.freelists, manifest.ports, manifest.overrides)
    assert [(s.unit, s.address, list(s.words)) for s in again.memory] == \
        [(s.unit, s.address, list(s.words)) for s in manifest.memory]
    assert [s.mes for s in again.images] == [s.mes for s in manifest.images]
