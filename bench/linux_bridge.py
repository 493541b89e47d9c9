"""A Linux bridge measured on this box: the reference issue 15 asks to compare l2fwd with.

    sudo python -m npkit.bench.linux_bridge [--sizes 64,128,256,512,1024,1518] [--seconds 2]
                                            [--runs 3]

Three network namespaces of its own (``npkit-br-tx``, ``npkit-br-sw``, ``npkit-br-rx``,
removed at the end, also after an error): the sender's veth is joined to port 0 of a Linux
bridge in ``sw`` (``ip link add type bridge``), port 1 to the receiver's veth.  The bridge
has a static forwarding entry for the receiver's MAC (``bridge fdb``), so every frame is a
known unicast, forwarded out of port 1.  A sender process in ``tx`` (this module with
``--send``) writes Ethernet + IPv4 + UDP frames of the frame size (FCS not carried, 4 bytes
fewer) to an AF_PACKET socket as fast as it can, 256 at a time (libc ``sendmmsg`` through
ctypes, so Python adds ~nothing per frame), for ``--seconds``.  The interfaces' counters
(``ip -s -j link``) before and after give: frames offered (the sender's veth, tx), frames the
bridge took in (port 0, rx) and frames it forwarded (port 1, tx), and the receiver's count.
The figure is the bridge's forwarding rate at saturation, forwarded frames over the
sender's time, median of ``--runs``; frames offered beyond it are dropped on the way in
(the backlog of ``netdev_max_backlog`` frames), as a NIC's ring would overflow.

Caveats, printed with the figures: veth is not a NIC (no PCIe, no DMA, no interrupts: a
frame crosses by a function call and a per-CPU backlog), the sender, the bridge and the
receiver's stack share the host's cores (mostly the sender's core: the backlog's softirq
runs where the frame was queued), and the box may be shared (the load average is printed).
Beside it, measured in the same run: examples/l2fwd natively on one worker
(``NativeWorkers``, frames laid out in memory as bench/lab/native_rates.py lays them out,
the program only, no wire): its rate and its frames per CPU second of the worker thread.
Per CPU second is the figure that holds on a loaded box; the bridge's includes the sender's
system calls and the receiver's drop, l2fwd's no I/O at all.  This is a benchmark, not a
test.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from npkit.bench.lab.native_rates import frames as native_frames
from npkit.bench.native_fwd import cpu_model
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.workers import NativeWorkers

L2FWD = Path(__file__).resolve().parents[1] / "examples" / "l2fwd" / "l2fwd.mbl"
NATIVE_FRAMES = 100_000
NAMESPACES = ("npkit-br-tx", "npkit-br-sw", "npkit-br-rx")
TX, SW, RX = NAMESPACES
SIZES = (64, 128, 256, 512, 1024, 1518)
FCS = 4
BATCH = 256  # frames a sendmmsg call
TX_MAC = bytes.fromhex("020000000b01")
RX_MAC = bytes.fromhex("020000000b02")
SOURCE, DESTINATION = 0xC6120001, 0xC6130001  # 198.18.0.1 -> 198.19.0.1 (RFC 2544's)


class BridgeBenchError(RuntimeError):
    """The bench cannot run here (not root, no iproute2, a namespace exists already)."""


# ------------------------------------------------------------------------------- the sender
class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(_Iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", _Msghdr), ("len", ctypes.c_uint)]


def frame(frame_bytes: int) -> bytes:
    """Ethernet (to the receiver's MAC) + IPv4 (TTL 64) + UDP, without the 4-byte FCS."""
    payload = bytes(frame_bytes - FCS - 14 - 20 - 8)
    udp = struct.pack("!HHHH", 1024, 9, 8 + len(payload), 0) + payload
    header = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                         SOURCE, DESTINATION)
    words = struct.unpack("!10H", header)
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    return RX_MAC + TX_MAC + b"\x08\x00" + header + udp


