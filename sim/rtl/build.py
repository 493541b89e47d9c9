"""Build the Verilated RTL microengine into a shared library, on demand, in a cache directory.

``build(params)`` runs Debian's ``verilator`` on ``npk_isa_pkg.sv``, ``npk_me.sv``,
``npk_me_sim.sv`` and ``harness.cpp`` and links them into ``libnpkrtl.so``, which
``npkit.sim.rtl.rtlme`` loads with ctypes.  The library lives in
``$NPKIT_RTL_CACHE`` (default ``~/.cache/npkit/rtl``) under a key hashed from the sources,
the parameters, the defines and the Verilator version, so a changed source rebuilds and an
unchanged one is built once per machine.  Nothing here is committed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from npkit.base.errors import NpkitError
from npkit.sim.config import ChipConfig

HERE = Path(__file__).resolve().parent
SOURCES = ("npk_isa_pkg.sv", "npk_me.sv", "npk_me_sim.sv")
HARNESS = "harness.cpp"
TOP = "npk_me_sim"
LIBRARY = "libnpkrtl.so"


class RtlBuildError(NpkitError):
    """Verilator is missing or the RTL does not build."""


@dataclass(frozen=True)
class RtlParams:
    """The SystemVerilog parameters of npk_me, read from a chip config (no number typed twice)."""

    lm_words: int
    cs_words: int
    nn_regs: int
    branch_penalty: int
    lm_addr_delay: int
    me_number: int = 0
    defines: tuple[str, ...] = field(default=())  # e.g. ("NPK_MUTANT_ALU_XOR",)

    @classmethod
    def from_config(cls, config: ChipConfig, me: int = 0,
                    defines: tuple[str, ...] = ()) -> RtlParams:
        me_section = config.raw["me"]
        return cls(lm_words=config.local_memory_words, cs_words=config.control_store_words,
                   nn_regs=int(me_section["nn_registers"]),
                   branch_penalty=int(me_section["branch_taken_penalty"]),
                   lm_addr_delay=int(me_section["lm_addr_delay"]),
                   me_number=config.me_numbers[me], defines=tuple(defines))

    def verilator_args(self) -> list[str]:
        values = {"LM_WORDS": self.lm_words, "CS_WORDS": self.cs_words, "NN_REGS": self.nn_regs,
                  "BRANCH_PENALTY": self.branch_penalty, "LM_ADDR_DELAY": self.lm_addr_delay,
                  "ME_NUMBER": self.me_number}
        return [f"-G{k}={v}" for k, v in values.items()] + [f"-D{d}" for d in self.defines]


def verilator() -> str | None:
    """The verilator executable, or None when it is not installed."""
    return shutil.which("verilator")


def cache_root() -> Path:
    env = os.environ.get("NPKIT_RTL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "npkit" / "rtl"


def _key(params: RtlParams, exe: str) -> str:
    digest = hashlib.sha256()
    for name in (*SOURCES, HARNESS):
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    digest.update(repr(params).encode())
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    digest.update(version.stdout.encode())
    return digest.hexdigest()[:20]


def build(params: RtlParams, jobs: int = 2) -> Path:
    """The path of the built library for params (building it first when not cached)."""
    exe = verilator()
    if exe is None:
        raise RtlBuildError("verilator is not installed (Debian: apt-get install verilator)")
    target = cache_root() / _key(params, exe)
    lib = target / LIBRARY
    if lib.exists():
        return lib
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        cmd = [exe, "--cc", "--exe", "--build", "-j", str(jobs), "--top-module", TOP,
               "-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
               "-CFLAGS", "-fPIC -O2", "-LDFLAGS", "-shared", "-o", LIBRARY,
               "--Mdir", str(work / "obj"), *params.verilator_args(),
               *[str(HERE / s) for s in SOURCES], str(HERE / HARNESS)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
            raise RtlBuildError(f"verilator failed ({' '.join(cmd[:4])} ...):\n{tail}")
        staged = work / "lib"
        staged.mkdir()
        shutil.copy2(work / "obj" / LIBRARY, staged / LIBRARY)
        try:
            staged.rename(target)  # atomic: a concurrent build of the same key loses the race
        except OSError:
            if not lib.exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lib
