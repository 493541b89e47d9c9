"""PORT=FILE specs: the one parser every command uses (base/portspec.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.base.errors import NpkitError
from npkit.base.portspec import PortFile, PortSpecError, parse_port_file, parse_port_files


def test_a_spec_is_a_port_and_a_path() -> None:
    assert parse_port_file("0=in.pcap") == PortFile(0, Path("in.pcap"))
    assert parse_port_file(" 12=dir/a=b.pcap") == PortFile(12, Path("dir/a=b.pcap"))


@pytest.mark.parametrize("spec", ["in.pcap", "=in.pcap", "x=in.pcap", "-1=in.pcap", "0=",
                                  "1.5=a.pcap"])
def test_bad_specs_say_what_is_expected(spec: str) -> None:
    with pytest.raises(PortSpecError, match=r"--in .*expected PORT=FILE, e\.g\. 0=in\.pcap"):
        parse_port_file(spec, "--in")


def test_errors_are_user_errors() -> None:
    assert issubclass(PortSpecError, NpkitError)


def test_files_by_port_with_checks(tmp_path: Path) -> None:
    a = tmp_path / "a.pcap"
    a.write_bytes(b"")
    assert parse_port_files([f"0={a}", "1=out.pcap"], "--out") == {0: a, 1: Path("out.pcap")}
    with pytest.raises(PortSpecError, match="port 0 is given twice"):
        parse_port_files([f"0={a}", f"0={a}"], "--in")
    with pytest.raises(PortSpecError, match=r"port 2 does not exist \(ports 0\.\.1\)"):
        parse_port_files([f"2={a}"], "--in", ports=2)
    with pytest.raises(PortSpecError, match="nope.pcap: no such packet file"):
        parse_port_files([f"0={tmp_path / 'nope.pcap'}"], "--in", must_exist=True)
