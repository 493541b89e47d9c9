"""bench/route_updates.py --bands (fair_bands): every side and family is measured in a fresh
process of its own, and every side measures the same prefixes in the same order."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest

from npkit.bench.route_updates import fair_bands, main
from npkit.bench.update_bands import band_samples

TABLE4 = {(10 << 24, 8): 1, ((10 << 24) | (1 << 16), 16): 2, ((10 << 24) | (2 << 16), 16): 2,
          (0xC0000200, 24): 3, (0xC0000280, 25): 4, (0xC6336407, 32): 5,
          (0xC6336500, 24): 6, (0x0A000000 | (3 << 16), 17): 7}
TABLE6 = {(0x20010DB8 << 96, 32): 4, (0x24 << 120, 12): 5, (0x24001 << 108, 20): 6,
          ((0x20010DB8 << 96) | (1 << 80), 48): 7, ((0x20010DB8 << 96) | (1 << 80) | (2 << 64),
                                                    64): 8,
          ((0x20010DB8 << 96) | (5 << 84), 44): 9}


def has_dpdk() -> bool:
    if shutil.which("pkg-config") is None or shutil.which("cc") is None:
        return False
    return subprocess.run(["pkg-config", "--exists", "libdpdk"]).returncode == 0


def fnv1a(family: int, prefixes: list[tuple[int, int]]) -> str:
    """The digest written out independently: FNV-1a 64 over address bytes then length."""
    h = 14695981039346656037
    for value, length in prefixes:
        width = 4 if family == 4 else 16
        for byte in [*((value >> (8 * (width - 1 - i))) & 255 for i in range(width)), length]:
            h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return format(h, "016x")


@functools.cache  # both tests read the same runs
def run(dpdk: bool, runs: int = 2):
    tables = {4: TABLE4, 6: TABLE6}
    picked = {4: band_samples(TABLE4, 4, 10, 1), 6: band_samples(TABLE6, 6, 10, 2)}
    results, _ = fair_bands(tables, picked, ("poptrie",), 4, runs, dpdk)
    return picked, results


@pytest.mark.parametrize("dpdk", [False, pytest.param(True, marks=pytest.mark.skipif(
    not has_dpdk(), reason="no libdpdk"))])
def test_each_side_family_and_run_in_its_own_process(dpdk: bool) -> None:
    _, results = run(dpdk)
    by_process: dict[tuple[str, int, int], set[int]] = {}
    for r in results:
        by_process.setdefault((r.side, r.family, r.run), set()).add(r.pid)
    assert all(len(pids) == 1 for pids in by_process.values())
    pids = [next(iter(p)) for p in by_process.values()]
    assert len(set(pids)) == len(pids)  # no two (side, family, run) share a process
    assert os.getpid() not in pids
    sides = {"poptrie", "rte_lpm", "rte_lpm6"} if dpdk else {"poptrie"}
    assert {side for side, _, _ in by_process} == sides
    assert {run for _, _, run in by_process} == {0, 1}


@pytest.mark.parametrize("dpdk", [False, pytest.param(True, marks=pytest.mark.skipif(
    not has_dpdk(), reason="no libdpdk"))])
def test_every_side_measures_the_same_prefixes_in_order(dpdk: bool) -> None:
    picked, results = run(dpdk)
    for r in results:
        keys = [k for k, band in picked[r.family].items() if band == r.band]
        assert r.updates == 2 * len(keys)
        assert r.digest == fnv1a(r.family, keys)
    rows = {(r.family, r.band) for r in results}
    assert rows == {(f, b) for f in (4, 6) for b in range(3)}  # every band has prefixes


def test_bands_report_says_how_it_is_run(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "routes.txt"
    table.write_text("10.0.0.0/8 1\n192.0.2.0/24 3\n2001:db8::/32 4\n")
    assert main(["--bands", "--no-dpdk", "--band-runs", "2", "--table", str(table)]) == 0
    out = capsys.readouterr().out
    assert "fresh process of its own, 2 runs" in out
    assert "IPv4 /16-/24" in out and "IPv6 /32-/48" in out
