"""Coverage from the lab's chip devices and `npkit bench --coverage` (runtime/coverage.py,
docs/debugging.md): per-trial lcov files that add up line by line, checked against a model
of the core's per-PC counts written here (a line's count: the largest count of its PCs,
summed over the MEs running the image, summed over the trials)."""

from __future__ import annotations

import pickle
from collections import defaultdict
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from npkit.bench.lab.device import Trial
from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice, RouteConfig
from npkit.bench.tester import Sizes, Stream
from npkit.runtime.coverage import (
    Coverage,
    CoverageSpool,
    add_to_lcov,
    coverage_from_env,
    merge_lcov,
    parse_lcov,
)

ROOT = Path(__file__).resolve().parents[3]
IPV4_FWD = ROOT / "microblocks" / "ipv4_fwd.mbl"
SMALL = ChipOptions(routes=RouteConfig(v4_routes=300, v6_routes=100))


def test_lcov_files_add_up_per_file_and_line(tmp_path) -> None:
    a, b = tmp_path / "a.info", tmp_path / "b.info"
    one, two = tmp_path / "one.mbl", tmp_path / "two.uc"
    one.write_text("x\n" * 9)
    two.write_text("x\n" * 2)
    a.write_text(f"TN:x\nSF:{one}\nDA:3,5\nDA:4,0\nLF:2\nLH:1\nend_of_record\n"
                 f"TN:x\nSF:{two}\nDA:1,7\nLF:1\nLH:1\nend_of_record\n")
    b.write_text(f"TN:y\nSF:{one}\nDA:4,2\nDA:9,1\nLF:2\nLH:2\nend_of_record\n"
                 "TN:y\nSF:/gone/body.uc\nDA:2,3\nLF:1\nLH:1\nend_of_record\n")
    merged = merge_lcov([a, b])
    assert merged.lines == {str(one): {3: 5, 4: 2, 9: 1}, str(two): {1: 7},
                            "/gone/body.uc": {2: 3}}
    # add_to_lcov keeps only sources that exist (genhtml needs each one it lists)
    total = add_to_lcov(a, Coverage({str(two): {1: 1, 2: 0}, "/gone/body.uc": {2: 1}}))
    assert parse_lcov(a.read_text()) == total.lines == {str(one): {3: 5, 4: 0},
                                                       str(two): {1: 8, 2: 0}}


def duplex(device: CompiledChipDevice, seed: int) -> Trial:
    streams = tuple(
        Stream(id=i + 1, port=i, family=4, sizes=Sizes.fixed(64), load_percent=20,
               duration_ps=5_000_000, seed=seed,
               destinations={4: device.destinations(4, 1 - i, 10, seed)})
        for i in (0, 1))
    return Trial(streams, "cov", settle_ps=20_000_000)


def line_model(chip, per_me: dict[int, np.ndarray]) -> dict[str, dict[int, int]]:
    """Per source line: max over its PCs of the PC's count summed over the image's MEs."""
    images: dict[int, tuple] = {}
    for me, counts in per_me.items():
        image = chip.image_on(me)
        if image is not None:
            entry = images.setdefault(id(image), (image, np.zeros(len(image.words), np.int64)))
            entry[1][:] += counts[:len(image.words)].astype(np.int64)
    out: dict[str, dict[int, int]] = defaultdict(dict)
    for image, counts in images.values():
        best: dict[tuple[str, int], int] = defaultdict(int)
        for pc, loc in enumerate(image.lines[:len(counts)]):
            if loc is not None and loc.file and loc.line > 0:
                path = Path(loc.file)  # lcov names a file that exists by its full path
                key = (str(path.resolve()) if path.is_file() else str(path), loc.line)
                best[key] = max(best[key], int(counts[pc]))
        for (file, line), n in best.items():
            out[file][line] = out[file].get(line, 0) + n
    return dict(out)


