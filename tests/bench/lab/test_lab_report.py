"""The lab's report (bench/lab/report.py): deterministic JSON that reads back into the same
result, Markdown that names the charts it wrote, HTML, counter explanations, and the
`npkit bench rfc2544` command end to end on the simulated chip."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from click.testing import CliRunner

from npkit.bench.lab.reference_devices import QueueingRouter
from npkit.bench.lab.report import explain, load_result, results_json, write_report
from npkit.bench.lab.rfc2544 import benchmark_network_routes, preset, run_rfc2544
from npkit.bench.tester import RouteReference

PORTS = {0: "10gbe", 1: "10gbe"}
WIRE_64_PS = 67_200


def small_run(seed: int = 1):
    reference = RouteReference(benchmark_network_routes((0, 1)), lambda hop: hop)
    device = QueueingRouter(PORTS, reference, per_packet_ps=Fraction(WIRE_64_PS) * 2,
                            queue_packets=4)
    config = preset("rfc2544-10g", sizes=(64, 256), trial_ps=10_000_000,
                    settle_ps=5_000_000, latency_repeats=1, resolution_percent=5.0,
                    b2b_max_frames=32, b2b_resolution_frames=4, seed=seed)
    return run_rfc2544(device, config)


@pytest.fixture(scope="module")
def result():
    return small_run()


def test_json_is_deterministic_and_carries_the_configuration(result) -> None:
    text = results_json(result)
    assert text == results_json(small_run())  # a second run: the same bytes
    data = json.loads(text)
    assert data["suite"] == "rfc2544"
    assert data["config"]["seed"] == 1 and data["config"]["sizes"] == [64, 256]
    assert data["device"]["queue_packets"] == 4
    assert list(data) == sorted(data)  # sorted keys
    assert "time" not in text.lower().replace("time_ps", "")  # nothing from the wall clock


def test_json_reads_back_into_the_same_result(result, tmp_path: Path) -> None:
    files = write_report(result, tmp_path)
    back = load_result(files.json)
    assert back == result
    assert results_json(back) == files.json.read_text(encoding="utf-8")


def test_report_writes_the_charts_it_names(result, tmp_path: Path) -> None:
    files = write_report(result, tmp_path, command="npkit bench rfc2544 --quick")
    text = files.markdown.read_text(encoding="utf-8")
    assert len(files.charts) == 3
    for chart in files.charts:
        assert chart.is_file() and chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({chart.name})" in text
    for heading in ("## Throughput", "## Latency", "## Frame loss rate",
                    "## Back-to-back frames", "`npkit bench rfc2544 --quick`"):
        assert heading in text
    html = files.html.read_text(encoding="utf-8")
    assert "<table>" in html and 'src="rfc2544_throughput.png"' in html
    # below line rate: the report says why, from the counters
    assert "Why not line rate" in text and "engine.dropped" in text


def test_explain_names_losses_and_the_busiest_units() -> None:
    text = explain({"me2.busy_fraction": 0.5, "dram1.busy_fraction": 0.95,
                    "sram1.busy_fraction": 0.3, "fwd.busy_fraction": 0.45,
                    "fwd.stall_fraction": 0.2, "fwd.instructions_per_frame": 420.0},
                   {"rx.rx_no_buffer0": 12, "drop.no_verdict": 0, "me2.busy_fraction": 1.0})
    assert "rx.rx_no_buffer0 = 12 (receive found no free packet buffer" in text
    assert "no_verdict" not in text
    assert text.index("dram1 95%") < text.index("me2 50%") < text.index("sram1 30%")
    assert "saturated (≥ 90% busy): dram1;" in text
    assert "forwarding MEs 45% busy, 20% stalled" in text
    assert "420 forwarding-ME instructions" in text
    assert explain({}, {}) == "no device counters recorded"


def test_bench_rfc2544_command_on_the_chip(tmp_path: Path) -> None:
    from npkit.cli import main

    out = tmp_path / "lab"
    run = CliRunner().invoke(main, ["bench", "rfc2544", "--quick", "--sizes", "64",
                                    "--tests", "throughput,latency", "--trial-us", "40",
                                    "--v4-routes", "200", "--out", str(out)])
    assert run.exit_code == 0, run.output
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    size = data["sizes"][0]
    assert data["device"]["device"] == "compiled" and size["frame_bytes"] == 64
    assert size["throughput"]["throughput_percent"] > 10
    assert size["latency"]["lost"] == 0 and size["latency"]["min_ps"] > 2 * WIRE_64_PS
    assert (out / "report.md").is_file() and (out / "rfc2544_throughput.png").is_file()


def test_bench_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    from npkit.cli import main

    run = CliRunner().invoke(main, ["bench", "rfc2544", "--sizes", "64,x"])
    assert run.exit_code != 0 and "expected frame sizes" in run.output
    run = CliRunner().invoke(main, ["bench", "rfc2544", "--tests", "speed", "--out",
                                    str(tmp_path)])
    assert run.exit_code != 0 and "unknown RFC 2544 test" in run.output
    assert "Traceback" not in run.output and "internal error" not in run.output
    run = CliRunner().invoke(main, ["bench", "report", str(tmp_path / "none.json")])
    assert run.exit_code != 0 and "no such results file" in run.output


@pytest.mark.slow
def test_a_local_cluster_sweep_on_the_chip_gives_the_serial_bytes() -> None:
    # the chip device travels to the workers as its configuration + linked images
    from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice, RouteConfig
    from npkit.bench.lab.sweep import Where

    device = CompiledChipDevice(ChipOptions(routes=RouteConfig(v4_routes=200, v6_routes=50)))
    config = preset("rfc2544-10g", quick=True, sizes=(64, 512), tests=("throughput",),
                    trial_ps=30_000_000)
    serial = results_json(run_rfc2544(device, config))
    spread = results_json(run_rfc2544(device, config, Where("local", workers=2)))
    assert spread == serial
