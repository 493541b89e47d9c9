"""docs/datapath.md's fast path on the simulated chip, as a hand-written prototype
(xfer_path/xferwire.uc): the header goes RBUF -> transfer registers -> TBUF on one thread,
TBUF elements claimed in frame order, no DRAM and no buffers.  Two OC-192 POS ports at
line rate, 40-byte IPv4 packets (44-byte frames) built with scapy; the references are the
offered frames themselves (forwarded unchanged, in order) and the chip's own counters (no
DRAM command at all).  The figures of docs/datapath.md ("Measured") come from here:

    .venv/bin/python -m pytest -q tests/me/link/test_xfer_path.py -s
"""

from __future__ import annotations

from pathlib import Path

from scapy.all import IP, UDP, raw
from scapy.layers.ppp import HDLC, PPP

from npkit.runtime.loader import load_manifest
from npkit.sim.packets import ListSink, ListSource, RxFrame

MANIFEST = Path(__file__).parent / "xfer_path" / "xferwire.toml"
POOL = Path(__file__).parent / "xfer_path" / "xferpool.toml"
CNT_TOO_LONG = 0x2000 // 4  # xferwire.uc, scratch word index (+ port)
HDR_BYTES = 56  # xferwire.uc: the window that fits $0..$13


def pos_frames(count: int, port: int, extra: int = 0) -> list[bytes]:
    """40-byte IPv4/UDP packets in PPP frames (44 bytes), each with its own id."""
    return [raw(HDLC() / PPP(proto=0x0021) / IP(src="198.18.0.1", dst="10.0.0.9", id=k,
                                                  tos=port) / UDP(sport=9, dport=k)
                / (b"p" * (12 + extra))) for k in range(count)]


def run(offered: dict[int, list[bytes]],
        manifest: Path = MANIFEST) -> tuple[dict, dict[int, list[bytes]], list[int]]:
    loaded = load_manifest(manifest)
    chip = loaded.chip
    sinks = {p: ListSink() for p in offered}
    for p, frames in offered.items():
        chip.attach_source(p, ListSource([RxFrame(f) for f in frames]))  # back to back
        chip.attach_sink(p ^ 1, sinks.setdefault(p ^ 1, ListSink()))
    expected = sum(len(f) <= HDR_BYTES for frames in offered.values() for f in frames)
    chip.run(packets=expected, cycles=50_000_000)
    chip.run(cycles=20_000)
    out = {p: [f.data for f in sinks[p].frames] for p in sinks}
    too_long = [int(w) for w in chip.scratch()[CNT_TOO_LONG:CNT_TOO_LONG + 2]]
    return chip.counters(), out, too_long


def test_minimum_size_packets_at_line_rate_use_no_dram():
    count = 4000
    offered = {p: pos_frames(count, p) for p in (0, 1)}
    counters, out, too_long = run(offered)
    for p in (0, 1):
        assert out[p ^ 1] == offered[p]  # every frame, unchanged, in order
        port = counters["ports"][p]
        assert port["rx_dropped_rbuf_full"] == 0 and port["rbuf_elements_in_use"] == 0
    assert too_long == [0, 0]
    assert all(ch["commands"] == 0 and ch["bytes"] == 0 for ch in counters["channels"]["dram"])
    msf = counters["channels"]["msf"]
    frames = 2 * count
    # per frame: 14 longwords read, 14 written, the control word, and two fast_wr
    # (registration, element done) of 4 B; now and then a TX_SEQUENCE read (4 B)
    per_msf = msf["bytes"] / frames
    assert 2 * HDR_BYTES + 4 + 8 <= per_msf < 2 * HDR_BYTES + 4 + 8 + 1
    per_frame = {me["number"]: (me["busy_cycles"] + me["stalled_cycles"]) / count
                 for me in counters["mes"] if me["instructions"]}
    instructions = {me["number"]: me["instructions"] / count
                    for me in counters["mes"] if me["instructions"]}
    print(f"\nxferwire: {frames} frames in {counters['cycles']} cycles; DRAM 0 B/frame; MSF "
          f"{per_msf:.2f} B/frame; ME busy+stalled cycles/frame {per_frame}, "
          f"instructions/frame {instructions} "
          f"(a port's frame every 57.26 cycles at line rate)")
    assert all(c < 57.26 for c in per_frame.values())  # one ME keeps up with a port


def test_frames_longer_than_the_window_are_counted_and_the_rest_keep_their_order():
    short, long_ = pos_frames(40, 0), pos_frames(40, 0, extra=HDR_BYTES)
    offered = {0: [f for pair in zip(short, long_, strict=True) for f in pair], 1: short}
    _, out, too_long = run(offered)
    assert out[1] == short and out[0] == short
    assert too_long == [40, 0]


def test_a_pool_of_two_mes_per_port_keeps_the_order_across_mes():
    """xferpool.uc: the port's frames are dealt to 16 threads on two MEs in a cyclic order
    (tokens by SAME_ME_SIGNAL, NEXT_NEIGHBOR_SIGNAL and a scratch wrap word) and the TBUF
    elements are claimed with scratch[test_and_add] in the turn: every frame leaves in
    arrival order at line rate."""
    count = 4000
    offered = {p: pos_frames(count, p) for p in (0, 1)}
    counters, out, _ = run(offered, POOL)
    for p in (0, 1):
        assert out[p ^ 1] == offered[p]
        assert counters["ports"][p]["rx_dropped_rbuf_full"] == 0
    assert all(ch["bytes"] == 0 for ch in counters["channels"]["dram"])
    frames = 2 * count
    scratch = counters["channels"]["scratch"]
    per_me = {me["number"]: (me["busy_cycles"] + me["stalled_cycles"]) / (count / 2)
              for me in counters["mes"] if me["instructions"]}
    print(f"\nxferpool: scratch {scratch['commands'] / frames:.2f} commands and "
          f"{scratch['bytes'] / frames:.2f} B a frame; ME busy+stalled cycles per frame it "
          f"handles {per_me} (114.5 available: two MEs share a port's frames)")
    assert all(c < 2 * 57.26 for c in per_me.values())
