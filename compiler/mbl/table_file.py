"""Table files for the native target: fill an MBL ``lpm`` or ``hash`` table from text.

One entry a line, ``#`` starts a comment:

    10.0.0.0/8   1        # lpm: prefix/len value
    0x0a000001   7        # hash: key value (any int literal)

Used by ``npkit run X.mbl --table NAME=FILE``; errors name the file and line.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from npkit.base.errors import NpkitError

from .native import NativeError, NativeProgram


class TableFileError(NpkitError):
    """A table file that cannot be read or loaded (bad line, unknown or full table)."""


def parse_table_spec(spec: str) -> tuple[str, Path]:
    """``NAME=FILE`` -> (name, path)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise TableFileError(f"--table {spec!r}: expected NAME=FILE, e.g. fib=routes.txt")
    return name, Path(path)


def load_table_file(native: NativeProgram, name: str, path: str | Path) -> int:
    """Add every entry of the file to table ``name``; returns the number of entries."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TableFileError(f"{path}: cannot read table file: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    added = 0
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        if len(words) != 2:
            raise TableFileError(f"{where}: expected KEY VALUE, got {line.strip()!r}")
        key_text, value_text = words
        try:
            value = int(value_text, 0)
            if "/" in key_text:
                net = ipaddress.ip_network(key_text, strict=False)
                native.table_add(name, int(net.network_address), value, net.prefixlen)
            else:
                native.table_add(name, int(key_text, 0), value)
        except ValueError as exc:
            raise TableFileError(f"{where}: {exc}") from None
        except NativeError as exc:  # unknown or full table
            raise TableFileError(f"{where}: {exc}") from None
        added += 1
    return added
