"""runtime/router_targets.run_native: batched, it transmits what NativeRouter.forward does
frame by frame (the reference: one frame a call, its answers right after it), route
changes included, whatever the batch size."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.runtime import router_run
from npkit.runtime import router_targets as rt
from npkit.runtime.control_plane import NativeRouter

CHANGES = [router_run.TimedChange(1, 2.0, "add", "20.0.0.0/8", "192.0.2.2"),
           router_run.TimedChange(2, 5.0, "add", "45.0.0.0/8", "203.0.113.2"),
           router_run.TimedChange(3, 9.0, "delete", "20.0.0.0/8", None)]


@pytest.fixture(scope="module")
def traffic() -> tuple[object, list[rt.TimedFrame]]:
    config = rt.load_config(rt.DEFAULT_CONFIG, "native")
    shape = SimpleNamespace(control=SimpleNamespace(ports=config.ports))
    frames = sorted((rt.TimedFrame(i * 0.1e-6, port, data)
                     for port, datas in router_run.demo_traffic(shape, config, 120).items()
                     for i, data in enumerate(datas)), key=lambda f: (f.time_s, f.port))
    return config, frames


def reference(config, frames) -> dict[int, list[bytes]]:
    router = NativeRouter(NativeProgram(compile_file(rt.ROUTER_MBL)),
                          ports=len(config.ports), config=config)
    pending, out = list(CHANGES), {}
    for f in frames:
        while pending and pending[0].time_us * 1e-6 <= f.time_s:
            router_run.change_function(pending.pop(0))(router.control)
        for port, datas in router.forward([f.data], f.port,
                                          now_ns=round(f.time_s * 1e9)).out.items():
            out.setdefault(port, []).extend(datas)
    return out


@pytest.mark.parametrize("batch", [1, 7, 1024])
def test_batches_give_the_frame_by_frame_result(traffic, batch) -> None:
    config, frames = traffic
    expected = reference(config, frames)
    got = rt.run_native(config, frames, CHANGES, batch=batch)
    assert got.counters["changes_applied"] == 3
    assert {p: got.frames(p) for p in got.out} == expected
    assert sum(map(len, expected.values())) > 400     # forwarded frames and ICMP answers


def test_the_changes_move_traffic(traffic) -> None:
    config, frames = traffic
    with_changes = rt.run_native(config, frames, CHANGES)
    without = rt.run_native(config, frames)
    assert len(with_changes.frames(0)) > len(without.frames(0))       # 20/8 to port 0 a while
    assert len(with_changes.frames(2)) > len(without.frames(2))       # 45/8 to port 2


def test_a_neighbour_learnt_in_a_batch_is_used_by_the_next_frames() -> None:
    """A connected host with no configured MAC: the first frames wait for ARP, its reply
    (mid-batch) installs a host route, and the frames after it are forwarded by the data
    plane; the batch must not use verdicts from before the reply."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import ARP, Ether

    config = rt.load_config(rt.DEFAULT_CONFIG, "native")
    host, host_mac = "203.0.113.50", "02:00:00:00:12:50"

    def udp(i: int) -> bytes:
        return bytes(Ether(src="02:00:00:00:10:02", dst="02:00:00:00:00:10")
                     / IP(src="192.0.2.2", dst=host) / UDP(sport=5000 + i, dport=9))

    reply = bytes(Ether(src=host_mac, dst="02:00:00:00:00:12")
                  / ARP(op=2, hwsrc=host_mac, psrc=host, hwdst="02:00:00:00:00:12",
                        pdst="203.0.113.1"))
    frames = [rt.TimedFrame(i * 1e-6, 0, udp(i)) for i in range(2)]
    frames.append(rt.TimedFrame(2e-6, 2, reply))
    frames += [rt.TimedFrame(i * 1e-6, 0, udp(i)) for i in range(3, 8)]
    expected = reference_without_changes(config, frames)
    got = rt.run_native(config, frames)
    assert {p: got.frames(p) for p in got.out} == expected
    to_host = [Ether(f) for f in expected[2] if Ether(f).dst == host_mac]
    assert [f[UDP].sport for f in to_host] == [5000 + i for i in (0, 1, 3, 4, 5, 6, 7)]
    assert got.counters["ports"][0]["exceptions"]     # the first two took the slow path


def reference_without_changes(config, frames) -> dict[int, list[bytes]]:
    router = NativeRouter(NativeProgram(compile_file(rt.ROUTER_MBL)),
                          ports=len(config.ports), config=config)
    out: dict[int, list[bytes]] = {}
    for f in frames:
        for port, datas in router.forward([f.data], f.port,
                                          now_ns=round(f.time_s * 1e9)).out.items():
            out.setdefault(port, []).extend(datas)
    return out
