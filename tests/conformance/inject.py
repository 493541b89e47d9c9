"""Run inside the tester namespace (``ip netns exec``): send frames one by one on AF_PACKET
sockets and record every frame that arrives on any port until the next frame is sent.

    python inject.py SPEC.json RESULT.json

SPEC: {"ports": {"0": "t0", ...}, "frames": [[port, "hex"], ...], "gap": seconds after
each frame, "settle": seconds before the first}.  RESULT: {"out": [[index of the frame sent
last, port, "hex"], ...]}.  Only the standard library: it runs in a bare namespace.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_IGNORE_OUTGOING = 23
SO_RCVBUFFORCE = 33
SOL_PACKET = 263


def main(spec_path: str, result_path: str) -> None:
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    sockets: dict[socket.socket, int] = {}
    by_port: dict[int, socket.socket] = {}
    for port, ifname in spec["ports"].items():
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        s.bind((ifname, 0))
        s.setblocking(False)
        sockets[s] = int(port)
        by_port[int(port)] = s
    out: list[list] = []

    def drain(index: int, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select(list(sockets), [], [], left)
            for s in ready:
                while True:
                    try:
                        data = s.recv(65536)
                    except BlockingIOError:
                        break
                    out.append([index, sockets[s], data.hex()])

    drain(-1, float(spec.get("settle", 0.2)))
    gap = float(spec.get("gap", 0.002))
    for index, (port, frame) in enumerate(spec["frames"]):
        by_port[int(port)].send(bytes.fromhex(frame))
        drain(index, gap)
    drain(len(spec["frames"]) - 1, float(spec.get("tail", 0.2)))
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump({"out": out}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
