"""Per-packet traces of a linked program: its verdict trace points and its drop counters.

``npkit.sim.packet_trace`` follows frames through the chip; this module adds what only the
program knows (docs/debugging.md, "Per-packet traces"):

* **verdict trace points**: the compiled body sets a verdict by writing metadata word
  ``META_VERDICT`` (and the reason or code into ``META_CODE``) in local memory, one
  ``alu[*l$index1[8], --, B, kind]`` per verdict statement, whose debug line is the MBL
  line of the ``forward``/``drop``/``exception`` statement.  Those instructions become
  trace points, so every followed frame's verdict names its MBL line;
* **drop reasons from the counters**: the dispatch counts a drop by a scratch increment of
  the reason's counter (``drop_counter_base + 4 * reason``) and the receive stage its own
  (``rx_no_buffer``, ``rx_too_long``); a followed frame's command to one of those words is
  its drop reason, the same counter the tester reads.
"""

from __future__ import annotations

import ipaddress
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npkit.compiler.mbl.types import META_CODE, META_VERDICT
from npkit.compiler.uc.image import Image
from npkit.compiler.uc.operands import render_code
from npkit.link.program import ProgramInfo
from npkit.sim import isa
from npkit.sim.chip import Chip
from npkit.sim.packet_trace import FrameLog, Journey, Selection, TracePointInfo, journeys

VERDICT_NAMES = {0: "no verdict", 1: "forward", 2: "drop", 3: "exception", 4: "next",
                 5: "consumed"}
_NUMBER = re.compile(r"^(0x[0-9a-fA-F]+|\d+)$")


def _constant(ins: isa.Instruction, fields: dict[str, int]) -> int | None:
    """The value an ``alu[x, --, B, const]`` or plain ``immed[x, const]`` writes, if constant."""
    if ins.name == "immed" and not fields.get("shift") and not fields.get("invert"):
        return int(fields["value"])
    if ins.name == "alu" and render_code(fields["a"]) == "--":
        text = render_code(fields["b"])
        if _NUMBER.match(text):
            return int(text, 0)
    return None


def verdict_points(image: Image, reasons: dict[int, str] | None = None,
                   ) -> dict[int, TracePointInfo]:
    """pc -> what it sets, for each instruction of ``image`` that writes ``META_VERDICT``
    ("verdict", kind) or ``META_CODE`` ("reason", code) in local memory."""
    reasons = reasons or {}
    verdict_dest, code_dest = f"*l$index1[{META_VERDICT}]", f"*l$index1[{META_CODE}]"
    out: dict[int, TracePointInfo] = {}
    for pc, word in enumerate(image.words):
        try:
            ins, fields = isa.decode(word)
        except ValueError:
            continue
        if "dest" not in fields or ins.name not in ("alu", "immed"):
            continue
        try:
            dest = render_code(fields["dest"])
        except ValueError:
            continue
        if dest not in (verdict_dest, code_dest):
            continue
        value = _constant(ins, fields)
        if dest == verdict_dest:
            name = VERDICT_NAMES.get(value, f"verdict {value}") if value is not None \
                else "verdict (computed)"
            out[pc] = TracePointInfo("verdict", value, name)
        else:
            label = reasons.get(value, f"code {value}") if value is not None else "computed"
            out[pc] = TracePointInfo("reason", value, label)
    return out


@dataclass
class ProgramTrace:
    """The frame log of a chip running a linked program, with the program's meaning."""

    chip: Chip
    program: ProgramInfo
    log: FrameLog
    points: dict[tuple[int, int], TracePointInfo]
    counters: dict[int, str]      # scratch byte address -> drop counter name

    def journeys(self) -> dict[int, Journey]:
        frames = journeys(self.log.events(), self.log.status()["units"], self.points)
        for j in frames.values():
            j.drop_reason = self.drop_reason(j)
        return frames

    def drop_reason(self, journey: Journey) -> str | None:
        """The counter a followed frame's context incremented (its drop reason), if any."""
        if journey.rbuf_drop:
            return "rbuf_full"
        for hop in journey.hops:
            if hop.kind == "command" and hop.unit == "scratch" and hop.a in self.counters \
                    and hop.op in ("scratch[incr]", "scratch[add]", "scratch[test_and_incr]",
                                   "scratch[test_and_add]"):
                return self.counters[hop.a]
        return None

    def source_of(self, me: int, pc: int) -> str | None:
        image = self.chip.image_on(me)
        source = getattr(image, "source_of", None)
        return source(pc) if callable(source) else None

    def block_of(self, me: int, pc: int) -> str | None:
        """The MBL block (or function, inlined there) whose text holds the instruction's
        line; None for microcode (.uc) lines."""
        return block_of_source(self.source_of(me, pc), self._texts)

    def __post_init__(self) -> None:
        self._texts: dict[str, list[str] | None] = {}


