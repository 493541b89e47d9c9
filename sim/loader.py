"""The loader: a manifest (or a list of images) becomes a ready-to-run ``Chip``.

The manifest is ``npkit.link.manifest``'s, written by hand or by the linker.  The loader
builds the chip from the manifest's chip config (with its overrides) and ports, takes the
images the linker assembled or assembles ``.uc`` sources
(include path = the manifest's folder) or reads prebuilt ``.img`` files, loads them on their
MEs, configures scratch rings, builds the SRAM Q-array buffer freelists and writes the
initial memory words.  After a run, ``leak_check`` compares every freelist with its
initial size, so buffers that never came back are reported, never silently ignored.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from npkit.compiler.uc import Image, assemble_file
from npkit.link.manifest import (
    FreelistSpec,
    ImageSpec,
    Manifest,
    ManifestError,
    MemorySpec,
    RingSpec,
    parse_manifest,
)

from .chip import Chip
from .config import ChipConfig, ConfigError


@dataclass(frozen=True)
class LoadedImage:
    path: Path
    image: Any  # npkit.compiler.uc.Image
    mes: list[int]


@dataclass
class LoadedRun:
    """A chip loaded from a manifest, with what the leak check needs."""

    chip: Chip
    manifest: Manifest | None
    images: list[LoadedImage] = field(default_factory=list)
    freelists: list[FreelistSpec] = field(default_factory=list)


@dataclass(frozen=True)
class LeakReport:
    """One freelist after a run: ``missing`` buffers have not come back (negative: more
    came back than were given out, i.e. a double free)."""

    channel: int
    queue: int
    initial: int
    now: int

    @property
    def missing(self) -> int:
        return self.initial - self.now

    @property
    def ok(self) -> bool:
        return self.missing == 0

    def describe(self) -> str:
        name = f"freelist sram{self.channel} queue {self.queue}"
        if self.ok:
            return f"{name}: all {self.initial} buffers back"
        if self.missing > 0:
            return f"{name}: {self.missing} of {self.initial} buffers not returned (in flight " \
                   "or leaked)"
        return f"{name}: {-self.missing} more buffers than were given out (double free?)"


# --------------------------------------------------------------------------- images
def read_image(path: str | Path, include_dirs: Sequence[str | Path] = ()) -> Any:
    """Assemble a ``.uc`` file or read a prebuilt ``.img``.  Raises the assembler's
    ``AsmError`` / ``ImageError`` (both carry a full user-facing message)."""
    path = Path(path)
    if path.suffix == ".img":
        return Image.load(path)
    dirs = [str(d) for d in include_dirs] or [str(path.parent)]
    return assemble_file(str(path), include_dirs=tuple(dirs))


def load_images(chip: Chip, specs: Sequence[tuple[Path, Sequence[int] | None]],
                include_dirs: Sequence[str | Path] = (),
                assembled: Sequence[Any] = ()) -> list[LoadedImage]:
    """Load each (path, mes) on the chip; `assembled[i]`, when given and not None, is the
    i-th image already assembled (the linker's), so its path is not read."""
    loaded = []
    for i, (path, mes) in enumerate(specs):
        image = assembled[i] if i < len(assembled) else None
        if image is None:
            image = read_image(path, include_dirs or (path.parent,))
        if getattr(image, "name", None) is None:
            try:
                image.name = path.name  # lets load errors name the file
            except AttributeError:
                pass
        used = chip.load(image, list(mes) if mes is not None else None)
        loaded.append(LoadedImage(path, image, used))
    return loaded


# --------------------------------------------------------------------------- checks
def _check_ring(spec: RingSpec, cfg: ChipConfig, taken: list[tuple[int, int, str]]) -> None:
    low, high = cfg.ring_words_range
    if spec.number >= cfg.scratch_rings:
        raise ManifestError(f"{spec.where}: key 'number': ring {spec.number} does not exist "
                            f"(rings 0..{cfg.scratch_rings - 1})")
    if not low <= spec.size_words <= high:
        raise ManifestError(f"{spec.where}: key 'size_words': {spec.size_words} is outside "
                            f"{low}..{high} words")
    end = spec.base_word + spec.size_words
    if end * 4 > cfg.scratch_bytes:
        raise ManifestError(f"{spec.where}: ring words {spec.base_word}..{end - 1} exceed the "
                            f"{cfg.scratch_bytes // 4}-word scratchpad")
    for start, stop, other in taken:
        if spec.base_word < stop and start < end:
            raise ManifestError(f"{spec.where}: ring overlaps {other.split(': ')[-1]}")
    taken.append((spec.base_word, end, spec.where))


def _check_freelist(spec: FreelistSpec, cfg: ChipConfig) -> None:
    if spec.channel >= cfg.sram_channels:
        raise ManifestError(f"{spec.where}: key 'channel': SRAM channel {spec.channel} does not "
                            f"exist on {cfg.name} ({cfg.sram_channels} channels)")
    if spec.queue >= cfg.queue_descriptors:
        raise ManifestError(f"{spec.where}: key 'queue': {spec.queue} is outside "
                            f"0..{cfg.queue_descriptors - 1}")
    end = spec.descriptor_base + spec.count * spec.descriptor_bytes
    if end > cfg.sram_channel_bytes:
        raise ManifestError(f"{spec.where}: {spec.count} descriptors of {spec.descriptor_bytes}"
                            f" bytes from {spec.descriptor_base:#x} end at {end:#x}, past the "
                            f"{cfg.sram_channel_bytes:#x}-byte SRAM channel")
    dram_end = spec.dram_base + spec.count * spec.buffer_bytes
    if dram_end > cfg.dram_bytes:
        raise ManifestError(f"{spec.where}: {spec.count} buffers of {spec.buffer_bytes} bytes "
                            f"from {spec.dram_base:#x} end past the {cfg.dram_bytes:#x}-byte "
                            "DRAM")


def _memory_views(chip: Chip, spec: MemorySpec) -> list[np.ndarray]:
    """The memory a spec writes: one view, or every listed ME's local memory."""
    if spec.unit != "local":
        return [_memory_view(chip, spec)]
    cfg = chip.config
    for me in spec.mes or ():
        if me >= cfg.me_count:
            raise ManifestError(f"{spec.where}: key 'mes': ME {me} does not exist on "
                                f"{cfg.name} ({cfg.me_count} MEs)")
    return [chip.local_memory(me) for me in spec.mes or ()]


def _memory_view(chip: Chip, spec: MemorySpec) -> np.ndarray:
    cfg = chip.config
    if spec.unit.startswith("sram"):
        channel = int(spec.unit[4:])
        if channel >= cfg.sram_channels:
            raise ManifestError(f"{spec.where}: key 'unit': {spec.unit} does not exist on "
                                f"{cfg.name} ({cfg.sram_channels} SRAM channels)")
        return chip.sram(channel)
    if spec.unit == "scratch":
        return chip.scratch()
    return chip.dram()


def _write_memory(chip: Chip, spec: MemorySpec) -> None:
    """Words go in as 32-bit values; a byte-addressed memory (DRAM) stores them big-endian,
    the chip's byte order (byte 0 is bits 31..24 of word 0)."""
    for view in _memory_views(chip, spec):
        if view.dtype == np.uint8:
            data = np.asarray(spec.words, dtype=np.uint32).astype(">u4").view(np.uint8)
            first, size = spec.address, len(view)
        else:
            data = np.asarray(spec.words, dtype=view.dtype)
            first, size = spec.address // view.itemsize, len(view)
        if first + len(data) > size:
            raise ManifestError(f"{spec.where}: {len(spec.words)} words at {spec.address:#x} "
                                f"run past the end of {spec.unit} "
                                f"({size * view.itemsize:#x} bytes)")
        view[first:first + len(data)] = data


# --------------------------------------------------------------------------- building
def chip_config_for(manifest: Manifest, chip_override: str | None = None) -> ChipConfig:
    """The manifest's chip: the preset (or `chip_override`) with the manifest's
    [overrides] applied, section by section, and its ports."""
    try:
        cfg = ChipConfig.load(chip_override or manifest.chip)
    except ConfigError as err:
        raise ManifestError(f"{manifest.path}: key 'chip': {err}") from None
    if manifest.overrides:
        raw = copy.deepcopy(cfg.raw)
        for section, values in manifest.overrides.items():
            raw.setdefault(section, {}).update(values)
        try:
            cfg = ChipConfig(raw=raw, source=f"{cfg.source} (with the manifest's overrides)")
        except ConfigError as err:
            raise ManifestError(f"{manifest.path}: [overrides]: {err}") from None
    cfg.ports = list(manifest.ports)
    return cfg


def build_from_manifest(manifest: Manifest, *, chip: str | None = None,
                        seed: int | None = None, trace: bool = False,
                        me_overrides: dict[str, list[int]] | None = None) -> LoadedRun:
    """A chip with everything in the manifest loaded.  ``me_overrides`` maps an image file
    name (as written in the manifest) to the MEs to load it on instead."""
    cfg = chip_config_for(manifest, chip)
    seen: dict[tuple[int, int], str] = {}
    for spec in manifest.freelists:
        _check_freelist(spec, cfg)
        key = (spec.channel, spec.queue)
        if key in seen:
            raise ManifestError(f"{spec.where}: channel {spec.channel} queue {spec.queue} is "
                                f"already the freelist of {seen[key].split(': ')[-1]}")
        seen[key] = spec.where
    taken: list[tuple[int, int, str]] = []
    for ring in manifest.rings:
        _check_ring(ring, cfg, taken)
    sim = Chip(cfg, seed=manifest.seed if seed is None else seed, trace=trace)
    overrides = me_overrides or {}
    specs = [(s.path, overrides.get(s.path.name, overrides.get(str(s.path), s.mes)))
             for s in manifest.images]
    images = load_images(sim, specs, (manifest.folder,), _assembled(manifest.images))
    for ring in manifest.rings:
        sim.configure_ring(ring.number, ring.base_word, ring.size_words)
    for spec in manifest.freelists:
        build_freelist(sim, spec)
    for mem in manifest.memory:
        _write_memory(sim, mem)
    return LoadedRun(sim, manifest, images, list(manifest.freelists))


def build_freelist(chip: Chip, spec: FreelistSpec) -> None:
    """Enqueue ``count`` descriptor handles on the Q-array queue, descriptor 0 first."""
    for i in range(spec.count):
        chip.enqueue(spec.channel, spec.queue, spec.handle(i))


def _assembled(specs: Sequence[ImageSpec]) -> list[Any]:
    return [s.image for s in specs]


def load_manifest(path: str | Path, **kwargs: Any) -> LoadedRun:
    return build_from_manifest(parse_manifest(path), **kwargs)


def leak_check(run: LoadedRun) -> list[LeakReport]:
    """Every freelist's count now against its initial count."""
    reports = []
    for spec in run.freelists:
        state = run.chip.queue_state(spec.channel, spec.queue)
        reports.append(LeakReport(spec.channel, spec.queue, spec.count, int(state["count"])))
    return reports
