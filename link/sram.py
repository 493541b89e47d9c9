"""A program's SRAM memories on the chip's SRAM channels (docs/link.md, "SRAM placement").

The checker lays a program's memories out flat, one after another from address 0
(`MemoryInfo.word_offset`).  On the chip an SRAM byte address is channel << 26 | offset
(bits 27..26 name the channel), and each channel holds only `[sram] channel_bytes` (the
IXP2800 preset: 4 channels of 8 MB, the populated size of the published system).  So:

* a program whose flat layout already lies inside channel 0 keeps it (every small program:
  nothing moves, nothing is recompiled);
* otherwise its SRAM memories are placed on the channels, largest first, each on the
  highest channel with room after the memories already there (first fit decreasing, from
  the last channel down; ties by name, so the placement is deterministic; the first two
  channels keep 64 KB for the runtime's buffer descriptors).  A memory never straddles
  channels.  From the top down because the runtime's buffer descriptors take the lowest
  free pair of channels (link/plan.py), port 0's on the lower one: filled from the top, the
  program leaves that channel to the descriptors whenever the others hold its memories,
  so the receive path's four descriptor commands a frame do not queue behind the router's
  per-frame table reads (docs/link.md, "SRAM placement").  The
  program is then relocated (`relocated`) and its entry compiled again: the ME code holds
  the addresses;
* memories that do not fit the chip's channels are a CompileError at the largest one's
  declaration naming every SRAM memory with its size, unless big channels are allowed
  (`big_channels`, the default): the flat layout then runs on 64 MB channels (the chip's
  maximum, FACTS.md §1: the manifest overrides `[sram] channel_bytes`), which the 16-8-8
  tries of microblocks/lpm.mbl (96 MB) still need.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from npkit.base.diagnostics import Diagnostic, SourceLocation
from npkit.compiler.mbl.diagnostics import CompileError
from npkit.compiler.mbl.sema import Program
from npkit.compiler.mbl.types import MemType
from npkit.sim.config import ChipConfig

from .errors import LinkError
from .program import ProgramMemory

CHANNEL_SHIFT = 26                  # SRAM byte address bits 27..26: the channel
BIG_CHANNEL_BYTES = 1 << CHANNEL_SHIFT
MB = 1 << 20
# Kept free at the end of the first two channels: the runtime's buffer descriptors go on two
# adjacent channels after the memories there (link/plan.py; 2 x 128 x 32 B, the XScale's
# 64 x 32 B, 4 KB alignment), so a program that fills every channel falls back instead.
RUNTIME_RESERVE = 64 << 10


class SramFitError(LinkError):
    """The SRAM memories do not fit the channels (the message names them)."""


def channel_of(address: int) -> tuple[int, int]:
    """(channel, byte offset in it) of an SRAM byte address."""
    return address >> CHANNEL_SHIFT, address & (BIG_CHANNEL_BYTES - 1)


def fits_channels(placements: Sequence[ProgramMemory], channels: int,
                  channel_bytes: int) -> bool:
    """Every SRAM memory inside one of `channels` channels of `channel_bytes`."""
    for m in placements:
        if m.space != "sram" or not m.bytes:
            continue
        channel, offset = channel_of(m.address)
        if channel >= channels or offset + m.bytes > channel_bytes:
            return False
    return True


def place_sram(sizes: dict[str, int], channels: int, channel_bytes: int,
               reserve: int = RUNTIME_RESERVE) -> dict[str, int]:
    """SRAM byte addresses (channel << 26 | offset) for memories of `sizes` bytes (word
    multiples): largest first (ties by name), each at the end of the highest channel that
    still has room (the first two channels keep `reserve` bytes for the runtime's buffer
    descriptors, which go on the lowest channels the memories leave: module docstring).
    Raises SramFitError naming what did not fit."""
    ends = [0] * channels
    room = [channel_bytes - (reserve if c < 2 else 0) for c in range(channels)]
    addresses = {}
    for name, size in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        channel = next((c for c in reversed(range(channels)) if ends[c] + size <= room[c]),
                       None)
        if channel is None:
            raise SramFitError(_no_room(name, sizes, addresses, ends, channel_bytes))
        addresses[name] = channel << CHANNEL_SHIFT | ends[channel]
        ends[channel] += size
    return addresses


def _no_room(name: str, sizes: dict[str, int], placed: dict[str, int], ends: list[int],
             channel_bytes: int) -> str:
    listing = ", ".join(f"{n} {_mb(s)}" for n, s in sorted(sizes.items(),
                                                          key=lambda i: (-i[1], i[0])))
    free = ", ".join(f"{channel_bytes - e:,} B" for e in ends)
    return (f"the program's SRAM memories do not fit {len(ends)} SRAM channels of "
            f"{_mb(channel_bytes)}: {name} ({sizes[name]:,} B) has no channel with room "
            f"(free per channel after {len(placed)} larger memories: {free}); SRAM memories: "
            f"{listing}, {_mb(sum(sizes.values()))} in all")


def _mb(size: int) -> str:
    return f"{size / MB:.2f} MB"


def relocated(program: Program, addresses: dict[str, int]) -> Program:
    """The program with its SRAM memories at `addresses` (byte addresses), for the ME back
    end: the memories and the memory types of its expressions.  Not for the native target
    (NativeProgram packs its host arrays from the flat layout)."""
    moved = {name: dataclasses.replace(m, word_offset=addresses[name] // 4)
             for name, m in program.memories.items() if name in addresses}
    types = {key: MemType(moved[t.memory.name])
             if isinstance(t, MemType) and t.memory.name in moved else t
             for key, t in program.types.items()}
    return dataclasses.replace(program, memories={**program.memories, **moved}, types=types)


def sram_sizes(program: Program) -> dict[str, int]:
    return {m.name: 4 * m.words for m in program.memories.values()
            if m.space == "sram" and m.words}


def placed(program: Program, cfg: ChipConfig, *, big_channels: bool = True) -> Program:
    """The program with its SRAM memories on `cfg`'s channels (the module docstring): the
    same object when its flat layout already fits channel 0 (or, with `big_channels`, when
    only 64 MB channels hold it)."""
    flat = tuple(ProgramMemory(m.name, m.space, 4 * m.word_offset, 4 * m.words)
                 for m in program.memories.values())
    if fits_channels(flat, cfg.sram_channels, cfg.sram_channel_bytes):
        return program
    sizes = sram_sizes(program)
    try:
        return relocated(program, place_sram(sizes, cfg.sram_channels, cfg.sram_channel_bytes))
    except SramFitError as err:
        end = max((m.address + m.bytes for m in flat if m.space == "sram"), default=0)
        if big_channels and end <= cfg.sram_channels * BIG_CHANNEL_BYTES:
            return program
        raise _located(program, sizes, str(err)) from None


def same_sram_layout(a: Program, b: Program) -> bool:
    """Whether two programs put every SRAM memory at the same address."""
    def layout(p: Program) -> dict[str, int]:
        return {m.name: m.word_offset for m in p.memories.values() if m.space == "sram"}
    return layout(a) == layout(b)


def _located(program: Program, sizes: dict[str, int], message: str) -> CompileError:
    largest = min(sizes, key=lambda n: (-sizes[n], n))
    span = next((d.span for mod in program.modules for d in mod.decls if d.name == largest),
                SourceLocation("<unknown>", 1, 1))
    try:
        sources = {span.file: Path(span.file).read_text(encoding="utf-8")}
    except OSError:
        sources = {}
    hint = ("make the tables smaller (the compact LPM: import microblocks/lpm_poptrie.mbl "
            "instead of lpm.mbl), move small tables to scratch with `in scratch`, or link for "
            "a chip with larger SRAM channels (link(..., big_channels=True) uses the "
            "IXP2800's 64 MB maximum)")
    return CompileError([Diagnostic(message, span, hint, kind="link-sram")], sources)
