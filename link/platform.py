"""Link platforms: a chip, its ports and the media microblocks that serve them, as data.

A platform is a folder ``link/platforms/<name>/`` with a ``platform.toml`` (docs/link.md,
"Platforms")::

    name = "ixp2800-2x10gbe"
    chip = "ixp2800"              # chip preset or path to a chip .toml
    ports = ["10gbe", "10gbe"]    # port kinds (npkit.sim.config.Port.from_kind)
    mes = 16                      # the ME budget
    fwd_mes_per_port = 4          # default forwarding MEs per input port ...
    max_fwd_mes_per_port = 4      # ... and the most the media stages' rings allow
    [media]
    folder = "../../../microblocks/uc"    # relative to the platform's folder
    rx = "rx_eth.uc"
    tx = "tx_eth.uc"
    header = "router4.h"
    compiled = true               # MBL receive/transmit stages link as the pool (below)
    pool_mes_per_port = 8
    [memory]
    descriptor_align = 0x1000

``[media] compiled = true``: a pipeline whose first stage is a receive stage (``frame_rx``
of microblocks/media_rx.mbl) is linked as the compiled data path, the pool mapping of
link/pool.py (``pool_mes_per_port`` MEs per input port, default ``mes`` // ports; all of
them on a chip that receives one port), its receive and transmit the compiled MBL stages;
a pipeline without a receive stage keeps the rings mapping with the hand-written ``rx`` /
``tx`` (the hand baseline).  ``compiled = false`` (the default): a receive stage is a
located ``link-media`` error.

``load_platform(name)`` reads one by name (or a path to a platform.toml);
``platform.with_ports(kinds)`` is the same platform with other port kinds (same count
rules: the linker maps 2 or 4 ports).
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npkit.sim.config import ChipConfig, ConfigError, Port

from .errors import LinkError

PLATFORMS_DIR = Path(__file__).resolve().parent / "platforms"
PLATFORM_FILE = "platform.toml"
DEFAULT_PLATFORM = "ixp2800-2x10gbe"
KEYS = {"name", "description", "chip", "ports", "mes", "fwd_mes_per_port",
        "max_fwd_mes_per_port", "media", "memory"}


class PlatformError(LinkError):
    """A platform is unknown, or its platform.toml is missing or has a bad key."""


@dataclass(frozen=True)
class Media:
    """The receive and transmit microblocks (.uc sources) and the folder they include
    their header from."""

    folder: Path
    rx: Path
    tx: Path
    header: Path
    compiled: bool = False                 # MBL receive stages link as the pool
    pool_mes_per_port: int | None = None   # None: the platform's MEs / its ports


@dataclass(frozen=True)
class Platform:
    name: str
    description: str
    chip: str
    ports: tuple[str, ...]
    mes: int
    fwd_mes_per_port: int
    max_fwd_mes_per_port: int
    media: Media
    descriptor_align: int = 0x1000
    path: Path | None = None

    def chip_config(self) -> ChipConfig:
        return ChipConfig.load(self.chip)

    def pool_mes(self, ports: int, receiving: int) -> int:
        """MEs per receiving port of the pool mapping on `ports` ports of which `receiving`
        receive: the platform's `pool_mes_per_port` (at most its MEs shared by the
        receiving ports), else all of them shared."""
        share = self.mes // receiving
        if self.media.pool_mes_per_port is None or receiving < ports:
            return share
        return min(self.media.pool_mes_per_port, share)

    def port_models(self) -> list[Port]:
        return [Port.from_kind(kind) for kind in self.ports]

    def with_ports(self, kinds: tuple[str, ...] | list[str]) -> Platform:
        """This platform with other port kinds (each a `Port.from_kind` name)."""
        kinds = tuple(kinds)
        for kind in kinds:
            _check_kind(kind, f"platform {self.name}")
        name = self.name if kinds == self.ports else f"{self.name}-ports-{'-'.join(kinds)}"
        return dataclasses.replace(self, ports=kinds, name=name)


def _check_kind(kind: str, where: str) -> None:
    try:
        Port.from_kind(kind)
    except ConfigError as err:
        raise PlatformError(f"{where}: {err}") from None


def platform_names() -> list[str]:
    """The platforms in link/platforms, sorted."""
    return sorted(p.parent.name for p in PLATFORMS_DIR.glob(f"*/{PLATFORM_FILE}"))


def _int(raw: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise PlatformError(f"{where}: key '{key}': expected an integer >= 1, got {value!r}")
    return value


MEDIA_KEYS = {"folder", "rx", "tx", "header", "compiled", "pool_mes_per_port"}


def _media(raw: Any, folder: Path, where: str) -> Media:
    if not isinstance(raw, dict) or not {"rx", "tx", "header"} <= set(raw):
        raise PlatformError(f"{where}: [media] needs rx, tx and header (.uc / .h file names)")
    unknown = sorted(set(raw) - MEDIA_KEYS)
    if unknown:
        raise PlatformError(f"{where}: [media]: unknown key '{unknown[0]}' (allowed: "
                            f"{', '.join(sorted(MEDIA_KEYS))})")
    base = (folder / str(raw.get("folder", "."))).resolve()
    files = {key: base / str(raw[key]) for key in ("rx", "tx", "header")}
    for key, path in files.items():
        if not path.is_file():
            raise PlatformError(f"{where}: [media] {key}: {path} not found")
    compiled = raw.get("compiled", False)
    if not isinstance(compiled, bool):
        raise PlatformError(f"{where}: [media] compiled: expected true or false, "
                            f"got {compiled!r}")
    pool = (_int(raw, "pool_mes_per_port", f"{where}: [media]")
            if "pool_mes_per_port" in raw else None)
    return Media(base, files["rx"], files["tx"], files["header"], compiled, pool)


def load_platform(name: str | Path = DEFAULT_PLATFORM) -> Platform:
    """A platform by name (link/platforms/<name>) or by the path of its platform.toml."""
    path = Path(name)
    if path.suffix != ".toml":
        path = PLATFORMS_DIR / str(name) / PLATFORM_FILE
        if not path.is_file():
            raise PlatformError(f"unknown platform '{name}': use one of "
                                f"{', '.join(platform_names())} or a path to a platform.toml")
    where = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise PlatformError(f"{where}: cannot read: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise PlatformError(f"{where}: not valid TOML: {err}") from None
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise PlatformError(f"{where}: unknown key '{unknown[0]}' (allowed: "
                            f"{', '.join(sorted(KEYS))})")
    ports = raw.get("ports")
    if not isinstance(ports, list) or not ports or not all(isinstance(k, str) for k in ports):
        raise PlatformError(f"{where}: key 'ports': expected a list of port kinds")
    for kind in ports:
        _check_kind(kind, where)
    chip = str(raw.get("chip", "ixp2800"))
    if chip.endswith(".toml"):
        chip = str(path.parent / chip)
    memory = raw.get("memory", {})
    per_port = _int(raw, "fwd_mes_per_port", where)
    return Platform(
        name=str(raw.get("name", path.parent.name)), description=str(raw.get("description", "")),
        chip=chip, ports=tuple(ports), mes=_int(raw, "mes", where, 16),
        fwd_mes_per_port=per_port,
        max_fwd_mes_per_port=_int(raw, "max_fwd_mes_per_port", where, per_port),
        media=_media(raw.get("media"), path.parent, where),
        descriptor_align=_int(memory, "descriptor_align", f"{where}: [memory]", 0x1000),
        path=path)


def as_platform(platform: Platform | str | Path) -> Platform:
    """A Platform, loading it when given by name or path."""
    return platform if isinstance(platform, Platform) else load_platform(platform)


def for_ports(kinds: tuple[str, ...] | list[str]) -> Platform:
    """The IXP2800 platform with these port kinds (2 or 4 of them: the 2- or 4-port
    platform's mapping with the kinds replaced)."""
    kinds = tuple(kinds)
    base = {2: "ixp2800-2x10gbe", 4: "ixp2800-4x10gbe"}.get(len(kinds))
    if base is None:
        raise PlatformError(f"{len(kinds)} ports {kinds}: the IXP2800 platforms have 2 or 4")
    return load_platform(base).with_ports(kinds)
