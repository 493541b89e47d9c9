"""Where the chip router's time goes with each route structure (issue 19, docs/lpm.md "Why
the switch waits"): the two rate tests that fail when the router switches from the 16-8-8
trie to Poptrie, run on a throw-away copy of the microblocks with each structure.

    python -m npkit.bench.lpm_chip_why [--scenario compiled_router_64|pool_pos_router|
                                                  pool_pos_router_unplaced]
                                       [--structures 16-8-8,poptrie] [--like-16-8-8]

* compiled_router_64: tests/sim/identity.py's scenario (examples/router, 2 forwarding MEs
  per port, 300 random /16-/24 routes, 64-byte frames at 90 % of line rate, a fixed run);
* pool_pos_router: tests/me/link/test_pool_pos_router.py's run (pos_router on the pool,
  44-byte frames at 75 % of 2 x OC-192 POS), linked as the test links it (`link()`, which
  first places the SRAM memories on the chip's 8 MB channels, link/sram.py);
* pool_pos_router_unplaced: the same, linked with `link_pool` alone (as the test did before:
  the flat SRAM layout, on 64 MB channels when it passes channel 0).

Per structure: frames transmitted; per SRAM channel the memories placed on it, its
utilization and commands and bytes per transmitted frame; per ME with instructions, its
cycles per transmitted frame split as the core counts them: busy (one per instruction),
stalled (taken-branch penalties and full command FIFOs) and idle (no context ready: every
thread waits on memory).  `--like-16-8-8` places Poptrie's memories as the 16-8-8 router's
flat layout puts them (the tables on channel 0, nexthops and the local tables alone on
channel 1, the buffer descriptors on channels 2 and 3): does the placement matter?
A benchmark, not a test; run from the repository root (it imports tests' helpers).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import npkit.link.linker as linker
import npkit.link.sram as sram
from npkit.compiler.mbl.sema import Program
from npkit.sim.config import ChipConfig

REPO = Path(__file__).resolve().parents[1]
FILES = {"16-8-8": "lpm.mbl", "poptrie": "lpm_poptrie.mbl"}
MB = 1 << 20


def copy_with(structure: str, root: Path, example: str, walker: Path | None = None) -> Path:
    """examples/<example> and microblocks/ under `root`, both LPM file names holding
    `structure`'s walker (as tests/router_structures.router_with; `walker`: this file
    instead of microblocks/lpm_poptrie.mbl); the example's folder."""
    shutil.copytree(REPO / "microblocks", root / "microblocks")
    source = REPO / "microblocks" / FILES[structure]
    if walker is not None and structure == "poptrie":
        source = walker
    for name in FILES.values():
        shutil.copy(source, root / "microblocks" / name)
    shutil.copytree(REPO / "examples" / example, root / "examples" / example)
    return root / "examples" / example


@contextmanager
def placement_like_16_8_8() -> Iterator[None]:
    """Poptrie's SRAM memories where the 16-8-8 router's flat layout (64 MB channels) has
    its own: both tables on channel 0, nexthops and the local tables at 32 MB on channel 1;
    the linker then puts the buffer descriptors on channels 2 and 3, as for 16-8-8."""
    place, placed = sram.place_sram, linker.placed
    done: set[int] = set()

    def like(sizes: dict[str, int], channels: int, channel_bytes: int,
             reserve: int = 0) -> dict[str, int]:
        out = {"fib4_poptrie": 0, "fib6_poptrie": 8 * MB}
        offset = 1 << sram.CHANNEL_SHIFT | 32 * MB
        for name in sorted(set(sizes) - set(out)):
            out[name], offset = offset, offset + sizes[name]
        return out

    def once(program: Program, cfg: ChipConfig, **kw: Any) -> Program:
        if id(program) in done:            # link_body checks the program is placed
            return program
        out = placed(program, cfg, **kw)
        done.add(id(out))
        return out

    sram.place_sram, linker.placed = like, once
    try:
        yield
    finally:
        sram.place_sram, linker.placed = place, placed


@dataclass
class Outcome:
    frames: int
    counters: dict[str, Any]
    memories: dict[int, list[str]]      # SRAM channel -> memory names