def send(interface: str, frame_bytes: int, seconds: float) -> tuple[int, float, float]:
    """Send frames on ``interface`` as fast as possible for ``seconds``: (frames, seconds,
    the process's CPU seconds, user + system: the bridge's softirq work runs mostly in it)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((interface, 0))
    data = ctypes.create_string_buffer(frame(frame_bytes))
    iov = _Iovec(ctypes.cast(data, ctypes.c_void_p), len(data) - 1)  # no trailing NUL
    msgs = (_Mmsghdr * BATCH)()
    for m in msgs:
        m.hdr.iov = ctypes.pointer(iov)
        m.hdr.iovlen = 1
    sent = 0
    cpu = time.process_time()
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        n = libc.sendmmsg(sock.fileno(), msgs, BATCH, 0)
        if n < 0:
            errno = ctypes.get_errno()
            if errno in (105, 11):  # ENOBUFS, EAGAIN: the device is full, go on
                continue
            raise OSError(errno, os.strerror(errno))
        sent += n
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    sock.close()
    return sent, elapsed, cpu


# ------------------------------------------------------------------------------- the set-up
def _ip(*args: str, namespace: str | None = None) -> str:
    command = ["ip", *(["-n", namespace] if namespace else []), *args]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BridgeBenchError(f"{' '.join(command)}: {done.stderr.strip()}")
    return done.stdout


@contextmanager
def bridge_setup() -> Iterator[None]:
    """The three namespaces, veth pairs and bridge; all removed on the way out."""
    if os.geteuid() != 0:
        raise BridgeBenchError("needs root (network namespaces)")
    if shutil.which("ip") is None or shutil.which("bridge") is None:
        raise BridgeBenchError("needs iproute2 (ip, bridge)")
    existing = _ip("netns", "list")
    if any(ns in existing.split() for ns in NAMESPACES):
        raise BridgeBenchError(f"a namespace of {NAMESPACES} exists already: remove it with "
                               f"`ip netns del NAME` if no other run uses it")
    made: list[str] = []
    try:
        for ns in NAMESPACES:
            _ip("netns", "add", ns)
            made.append(ns)
        _ip("link", "add", "tx0", "netns", TX, "type", "veth", "peer", "swp0", "netns", SW)
        _ip("link", "add", "rx0", "netns", RX, "type", "veth", "peer", "swp1", "netns", SW)
        _ip("link", "set", "tx0", "address", TX_MAC.hex(":"), namespace=TX)
        _ip("link", "set", "rx0", "address", RX_MAC.hex(":"), namespace=RX)
        _ip("link", "add", "br0", "type", "bridge", namespace=SW)
        for port in ("swp0", "swp1"):
            _ip("link", "set", port, "master", "br0", namespace=SW)
            _ip("link", "set", port, "up", namespace=SW)
        _ip("link", "set", "br0", "up", namespace=SW)
        _ip("link", "set", "tx0", "up", namespace=TX)
        _ip("link", "set", "rx0", "up", namespace=RX)
        fdb = subprocess.run(["bridge", "-n", SW, "fdb", "replace", RX_MAC.hex(":"), "dev",
                              "swp1", "master", "static"], capture_output=True, text=True)
        if fdb.returncode != 0:
            raise BridgeBenchError(f"bridge fdb: {fdb.stderr.strip()}")
        yield
    finally:
        for ns in reversed(made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def counters(namespace: str, device: str) -> dict[str, dict[str, int]]:
    """The device's rx/tx counters (stats64: packets, dropped, ...)."""
    return json.loads(_ip("-s", "-j", "link", "show", "dev", device,
                          namespace=namespace))[0]["stats64"]


@dataclass(frozen=True)
class BridgeRate:
    frame_bytes: int
    offered_mpps: float  # the sender's frames over its time, median
    forwarded_mpps: float  # frames the bridge sent out of port 1, median
    delivered_mpps: float  # frames the receiver's veth counted, median
    per_cpu_mpps: float  # forwarded frames per CPU second of the sender process, median
    runs: int


POINTS = (("offered", TX, "tx0", "tx"), ("in", SW, "swp0", "rx"),
          ("forwarded", SW, "swp1", "tx"), ("delivered", RX, "rx0", "rx"))


