"""NPKIT_COVERAGE on the differential tests' chip side (run_both.chip_side, docs/debugging.md
"From the lab and the differential tests"): each run adds its coverage to the named lcov
file, so two identical runs give exactly twice the first run's counts."""

from __future__ import annotations

from pathlib import Path

from probes import probes
from run_both import CHIP_MAX_FRAME, CONFIG, chip_side

from npkit.runtime.coverage import COVERAGE_ENV, parse_lcov
from npkit.runtime.router_config import RouterConfig

IPV4_FWD = Path(__file__).resolve().parents[2] / "microblocks" / "ipv4_fwd.mbl"


def test_each_chip_side_run_adds_its_coverage_to_the_file(tmp_path, monkeypatch) -> None:
    out = tmp_path / "diff.info"
    monkeypatch.setenv(COVERAGE_ENV, str(out))
    config = RouterConfig.load(CONFIG)
    items = [p for p in probes() if len(p.frame) <= CHIP_MAX_FRAME][:24]
    first_answers = chip_side(config, items)
    once = parse_lcov(out.read_text())
    assert max(once[str(IPV4_FWD)].values()) > 0  # IPv4 probes went through the forwarding
    assert chip_side(config, items) == first_answers
    twice = parse_lcov(out.read_text())
    assert twice == {f: {n: 2 * c for n, c in lines.items()} for f, lines in once.items()}
