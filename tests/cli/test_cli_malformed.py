"""Malformed inputs through the real `npkit` process and through the Python API (audit of
issue 2): each is a clear error naming the problem, exit code 1, never a traceback, and the
process never crashes.  Inputs are built here by hand (scapy pcaps cut short, images edited
with a re-computed checksum so the loader's deeper checks are reached)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from npkit.compiler.uc import Image, ImageError, assemble_text
from npkit.sim import Chip, LoadError, PacketFileError, PcapSource, SimFault

ILLEGAL_WORD = "0xf800000000"  # opcode 31: no row of the ISA table


def npkit(*args: str, cwd: Path) -> tuple[int, str]:
    result = subprocess.run([sys.executable, "-m", "npkit", *args], cwd=cwd,
                            capture_output=True, text=True, timeout=120)
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out
    assert result.returncode >= 0, f"killed by signal {-result.returncode}"
    return result.returncode, out


def good_pcap(path: Path, count: int = 6) -> bytes:
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw
    from scapy.utils import wrpcap

    wrpcap(str(path), [Ether() / Raw(bytes(50 + i)) for i in range(count)])
    return path.read_bytes()


def with_checksum(body: dict) -> dict:
    """Re-seal an edited image the way compiler/uc/image.py documents it."""
    rest = {k: v for k, v in body.items() if k != "checksum"}
    canonical = json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()
    return {**rest, "checksum": "sha256:" + hashlib.sha256(canonical).hexdigest()}


def assembled(tmp_path: Path, source: str, name: str = "prog") -> Path:
    (tmp_path / f"{name}.uc").write_text(source)
    code, out = npkit("asm", f"{name}.uc", "-o", f"{name}.img", cwd=tmp_path)
    assert code == 0, out
    return tmp_path / f"{name}.img"


SPIN = ".me 0\nloop#:\n    alu[a0, a0, +, 1]\n    br[loop#]\n"


# --------------------------------------------------------------------------- pcaps
@pytest.mark.parametrize(("cut", "message"), [
    (lambda d: d[:-3], "record 6: truncated packet data"),
    (lambda d: d[:10], "truncated pcap file header (10 of 24 bytes)"),
    (lambda d: b"not a capture at all" * 3, "not a pcap or pcapng file"),
])
def test_malformed_pcap_on_the_command_line(tmp_path: Path, cut, message: str) -> None:
    data = good_pcap(tmp_path / "in.pcap")
    (tmp_path / "in.pcap").write_bytes(cut(data))
    img = assembled(tmp_path, SPIN)
    code, out = npkit("run", str(img), "--in", "0=in.pcap", "--cycles", "1000", cwd=tmp_path)
    assert code == 1 and "in.pcap" in out and message in out, out


def test_truncated_pcap_through_the_python_api(tmp_path: Path) -> None:
    data = good_pcap(tmp_path / "in.pcap")
    (tmp_path / "in.pcap").write_bytes(data[:-3])
    chip = Chip()
    with pytest.raises(PacketFileError, match="truncated packet data"):
        chip.attach_source(0, PcapSource(tmp_path / "in.pcap"))
        chip.run(cycles=10_000)


# --------------------------------------------------------------------------- images
def edited_image(tmp_path: Path, edit, reseal: bool) -> Path:
    body = json.loads(assembled(tmp_path, SPIN).read_text())
    edit(body)
    path = tmp_path / "edited.img"
    path.write_text(json.dumps(with_checksum(body) if reseal else body))
    return path


def set_word(body: dict, word: str) -> None:
    body["words"][0] = word


@pytest.mark.parametrize(("edit", "reseal", "message"), [
    (lambda b: set_word(b, ILLEGAL_WORD), False, "checksum mismatch"),
    (lambda b: set_word(b, ILLEGAL_WORD), True, "illegal instruction word at address 0"),
    (lambda b: set_word(b, "0x" + "f" * 11), True, "not a hex string"),
    (lambda b: b.update(ctx_mode=3), True, "ctx_mode 3 is not 4 or 8"),
    (lambda b: b.update(mes=[16]), True, "ME list [16]"),
    (lambda b: b.update(lines=[]), True, "0 source lines for 2 words"),
    (lambda b: b.pop("mes"), True, "corrupt image: missing key 'mes'"),
])
def test_corrupt_image_in_disasm_and_run(tmp_path: Path, edit, reseal: bool,
                                         message: str) -> None:
    path = edited_image(tmp_path, edit, reseal)
    for command in (["disasm", path.name], ["run", path.name, "--cycles", "100"]):
        code, out = npkit(*command, cwd=tmp_path)
        assert code == 1 and message in out, (command, out)


def test_binary_garbage_image(tmp_path: Path) -> None:
    (tmp_path / "junk.img").write_bytes(bytes(range(256)))
    code, out = npkit("run", "junk.img", cwd=tmp_path)
    assert code == 1 and "junk.img: cannot read image" in out, out


def test_illegal_instruction_word_through_the_python_api(tmp_path: Path) -> None:
    path = edited_image(tmp_path, lambda b: set_word(b, ILLEGAL_WORD), True)
    with pytest.raises(ImageError, match="illegal opcode 31"):
        Chip().load(Image.load(path))


def test_control_store_overflow_on_the_smaller_chip(tmp_path: Path) -> None:
    body = ".me 0\n" + "    nop\n" * 4100 + "    ctx_arb[kill]\n"
    img = assembled(tmp_path, body)
    code, out = npkit("run", img.name, "--chip", "ixp2400", "--cycles", "100", cwd=tmp_path)
    assert code == 1 and "do not fit the 4096-word control store of ixp2400" in out, out
    with pytest.raises(LoadError, match="control store"):
        Chip("ixp2400").load(Image.load(img))


# --------------------------------------------------------------------------- run-time faults
@pytest.mark.parametrize(("unit", "xfer", "address", "message"), [
    ("sram", "$0", "0xffff, <<16", "bad_address: SRAM address 4294901760"),
    ("dram", "$$0", "0xffff, <<16", "bad_address: DRAM address 4294901760"),
    ("scratch", "$0", "0x4000", "bad_address: scratch address 16384"),
])
def test_out_of_range_address_in_microcode(tmp_path: Path, unit: str, xfer: str,
                                           address: str, message: str) -> None:
    source = (f".me 4\n.sig s\n    immed[a0, {address}]\n"
              f"    {unit}[read, {xfer}, a0, 0, 1], ctx_swap[s]\n")
    img = assembled(tmp_path, source)
    code, out = npkit("run", img.name, "--cycles", "1000000", cwd=tmp_path)
    assert code == 1, out
    assert message in out and "ME 0x04 ctx 0" in out and "prog.uc:4:5" in out, out


def test_out_of_range_address_through_the_python_api() -> None:
    image = assemble_text(".sig s\n    immed[a0, 0xffff, <<16]\n"
                          "    sram[read, $0, a0, 0, 1], ctx_swap[s]\n", "oob.uc")
    chip = Chip()
    chip.load(image, [3])
    with pytest.raises(SimFault) as info:
        chip.run(cycles=100_000)
    fault = info.value
    assert (fault.kind, fault.me, fault.ctx, fault.pc) == ("bad_address", 3, 0, 1)
    assert fault.source == "oob.uc:3:5"
    # the chip is still usable after a fault: reading memory does not crash
    assert chip.sram(0)[0] == 0


def test_deadlocked_threads(tmp_path: Path) -> None:
    img = assembled(tmp_path, ".me 1\n.sig never\n    ctx_arb[never]\n    ctx_arb[kill]\n")
    code, out = npkit("run", img.name, "--cycles", "5000000", cwd=tmp_path)
    assert code == 1, out
    assert "deadlock" in out and "me 1 ctx 7" in out and "waits for all of signals" in out, out


def test_deadlock_through_the_python_api() -> None:
    chip = Chip()
    chip.load(assemble_text(".sig never\n    ctx_arb[never]\n    ctx_arb[kill]\n", "d.uc"), [0])
    with pytest.raises(SimFault) as info:
        chip.run(cycles=5_000_000)
    assert info.value.kind == "deadlock" and "d.uc" in info.value.source