def channels_of(manifest: Any) -> dict[int, list[str]]:
    """SRAM channel -> the memories the linked program has on it (a 16-8-8 table may span
    two)."""
    out: dict[int, list[str]] = {}
    for m in manifest.program.memories:
        if m.space == "sram" and m.bytes:
            first = sram.channel_of(m.address)[0]
            last = sram.channel_of(m.address + m.bytes - 1)[0]
            for ch in range(first, last + 1):
                out.setdefault(ch, []).append(m.name)
    return out


def compiled_router_64(folder: Path) -> Outcome:
    from npkit.bench import router4_load as r4l
    from npkit.bench.compiled_load import tables
    from npkit.compiler.mbl import compile_file
    from npkit.compiler.me import compile_me
    from npkit.link import link
    from npkit.runtime.compiled import CompiledRun

    program = compile_file(folder / "router.mbl")
    linked = link(program, compile_me(program, "router"), fwd_mes_per_port=2)
    workload = r4l.Workload.make(3, 300, 1200, 64)
    run = CompiledRun(linked)
    run.load_memories(tables(program, workload))
    result = run.run(workload.frames, load=0.9)
    return Outcome(sum(len(v) for v in result.out.values()), run.chip.counters(),
                   channels_of(linked))


def pool_pos_router(folder: Path, placed: bool = True) -> Outcome:
    test = importlib.import_module("tests.me.link.test_pool_pos_router")
    test.POS_ROUTER = folder / "pos_router.mbl"
    if not placed:      # link_pool alone: the SRAM memories not placed on the channels
        from npkit.link.pool import link_pool

        def linked(program: Program, build: Any, platform: str, *, pool_mes_per_port: int,
                   rx_ports: int | None) -> Any:
            return link_pool(program, build, platform, mes_per_port=pool_mes_per_port,
                             rx_ports=rx_ports)
        test.link = linked
    manifest, run, offered, verdicts, sinks, _ = test.run_at(test.LOAD)
    native = {q: sum(v.kind == "forward" and v.port == q for vs in verdicts.values()
                     for v in vs) for q in (0, 1)}
    sent = {q: len(s.frames) for q, s in sinks.items()}
    print(f"  output queues: sent {sent}, the native target forwards {native}; "
          f"RBUF drops {run.receive_drops()}")
    return Outcome(sum(sent.values()), run.chip.counters(), channels_of(manifest))


SCENARIOS: dict[str, tuple[str, Callable[[Path], Outcome]]] = {
    "compiled_router_64": ("router", compiled_router_64),
    "pool_pos_router": ("pos_router", pool_pos_router),
    "pool_pos_router_unplaced": ("pos_router", lambda f: pool_pos_router(f, placed=False)),
}


def report(name: str, out: Outcome) -> None:
    n = max(out.frames, 1)
    print(f"{name}: {out.frames} frames transmitted")
    for ch, c in enumerate(out.counters["channels"]["sram"]):
        print(f"  SRAM ch {ch}: {c['utilization']:6.1%} busy, {c['commands'] / n:5.2f} cmd, "
              f"{c['bytes'] / 4 / n:5.2f} words per frame; "
              f"{', '.join(out.memories.get(ch, [])) or '-'}")
    for me in out.counters["mes"]:
        if not me["instructions"]:
            continue
        busy, stalled, idle = (me[k] / n for k in ("busy_cycles", "stalled_cycles",
                                                   "idle_cycles"))
        total = busy + stalled + idle
        print(f"  ME {me['number']:2}: per frame busy {busy:6.1f} stalled {stalled:5.1f} "
              f"idle {idle:5.1f} cycles; idle {idle / total:5.1%} of its time")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="compiled_router_64")
    parser.add_argument("--structures", default="16-8-8,poptrie")
    parser.add_argument("--like-16-8-8", action="store_true",
                        help="Poptrie's memories placed as the 16-8-8 router's")
    parser.add_argument("--poptrie-walker", type=Path,
                        help="a variant of microblocks/lpm_poptrie.mbl to run instead")
    args = parser.parse_args(argv)
    example, scenario = SCENARIOS[args.scenario]
    for structure in args.structures.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            folder = copy_with(structure, Path(tmp), example, args.poptrie_walker)
            if args.like_16_8_8 and structure == "poptrie":
                with placement_like_16_8_8():
                    out = scenario(folder)
                report(f"{structure} (placed as 16-8-8)", out)
            else:
                report(structure, scenario(folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
