"""One test per fault kind: kind, me, ctx and pc of the SimFault; bad config keys."""

from __future__ import annotations

import numpy as np
import pytest
from coreprog import (
    NONE,
    A,
    B,
    X,
    alu,
    chip_config,
    ctx_arb,
    enc,
    immed,
    kill,
    make_core,
    mem,
    single_context,
)

from npkit.sim import _core, isa
from npkit.sim._core import SimFault


def fault_of(core, cycles=100_000) -> SimFault:
    with pytest.raises(SimFault) as info:
        core.run(cycles)
    return info.value


def where(f: SimFault) -> tuple[str, int, int, int]:
    return f.kind, f.me, f.ctx, f.pc


def test_simfault_is_a_runtime_error():
    assert issubclass(SimFault, RuntimeError)


@pytest.mark.parametrize("unit,address", [("sram", 8 << 20), ("sram", 3), ("scratch", 16384),
                                          ("dram", 256 << 20), ("dram", 4)])
def test_bad_address(unit, address):
    core = make_core()
    read = mem(unit, "read", 0, A(1), NONE, sig=1, swap=True)
    core.load(4, single_context([immed(A(0), 0), read]))
    for ctx in range(8):
        core.write_reg(4, ctx, A(1), address)
    f = fault_of(core)
    assert where(f) == ("bad_address", 4, 0, 2)


def test_bad_local_memory_address():
    core = make_core()
    words = [enc("local_csr", write=1, csr=isa.LOCAL_CSRS["ACTIVE_LM_ADDR_1"], src=B(0))]
    words += [immed(A(0), 0)] * 3 + [alu(A(1), NONE, "B", 0xA0 + 15)]  # *l$index1[15]
    core.load(2, words)
    for ctx in range(8):
        core.write_reg(2, ctx, B(0), 640 * 4 - 8)
    assert where(fault_of(core)) == ("bad_address", 2, 0, 4)


def test_illegal_reserved_opcode_at_load():
    core = make_core()
    words = [immed(A(0), 1), immed(A(0), 2), 31 << isa.PAYLOAD_BITS]
    with pytest.raises(SimFault) as info:
        core.load(3, words)
    assert where(info.value) == ("illegal_instruction", 3, -1, 2)


def test_illegal_reserved_bits_at_load():
    core = make_core()
    with pytest.raises(SimFault) as info:
        core.load(0, [enc("nop") | 1])
    assert where(info.value) == ("illegal_instruction", 0, -1, 0)


def test_register_beyond_the_context_file_is_illegal_in_8_context_mode_only():
    core = make_core()
    word = alu(A(20), A(0), "+", B(0))
    with pytest.raises(SimFault) as info:
        core.load(1, [kill(), word], 8)
    assert where(info.value) == ("illegal_instruction", 1, -1, 1)
    assert "out of range" in info.value.message
    core.load(1, [kill(), word], 4)  # 32 per context in 4-context mode


def test_word_wider_than_40_bits_is_illegal():
    core = make_core()
    with pytest.raises(SimFault) as info:
        core.load(0, np.array([enc("nop"), 1 << 45], dtype=np.uint64))
    assert where(info.value) == ("illegal_instruction", 0, -1, 1)


def test_illegal_mul_step_sequence_at_run_time():
    core = make_core()
    core.load(0, single_context([enc("mul_step", step=isa.MUL_STEPS["16x16_last"], dest=A(0),
                                     a=NONE, b=NONE)]))
    assert where(fault_of(core)) == ("illegal_instruction", 0, 0, 1)


def test_branch_in_a_defer_slot_is_illegal():
    core = make_core()
    words = [enc("br", cond=0, target=1, defer=1), enc("br", cond=0, target=1)]
    core.load(0, single_context(words))
    assert where(fault_of(core)) == ("illegal_instruction", 0, 0, 2)


def test_image_larger_than_the_control_store():
    cfg = chip_config("ixp2400")
    core = _core.Core(cfg, 1)
    with pytest.raises(SimFault) as info:
        core.load(0, [enc("nop")] * (cfg["me"]["control_store_words"] + 1))
    assert info.value.kind == "control_store_overflow" and info.value.me == 0


def test_pc_running_off_the_end():
    core = make_core()
    core.load(6, single_context([immed(A(0), 1)])[:-1])  # no final kill
    assert where(fault_of(core)) == ("control_store_overflow", 6, 0, 2)


def test_jump_beyond_the_control_store():
    core = make_core()
    core.load(0, single_context([enc("jump", reg=B(0), target=0)]))
    core.write_reg(0, 0, B(0), 9000)
    assert where(fault_of(core)) == ("control_store_overflow", 0, 0, 1)


