"""npkit bench compare's parts: the l2fwd lab device and its reference, the port-pair trials,
the native frames, the flow-affinity experiment against a model written here (Toeplitz by
npkit.runtime.rss.toeplitz, the Microsoft-verified reference; buckets by zlib's CRC-32 of
the documented key), and the command end to end on its cheapest part."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from scapy.all import IP, UDP, Ether

from npkit.bench.lab import affinity, compare, native_rates, published
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.l2fwd_device import L2fwdChipDevice, L2fwdReference
from npkit.bench.tester.reference import Expected
from npkit.cli import main
from npkit.runtime.rss import toeplitz

SHORT = compare.preset(True, trial_ps=20_000_000, settle_ps=50_000_000)


@pytest.fixture(scope="module")
def l2fwd() -> L2fwdChipDevice:
    return L2fwdChipDevice()


def test_pair_trials_send_each_port_to_its_pair() -> None:
    trials = compare.PairTrials(SHORT, 128, {o: f"net{o}" for o in compare.PORTS})  # type: ignore
    trial = trials.at(37.5)
    assert [(s.port, s.destinations[4]) for s in trial.streams] == \
        [(0, "net1"), (1, "net0"), (2, "net3"), (3, "net2")]
    assert {s.load_percent for s in trial.streams} == {37.5}
    assert {s.duration_ps for s in trial.streams} == {SHORT.trial_ps}


def test_l2fwd_on_the_chip_loses_nothing_at_low_load_and_matches_its_reference(l2fwd) -> None:
    trials = compare.PairTrials(SHORT, 64, compare._destinations(l2fwd, SHORT))
    report = l2fwd.run(trials.at(20)).report
    assert report.total.sent > 100
    assert report.total.lost == 0 and report.errors == 0


def test_a_wrong_reference_shows_as_errors(l2fwd) -> None:
    """The analyzer really compares l2fwd's output with the reference: one that expects
    the source MAC unchanged sees every frame as wrong."""

    class Unrewritten(L2fwdReference):
        def __call__(self, tx, parsed) -> Expected:
            right = super().__call__(tx, parsed)
            return Expected(right.port, right.link[:6] + parsed.link[6:], right.ip)

    l2fwd.__dict__["reference"] = Unrewritten()
    try:
        trials = compare.PairTrials(SHORT, 64, compare._destinations(l2fwd, SHORT))
        report = l2fwd.run(trials.at(20)).report
    finally:
        l2fwd.__dict__["reference"] = L2fwdReference()
    assert report.total.sent > 100 and report.errors >= report.total.sent


def test_chip_point_finds_a_throughput_between_the_loads_it_tried(l2fwd) -> None:
    config = compare.preset(True, trial_ps=20_000_000, settle_ps=50_000_000,
                            resolution_percent=25.0)
    point = compare.chip_point("l2fwd", l2fwd, config, 1518)
    assert point.throughput_percent is not None and 1 <= point.throughput_percent <= 100
    assert point.total_mpps == pytest.approx(
        point.line_rate_fps * point.throughput_percent / 100 * 4 / 1e6)


def test_why_not_line_sums_ports_and_names_the_busiest() -> None:
    text = compare.why_not_line(
        {"dram0.busy_fraction": 0.97, "sram1.busy_fraction": 0.5, "me4.busy_fraction": 0.2,
         "scratch.busy_fraction": 0.1, "fwd.busy_fraction": 0.25,
         "fwd.instructions_per_frame": 86.0},
        {"rx.rx_dropped_rbuf_full0": 4, "rx.rx_dropped_rbuf_full3": 7, "rx.rx_no_buffer1": 20})
    assert text == ("frames lost above it as rx.rx_no_buffer 20, rx.rx_dropped_rbuf_full 11; "
                    "busiest at the throughput: dram0 97 %, sram1 50 %, me4 20 %; "
                    "forwarding MEs 25 % busy, 86 instructions a frame")


@pytest.mark.parametrize("size", [64, 65, 512, 1518])
def test_native_frames_have_the_size_and_valid_headers(size: int) -> None:
    routes = {(0x0A000000, 8): 1, (0xC0A80000, 16): 2}
    for frame in native_rates.frames(routes, size, 20, seed=size):
        assert len(frame) == size - 4
        packet = Ether(frame)
        ip = packet[IP]
        fresh = ip.copy()
        fresh.chksum = None
        assert IP(bytes(fresh)).chksum == ip.chksum
        assert ip.dst.startswith(("10.", "192.168.")) and ip.src.startswith("198.1")
        assert packet[UDP].len == size - 4 - 14 - 20


def test_host_rate_as_percent_of_line() -> None:
    rate = native_rates.HostRate("l2fwd", 64, 10, 2, 10.0, 120.0, 1.0, 1.0, 1)
    assert rate.percent_of_line(1e6) == 100.0  # 10 Mpps > 4 ports x 1 Mpps: capped
    assert rate.percent_of_line(5e6) == pytest.approx(50.0)
    assert rate.percent_of_line(5e6, all_cores=True) == 100.0


# --------------------------------------------------------------------------- affinity model
def _rss_queue(flow: affinity.Flow, cores: int) -> int:
    data = b"".join(v.to_bytes(n, "big") for v, n in
                    ((flow.remote, 4), (flow.local, 4), (flow.rport, 2), (flow.lport, 2)))
    return (toeplitz(data) & 127) % cores


def _bucket(flow: affinity.Flow) -> int:
    words = (flow.remote, flow.local, flow.rport << 16 | flow.lport, 4 << 8 | 1)
    return zlib.crc32(b"".join(w.to_bytes(4, "big") for w in words)) & 2047


def _model(world, cores: int) -> dict[tuple[str, str], int]:
    """Packets on their owner's queue per (mode, phase), computed from the flows alone."""
    rss = [_rss_queue(f, cores) for f in world.flows]
    installed: set[int] = set()
    used: dict[int, int] = {}
    for f in world.order:  # the order flows open; a bucket holds 4
        b = _bucket(world.flows[f])
        if used.get(b, 0) < 4:
            used[b] = used.get(b, 0) + 1
            installed.add(f)
    out = {}
    for phase in affinity.PHASES:
        owners = world.owners[phase]
        arrivals = world.arrivals[phase]
        out[("rss", phase)] = sum(rss[f] == owners[f] for f in arrivals)
        ep = [world.owners["open"][f] if f in installed else rss[f] for f in range(len(rss))]
        atr = [owners[f] if f in installed else rss[f] for f in range(len(rss))]
        out[("fd-ep", phase)] = sum(ep[f] == owners[f] for f in arrivals)
        out[("fd-atr", phase)] = sum(atr[f] == owners[f] for f in arrivals)
    return out


