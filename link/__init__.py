"""The linker: a compiled MBL program + a platform -> the run manifest (docs/link.md).

    from npkit.link import build_images, chip_manifest, load_platform
    manifest = chip_manifest(program, "ixp2800-2x10gbe", tables=native)   # in memory
    path = build_images(program, "ixp2800-2x10gbe", "out/", tables=native)  # on disk

Layer 6: above the compilers, below the loader (npkit.runtime.loader loads a Manifest).
Modules: `manifest` (the format, parsing), `writer` (back to TOML), `program` (the
[program] table), `platform` (platforms as data), `media` (the media stages' numbers),
`plan` (where the runtime's structures go), `sram` (SRAM memories on the channels),
`header` (layout.h), `linker` (`link`),
`build` (`chip_manifest`, `build_images`).
"""

from __future__ import annotations

from .build import build_images, chip_manifest, memory_specs
from .errors import LinkError
from .linker import link, link_body, mapping, served_ports
from .manifest import Manifest, ManifestError, parse_manifest
from .platform import (
    DEFAULT_PLATFORM,
    Platform,
    PlatformError,
    for_ports,
    load_platform,
    platform_names,
)
from .program import ProgramInfo, ProgramMemory
from .writer import write_manifest

__all__ = [
    "DEFAULT_PLATFORM", "LinkError", "Manifest", "ManifestError", "Platform", "PlatformError",
    "ProgramInfo", "ProgramMemory", "build_images", "chip_manifest", "for_ports", "link",
    "link_body", "load_platform", "mapping", "memory_specs", "parse_manifest", "platform_names",
    "served_ports", "write_manifest",
]
