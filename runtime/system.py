"""Systems: several chips, the links between their media ports and the external ports, as data.

A *system file* (``sim/systems/<name>.toml`` or any path; docs/system.md) names

* its chips (``[[chip]]``): a chip config (preset or path), the link platform whose
  programs run on it, how many media ports it has, optional chip-config overrides;
* the links between chips (``[[link]]``): one direction of an MSF interface (SPI-4.2 or
  CSIX-L1) from ``chip:port`` to ``chip:port`` -- width, clock, per-frame overhead, latency
  and link-level flow control;
* the external ports (``[[port]]``): a line (``oc192pos``, ``10gbe``, ...) whose receive side
  feeds one chip port and whose transmit side is fed by one chip port, through a framer
  with a receive and a transmit delay.

``SystemSpec.load`` reads and checks a file; every error names the file and the key
(``dual.toml: [[link]] #1 (a-to-b): key 'clock_hz': ...``).  ``System`` runs the chips
together: conservative synchronisation with the shortest link latency as lookahead, frames
that leave a chip on a link delivered to the other chip ``latency`` later, link-level flow
control from the receiver's RBUF occupancy, framer delays on the external ports, and every
frame accounted for (counters, never a silent loss).  The single chip is the smallest
system (``single-ixp2800``).
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import math
import threading
import tomllib
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from npkit.base.errors import NpkitError
from npkit.link.manifest import Manifest, parse_manifest
from npkit.link.platform import platform_names
from npkit.sim.chip import Chip, _tx_frame_maker
from npkit.sim.config import ChipConfig, ConfigError, Port
from npkit.sim.frames import PackedFrames
from npkit.sim.packets import RxFrame, Sink, Source, TxFrame

from .loader import LoadedRun, build_from_manifest

PRESETS_PACKAGE = "npkit.sim"
PRESETS_FOLDER = "systems"
LINK_KINDS = ("spi4", "csix")
FRAMER_KINDS = ("none", "ixf18101", "generic")
# A chip port that receives from a link gets a receive line this fast: the link's
# serialisation is made by the sending chip's port (its rate is the link's), so the
# receiving port only has to take the frame when its last bit arrives (see System).
LINK_RX_BPS = 1e13  # the core's highest port rate
NO_LINK_STEP_CYCLES = 20_000  # synchronisation step when no link couples the chips
TOP_KEYS = {"name", "description", "msf", "chip", "link", "port"}
MSF_KEYS = {"bits", "clock_hz", "ddr"}
CHIP_KEYS = {"name", "config", "platform", "ports", "overrides"}
LINK_KEYS = {"name", "kind", "from", "to", "bits", "clock_hz", "ddr", "overhead_bytes",
             "latency_ns", "flow_control"}
FLOW_KEYS = {"threshold", "queue_bytes"}
PORT_KEYS = {"name", "kind", "rx", "tx", "framer"}
FRAMER_KEYS = {"kind", "rx_delay_ns", "tx_delay_ns"}
HWM_CHOICES = (0.25, 0.5, 0.75, 0.875)  # HRM 8.9.5.1: link-level flow control thresholds


class SystemConfigError(NpkitError, ValueError):
    """A system file is missing, unreadable or invalid, or a system cannot be built."""


# --------------------------------------------------------------------------- the spec
@dataclass(frozen=True)
class Endpoint:
    """One chip media port, written ``"chip:port"`` in the file."""

    chip: str
    port: int

    def __str__(self) -> str:
        return f"{self.chip}:{self.port}"


@dataclass(frozen=True)
class ChipSpec:
    name: str
    config: str  # a chip preset name or a path (resolved against the system file)
    platform: str  # a link platform (link/platforms) whose programs run on this chip
    ports: int
    overrides: dict[str, dict[str, Any]]
    where: str


@dataclass(frozen=True)
class FlowControl:
    """Link-level flow control: the receiver's RBUF partition above ``threshold`` (a
    fraction) stops the sender; ``queue_bytes`` bounds what waits at the sender."""

    threshold: float
    queue_bytes: int


@dataclass(frozen=True)
class LinkSpec:
    name: str
    kind: str
    src: Endpoint
    dst: Endpoint
    bits: int
    clock_hz: float
    ddr: bool
    overhead_bytes: int
    latency_ns: float
    flow_control: FlowControl
    where: str

    @property
    def rate_bps(self) -> float:
        """Raw data rate: width x clock, twice for double data rate."""
        return self.bits * self.clock_hz * (2 if self.ddr else 1)

    def port(self) -> Port:
        """The sending chip's port: the link's rate and per-frame overhead."""
        return Port.custom(self.rate_bps, self.overhead_bytes)


@dataclass(frozen=True)
class FramerSpec:
    kind: str
    rx_delay_ns: float
    tx_delay_ns: float


@dataclass(frozen=True)
class ExternalPort:
    name: str
    kind: str
    rx: Endpoint | None  # the chip port its received frames go to
    tx: Endpoint | None  # the chip port whose frames it transmits
    framer: FramerSpec
    where: str

    def port(self) -> Port:
        return Port.from_kind(self.kind)


@dataclass(frozen=True)
class InterfaceLoad:
    """What one chip's MSF receive or transmit interface would carry, against its raw
    capacity (the file's [msf] width x clock, else the fastest link's rate, else
    ``None``)."""

    chip: str
    direction: str  # "rx" | "tx"
    users: tuple[str, ...]
    offered_bps: float
    capacity_bps: float | None

    @property
    def over(self) -> bool:
        return self.capacity_bps is not None and self.offered_bps > self.capacity_bps


@dataclass
class SystemSpec:
    """A validated system file."""

    name: str
    description: str
    source: str
    chips: list[ChipSpec]
    links: list[LinkSpec]
    ports: list[ExternalPort]
    folder: Path | None = None
    msf_bps: float | None = None  # raw rate of one MSF interface (one direction), [msf]

    # ---- loading
    @staticmethod
    def presets() -> list[str]:
        folder = resources.files(PRESETS_PACKAGE) / PRESETS_FOLDER
        return sorted(p.name.removesuffix(".toml") for p in folder.iterdir()
                      if p.name.endswith(".toml"))

    @classmethod
    def load(cls, name_or_path: str | Path) -> SystemSpec:
        """A shipped system by name (``single-ixp2800``, ``dual-ixp2800-npf``, ...) or a
        system TOML by path."""
        name = str(name_or_path)
        if name in cls.presets():
            path = resources.files(PRESETS_PACKAGE) / PRESETS_FOLDER / f"{name}.toml"
            text, where, folder = path.read_text(encoding="utf-8"), f"{name}.toml", None
        else:
            file = Path(name_or_path)
            if not file.is_file():
                raise SystemConfigError(f"system {name!r}: no such preset or file "
                                  f"(presets: {', '.join(cls.presets())})")
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                raise SystemConfigError(f"{file}: cannot read the system file: {err}") from None
            where, folder = str(file), file.parent
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise SystemConfigError(f"{where}: not valid TOML: {err}") from None
        return parse_system(raw, where, folder)

    # ---- what the chips are built from
    def chip(self, name: str) -> ChipSpec:
        for chip in self.chips:
            if chip.name == name:
                return chip
        raise SystemConfigError(f"{self.source}: no chip named {name!r}")

    def external(self, name: str) -> ExternalPort:
        for port in self.ports:
            if port.name == name:
                return port
        raise SystemConfigError(f"{self.source}: no external port named {name!r} "
                          f"(ports: {', '.join(p.name for p in self.ports)})")

    def chip_ports(self, name: str) -> list[Port]:
        """The core ports of chip ``name``: an external port's line where a framer is
        attached, the link's rate where the chip transmits on a link, a fast receive
        line where it receives from one (System explains why)."""
        chip = self.chip(name)
        ports: list[Port | None] = [None] * chip.ports
        for index in range(chip.ports):
            roles = _roles(self).get(Endpoint(name, index), {})
            ports[index] = _port_for(roles, self.source, Endpoint(name, index))
        return [p or Port.oc192_pos() for p in ports]

    def chip_config(self, name: str) -> ChipConfig:
        """The chip's config with the system's overrides and ports."""
        chip = self.chip(name)
        config = _resolve(chip.config, self.folder)
        try:
            cfg = ChipConfig.load(config)
            if chip.overrides:
                raw = copy.deepcopy(cfg.raw)
                for section, values in chip.overrides.items():
                    raw.setdefault(section, {}).update(values)
                cfg = ChipConfig(raw=raw, source=f"{cfg.source} (with {chip.where} overrides)")
        except ConfigError as err:
            raise SystemConfigError(f"{chip.where}: {err}") from None
        cfg.ports = self.chip_ports(name)
        return cfg

    def place_manifest(self, name: str, manifest: Manifest) -> Manifest:
        """``manifest`` (hand-written or linked) as chip ``name`` runs it: the system's
        chip config, its overrides over the manifest's, and the system's ports."""
        chip = self.chip(name)
        if len(manifest.ports) not in (0, chip.ports):
            raise SystemConfigError(f"{chip.where}: {manifest.path} is for "
                                    f"{len(manifest.ports)} ports, the chip has {chip.ports}")
        cfg = self.chip_config(name)
        overrides = copy.deepcopy(manifest.overrides)
        for section, values in chip.overrides.items():
            overrides.setdefault(section, {}).update(values)
        return dataclasses.replace(manifest, chip=_resolve(chip.config, self.folder),
                                   ports=list(cfg.ports), overrides=overrides)

    def unconnected(self, name: str) -> list[int]:
        """The transmit sides of chip ``name``'s ports that lead nowhere (no external
        line, no link): what a chip sends there is lost, and ``System`` counts it."""
        used = {p.tx for p in self.ports} | {lk.src for lk in self.links}
        return [i for i in range(self.chip(name).ports) if Endpoint(name, i) not in used]

    def chip_port_of(self, name: str, external: str) -> int | None:
        """The port of chip ``name`` that stands for external port ``external`` in a
        next-hop table: the one that transmits its line, else the one that receives it,
        else None (the chip does not touch that line)."""
        ext = self.external(external)
        for end in (ext.tx, ext.rx):
            if end is not None and end.chip == name:
                return end.port
        return None

    def interface_loads(self) -> list[InterfaceLoad]:
        """Per chip and direction, what its one MSF interface would carry (lines at their
        payload rate, links at their raw rate), against the interface's raw capacity
        (docs/system.md, "Which chip does what")."""
        capacity = self.msf_bps or max((link.rate_bps for link in self.links), default=None)
        loads = []
        for chip in self.chips:
            for direction in ("rx", "tx"):
                users: list[str] = []
                offered = 0.0
                for port in self.ports:
                    end = port.rx if direction == "rx" else port.tx
                    if end is not None and end.chip == chip.name:
                        users.append(port.name)
                        offered += port.port().rate_bps
                for link in self.links:
                    end = link.dst if direction == "rx" else link.src
                    if end.chip == chip.name:
                        users.append(link.name)
                        offered += link.rate_bps
                loads.append(InterfaceLoad(chip.name, direction, tuple(users), offered,
                                           capacity))
        return loads


# --------------------------------------------------------------------------- parsing
def _resolve(config: str, folder: Path | None) -> str:
    if config in ChipConfig.presets() or folder is None:
        return config
    path = Path(config)
    return str(path if path.is_absolute() else folder / path)


def _keys(table: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise SystemConfigError(f"{where}: expected a table")
    extra = sorted(set(table) - allowed)
    if extra:
        raise SystemConfigError(f"{where}: unknown key '{extra[0]}' "
                                f"(keys: {', '.join(sorted(allowed))})")
    return table


def _get(table: dict[str, Any], key: str, kind: str, where: str, default: Any = ...) -> Any:
    if key not in table:
        if default is ...:
            raise SystemConfigError(f"{where}: missing key '{key}'")
        return default
    value = table[key]
    ok = {
        "str": isinstance(value, str) and value != "",
        "int+": isinstance(value, int) and not isinstance(value, bool) and value > 0,
        "int0": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        "num+": isinstance(value, int | float) and not isinstance(value, bool) and value > 0,
        "num0": isinstance(value, int | float) and not isinstance(value, bool) and value >= 0,
        "bool": isinstance(value, bool),
        "table": isinstance(value, dict),
    }[kind]
    if not ok:
        what = {"str": "a non-empty string", "int+": "a positive integer",
                "int0": "an integer >= 0", "num+": "a positive number",
                "num0": "a number >= 0", "bool": "true or false", "table": "a table"}[kind]
        raise SystemConfigError(f"{where}: key '{key}': expected {what}, got {value!r}")
    return value


def _endpoint(text: Any, key: str, where: str, chips: dict[str, ChipSpec]) -> Endpoint:
    if not isinstance(text, str) or text.count(":") != 1:
        raise SystemConfigError(f"{where}: key '{key}': expected \"chip:port\", got {text!r}")
    chip, _, port = text.partition(":")
    if chip not in chips:
        raise SystemConfigError(f"{where}: key '{key}': no chip named {chip!r} "
                          f"(chips: {', '.join(chips)})")
    if not port.isdigit() or int(port) >= chips[chip].ports:
        raise SystemConfigError(f"{where}: key '{key}': chip {chip!r} has ports "
                          f"0..{chips[chip].ports - 1}, got {port!r}")
    return Endpoint(chip, int(port))


def _named_list(raw: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    items = raw.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise SystemConfigError(f"{where}: [[{key}]] must be an array of tables")
    return items


def _unique(name: str, seen: set[str], where: str) -> str:
    if name in seen:
        raise SystemConfigError(f"{where}: key 'name': {name!r} is used twice")
    seen.add(name)
    return name


def parse_system(raw: dict[str, Any], where: str, folder: Path | None = None) -> SystemSpec:
    """A system from its parsed TOML; ``where`` names the file in messages."""
    _keys(raw, TOP_KEYS, where)
    chips: dict[str, ChipSpec] = {}
    names: set[str] = set()
    for i, table in enumerate(_named_list(raw, "chip", where)):
        here = f"{where}: [[chip]] #{i}"
        _keys(table, CHIP_KEYS, here)
        name = _unique(_get(table, "name", "str", here), names, here)
        here = f"{where}: [[chip]] #{i} ({name})"
        platform = _get(table, "platform", "str", here)
        if platform not in platform_names():
            raise SystemConfigError(f"{here}: key 'platform': no link platform {platform!r} "
                              f"(platforms: {', '.join(platform_names())})")
        overrides = _get(table, "overrides", "table", here, {})
        for section, values in overrides.items():
            if not isinstance(values, dict):
                raise SystemConfigError(f"{here}: key 'overrides': [{section}] must be a table")
        config = _get(table, "config", "str", here)
        if config not in ChipConfig.presets() and not Path(_resolve(config, folder)).is_file():
            raise SystemConfigError(f"{here}: key 'config': no chip preset or file {config!r} "
                              f"(presets: {', '.join(ChipConfig.presets())})")
        chips[name] = ChipSpec(name, config, platform, _get(table, "ports", "int+", here),
                               overrides, here)
    if not chips:
        raise SystemConfigError(f"{where}: no [[chip]]: a system has at least one chip")
    links = []
    for i, table in enumerate(_named_list(raw, "link", where)):
        here = f"{where}: [[link]] #{i}"
        _keys(table, LINK_KEYS, here)
        name = _unique(_get(table, "name", "str", here), names, here)
        here = f"{where}: [[link]] #{i} ({name})"
        kind = _get(table, "kind", "str", here)
        if kind not in LINK_KINDS:
            raise SystemConfigError(f"{here}: key 'kind': {kind!r} is not one of "
                              f"{', '.join(LINK_KINDS)}")
        src = _endpoint(table.get("from"), "from", here, chips)
        dst = _endpoint(table.get("to"), "to", here, chips)
        if src.chip == dst.chip:
            raise SystemConfigError(f"{here}: a link joins two chips; 'from' and 'to' are both "
                              f"on chip {src.chip!r}")
        fc_where = f"{here} [flow_control]"
        fc = _keys(_get(table, "flow_control", "table", here), FLOW_KEYS, fc_where)
        threshold = _get(fc, "threshold", "num+", fc_where)
        if threshold not in HWM_CHOICES:
            raise SystemConfigError(f"{fc_where}: key 'threshold': the MSF asserts link-level flow "
                              f"control at {', '.join(map(str, HWM_CHOICES))} of the "
                              f"partition, got {threshold!r}")
        flow = FlowControl(float(threshold), _get(fc, "queue_bytes", "int+", fc_where))
        links.append(LinkSpec(
            name, kind, src, dst, _get(table, "bits", "int+", here),
            float(_get(table, "clock_hz", "num+", here)), _get(table, "ddr", "bool", here),
            _get(table, "overhead_bytes", "int0", here),
            float(_get(table, "latency_ns", "num+", here)), flow, here))
    ports = []
    for i, table in enumerate(_named_list(raw, "port", where)):
        here = f"{where}: [[port]] #{i}"
        _keys(table, PORT_KEYS, here)
        name = _unique(_get(table, "name", "str", here), names, here)
        here = f"{where}: [[port]] #{i} ({name})"
        kind = _get(table, "kind", "str", here)
        try:
            Port.from_kind(kind)
        except ConfigError as err:
            raise SystemConfigError(f"{here}: key 'kind': {err}") from None
        rx = _endpoint(table["rx"], "rx", here, chips) if "rx" in table else None
        tx = _endpoint(table["tx"], "tx", here, chips) if "tx" in table else None
        if rx is None and tx is None:
            raise SystemConfigError(f"{here}: an external port needs 'rx', 'tx' or both")
        fr_where = f"{here} [framer]"
        fr = _keys(_get(table, "framer", "table", here), FRAMER_KEYS, fr_where)
        fkind = _get(fr, "kind", "str", fr_where)
        if fkind not in FRAMER_KINDS:
            raise SystemConfigError(f"{fr_where}: key 'kind': {fkind!r} is not one of "
                              f"{', '.join(FRAMER_KINDS)}")
        framer = FramerSpec(fkind, float(_get(fr, "rx_delay_ns", "num0", fr_where)),
                            float(_get(fr, "tx_delay_ns", "num0", fr_where)))
        ports.append(ExternalPort(name, kind, rx, tx, framer, here))
    if not ports:
        raise SystemConfigError(f"{where}: no [[port]]: a system has at least one external port")
    msf_bps = None
    if "msf" in raw:
        here = f"{where}: [msf]"
        msf = _keys(raw["msf"], MSF_KEYS, here)
        msf_bps = (_get(msf, "bits", "int+", here) * float(_get(msf, "clock_hz", "num+", here))
                   * (2 if _get(msf, "ddr", "bool", here) else 1))
    spec = SystemSpec(str(raw.get("name", Path(where).stem)), str(raw.get("description", "")),
                      where, list(chips.values()), links, ports, folder, msf_bps)
    _check_roles(spec)
    return spec


def _roles(spec: SystemSpec) -> dict[Endpoint, dict[str, tuple[str, Any]]]:
    """Who uses each chip port: {"rx": ("port"|"link", spec), "tx": ...}."""
    roles: dict[Endpoint, dict[str, tuple[str, Any]]] = {}
    for port in spec.ports:
        if port.rx is not None:
            roles.setdefault(port.rx, {}).setdefault("rx", ("port", port))
        if port.tx is not None:
            roles.setdefault(port.tx, {}).setdefault("tx", ("port", port))
    for link in spec.links:
        roles.setdefault(link.src, {}).setdefault("tx", ("link", link))
        roles.setdefault(link.dst, {}).setdefault("rx", ("link", link))
    return roles


def _check_roles(spec: SystemSpec) -> None:
    taken: dict[tuple[Endpoint, str], str] = {}
    users = [(p.rx, "rx", p.name, p.where, "rx") for p in spec.ports] + \
        [(p.tx, "tx", p.name, p.where, "tx") for p in spec.ports] + \
        [(lk.src, "tx", lk.name, lk.where, "from") for lk in spec.links] + \
        [(lk.dst, "rx", lk.name, lk.where, "to") for lk in spec.links]
    for end, direction, name, where, key in users:
        if end is None:
            continue
        other = taken.get((end, direction))
        if other is not None:
            raise SystemConfigError(f"{where}: key '{key}': chip port {end} already "
                              f"{'receives from' if direction == 'rx' else 'transmits to'} "
                              f"{other}")
        taken[(end, direction)] = name
    for end, role in _roles(spec).items():
        _port_for(role, spec.source, end)


def _port_for(roles: dict[str, tuple[str, Any]], where: str, end: Endpoint) -> Port | None:
    """One core port for both directions of ``end`` (the core gives a port one rate)."""
    rx, tx = roles.get("rx"), roles.get("tx")
    if rx is not None and rx[0] == "link":
        if tx is not None:
            raise SystemConfigError(
                f"{rx[1].where}: key 'to': chip port {end} receives link {rx[1].name!r} and "
                f"also transmits to {tx[1].name!r}: a port that receives a link transmits "
                "nothing in this version (docs/system.md, \"Limits\")")
        return Port.custom(LINK_RX_BPS, 0)
    if tx is not None and tx[0] == "link":
        if rx is not None:
            raise SystemConfigError(
                f"{tx[1].where}: key 'from': chip port {end} transmits link {tx[1].name!r} "
                f"and also receives {rx[1].name!r}: the core gives a port one rate for both "
                "directions; use another port of the chip")
        return tx[1].port()
    ports = {r[1].kind for r in (rx, tx) if r is not None}
    if len(ports) > 1:
        raise SystemConfigError(f"{where}: chip port {end} receives and transmits external ports "
                          f"of different kinds ({', '.join(sorted(ports))})")
    chosen = rx or tx
    return None if chosen is None else chosen[1].port()


# --------------------------------------------------------------------------- running
def _clock_fraction(value: float) -> Fraction:
    """The core's exact form of a rate or clock (media.cpp decimal_fraction)."""
    for k in range(7):
        scaled = value * 10 ** k
        if abs(scaled - round(scaled)) <= 1e-6 or k == 6:
            return Fraction(round(scaled), 10 ** k)
    raise AssertionError(value)


