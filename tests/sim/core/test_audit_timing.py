"""Audit of issue 2: bandwidth saturation on the IXP2400 preset and for SRAM writes.

The expected figures are computed here from the chip config (bytes moved / configured
bytes per cycle), independently of the simulator's own bookkeeping."""

from __future__ import annotations

import pytest
from coreprog import NONE, A, B, alu, br, chip_config, immed, kill, mem

from npkit.sim import _core

# unit -> (config section, bandwidth key, bytes per count unit)
READS = {
    "sram": ("sram", "read_bytes_per_cycle", 4),
    "scratch": ("scratch", "bytes_per_cycle", 4),
    "dram": ("dram", "bytes_per_cycle", 8),
}


def loop(unit: str, cmd: str, count: int, loops: int) -> list[int]:
    return [immed(A(0), loops),
            mem(unit, cmd, 0, NONE, NONE, count=count, sig=1, swap=True),  # pc 1
            alu(A(0), A(0), "-", B(1)),
            br("bne", 1),
            kill()]


def saturate(chip: str, unit: str, cmd: str, count: int, mes: int = 8,
             loops: int = 10) -> tuple[dict, dict, int]:
    cfg = chip_config(chip)
    core = _core.Core(cfg, 1)
    for me in range(mes):
        core.load(me, loop(unit, cmd, count, loops))
        for ctx in range(8):
            core.write_reg(me, ctx, B(1), 1)
    assert core.run(20_000_000, until_idle=True) == "idle"
    channels = core.counters()["channels"]
    channel = channels["scratch"] if unit == "scratch" else channels[unit][0]
    return cfg, channel, core.now


@pytest.mark.parametrize(("unit", "count"), [("sram", 16), ("scratch", 16), ("dram", 8)])
def test_ixp2400_channels_saturate_at_the_preset_bandwidth(unit: str, count: int) -> None:
    cfg, channel, cycles = saturate("ixp2400", unit, "read", count)
    section, key, unit_bytes = READS[unit]
    total = 8 * 8 * 10 * count * unit_bytes
    assert channel["bytes"] == total
    assert total / cycles == pytest.approx(cfg[section][key], rel=0.03)
    assert channel["utilization"] == pytest.approx(1.0, rel=0.03)


@pytest.mark.parametrize("chip", ["ixp2800", "ixp2400"])
def test_sram_writes_saturate_at_the_write_bandwidth(chip: str) -> None:
    cfg, channel, cycles = saturate(chip, "sram", "write", 16)
    total = 8 * 8 * 10 * 16 * 4
    assert channel["bytes"] == total
    assert total / cycles == pytest.approx(cfg["sram"]["write_bytes_per_cycle"], rel=0.03)


def test_slower_write_bandwidth_is_honoured() -> None:
    """Halving write_bytes_per_cycle doubles the time the same writes take: the figure is
    read from the config, not built in."""
    cfg = chip_config()
    cfg["sram"]["write_bytes_per_cycle"] /= 2
    core = _core.Core(cfg, 1)
    for me in range(8):
        core.load(me, loop("sram", "write", 16, 10))
        for ctx in range(8):
            core.write_reg(me, ctx, B(1), 1)
    assert core.run(20_000_000, until_idle=True) == "idle"
    total = 8 * 8 * 10 * 16 * 4
    assert total / core.now == pytest.approx(cfg["sram"]["write_bytes_per_cycle"], rel=0.03)
