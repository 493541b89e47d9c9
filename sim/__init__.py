"""The simulated chip: config, the ``Chip`` façade over the C++ core, packet I/O, traces.

``from npkit.sim import Chip, ChipConfig, Port, SimFault`` -- see docs/python-api.md.

``npkit.sim`` imports nothing of npkit but ``npkit.base`` (docs/architecture.md, "Layers"):
its data -- the ISA table (``npkit.sim.isa``) and chip configs (``npkit.sim.config``) -- is
read by the compiler, and the chip (``chip``, ``packets``, ``trace``) knows nothing of the
compiler (loading manifests is ``npkit.runtime.loader``'s job).  This package re-exports
lazily (PEP 562): ``import npkit.sim.isa`` loads the ISA table and nothing of the chip, and
a name below is imported on first use.  The C++ core
(``npkit.sim._core``) is imported only when a ``Chip`` is made.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Chip", "ChipSnapshot", "LoadError", "Progress", "RunResult", "SimFault"),
                    "chip"),
    **dict.fromkeys(("ChipConfig", "ConfigError", "Port"), "config"),
    **dict.fromkeys(("Generator", "ListSink", "ListSource", "PacketFileError", "PcapSink",
                     "PcapSource", "RxFrame", "TxFrame", "parse_tag", "read_packets"), "packets"),
    **dict.fromkeys(("Span", "trace_events", "write_trace"), "trace"),
}

__all__ = [
    "Chip", "ChipConfig", "ChipSnapshot", "ConfigError", "Generator", "ListSink", "ListSource",
    "LoadError", "PacketFileError", "PcapSink", "PcapSource", "Port", "Progress", "RunResult",
    "RxFrame", "SimFault", "Span", "TxFrame", "parse_tag", "read_packets", "trace_events",
    "write_trace",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # the same names for type checkers (and for import-linter's graph)
    from .chip import Chip, ChipSnapshot, LoadError, Progress, RunResult, SimFault
    from .config import ChipConfig, ConfigError, Port
    from .packets import (
        Generator,
        ListSink,
        ListSource,
        PacketFileError,
        PcapSink,
        PcapSource,
        RxFrame,
        TxFrame,
        parse_tag,
        read_packets,
    )
    from .trace import Span, trace_events, write_trace
