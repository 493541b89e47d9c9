"""Mappings of hand-written pipelines, as data for the report and `npkit graph`."""

from __future__ import annotations

from npkit.microblocks.uc.router4 import LAYOUT, Layout

from .abi import Mapping, MEAssignment

ROUTER4_STAGES = ("eth_classify", "ipv4_fwd")   # the MBL blocks ipv4_fwd.uc implements


def router4_mapping(layout: Layout = LAYOUT) -> Mapping:
    """router4 (examples/router4/README.md, microblocks/uc/router4.h): per port p, rx ME p
    alternates frames between RX rings 2p (role A) and 2p + 1 (role B); fwd ME 2 + 2p (A)
    hands its verdicts to ME 3 + 2p (B) on B's next-neighbour ring, B puts both on the TX
    ring of the output port; both put exceptions on the exception ring; tx ME 6 + q sends
    TX ring 4 + q to port q."""
    ports = tuple(range(layout.ports))
    tx_rings = tuple(f"ring {layout.tx_ring(q)}" for q in ports)
    exception = f"exception ring {layout.exc_ring}"
    mes = [MEAssignment(me=p, role="rx", reads=(f"port {p}",),
                        writes=(f"ring {layout.rx_ring(p, 0)}", f"ring {layout.rx_ring(p, 1)}"),
                        image="rx_eth.uc") for p in ports]
    for p in ports:
        a = layout.fwd_first_me + 2 * p
        mes.append(MEAssignment(me=a, role="fwd", stages=ROUTER4_STAGES,
                                reads=(f"ring {layout.rx_ring(p, 0)}",),
                                writes=(f"nn {a + 1}", exception), image="ipv4_fwd.uc (A)"))
        mes.append(MEAssignment(me=a + 1, role="fwd", stages=ROUTER4_STAGES,
                                reads=(f"ring {layout.rx_ring(p, 1)}", f"nn {a + 1}"),
                                writes=(*tx_rings, exception), image="ipv4_fwd.uc (B)"))
    mes += [MEAssignment(me=layout.tx_first_me + q, role="tx",
                         reads=(f"ring {layout.tx_ring(q)}",), writes=(f"port {q}",),
                         image="tx_eth.uc") for q in ports]
    return Mapping(pipeline="router4", ports=ports, mes=tuple(mes))
