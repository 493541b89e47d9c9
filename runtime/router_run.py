"""A router run with its control plane (``npkit router run``): the timed route-change
file, the demo traffic and the loop that runs until the traffic has left (router4 and, via
runtime/router_targets.py, the compiled MBL router on the chip).

The update file has one change a line (``#`` comments):

    TIME_US add PREFIX via GATEWAY        (the gateway must be a configured neighbour)
    TIME_US delete PREFIX

Times are finite, in order and at most MAX_UPDATE_US.  The run goes on until every change
was applied (they queue on the XScale: 200 changes 1 µs apart take about a millisecond);
`unapplied` says which a run cut short by --cycles left out.  Configs are loaded with
`load_config`, checked against what router4 can hold (ROUTER4): `npkit router check` and
`npkit router run --program router4` use the same check (router_targets.load_config is the
MBL router's).
"""

from __future__ import annotations

import ipaddress
import math
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npkit.base.checksum import internet_checksum, with_ipv4_checksum
from npkit.base.errors import NpkitError
from npkit.microblocks.uc import router4
from npkit.runtime.router_config import ConfigTarget, RouterConfig

# router4's memories (microblocks/uc/router4.h): IPv4 only, no local6 / fib6
ROUTER4 = ConfigTarget(name="router4", ports=router4.LAYOUT.ports,
                       nexthops=router4.LAYOUT.nh_size, local4_slots=router4.LAYOUT.local4_size,
                       local6_slots=0)
MAX_UPDATE_US = 1_000_000.0  # 1 s of simulated time: about 1.4e9 cycles, hours to simulate
SETTLE_CYCLES = 400_000  # after the last frame: exceptions polled, replies sent
STEP_CYCLES = 200_000


class RouterRunError(NpkitError):
    """A router config the router program cannot take, or a run that cannot go on."""


class UpdateFileError(RouterRunError):
    """A route-change file, or a change in it the control plane refuses."""


def load_config(path: Path) -> RouterConfig:
    """A router config checked against router4 (errors at file:line)."""
    return RouterConfig.load(path, ROUTER4)


def configure(chip_router: Any, config: Any, path: Path) -> None:
    """Apply a loaded router config (RouterConfig) to the router; the control plane's
    refusals (a next hop or port the program does not have, ...) name the config file."""
    try:
        chip_router.configure(config)
    except ValueError as exc:  # the control plane reports a config it cannot apply so
        message = str(exc)
        raise RouterRunError(message if message.startswith(f"{path}:")
                             else f"{path}: {message}") from None


@dataclass(frozen=True)
class TimedChange:
    line: int
    time_us: float
    op: str
    prefix: str
    gateway: str | None
    path: Path | None = None        # the update file, for errors at file:line


