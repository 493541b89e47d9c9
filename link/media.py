"""The media microblocks' numbers (microblocks/uc/router4.h, which rx_eth.uc and tx_eth.uc
include): buffers, metadata, rings and counters, as data the linker plans with.

The linker overrides some of them per program through the generated layout.h (the header's
#ifndef numbers); `Layout` is the header's defaults, number for number
(tests/examples/test_router4_layout.py checks every one against the header).  The
hand-written router4 (microblocks/uc/router4.py) uses the same numbers for its own
forwarding stage and tables.
"""

from __future__ import annotations

from dataclasses import dataclass

# router4's drop counters come first in the counter block (router4.h CNT_*)
DROP_REASONS = ("runt", "not_ipv4", "ip_too_short", "bad_version", "bad_ihl", "bad_length",
                "bad_checksum", "martian_source", "martian_destination")


@dataclass(frozen=True)
class Layout:
    """router4.h, number for number (names without the header's prefixes where obvious)."""

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
    # scratch counters (byte addresses)
    cnt_base: int = 0x3000
    cnt_ip_forwarded: int = 0x3024
    cnt_bad_port: int = 0x3028
    cnt_rx_no_buffer: int = 0x3030
    cnt_rx_too_long: int = 0x3038
    cnt_tx_race: int = 0x3040
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

    # ---- derived ----
    def rx_ring(self, port: int, half: int) -> int:
        """RX ring of a port's half (0: role A, the even frames; 1: role B, the odd)."""
        return self.rx_ring_base + 2 * port + half

    def tx_ring(self, port: int) -> int:
        return self.tx_ring_base + port

    def drop_counter(self, reason: str) -> int:
        """Scratch byte address of a drop reason's counter."""
        return self.cnt_base + 4 * DROP_REASONS.index(reason)

    def buffer_address(self, handle: int) -> int:
        """DRAM byte address of a handle's buffer (one formula for every freelist)."""
        return ((handle & 0x03FFFFFF) - self.buf_desc_base) * (self.buf_bytes // self.desc_bytes)

    def frame_address(self, handle: int) -> int:
        return self.buffer_address(handle) + self.buf_data_offset


LAYOUT = Layout()
