"""Cost of the compiled ipv4_fwd body on the chip: static size and the instructions and
cycles one frame takes, per path (forwarded, local, TTL expired), minus the test
harness' own dispatch (measured with an empty body).  Not a test:
`.venv/bin/python -m npkit.bench.me_body_cost`, from the repository root (it uses the
back-end test harness, tests/me/back/harness.py)."""
import importlib
from pathlib import Path

import numpy as np
from scapy.all import IP, UDP, Ether, raw

from npkit.compiler.mbl import NativeProgram, compile_file
from npkit.compiler.me.back import compile_body
from npkit.compiler.me.front import to_wir
from npkit.runtime.lpm import RouteTables
from npkit.sim import Chip

harness = importlib.import_module("tests.me.back.harness")

ROOT = Path(__file__).resolve().parents[1]
prog = compile_file(str(ROOT / "microblocks/ipv4_fwd.mbl"))
native = NativeProgram(prog)
native.write("nexthops", 1,
             {"dmac": 0x02AA00000001, "smac": 0x02BB00000001, "port": 1, "mtu": 1500})
RouteTables.of(native).load({(0x0A000000, 8): 1, (0x0A010000, 16): 1, (0x0A010200, 24): 1}, {})
native.table_add("local4", 0x0A000001, 1)
fn = to_wir(prog)
body = compile_body(fn)
CH = 26

def frame(dst="10.1.2.3"):
    return raw(Ether(dst="02:00:00:00:00:fe", src="02:00:00:00:00:01")
               / IP(src="198.18.0.1", dst=dst, ttl=64) / UDP(sport=1, dport=2) / (b"p" * 18))

def run(uc, fr):
    image = harness.build(uc, fn.window_bytes)
    chip = Chip(harness.small_config(64 << 20), seed=1)
    chip.load(image)
    for name, m in prog.memories.items():
        words = native.region(name)
        nz = np.nonzero(words)[0]
        for w in nz:
            if m.space == "sram":
                at = 4 * (m.word_offset + int(w))
                chip.sram(at >> CH)[(at & ((1 << CH) - 1)) // 4] = int(words[w])
            elif m.space == "scratch":
                chip.scratch()[m.word_offset + int(w)] = int(words[w])
    dram = chip.dram()
    base = harness.PKT_BASE
    dram[base:base + len(fr)] = np.frombuffer(fr, dtype=np.uint8)
    meta = [1, len(fr)] + [0] * 14
    meta[12] = base
    lm = chip.local_memory(0)
    lm[harness.META_BASE:harness.META_BASE + 16] = meta
    chip.run(until_idle=True, quiet_cycles=2_000_000)
    out = bytes(dram[base:base + len(fr)])
    metas = [int(x) for x in lm[harness.META_BASE:harness.META_BASE + 16]]
    return chip.instructions_retired, chip.now, out, metas

empty = "body_entry#:\n    br[body_exit#]\n"
base_i, base_c, *_ = run(empty, frame())
cases = {"forward /24": frame("10.1.2.3"), "forward /8": frame("10.9.9.9"),
         "local4": frame("10.0.0.1"),
         "ttl1": raw(Ether() / IP(dst="10.1.2.3", ttl=1) / UDP() / (b"p" * 18))}
print(f"static body instructions: {body.instructions}")
for name, fr in cases.items():
    i, c, out, metas = run(body.uc, fr)
    print(f"{name:12s} executed {i - base_i:4d} instr, cycles {c - base_c:5d}, "
          f"verdict {metas[8]} code {metas[9]} port {metas[2]}")