def parse_updates(path: Path) -> list[TimedChange]:
    """The update file; errors name the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UpdateFileError(f"cannot read {path}: {exc}") from None
    changes: list[TimedChange] = []
    for number, text in enumerate(lines, 1):
        words = text.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        try:
            time_us = float(words[0]) if len(words[0]) <= 40 else math.nan
        except ValueError:
            time_us = math.nan
        if not math.isfinite(time_us):
            raise UpdateFileError(f"{where}: {words[0][:40]!r} is not a time in µs "
                                  "(lines are: TIME_US add PREFIX via GATEWAY | "
                                  "TIME_US delete PREFIX)")
        if not 0 <= time_us <= MAX_UPDATE_US:
            raise UpdateFileError(f"{where}: time {time_us:g} µs is outside 0..{MAX_UPDATE_US:,.0f}"
                                  " µs (1 s of simulated time)")
        if changes and time_us < changes[-1].time_us:
            raise UpdateFileError(f"{where}: times must be in order ({time_us:g} µs comes "
                                  f"after {changes[-1].time_us:g} µs at line "
                                  f"{changes[-1].line})")
        if len(words) == 5 and words[1] == "add" and words[3] == "via":
            change = TimedChange(number, time_us, "add", words[2], words[4], path)
        elif len(words) == 3 and words[1] == "delete":
            change = TimedChange(number, time_us, "delete", words[2], None, path)
        else:
            raise UpdateFileError(f"{where}: expected 'TIME_US add PREFIX via GATEWAY' "
                                  f"or 'TIME_US delete PREFIX', got {text.strip()!r}")
        try:
            ipaddress.ip_network(change.prefix, strict=True)
            if change.gateway is not None:
                ipaddress.ip_address(change.gateway)
        except ValueError as exc:
            raise UpdateFileError(f"{where}: {exc}") from None
        changes.append(change)
    return changes


def change_function(change: TimedChange) -> Callable[[Any], None]:
    """The control-plane call that applies ``change`` (for ChipRouter.at)."""
    def apply(control: Any) -> None:
        try:
            if change.op == "delete":
                control.delete_route(change.prefix)
                return
            ports = control.ports.connected(change.gateway)
            if not ports:
                raise ValueError(f"gateway {change.gateway} is on none of the ports' subnets")
            control.add_route(change.prefix,
                              control.neighbours.next_hop_for(ports[0], change.gateway))
        except ValueError as exc:
            where = (f"{change.path}:{change.line}" if change.path is not None
                     else f"update line {change.line}")
            raise UpdateFileError(f"{where}: {exc} (the control plane refused this change "
                                  f"at {change.time_us:g} µs)") from None
    return apply


def _ipv4_frame(src_mac: bytes, dst_mac: bytes, src: int, dst: int, ttl: int, ident: int,
                payload: bytes, protocol: int = 17) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0, ttl,
                         protocol, 0, src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    frame = dst_mac + src_mac + b"\x08\x00" + with_ipv4_checksum(header) + payload
    return frame + bytes(max(0, 60 - len(frame)))


def demo_traffic(router: Any, config: Any, count: int, seed: int = 1) -> dict[int, list[bytes]]:
    """Frames for each port, from a configured IPv4 neighbour on it (so ICMP finds its way
    back): UDP to routed destinations, every 50th with TTL 1, and every 50th (offset) an
    ICMP echo request to the router's address on that port."""
    rng = random.Random(seed)
    frames: dict[int, list[bytes]] = {}
    for port in router.control.ports:
        mac = port.mac.to_bytes(6, "big")
        own = int(port.ipv4[0].ip) if port.ipv4 else None
        peers = [n for n in config.neighbours if n.port == port.port and n.ip.version == 4]
        source = int(peers[0].ip) if peers else 0xC6120001
        peer = (peers[0].mac if peers else 0x020000EE0000 | port.port).to_bytes(6, "big")
        out = []
        for i in range(count):
            if own is not None and i % 50 == 25:
                echo = struct.pack("!BBHHH", 8, 0, 0, i, 1) + b"npkit ping"
                echo = echo[:2] + struct.pack("!H", internet_checksum(echo)) + echo[4:]
                out.append(_ipv4_frame(peer, mac, source, own, 64, i, echo, protocol=1))
                continue
            dst = rng.choice((0x0A000000, 0x14000000, 0x2D000000)) | rng.getrandbits(24)
            ttl = 1 if i % 50 == 0 else 64
            out.append(_ipv4_frame(peer, mac, source, dst, ttl, i,
                                   struct.pack("!HHHH", 1024 + i, 9, 26, 0) + bytes(18)))
        frames[port.port] = out
    return frames


def _idle(chip: Any) -> bool:
    """Every frame handed to a port's wire has arrived (received whole or dropped at its
    first mpacket), the RBUF is empty and no TBUF element waits: a frame still on the wire
    (a 9 KB frame is 7 us at 10 Gb/s, and back-to-back ones queue there) keeps it busy."""
    ports = chip.counters()["ports"]
    fed = chip.frames_fed
    return all(int(p.get("tbuf_elements_queued", 0)) == 0
               and int(p.get("rbuf_elements_in_use", 0)) == 0
               and int(p.get("rx_frames", 0)) + int(p.get("rx_dropped_rbuf_full", 0))
               >= fed.get(i, 0)
               for i, p in enumerate(ports))


def run_until_drained(chip_router: Any, frames_in: int, last_change_cycle: int,
                      changes: int = 0) -> None:
    """Run until every offered frame was fed, the rings are empty, the transmit queues idle,
    the last route change is past and all `changes` scheduled were applied (they queue on
    the XScale); then SETTLE_CYCLES more for the exception path."""
    chip = chip_router.chip
    while True:
        chip_router.run(STEP_CYCLES)
        fed = chip.frames_fed
        drained = all(chip.ring_state(r)["count"] == 0 for r in range(8)
                      if chip.ring_state(r)["configured"])
        if chip.now > last_change_cycle and drained and (
                not frames_in or sum(fed.values()) >= frames_in) and _idle(chip) and \
                len(chip_router.records) >= changes:
            break
    chip_router.run(SETTLE_CYCLES)


def unapplied(chip_router: Any, changes: list[TimedChange]) -> str | None:
    """None when every change was applied, else what a user is told about the rest."""
    done = len(chip_router.records)
    if done >= len(changes):
        return None
    first = changes[done]
    return (f"{len(changes) - done} of {len(changes)} route changes were not applied: the "
            f"run stopped at {chip_router.chip.now:,} cycles, before the change of line "
            f"{first.line} ({first.time_us:g} µs) was done; give more --cycles")
