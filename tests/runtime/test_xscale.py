"""The XScale control-processor model (npkit.runtime.xscale) interleaved with running MEs.

Expectations come from the chip TOML numbers read here with tomllib and a reference
recurrence for posted writes written out below, and from what hand-written microcode
running on the chip observes (its TIMESTAMP CSR, snapshots it copies to scratch)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npkit.compiler.uc import assemble_text
from npkit.runtime.xscale import ControlProcessor, XScaleTiming
from npkit.sim import Chip, ChipConfig

CHIPS = Path(__file__).resolve().parents[2] / "sim" / "chips"
OVERSHOOT = 8  # ME cycles an ME may run past a chip.run limit (an instruction is not split)


def toml(name: str) -> dict[str, Any]:
    return tomllib.loads((CHIPS / f"{name}.toml").read_text())


def ratio(name: str) -> float:
    raw = toml(name)
    return raw["me"]["clock_hz"] / raw["xscale"]["clock_hz"]


def reference_posted(raw: dict[str, Any], start: int, words: int, unit: str = "sram",
                     last_visible: int = 0) -> tuple[int, list[int]]:
    """Posted writes in XScale cycles: (time the core is free again, visibility of each word).
    Word i issues once word i - depth has landed; it lands latency after its issue ends,
    never before the word ahead of it."""
    xs = raw["xscale"]
    depth, issue, latency = xs["max_posted_writes"], xs["write_issue_cycles"], \
        xs[f"{unit}_write_cycles"]
    clock = start + xs["call_cycles"]
    visible: list[int] = []
    for i in range(words):
        if i >= depth:
            clock = max(clock, visible[i - depth])
        clock += issue
        visible.append(max(clock + latency, visible[-1] if visible else last_visible))
    return clock, visible


def run_process(cp: ControlProcessor, gen: Any, cycles: int = 200_000) -> None:
    proc = cp.process(gen)
    cp.run(cycles=cycles)
    assert not proc.is_alive, "the control-plane process did not finish"


# --------------------------------------------------------------------------- timing
def test_timing_comes_from_the_config() -> None:
    for name in ("ixp2800", "ixp2400"):
        raw = toml(name)
        timing = XScaleTiming.from_config(ChipConfig.load(name))
        assert timing.clock_hz == raw["xscale"]["clock_hz"]
        assert timing.me_clock_hz == raw["me"]["clock_hz"]
        assert timing.sram_read_cycles == raw["xscale"]["sram_read_cycles"]
        assert timing.poll_period_cycles == raw["xscale"]["poll_period_cycles"]
    assert ratio("ixp2800") == 2.0  # 1.4 GHz MEs, 700 MHz XScale
    assert ratio("ixp2400") == 1.0


@pytest.mark.parametrize("name", ["ixp2800", "ixp2400"])
def test_access_costs_equal_the_config_numbers(name: str) -> None:
    raw, r = toml(name), ratio(name)
    xs = raw["xscale"]
    chip = Chip(name)
    cp = ControlProcessor(chip)
    chip.configure_ring(1, 0, 128)
    times: dict[str, int] = {}

    def control() -> Any:
        t = cp.now
        yield from cp.compute(1000)
        times["compute"] = cp.now - t
        t = cp.now
        yield from cp.sram_read(0, 0, 20)                # 3 bursts of up to 8 words
        times["sram_read"] = cp.now - t
        t = cp.now
        yield from cp.scratch_read(100, 1)
        times["scratch_read"] = cp.now - t
        t = cp.now
        yield from cp.dram_read(4096, 64)               # 16 words: 2 bursts
        times["dram_read"] = cp.now - t
        t = cp.now
        yield from cp.ring_get(1, 4)                    # empty: still one scratch read
        times["ring_get"] = cp.now - t
        t = cp.now
        yield from cp.dequeue(0, 5)
        times["dequeue"] = cp.now - t
        t = cp.now
        landed = yield from cp.sram_write(1, 50, list(range(10)))
        times["write_issue"], times["write_landed"] = cp.now - t, landed - t

    run_process(cp, control())
    burst = xs["read_burst_words"]
    assert times["compute"] == math.ceil(1000 * r)
    assert times["sram_read"] == r * (xs["call_cycles"]
                                      + math.ceil(20 / burst) * xs["sram_read_cycles"])
    assert times["scratch_read"] == r * (xs["call_cycles"] + xs["scratch_read_cycles"])
    assert times["dram_read"] == r * (xs["call_cycles"]
                                      + math.ceil(16 / burst) * xs["dram_read_cycles"])
    assert times["ring_get"] == times["scratch_read"]
    assert times["dequeue"] == r * (xs["call_cycles"] + xs["sram_read_cycles"])
    free, visible = reference_posted(raw, 0, 10)
    assert times["write_issue"] == r * free
    assert times["write_landed"] == r * visible[-1]
    counters = cp.counters()
    assert counters["words_written"]["sram"] == 10
    assert counters["reads"] == {"sram": 2, "scratch": 2, "dram": 1}
    assert counters["busy_cycles"] == sum(v for k, v in times.items() if k != "write_landed")


def test_read_after_write_waits_for_the_write_and_sees_it() -> None:
    raw, r = toml("ixp2800"), ratio("ixp2800")
    chip = Chip()
    cp = ControlProcessor(chip)
    seen: dict[str, Any] = {}

    def control() -> Any:
        t = cp.now
        yield from cp.sram_write(2, 7, [0xDEADBEEF, 0x12345678])
        seen["value"] = (yield from cp.sram_read(2, 7, 2)).tolist()
        seen["elapsed"] = cp.now - t
        yield from cp.dram_write(1000, b"hello, world")
        seen["dram"] = yield from cp.dram_read(1000, 12)
        yield from cp.scratch_write([9, 3], [5, 6])
        seen["scratch"] = (yield from cp.scratch_read(3, 7)).tolist()

    run_process(cp, control())
    xs = raw["xscale"]
    _, visible = reference_posted(raw, 0, 2)
    assert seen["value"] == [0xDEADBEEF, 0x12345678]
    # the read is ordered after the writes: it samples when the last lands, then stalls
    assert seen["elapsed"] == r * (visible[-1] + xs["sram_read_cycles"])
    assert seen["dram"] == b"hello, world"
    assert seen["scratch"] == [6, 0, 0, 0, 0, 0, 5]


# --------------------------------------------------------------------------- MEs observe
# Every context of ME 0 reads SRAM channel 0 word WATCH until it holds TARGET; before each
# read it takes TIMESTAMP_LOW (cycle / 16).  Context c stores the timestamp of the read that
# saw the value and of the one before it to scratch words 0x200 + 2c, 0x201 + 2c.  Eight
# contexts in turn put a read in flight every ~20 cycles.
WATCH_WORD, TARGET = 0x100, 0xCAFE0001
POLLER = f"""\
.me 0
.reg addr target t prev out c base $x $o
.sig s
    local_csr_rd[ACTIVE_CTX_STS]
    immed[c, 0]
    alu[c, c, AND, 7]
    alu_shf[out, --, B, c, <<3]
    immed[base, 0x800]
    alu[out, out, +, base]
    immed[addr, {WATCH_WORD * 4}]
    immed32[target, {TARGET}]
    immed[prev, 0]
