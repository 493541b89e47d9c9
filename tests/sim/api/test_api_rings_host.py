"""Host access to scratch rings (the control processor's side): the same all-or-nothing
semantics as the MEs' scratch[put]/scratch[get] (docs/architecture.md)."""

import pytest

from npkit.sim import Chip


def test_host_put_then_get_is_fifo_and_all_or_nothing():
    chip = Chip()
    chip.configure_ring(3, 0, 128)
    chip.ring_put(3, [1, 2, 3])
    assert chip.ring_get(3, 2) == [1, 2]
    assert chip.ring_get(3, 2) == []          # only one word left: nothing taken
    assert chip.ring_get(3, 1) == [3]
    state = chip.ring_state(3)
    assert (state["count"], state["high_water"], state["puts"]) == (0, 3, 1)


def test_host_put_wraps_and_refuses_overflow():
    chip = Chip()
    chip.configure_ring(0, 256, 128)
    for start in range(0, 400, 100):          # wraps the 128-word ring several times
        chip.ring_put(0, list(range(start, start + 100)))
        assert chip.ring_get(0, 100) == list(range(start, start + 100))
    chip.ring_put(0, [7] * 128)
    with pytest.raises(OverflowError, match="holding 128 of 128"):
        chip.ring_put(0, [8])
    assert chip.scratch()[256:256 + 128].tolist() == [7] * 128


def test_host_ring_errors_name_the_ring():
    chip = Chip()
    with pytest.raises(ValueError, match="ring 5 is not configured"):
        chip.ring_get(5)
    with pytest.raises(ValueError, match="does not exist"):
        chip.ring_put(99, [1])
