"""Table files for the native target: fill an MBL ``lpm`` or ``hash`` table from text.

One entry a line, ``#`` starts a comment:

    10.0.0.0/8   1        # lpm: prefix/len value
    0x0a000001   7        # hash: key value (an int literal or an IP address)

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
    """Add every entry of the file to table ``name``; returns the number of entries.  Keys
    and values must fit the table's types (no negative keys, no IPv6 prefix in a bit<32>
    table, no value wider than the value type), lpm lines need ``/len`` and hash lines
    must not have one: each is an error at file:line, never masked into another entry."""
    memory = native.program.memories.get(name)
    if memory is None or memory.kind not in ("lpm", "hash"):
        what = "no table" if memory is None else f"a {memory.kind}, not a table"
        raise TableFileError(f"--table {name}={path}: the program has {what} named "
                             f"'{name}' (tables: {', '.join(_tables(native)) or 'none'})")
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise TableFileError(f"{path}: cannot read table file: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    key_bits = memory.key.width if memory.key is not None else 32
    value_bits = getattr(memory.value, "width", 32)
    added = 0
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        if len(words) != 2:
            raise TableFileError(f"{where}: expected KEY VALUE, got {_clip(line.strip())!r}")
        key_text, value_text = words
        try:
            value = _number(value_text, value_bits, "value")
            if memory.kind == "lpm":
                key, length = _prefix(key_text, key_bits)
                native.table_add(name, key, value, length)
            else:
                if "/" in key_text:
                    raise ValueError(f"{_clip(key_text)}: a hash table's key is exact, "
                                     "without /len")
                native.table_add(name, _key(key_text, key_bits), value)
        except (ValueError, NativeError) as exc:  # bad text; unknown or full table
            raise TableFileError(f"{where}: {exc}") from None
        added += 1
    return added


def _tables(native: NativeProgram) -> list[str]:
    return sorted(m.name for m in native.program.memories.values() if m.kind in ("lpm", "hash"))


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _number(text: str, bits: int, what: str) -> int:
    """A non-negative integer literal (decimal, 0x, 0b) of at most ``bits`` bits."""
    if len(text) > 2 + bits:  # longer than any literal of that width: never convert it
        raise ValueError(f"{what} {_clip(text)} does not fit bit<{bits}>")
    try:
        number = int(text, 0)
    except ValueError:
        raise ValueError(f"{what} {_clip(text)!r} is not an integer") from None
    if not 0 <= number < 1 << bits:
        raise ValueError(f"{what} {text} does not fit bit<{bits}> (0..{(1 << bits) - 1})")
    return number


def _key(text: str, bits: int) -> int:
    """An exact key: an integer or an IP address of the key's width."""
    if ":" in text or text.count(".") == 3:
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            raise ValueError(f"key {_clip(text)!r} is not an IP address") from None
        if address.max_prefixlen != bits:
            raise ValueError(f"key {text} is an IPv{address.version} address; the table's "
                             f"key is bit<{bits}>")
        return int(address)
    return _number(text, bits, "key")


def _prefix(text: str, bits: int) -> tuple[int, int]:
    """(network, length) of an lpm line's ``prefix/len`` for a bit<bits> key."""
    if "/" not in text:
        raise ValueError(f"{_clip(text)!r} has no /len: an lpm table's lines are "
                         "`prefix/len value`")
    address_text, _, length_text = text.partition("/")
    if not (length_text.isascii() and length_text.isdigit()) or len(length_text) > 3:
        raise ValueError(f"{_clip(text)!r}: the prefix length must be a number")
    length = int(length_text)
    try:
        address = ipaddress.ip_address(address_text)
        network = int(address)
        width = address.max_prefixlen
    except ValueError:
        network, width = _number(address_text, bits, "prefix"), bits
    if width != bits:
        raise ValueError(f"{_clip(text)} is an IPv{6 if width == 128 else 4} prefix; the "
                         f"table's key is bit<{bits}>")
    if length > bits:
        raise ValueError(f"{_clip(text)}: prefix length {length} is longer than the key "
                         f"(bit<{bits}>)")
    mask = ((1 << bits) - 1) ^ ((1 << (bits - length)) - 1)
    return network & mask, length