_BLOCK = re.compile(r"^\s*(?:block|fn)\s+([A-Za-z_]\w*)")


def block_of_source(source: str | None, texts: dict[str, list[str] | None]) -> str | None:
    """``file.mbl:line:col`` -> the name of the ``block``/``fn`` declared last at or above
    the line (MBL declares both at the top level), read from the file (cached in texts)."""
    if source is None:
        return None
    m = re.match(r"^(.+\.mbl):(\d+):\d+$", source)
    if not m:
        return None
    path, line = m[1], int(m[2])
    if path not in texts:
        try:
            texts[path] = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError:
            texts[path] = None
    lines = texts[path]
    if lines is None:
        return None
    for k in range(min(line, len(lines)) - 1, -1, -1):
        found = _BLOCK.match(lines[k])
        if found:
            return found[1]
    return None


def drop_counters(program: ProgramInfo) -> dict[int, str]:
    """Scratch byte address -> the drop counter's name (reasons, then the receive stage's
    per-port counters, named like ``CompiledRun.receive_drops`` without the port)."""
    out = {program.drop_counter_base + 4 * i: name for i, name in program.drop_reasons.items()}
    layout = program.layout()
    for name, base in (("rx_no_buffer", layout.cnt_rx_no_buffer),
                       ("rx_too_long", layout.cnt_rx_too_long)):
        if base:
            for p in range(program.ports):
                out.setdefault(base + 4 * p, name)
    return out


def trace_program(chip: Chip, program: ProgramInfo, selection: Selection | None,
                  bucket_shift: int = 10) -> ProgramTrace:
    """Attach a frame log to ``chip`` (which runs ``program``) and make the verdict
    instructions of every loaded image trace points."""
    log = chip.enable_frame_log(selection, bucket_shift)
    points: dict[tuple[int, int], TracePointInfo] = {}
    for me in range(chip.config.me_count):
        image = chip.image_on(me)
        if not isinstance(image, Image):
            continue
        found = verdict_points(image, program.drop_reasons)
        if found:
            log.set_trace_points(me, found)
            points.update({(me, pc): info for pc, info in found.items()})
    return ProgramTrace(chip, program, log, points, drop_counters(program))


def keep_filter(*, verdict: str | None = None, flow: Callable[[Journey], bool] | None = None,
                ) -> Callable[[Journey], bool] | None:
    """A frame filter for ``TraceOptions.keep``: by outcome word (``drop``, ``forward``,
    ``exception``, a drop reason) and/or a flow predicate."""
    if verdict is None and flow is None:
        return None

    def keep(j: Journey) -> bool:
        if flow is not None and not flow(j):
            return False
        if verdict is None:
            return True
        words = {j.outcome}
        if j.verdict is not None:
            words.add(j.verdict.label)
        if j.drop_reason:
            words |= {"drop", j.drop_reason}
        if j.departed is not None:
            words.add("forward")
        return verdict in words or any(w.startswith(verdict) for w in words)

    return keep