@dataclass
class _Collector:
    """A sink the System attaches to a chip port; it empties it after every step."""

    frames: list[TxFrame] = field(default_factory=list)

    def write(self, frame: TxFrame) -> None:
        self.frames.append(frame)

    def close(self) -> None:
        pass

    def take(self) -> list[TxFrame]:
        out, self.frames = self.frames, []
        return out


@dataclass
class _Columns:
    """A sink the System attaches to a chip port whose frames leave the system (an
    external port, or a transmit side leading nowhere): the chip hands it the frames
    packed (``Chip._drain_tx``: ``write_packed``, int64 arrays and ``PackedFrames``), no
    Python object per frame; emptied after every step.  ``delay``: cycles added to every
    first and last bit (an external port's framer), here, on the thread that runs the
    chip, not at the exchange.  ``take`` gives the frames as (firsts, lasts, frames)."""

    delay: int = 0
    # the chunks written since the last take: (firsts, lasts, frames), the delay added
    chunks: list[tuple[np.ndarray, np.ndarray, PackedFrames]] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)  # ends of the steps (System.run_steps)

    def write_packed(self, port: int, firsts: np.ndarray, lasts: np.ndarray,
                     frames: PackedFrames) -> None:
        if self.delay:
            firsts, lasts = firsts + self.delay, lasts + self.delay
        self.chunks.append((firsts, lasts, frames))

    def write_columns(self, port: int, firsts: list[int], lasts: list[int],
                      datas: list[bytes]) -> None:
        if firsts:
            self.write_packed(port, np.asarray(firsts, dtype=np.int64),
                              np.asarray(lasts, dtype=np.int64), PackedFrames.from_list(datas))

    def write(self, frame: TxFrame) -> None:
        self.write_columns(frame.port, [frame.first_bit_cycle], [frame.last_bit_cycle],
                           [frame.data])

    def close(self) -> None:
        pass

    def take(self) -> tuple[np.ndarray, np.ndarray, PackedFrames]:
        out = _joined(self.chunks)
        self.chunks = []
        return out

    def mark(self) -> None:
        """A step ends here (its chip's thread calls it after each step of run_steps)."""
        self.marks.append(len(self.chunks))

    def take_steps(self) -> list[tuple[np.ndarray, np.ndarray, PackedFrames]]:
        """The frames since the last take, one part per marked step."""
        chunks, self.chunks = self.chunks, []
        parts, start = [], 0
        for end in self.marks:
            parts.append(_joined(chunks[start:end]))
            start = end
        assert start == len(chunks), "frames after the last step's mark"
        self.marks = []
        return parts


