"""The run manifest: everything ``npkit run`` needs besides packets, as validated data.

Hand-written microcode and the linker (``npkit.link.link``) produce the same manifest; the
loader (``npkit.sim.loader``) turns one into a loaded chip.  A manifest is TOML (docs/link.md,
docs/cli.md "Run manifests")::

    chip = "ixp2800"            # preset name or a path to a chip .toml (default ixp2800)
    seed = 1
    [ports]
    0 = "10gbe"
    1 = {rate_bps = 2.5e9, overhead_bytes = 20, rx_freelist = 1}
    [[image]]
    source = "rx.uc"            # or image = "rx.img"; mes = [0, 1] overrides .me
    [[ring]]
    number = 0
    base_word = 0
    size_words = 512
    [[freelist]]
    channel = 0
    queue = 0
    descriptor_base = 0x1000
    descriptor_bytes = 32
    count = 1024
    dram_base = 0
    buffer_bytes = 2048
    [[memory]]
    unit = "scratch"            # sram0..sram3 | scratch | dram | local (with mes = [...])
    address = 0x100             # byte address
    words = [1, 2, 3]           # or file = "scratch.bin": 32-bit big-endian words
    [overrides.sram]            # chip config values replacing the preset's, by section
    channel_bytes = 0x4000000
    [program]                   # optional: what a linked MBL program's runtime needs
    ...                         # (program.py: memories by name, counters, MEs, rings)

Paths are relative to the manifest's folder.  Every error names the file and the key.
Checks that need the chip's sizes (ring size limits, channel counts) are made by the
loader once the chip config is known.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from npkit.base.errors import NpkitError
from npkit.sim.config import ConfigError, Port

from .program import ProgramInfo, parse_program

MEMORY_UNITS = ("sram0", "sram1", "sram2", "sram3", "scratch", "dram", "local")
TOP_LEVEL_KEYS = {"chip", "seed", "ports", "image", "ring", "freelist", "memory", "name",
                  "description", "overrides", "program"}


class ManifestError(NpkitError, ValueError):
    """A run manifest is missing, not TOML, or has a bad key."""


@dataclass(frozen=True)
class ImageSpec:
    path: Path  # a .uc source (assembled on load) or a prebuilt .img
    mes: tuple[int, ...] | None  # None: the image's own .me list
    where: str  # "file: [[image]] #n" for messages
    # the assembled image when the linker made this manifest in memory (the loader then
    # does not read `path`, which may be a temporary build folder's)
    image: Any = field(default=None, compare=False, repr=False)

    @property
    def is_source(self) -> bool:
        return self.path.suffix != ".img"


@dataclass(frozen=True)
class RingSpec:
    number: int
    base_word: int
    size_words: int
    where: str = field(default="", compare=False)   # for messages; not part of the value


@dataclass(frozen=True)
class FreelistSpec:
    channel: int
    queue: int
    descriptor_base: int
    descriptor_bytes: int
    count: int
    dram_base: int
    buffer_bytes: int
    where: str = field(default="", compare=False)   # for messages; not part of the value

    def handle(self, i: int) -> int:
        """Buffer handle i: the SRAM byte address of its descriptor, channel bits included."""
        return (self.channel << 26) | (self.descriptor_base + i * self.descriptor_bytes)


@dataclass(frozen=True)
class MemorySpec:
    """Initial words of a memory unit from a byte address (`local`: every ME in `mes`).
    `words` is a tuple or a uint32 array; `file` names the .bin it was read from."""

    unit: str
    address: int
    words: Any
    where: str
    mes: tuple[int, ...] | None = None
    file: Path | None = None


@dataclass
class Manifest:
    path: Path
    chip: str = "ixp2800"
    seed: int = 1
    ports: list[Port] = field(default_factory=list)
    images: list[ImageSpec] = field(default_factory=list)
    rings: list[RingSpec] = field(default_factory=list)
    freelists: list[FreelistSpec] = field(default_factory=list)
    memory: list[MemorySpec] = field(default_factory=list)
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    program: ProgramInfo | None = None      # a linked MBL program's runtime data
    name: str = ""
    description: str = ""

    @property
    def folder(self) -> Path:
        return self.path.parent

    def kinds(self) -> tuple[str, ...]:
        """Every port's kind, in port order."""
        return tuple(p.kind for p in self.ports)


