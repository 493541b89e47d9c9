"""The NPF lab's `pool-mbl` data path (bench/lab/system_device.py; docs/datapath.md): each
chip of the two-chip system runs examples/pos_router/media_pos_router.mbl, the POS router
with its receive and transmit written in MBL (frame_rx / frame_tx), linked as the pool of
all 16 MEs; 40-byte IPv4 packets at 100 % of line rate arrive complete, none lost."""

from __future__ import annotations

import dataclasses

import pytest

from npkit.bench.lab import npf
from npkit.bench.lab.errors import LabConfigError
from npkit.bench.lab.system_device import SystemChipDevice, default_data_path

TRIAL = dict(trial_ps=10_000_000, settle_ps=30_000_000)


def _device(data_path: str, **options):
    chosen = npf.preset("ixp2800-npf", quick=True, data_path=data_path)
    chosen = dataclasses.replace(chosen, routes=npf.SampledRoutes(3_000, 400, source=""))
    return npf.chip_device(chosen, **options), dataclasses.replace(chosen.config, **TRIAL)


def test_pool_mbl_runs_the_media_variant_as_the_pool() -> None:
    device, _ = _device("pool-mbl")
    assert isinstance(device, SystemChipDevice)
    assert (device.source.name, device.entry) == ("media_pos_router.mbl", "media_pos_router")
    assert device.chip_mapping("east")["pool_mes_per_port"] == 16
    assert [s.path.name for s in device.chip_linked("east").images] == ["pool.uc"]
    with pytest.raises(LabConfigError, match="no variant with MBL receive"):
        SystemChipDevice(device.options, data_path="pool-mbl", source="x/other.mbl")


def test_forty_byte_packets_at_line_rate_lose_nothing() -> None:
    device, config = _device("pool-mbl", streamed=False)
    trials = npf.make_trials(device, config, "ipv4", "40", config.sizes("ipv4", "pos")[0][1])
    result = device.run(trials.at(100))
    total = result.report.total
    assert total.sent > 300 and total.received == total.sent and result.report.errors == 0


def test_pool_mbl_is_the_default_for_a_program_with_mbl_receive_and_transmit() -> None:
    """The NPF preset (pos_router.mbl, which has the MBL variant) gets pool-mbl unless told
    otherwise; `pool` stays a choice; a program without a variant gets `pool`; a device
    rebuilt from its state (what a dask worker gets) keeps the variant."""
    assert default_data_path("examples/pos_router/pos_router.mbl") == "pool-mbl"
    assert default_data_path("x/media_pos_router.mbl") == "pool-mbl"
    assert default_data_path("x/other.mbl") == default_data_path(None) == "pool"
    chosen = npf.preset("ixp2800-npf", quick=True)
    assert chosen.data_path is None
    device = npf.chip_device(chosen)
    assert device.data_path == "pool-mbl" and device.source.name == "media_pos_router.mbl"
    assert npf.chip_device(npf.preset("ixp2800-npf", quick=True, data_path="pool")
                           ).data_path == "pool"
    # what __setstate__ rebuilds from (bench/lab/devices.py), less the linked images
    rebuilt = SystemChipDevice(options=device.options, streamed=device.streamed,
                               **device._config_state())
    assert (rebuilt.data_path, rebuilt.source.name) == ("pool-mbl", "media_pos_router.mbl")
