"""From a checked MBL program to a loadable manifest: the library side of
`npkit build X.mbl --images DIR` and `npkit run X.mbl --target chip`.

`chip_manifest(program, platform)` compiles the entry for the MEs, links it and (with
`tables`, a filled `NativeProgram` of the same program) adds every memory's words, in the
native target's packing, which is the chip's; the result is an in-memory Manifest for
`npkit.runtime.loader.build_from_manifest`.  `build_images(...)` writes the same manifest to a
folder (images, memory files, manifest.toml) that `npkit run DIR/manifest.toml` loads with
no other input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from npkit.compiler.mbl.sema import Program
from npkit.compiler.me import compile_me
from npkit.compiler.me.abi import LM_WINDOW_ABI

from .linker import link
from .manifest import Manifest, MemorySpec
from .plan import CHANNEL_SHIFT
from .platform import DEFAULT_PLATFORM, Platform, as_platform
from .pool import entry_name, selects_pool
from .program import ProgramInfo
from .sram import placed
from .writer import write_manifest

SOURCES_DIR = "src"         # the generated layout.h, body.uc and wrappers, for reading


def _runs(address: int, words: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """(channel, offset, words) pieces of an SRAM memory that may span channels."""
    out, done = [], 0
    while done < len(words):
        at = address + 4 * done
        channel, offset = at >> CHANNEL_SHIFT, at & ((1 << CHANNEL_SHIFT) - 1)
        count = min(len(words) - done, ((1 << CHANNEL_SHIFT) - offset) // 4)
        out.append((channel, offset, words[done:done + count]))
        done += count
    return out


def memory_specs(info: ProgramInfo, tables: Any) -> list[MemorySpec]:
    """Every memory of `tables` (a NativeProgram of the linked program, or anything with
    `region(name)`) as manifest memory, trailing zero words left out (the chip starts
    zeroed); `in local` memories go to every forwarding ME."""
    specs = []
    for m in info.memories:
        words = np.asarray(tables.region(m.name), dtype=np.uint32)
        nonzero = np.flatnonzero(words)
        if not len(nonzero):
            continue
        words = words[:int(nonzero[-1]) + 1]
        where = f"memory {m.name}"
        if m.space == "sram":
            specs += [MemorySpec(f"sram{ch}", offset, piece, where)
                      for ch, offset, piece in _runs(m.address, words)]
        elif m.space == "scratch":
            specs.append(MemorySpec("scratch", m.address, words, where))
        else:
            specs.append(MemorySpec("local", m.address, words, where, tuple(info.fwd_mes)))
    return specs


def chip_manifest(program: Program, platform: Platform | str = DEFAULT_PLATFORM, *,
                  entry: str | None = None, tables: Any = None,
                  fwd_mes_per_port: int | None = None,
                  build_dir: str | Path | None = None) -> Manifest:
    """The in-memory manifest of `entry` (default: the program's first pipeline) linked
    for `platform`, with the memories of `tables` (a filled NativeProgram) when given."""
    platform = as_platform(platform)
    program = placed(program, platform.chip_config())  # before compiling: the code has them
    name = entry_name(program, entry)
    # MBL receive/transmit on a platform that links them: the pool's body (link/pool.py)
    build = compile_me(program, name,
                       LM_WINDOW_ABI if selects_pool(program, name, platform) else None)
    manifest = link(program, build, platform, build_dir=build_dir,
                    fwd_mes_per_port=fwd_mes_per_port)
    if tables is not None:
        assert manifest.program is not None
        manifest.memory = memory_specs(manifest.program, tables)
    return manifest


def build_images(program: Program, platform: Platform | str, out_dir: str | Path, *,
                 entry: str | None = None, tables: Any = None,
                 fwd_mes_per_port: int | None = None) -> Path:
    """Write `entry` linked for `platform` into `out_dir`: rx.img, fwd.img, tx.img, the
    memory files and manifest.toml (plus the generated sources in out_dir/src).  Returns
    the manifest's path."""
    out = Path(out_dir)
    manifest = chip_manifest(program, platform, entry=entry, tables=tables,
                             fwd_mes_per_port=fwd_mes_per_port, build_dir=out / SOURCES_DIR)
    return write_manifest(manifest, out)