def describe(frames: dict[int, Journey]) -> dict[str, Any]:
    """Counts by outcome (for reports and the CLI)."""
    counts: dict[str, int] = {}
    for j in frames.values():
        counts[j.outcome] = counts.get(j.outcome, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


# --------------------------------------------------------------------------- flows
_PROTOCOLS = {"icmp": 1, "tcp": 6, "udp": 17, "icmpv6": 58}


def five_tuple(frame: bytes) -> tuple[str, str, int, int | None, int | None] | None:
    """(src, dst, protocol, source port, destination port) of an IPv4/IPv6 packet in an
    Ethernet (with VLAN tags), PPP-in-HDLC (POS) or bare IP frame; None for anything else.
    Ports only for TCP and UDP."""
    at, version = _ip_start(frame)
    if at is None:
        return None
    if version == 4 and len(frame) >= at + 20:
        ihl = (frame[at] & 0x0F) * 4
        proto = frame[at + 9]
        src = str(ipaddress.IPv4Address(frame[at + 12:at + 16]))
        dst = str(ipaddress.IPv4Address(frame[at + 16:at + 20]))
        l4 = at + ihl
    elif version == 6 and len(frame) >= at + 40:
        proto = frame[at + 6]
        src = str(ipaddress.IPv6Address(frame[at + 8:at + 24]))
        dst = str(ipaddress.IPv6Address(frame[at + 24:at + 40]))
        l4 = at + 40
    else:
        return None
    if proto in (6, 17) and len(frame) >= l4 + 4:
        sport, dport = struct.unpack_from("!HH", frame, l4)
        return src, dst, proto, sport, dport
    return src, dst, proto, None, None


def _ip_start(frame: bytes) -> tuple[int | None, int]:
    if len(frame) >= 4 and frame[0] == 0xFF and frame[1] == 0x03:       # PPP in HDLC (POS)
        proto = struct.unpack_from("!H", frame, 2)[0]
        return (4, 4) if proto == 0x0021 else ((4, 6) if proto == 0x0057 else (None, 0))
    if len(frame) >= 14:                                                # Ethernet
        at, ethertype = 12, struct.unpack_from("!H", frame, 12)[0]
        while ethertype in (0x8100, 0x88A8) and len(frame) >= at + 6:
            at += 4
            ethertype = struct.unpack_from("!H", frame, at)[0]
        if ethertype == 0x0800:
            return at + 2, 4
        if ethertype == 0x86DD:
            return at + 2, 6
    if frame and frame[0] >> 4 in (4, 6):                               # bare IP
        return 0, frame[0] >> 4
    return None, 0


@dataclass(frozen=True)
class FlowSpec:
    """A flow filter, e.g. ``src=10.0.0.0/8,dst=192.0.2.1,proto=udp,sport=53,dport=53``;
    a missing key matches anything."""

    src: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    dst: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    proto: int | None = None
    sport: int | None = None
    dport: int | None = None

    @classmethod
    def parse(cls, text: str) -> FlowSpec:
        values: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            try:
                if not sep:
                    raise ValueError("expected key=value")
                if key in ("src", "dst"):
                    values[key] = ipaddress.ip_network(value, strict=False)
                elif key == "proto":
                    values[key] = _PROTOCOLS.get(value.lower()) or int(value, 0)
                elif key in ("sport", "dport"):
                    values[key] = int(value, 0)
                else:
                    raise ValueError("keys are src, dst, proto, sport, dport")
            except ValueError as err:
                raise ValueError(f"flow {text!r}: {part!r}: {err}") from None
        return cls(**values)

    def matches(self, frame: bytes) -> bool:
        t = five_tuple(frame)
        if t is None:
            return False
        src, dst, proto, sport, dport = t
        return ((self.src is None or ipaddress.ip_address(src) in self.src)
                and (self.dst is None or ipaddress.ip_address(dst) in self.dst)
                and (self.proto is None or proto == self.proto)
                and (self.sport is None or sport == self.sport)
                and (self.dport is None or dport == self.dport))


class FlowTap:
    """A packet source that notes which of its frames (by the port's sequence number, as
    the frame log counts them) belong to a flow, passing every frame on."""

    def __init__(self, source: Any, flow: FlowSpec) -> None:
        self.source, self.flow = source, flow
        self.matched: set[int] = set()

    def frames(self) -> Iterator[Any]:
        for seq, frame in enumerate(self.source.frames()):
            if self.flow.matches(frame.data):
                self.matched.add(seq)
            yield frame

    def __getattr__(self, name: str) -> Any:   # count(), path ... of the wrapped source
        return getattr(self.source, name)


def flow_keep(taps: dict[int, FlowTap]) -> Callable[[Journey], bool]:
    """Journeys of the frames the taps matched (by input port and port sequence)."""
    return lambda j: j.port in taps and j.seq in taps[j.port].matched
