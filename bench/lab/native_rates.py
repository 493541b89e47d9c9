"""How fast a program forwards on the host (the native target) by frame size, on one worker
and on N workers with RSS: the x86 column of ``npkit bench compare``.

What is timed is the program and nothing else: ``NativeWorkers.execute`` (threads start, run
their batches of frames already laid out in memory, join), as bench/native_workers.py times
it.  There is no NIC, no PCIe, no driver and no copy to a wire, so a figure is an upper
bound for a DPDK-style run-to-completion core running the same code, not a measured NIC
rate; RFC 2544's zero-loss throughput of such a box would be the smaller of this rate and
the line rate of its ports (``HostRate.percent_of_line``).

Frames: Ethernet + IPv4 + UDP of the frame size (FCS not carried natively, so 4 bytes
fewer), from random sources in RFC 2544's 198.18.0.0/15 with random source ports (so RSS
spreads them), to random addresses inside random prefixes of the device's route table
(every one routable), entering on ports 0..3 in turn.  ``microblocks/rss.mbl`` (Microsoft
key, 4-tuple) gives each frame its queue once, beforehand (the NIC's part); queue q runs on
worker q mod N.  The 1- and N-worker runs alternate so both see the same load; the figure
is the median.  The box is shared: ``host_info`` reads the load average and the thread
control of bench/native_workers.py (what two GIL-free threads get over one, i.e. how many
cores the box gave), to be printed at the start and the end.
"""

from __future__ import annotations

import os
import random
import statistics
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from npkit.base.headers import ipv4_header
from npkit.bench.native_fwd import cpu_model
from npkit.bench.native_workers import thread_control
from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.mbl.workers import NativeWorkers, Plan, steer
from npkit.runtime.rss import MICROSOFT_KEY, program_rss, spread_reta

MICROBLOCKS = Path(str(resources.files("npkit.microblocks")))
RSS_SOURCE = MICROBLOCKS / "rss.mbl"
FCS = 4
PORTS = 4
BUFFER_BUDGET = 48 << 20  # bytes of frames per plan: large frames get fewer packets
MIN_PACKETS = 4_000
TEST_SOURCES = 0xC6120000  # 198.18.0.0/15, RFC 2544's test range
ETH = bytes.fromhex("020000000001" "02000000ee01" "0800")


@dataclass(frozen=True)
class HostInfo:
    """The host the native figures were measured on, at one moment."""

    cpu_model: str
    cpus: int
    load_average: tuple[float, float, float]
    thread_control: float  # two GIL-free threads' speed-up over one (~2: two free cores)


@dataclass(frozen=True)
class HostRate:
    """One program at one frame size on the host."""

    app: str
    frame_bytes: int
    packets: int
    workers: int
    mpps_one: float  # one worker (one core), median
    mpps_all: float  # ``workers`` workers with RSS, median
    ratio_median: float  # median of the paired runs' ratios (all / one)
    forwarded_fraction: float
    runs: int
    range_one: tuple[float, float] = (0.0, 0.0)  # slowest and fastest run, Mpps
    range_all: tuple[float, float] = (0.0, 0.0)

    def percent_of_line(self, line_fps_per_port: float, ports: int = PORTS,
                        all_cores: bool = False) -> float:
        """The rate as % of ``ports`` ports' line rate, at most 100."""
        rate = (self.mpps_all if all_cores else self.mpps_one) * 1e6
        return min(100.0, 100.0 * rate / (line_fps_per_port * ports))


def host_info(control_runs: int = 3) -> HostInfo:
    """The host now: CPU model, CPUs, load average, the thread control (median of runs)."""
    return HostInfo(cpu_model(), os.cpu_count() or 1, tuple(os.getloadavg()),  # type: ignore
                    thread_control(control_runs))


def udp_frame(src: int, dst: int, sport: int, frame_bytes: int) -> bytes:
    """Ethernet + IPv4 (TTL 64, DF) + UDP, ``frame_bytes`` with the FCS (not carried)."""
    payload = bytes(frame_bytes - FCS - len(ETH) - 20 - 8)
    udp = struct.pack("!HHHH", sport, 9, 8 + len(payload), 0) + payload
    return ETH + ipv4_header(src, dst, 17, len(udp), flags_fragment=0x4000) + udp


