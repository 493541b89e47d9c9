"""``PORT=FILE`` specs, parsed in one place.

Every command that feeds or drains ports (``--in 0=in.pcap``, ``--out 1=out.pcap``) and every
library call that takes such a spec goes through :func:`parse_port_file` /
:func:`parse_port_files`, so the accepted syntax and the error messages are the same
everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from npkit.base.errors import NpkitError


class PortSpecError(NpkitError):
    """A ``PORT=FILE`` spec that cannot be used (bad syntax, port out of range, missing
    input file)."""


@dataclass(frozen=True)
class PortFile:
    port: int
    path: Path


def parse_port_file(spec: str, option: str = "PORT=FILE") -> PortFile:
    """``"0=in.pcap"`` -> PortFile(0, Path("in.pcap")); ``option`` names the flag in errors."""
    port, sep, name = spec.partition("=")
    port = port.strip()
    if not sep or not port.isdigit() or not name:
        raise PortSpecError(f"{option} {spec!r}: expected PORT=FILE, e.g. 0=in.pcap")
    return PortFile(int(port), Path(name))


def parse_port_files(specs: Iterable[str], option: str = "PORT=FILE", *,
                     ports: int | None = None, must_exist: bool = False) -> dict[int, Path]:
    """Port -> file for every spec.  A port given twice, a port at or beyond ``ports`` (when
    known) and, with ``must_exist``, a file that is not there are errors: checked here, before
    any slow set-up, so a typo fails at once."""
    files: dict[int, Path] = {}
    for spec in specs:
        entry = parse_port_file(spec, option)
        if entry.port in files:
            raise PortSpecError(f"{option} {spec!r}: port {entry.port} is given twice")
        if ports is not None and entry.port >= ports:
            raise PortSpecError(f"{option} {spec!r}: port {entry.port} does not exist "
                                f"(ports 0..{ports - 1})")
        if must_exist and not entry.path.is_file():
            raise PortSpecError(f"{entry.path}: no such packet file ({option} {spec})")
        files[entry.port] = entry.path
    return files