@pytest.mark.parametrize("flows,cores", [(300, 4), (9_000, 2)])
def test_affinity_matches_the_model(flows: int, cores: int) -> None:
    config = affinity.AffinityConfig(flows, cores, packets_per_flow=2, moved_fraction=0.3,
                                     seed=flows)
    world = affinity.make_world(config)
    points = affinity.run_affinity(config, world)
    got = {(p.mode, p.phase): p.on_owner for p in points}
    assert got == _model(world, cores)
    full = [p for p in points if p.mode != "rss"]
    assert all(p.filters <= 8192 for p in full)
    if flows > 8192:  # more flows than filters: some refused, the table full or nearly
        assert all(p.refused >= flows - 8192 for p in full)


def test_affinity_on_the_chip_gives_the_native_queues() -> None:
    config = affinity.AffinityConfig(200, 4, packets_per_flow=1, seed=3, chip_sample=60)
    points = affinity.run_affinity(config, chip=affinity.ChipProbe())
    sampled = [p for p in points if p.chip_packets]
    assert {p.mode for p in sampled} == set(affinity.MODES)
    assert all(p.chip_packets == 60 and p.chip_same_as_native for p in sampled)


# --------------------------------------------------------------------------- the command
def test_config_errors_are_lab_errors() -> None:
    with pytest.raises(LabConfigError, match="apps"):
        compare.preset(apps=("l3fwd",))
    with pytest.raises(LabConfigError, match="64..1518"):
        compare.preset(sizes=(40,))


def test_the_command_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["bench", "compare", "--quick", "--parts", "affinity",
                                       "--flows", "400", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text()
    assert "Flow affinity" in text and "## Published figures" in text
    assert (out / "compare_affinity.png").exists() and (out / "results.json").exists()
    bad = CliRunner().invoke(main, ["bench", "compare", "--apps", "l3fwd", "--out", str(out)])
    assert bad.exit_code != 0 and "l3fwd" in bad.output


def test_every_published_figure_names_its_document_and_place() -> None:
    rows = compare.published_rows()
    assert len(rows) == len(published.X86_FIGURES) == 5
    for row in rows:
        assert row.document.startswith("FACTS.md §3") and "document: " in row.document
        assert row.table  # a table/figure, or why it is not known
        found = "not found" not in row.document.split("document: ")[1][:9]
        assert bool(row.quote) == found  # a document found is quoted, one not found is not
    sandy = [r for r in rows if "i7-2600" in r.what or "X5690" in r.what]
    assert len(sandy) == 3 and all("not found" in r.document for r in sandy)
    assert any("80 Mpps" in r.quote for r in rows)
