"""tshark as an independent dissector for the frames the control plane generates (both the
ICMP builder tests and the exception-path tests use it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from scapy.utils import wrpcap

TSHARK = shutil.which("tshark")
FIELDS = ("frame.number", "_ws.expert.severity", "_ws.expert.message", "_ws.malformed",
          "ip.checksum.status", "icmp.checksum.status", "icmpv6.checksum.status")
WARNING = 0x600000            # expert severities: chat 0x200000, note 0x400000, warn, error


def dissect(frames: list, tmp_path: Path, name: str = "frames.pcap") -> list[dict[str, list[str]]]:
    """tshark's fields for each frame (scapy packets or raw Ethernet bytes), IPv4 header
    checksum checks on; every field a list of its occurrences."""
    assert TSHARK is not None, "tshark is not installed (apt-get install tshark)"
    pcap = tmp_path / name
    wrpcap(str(pcap), frames)
    command = [TSHARK, "-n", "-r", str(pcap), "-o", "ip.check_checksum:TRUE", "-T", "fields",
               "-E", "occurrence=a", "-E", "aggregator=|"]
    for field in FIELDS:
        command += ["-e", field]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    rows = [{field: [v for v in cell.split("|") if v]
             for field, cell in zip(FIELDS, line.split("\t"), strict=False)}
            for line in out.splitlines()]
    assert len(rows) == len(frames)
    return rows


def assert_well_formed(row: dict[str, list[str]], quoted_fault: str | None = None) -> str:
    """No malformed packet and no expert warning or error (except `quoted_fault`, raised by
    a faulty packet quoted inside a Parameter Problem).  Returns a label for messages."""
    where = f"frame {row.get('frame.number')}: {row.get('_ws.expert.message')}"
    assert not row.get("_ws.malformed"), where
    for severity, message in zip(row.get("_ws.expert.severity", []),
                                 row.get("_ws.expert.message", []), strict=True):
        assert int(severity) < WARNING or (quoted_fault and quoted_fault in message), where
    return where


def checksum_statuses(row: dict[str, list[str]]) -> list[str]:
    """IPv4 / ICMP / ICMPv6 checksum statuses: 0 bad, 1 good, 2 unverified."""
    return (row.get("ip.checksum.status", []) + row.get("icmp.checksum.status", [])
            + row.get("icmpv6.checksum.status", []))
