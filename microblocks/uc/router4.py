"""The layout of the hand-written IPv4 router (rx_eth.uc, ipv4_fwd.uc, tx_eth.uc) for Python:
the tests and the control plane import it from here, and only from here.

``LAYOUT`` holds the numbers of router4.h (``npkit.link.media``, which the linker plans the
compiled programs' media stages with; tests/examples/test_router4_layout.py checks every one
against the header and the manifest).  ``mapping()`` is router4's ME mapping as data.
The helpers read and write the router's structures in a loaded chip: buffers and
metadata, the next-hop records, local4 and the route trie (a ``MultibitTrie`` over a
numpy view of the trie's SRAM region).

Injecting a frame from the XScale (README.md, "Control plane"): ``inject(chip, port,
frame)`` takes a buffer from the XScale's freelist, writes the frame and metadata LW1..LW3
as receive does, and puts the handle on the port's TX ring; transmit returns the buffer to
the XScale's freelist.  An exception is ``(handle, code << 16 | next_hop)`` on the
exception ring: ``take_exception`` reads one, with the frame, and frees the buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from npkit.compiler.me.abi import Mapping, MEAssignment
from npkit.link.media import Layout as MediaLayout

FOLDER = Path(__file__).resolve().parent
MANIFEST = FOLDER.parents[1] / "examples" / "router4" / "router4.toml"

DROP_REASONS = ("runt", "not_ipv4", "ip_too_short", "bad_version", "bad_ihl", "bad_length",
                "bad_checksum", "martian_source", "martian_destination")
EXCEPTIONS = {"ttl_expired": 1, "no_route": 2, "options": 3, "for_router": 4,
              "frag_needed": 5, "fragment": 6, "not_ipv4": 0x100}
ROUTER4_STAGES = ("eth_classify", "ipv4_fwd")   # the MBL blocks ipv4_fwd.uc implements


@dataclass(frozen=True)
class Layout(MediaLayout):
    """router4.h, number for number: the media stages' numbers (npkit.link.media) and the
    forwarding stage's counters and SRAM tables."""

    cnt_ip_forwarded: int = 0x3024
    cnt_bad_port: int = 0x3028
    cnt_words: int = 18
    # SRAM tables
    table_channel: int = 2
    local4_offset: int = 0x1000
    local4_size: int = 16
    local4_entry_bytes: int = 12
    trie_offset: int = 0x10000
    trie_words: int = 2080768
    nh_channel: int = 3
    nh_offset: int = 0x20000
    nh_size: int = 1024
    nh_entry_bytes: int = 16
    exact_hash_multiplier: int = 0x9E3779B1

    def drop_counter(self, reason: str) -> int:
        """Scratch byte address of a drop reason's counter."""
        return self.cnt_base + 4 * DROP_REASONS.index(reason)


LAYOUT = Layout()

__all__ = ["DROP_REASONS", "EXCEPTIONS", "FOLDER", "LAYOUT", "MANIFEST", "Layout", "counters",
           "inject", "local4_add", "mapping", "read_frame", "take_exception", "trie_view",
           "write_next_hop"]


# --------------------------------------------------------------------------- mapping
def mapping(layout: Layout = LAYOUT) -> Mapping:
    """router4 (examples/router4/README.md, microblocks/uc/router4.h) as data for the report
    and `npkit graph`: per port p, rx ME p alternates frames between RX rings 2p (role A)
    and 2p + 1 (role B); fwd ME 2 + 2p (A) hands its verdicts to ME 3 + 2p (B) on B's
    next-neighbour ring, B puts both on the TX ring of the output port; both put exceptions
    on the exception ring; tx ME 6 + q sends TX ring 4 + q to port q."""
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


