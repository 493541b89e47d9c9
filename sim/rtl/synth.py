"""Elaborate and synthesise the RTL microengine with Yosys and summarise its size.

    python -m npkit.sim.rtl.synth            (Debian: apt-get install yosys; ~minutes)

Runs ``synth.ys`` (generic gates; the arrays kept as RAM blocks, ``$mem_v2``, as a RAM
macro would hold them) with a JSON netlist written beside it, and prints the cell count,
the flip-flops outside the RAM blocks, and each RAM block with its width, depth and ports.
docs/rtl.md records the result.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from npkit.base.errors import NpkitError

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "synth.ys"


class SynthError(NpkitError):
    """Yosys is missing or failed."""


@dataclass(frozen=True)
class RamBlock:
    name: str
    width: int
    depth: int
    read_ports: int
    write_ports: int

    @property
    def bits(self) -> int:
        return self.width * self.depth


@dataclass(frozen=True)
class SynthSummary:
    cells: Counter[str]
    rams: list[RamBlock]

    @property
    def flip_flops(self) -> int:
        return sum(n for kind, n in self.cells.items() if "DFF" in kind)

    def text(self) -> str:
        logic = sum(n for kind, n in self.cells.items() if kind != "$mem_v2")
        lines = [f"cells: {sum(self.cells.values())} ({logic} gates and flip-flops, "
                 f"{len(self.rams)} RAM blocks)",
                 f"flip-flops outside the RAM blocks: {self.flip_flops}",
                 f"RAM bits: {sum(r.bits for r in self.rams)}"]
        lines += [f"  {kind}: {n}" for kind, n in sorted(self.cells.items())]
        lines += [f"  RAM {r.name}: {r.depth} x {r.width} bits, {r.read_ports} read / "
                  f"{r.write_ports} write ports" for r in sorted(self.rams, key=lambda r: -r.bits)]
        return "\n".join(lines)


def _param(value: str | int) -> int:
    return value if isinstance(value, int) else int(value, 2)


def summarise(netlist: dict) -> SynthSummary:
    module = netlist["modules"]["npk_me"]
    cells: Counter[str] = Counter()
    rams = []
    for cell in module["cells"].values():
        cells[cell["type"]] += 1
        if cell["type"] == "$mem_v2":
            p = cell["parameters"]
            rams.append(RamBlock(name=p["MEMID"].lstrip("\\").split("$")[0].rstrip("."),
                                 width=_param(p["WIDTH"]), depth=_param(p["SIZE"]),
                                 read_ports=_param(p["RD_PORTS"]),
                                 write_ports=_param(p["WR_PORTS"])))
    return SynthSummary(cells, rams)


def run() -> SynthSummary:
    exe = shutil.which("yosys")
    if exe is None:
        raise SynthError("yosys is not installed (Debian: apt-get install yosys)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "npk_me.json"
        done = subprocess.run([exe, "-q", "-p", f"script {SCRIPT.name}; write_json {out}"],
                              cwd=HERE, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SynthError(f"yosys failed:\n{done.stderr[-3000:]}")
        return summarise(json.loads(out.read_text()))


def main() -> None:
    print(run().text())


if __name__ == "__main__":
    main()
