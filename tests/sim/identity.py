"""Fixed-seed chip runs and their digests: the guard for every change to the simulator core
that must not change a result (issue 13, acceptance point 2; docs/performance.md section 2).

Each scenario builds a chip with the ordinary Python stack, runs fixed traffic on it and
records, at the core's boundary, every transmitted frame (port, first-bit cycle, last-bit
cycle, bytes, in the order the core hands them out) and, at the end, every counter of
``_core.counters()`` plus ``now`` and the instructions retired.  ``Digest`` keeps a hash of
the whole frame stream, a hash per block of ``BLOCK`` frames (so a mismatch says where the
streams part) and the counters flattened to ``path -> value``.

    python tests/sim/identity.py --write     # record tests/sim/data/identity.json
    python tests/sim/identity.py --schedule quantum --write   # ... identity_quantum.json

Only record with a core known to be right (the digests are what every later core is held
to); tests/sim/test_identity.py recomputes and compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from npkit.bench import router4_load as r4l
from npkit.bench import sim_speed
from npkit.bench.compiled_load import ROUTER, tables
from npkit.bench.sim_speed import min_size_frames, mixed_frames
from npkit.compiler.mbl import compile_file
from npkit.compiler.me import compile_me
from npkit.link import link
from npkit.runtime.compiled import CompiledRun
from npkit.runtime.loader import load_manifest
from npkit.sim.packets import ListSource, RxFrame

DATA = Path(__file__).parent / "data" / "identity.json"
# The opt-in quantum schedule (docs/sim-core.md) has results of its own: its digests, recorded
# with the core of main at 924e682 (the schedule's first merged version).
DATA_QUANTUM = Path(__file__).parent / "data" / "identity_quantum.json"
QUANTUM_SCENARIOS = ("compiled_router_64", "l2wire_64")


def data_file(schedule: str) -> Path:
    return DATA_QUANTUM if schedule == "quantum" else DATA
BLOCK = 500  # frames per block hash


@dataclass
class Digest:
    frames: int = 0
    frames_sha256: str = ""
    blocks: list[str] = field(default_factory=list)
    counters: dict[str, Any] = field(default_factory=dict)


class CoreTap:
    """Stands in for ``chip._core``: forwards everything, and hashes the frames that
    ``take_tx_columns``/``take_tx`` hand out."""

    def __init__(self, core: Any) -> None:
        self._core = core
        self._all = hashlib.sha256()
        self._block = hashlib.sha256()
        self._in_block = 0
        self.frames = 0
        self.blocks: list[str] = []

    def _add(self, port: int, first: int, last: int, data: bytes) -> None:
        record = struct.pack("<HQQI", port, first, last, len(data)) + bytes(data)
        self._all.update(record)
        self._block.update(record)
        self.frames += 1
        self._in_block += 1
        if self._in_block == BLOCK:
            self.blocks.append(self._block.hexdigest()[:16])
            self._block, self._in_block = hashlib.sha256(), 0

    def take_tx_columns(self) -> Any:
        columns = self._core.take_tx_columns()
        for port, first, last, data in zip(*columns, strict=True):
            self._add(int(port), int(first), int(last), data)
        return columns

    def take_tx(self) -> Any:
        frames = self._core.take_tx()
        for port, first, last, data in frames:
            self._add(int(port), int(first), int(last), data)
        return frames

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)

    def digest(self) -> Digest:
        blocks = list(self.blocks)
        if self._in_block:
            blocks.append(self._block.copy().hexdigest()[:16])
        counters = flatten(dict(self._core.counters()))
        counters["now"] = int(self._core.now)
        counters["instructions_retired"] = int(self._core.instructions_retired)
        return Digest(self.frames, self._all.hexdigest(), blocks, counters)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{"mes": [{"idle_cycles": 3}]} -> {"mes.0.idle_cycles": 3}."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            out.update(flatten(value[key], f"{prefix}{key}."))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            out.update(flatten(item, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = value.item() if hasattr(value, "item") else value
    return out


def tap(chip: Any) -> CoreTap:
    chip._core = CoreTap(chip._core)
    return chip._core


# --------------------------------------------------------------------------- scenarios
def l2wire(frames_of: Callable[[int, int], list[bytes]], count: int) -> Digest:
    """The packaged l2wire at 100 % line rate on both ports, as bench/sim_speed runs it."""

    chip = load_manifest(sim_speed.manifest_path()).chip
    core = tap(chip)
    for port in (0, 1):
        chip.attach_source(port, ListSource([RxFrame(f) for f in frames_of(count, port)]))
    chip.run(packets=2 * count, cycles=50_000_000, until_idle=True,
             quiet_cycles=sim_speed.QUIET_CYCLES)
    chip.run(cycles=30_000)
    return core.digest()


def l2wire_64() -> Digest:
    return l2wire(min_size_frames, 3000)


def l2wire_mixed() -> Digest:
    return l2wire(mixed_frames, 800)


def router4_64() -> Digest:
    """The hand-written router4, 64-byte frames at 100 % (over its lossless load: RBUF and
    buffer drops happen), sliced at the steady-state marks like bench/router4_load."""

    workload = r4l.Workload.make(7, 300, 2000, 64)
    chip = r4l.load_router(workload).chip
    core = tap(chip)
    gap = r4l.frame_interval_s(64, 1.0)
    for port, frames in workload.frames.items():
        chip.attach_source(port, ListSource([RxFrame(f, i * gap) for i, f in enumerate(frames)]))
    span = 2000 * gap * chip.config.clock_hz
    for mark in r4l.WINDOW:
        chip.run(cycles=int(mark * span) - chip.now)
    chip.run(packets=4000, cycles=int(span) - chip.now + r4l.DRAIN_CYCLES, until_idle=True,
             quiet_cycles=r4l.QUIET_CYCLES)
    return core.digest()


def compiled_router_64() -> Digest:
    """The compiled examples/router (2 forwarding MEs per port) at 90 % of line rate."""

    program = compile_file(ROUTER)
    linked = link(program, compile_me(program, "router"), fwd_mes_per_port=2)
    workload = r4l.Workload.make(3, 300, 1200, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    core = tap(run.chip)
    run.run(workload.frames, load=0.9)
    return core.digest()


SCENARIOS: dict[str, Callable[[], Digest]] = {
    "l2wire_64": l2wire_64,
    "l2wire_mixed": l2wire_mixed,
    "router4_64": router4_64,
    "compiled_router_64": compiled_router_64,
}


def stored(schedule: str = "default") -> dict[str, Digest]:
    raw = json.loads(data_file(schedule).read_text())
    return {name: Digest(**d) for name, d in raw["scenarios"].items()}


def differences(want: Digest, got: Digest, limit: int = 12) -> list[str]:
    """What differs, readable: frame counts, the first differing block, counters."""
    out = []
    if want.frames != got.frames:
        out.append(f"frames transmitted: expected {want.frames}, got {got.frames}")
    for i, (a, b) in enumerate(zip(want.blocks, got.blocks, strict=False)):
        if a != b:
            out.append(f"frames {i * BLOCK}..{(i + 1) * BLOCK - 1}: the first block that "
                       "differs (port, cycles or bytes)")
            break
    if want.frames_sha256 != got.frames_sha256 and not out:
        out.append("frame stream hash differs")
    keys = sorted(set(want.counters) | set(got.counters))
    bad = [k for k in keys if want.counters.get(k) != got.counters.get(k)]
    for k in bad[:limit]:
        out.append(f"counter {k}: expected {want.counters.get(k)!r}, got {got.counters.get(k)!r}")
    if len(bad) > limit:
        out.append(f"... and {len(bad) - limit} more counters")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"record {DATA} (or the quantum's)")
    parser.add_argument("--schedule", choices=("default", "quantum"), default="default",
                        help="the chips' schedule (sets NPKIT_SCHEDULE)")
    parser.add_argument("names", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args(argv)
    os.environ["NPKIT_SCHEDULE"] = args.schedule
    data = data_file(args.schedule)
    results = {}
    for name in args.names:
        got = SCENARIOS[name]()
        results[name] = got
        print(f"{name}: {got.frames} frames, {got.counters['instructions_retired']} "
              f"instructions, {got.counters['now']} cycles, {got.frames_sha256[:16]}")
    if args.write:
        old = stored(args.schedule) if data.exists() else {}
        old.update(results)
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text(json.dumps({"scenarios": {k: asdict(v) for k, v in old.items()}},
                                   indent=1, sort_keys=True) + "\n")
        return 0
    want = stored(args.schedule)
    bad = 0
    for name, got in results.items():
        diff = differences(want[name], got)
        bad += bool(diff)
        print(f"{name}: {'identical' if not diff else 'DIFFERS'}")
        for line in diff:
            print("   ", line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