def _joined(chunks: Sequence[tuple[np.ndarray, np.ndarray, PackedFrames]]
            ) -> tuple[np.ndarray, np.ndarray, PackedFrames]:
    """Chunks of (firsts, lasts, frames) as one."""
    if len(chunks) == 1:
        return chunks[0]
    if not chunks:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, PackedFrames.concat([])
    return (np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks]),
            PackedFrames.concat([c[2] for c in chunks]))


@dataclass
class _Delayed:
    """An external port's source seen through its framer: every frame ``delay`` cycles
    later at the chip port (a frame with no time of its own: the first is delayed and the
    rest follow it back to back at line rate)."""

    source: Source
    delay_cycles: int
    clock_hz: float

    def frames(self) -> Iterator[RxFrame]:
        first = True
        for frame in self.source.frames():
            if frame.time_s is None:
                if first:
                    yield RxFrame(frame.data, (self.delay_cycles + 0.5) / self.clock_hz)
                else:
                    yield frame
            else:
                cycle = math.floor(frame.time_s * self.clock_hz) + self.delay_cycles
                yield RxFrame(frame.data, (cycle + 0.5) / self.clock_hz)
            first = False



@dataclass
class _DelayedCounted(_Delayed):
    """A ``_Delayed`` whose source can say how many frames it has (progress, idle)."""

    def total(self) -> int:
        for name in ("total", "count"):
            method = getattr(self.source, name, None)
            if callable(method):
                return int(method())
        raise AssertionError("no count")


