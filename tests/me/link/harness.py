"""Shared by the link tests: the native target's verdicts as the chip should show them,
and the comparison of a CompiledResult with them."""

from __future__ import annotations

from collections import Counter

from npkit.compiler.mbl import NativeProgram
from npkit.runtime.compiled import CompiledResult, CompiledRun


def expected(native: NativeProgram, frames: dict[int, list[bytes]]):
    """(out port -> {in port -> frames}, drops by reason, in port -> exceptions)."""
    out: dict[int, dict[int, list[bytes]]] = {}
    drops: Counter[str] = Counter()
    exceptions: dict[int, list[tuple[int, int, bytes]]] = {}
    for p, port_frames in frames.items():
        for v in native.run(port_frames, in_ports=p) if port_frames else []:
            if v.kind == "forward":
                out.setdefault(v.port, {}).setdefault(p, []).append(v.data)
            elif v.kind == "drop":
                drops[v.reason] += 1
            else:
                exceptions.setdefault(p, []).append((v.code, v.next_hop & 0xFFFF, v.data))
    return out, drops, exceptions


def is_interleaving(out: list[bytes], a: list[bytes], b: list[bytes]) -> bool:
    """out merges a and b keeping the order of each."""
    if len(out) != len(a) + len(b):
        return False
    states = {(0, 0)}
    for frame in out:
        states = {s for i, j in states
                  for s, ok in (((i + 1, j), i < len(a) and a[i] == frame),
                                ((i, j + 1), j < len(b) and b[j] == frame)) if ok}
        if not states:
            return False
    return True


def check_against_native(result: CompiledResult, native: NativeProgram,
                         frames: dict[int, list[bytes]]) -> None:
    out, drops, exceptions = expected(native, frames)
    assert result.receive_drops == {}
    for q in (0, 1):
        by_input = out.get(q, {})
        assert is_interleaving(result.frames(q), by_input.get(0, []), by_input.get(1, [])), \
            f"port {q}: {len(result.frames(q))} frames out, expected " \
            f"{[len(v) for v in by_input.values()]}"
    assert result.drops == dict(drops)
    got_exc: dict[int, list[tuple[int, int, bytes]]] = {}
    for e in result.exceptions:
        got_exc.setdefault(e.in_port, []).append((e.code, e.next_hop, e.frame))
    assert got_exc == exceptions
    assert result.accounted == result.offered
    assert result.leak_free, [r.describe() for r in result.leaks]


def drive(run: CompiledRun, offered: int, sinks: dict, step: int = 20_000,
          max_cycles: int = 20_000_000) -> list:
    """Run `run`'s chip (sources and `sinks` attached by the caller) until every offered
    frame is accounted for (sent, dropped, counted, an exception) or `max_cycles`, taking
    the exceptions as they come as the XScale would (their buffers go back to the
    freelists): the exceptions, in ring order."""
    exceptions: list = []
    start = run.chip.now
    while run.chip.now - start < max_cycles:
        run.chip.run(cycles=step)
        exceptions += run.take_exceptions()
        done = (sum(len(s.frames) for s in sinks.values()) + len(exceptions)
                + sum(run.drop_counts().values()) + sum(run.receive_drops().values()))
        if done >= offered:
            break
    run.chip.run(cycles=step)
    return exceptions + run.take_exceptions()


def exceptions_by_port(exceptions: list) -> dict[int, list[tuple[int, int, bytes]]]:
    """CompiledExceptions as (code, next_hop, frame) per input port, in order."""
    out: dict[int, list[tuple[int, int, bytes]]] = {}
    for e in exceptions:
        out.setdefault(e.in_port, []).append((e.code, e.next_hop, e.frame))
    return out
