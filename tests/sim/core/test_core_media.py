"""The chip and the media model together: receive a frame, move it through DRAM, send it."""

from __future__ import annotations

import pytest
from coreprog import (
    NONE,
    A,
    B,
    X,
    alu,
    chip_config,
    ctx_arb,
    immed,
    kill,
    mem,
    single_context,
)

from npkit.sim import _core, isa

COVERED = frozenset({"msf", "msf.read", "msf.write", "msf.fast_wr", "dram.rbuf_rd",
                     "dram.tbuf_wr"})

SIG_RX, SIG_DMA, SIG_MSF = 3, 4, 5
DRAM_BUF = 0x1000


def one_port_core(seed: int = 1) -> _core.Core:
    cfg = chip_config()
    cfg["ports"] = [{"rate_bps": 10e9, "overhead_bytes": 20, "rx_freelist": 0}]
    return _core.Core(cfg, seed)


def wire_program(quadwords: int) -> list[int]:
    """Receive one frame, copy it RBUF -> DRAM -> TBUF, transmit it, free the RBUF."""
    return [
        # register on freelist 0: status into $0/$1, signal SIG_RX
        mem("msf", "fast_wr", None, B(0), A(0), sig=0),
        ctx_arb(SIG_RX),
        alu(A(2), X(1), "AND", B(2)),                 # first element
        alu(A(3), NONE, "B", A(2), "<<", 7),          # x element_bytes (128)
        mem("dram", "rbuf_rd", None, B(1), A(3), count=quadwords, sig=SIG_DMA, swap=True),
        mem("dram", "tbuf_wr", None, B(1), B(5), count=quadwords, sig=SIG_DMA, swap=True),
        # control word: the receive status word 0 as it is (length | port << 16 | SOP |
        # EOP): a one-element frame's TBUF control word has the same layout
        alu(X(2), NONE, "B", X(0)),
        mem("msf", "write", 2, B(3), NONE, sig=SIG_MSF, swap=True),
        mem("msf", "read", 4, A(3), NONE, count=2, sig=SIG_MSF, swap=True),  # RBUF bytes
        mem("msf", "fast_wr", None, B(4), X(1), sig=SIG_MSF, swap=True),   # free elements
    ]


def set_wire_registers(core: _core.Core) -> None:
    regs = {A(0): SIG_RX << 8 | 0, B(0): isa.MSF_RX_THREAD_FREELIST_BASE, B(1): DRAM_BUF,
            B(2): 0xFFFF, B(3): isa.MSF_TBUF_CTL_BASE, B(4): isa.MSF_RBUF_ELEMENT_DONE, B(5): 0}
    for code, value in regs.items():
        core.write_reg(0, 0, code, value)


@pytest.mark.parametrize("length", [64, 100, 128])
def test_frame_goes_through_rbuf_dram_tbuf(length):
    frame = bytes((7 * i + 3) & 0xFF for i in range(length))
    core = one_port_core()
    core.load(0, single_context(wire_program((length + 7) // 8)))
    set_wire_registers(core)
    core.add_rx_frame(0, frame)
    assert core.run(1_000_000, until_idle=True) == "idle"
    tx = core.take_tx()
    assert len(tx) == 1
    port, first_bit, last_bit, data = tx[0]
    assert (port, data) == (0, frame)
    wire_cycles = (length + 20) * 8 / 10e9 * 1.4e9
    assert last_bit - first_bit == pytest.approx(wire_cycles, abs=1)
    assert bytes(core.dram()[DRAM_BUF:DRAM_BUF + length]) == frame
    # msf[read] of the RBUF gives the first bytes big-endian
    assert core.read_reg(0, 0, X(4)) == int.from_bytes(frame[0:4], "big")
    assert core.read_reg(0, 0, X(5)) == int.from_bytes(frame[4:8], "big")
    port_counters = core.counters()["ports"][0]
    assert port_counters["rx_frames"] == port_counters["tx_frames"] == 1
    assert port_counters["rbuf_elements_in_use"] == 0


def test_stop_after_tx_frames():
    core = one_port_core()
    core.load(0, single_context(wire_program(8) + [immed(A(9), 0)]))
    set_wire_registers(core)
    core.add_rx_frame(0, bytes(64))
    assert core.run(10_000_000, stop_tx_frames=1) == "frames"
    assert len(core.take_tx()) == 1


def test_threads_waiting_for_frames_are_not_a_deadlock():
    core = one_port_core()
    core.load(0, single_context([mem("msf", "fast_wr", None, B(0), A(0)), ctx_arb(SIG_RX), kill()]))
    set_wire_registers(core)
    assert core.run(100_000) == "cycles"
    assert core.now == 100_000
    core.add_rx_frame(0, bytes(64))
    assert core.run(100_000, until_idle=True) == "idle"
    assert core.context(0, 0)["state"] == "inactive"
    status0 = core.read_reg(0, 0, X(0))
    assert status0 & 0xFFFF == 64 and status0 >> 24 & 3 == 3  # SOP and EOP


def test_tx_sequence_read():
    core = one_port_core()
    core.load(0, single_context(wire_program(8) + [
        mem("msf", "read", 6, B(6), NONE, sig=SIG_MSF, swap=True)]))
    set_wire_registers(core)
    core.write_reg(0, 0, B(6), isa.MSF_TX_SEQUENCE_BASE)
    core.add_rx_frame(0, bytes(range(64)))
    core.run(1_000_000, until_idle=True)
    assert core.read_reg(0, 0, X(6)) in (0, 1)  # 1 once the frame has left
    assert len(core.take_tx()) == 1