def frames(routes: Mapping[tuple[int, int], int], frame_bytes: int, count: int,
           seed: int) -> list[bytes]:
    """``count`` frames to random addresses inside random prefixes of ``routes`` (IPv4
    (network, length) -> next hop), or anywhere when ``routes`` is empty."""
    rng = random.Random(seed)
    prefixes = sorted(routes)
    out = []
    for _ in range(count):
        if prefixes:
            net, length = prefixes[rng.randrange(len(prefixes))]
            dst = net | (rng.getrandbits(32) & ((1 << (32 - length)) - 1))
        else:
            dst = 0xC6130000 | rng.getrandbits(16)  # 198.19.0.0/16
        src = TEST_SOURCES | rng.getrandbits(17)
        out.append(udp_frame(src, dst, rng.randrange(1024, 65536), frame_bytes))
    return out


def packets_for(frame_bytes: int, wanted: int) -> int:
    """How many frames of this size to lay out: ``wanted``, fewer for large frames (the
    plans stay within ``BUFFER_BUDGET``), never fewer than ``MIN_PACKETS``."""
    return max(MIN_PACKETS, min(wanted, BUFFER_BUDGET // (frame_bytes + 64)))


def _seconds(pool: NativeWorkers, plan: Plan) -> float:
    work = plan.fresh()
    start = time.perf_counter()
    pool.execute(work)
    return time.perf_counter() - start


def rss_steering(workers: int) -> NativeProgram:
    """``rss_steer`` programmed with the Microsoft key, 4-tuple, table spread over N."""
    rss = NativeProgram(compile_file(RSS_SOURCE), "rss_steer")
    program_rss(rss, MICROSOFT_KEY, reta=spread_reta(workers))
    return rss


def measure(app: str, program: NativeProgram, frame_bytes: int, packets: Sequence[bytes],
            workers: int, runs: int, steering: NativeProgram) -> HostRate:
    """``program`` on ``packets`` on 1 and on ``workers`` workers (see the module doc)."""
    ports = [i % PORTS for i in range(len(packets))]
    queues = steer(steering, packets, ports)
    counts = sorted({1, workers})
    pools = {n: NativeWorkers(program, n) for n in counts}
    plans = {n: pool.lay_out(packets, ports, queues) for n, pool in pools.items()}
    for n in counts:  # warm-up
        _seconds(pools[n], plans[n])
    times: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(runs):
        for n in counts:
            times[n].append(_seconds(pools[n], plans[n]))
    work = plans[1].fresh()
    pools[1].execute(work)
    verdicts = pools[1].collect(work).verdicts
    forwarded = sum(v.kind == "forward" for v in verdicts) / len(packets)
    ratios = [a / b for a, b in zip(times[1], times[workers], strict=True)]
    one = len(packets) / statistics.median(times[1]) / 1e6
    every = len(packets) / statistics.median(times[workers]) / 1e6
    def spread(n: int) -> tuple[float, float]:
        return len(packets) / max(times[n]) / 1e6, len(packets) / min(times[n]) / 1e6

    return HostRate(app, frame_bytes, len(packets), workers, one, every,
                    statistics.median(ratios), forwarded, runs, spread(1), spread(workers))


def measure_sizes(app: str, program: NativeProgram, routes: Mapping[tuple[int, int], int],
                  sizes: Sequence[int], wanted: int, workers: int, runs: int, seed: int,
                  progress: Any = None) -> list[HostRate]:
    """``measure`` at every frame size (frames from ``frames``)."""
    steering = rss_steering(workers)
    out = []
    for size in sizes:
        if progress is not None:
            progress(f"native {app} {size} B")
        packets = frames(routes, size, packets_for(size, wanted), seed)
        out.append(measure(app, program, size, packets, workers, runs, steering))
    return out
