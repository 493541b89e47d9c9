"""Configuration checks and partition geometry of MediaModel."""

from __future__ import annotations

from typing import Any

import pytest

from npkit.sim.isa import MSF_RBUF_ELEMENT_DONE, MSF_RX_THREAD_FREELIST_BASE

from .conftest import media_config
from .media_ref import TEN_GBE


@pytest.mark.parametrize(("ports", "partitions", "element", "expected"), [
    # docs/media.md, "RBUF partitions": 0 = one per port for 1, 2, 4 ports, 4 for 3, 1 beyond
    (1, 0, 128, (1, 64)), (2, 0, 128, (2, 32)), (4, 0, 64, (4, 32)), (3, 0, 256, (4, 8)),
    (6, 0, 128, (1, 64)), (2, 1, 128, (1, 64)), (4, 2, 128, (2, 32)), (1, 4, 64, (4, 32)),
])
def test_rbuf_partitions_split_the_rbuf_equally(core: Any, ports: int, partitions: int,
                                                element: int, expected: tuple[int, int]) -> None:
    media = core.MediaModel(media_config([dict(TEN_GBE)] * ports, element_bytes=element,
                                         rbuf_partitions=partitions))
    assert (media.rx_partitions, media.rx_partition_elements) == expected
    assert media.rx_freelists == MSF_RBUF_ELEMENT_DONE - MSF_RX_THREAD_FREELIST_BASE


@pytest.mark.parametrize(("change", "message"), [
    ({"element_bytes": 0}, "element_bytes"),
    ({"element_bytes": 100}, "element_bytes"),
    ({"rbuf_bytes": 64}, "at least one element"),
    ({"rbuf_partitions": 3}, "rbuf_partitions must be 1, 2 or 4"),
    ({"rbuf_bytes": 1 << 20}, "rbuf_bytes"),
    ({"me_clock_hz": 0.0}, "me_clock_hz"),
    ({"ports": [{"rate_bps": 0.0, "overhead_bytes": 20}]}, "rate_bps"),
    ({"ports": [{"rate_bps": 1e9, "overhead_bytes": -1}]}, "overhead_bytes"),
    ({"ports": [{"rate_bps": 1e9, "overhead_bytes": 20, "rx_freelist": 16}]}, "rx_freelist"),
    ({"ports": [{"overhead_bytes": 20}]}, "missing key 'rate_bps'"),
    ({"ports": [5]}, "expected a dict"),
])
def test_bad_config_is_a_value_error(core: Any, change: dict[str, Any], message: str) -> None:
    cfg = media_config([dict(TEN_GBE)])
    cfg.update(change)
    with pytest.raises(ValueError, match=message):
        core.MediaModel(cfg)


def test_missing_top_level_key(core: Any) -> None:
    cfg = media_config([dict(TEN_GBE)])
    del cfg["autopush_latency"]
    with pytest.raises(ValueError, match="missing key 'autopush_latency'"):
        core.MediaModel(cfg)


def test_bad_frames_are_value_errors(make_media: Any) -> None:
    media = make_media([dict(TEN_GBE)])
    with pytest.raises(ValueError, match="no port 1"):
        media.add_rx_frame(1, b"x")
    with pytest.raises(ValueError, match="1..65535"):
        media.add_rx_frame(0, b"")
