"""One packet's path through an assembled loop, walked statically between named waypoints
(docs/verdict.md, "ME stages").

The compile report (``report.analyze``) walks the *worst* path of a region, which for a
dispatch loop is a frame of twelve elements or an exception, not the path a 40-byte
forwarded packet takes; and it ends a path at ``rtn``.  ``walk(image, waypoints)`` walks the
path a given kind of packet takes, told by the labels it passes:

    walk(rx_image, [Waypoint("rx_loop"), Waypoint("eop"), Waypoint("last_table", 4),
                    Waypoint("wait_eop"), Waypoint("rx_loop")])

From each waypoint to the next the path falls through every conditional branch except one
whose target is the next waypoint (``how="fall"``, the default: the waypoints name the
branches the packet takes; a polling loop counts one pass, the awaited thing being there)
or takes the worst path (``how="worst"``: most cycles, back edges never taken; for a region
whose branches depend on the packet's contents, e.g. a compiled body).  ``jump[reg,
table#]`` lands on the next waypoint when it lies in the 32 words from its label (the
waypoint names the table entry), else on the label; ``rtn`` returns to the next waypoint
(the caller's ``load_addr[ret, ...]``).  The walk ends on reaching the last waypoint, whose
instruction is not counted.

Timing is the compile report's (docs/me-backend.md, "Compile report"): one cycle per
instruction, ``me.branch_taken_penalty`` per taken branch less its defer slots, and a
command completing ``ceil(bytes / rate) + latency`` cycles after issue on an idle unit (the
chip config's figures); a ``ctx_arb`` / ``ctx_swap`` sleeps until the signals it waits for
complete.  A wait on a signal nothing on the path raised (a token from another thread, the
receive status) counts 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from npkit.compiler.uc import Image
from npkit.sim.config import ChipConfig

from .report import (
    _NO_PATH,
    ReportError,
    _address,
    _Cfg,
    _decode_all,
    _Edge,
    _loop_bounds,
    _path_steps,
    _region,
    _Timeline,
    _unit_and_command,
    _worst_path,
)

JUMP_TABLE_WORDS = 32   # how far past its label a jump[reg, table#] may land


@dataclass(frozen=True)
class Waypoint:
    """A label the path passes (``offset`` words after it); ``how`` picks the path that
    reaches it from the previous waypoint: "fall" (fall through every conditional branch
    but one to this waypoint) or "worst" (most cycles)."""

    label: str
    offset: int = 0
    how: str = "fall"


@dataclass(frozen=True)
class PathCost:
    """One thread's cost of one packet on the walked path."""

    cycles: int                         # C: instructions + taken-branch penalties
    instructions: int
    memory_wait_cycles: int             # W: asleep on its own commands, idle units
    commands: dict[str, int]            # "dram rbuf_rd" -> count, on the path
    path: tuple[int, ...]               # addresses in execution order

    @property
    def thread_cycles(self) -> int:
        """L = C + W: one thread's time per packet."""
        return self.cycles + self.memory_wait_cycles


class _WalkCfg(_Cfg):
    """The report's control flow with ``rtn`` going to ``back_to`` and a register jump to
    any word of its table."""

    back_to: int = -1

    def edges(self, pc: int) -> list[_Edge]:
        insn = self.insns[pc]
        if insn.mnemonic == "rtn":
            return [_Edge(self.back_to, penalty=self.penalty)] if self.back_to >= 0 else []
        if insn.mnemonic == "jump":
            first = insn.fields["target"]
            lands = self.back_to if first <= self.back_to < first + JUMP_TABLE_WORDS else first
            return [_Edge(lands, penalty=self.penalty)]
        return super().edges(pc)


def _segment(image: Image, cfg: _WalkCfg, start: int, target: int, how: str
             ) -> list[tuple[int, int]]:
    """(pc, penalty) steps from ``start`` up to (not including) ``target``."""
    cfg.exits = frozenset({target})
    cfg.back_to = target
    if how == "fall":
        return _fall(cfg, start, target)
    if how != "worst":
        raise ReportError(f"waypoint: how must be 'fall' or 'worst', not {how!r}")
    _, back = _region(cfg, start)
    loops, _ = _loop_bounds(image, back, {})
    begin = (start, ())
    best = _worst_path(cfg, loops, begin)
    if best[begin][0] == _NO_PATH:
        raise ReportError(f"no path from {start} reaches {target}")
    return _path_steps(cfg, loops, begin, best)


def _fall(cfg: _WalkCfg, start: int, target: int) -> list[tuple[int, int]]:
    """Fall through every conditional branch but one to ``target``; follow the others."""
    steps: list[tuple[int, int]] = []
    pc, seen = start, set()
    while pc != target:
        if pc in seen:
            raise ReportError(f"the path from {start} loops at {pc} before reaching {target}")
        seen.add(pc)
        edges = cfg.edges(pc)
        if not edges:
            raise ReportError(f"the path from {start} ends at {pc} before reaching {target}")
        edge = next((e for e in edges if e.target == target), edges[0])
        steps.append((pc, edge.penalty))
        steps.extend((v, 0) for v in edge.via)
        pc = edge.target
    return steps


def walk(image: Image, waypoints: Sequence[Waypoint], chip: ChipConfig | None = None
         ) -> PathCost:
    """The cost of the path through ``waypoints`` (at least two) in ``image``."""
    if len(waypoints) < 2:
        raise ReportError("a walk needs at least two waypoints")
    chip = chip or ChipConfig.load("ixp2800")
    cfg = _WalkCfg(_decode_all(image), frozenset(), int(chip.raw["me"]["branch_taken_penalty"]))
    pcs = [_address(image, w.label, "waypoint") + w.offset for w in waypoints]
    steps: list[tuple[int, int]] = []
    for start, target, point in zip(pcs, pcs[1:], waypoints[1:], strict=False):
        steps.extend(_segment(image, cfg, start, target, point.how))
    timeline = _Timeline(chip)
    commands: dict[str, int] = {}
    for pc, penalty in steps:
        insn = cfg.insns[pc]
        timeline.run(insn, penalty)
        command = _unit_and_command(insn)
        if command:
            commands[" ".join(command)] = commands.get(" ".join(command), 0) + 1
    return PathCost(cycles=len(steps) + sum(p for _, p in steps), instructions=len(steps),
                    memory_wait_cycles=timeline.waited, commands=dict(sorted(commands.items())),
                    path=tuple(pc for pc, _ in steps))


__all__ = ["JUMP_TABLE_WORDS", "PathCost", "Waypoint", "walk"]