def measure(frame_bytes: int, seconds: float, runs: int) -> BridgeRate:
    """``runs`` sender runs of ``seconds`` at one frame size (inside bridge_setup)."""
    rates: dict[str, list[float]] = {"offered": [], "forwarded": [], "delivered": [],
                                     "per_cpu": []}
    for _ in range(runs):
        before = {name: counters(ns, dev)[way]["packets"] for name, ns, dev, way in POINTS}
        done = subprocess.run(["ip", "netns", "exec", TX, sys.executable, "-m",
                               "npkit.bench.linux_bridge", "--send", "tx0", "--sizes",
                               str(frame_bytes), "--seconds", str(seconds)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise BridgeBenchError(f"the sender failed: {done.stderr.strip()[-400:]}")
        sent, elapsed, cpu = (float(x) for x in done.stdout.split())
        after = {name: counters(ns, dev)[way]["packets"] for name, ns, dev, way in POINTS}
        rates["offered"].append(sent / elapsed / 1e6)
        for name in ("forwarded", "delivered"):
            rates[name].append((after[name] - before[name]) / elapsed / 1e6)
        rates["per_cpu"].append((after["forwarded"] - before["forwarded"]) / max(cpu, 1e-9)
                                / 1e6)
    return BridgeRate(frame_bytes, *(statistics.median(rates[k]) for k in
                                     ("offered", "forwarded", "delivered", "per_cpu")), runs)


def native_l2fwd(frame_bytes: int, runs: int) -> tuple[float, float]:
    """examples/l2fwd on one worker: (Mpps, frames per CPU second of the worker / 1e6),
    medians of ``runs``, on NATIVE_FRAMES frames entering on ports 0..3 in turn."""
    program = NativeProgram(compile_file(L2FWD), "l2fwd")
    packets = native_frames({}, frame_bytes, NATIVE_FRAMES, seed=frame_bytes)
    with NativeWorkers(program, 1) as pool:
        plan = pool.lay_out(packets, [i % 4 for i in range(len(packets))], [0] * len(packets))
        walls, cpus = [], []
        for _ in range(runs + 1):  # the first is a warm-up
            work = plan.fresh()
            start = time.perf_counter()
            [timing] = pool.execute(work)
            walls.append(time.perf_counter() - start)
            cpus.append(timing.cpu)
    n = len(packets) / 1e6
    return n / statistics.median(walls[1:]), n / statistics.median(cpus[1:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npkit.bench.linux_bridge",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="frame sizes in bytes with the FCS, 64..1518")
    parser.add_argument("--seconds", type=float, default=2.0, help="per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--send", metavar="IFACE", help=argparse.SUPPRESS)  # the sender
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: comma-separated frame sizes")
    if not sizes or any(not 64 <= s <= 1518 for s in sizes):
        parser.error("--sizes: frame sizes of 64..1518 bytes")
    if not 0.1 <= args.seconds <= 60 or not 1 <= args.runs <= 50:
        parser.error("--seconds 0.1..60 and --runs 1..50")
    if args.send:
        print(*send(args.send, sizes[0], args.seconds))
        return 0
    load = os.getloadavg()
    try:
        with bridge_setup():
            rates = [measure(size, args.seconds, args.runs) for size in sizes]
    except BridgeBenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    natives = {size: native_l2fwd(size, max(3, args.runs)) for size in sizes}
    after = os.getloadavg()
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; load average {load[0]:.2f} before, "
          f"{after[0]:.2f} after; Linux {os.uname().release}")
    print(f"Linux bridge (2 ports, static fdb entry) between veth pairs in network namespaces; "
          f"sender: AF_PACKET + sendmmsg, {BATCH} a call; {args.runs} runs of "
          f"{args.seconds:g} s a size (medians)")
    print("frame B | bridge: offered Mpps | forwarded Mpps | delivered Mpps | forwarded per "
          "CPU s, M | l2fwd natively, 1 worker: Mpps | per CPU s, M | l2fwd / bridge per CPU s")
    for r in rates:
        mpps, per_cpu = natives[r.frame_bytes]
        print(f"{r.frame_bytes:7} | {r.offered_mpps:20.3f} | {r.forwarded_mpps:14.3f} | "
              f"{r.delivered_mpps:14.3f} | {r.per_cpu_mpps:20.3f} | {mpps:30.2f} | "
              f"{per_cpu:12.2f} | {per_cpu / max(r.per_cpu_mpps, 1e-9):.0f} x")
    print("caveat: veth is not a NIC (no PCIe, DMA or interrupts); the sender, the bridge and "
          "the receiver share the host's cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
