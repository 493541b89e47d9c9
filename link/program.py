"""A manifest's optional ``[program]`` table: what the runtime of a linked MBL program needs
besides the chip's set-up (docs/link.md, "The [program] table").

The loader does not need it (images, rings, freelists and memories are the manifest's own
sections); the compiled router's runtime (``npkit.runtime.compiled``) does: where each MBL
memory is (to write tables by name), the drop counters by reason, the exception codes and
ring, which MEs forward for which port, and the media stages' numbers (buffer and
metadata layout) as the linker set them::

    [program]
    entry = "router"                # the MBL pipeline or block
    source = "router.mbl"           # the MBL file it came from ("" when not known)
    window_bytes = 64
    stages = ["rx", "v4", "v6"]
    rx_mes = [0, 1]
    fwd_mes = [2, 3, 4, 5, 6, 7, 8, 9]
    tx_mes = [10, 11]
    fwd_mes_per_port = 4
    rx_rings = [[7, 8, 9, 10], [11, 12, 13, 14]]
    drop_counter_base = 0x1234      # scratch byte address of drop counter 0
    drop_reasons = {0 = "no_verdict", 1 = "runt", ...}     # counter index -> reason
    exceptions = {1 = "ttl_expired", ...}                    # exception code -> name
    media = {buf_desc_base = 0x10000, exc_ring = 6, ...}    # link/media.py Layout fields
    [[program.memory]]
    name = "fib4_trie"
    space = "sram"                  # sram (channel << 26 | offset) | scratch | local
    address = 0x4000000
    bytes = 8323072
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .media import Layout

SPACES = ("sram", "scratch", "local")
_LAYOUT_FIELDS = {f.name for f in dataclasses.fields(Layout)}


@dataclass(frozen=True)
class ProgramMemory:
    """One MBL memory on the chip: `address` is the byte address in its space (SRAM:
    channel << 26 | offset; scratch; local memory, in every forwarding ME)."""

    name: str
    space: str
    address: int
    bytes: int

    @property
    def word(self) -> int:
        return self.address // 4


@dataclass(frozen=True)
class ProgramInfo:
    entry: str
    source: str
    window_bytes: int
    stages: tuple[str, ...]
    memories: tuple[ProgramMemory, ...]
    rx_mes: tuple[int, ...]
    fwd_mes: tuple[int, ...]            # port p's chain: fwd_mes[N p .. N p + N - 1]
    tx_mes: tuple[int, ...]
    fwd_mes_per_port: int
    rx_rings: tuple[tuple[int, ...], ...]   # port -> its RX rings, chain order
    drop_counter_base: int
    drop_reasons: dict[int, str] = field(default_factory=dict)
    exceptions: dict[int, str] = field(default_factory=dict)
    media: dict[str, int] = field(default_factory=dict)

    @property
    def ports(self) -> int:
        return len(self.rx_rings)

    @property
    def drop_counters(self) -> int:
        return max(self.drop_reasons, default=-1) + 1

    def layout(self) -> Layout:
        """The media stages' numbers as linked (router4.h's, the moved ones moved)."""
        return Layout(**self.media)

    def memory(self, name: str) -> ProgramMemory:
        for m in self.memories:
            if m.name == name:
                return m
        raise KeyError(f"no memory '{name}' in program {self.entry} "
                       f"(memories: {', '.join(m.name for m in self.memories) or 'none'})")

    def chain(self, port: int) -> tuple[int, ...]:
        """The forwarding MEs of an input port, in chain order."""
        n = self.fwd_mes_per_port
        return self.fwd_mes[n * port:n * port + n]

    def to_table(self) -> dict[str, Any]:
        """The TOML table (keys of int-keyed maps as strings, as TOML needs)."""
        return {"entry": self.entry, "source": self.source, "window_bytes": self.window_bytes,
                "stages": list(self.stages), "rx_mes": list(self.rx_mes),
                "fwd_mes": list(self.fwd_mes), "tx_mes": list(self.tx_mes),
                "fwd_mes_per_port": self.fwd_mes_per_port,
                "rx_rings": [list(r) for r in self.rx_rings],
                "drop_counter_base": self.drop_counter_base,
                "drop_reasons": {str(k): v for k, v in sorted(self.drop_reasons.items())},
                "exceptions": {str(k): v for k, v in sorted(self.exceptions.items())},
                "media": dict(self.media),
                "memory": [dataclasses.asdict(m) for m in self.memories]}


# --------------------------------------------------------------------------- parsing
def _ints(value: Any, where: str, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise ValueError(f"{where}: key '{key}': expected a list of integers >= 0")
    return tuple(value)


def _int(table: dict[str, Any], key: str, where: str) -> int:
    value = table.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}: key '{key}': expected an integer >= 0, got {value!r}")
    return value


def _names(table: dict[str, Any], key: str, where: str) -> dict[int, str]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(
            str(k).isdigit() and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{where}: key '{key}': expected a table of number = \"name\"")
    return {int(k): v for k, v in value.items()}


def _memory(table: Any, where: str) -> ProgramMemory:
    if not isinstance(table, dict) or set(table) != {"name", "space", "address", "bytes"}:
        raise ValueError(f"{where}: each [[program.memory]] has exactly name, space, address, "
                         "bytes")
    if table["space"] not in SPACES:
        raise ValueError(f"{where}: memory {table['name']!r}: space must be one of "
                         f"{', '.join(SPACES)}")
    return ProgramMemory(str(table["name"]), table["space"], _int(table, "address", where),
                         _int(table, "bytes", where))


def parse_program(table: Any, where: str) -> ProgramInfo:
    """A [program] table; raises ValueError naming the key (the manifest turns it into a
    ManifestError)."""
    if not isinstance(table, dict):
        raise ValueError(f"{where}: expected a table")
    media = table.get("media", {})
    if not isinstance(media, dict) or not set(media) <= _LAYOUT_FIELDS:
        unknown = sorted(set(media) - _LAYOUT_FIELDS) if isinstance(media, dict) else []
        raise ValueError(f"{where}: key 'media': unknown media number(s) {unknown} "
                         "(link/media.py Layout fields)")
    rings = table.get("rx_rings", [])
    if not isinstance(rings, list):
        raise ValueError(f"{where}: key 'rx_rings': expected a list of lists of ring numbers")
    stages = table.get("stages", [])
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        raise ValueError(f"{where}: key 'stages': expected a list of names")
    return ProgramInfo(
        entry=str(table.get("entry", "")), source=str(table.get("source", "")),
        window_bytes=_int(table, "window_bytes", where), stages=tuple(stages),
        memories=tuple(_memory(m, where) for m in table.get("memory", [])),
        rx_mes=_ints(table.get("rx_mes"), where, "rx_mes"),
        fwd_mes=_ints(table.get("fwd_mes"), where, "fwd_mes"),
        tx_mes=_ints(table.get("tx_mes"), where, "tx_mes"),
        fwd_mes_per_port=_int(table, "fwd_mes_per_port", where),
        rx_rings=tuple(_ints(r, where, "rx_rings") for r in rings),
        drop_counter_base=_int(table, "drop_counter_base", where),
        drop_reasons=_names(table, "drop_reasons", where),
        exceptions=_names(table, "exceptions", where),
        media={k: int(v) for k, v in media.items()})
