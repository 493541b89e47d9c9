"""Chip configuration: the chip TOML as a validated dataclass, plus the run's ports.

A chip config (``sim/chips/ixp2800.toml``, ``ixp2400.toml`` or any file with the same keys)
holds every number of the chip model.  ``ChipConfig.load`` reads and validates it, so a typo
or a wrong type is reported as ``file: [section] key: what is wrong`` before the C++ core
ever sees it.  Ports are not part of the chip file: they are chosen per run
(``cfg.ports = [Port.ethernet_10g(), ...]``).
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from npkit.base.errors import NpkitError

PRESETS_PACKAGE = "npkit.sim"
PRESETS_FOLDER = "chips"


class ConfigError(NpkitError, ValueError):
    """A chip config or port description is missing, unreadable or invalid."""


# --------------------------------------------------------------------------- ports
@dataclass(frozen=True)
class Port:
    """One media port: its line rate and the per-frame bytes the wire adds.

    ``overhead_bytes`` is what the line spends per frame besides the frame bytes (Ethernet:
    preamble + SFD 8 and inter-frame gap 12; POS: HDLC flag and FCS-32 = 5, because a
    POS frame as the MSF hands it over already carries the 4-byte PPP address, control
    and protocol fields: a 40-byte IP packet is a 44-byte frame, 49 bytes on the line).

    ``rx_freelist`` is the MSF receive-thread freelist that serves the port; ``None`` means
    the default, list number = port number.
    """

    kind: str
    rate_bps: float
    overhead_bytes: int
    rx_freelist: int | None = None

    def __post_init__(self) -> None:
        if not self.rate_bps > 0:
            raise ConfigError(f"port {self.kind}: rate_bps must be > 0, got {self.rate_bps}")
        if self.overhead_bytes < 0:
            raise ConfigError(
                f"port {self.kind}: overhead_bytes must be >= 0, got {self.overhead_bytes}")
        if self.rx_freelist is not None and self.rx_freelist < 0:
            raise ConfigError(
                f"port {self.kind}: rx_freelist must be >= 0, got {self.rx_freelist}")

    @classmethod
    def ethernet_10g(cls, rx_freelist: int | None = None) -> Port:
        return cls("10gbe", 10e9, 20, rx_freelist)

    @classmethod
    def ethernet_1g(cls, rx_freelist: int | None = None) -> Port:
        return cls("1gbe", 1e9, 20, rx_freelist)

    @classmethod
    def oc192_pos(cls, rx_freelist: int | None = None) -> Port:
        # STS-192c payload rate; frames carry the PPP header, the line adds flag + FCS-32
        return cls("oc192pos", 9.58464e9, 5, rx_freelist)

    @classmethod
    def custom(cls, rate_bps: float, overhead_bytes: int,
               rx_freelist: int | None = None) -> Port:
        return cls("custom", float(rate_bps), int(overhead_bytes), rx_freelist)

    @classmethod
    def from_kind(cls, kind: str, rx_freelist: int | None = None) -> Port:
        """A port from its kind name: ``10gbe``, ``1gbe`` or ``oc192pos``."""
        makers = {"10gbe": cls.ethernet_10g, "1gbe": cls.ethernet_1g, "oc192pos": cls.oc192_pos}
        maker = makers.get(kind.lower())
        if maker is None:
            raise ConfigError(
                f"unknown port kind {kind!r}: use one of {', '.join(makers)} "
                "or a custom rate_bps + overhead_bytes")
        return maker(rx_freelist)

    def frame_cycles(self, frame_bytes: int, clock_hz: float) -> float:
        """ME cycles one frame of ``frame_bytes`` occupies on the line."""
        return (frame_bytes + self.overhead_bytes) * 8 / self.rate_bps * clock_hz

    def to_core_dict(self, index: int) -> dict[str, Any]:
        freelist = index if self.rx_freelist is None else self.rx_freelist
        return {"rate_bps": float(self.rate_bps), "overhead_bytes": int(self.overhead_bytes),
                "rx_freelist": int(freelist)}


# --------------------------------------------------------------------------- schema
# Every key the chip file must have, with its type.  "int+" = positive integer, "num+" =
# positive number, "int0" = integer >= 0, "ints" = non-empty list of integers >= 0.
SCHEMA: dict[str, dict[str, str]] = {
    "me": {
        "numbers": "ints", "clock_hz": "num+", "contexts": "int+",
        "control_store_words": "int+", "gprs_per_bank": "int+", "xfer_per_kind": "int+",
        "nn_registers": "int+", "local_memory_words": "int+", "cam_entries": "int+",
        "signals": "int+", "branch_taken_penalty": "int0", "lm_addr_delay": "int0",
        "command_fifo_depth": "int+",
    },
    "xscale": {  # the control-processor model, runtime/xscale.py
        "clock_hz": "num+", "call_cycles": "int0", "sram_read_cycles": "int0",
        "scratch_read_cycles": "int0", "dram_read_cycles": "int0", "sram_write_cycles": "int0",
        "scratch_write_cycles": "int0", "dram_write_cycles": "int0",
        "write_issue_cycles": "int0", "max_posted_writes": "int+", "read_burst_words": "int+",
        "poll_period_cycles": "int+", "exception_cycles": "int0",
    },
    "sram": {
        "channels": "int+", "channel_bytes": "int+", "latency": "int0",
        "read_bytes_per_cycle": "num+", "write_bytes_per_cycle": "num+",
        "min_access_bytes": "int+", "queue_descriptors": "int+",
    },
    "dram": {
        "channels": "int+", "bytes": "int+", "latency": "int0", "bytes_per_cycle": "num+",
        "interleave_bytes": "int+", "min_access_bytes": "int+",
    },
    "scratch": {
        "bytes": "int+", "latency": "int0", "bytes_per_cycle": "num+", "rings": "int+",
        "ring_min_words": "int+", "ring_max_words": "int+",
    },
    "hash": {"latency": "int0", "occupancy": "int0"},
    "msf": {
        "rbuf_bytes": "int+", "tbuf_bytes": "int+", "element_bytes": "int+",
        "autopush_latency": "int0", "csr_latency": "int0",
    },
    "run": {"deadlock_cycles": "int+", "burst_cycles": "int+"},
}

TYPE_HELP = {
    "int+": "a positive integer", "int0": "an integer >= 0", "num+": "a positive number",
    "ints": "a non-empty list of integers >= 0",
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "int+":
        return _is_int(value) and value > 0
    if kind == "int0":
        return _is_int(value) and value >= 0
    if kind == "num+":
        return (_is_int(value) or isinstance(value, float)) and value > 0
    if kind == "ints":
        return (isinstance(value, list) and len(value) > 0
                and all(_is_int(v) and v >= 0 for v in value))
    raise AssertionError(kind)


# Keys an older chip file may still carry, and why they no longer apply.
REMOVED: dict[tuple[str, str], str] = {
    ("xscale", "route_update_cycles"): "a route update's XScale work is now costed from what "
    "the updater counts (runtime/data/xscale_update.toml): delete the key",
}


def _check_schema(raw: dict[str, Any], where: str) -> None:
    if not isinstance(raw.get("name", ""), str):
        raise ConfigError(f"{where}: key 'name' must be a string")
    for (section, key), why in REMOVED.items():
        if key in raw.get(section, {}):
            raise ConfigError(f"{where}: [{section}] {key} is no longer read: {why}")
    for section, keys in SCHEMA.items():
        table = raw.get(section)
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: missing section [{section}]")
        for key, kind in keys.items():
            if key not in table:
                raise ConfigError(f"{where}: [{section}] missing key '{key}' ({TYPE_HELP[kind]})")
            if not _type_ok(kind, table[key]):
                raise ConfigError(f"{where}: [{section}] {key}: expected {TYPE_HELP[kind]}, "
                                  f"got {table[key]!r}")


def _check_consistency(raw: dict[str, Any], where: str) -> None:
    """Cross-key rules the core relies on."""
    me, sram, scratch, msf = raw["me"], raw["sram"], raw["scratch"], raw["msf"]
    numbers = me["numbers"]
    if len(set(numbers)) != len(numbers):
        raise ConfigError(f"{where}: [me] numbers: duplicate ME numbers in {numbers}")
    if me["contexts"] not in (4, 8):
        raise ConfigError(f"{where}: [me] contexts: must be 4 or 8, got {me['contexts']}")
    if sram["channels"] > 4:
        raise ConfigError(f"{where}: [sram] channels: at most 4 (address bits 27..26)")
    if sram["channel_bytes"] > 1 << 26 or sram["channel_bytes"] % 4:
        raise ConfigError(f"{where}: [sram] channel_bytes: a multiple of 4, at most 64 MB")
    if scratch["bytes"] % 4:
        raise ConfigError(f"{where}: [scratch] bytes: must be a multiple of 4")
    if scratch["ring_min_words"] > scratch["ring_max_words"]:
        raise ConfigError(f"{where}: [scratch] ring_min_words > ring_max_words")
    if msf["element_bytes"] not in (64, 128, 256):
        raise ConfigError(f"{where}: [msf] element_bytes: must be 64, 128 or 256, "
                          f"got {msf['element_bytes']}")
    if msf.get("rbuf_partitions", 0) not in (0, 1, 2, 4):
        raise ConfigError(f"{where}: [msf] rbuf_partitions: must be 1, 2 or 4 (0: one per port), "
                          f"got {msf['rbuf_partitions']!r}")
    for key in ("rbuf_bytes", "tbuf_bytes"):
        if msf[key] % msf["element_bytes"]:
            raise ConfigError(f"{where}: [msf] {key}: must be a multiple of element_bytes")


# --------------------------------------------------------------------------- config
@dataclass
class ChipConfig:
    """A validated chip config.  ``raw`` is the TOML as loaded (what the core reads)."""

    raw: dict[str, Any]
    source: str = "<dict>"
    ports: list[Port] = field(default_factory=lambda: [Port.ethernet_10g(),
                                                       Port.ethernet_10g()])

    def __post_init__(self) -> None:
        _check_schema(self.raw, self.source)
        _check_consistency(self.raw, self.source)

    # ---- loading
    @staticmethod
    def presets() -> list[str]:
        """Names of the chip configs shipped with npkit."""
        folder = resources.files(PRESETS_PACKAGE) / PRESETS_FOLDER
        return sorted(p.name.removesuffix(".toml") for p in folder.iterdir()
                      if p.name.endswith(".toml"))

    @classmethod
    def load(cls, name_or_path: str | Path = "ixp2800") -> ChipConfig:
        """Load a preset by name (``ixp2800``, ``ixp2400``) or a chip TOML file by path."""
        text, where = cls._read(name_or_path)
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{where}: not valid TOML: {err}") from None
        return cls(raw=raw, source=where)

    @classmethod
    def _read(cls, name_or_path: str | Path) -> tuple[str, str]:
        name = str(name_or_path)
        if name in cls.presets():
            preset = resources.files(PRESETS_PACKAGE) / PRESETS_FOLDER / f"{name}.toml"
            return preset.read_text(encoding="utf-8"), f"{name}.toml"
        path = Path(name_or_path)
        if not path.is_file():
            raise ConfigError(f"chip config {name!r}: no such preset or file "
                              f"(presets: {', '.join(cls.presets())})")
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{path}: cannot read chip config: {err}") from None

    # ---- the numbers the Python side needs
    @property
    def name(self) -> str:
        return str(self.raw.get("name", Path(self.source).stem))

    @property
    def me_numbers(self) -> list[int]:
        return list(self.raw["me"]["numbers"])

    @property
    def clock_hz(self) -> float:
        return float(self.raw["me"]["clock_hz"])

    @property
    def contexts(self) -> int:
        return int(self.raw["me"]["contexts"])

    @property
    def control_store_words(self) -> int:
        return int(self.raw["me"]["control_store_words"])

    @property
    def local_memory_words(self) -> int:
        return int(self.raw["me"]["local_memory_words"])

    @property
    def sram_channels(self) -> int:
        return int(self.raw["sram"]["channels"])

    @property
    def sram_channel_bytes(self) -> int:
        return int(self.raw["sram"]["channel_bytes"])

    @property
    def queue_descriptors(self) -> int:
        return int(self.raw["sram"]["queue_descriptors"])

    @property
    def dram_bytes(self) -> int:
        return int(self.raw["dram"]["bytes"])

    @property
    def scratch_bytes(self) -> int:
        return int(self.raw["scratch"]["bytes"])

    @property
    def scratch_rings(self) -> int:
        return int(self.raw["scratch"]["rings"])

    @property
    def ring_words_range(self) -> tuple[int, int]:
        scratch = self.raw["scratch"]
        return int(scratch["ring_min_words"]), int(scratch["ring_max_words"])

    @property
    def me_count(self) -> int:
        return len(self.raw["me"]["numbers"])

    def check_me(self, me: int) -> int:
        """``me`` itself when it is a valid ME index (0..me_count-1), else ConfigError."""
        if not (isinstance(me, int) and 0 <= me < self.me_count):
            raise ConfigError(f"ME {me} does not exist on {self.name}: MEs are numbered "
                              f"0..{self.me_count - 1} (hardware numbers "
                              f"{', '.join(f'{n:#04x}' for n in self.me_numbers)})")
        return me

    def me_label(self, me: int) -> str:
        """How messages name ME index ``me``: its hardware number, plus the index when the
        two differ (``ME 0x01``, ``ME 0x10 (index 8)``)."""
        numbers = self.me_numbers
        if not 0 <= me < len(numbers):
            return f"ME {me}"
        if numbers[me] == me:
            return f"ME {me:#04x}"
        return f"ME {numbers[me]:#04x} (index {me})"

    def to_core_dict(self) -> dict[str, Any]:
        """The dict ``_core.Core`` takes: the chip TOML plus ``ports``."""
        if not self.ports:
            raise ConfigError(f"{self.source}: no ports configured")
        core = copy.deepcopy(self.raw)
        core["ports"] = [port.to_core_dict(i) for i, port in enumerate(self.ports)]
        return core
