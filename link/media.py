"""The media microblocks' numbers (microblocks/uc/router4.h, which rx_eth.uc and tx_eth.uc
include): the ME mapping, buffers, metadata, rings and the media counters, as data the
linker plans with.

The linker overrides some of them per program through the generated layout.h (the header's
#ifndef numbers); `Layout` holds the header's defaults, number for number.  The
hand-written router4 (microblocks/uc/router4.py) extends it with its forwarding stage's
counters and tables (tests/examples/test_router4_layout.py checks every number against
the header).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

# A buffer holds one frame (rx_eth.uc reassembles a frame's mpackets into one buffer), so a
# port whose MTU needs more than the default 2 KB buffer gets larger ones; the hardware's
# freelists take any power-of-two buffer size (the handle -> buffer formula shifts by
# log2(buffer / descriptor)).  16 KB holds a 9,000-byte MTU's 9,014-byte frame
# (docs/link.md, "Buffer size").
BUFFER_BYTES_MAX = 16384
ETHERNET_HEADER_BYTES = 14


@dataclass(frozen=True)
class Layout:
    """The media part of router4.h, number for number (names without the header's
    prefixes where obvious)."""

    ports: int = 2
    fwd_first_me: int = 2
    tx_first_me: int = 6
    # buffers (port p's freelist: SRAM channel rx_fl_channel + p)
    rx_fl_channel: int = 0
    buf_desc_base: int = 0x10000
    desc_bytes: int = 32
    buf_bytes: int = 2048
    buf_shift: int = 6
    bufs_per_port: int = 128
    xs_bufs: int = 64
    xs_channel: int = 3
    xs_desc_base: int = 0x12000
    buf_data_offset: int = 128
    buf_max_frame: int = 1920
    freelist_queue: int = 0
    # metadata
    meta_words: int = 8
    meta_first_byte: int = 4
    no_port: int = 0xFFFF
    host_port: int = 0xFFFE
    # scratch rings
    rx_ring_base: int = 0
    tx_ring_base: int = 4
    exc_ring: int = 6
    rx_ring_words: int = 256
    tx_ring_words: int = 512
    exc_ring_words: int = 512
    rx_entry_words: int = 2
    exc_entry_words: int = 2
    rx_ring_word0: int = 0
    tx_ring_word0: int = 1024
    exc_ring_word: int = 2048
    # scratch counters (byte addresses): the block, and the ones the media stages count
    cnt_base: int = 0x3000
    cnt_rx_no_buffer: int = 0x3030
    cnt_rx_too_long: int = 0x3038
    cnt_tx_race: int = 0x3040

    # ---- derived ----
    def rx_ring(self, port: int, half: int) -> int:
        """RX ring of a port's half (0: role A, the even frames; 1: role B, the odd)."""
        return self.rx_ring_base + 2 * port + half

    def tx_ring(self, port: int) -> int:
        return self.tx_ring_base + port

    def buffer_address(self, handle: int) -> int:
        """DRAM byte address of a handle's buffer (one formula for every freelist)."""
        return ((handle & 0x03FFFFFF) - self.buf_desc_base) * (self.buf_bytes // self.desc_bytes)

    def frame_address(self, handle: int) -> int:
        return self.buffer_address(handle) + self.buf_data_offset


    def with_buffer_bytes(self, buf_bytes: int) -> Layout:
        """The layout with `buf_bytes`-byte buffers: BUF_SHIFT and BUF_MAX_FRAME follow
        (router4.h's #ifndef numbers; the linker writes them to layout.h)."""
        ratio = buf_bytes // self.desc_bytes
        if (buf_bytes % self.desc_bytes or ratio & (ratio - 1) or ratio < 2
                or buf_bytes > BUFFER_BYTES_MAX):
            raise ValueError(f"buffers of {buf_bytes} bytes: a power of two of "
                             f"{2 * self.desc_bytes}..{BUFFER_BYTES_MAX} bytes")
        if buf_bytes <= self.buf_data_offset:
            raise ValueError(f"buffers of {buf_bytes} bytes leave no room after the "
                             f"{self.buf_data_offset}-byte headroom")
        return dataclasses.replace(self, buf_bytes=buf_bytes,
                                   buf_shift=ratio.bit_length() - 1,
                                   buf_max_frame=buf_bytes - self.buf_data_offset)


def buffer_bytes_for(frame_bytes: int, layout: Layout | None = None) -> int:
    """The smallest buffer size (a power of two, at least the default) whose data part
    holds a `frame_bytes`-byte frame; ValueError past BUFFER_BYTES_MAX."""
    lay = layout or LAYOUT
    size = lay.buf_bytes
    while size - lay.buf_data_offset < frame_bytes:
        size *= 2
    if size > BUFFER_BYTES_MAX:
        raise ValueError(f"a {frame_bytes}-byte frame needs buffers of more than "
                         f"{BUFFER_BYTES_MAX} bytes")
    return size


def buffer_bytes_for_mtu(mtu: int, layout: Layout | None = None) -> int:
    """The buffer size for an Ethernet port of IP MTU `mtu` (frames of mtu + 14 bytes)."""
    return buffer_bytes_for(mtu + ETHERNET_HEADER_BYTES, layout)


LAYOUT = Layout()