@dataclass(frozen=True)
class LinkRecord:
    """One frame over a link: when its last bit left the sender (``sent``), when it was
    released by flow control, when its last bit reached the receiver (``arrived``)."""

    size: int
    first_bit_cycle: int
    sent: int
    released: int
    arrived: int


@dataclass
class LinkCounters:
    frames_in: int = 0  # frames the sending chip put on the link
    frames_delivered: int = 0  # handed to the receiving chip
    frames_held: int = 0  # waited at least one step for flow control
    dropped_queue_full: int = 0  # the bounded queue at the sender was full
    xoff_steps: int = 0  # synchronisation steps that ended with flow control asserted
    queue_high_water_bytes: int = 0


@dataclass
class _Held:
    frame: TxFrame
    held: bool = False


class _Link:
    """One direction of a chip-to-chip interface while the system runs."""

    def __init__(self, spec: LinkSpec, receiver: Chip, clock_hz: float, record: bool) -> None:
        self.spec = spec
        self.receiver = receiver
        self.latency = round(spec.latency_ns * 1e-9 * clock_hz)
        cfg = receiver.config
        eb = int(cfg.raw["msf"]["element_bytes"])
        self.element_bytes = eb
        self.partition = int(cfg.raw["msf"]["rbuf_bytes"]) // eb // len(cfg.ports)
        self.hwm = math.floor(spec.flow_control.threshold * self.partition)
        per_bit = _clock_fraction(clock_hz) / _clock_fraction(LINK_RX_BPS)
        self._rx_cycles = lambda size: math.ceil(size * 8 * per_bit)
        # the longest frame the receiving port can take (a longer one is dropped as too
        # long on arrival): 5 cycles for a 4 KB partition at 1.4 GHz
        self.fast_rx_max = self._rx_cycles(self.partition * eb)
        self.queue: deque[_Held] = deque()
        self.in_flight: deque[tuple[int, int]] = deque()  # (arrival cycle, elements)
        self.line_free = 0  # last arrival so far: the link delivers in order
        self.counters = LinkCounters()
        self.records: list[LinkRecord] | None = [] if record else None

    def accept(self, frames: list[TxFrame]) -> None:
        for frame in frames:
            self.counters.frames_in += 1
            self.queue.append(_Held(frame))

    def due(self, now: int) -> bool:
        """Whether a frame the sender has sent by ``now`` is on the queue."""
        return bool(self.queue) and self.queue[0].frame.last_bit_cycle <= now

    def release(self, now: int, occupancy: int) -> None:
        """At ``now`` (the receiver's time), deliver the frames sent by then that flow
        control lets through; mark the rest held, drop what the sender could not hold.
        Frames the sender (running ahead) sent after ``now`` wait, unjudged, for a later
        step: every decision is made at the first step after the frame was sent."""
        while self.in_flight and self.in_flight[0][0] <= now:
            self.in_flight.popleft()
        pending = sum(e for _, e in self.in_flight)
        datas: list[bytes] = []
        dues: list[int] = []
        while self.due(now) and occupancy + pending < self.hwm:
            item = self.queue.popleft()
            frame = item.frame
            serial = frame.last_bit_cycle - frame.first_bit_cycle
            arrive = frame.last_bit_cycle + self.latency
            if item.held:  # it waited at the sender: it goes out now, at the link's rate
                arrive = max(arrive, now + serial + self.latency)
            arrive = max(arrive, self.line_free + serial)
            self.line_free = arrive
            datas.append(frame.data)
            dues.append(arrive - self._rx_cycles(len(frame.data)))
            elements = -(-len(frame.data) // self.element_bytes)
            self.in_flight.append((arrive, elements))
            pending += elements
            self.counters.frames_delivered += 1
            if self.records is not None:
                self.records.append(LinkRecord(len(frame.data), frame.first_bit_cycle,
                                               frame.last_bit_cycle, now, arrive))
        if datas:
            self.receiver.offer_frames(self.spec.dst.port, datas, dues)
        waiting = 0  # frames sent by now that flow control keeps at the sender
        waiting_bytes = 0
        for item in self.queue:
            if item.frame.last_bit_cycle > now:
                break
            waiting += 1
            waiting_bytes += len(item.frame.data)
            if not item.held:
                item.held = True
                self.counters.frames_held += 1
        if waiting:
            self.counters.xoff_steps += 1
        while waiting_bytes > self.spec.flow_control.queue_bytes:
            waiting -= 1  # the newest waiting frame: the sender had no room for it
            dropped = self.queue[waiting]
            del self.queue[waiting]
            waiting_bytes -= len(dropped.frame.data)
            self.counters.dropped_queue_full += 1
        self.counters.queue_high_water_bytes = max(self.counters.queue_high_water_bytes,
                                                   waiting_bytes)


def _then(advance: Callable[[int], Any], cycles: int,
          beside: Callable[[], Any] | None) -> None:
    advance(cycles)
    if beside is not None:
        beside()


class _Once:
    """``work`` done once, by the first thread that calls: each thread of a step calls it
    when its chip is done, so the work goes to whichever is free first."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self._work = work
        self._claim = threading.Lock()

    def __call__(self) -> None:
        if self._claim.acquire(blocking=False):  # never released: once only
            self._work()


class _Chain:
    """Pieces of work done in order, one at a time, each by whichever thread asks first
    (``help``) between its chip's steps: work beside the chips spread over every thread's
    gaps instead of one thread's while the others wait at the meeting."""

    def __init__(self, pieces: Sequence[Callable[[], Any]]) -> None:
        self._pieces = deque(pieces)
        self._turn = threading.Lock()

    def help(self) -> None:
        """The next piece, unless another thread is doing one (or none is left)."""
        if self._pieces and self._turn.acquire(blocking=False):
            try:
                if self._pieces:
                    self._pieces.popleft()()
            finally:
                self._turn.release()

    def finish(self) -> None:
        """Every piece left, in turn with the other threads (blocking between pieces)."""
        while self._pieces:
            with self._turn:
                if self._pieces:
                    self._pieces.popleft()()


def _runner(chip: Chip) -> Callable[[int], Any]:
    return lambda cycles: chip.run(cycles=cycles)


@dataclass
class PortCounters:
    frames_in: int = 0  # fed to the chip port (after the framer)
    frames_out: int = 0  # left the chip port and went through the framer


class System:
    """Several chips run together as one system (``SystemSpec``).

    Synchronisation is conservative.  Chips that receive from a link run in steps to a
    common horizon; after each step the frames that left a chip on a link are handed to
    the receiving chip with the time their last bit arrives there (last bit sent + the
    link's latency).  The step is the shortest link latency less the few cycles the
    receiving port takes to take a frame, so no chip ever runs past a frame it has not
    been given: the result is the same as one global event loop's.  A chip that receives
    no link runs ahead in chunks of ``NO_LINK_STEP_CYCLES``; its frames wait on the link
    and are judged at the first step after they were sent, as in lockstep.
    """

    def __init__(self, spec: SystemSpec, chips: Mapping[str, Chip],
                 runs: Mapping[str, LoadedRun] | None = None, record: bool = False,
                 threads: int = 1,
                 advance: Mapping[str, Callable[[int], Any]] | None = None) -> None:
        missing = [c.name for c in spec.chips if c.name not in chips]
        if missing:
            raise SystemConfigError(f"{spec.source}: no Chip given for {', '.join(missing)}")
        self.spec = spec
        self.chips = {c.name: chips[c.name] for c in spec.chips}
        self.runs = dict(runs or {})
        clocks = {chip.config.clock_hz for chip in self.chips.values()}
        if len(clocks) != 1:
            raise SystemConfigError(f"{spec.source}: the chips run at different clocks "
                              f"({sorted(clocks)}); one clock per system in this version")
        self.clock_hz = clocks.pop()
        for chip_spec in spec.chips:
            want = [(p.rate_bps, p.overhead_bytes) for p in spec.chip_ports(chip_spec.name)]
            have = [(p.rate_bps, p.overhead_bytes) for p in self.chips[chip_spec.name].config.ports]
            if want != have:
                raise SystemConfigError(f"{chip_spec.where}: the Chip given has other ports than "
                                  "the system gives it: build it from "
                                  f"spec.chip_config({chip_spec.name!r})")
        self.links = [_Link(link, self.chips[link.dst.chip], self.clock_hz, record)
                      for link in spec.links]
        self._link_collectors = []
        for link in self.links:
            collector = _Collector()
            self.chips[link.spec.src.chip].attach_sink(link.spec.src.port, collector)
            self._link_collectors.append(collector)
        self._out: list[tuple[ExternalPort, _Columns]] = []  # the framer's delay added
        self._sinks: dict[str, Sink] = {}
        self.port_counters = {p.name: PortCounters() for p in spec.ports}
        for port in spec.ports:
            if port.tx is not None:
                collector = _Columns(self._cycles(port.framer.tx_delay_ns))
                self.chips[port.tx.chip].attach_sink(port.tx.port, collector)
                self._out.append((port, collector))
        # chip ports whose transmit side leads nowhere: what is sent there is lost, counted
        self._nowhere = [(f"{name}:{port}", _Columns()) for name in self.chips
                         for port in spec.unconnected(name)]
        for key, collector in self._nowhere:
            name, _, port = key.partition(":")
            self.chips[name].attach_sink(int(port), collector)
        self.unconnected = {key: 0 for key, _ in self._nowhere}
        # each chip's column collectors, marked at the end of every step by run_steps
        self._columns_of: dict[str, list[_Columns]] = {name: [] for name in self.chips}
        for port, collector in self._out:
            assert port.tx is not None
            self._columns_of[port.tx.chip].append(collector)
        for key, collector in self._nowhere:
            self._columns_of[key.partition(":")[0]].append(collector)
        if threads < 1:
            raise SystemConfigError(f"threads must be >= 1, got {threads}")
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None  # started by the first parallel run
        self._make_tx_frame = _tx_frame_maker()  # as the chips make theirs (no per-field
        # object.__setattr__ of the frozen dataclass: a frame out costs ~1 us less)
        # how a chip's time moves on: chip.run, or e.g. a control plane's run that replays
        # the XScale model's work beside the chip (runtime.compiled_router)
        self._advance: dict[str, Callable[[int], Any]] = {
            name: (advance or {}).get(name) or _runner(chip) for name, chip in self.chips.items()}
        step = min((lk.latency - lk.fast_rx_max for lk in self.links), default=None)
        if step is not None and step < 1:
            raise SystemConfigError(f"{spec.source}: a link latency below "
                              f"{(self.links[0].fast_rx_max + 1) / self.clock_hz * 1e9:.1f} ns "
                              "leaves no lookahead")
        self.step = NO_LINK_STEP_CYCLES if step is None else step
        self.now = max(chip.now for chip in self.chips.values())
        receiving = {link.dst.chip for link in spec.links}
        self._free = {name for name in self.chips if name not in receiving}

    # ---- building
    @classmethod
    def from_manifests(cls, spec: SystemSpec, manifests: Mapping[str, Manifest | str | Path],
                       *, seed: int | None = None, record: bool = False,
                       threads: int = 1) -> System:
        """Each chip loaded from a run manifest (hand-written or linked), with the
        system's chip config, overrides and ports in place of the manifest's."""
        runs: dict[str, LoadedRun] = {}
        for chip in spec.chips:
            if chip.name not in manifests:
                raise SystemConfigError(f"{chip.where}: no manifest given for chip {chip.name!r}")
            given = manifests[chip.name]
            manifest = given if isinstance(given, Manifest) else parse_manifest(given)
            runs[chip.name] = build_from_manifest(spec.place_manifest(chip.name, manifest),
                                                  seed=seed)
        return cls(spec, {n: r.chip for n, r in runs.items()}, runs, record, threads)

    def _cycles(self, ns: float) -> int:
        return round(ns * 1e-9 * self.clock_hz)

    def framer_cycles(self, port: str) -> tuple[int, int]:
        """External port ``port``'s framer receive and transmit delays in whole ME cycles,
        as the runner applies them (the file's ns, rounded to the nearest cycle)."""
        framer = self.spec.external(port).framer
        return self._cycles(framer.rx_delay_ns), self._cycles(framer.tx_delay_ns)

    # ---- ports
    def attach_source(self, port: str, source: Source) -> None:
        ext = self.spec.external(port)
        if ext.rx is None:
            raise SystemConfigError(f"{ext.where}: external port {port!r} receives nothing")
        counted = any(callable(getattr(source, n, None)) for n in ("total", "count")) \
            and not hasattr(source, "path")  # a pcap would be read twice (Chip._count_hint)
        kind = _DelayedCounted if counted else _Delayed
        delayed = kind(source, self._cycles(ext.framer.rx_delay_ns), self.clock_hz)
        self.chips[ext.rx.chip].attach_source(ext.rx.port, delayed)

    def attach_sink(self, port: str, sink: Sink) -> None:
        ext = self.spec.external(port)
        if ext.tx is None:
            raise SystemConfigError(f"{ext.where}: external port {port!r} transmits nothing")
        self._sinks[port] = sink

    def close_sinks(self) -> None:
        for sink in self._sinks.values():
            sink.close()

    # ---- running
    def run(self, cycles: int, until: Callable[[System], bool] | None = None,
            beside: Callable[[], Any] | None = None) -> int:
        """Run every chip ``cycles`` more cycles (or until ``until(system)`` is true after
        a step); returns the cycles run.  ``beside``: work that touches no chip (e.g. the
        analysis of frames already out), done once during the first step: with threads by
        the first thread done with its chip (this one, or the pool's of the last chip), so
        it overlaps the other chips; first when serial."""
        start = self.now
        end = start + cycles
        pool = self._thread_pool() if self._parallel() else None
        collecting = gc.isenabled()
        gc.disable()  # once for all threads (Chip.run's own switch is not thread-aware)
        try:
            while self.now < end:
                horizon = min(self.now + self.step, end)
                jobs = []
                for name, chip in self.chips.items():
                    if name in self._free:  # nothing comes in: it may run ahead, in chunks
                        if horizon > chip.now:
                            ahead = min(chip.now + NO_LINK_STEP_CYCLES, end)
                            jobs.append((self._advance[name], max(horizon, ahead) - chip.now))
                    elif horizon > chip.now:
                        jobs.append((self._advance[name], horizon - chip.now))
                if pool is None or len(jobs) < 2:
                    if beside is not None:
                        beside()
                    for advance, run in jobs:
                        advance(run)
                else:
                    # the first chip on this thread, the others on the pool's: this thread
                    # works instead of waiting, one thread handoff per step less; beside
                    # by the first of this thread and the last pool chip's to be done
                    once = None if beside is None else _Once(beside)
                    futures = [pool.submit(advance, run) for advance, run in jobs[1:-1]]
                    futures.append(pool.submit(_then, jobs[-1][0], jobs[-1][1], once))
                    try:
                        jobs[0][0](jobs[0][1])
                        if once is not None:
                            once()
                    finally:
                        for future in futures:
                            future.result()
                beside = None
                self.now = horizon
                self._exchange()
                if until is not None and until(self):
                    break
        finally:
            if collecting:
                gc.enable()
        return self.now - start

    def run_steps(self, steps: Sequence[int],
                  before: Mapping[str, Callable[[int], Any]] | None = None,
                  after: Mapping[str, Callable[[], Any]] | None = None,
                  beside: Sequence[Callable[[], Any]] = ()) -> None:
        """Run consecutive steps of the lengths ``steps``: the same as ``run(step)`` for
        each, with each chip's ``before(cycle)`` (the cycle the step runs to: e.g. offering
        the frames due by then) before each step and ``after()`` (e.g. taking its
        exceptions) after it.  With threads (no link couples the chips) each chip runs all
        the steps on one host thread, ``before`` and ``after`` there too, and the threads
        meet once, at the end: one hand-off for all the steps instead of one a step, and
        no thread waits for the other between them.  Each chip sees the calls it sees
        serially, in the same order, and the frames out are handed on step by step after
        the meeting, as an exchange after each step would have (``_Columns.mark``), so the
        result is the serial one.  ``beside``: work that touches no chip, in pieces done in
        order, one at a time (first when serial); with threads each piece by the first
        thread between two of its chip's steps (``_Chain``), so it fills both threads' gaps.
        ``before`` and ``after`` of different chips, and ``beside``, may run at the same
        time: each must touch only its own things."""
        before, after = before or {}, after or {}
        if not steps:
            return
        if not self._parallel():
            for index, cycles in enumerate(steps):
                end = self.now + cycles
                for name in self.chips:  # in the chips' order, as the threads' do per chip
                    if name in before:
                        before[name](end)
                self.run(cycles, beside=(lambda: [piece() for piece in beside])
                         if index == 0 and beside else None)
                for name in self.chips:
                    if name in after:
                        after[name]()
            return
        pool = self._thread_pool()
        start, names = self.now, list(self.chips)
        chain = _Chain(beside)
        collecting = gc.isenabled()
        gc.disable()
        try:
            futures = [pool.submit(self._chip_steps, name, start, steps, before.get(name),
                                   after.get(name), chain) for name in names[1:]]
            try:
                self._chip_steps(names[0], start, steps, before.get(names[0]),
                                 after.get(names[0]), chain)
            finally:
                for future in futures:
                    future.result()
        finally:
            if collecting:
                gc.enable()
        self.now = start + sum(steps)
        self._exchange(len(steps))

    def _chip_steps(self, name: str, start: int, steps: Sequence[int],
                    before: Callable[[int], Any] | None, after: Callable[[], Any] | None,
                    beside: _Chain) -> None:
        """Chip ``name``'s part of ``run_steps``: each step in the calls ``run(step)``
        makes for it (no link: every chip is free to run ahead in its chunks)."""
        chip, advance, columns = self.chips[name], self._advance[name], self._columns_of[name]
        end = start
        for cycles in steps:
            now, end = end, end + cycles
            if before is not None:
                before(end)
            while now < end:
                horizon = min(now + self.step, end)
                if horizon > chip.now:
                    ahead = min(chip.now + NO_LINK_STEP_CYCLES, end)
                    advance(max(horizon, ahead) - chip.now)
                now = horizon
            if after is not None:
                after()
            for collector in columns:
                collector.mark()
            beside.help()
        beside.finish()

    def _thread_pool(self) -> ThreadPoolExecutor:
        """The system's host threads, started once and kept for every ``run`` (a pool per
        call started two threads per step; its threads end when the system is dropped)."""
        if self._pool is None:  # the calling thread runs a chip too
            self._pool = ThreadPoolExecutor(self.threads - 1)
        return self._pool

    def _parallel(self) -> bool:
        """Whether a step runs its chips on ``threads`` host threads: only when no link
        couples them (each chip's run is then independent of the others', so the result is
        the serial one, bit for bit; ``Chip.run`` releases the GIL inside the core)."""
        return self.threads > 1 and not self.links and len(self.chips) > 1

    def run_until_out(self, frames: int, max_cycles: int) -> int:
        """Run until ``frames`` frames have left the external ports (or ``max_cycles``)."""
        return self.run(max_cycles, lambda s: s.frames_out() >= frames)

    def frames_out(self) -> int:
        return sum(c.frames_out for c in self.port_counters.values())

    def _exchange(self, steps: int | None = None) -> None:
        """The frames out of the last step handed on; ``steps``: of the last ``steps``
        steps of ``run_steps`` (no links), step by step as after each."""
        if steps is None:
            nowhere = [[collector.take()] for _, collector in self._nowhere]
            out = [[collector.take()] for _, collector in self._out]
        else:
            nowhere = [collector.take_steps() for _, collector in self._nowhere]
            out = [collector.take_steps() for _, collector in self._out]
        for step in range(steps or 1):
            for (key, _), parts in zip(self._nowhere, nowhere, strict=True):
                self.unconnected[key] += len(parts[step][0])
            for (port, _), parts in zip(self._out, out, strict=True):
                self._hand_on(port, *parts[step])
        if steps is not None:
            return
        for link, collector in zip(self.links, self._link_collectors, strict=True):
            link.accept(collector.take())
            if link.due(self.now):  # read the receiver's RBUF only when it matters
                ports = link.receiver.counters()["ports"]
                link.release(self.now, int(ports[link.spec.dst.port]["rbuf_elements_in_use"]))

    def _hand_on(self, port: ExternalPort, firsts: np.ndarray, lasts: np.ndarray,
                 datas: PackedFrames) -> None:
        """External port ``port``'s frames out (the framer's delay added) to its sink."""
        self.port_counters[port.name].frames_out += len(firsts)
        sink = self._sinks.get(port.name)
        if sink is None:
            return
        index = self.spec.ports.index(port)
        if not len(firsts):
            return
        if hasattr(sink, "write_packed"):  # the lab's AnalysisSink: no Python per frame
            sink.write_packed(index, firsts, lasts, datas)
            return
        if hasattr(sink, "write_columns"):
            sink.write_columns(index, firsts.tolist(), lasts.tolist(), list(datas))
            return
        write, make, clock = sink.write, self._make_tx_frame, self.clock_hz
        for first, last, data in zip(firsts.tolist(), lasts.tolist(), datas, strict=True):
            write(make(index, first, last, data, round(last * 1e9 / clock)))

    # ---- counters
    def counters(self) -> dict[str, Any]:
        """Per chip its core counters, per link and per external port the system's."""
        for port in self.spec.ports:
            if port.rx is not None:
                fed = self.chips[port.rx.chip].frames_fed.get(port.rx.port, 0)
                self.port_counters[port.name].frames_in = fed
        return {
            "cycles": self.now,
            "time_us": self.now / self.clock_hz * 1e6,
            "chips": {name: chip.counters() for name, chip in self.chips.items()},
            "links": {lk.spec.name: dataclasses.asdict(lk.counters) for lk in self.links},
            "ports": {name: dataclasses.asdict(c) for name, c in self.port_counters.items()},
            # frames sent to a chip port whose transmit side leads nowhere ("chip:port")
            "unconnected": dict(self.unconnected),
        }

    def link_records(self, name: str) -> list[LinkRecord]:
        for link in self.links:
            if link.spec.name == name:
                if link.records is None:
                    raise SystemConfigError("link records are kept with System(..., record=True)")
                return list(link.records)
        raise SystemConfigError(f"{self.spec.source}: no link named {name!r}")

    def in_links(self) -> int:
        """Frames on the links' queues: sent, and not yet handed to the receiver."""
        return sum(len(link.queue) for link in self.links)
