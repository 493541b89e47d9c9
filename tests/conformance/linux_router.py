"""The Linux kernel as the reference router: two network namespaces joined by veth pairs.

``LinuxRouter(config)`` builds, from a router config (runtime/router_config.py):

* namespace R (the router): interface ``r<N>`` for each ``[[port]]`` with its MAC, IP MTU
  and addresses, forwarding on, its neighbours as permanent ARP/ND entries and its routes;
* namespace T (the tester): the peer ``t<N>`` of each, no addresses and IPv6 off, so the
  tester only sends what a test gives it and records what arrives (tests/conformance/
  inject.py on AF_PACKET sockets).

Settings chosen so the kernel's output depends only on the packet (docs/conformance.md,
"The reference"): no ICMP rate limits, no automatic IPv6 flow labels, no reverse-path
filter, no DAD, no link-local addresses (the config has none), and so the ff00::/8
multicast route per port that the kernel adds only along with a link-local address.
Everything lives in the two namespaces; ``close`` (also on errors while building) deletes
them, which deletes the veth pairs.  ``available()`` says why the suite cannot run here
(not root, no ``ip netns``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from npkit.runtime.router_config import RouterConfig

INJECT = Path(__file__).with_name("inject.py")
TESTER_MTU = 9000          # the tester may send anything up to the largest port MTU


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"npk-probe-{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass(frozen=True)
class Captured:
    """A frame that left the Linux router on `port` while frame `index` was the last sent."""

    index: int
    port: int
    frame: bytes


class LinuxRouter:
    def __init__(self, config: RouterConfig) -> None:
        tag = uuid.uuid4().hex[:8]
        self.router_ns, self.tester_ns = f"npk-r-{tag}", f"npk-t-{tag}"
        self.ports = sorted(p.port for p in config.ports)
        self._made: list[str] = []
        try:
            self._build(config)
        except BaseException:
            self.close()
            raise

    # ---- set-up ----
    def _run(self, *args: str, ns: str | None = None) -> None:
        cmd = ["ip", "netns", "exec", ns, *args] if ns else list(args)
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")

    def _sysctl(self, ns: str, key: str, value: int | str) -> None:
        self._run("sysctl", "-q", "-w", f"{key}={value}", ns=ns)

    def _build(self, config: RouterConfig) -> None:
        for ns in (self.router_ns, self.tester_ns):
            self._run("ip", "netns", "add", ns)
            self._made.append(ns)
        r, t = self.router_ns, self.tester_ns
        for key, value in (("net.ipv4.ip_forward", 1), ("net.ipv6.conf.all.forwarding", 1),
                           ("net.ipv4.icmp_ratelimit", 0), ("net.ipv4.icmp_msgs_per_sec", 1 << 30),
                           ("net.ipv4.icmp_msgs_burst", 1 << 30),
                           ("net.ipv6.icmp.ratelimit", 0), ("net.ipv6.auto_flowlabels", 0),
                           ("net.ipv4.conf.all.rp_filter", 0),
                           ("net.ipv4.conf.default.rp_filter", 0),
                           ("net.ipv6.conf.default.accept_dad", 0),
                           ("net.ipv6.conf.default.addr_gen_mode", 1)):
            self._sysctl(r, key, value)
        self._sysctl(t, "net.ipv6.conf.default.disable_ipv6", 1)
        for p in config.ports:
            rif, tif = f"r{p.port}", f"t{p.port}"
            self._run("ip", "-n", r, "link", "add", "name", rif, "type", "veth", "peer",
                      "name", tif, "netns", t)
            mac = ":".join(f"{b:02x}" for b in p.mac.to_bytes(6, "big"))
            self._run("ip", "-n", r, "link", "set", rif, "address", mac, "mtu", str(p.mtu))
            self._run("ip", "-n", t, "link", "set", tif, "mtu", str(TESTER_MTU))
            self._sysctl(r, f"net.ipv4.conf.{rif}.rp_filter", 0)
            for iface in p.ipv4:
                self._run("ip", "-n", r, "addr", "add", str(iface), "dev", rif)
            for iface in p.ipv6:
                self._run("ip", "-n", r, "-6", "addr", "add", str(iface), "dev", rif, "nodad")
            self._run("ip", "-n", t, "link", "set", tif, "up")
            self._run("ip", "-n", r, "link", "set", rif, "up")
            # the multicast route the kernel adds with a link-local address (there is none):
            # without it ff00::/8 would follow the unicast default route
            self._run("ip", "-n", r, "-6", "route", "replace", "multicast", "ff00::/8", "dev",
                      rif, "table", "local")
        for n in config.neighbours:
            mac = ":".join(f"{b:02x}" for b in n.mac.to_bytes(6, "big"))
            self._run("ip", "-n", r, "neigh", "replace", str(n.ip), "lladdr", mac, "dev",
                      f"r{n.port}", "nud", "permanent")
        for route in config.routes:
            cmd = ["ip", "-n", r, "route", "replace", str(route.prefix)]
            if route.via is not None:
                cmd += ["via", str(route.via)]
            if route.port is not None:
                cmd += ["dev", f"r{route.port}"]
            self._run(*cmd)

    # ---- traffic ----
    def send(self, frames: Sequence[tuple[int, bytes]], gap: float = 0.002) -> list[Captured]:
        """Send (port, frame) pairs into the router one at a time, `gap` seconds apart, and
        return what left it, each tagged with the last frame sent before it arrived."""
        spec = {"ports": {str(p): f"t{p}" for p in self.ports},
                "frames": [[port, frame.hex()] for port, frame in frames], "gap": gap}
        with tempfile.TemporaryDirectory(prefix="npk-conf-") as tmp:
            spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
            spec_path.write_text(json.dumps(spec), encoding="utf-8")
            self._run(sys.executable, str(INJECT), str(spec_path), str(result_path),
                      ns=self.tester_ns)
            result = json.loads(result_path.read_text(encoding="utf-8"))
        return [Captured(i, p, bytes.fromhex(h)) for i, p, h in result["out"]]

    # ---- tear-down ----
    def close(self) -> None:
        while self._made:
            subprocess.run(["ip", "netns", "del", self._made.pop()], capture_output=True)

    def __enter__(self) -> LinuxRouter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
