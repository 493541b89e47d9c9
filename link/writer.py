"""Write a Manifest back to TOML, with its images (.img) and large memories (.bin) beside it.

`write_manifest(manifest, folder)` makes a folder that `npkit run folder/manifest.toml`
loads with no other input: every assembled image saved as ``<name>.img``, every memory of
more than `inline_words` words saved as ``<unit>_<address>.bin`` (32-bit big-endian words,
the chip's byte order), the rest inline.  File names are plain (letters, digits, ``_``,
``-``, ``.``).  Parsing the written file gives back an equal manifest (tests/link).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from npkit.sim.config import ConfigError, Port

from .manifest import Manifest, ManifestError

MANIFEST_NAME = "manifest.toml"
INLINE_WORDS = 64
_PLAIN = re.compile(r"[^A-Za-z0-9_.-]+")
_HEX_KEYS = ("address", "base", "base_word", "descriptor_base", "dram_base", "channel_bytes")


def plain_name(name: str) -> str:
    """A file name without spaces, '+' or other characters a shell or URL would mangle."""
    return _PLAIN.sub("_", name).strip("_") or "file"


# --------------------------------------------------------------------------- TOML values
def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        value = int(value)
        return f"{value:#x}" if value > 255 and key.endswith(_HEX_KEYS) else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(str(k), v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | np.ndarray):
        return "[" + ", ".join(_value(key, v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _table(lines: list[str], header: str, table: dict[str, Any]) -> None:
    lines.append(header)
    lines += [f"{_key(k)} = {_value(k, v)}" for k, v in table.items() if v is not None]
    lines.append("")


# --------------------------------------------------------------------------- sections
def _image_entries(manifest: Manifest, folder: Path) -> list[dict[str, Any]]:
    out, used = [], set()
    for spec in manifest.images:
        entry: dict[str, Any] = {}
        if spec.image is not None:
            stem = plain_name(spec.path.stem)
            name = f"{stem}.img"
            n = 2
            while name in used:
                name, n = f"{stem}_{n}.img", n + 1
            _portable(spec.image, folder).save(folder / name)
            entry["image"] = name
        elif spec.path.parent.resolve() == folder.resolve():
            entry["source" if spec.is_source else "image"] = spec.path.name
        else:
            entry["source" if spec.is_source else "image"] = str(spec.path.resolve())
        used.add(entry.get("image", ""))
        if spec.mes is not None:
            entry["mes"] = list(spec.mes)
        out.append(entry)
    return out


def _portable(image: Any, folder: Path) -> Any:
    """The image with the source files written inside ``folder`` (the generated body, layout
    header and wrappers in src/) named relative to it, so an image records no temporary or
    output path and two builds of one program are byte-identical wherever they are written."""
    root = folder.resolve()
    lines = []
    for loc in image.lines:
        path = Path(loc.file)
        if path.is_absolute() or path.exists():
            try:
                loc = dataclasses.replace(loc, file=path.resolve().relative_to(root).as_posix())
            except ValueError:  # outside the folder: a user's source, kept as it is
                pass
        lines.append(loc)
    return dataclasses.replace(image, lines=lines)


def _memory_entries(manifest: Manifest, folder: Path, inline_words: int
                    ) -> list[dict[str, Any]]:
    out = []
    for spec in manifest.memory:
        words = np.asarray(spec.words, dtype=np.uint32)
        entry: dict[str, Any] = {"unit": spec.unit, "address": spec.address}
        if spec.mes is not None:
            entry["mes"] = list(spec.mes)
        if len(words) > inline_words:
            name = plain_name(f"{spec.unit}_{spec.address:x}") + ".bin"
            words.astype(">u4").tofile(folder / name)
            entry["file"] = name
        else:
            entry["words"] = [int(w) for w in words]
        out.append(entry)
    return out


def write_manifest(manifest: Manifest, folder: str | Path, *,
                   inline_words: int = INLINE_WORDS) -> Path:
    """Write `manifest` (images, memory files and manifest.toml) into `folder`; returns the
    manifest's path.  Raises ManifestError for an image that is neither assembled nor a
    file."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for spec in manifest.images:
        if spec.image is None and not spec.path.is_file():
            raise ManifestError(f"{spec.where}: image {spec.path} is not a file")
    lines = ["# npkit run manifest (docs/link.md); written by npkit.link", ""]
    top: dict[str, Any] = {"name": manifest.name or None,
                           "description": manifest.description or None,
                           "chip": manifest.chip, "seed": manifest.seed}
    lines += [f"{k} = {_value(k, v)}" for k, v in top.items() if v is not None]
    lines.append("")
    _table(lines, "[ports]", {str(i): _port(p) for i, p in enumerate(manifest.ports)})
    for section, values in manifest.overrides.items():
        _table(lines, f"[overrides.{_key(section)}]", values)
    for entry in _image_entries(manifest, folder):
        _table(lines, "[[image]]", entry)
    for ring in manifest.rings:
        _table(lines, "[[ring]]", {"number": ring.number, "base_word": ring.base_word,
                                   "size_words": ring.size_words})
    for fl in manifest.freelists:
        _table(lines, "[[freelist]]", {
            "channel": fl.channel, "queue": fl.queue, "descriptor_base": fl.descriptor_base,
            "descriptor_bytes": fl.descriptor_bytes, "count": fl.count,
            "dram_base": fl.dram_base, "buffer_bytes": fl.buffer_bytes})
    for entry in _memory_entries(manifest, folder, inline_words):
        _table(lines, "[[memory]]", entry)
    if manifest.program is not None:
        table = manifest.program.to_table()
        memories = table.pop("memory")
        _table(lines, "[program]", table)
        for m in memories:
            _table(lines, "[[program.memory]]", m)
    path = folder / MANIFEST_NAME
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _port(port: Port) -> Any:
    try:
        if Port.from_kind(port.kind, port.rx_freelist) == port:
            if port.rx_freelist is None:
                return port.kind
            return {"kind": port.kind, "rx_freelist": port.rx_freelist}
    except (ConfigError, ValueError):
        pass
    out = {"rate_bps": port.rate_bps, "overhead_bytes": port.overhead_bytes}
    if port.rx_freelist is not None:
        out["rx_freelist"] = port.rx_freelist
    return out
