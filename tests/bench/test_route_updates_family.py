"""bench/route_updates.py --family: only that family's table is loaded and measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from npkit.bench.route_updates import main

TABLE = """\
10.0.0.0/8 1
10.1.0.0/16 2
192.0.2.0/24 3
2001:db8::/32 4
2400::/12 5
2400:1000::/20 6
"""


@pytest.mark.parametrize(("family", "shown", "absent"), [(6, "IPv6", "IPv4"),
                                                          (4, "IPv4", "IPv6")])
def test_worst_measures_only_the_family(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        family: int, shown: str, absent: str) -> None:
    table = tmp_path / "routes.txt"
    table.write_text(TABLE)
    assert main(["--worst", "--structure", "poptrie", "--family", str(family),
                 "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert f"poptrie {shown}, " in out
    assert absent not in out


def test_both_families_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "routes.txt"
    table.write_text(TABLE)
    assert main(["--worst", "--structure", "poptrie", "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert "poptrie IPv4, 1 prefixes up to /12" in out
    assert "poptrie IPv6, 2 prefixes up to /20" in out
