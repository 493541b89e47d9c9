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

from dataclasses import dataclass


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


LAYOUT = Layout()