# --------------------------------------------------------------------------- tables
def sram_words(chip: Any, channel: int, offset: int, words: int) -> np.ndarray:
    """A uint32 view of ``words`` words of an SRAM channel from byte ``offset``."""
    return chip.sram(channel)[offset // 4:offset // 4 + words]


def trie_view(chip: Any, layout: Layout = LAYOUT) -> np.ndarray:
    """The fib4_trie region: pass it to ``npkit.runtime.lpm.MultibitTrie(IPV4, view)``
    (CHILD pointers are word offsets relative to this view's first word)."""
    return sram_words(chip, layout.table_channel, layout.trie_offset, layout.trie_words)


def write_next_hop(chip: Any, index: int, dmac: int, smac: int, port: int, mtu: int,
                   layout: Layout = LAYOUT) -> None:
    """nexthops[index] = dmac 48 | smac 48 | port 16 | mtu 16, most significant first."""
    if not 0 <= index < layout.nh_size:
        raise ValueError(f"next-hop index {index} outside 0..{layout.nh_size - 1}")
    value = (dmac << 80) | (smac << 32) | (port << 16) | mtu
    words = [(value >> (32 * (3 - k))) & 0xFFFFFFFF for k in range(4)]
    first = layout.nh_offset + index * layout.nh_entry_bytes
    sram_words(chip, layout.nh_channel, first, 4)[:] = words


def exact_hash(key: int) -> int:
    """The home-slot hash of a one-word key (compiler/mbl/native.py ``exact_hash``)."""
    from npkit.compiler.mbl.native import exact_hash as mbl_exact_hash

    return mbl_exact_hash(key, 1)


def local4_add(chip: Any, address: int, value: int = 1, layout: Layout = LAYOUT) -> int:
    """Add one of the router's IPv4 addresses to local4 as the MBL runtime's table_add
    does: the first empty slot (or the key's own) from exact_hash(key) & (size - 1).
    Returns the slot."""
    table = sram_words(chip, layout.table_channel, layout.local4_offset,
                       layout.local4_size * 3).reshape(layout.local4_size, 3)
    home = exact_hash(address)
    for i in range(layout.local4_size):
        slot = (home + i) & (layout.local4_size - 1)
        if not int(table[slot, 0]) & 0x8000_0000 or int(table[slot, 2]) == address:
            table[slot] = [0x8000_0000, value, address]
            return slot
    raise ValueError(f"local4 is full ({layout.local4_size} entries)")


# --------------------------------------------------------------------------- buffers
def _meta(chip: Any, handle: int) -> np.ndarray:
    channel = (handle >> 26) & 3
    first = (handle & 0x03FFFFFF) // 4
    return chip.sram(channel)[first:first + LAYOUT.meta_words]


def read_frame(chip: Any, handle: int, layout: Layout = LAYOUT) -> bytes:
    """The frame a handle's metadata describes (LW1: offset << 16 | size)."""
    lw1 = int(_meta(chip, handle)[1])
    start = layout.buffer_address(handle) + (lw1 >> 16)
    return bytes(chip.dram()[start:start + (lw1 & 0xFFFF)])


def inject(chip: Any, port: int, frame: bytes, layout: Layout = LAYOUT) -> int:
    """Send a frame out of ``port`` from the XScale: buffer from the XScale's freelist,
    frame and metadata LW1..LW3 as receive writes them, handle on the port's TX ring.
    Returns the handle; raises RuntimeError when the XScale has no free buffer."""
    if not 0 <= port < layout.ports:
        raise ValueError(f"port {port} outside 0..{layout.ports - 1}")
    if not 0 < len(frame) <= layout.buf_max_frame:
        raise ValueError(f"frame of {len(frame)} bytes: 1..{layout.buf_max_frame} fit")
    handle = chip.dequeue(layout.xs_channel, layout.freelist_queue)
    if handle == 0:
        raise RuntimeError("the XScale freelist is empty: all its buffers are in flight")
    start = layout.frame_address(handle)
    chip.dram()[start:start + len(frame)] = np.frombuffer(frame, dtype=np.uint8)
    meta = _meta(chip, handle)
    meta[1] = layout.buf_data_offset << 16 | len(frame)
    meta[2] = len(frame) << 16 | layout.freelist_queue
    meta[3] = layout.host_port << 16 | port
    chip.ring_put(layout.tx_ring(port), [handle])
    return handle


@dataclass(frozen=True)
class Exception4:
    handle: int
    code: int
    next_hop: int
    input_port: int
    frame: bytes


def take_exception(chip: Any, free: bool = True, layout: Layout = LAYOUT) -> Exception4 | None:
    """One entry of the exception ring (None when it is empty), with its frame; the
    buffer goes back to its freelist unless ``free`` is False (then the caller owns it,
    e.g. to send a reply in it through ``chip.ring_put`` on a TX ring)."""
    if chip.ring_state(layout.exc_ring)["count"] < layout.exc_entry_words:
        return None
    handle, word = chip.ring_get(layout.exc_ring, layout.exc_entry_words)
    meta = _meta(chip, handle)
    exc = Exception4(handle, word >> 16, word & 0xFFFF, int(meta[3]) >> 16,
                     read_frame(chip, handle, layout))
    if free:
        chip.enqueue((handle >> 26) & 3, int(meta[2]) & 0xFFFF, handle)
    return exc


def counters(chip: Any, layout: Layout = LAYOUT) -> dict[str, int]:
    """The router's scratch counters by name."""
    words = chip.scratch()[layout.cnt_base // 4:layout.cnt_base // 4 + layout.cnt_words]
    out = {reason: int(words[i]) for i, reason in enumerate(DROP_REASONS)}
    out["ip_forwarded"] = int(words[(layout.cnt_ip_forwarded - layout.cnt_base) // 4])
    out["bad_port"] = int(words[(layout.cnt_bad_port - layout.cnt_base) // 4])
    for name, base in (("rx_no_buffer", layout.cnt_rx_no_buffer),
                       ("rx_too_long", layout.cnt_rx_too_long),
                       ("tx_race", layout.cnt_tx_race)):
        for p in range(layout.ports):
            out[f"{name}{p}"] = int(words[(base - layout.cnt_base) // 4 + p])
    return out