loop#:
    local_csr_rd[TIMESTAMP_LOW]
    immed[t, 0]
    sram[read, $x, addr, 0, 1], ctx_swap[s]
    alu[--, $x, -, target]
    beq[found#]
    alu[prev, --, B, t]
    br[loop#]
found#:
    alu[$o, --, B, t]
    scratch[write, $o, out, 0, 1], ctx_swap[s]
    alu[$o, --, B, prev]
    scratch[write, $o, out, 4, 1], ctx_swap[s]
    ctx_arb[kill]
"""


@pytest.mark.parametrize("delay", [1000, 2345, 3001])
def test_me_sees_the_write_at_its_modelled_visibility_time(delay: int) -> None:
    raw, r = toml("ixp2800"), ratio("ixp2800")
    chip = Chip()
    chip.load(assemble_text(POLLER, "poller.uc"))
    cp = ControlProcessor(chip)
    landed: dict[str, int] = {}

    def control() -> Any:
        yield from cp.compute(delay)  # let the MEs poll for a while first
        landed["start"] = cp.now
        landed["at"] = yield from cp.sram_write(0, WATCH_WORD, TARGET)

    run_process(cp, control(), cycles=50_000)
    xs = raw["xscale"]
    visible = landed["start"] + r * (xs["call_cycles"] + xs["write_issue_cycles"]
                                     + xs["sram_write_cycles"])
    assert landed["at"] == visible
    stamps = chip.scratch()[0x200:0x210].reshape(8, 2)
    seen, before = [int(s) for s in stamps[:, 0]], [int(s) for s in stamps[:, 1]]
    assert min(before) > 0, "every context should have polled before the write"
    # a read issues 2..17 cycles after its timestamp sample (16-cycle resolution)
    assert 16 * min(seen) + 17 + OVERSHOOT >= visible       # never before it is visible
    assert 16 * max(before) + 2 < visible + OVERSHOOT        # the reads before missed it
    assert 16 * min(seen) + 2 <= visible + 100  # soon after: less than one read latency


# Context 0 of ME 1 waits until the link word holds LINK, then reads the 16 data words in one
# command and copies them to scratch words 0x300.. (a lookup following a new pointer).
DATA_WORD, LINK_WORD, LINK = 0x1000, 0x2000, 0x77
FOLLOWER = f"""\
.me 1
.reg laddr daddr out link
.xfer_order $d0 $d1 $d2 $d3 $d4 $d5 $d6 $d7 $d8 $d9 $d10 $d11 $d12 $d13 $d14 $d15
.sig s
    br!=ctx[0, done#]
    immed32[laddr, {LINK_WORD * 4}]
    immed32[daddr, {DATA_WORD * 4}]
    immed[link, {LINK}]
wait#:
    sram[read, $d0, laddr, 0, 1], ctx_swap[s]
    alu[--, $d0, -, link]
    bne[wait#]
    sram[read, $d0, daddr, 0, 16], ctx_swap[s]
""" + "".join(f"    alu[$d{i}, --, B, $d{i}]\n" for i in range(16)) + """\
    immed[out, 0xC00]
    scratch[write, $d0, out, 0, 16], ctx_swap[s]
done#:
    ctx_arb[kill]
"""


def test_barrier_orders_a_pointer_after_the_data_it_links() -> None:
    chip = Chip()
    chip.load(assemble_text(FOLLOWER, "follower.uc"))
    cp = ControlProcessor(chip)
    data = [0xA0000000 + 3 * i for i in range(16)]
    # the write log of an update: fill the node (data), barrier, then link it
    indices = [DATA_WORD + i for i in range(16)] + [LINK_WORD]
    values = data + [LINK]

    def control() -> Any:
        yield from cp.compute(500)
        yield from cp.sram_write(0, indices, values, barriers=[16])

    run_process(cp, control(), cycles=40_000)
    assert chip.scratch()[0x300:0x310].tolist() == data
    assert cp.counters()["write_groups"] == 2


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 63), min_size=1, max_size=24), st.data())
def test_groups_land_in_order_at_the_reference_times(indices: list[int], data: Any) -> None:
    """Stepping the chip one cycle at a time: a word after a barrier is never in memory
    before every word ahead of the barrier; each group lands when its last word is due."""
    raw, r = toml("ixp2800"), ratio("ixp2800")
    n = len(indices)
    barriers = sorted(set(data.draw(st.lists(st.integers(1, n), max_size=4))))
    values = [1000 + i for i in range(n)]  # distinct, never 0: a landed word shows
    chip = Chip()
    cp = ControlProcessor(chip)
    mem = chip.sram(3)
    base = 64
    cp.process(cp.sram_write(3, [base + i for i in indices], values, barriers=barriers))
    _, visible = reference_posted(raw, 0, n)
    bounds = [0, *[b for b in barriers if b < n], n]
    groups = list(zip(bounds, bounds[1:], strict=False))
    due = [r * visible[high - 1] for _, high in groups]
    landed_at: list[int | None] = [None] * len(groups)
    for _ in range(int(due[-1]) + 2):
        cp.run(cycles=1)
        for g, (low, high) in enumerate(groups):
            # a group has landed when every word of it holds its last value in the log
            final = {indices[i]: values[i] for i in range(high)}
            if landed_at[g] is None and all(
                    mem[base + indices[i]] == final[indices[i]] for i in range(low, high)):
                landed_at[g] = chip.now
        for g in range(1, len(groups)):
            if landed_at[g] is not None:
                assert landed_at[g - 1] is not None and landed_at[g - 1] <= landed_at[g]
    expected = {base + i: v for i, v in zip(indices, values, strict=True)}
    assert {k: int(mem[k]) for k in expected} == expected
    # values are distinct and memory starts at 0, so a group cannot look landed early
    assert landed_at == due


# --------------------------------------------------------------------------- rings
RING_OUT, RING_IN = 2, 3
PRODUCER = f"""\
.me 2
.reg i lim $o
.sig s
    br!=ctx[0, done#]
    immed[i, 1]
    immed[lim, 201]
loop#:
    br_inp_state[SCR_Ring{RING_OUT}_Full, full#]
    alu[$o, --, B, i]
    scratch[put, $o, {RING_OUT}, 0, 1], ctx_swap[s]
    alu[i, i, +, 1]
    alu[--, i, -, lim]
    bne[loop#]
done#:
    ctx_arb[kill]
full#:
    ctx_arb[voluntary]
    br[loop#]
"""

# Takes words from RING_IN (0 = empty ring) and stores them at SRAM channel 1 words 0, 1, ...
CONSUMER = f"""\
.me 3
.reg addr $x
.sig s
    br!=ctx[0, done#]
    immed[addr, 0]
loop#:
    scratch[get, $x, {RING_IN}, 0, 1], ctx_swap[s]
    alu[--, --, B, $x]
    beq[loop#]
    alu[$x, --, B, $x]
    immed32[a9, 0x04000000]
    alu[a10, a9, +, addr]
    sram[write, $x, a10, 0, 1], ctx_swap[s]
    alu[addr, addr, +, 4]
    br[loop#]
done#:
    ctx_arb[kill]
"""


def test_ring_round_trip_with_me_producer_and_consumer() -> None:
    chip = Chip()
    chip.configure_ring(RING_OUT, 0, 128)
    chip.configure_ring(RING_IN, 128, 128)
    chip.load(assemble_text(PRODUCER, "producer.uc"))
    chip.load(assemble_text(CONSUMER, "consumer.uc"))
    cp = ControlProcessor(chip)
    got: list[int] = []

    def control() -> Any:
        while len(got) < 200:
            words = yield from cp.ring_get(RING_OUT, 1)
            if words:
                got.extend(words)
                yield from cp.ring_put(RING_IN, [w * 10 for w in words])

    run_process(cp, control(), cycles=400_000)
    assert got == list(range(1, 201))
    chip.run(cycles=5_000)  # let the consumer store the last words
    assert chip.sram(1)[:200].tolist() == [10 * i for i in range(1, 201)]
    counters = cp.counters()
    assert counters["ring_puts"] == 200 and counters["words_written"]["scratch"] == 200


def test_ring_put_overflow_is_raised_in_the_process() -> None:
    chip = Chip()
    chip.configure_ring(4, 0, 128)
    cp = ControlProcessor(chip)
    outcome: list[str] = []

    def control() -> Any:
        yield from cp.ring_put(4, list(range(1, 121)))
        try:
            yield from cp.ring_put(4, list(range(10)))
        except OverflowError as err:
            outcome.append(str(err))

    run_process(cp, control())
    assert outcome and "ring 4" in outcome[0]
    assert chip.ring_state(4)["count"] == 120


# ME 4 puts 300 two-word exception entries (code, handle) on ring 5, waiting when it is full.
EXCEPTIONS = """\
.me 4
.reg i lim h
.xfer_order $e0 $e1
.sig s
    br!=ctx[0, done#]
    immed[i, 1]
    immed[lim, 301]
    immed[h, 9]
loop#:
    br_inp_state[SCR_Ring5_Full, full#]
    alu[$e0, --, B, i]
    alu[$e1, --, B, h]
    scratch[put, $e0, 5, 0, 2], ctx_swap[s]
    alu[i, i, +, 1]
    alu[h, h, +, 9]
    alu[--, i, -, lim]
    bne[loop#]
done#:
    ctx_arb[kill]
full#:
    ctx_arb[voluntary]
    br[loop#]
"""


def test_exception_ring_poller_gets_every_entry_in_order() -> None:
    chip = Chip()
    chip.configure_ring(5, 512, 128)
    chip.load(assemble_text(EXCEPTIONS, "exceptions.uc"))
    cp = ControlProcessor(chip)
    entries: list[list[int]] = []

    def handler(entry: list[int]) -> Any:
        entries.append(entry)
        yield from cp.scratch_write(0x40 + len(entries) % 16, entry[1])  # a costed access

    poller = cp.poll_ring(5, 2, handler, period_cycles=500)
    cp.run(cycles=600_000)
    assert entries == [[i, 9 * i] for i in range(1, 301)]
    counters = cp.counters()
    assert counters["ring_entries"] == 300 and counters["pollers"] == 1
    assert 0 < counters["busy_cycles"] < counters["elapsed_cycles"]
    poller.interrupt()
    cp.run(cycles=10)
    assert cp.counters()["pollers"] == 0


# --------------------------------------------------------------------------- idle and run
def test_idle_control_plane_runs_the_chip_in_one_call() -> None:
    chip = Chip()
    chip.load(assemble_text(".me 0\nloop#:\n    alu[a0, a0, +, 1]\n    br[loop#]\n", "s.uc"))
    cp = ControlProcessor(chip)
    result = cp.run(cycles=1_000_000)
    assert result.cycles == 1_000_000 and chip.now == 1_000_000 == cp.now
    assert cp.counters()["chip_runs"] == 1
    # a parked poller wakes once per period: one chip.run per poll
    chip.configure_ring(0, 0, 128)
    cp.poll_ring(0, 1, lambda entry: None, period_cycles=10_000)  # 20,000 ME cycles
    cp.run(cycles=200_000)
    assert cp.counters()["chip_runs"] - 1 <= 200_000 // 20_000 + 2


def test_until_idle_finishes_the_writes_and_the_chip() -> None:
    chip = Chip()
    cp = ControlProcessor(chip)
    chip.configure_ring(6, 0, 128)
    cp.poll_ring(6, 1, lambda entry: None)

    def control() -> Any:
        yield from cp.compute(3000)
        yield from cp.sram_write(0, 5, [1, 2, 3])
        yield from cp.enqueue(1, 2, (1 << 26) | 0x800)

    cp.process(control())
    result = cp.run(until_idle=True)
    assert result.reason == "idle"
    assert chip.sram(0)[5:8].tolist() == [1, 2, 3]
    assert chip.queue_handles(1, 2) == [(1 << 26) | 0x800]
    assert cp.counters()["writes_in_flight"] == 0


def test_chip_run_directly_then_cp_catches_up() -> None:
    chip = Chip()
    cp = ControlProcessor(chip)
    cp.process(cp.sram_write(0, 0, 42))
    chip.run(cycles=10_000)  # the control plane did not advance with it
    cp.run(cycles=100)
    assert int(chip.sram(0)[0]) == 42 and cp.now == chip.now == 10_100


def test_bad_requests_are_clear_errors() -> None:
    chip = Chip("ixp2400")
    cp = ControlProcessor(chip)
    with pytest.raises(ValueError, match="SRAM channel 2 does not exist"):
        next(cp.sram_read(2, 0, 1))
    with pytest.raises(ValueError, match="outside SRAM channel 0"):
        next(cp.sram_write(0, len(chip.sram(0)), [1]))
    with pytest.raises(ValueError, match="2 indices for 3 values"):
        next(cp.sram_write(0, [1, 2], [1, 2, 3]))
    with pytest.raises(ValueError, match="barriers must be positions 0..2"):
        next(cp.sram_write(0, 0, [1, 2], barriers=[3]))
    with pytest.raises(ValueError, match="ring 7 is not configured"):
        next(cp.ring_get(7, 1))
    with pytest.raises(ValueError, match="ring 7 is not configured"):
        cp.poll_ring(7, 2, lambda entry: None)
    with pytest.raises(ValueError, match="handle 0x0 must be a non-zero"):
        next(cp.enqueue(0, 1, 0))
    with pytest.raises(TypeError, match="takes a generator"):
        cp.process(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give cycles"):
        cp.run()
    assert np.asarray(chip.sram(0)[:4]).sum() == 0
