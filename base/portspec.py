"""``PORT=FILE`` specs, parsed in one place.

Every command that feeds or drains ports (``--in 0=in.pcap``, ``--out 1=out.pcap``) and every
library call that takes such a spec goes through :func:`parse_port_file` /
:func:`parse_port_files`, so the accepted syntax and the error messages are the same
everywhere.  Every port number is checked against ``MAX_PORT`` (and against the target's
ports when known), every input file to exist, every output file to be writable
(:func:`check_writable`): before any slow set-up, so a typo fails at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from npkit.base.errors import NpkitError

# the largest port number any target has (the native target's --ports is at most 65,536)
MAX_PORT = 65535


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
    if not sep or not (port.isascii() and port.isdigit()) or not name:
        raise PortSpecError(f"{option} {spec!r}: expected PORT=FILE, e.g. 0=in.pcap")
    if len(port) > len(str(MAX_PORT)) or int(port) > MAX_PORT:
        shown = spec if len(spec) <= 40 else spec[:40] + "..."
        raise PortSpecError(f"{option} {shown!r}: the port is out of range (0..{MAX_PORT})")
    return PortFile(int(port), Path(name))


def check_writable(path: Path, what: str) -> None:
    """A file ``what`` (an option's name) will write: not a folder, in a folder that exists
    and can be written.  Raises PortSpecError naming both, before any work is done."""
    folder = path.parent
    if path.is_dir():
        raise PortSpecError(f"{what} {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise PortSpecError(f"{what} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists()
                                                    and not os.access(path, os.W_OK)):
        raise PortSpecError(f"{what} {path}: cannot be written (permission denied)")


def parse_port_files(specs: Iterable[str], option: str = "PORT=FILE", *,
                     ports: int | None = None, must_exist: bool = False,
                     writes: bool = False) -> dict[int, Path]:
    """Port -> file for every spec.  A port given twice, a port beyond MAX_PORT or at or
    beyond ``ports`` (when known), with ``must_exist`` a file that is not there, with
    ``writes`` a file that cannot be written (check_writable) are errors: checked here,
    before any slow set-up, so a typo fails at once."""
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
        if writes:
            check_writable(entry.path, f"{option} {spec!r}:")
        files[entry.port] = entry.path
    return files
