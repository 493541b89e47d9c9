"""The simulated lab's tester: a traffic generator and analyzer (the Spirent/Ixia of npkit).

    from npkit.bench.tester import (Stream, Sizes, pick_destinations, generate, Analyzer,
                                    RouteReference, PassThrough)

    dests = {4: pick_destinations(routes.v4, 4, 2000, seed=1)}
    stream = Stream(id=1, port=0, framing="pos", sizes=Sizes.fixed(40), count=10_000,
                    destinations=dests)
    traffic = generate([stream], {0: "oc192pos", 1: "oc192pos"})
    # ... run the device (npkit.bench.tester.chip.attach / received for the simulated chip)
    report = Analyzer(ports, RouteReference(...)).analyze(traffic.records(), rx_records)

Modules: ``media`` (port kinds, sizes, exact wire time), ``packet`` (packets, signature),
``destinations``, ``stream`` (streams, their phases), ``generator``, ``reference``
(expected output), ``results`` (records and reports), ``analyzer``, ``chip`` (the simulated
chip adapter, held or streamed; imports npkit.sim), ``tally`` (a streamed trial's per-port
counts without the frames).  The per-frame work runs in C++
(``_fast``, built from ``cpp/``): ``fast`` (generation in batches) and ``fast_analysis``
(the analyzer's bookkeeping); ``generate`` and ``Analyzer.analyze`` use them and give what
the pure-Python ``generate_python`` / ``Analyzer.analyze_python`` give (docs/lab.md, "The
tester without Python per frame").
"""

from npkit.bench.tester.analyzer import Analyzer, Latency, Report, RxRecord, StreamStats
from npkit.bench.tester.destinations import DestinationSet, Prefix, pick_destinations
from npkit.bench.tester.generator import Traffic, TxRecord, generate
from npkit.bench.tester.media import (
    ETHERNET_SIZES,
    IMIX_SIZES,
    IMIX_WEIGHTS,
    PORT_MODELS,
    POS_IPV4_SIZES,
    PortModel,
    port_model,
)
from npkit.bench.tester.packet import parse, read_signature, smallest_ip
from npkit.bench.tester.reference import Expected, PassThrough, RouteReference, forwarded_ip
from npkit.bench.tester.stream import (
    PHASE_WINDOW_PS,
    FixedDestinations,
    Sizes,
    Stream,
    out_of_phase,
    phase_offset,
    standard_sizes,
)

__all__ = [
    "ETHERNET_SIZES", "IMIX_SIZES", "IMIX_WEIGHTS", "PHASE_WINDOW_PS", "POS_IPV4_SIZES",
    "PORT_MODELS", "Analyzer",
    "DestinationSet", "Expected", "FixedDestinations", "Latency", "PassThrough", "PortModel",
    "Prefix", "Report", "RouteReference", "RxRecord", "Sizes", "Stream", "StreamStats",
    "Traffic", "TxRecord", "forwarded_ip", "generate", "out_of_phase", "parse",
    "phase_offset", "pick_destinations", "port_model", "read_signature", "smallest_ip",
    "standard_sizes",
]
