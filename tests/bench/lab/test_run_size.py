"""An NPF run's trials and frames sent read from its results (bench/lab/run_size.py) equal
the trials the device was asked to run and the frames they sent, counted on the device."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

from npkit.bench.lab import npf
from npkit.bench.lab.device import Trial, TrialResult
from npkit.bench.lab.reference_devices import routed_router
from npkit.bench.lab.run_size import PartSize, run_size
from npkit.runtime.routes import committed_histogram, generate_routes

POS = {0: "oc192pos", 1: "oc192pos"}
OC192_PAYLOAD_BPS = Fraction("9.584640e9")  # FACTS.md §2


class CountingDevice:
    """Passes everything to ``device``; counts the trials run and the frames they sent."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.size = PartSize()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.device, name)

    def _count(self, result: TrialResult) -> TrialResult:
        self.size += PartSize(1, result.report.total.sent)
        return result

    def run(self, trial: Trial) -> TrialResult:
        return self._count(self.device.run(trial))

    def measure_update_rate(self, family: int, updates: int, seed: int) -> float:
        return self.device.measure_update_rate(family, updates, seed)

    def run_with_updates(self, trial: Trial, family: int, updates_per_s: float,
                         seed: int) -> TrialResult:
        return self._count(self.device.run_with_updates(trial, family, updates_per_s, seed))


def test_the_sizes_read_from_the_results_are_the_trials_the_device_ran() -> None:
    routes = {f: generate_routes(f, n, seed=11, histogram=committed_histogram(f))
              for f, n in ((4, 2_500), (6, 600))}
    # engines at 60 % of line rate at 40 bytes: the searches step down, the loss curves
    # lose, the latency points sit below and above the throughput
    service = Fraction(49 * 8 * 10**12) / OC192_PAYLOAD_BPS * 100 / 60
    device = CountingDevice(routed_router(POS, routes, per_packet_ps=service, queue_packets=4,
                                          update_ps=2_000_000, update_stall_ps=500_000))
    config = npf.NpfConfig(sizes_v4=(40, 256), imix=False, traffic=("ipv4", "ipv6"),
                           trial_ps=10_000_000, settle_ps=20_000_000, resolution_percent=5.0,
                           loss_step_percent=25.0, exercised_v4=200, exercised_v6=40,
                           confirm_trials=2, update_percents=(50.0, 100.0),
                           convergence_trial_ps=(5_000_000,), convergence_cases=("ipv4:40",))
    result = npf.run_npf(device, config)
    sizes = run_size(dataclasses.asdict(result))
    assert sizes["all"] == device.size
    assert sizes["all"] == sizes["cases"] + sizes["updates"] + sizes["convergence"]
    assert sizes["updates"].trials == 4 and sizes["convergence"].trials > 0
    # the case at 40 bytes searched below 100 %: steps that lost, confirmation trials
    case = result.cases[0]
    assert case.throughput.throughput_percent < 100
    assert any(not s.passed for s in case.throughput.steps)
    assert any(s.repeat for s in case.throughput.steps)