def test_ring_overflow():
    core = make_core()
    core.configure_ring(4, 0, 128)
    put = mem("scratch", "put", 0, B(0), NONE, count=16, sig=1, swap=True)
    core.load(0, single_context([put] * 9))
    core.write_reg(0, 0, B(0), 4)
    assert where(fault_of(core)) == ("ring_overflow", 0, 0, 9)


def test_deadlock_names_the_waiting_contexts():
    core = make_core()
    core.load(9, single_context([ctx_arb(4, 6, mode="any")]))
    f = fault_of(core)
    assert where(f) == ("deadlock", 9, 0, 2)
    assert "me 9 ctx 0" in f.message and "any of signals {4,6}" in f.message


def test_deadlock_after_deadlock_cycles_without_progress():
    cfg = chip_config()
    cfg["run"]["deadlock_cycles"] = 100
    core = _core.Core(cfg, 1)
    # ME 0 waits for a signal that never comes while ME 1 sleeps on slow SRAM reads
    core.load(0, single_context([ctx_arb(2)]))
    core.load(1, [mem("sram", "read", 0, NONE, NONE, sig=1, swap=True)] * 3 + [kill()])
    f = fault_of(core)
    assert f.kind == "deadlock" and "deadlock_cycles" in f.message


def test_bad_command_queue_number_at_run_time():
    core = make_core()
    core.load(0, single_context([mem("sram", "dequeue", 0, B(0), NONE, sig=1, swap=True)]))
    core.write_reg(0, 0, B(0), 64)  # queue 64 of channel 0: only 64 descriptors
    assert where(fault_of(core)) == ("bad_command", 0, 0, 1)


def test_bad_command_unconfigured_ring():
    core = make_core()
    core.load(0, single_context([mem("scratch", "get", 0, B(0), NONE, sig=1, swap=True)]))
    core.write_reg(0, 0, B(0), 3)
    assert where(fault_of(core)) == ("bad_command", 0, 0, 1)


def test_bad_command_count_at_load():
    core = make_core()
    with pytest.raises(SimFault) as info:
        core.load(0, [kill(), mem("sram", "incr", None, NONE, NONE, count=2)])
    assert where(info.value) == ("bad_command", 0, -1, 1)


def test_media_fault_names_the_issuer():
    cfg = chip_config()
    cfg["ports"] = [{"rate_bps": 10e9, "overhead_bytes": 20, "rx_freelist": 0}]
    core = _core.Core(cfg, 1)
    # free RBUF elements that were never handed out
    core.load(5, single_context([mem("msf", "fast_wr", None, B(0), B(1), sig=1, swap=True)]))
    core.write_reg(5, 0, B(0), isa.MSF_RBUF_ELEMENT_DONE)
    core.write_reg(5, 0, B(1), 0 | 1 << 16)
    assert where(fault_of(core)) == ("media", 5, 0, 1)


@pytest.mark.parametrize("section,key,value", [
    ("sram", "latency", -1), ("sram", "latency", "fast"), ("me", "control_store_words", 0),
    ("dram", "bytes_per_cycle", 0), ("msf", "element_bytes", 100), ("run", "burst_cycles", 0),
])
def test_bad_config_values_name_the_key(section, key, value):
    cfg = chip_config()
    cfg[section][key] = value
    with pytest.raises(ValueError, match=f"{section}.{key}"):
        _core.Core(cfg, 1)


def test_missing_config_key_is_named():
    cfg = chip_config()
    del cfg["scratch"]["latency"]
    with pytest.raises(ValueError, match="scratch.latency"):
        _core.Core(cfg, 1)


def test_bad_port_entry_is_named():
    cfg = chip_config()
    cfg["ports"] = [{"rate_bps": 10e9, "overhead_bytes": 20}]
    with pytest.raises(ValueError, match=r"ports\[0\].rx_freelist"):
        _core.Core(cfg, 1)


def test_host_side_argument_errors_are_python_errors():
    core = make_core()
    with pytest.raises(IndexError):
        core.load(16, [kill()])
    with pytest.raises(ValueError):
        core.load(0, [kill()], ctx_mode=2)
    with pytest.raises(ValueError):
        core.configure_ring(0, 0, 100)
    with pytest.raises(IndexError):
        core.sram(4)
    with pytest.raises(ValueError):
        core.enqueue(0, 1, 0)
    with pytest.raises(IndexError):
        core.add_rx_frame(0, b"x" * 64)  # no ports configured
    with pytest.raises(SimFault):
        core.load(0, [-1])
    assert core.read_reg(0, 0, X(0)) == 0
