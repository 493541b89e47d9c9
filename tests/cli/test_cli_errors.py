"""The npkit command's error paths: a clear message and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from npkit.cli import main


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    # an unexpected exception would be kept in result.exception with a traceback
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    return result.exit_code, result.output


def test_help_lists_commands() -> None:
    code, out = _invoke("--help")
    assert code == 0
    for command in ("asm", "disasm", "run", "demo"):
        assert command in out


def test_asm_missing_file(tmp_path: Path) -> None:
    code, out = _invoke("asm", str(tmp_path / "nope.uc"))
    assert code != 0
    assert f"{tmp_path / 'nope.uc'}: no such microcode file" in out


def test_disasm_missing_image(tmp_path: Path) -> None:
    code, out = _invoke("disasm", str(tmp_path / "nope.img"))
    assert code != 0
    assert "no such image file" in out


def test_disasm_corrupt_image(tmp_path: Path) -> None:
    path = tmp_path / "bad.img"
    path.write_text('{"format": "npkit-uc-image", "version": 1, "wor')
    code, out = _invoke("disasm", str(path))
    assert code != 0
    assert "truncated or corrupt image" in out


def test_run_missing_manifest(tmp_path: Path) -> None:
    code, out = _invoke("run", str(tmp_path / "none.toml"))
    assert code != 0
    assert "none.toml: no such file" in out


def test_run_bad_manifest(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[ports]\n0 = "fddi"\n')
    code, out = _invoke("run", str(path))
    assert code != 0
    assert f"{path}: [ports] 0: unknown port kind 'fddi'" in out


def test_run_unknown_file_kind(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hi")
    code, out = _invoke("run", str(path))
    assert code != 0
    assert "expected an MBL program (.mbl), a manifest (.toml), microcode (.uc) or an image " \
        "(.img)" in out


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--in", "in.pcap", "expected PORT=FILE"),
    ("--out", "x=out.pcap", "expected PORT=FILE"),
    ("--me", "rx.uc=a,b", "expected IMAGE=ME"),
])
def test_run_bad_option_values(tmp_path: Path, option: str, value: str, message: str) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text("")
    code, out = _invoke("run", str(manifest), option, value)
    assert code != 0
    assert message in out


def test_run_missing_input_pcap(tmp_path: Path) -> None:
    manifest = tmp_path / "m.toml"
    manifest.write_text("")
    code, out = _invoke("run", str(manifest), "--in", f"0={tmp_path / 'x.pcap'}")
    assert code != 0
    assert "x.pcap: no such packet file (--in 0=" in out


def test_run_two_manifests(tmp_path: Path) -> None:
    for name in ("a.toml", "b.toml"):
        (tmp_path / name).write_text("")
    code, out = _invoke("run", str(tmp_path / "a.toml"), str(tmp_path / "b.toml"))
    assert code != 0
    assert "at most one manifest" in out


def test_module_entry_point_has_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "npkit", "run", str(tmp_path / "x.toml")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Error:" in proc.stderr and "no such file" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


# ---------------------------------------------------------------- asm / disasm (needs ASM)
PROGRAM = """\
.me 0
.reg $x0
.sig s1
    immed[a0, 0x10]
    sram[read, $x0, a0, 0, 1], ctx_swap[s1]
    alu[b0, --, B, $x0]
    ctx_arb[kill]
"""


def test_asm_then_disasm_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "t.uc"
    source.write_text(PROGRAM)
    listing = tmp_path / "t.lst"
    code, out = _invoke("asm", str(source), "-o", str(tmp_path / "t.img"),
                        "--listing", str(listing))
    assert code == 0, out
    assert "4 instructions for ME 0" in out
    assert "t.uc:5" in listing.read_text()
    code, text = _invoke("disasm", str(tmp_path / "t.img"))
    assert code == 0, text
    again = tmp_path / "again.uc"
    again.write_text(text)
    code, out = _invoke("asm", str(again), "-o", str(tmp_path / "again.img"))
    assert code == 0, out
    from npkit.compiler.uc import Image

    assert Image.load(tmp_path / "again.img").words == Image.load(tmp_path / "t.img").words


def test_asm_error_is_file_line_col_with_caret(tmp_path: Path) -> None:
    source = tmp_path / "bad.uc"
    source.write_text(".me 0\n    alu[a0, a1, +, b2]\n    frob[a0]\n")
    code, out = _invoke("asm", str(source))
    assert code == 1
    assert f"{source}:3:5: error:" in out
    assert "^" in out
    assert not (tmp_path / "bad.img").exists()
