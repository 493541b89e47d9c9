"""PoptrieRouteManager's one-update calls (module.cpp's fast calls): argument binding by
position and keyword, and the prefix checks done once on entry (the host trie's own checks
are not repeated), with the messages a caller sees."""

from __future__ import annotations

import numpy as np
import pytest

from npkit.runtime.lpm import LpmError
from npkit.runtime.route_manager import PoptrieRouteManager


def manager() -> PoptrieRouteManager:
    return PoptrieRouteManager(np.zeros(1 << 21, dtype=np.uint32),
                               np.zeros(1 << 21, dtype=np.uint32))


def test_positional_and_keyword_calls_agree() -> None:
    mgr = manager()
    mgr.add(4, 0x0A000000, 8, 1)
    mgr.add(family=4, network=0x0A010000, length=16, next_hop=2)
    mgr.add(4, 0x0A020000, length=16, next_hop=3)
    mgr.reclaim()
    mgr.reclaim(None)
    mgr.reclaim(upto=mgr.sequence)
    assert mgr.routes(4) == {(0x0A000000, 8): 1, (0x0A010000, 16): 2, (0x0A020000, 16): 3}
    assert [mgr.lookup(4, a) for a in (0x0A000001, 0x0A010001, 0x0A020001, 0x0B000000)] == \
        [1, 2, 3, None]
    mgr.delete(4, 0x0A010000, length=16)
    mgr.delete(family=4, network=0x0A000000, length=8)
    mgr.reclaim()
    assert mgr.routes(4) == {(0x0A020000, 16): 3}
    assert mgr.lookup(4, 0x0A010001) is None


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.add(4, 0x0A000000, 8), "missing argument 'next_hop'"),
    (lambda m: m.add(4, 0x0A000000, 8, 1, 5), "takes at most 4 arguments"),
    (lambda m: m.delete(4, 0x0A000000, 8, hop=1), "unexpected or repeated argument 'hop'"),
    (lambda m: m.add(4, 0x0A000000, 8, 1, family=4), "unexpected or repeated argument"),
    (lambda m: m.reclaim(1, 2), "takes at most 1 arguments"),
])
def test_bad_calls_raise_type_error(call, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call(manager())


@pytest.mark.parametrize(("call", "message"), [
    (lambda m: m.add(4, 0x0A000001, 24, 1), "bad prefix 167772161/24 for 32-bit keys"),
    (lambda m: m.add(4, 1 << 32, 8, 1), r"bad prefix 4294967296/8 for 32-bit keys"),
    (lambda m: m.add(4, 1 << 64, 8, 1), r"bad prefix 18446744073709551616/8"),
    (lambda m: m.add(4, -5, 8, 1), r"bad prefix -5/8"),
    (lambda m: m.add(4, 0x0A000000, 33, 1), "bad prefix length /33 for 32-bit keys"),
    (lambda m: m.add(4, 0x0A000000, 8, 70000), "next hop 70000 out of range"),
    (lambda m: m.delete(4, 0x0A000000, 8), "no route .*/8 to delete"),
    (lambda m: m.add(6, (0x20010DB8 << 96) | 1, 32, 1), "bad prefix .*/32 for 128-bit"),
    (lambda m: m.add(6, 1 << 128, 0, 1), "bad prefix"),
])
def test_bad_prefixes_change_nothing(call, message: str) -> None:
    mgr = manager()
    mgr.add(4, 0x0B000000, 8, 7)
    with pytest.raises(LpmError, match=message):
        call(mgr)
    assert mgr.routes(4) == {(0x0B000000, 8): 7}
    assert mgr.routes(6) == {}
    assert mgr.lookup(4, 0x0A000001) is None and mgr.lookup(4, 0x0B000001) == 7
