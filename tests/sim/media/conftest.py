"""Fixtures for the media-model tests: the `MediaModel` class from the simulator core.

The tests drive `npkit.sim._core.MediaModel` (the media model alone, with a host that records
autopushes).  NPKIT_MEDIA_MODULE names another module to take it from (a private build of
the media files while the core is not wired up).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from .media_ref import ME_CLOCK_HZ, TEN_GBE


@pytest.fixture(scope="session")
def core() -> ModuleType:
    name = os.environ.get("NPKIT_MEDIA_MODULE", "npkit.sim._core")
    module = importlib.import_module(name)
    if not hasattr(module, "MediaModel"):
        pytest.fail(f"{name} has no MediaModel: the core module must call bind_media(m)")
    return module


def media_config(ports: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "rbuf_bytes": 8192,
        "tbuf_bytes": 8192,
        "element_bytes": 128,
        "autopush_latency": 20,
        "me_clock_hz": ME_CLOCK_HZ,
        "ports": ports,
    }
    cfg.update(overrides)
    return cfg


@pytest.fixture
def make_media(core: ModuleType) -> Callable[..., Any]:
    def make(ports: list[dict[str, Any]] | None = None, **overrides: Any) -> Any:
        return core.MediaModel(media_config(ports or [dict(TEN_GBE)], **overrides))

    return make
