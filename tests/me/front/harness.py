"""Differential testing of the ME front end: the same program, memories and packets on the
native target (NativeProgram, the reference semantics) and on the WIR interpreter."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from npkit.compiler.mbl import NativeProgram, compile_file, compile_source
from npkit.compiler.mbl.lower import SPACE_IDS
from npkit.compiler.mbl.types import META_CODE, META_FIELDS, META_VERDICT
from npkit.compiler.me import wir
from npkit.compiler.me.front import to_wir
from npkit.compiler.me.interp import Machine, run
from npkit.runtime.lpm import RouteTables

REPO = Path(__file__).resolve().parents[3]
BIG_SPACE = 1 << 16        # words: spaces this big are cached between packets
KINDS = {"forward": 1, "drop": 2, "exception": 3, "next": 4, "none": 0}

# next-hop index -> (dmac, smac, port, mtu), as tests/mbl/test_router.py
NEXTHOPS = {1: (0x02AA00000001, 0x02BB00000001, 1, 1500),
            2: (0x02AA00000002, 0x02BB00000002, 2, 600),
            3: (0x02AA00000003, 0x02BB00000003, 3, 1280),
            4: (0x02AA00000004, 0x02BB00000004, 0, 68)}
FIB4 = [("10.0.0.0/8", 1), ("10.1.0.0/16", 2), ("10.1.2.0/24", 3), ("10.1.2.128/25", 4),
        ("192.0.2.0/24", 3), ("100.64.0.0/10", 1), ("10.9.9.9/32", 2), ("1.0.0.0/8", 4)]
FIB6 = [("2001:db8::/32", 1), ("2001:db8:5::/48", 3), ("2001:db8:6::/48", 2),
        ("2001:db8:6:1::/64", 4), ("2001:db8:6:1:2:3:4:5/128", 1), ("3000::/8", 2)]
LOCAL4 = ["10.0.0.1", "192.0.2.1"]
LOCAL6 = ["2001:db8::1", "2001:db8:5::1"]


@dataclass(frozen=True)
class Outcome:
    kind: int
    code: int
    out_port: int          # forward only
    next_hop: int          # exceptions only (native reports it there)
    data: bytes


@dataclass
class Pair:
    """A program on both targets with the same memories."""

    program: object
    native: NativeProgram
    fn: wir.Function

    def __post_init__(self) -> None:
        self._big: dict[int, dict[int, int]] = {}

    def memory(self) -> dict[int, dict[int, int]]:
        """The native memories as the interpreter's sparse dictionaries (copies; big spaces
        are read once and cached until a run writes them)."""
        out = {}
        for name, space in SPACE_IDS.items():
            words = self.native.memory[name]
            if space not in self._big:
                nz = np.nonzero(words)[0]
                image = {int(k): int(words[k]) for k in nz}
                if len(words) < BIG_SPACE:
                    out[space] = image
                    continue
                self._big[space] = image
            out[space] = dict(self._big[space])
        return out

    def native_outcome(self, frame: bytes, in_port: int) -> Outcome:
        (v,) = self.native.run([frame], in_port)
        kind = KINDS[v.kind]
        code = v.code
        if v.kind == "drop":
            code = self.program.reasons.id(v.reason)
        return Outcome(kind, code, v.port if v.kind == "forward" else 0,
                       v.next_hop if v.kind == "exception" else 0, v.data)

    def wir_outcome(self, frame: bytes, in_port: int, memory) -> tuple[Outcome, Machine]:
        meta = [0] * 16
        meta[META_FIELDS["in_port"].word] = in_port
        meta[META_FIELDS["len"].word] = len(frame)
        m = run(self.fn, Machine(bytearray(frame), meta=meta, memory=memory))
        kind = m.meta[META_VERDICT]
        return Outcome(kind, m.meta[META_CODE],
                       m.meta[META_FIELDS["out_port"].word] if kind == 1 else 0,
                       m.meta[META_FIELDS["next_hop"].word] if kind == 3 else 0,
                       bytes(m.packet)), m

    def check(self, frame: bytes, in_port: int = 0) -> Outcome:
        """Run one packet on both; the outcomes and the memories after must agree."""
        memory = self.memory()
        got, machine = self.wir_outcome(frame, in_port, memory)
        want = self.native_outcome(frame, in_port)
        assert got == want, f"WIR {got} != native {want} for {frame.hex()}"
        for name, space in SPACE_IDS.items():
            words = self.native.memory[name]
            for addr, value in machine.memory.get(space, {}).items():
                assert int(words[addr]) == value, f"{name}[{addr}]"
            if space in self._big and machine.memory.get(space) != self._big[space]:
                del self._big[space]
        return got


def compile_pair(path: Path | None = None, entry: str | None = None, source: str = "",
                 **kw) -> Pair:
    program = compile_file(path) if path else compile_source(source, "test.mbl")
    native = NativeProgram(program, entry, prefetch=False)
    return Pair(program, native, to_wir(program, entry, **kw))


def load_router_tables(native: NativeProgram) -> None:
    """Next hops, route tries and local addresses, as the router tests load them."""
    for index, (dmac, smac, port, mtu) in NEXTHOPS.items():
        native.write("nexthops", index, {"dmac": dmac, "smac": smac, "port": port, "mtu": mtu})
    tables = RouteTables.of(native)
    fib4 = {(int(n.network_address), n.prefixlen): nh
            for n, nh in ((ipaddress.ip_network(p), nh) for p, nh in FIB4)}
    fib6 = {(int(n.network_address), n.prefixlen): nh
            for n, nh in ((ipaddress.ip_network(p), nh) for p, nh in FIB6)}
    tables.load(fib4 if tables.v4 else {}, fib6 if tables.v6 else {})
    if "local4" in native.program.memories:
        for a in LOCAL4:
            native.table_add("local4", int(ipaddress.ip_address(a)), 1)
    if "local6" in native.program.memories:
        for a in LOCAL6:
            native.table_add("local6", int(ipaddress.ip_address(a)), 1)
