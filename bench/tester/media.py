"""Port kinds, framings, packet sizes and exact wire times of the tester.

What "size" means (the numbers FACTS.md §2, §3 and §5 quote):

* **POS** (``framing="pos"``): sizes are **IP packet** bytes, as in the NPF report (40, 64, ...
  1518) and in the Internet mix (40/576/1500).  The frame the tester hands to a port is the
  PPP header of RFC 1662 HDLC-like framing -- address 0xff, control 0x03, protocol 0x0021
  (IPv4) or 0x0057 (IPv6), 4 bytes -- followed by the IP packet.  The flag (1) and FCS-32 (4)
  are the line's per-frame overhead, so one packet of *n* IP bytes occupies ``n + 9`` bytes of
  the STS-192c payload (9.58464 Gb/s): 40-byte packets -> 24.451 Mpps, as FACTS.md §2 says.
* **Ethernet** (``framing="ethernet"``): sizes are **frame** bytes from the destination MAC
  through the 4-byte FCS, as in RFC 2544 (64 ... 1518).  The frame bytes the tester hands to
  a port *include* the FCS (a real CRC-32), as the simulator's own generator does, because the
  simulated port adds only preamble + SFD + inter-frame gap (20 bytes) to ``len(frame)``:
  64-byte frames -> 14,880,952 fps on 10GbE.  An IP size given on Ethernet (the Internet mix)
  becomes a frame of ``14 + n + 4`` bytes, padded to the 64-byte minimum after the IP packet.

A frame's slot on the wire is ``(len(frame) + overhead) * 8 / rate`` seconds; the tester keeps
these times exactly (``fractions.Fraction`` picoseconds) and rounds only when it records a
time (up, to a whole picosecond).

The simulated chip's ``oc192pos`` port (sim/config.py) adds the same 5 bytes to each frame;
``PortModel.chip_port()`` gives the matching chip port.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from npkit.sim.config import Port

Framing = Literal["ethernet", "pos"]
SizeUnit = Literal["ip", "frame"]

PS_PER_S = 10**12
ETH_HEADER = 14
ETH_FCS = 4
ETH_MIN_FRAME = 64
ETH_MAX_FRAME = 9216  # jumbo frames, with FCS
POS_HEADER = 4  # address, control, protocol (RFC 1662)
POS_MAX_IP = 9180 - 4  # a generous bound (RFC 1662's default MRU is 1500)
ETHERTYPE = {4: 0x0800, 6: 0x86DD}
PPP_PROTOCOL = {4: 0x0021, 6: 0x0057}
PPP_ADDRESS, PPP_CONTROL = 0xFF, 0x03


@dataclass(frozen=True)
class PortModel:
    """A tester port: its line rate, its framing, and the bytes the line adds to every frame
    the tester hands over (the frame bytes themselves are ``len(frame)``)."""

    kind: str
    framing: Framing
    rate_bps: Fraction
    overhead_bytes: int
    # frame length -> wire time, filled as asked (a trial asks for a few lengths per frame)
    _wire: dict[int, Fraction] = field(default_factory=dict, init=False, repr=False,
                                       compare=False, hash=False)

    def wire_ps(self, frame_bytes: int) -> Fraction:
        """Exact picoseconds one frame of ``frame_bytes`` occupies on the line."""
        wire = self._wire.get(frame_bytes)
        if wire is None:
            wire = Fraction((frame_bytes + self.overhead_bytes) * 8 * PS_PER_S) / self.rate_bps
            self._wire[frame_bytes] = wire
        return wire

    def line_rate_fps(self, frame_bytes: int) -> Fraction:
        """Frames per second back to back at line rate."""
        return PS_PER_S / self.wire_ps(frame_bytes)

    def chip_port(self) -> Port:
        """The simulated chip's port with the same rate and per-frame overhead."""
        if self.kind in ("10gbe", "1gbe", "oc192pos"):
            return Port.from_kind(self.kind)
        return Port.custom(float(self.rate_bps), self.overhead_bytes)


# FACTS.md §2: 10GbE / 1GbE add preamble + SFD 8 and gap 12; OC-192 POS carries 9.58464 Gb/s
# of STS-192c payload, and the frames carry the PPP header, so the line adds flag + FCS-32.
PORT_MODELS: dict[str, PortModel] = {
    "10gbe": PortModel("10gbe", "ethernet", Fraction(10**10), 20),
    "1gbe": PortModel("1gbe", "ethernet", Fraction(10**9), 20),
    "oc192pos": PortModel("oc192pos", "pos", Fraction(9_584_640_000), 5),
}


def port_model(kind: str | PortModel) -> PortModel:
    if isinstance(kind, PortModel):
        return kind
    model = PORT_MODELS.get(kind.lower())
    if model is None:
        raise ValueError(f"unknown port kind {kind!r}: use one of {', '.join(PORT_MODELS)} "
                         "or a PortModel")
    return model


# --------------------------------------------------------------------------- sizes
# Standard size lists (FACTS.md §3, §5): the report's POS sizes are IP bytes, RFC 2544's
# Ethernet sizes are frame bytes with FCS.  IPv6 lists start at the smallest packet that
# carries IPv6 + the tester's signature (see ``smallest_ip``).
POS_IPV4_SIZES: tuple[int, ...] = (40, 64, 128, 256, 512, 1024, 1280, 1518)
ETHERNET_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 1280, 1518)
IMIX_SIZES: tuple[int, ...] = (40, 576, 1500)  # IP bytes
IMIX_WEIGHTS: tuple[int, ...] = (7, 4, 1)


def ip_bytes(size: int, unit: SizeUnit, framing: Framing) -> int:
    """The IP packet length of a packet of ``size`` in ``unit`` on ``framing``."""
    if unit == "ip":
        return size
    if framing == "pos":
        return size - POS_HEADER
    return size - ETH_HEADER - ETH_FCS


def frame_bytes(ip_len: int, framing: Framing) -> int:
    """Bytes of the frame carrying an IP packet of ``ip_len`` (Ethernet: with FCS, padded)."""
    if framing == "pos":
        return POS_HEADER + ip_len
    return max(ETH_MIN_FRAME, ETH_HEADER + ip_len + ETH_FCS)