# --------------------------------------------------------------------------- helpers
def _int(table: dict[str, Any], key: str, where: str, *, default: int | None = None,
         minimum: int = 0) -> int:
    if key not in table:
        if default is None:
            raise ManifestError(f"{where}: missing key '{key}'")
        return default
    value = table[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ManifestError(f"{where}: key '{key}': expected an integer >= {minimum}, "
                            f"got {value!r}")
    return value


def _check_keys(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ManifestError(f"{where}: unknown key '{unknown[0]}' (allowed: "
                            f"{', '.join(sorted(allowed))})")


def _tables(raw: dict[str, Any], key: str, where: str) -> list[tuple[str, dict[str, Any]]]:
    items = raw.get(key, [])
    if not isinstance(items, list) or not all(isinstance(t, dict) for t in items):
        raise ManifestError(f"{where}: '{key}' must be an array of tables ([[{key}]])")
    return [(f"{where}: [[{key}]] #{i + 1}", t) for i, t in enumerate(items)]


# --------------------------------------------------------------------------- sections
def _parse_port(key: str, value: Any, where: str) -> tuple[int, Port]:
    if not key.isdigit():
        raise ManifestError(f"{where}: [ports] key '{key}': port numbers are integers 0, 1, ...")
    here = f"{where}: [ports] {key}"
    try:
        if isinstance(value, str):
            return int(key), Port.from_kind(value)
        if isinstance(value, dict):
            _check_keys(value, {"kind", "rate_bps", "overhead_bytes", "rx_freelist"}, here)
            freelist = value.get("rx_freelist")
            if freelist is not None:
                freelist = _int(value, "rx_freelist", here)
            if "kind" in value:
                return int(key), Port.from_kind(str(value["kind"]), freelist)
            rate = value.get("rate_bps")
            if not isinstance(rate, int | float) or isinstance(rate, bool):
                raise ManifestError(f"{here}: key 'rate_bps': expected a number of bits/s")
            return int(key), Port.custom(rate, _int(value, "overhead_bytes", here), freelist)
    except ConfigError as err:
        raise ManifestError(f"{here}: {err}") from None
    raise ManifestError(f"{here}: expected a port kind (\"10gbe\", \"1gbe\", \"oc192pos\") "
                        "or a table {rate_bps, overhead_bytes[, rx_freelist]}")


def _parse_ports(raw: dict[str, Any], where: str) -> list[Port]:
    table = raw.get("ports")
    if table is None:
        return [Port.ethernet_10g(), Port.ethernet_10g()]
    if not isinstance(table, dict) or not table:
        raise ManifestError(f"{where}: [ports] must be a table of port number = kind")
    ports = dict(_parse_port(str(k), v, where) for k, v in table.items())
    expected = list(range(len(ports)))
    if sorted(ports) != expected:
        raise ManifestError(f"{where}: [ports] must number ports 0..{len(ports) - 1} without "
                            f"gaps, got {sorted(ports)}")
    return [ports[i] for i in expected]


def _parse_image(table: dict[str, Any], where: str, folder: Path) -> ImageSpec:
    _check_keys(table, {"source", "image", "mes"}, where)
    if ("source" in table) == ("image" in table):
        raise ManifestError(f"{where}: give exactly one of 'source' (a .uc file) or 'image' "
                            "(a prebuilt .img)")
    name = table.get("source", table.get("image"))
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{where}: the file name must be a string")
    path = folder / name
    if not path.is_file():
        raise ManifestError(f"{where}: file '{name}' not found (looked for {path})")
    mes = table.get("mes")
    if mes is not None:
        if (not isinstance(mes, list) or not mes
                or not all(isinstance(m, int) and not isinstance(m, bool) and m >= 0
                           for m in mes)):
            raise ManifestError(f"{where}: key 'mes': expected a non-empty list of ME "
                                f"indexes, got {mes!r}")
        mes = tuple(mes)
    return ImageSpec(path, mes, where)


def _parse_ring(table: dict[str, Any], where: str) -> RingSpec:
    _check_keys(table, {"number", "base_word", "size_words"}, where)
    return RingSpec(_int(table, "number", where), _int(table, "base_word", where),
                    _int(table, "size_words", where, minimum=1), where)


def _parse_freelist(table: dict[str, Any], where: str) -> FreelistSpec:
    keys = {"channel", "queue", "descriptor_base", "descriptor_bytes", "count", "dram_base",
            "buffer_bytes"}
    _check_keys(table, keys, where)
    spec = FreelistSpec(
        channel=_int(table, "channel", where), queue=_int(table, "queue", where),
        descriptor_base=_int(table, "descriptor_base", where),
        descriptor_bytes=_int(table, "descriptor_bytes", where, default=32, minimum=4),
        count=_int(table, "count", where, minimum=1),
        dram_base=_int(table, "dram_base", where, default=0),
        buffer_bytes=_int(table, "buffer_bytes", where, default=2048, minimum=1),
        where=where)
    if spec.descriptor_base % 4 or spec.descriptor_bytes % 4:
        raise ManifestError(f"{where}: descriptor_base and descriptor_bytes must be multiples "
                            "of 4 (descriptors are longword aligned)")
    if spec.descriptor_base == 0:
        # a handle of 0 reads as "queue empty" from sram[dequeue]
        raise ManifestError(f"{where}: key 'descriptor_base': must not be 0 (a dequeue "
                            "returns handle 0 for an empty queue)")
    return spec


def _parse_memory(table: dict[str, Any], where: str, folder: Path) -> MemorySpec:
    _check_keys(table, {"unit", "address", "words", "file", "mes"}, where)
    unit = table.get("unit")
    if unit not in MEMORY_UNITS:
        raise ManifestError(f"{where}: key 'unit': expected one of {', '.join(MEMORY_UNITS)}, "
                            f"got {unit!r}")
    address = _int(table, "address", where)
    if address % 4:
        raise ManifestError(f"{where}: key 'address': {address:#x} is not longword aligned")
    mes = table.get("mes")
    if (unit == "local") != (mes is not None):
        raise ManifestError(f"{where}: key 'mes': a 'local' memory names its MEs "
                            "(mes = [...]); other units have none")
    if mes is not None and (not isinstance(mes, list) or not all(
            isinstance(m, int) and not isinstance(m, bool) and m >= 0 for m in mes)):
        raise ManifestError(f"{where}: key 'mes': expected a list of ME indexes")
    if ("words" in table) == ("file" in table):
        raise ManifestError(f"{where}: give exactly one of 'words' (a list) or 'file' "
                            "(a .bin of 32-bit big-endian words)")
    if "file" in table:
        name = table["file"]
        path = folder / str(name)
        if not isinstance(name, str) or not path.is_file():
            raise ManifestError(f"{where}: key 'file': '{name}' not found (looked for {path})")
        if path.stat().st_size % 4:
            raise ManifestError(f"{where}: key 'file': {path} is not a whole number of "
                                "32-bit words")
        words = np.fromfile(path, dtype=">u4").astype(np.uint32)
        return MemorySpec(unit, address, words, where, tuple(mes) if mes else None, path)
    words = table.get("words")
    if (not isinstance(words, list)
            or not all(isinstance(w, int) and 0 <= w < 1 << 32 for w in words)):
        raise ManifestError(f"{where}: key 'words': expected a list of 32-bit unsigned words")
    return MemorySpec(unit, address, tuple(words), where, tuple(mes) if mes else None)


def _parse_overrides(raw: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    table = raw.get("overrides", {})
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ManifestError(f"{where}: [overrides] must hold tables of chip config values, "
                            "e.g. [overrides.sram] channel_bytes = ...")
    return {k: dict(v) for k, v in table.items()}


# --------------------------------------------------------------------------- entry points
def parse_manifest(path: str | Path) -> Manifest:
    """Read and validate a manifest file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such manifest file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestError(f"{path}: cannot read manifest: {err}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ManifestError(f"{path}: not valid TOML: {err}") from None
    return manifest_from_dict(raw, path)


def manifest_from_dict(raw: dict[str, Any], path: Path) -> Manifest:
    where = str(path)
    _check_keys(raw, TOP_LEVEL_KEYS, where)
    chip = raw.get("chip", "ixp2800")
    if not isinstance(chip, str):
        raise ManifestError(f"{where}: key 'chip': expected a preset name or a path")
    if chip.endswith(".toml"):
        chip = str(path.parent / chip)
    folder = path.parent
    program = None
    if "program" in raw:
        try:
            program = parse_program(raw["program"], f"{where}: [program]")
        except ValueError as err:
            raise ManifestError(str(err)) from None
    return Manifest(
        path=path, chip=chip, seed=_int(raw, "seed", where, default=1),
        ports=_parse_ports(raw, where),
        images=[_parse_image(t, w, folder) for w, t in _tables(raw, "image", where)],
        rings=[_parse_ring(t, w) for w, t in _tables(raw, "ring", where)],
        freelists=[_parse_freelist(t, w) for w, t in _tables(raw, "freelist", where)],
        memory=[_parse_memory(t, w, folder) for w, t in _tables(raw, "memory", where)],
        overrides=_parse_overrides(raw, where), program=program,
        name=str(raw.get("name", "")), description=str(raw.get("description", "")),
    )
