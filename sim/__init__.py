"""The simulated chip: config, the ``Chip`` façade over the C++ core, packet I/O, traces.

``from npkit.sim import Chip, ChipConfig, Port, SimFault`` -- see docs/python-api.md.
The C++ core (``npkit.sim._core``) is imported when a ``Chip`` is made, so configs,
packet files and traces work without a built core.
"""

from .chip import Chip, LoadError, Progress, RunResult, SimFault
from .config import ChipConfig, ConfigError, Port
from .packets import (
    Generator,
    ListSink,
    ListSource,
    PacketIOError,
    PcapSink,
    PcapSource,
    RxFrame,
    TxFrame,
    parse_tag,
    read_pcap,
)
from .trace import Span, trace_events, write_trace

__all__ = [
    "Chip", "ChipConfig", "ConfigError", "Generator", "ListSink", "ListSource", "LoadError",
    "PacketIOError", "PcapSink", "PcapSource", "Port", "Progress", "RunResult", "RxFrame",
    "SimFault", "Span", "TxFrame", "parse_tag", "read_pcap", "trace_events", "write_trace",
]
