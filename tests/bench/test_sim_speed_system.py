"""bench/sim_speed's two-chip workload (issue 13, acceptance 1): a tiny run of the lab's
device on the two-chip system, serial and on two host threads; the printed figures must
agree with each other and with the trial's own counts (not a speed threshold)."""

from __future__ import annotations

import re

import pytest

from npkit.bench import sim_speed
from npkit.bench.lab import npf

FRAMES = 300  # frames per port: a trial of ~12 us of 40-byte packets


def _figures(text: str) -> dict[str, float]:
    """The numbers of one printed report (sim_speed.report_system)."""
    def number(pattern: str) -> float:
        found = re.search(pattern, text)
        assert found, f"{pattern!r} not in:\n{text}"
        return float(found.group(1).replace(",", ""))

    return {
        "offered": number(r": (\d+) frames offered"),
        "forwarded": number(r"offered, (\d+) forwarded"),
        "cycles": number(r"forwarded, ([\d,]+) cycles"),
        "instructions": number(r"cycles, ([\d,]+) instructions"),
        "host": number(r"host time \(median of \d+\): ([\d.]+) s"),
        "east": number(r"east ([\d.]+) s"),
        "west": number(r"west ([\d.]+) s"),
        "busiest": number(r"busiest = (\d+) %"),
        "mips": number(r"simulated MIPS\s+([\d.]+)"),
        "core_mips": number(r"core alone ([\d.]+)\)"),
        "pps": number(r"simulated packets/s\s+([\d,]+)"),
        "cycles_per_s": number(r"simulated cycles/s\s+([\d,]+)"),
        "second": number(r"one simulated second\s+([\d.]+) host s"),
        "calling": number(r"CPU per thread\s+calling ([\d.]+) s"),
        "others": number(r"others ([\d.]+) s"),
        "bound": number(r"one simulated second >= ([\d.]+) host s"),
    }


@pytest.fixture(scope="module")
def printed():
    routes = npf.SampledRoutes(3_000, 400, source="")
    out = {}
    for threads in (1, 2):
        setup = sim_speed.system_setup(FRAMES, threads, routes=routes)
        samples = [sim_speed.run_system_once(setup) for _ in range(2)]
        out[threads] = (setup, samples)
    return out


def test_the_figures_agree_with_the_counts(printed, capsys) -> None:
    for threads, (setup, samples) in printed.items():
        sim_speed.report_system(f"two-chip, {threads}", samples, setup.clock_hz)
        f = _figures(capsys.readouterr().out)
        # 100 % of line rate at 40 B: the two chips forward every frame
        assert f["offered"] == f["forwarded"] == sum(s.frames_in for s in samples[:1])
        assert f["forwarded"] >= 2 * FRAMES - 2  # the trial is FRAMES frame times per port
        assert f["host"] > 0
        rel = 0.01 + 0.0006 / f["host"]  # the host time is printed to the millisecond
        assert f["mips"] == pytest.approx(f["instructions"] / f["host"] / 1e6, rel=rel,
                                          abs=0.01)
        assert f["pps"] == pytest.approx(f["forwarded"] / f["host"], rel=rel, abs=1)
        assert f["cycles_per_s"] == pytest.approx(f["cycles"] / f["host"], rel=rel, abs=1)
        assert f["second"] == pytest.approx(f["host"] / (f["cycles"] / setup.clock_hz),
                                            rel=rel, abs=0.1)
        busiest = max(f["east"], f["west"])
        assert 0 < busiest <= f["host"] + 0.002  # a core runs inside the run
        assert f["busiest"] == pytest.approx(100 * busiest / f["host"], abs=1 + 100 * rel)
        assert f["core_mips"] >= f["mips"] * (1 - rel)
        # the busier thread's CPU time bounds the wall time on free cores
        busier = max(f["calling"], f["others"])
        assert f["bound"] == pytest.approx(busier / (f["cycles"] / setup.clock_hz),
                                           rel=0.01 + 0.0006 / max(busier, 1e-3), abs=0.2)
        if threads == 1:  # one thread does it all
            assert f["calling"] > 10 * f["others"]


def test_threads_do_the_serial_run_s_work(printed) -> None:
    """The same simulated work, serial or on two threads (the results are identical:
    tests/bench/lab/test_system_device.py compares frames and counters)."""
    serial, threaded = (printed[t][1] for t in (1, 2))
    for one in (*serial, *threaded):
        assert (one.instructions, one.cycles, one.frames_out, one.frames_in) == \
            (serial[0].instructions, serial[0].cycles, serial[0].frames_out,
             serial[0].frames_in)
        assert set(one.core_s) == {"east", "west"}