def test_trials_write_their_own_counts_and_the_sum_is_the_model(tmp_path) -> None:
    device = CompiledChipDevice(SMALL)
    device.record_coverage(tmp_path / "spool")
    device = pickle.loads(pickle.dumps(device))  # as dask ships it: the folder goes along
    first = device.run(duplex(device, 1))
    chip = device.__dict__["_base"][0].chip  # every trial restores this chip's snapshot
    after_one = {me: chip.coverage_counts(me).copy() for me in range(chip.config.me_count)}
    second = device.run(duplex(device, 2))
    after_two = {me: chip.coverage_counts(me).copy() for me in range(chip.config.me_count)}
    for r in (first, second):
        assert r.report.total.received == r.report.total.sent > 10 and r.report.errors == 0
    files = sorted((tmp_path / "spool").glob("*.info"))
    assert len(files) == 2
    model_one = line_model(chip, after_one)
    model_two = line_model(chip, {me: after_two[me] - after_one[me] for me in after_two})
    written = [parse_lcov(f.read_text()) for f in files]
    assert written in ([model_one, model_two], [model_two, model_one])
    merged = CoverageSpool(tmp_path / "spool").merged().lines
    expected = {f: {n: model_one.get(f, {}).get(n, 0) + model_two.get(f, {}).get(n, 0)
                    for n in set(model_one.get(f, {})) | set(model_two.get(f, {}))}
                for f in set(model_one) | set(model_two)}
    assert merged == expected
    # the router's forwarding ran: the IPv4 TTL decrement was executed by both trials' frames
    ttl = next(i for i, text in enumerate(IPV4_FWD.read_text().splitlines(), 1)
               if "ip.ttl -= 1" in text)
    assert merged[str(IPV4_FWD)][ttl] > 0
    assert model_two[str(IPV4_FWD)][ttl] > 0


def test_a_device_without_a_folder_counts_nothing(tmp_path) -> None:
    device = CompiledChipDevice(SMALL)
    device.run(duplex(device, 1))
    chip = device.__dict__["_base"][0].chip
    assert len(chip.coverage_counts(0)) == 0
    assert "_coverage_dir" not in pickle.loads(pickle.dumps(device)).__dict__ or \
        pickle.loads(pickle.dumps(device)).__dict__["_coverage_dir"] is None


def test_coverage_from_env_adds_a_run_to_the_file(tmp_path) -> None:
    class FakeChip:  # enable_coverage is all coverage_from_env calls before the run
        enabled = False

        def enable_coverage(self) -> None:
            self.enabled = True

    chip = FakeChip()
    with coverage_from_env(chip, env={}):
        pass
    assert not chip.enabled


def test_bench_rfc2544_writes_one_summed_lcov_file(tmp_path) -> None:
    from npkit.cli import main

    out = tmp_path / "cov" / "rfc.info"
    result = CliRunner().invoke(main, [
        "bench", "rfc2544", "--quick", "--sizes", "64", "--tests", "latency",
        "--trial-us", "20", "--v4-routes", "200", "--v6-routes", "50",
        "--out", str(tmp_path / "lab"), "--coverage", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = parse_lcov(out.read_text())
    assert lines[str(IPV4_FWD)] and max(lines[str(IPV4_FWD)].values()) > 0
    assert list(out.parent.iterdir()) == [out]  # the per-trial folder is gone
    assert "coverage:" in result.output


def test_a_system_trial_counts_every_chip_of_the_system(tmp_path) -> None:
    import dataclasses

    from npkit.bench.lab import npf

    chosen = npf.preset("ixp2800-npf", quick=True)
    chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(3_000, 400, source=""))
    device = npf.chip_device(chosen)
    device.record_coverage(tmp_path / "spool")
    config = dataclasses.replace(chosen.config, trial_ps=5_000_000, settle_ps=30_000_000)
    label, sizes = config.sizes("ipv4", "pos")[0]
    device.run(npf.make_trials(device, config, "ipv4", label, sizes).at(20))
    runs, _ = device.__dict__["_base_runs"]
    chips = [run.chip for run in runs.values()]
    assert len(chips) == 2
    per_chip = [line_model(c, {me: c.coverage_counts(me) for me in range(c.config.me_count)})
                for c in chips]
    expected: dict[str, dict[int, int]] = {}
    for model in per_chip:
        expected = Coverage(expected).merge(Coverage(model)).lines
    assert CoverageSpool(tmp_path / "spool").merged().lines == expected
    # both chips forwarded (each receives one line): the TTL decrement ran on each
    assert all(any(n for n in model.get(str(IPV4_FWD), {}).values()) for model in per_chip)
