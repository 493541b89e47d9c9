"""examples/l2fwd (DPDK's l2fwd port pairing) as a lab device on the simulated IXP2800.

``L2fwdChipDevice`` is a ``CompiledChipDevice`` of ``examples/l2fwd/l2fwd.mbl`` (entry
``l2fwd``) on four 10GbE ports; what it promises differs from the router's, so the
analyzer's reference is ``L2fwdReference`` instead of a route table's:

* a frame in on port p leaves on p ^ 1 (0 <-> 1, 2 <-> 3);
* its destination MAC is 02:00:00:00:00:<out port>, its source MAC 02:00:00:00:01:<out port>
  (l2fwd's "MAC updating"; the constants of l2fwd.mbl, written again here from its README
  rather than imported, so a change to the program shows as corrupted frames);
* every other byte, the IP packet included, is unchanged (no TTL decrement: l2fwd is not a
  router).

The program has no tables; its traffic goes to RFC 2544's test network of the output port
(``rfc2544.BenchmarkNetwork``), which l2fwd never reads.  The reference is a plain callable,
so trials are analysed by the Python analyzer (frame by frame: fine for the short trials
of ``npkit bench compare``) on the held path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from npkit.bench.lab.devices import ChipOptions, CompiledChipDevice, example_path
from npkit.bench.lab.rfc2544 import BenchmarkNetwork
from npkit.bench.tester.packet import Parsed
from npkit.bench.tester.reference import Expected
from npkit.bench.tester.stream import Destinations

L2FWD_DST_BASE = 0x02_00_00_00_00_00  # + out port (examples/l2fwd/README.md)
PORT_MAC_BASE = 0x02_00_00_00_01_00  # + out port: the example's name for the port's MAC
PORTS = 4


def l2fwd_out_port(in_port: int) -> int:
    """The port l2fwd pairs ``in_port`` with."""
    return in_port ^ 1


@dataclass(frozen=True)
class L2fwdReference:
    """What l2fwd sends for a frame the tester sent (see the module doc)."""

    def __call__(self, tx: Any, parsed: Parsed) -> Expected:
        out = l2fwd_out_port(tx.port)
        link = ((L2FWD_DST_BASE | out).to_bytes(6, "big")
                + (PORT_MAC_BASE | out).to_bytes(6, "big") + parsed.link[12:])
        return Expected(out, link, parsed.ip)


class L2fwdChipDevice(CompiledChipDevice):
    """examples/l2fwd on the simulated IXP2800 with four 10GbE ports."""

    def __init__(self, options: ChipOptions | None = None, *, fwd_mes_per_port: int = 2,
                 streamed: bool = False, **_ignored: Any) -> None:
        options = options or ChipOptions(port_kinds=("10gbe",) * PORTS)
        super().__init__(options, source=example_path("l2fwd", "l2fwd.mbl"), entry="l2fwd",
                         fwd_mes_per_port=fwd_mes_per_port, streamed=streamed)
        self.name = "compiled:l2fwd"

    def describe(self) -> dict[str, Any]:
        o = self.options
        return {"device": "compiled", "source": self.source.name, "entry": self.entry,
                "fwd_mes_per_port": self.fwd_mes_per_port, "port_kinds": list(o.port_kinds),
                "chip": "ixp2800", "chip_seed": o.chip_seed,
                "pairs": "0<->1, 2<->3 (in port ^ 1)",
                "destinations": "RFC 2544 test network of the output port (not read)"}

    @cached_property
    def tables(self) -> Any:
        return None  # no route table: rfc2544.destinations_for gives the test network

    def destinations(self, family: int, out_port: int, count: int,
                     seed: int = 1) -> Destinations:
        return BenchmarkNetwork(count)(out_port, family)

    @cached_property
    def reference(self) -> L2fwdReference:  # type: ignore[override]
        return L2fwdReference()

    @cached_property
    def native(self) -> Any:
        """The program natively, with no tables (l2fwd has none)."""
        from npkit.compiler.mbl import NativeProgram

        return NativeProgram(self.program, self.entry)
