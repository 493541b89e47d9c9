"""Build the Verilated RTL microengine into a shared library, on demand, in a cache directory.

``build(params)`` runs Debian's ``verilator`` on ``npk_me.sv`` (which includes the
generated ``npk_isa.svh``) and ``npk_me_sim.sv``, and links the result with ``harness.cpp``
into ``libnpkrtl.so``, which ``npkit.sim.rtl.rtlme`` loads with ctypes.  It lives in
``$NPKIT_RTL_CACHE`` (default ``~/.cache/npkit/rtl``) under keys hashed from the sources,
the parameters and the Verilator version (the Verilated model, the slow part) and of the
harness (linked in seconds), so a changed source rebuilds and an unchanged one is built once
per machine.  Nothing here is committed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from npkit.base.errors import NpkitError
from npkit.sim.config import ChipConfig

HERE = Path(__file__).resolve().parent
SOURCES = ("npk_me.sv", "npk_me_sim.sv")
INCLUDES = ("npk_isa.svh",)
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
    cmd_fifo_depth: int = 8
    me_number: int = 0  # an input of the model (one build serves every ME), not a parameter
    defines: tuple[str, ...] = field(default=())  # e.g. ("NPK_MUTANT_ALU_XOR",)

    @classmethod
    def from_config(cls, config: ChipConfig, me: int = 0,
                    defines: tuple[str, ...] = ()) -> RtlParams:
        me_section = config.raw["me"]
        fixed = {"gprs_per_bank": 128, "xfer_per_kind": 128, "nn_registers": 128,
                 "cam_entries": 16}  # sizes npk_me.sv does not take as parameters
        for key, size in fixed.items():
            if int(me_section[key]) != size:
                raise RtlBuildError(f"{config.name}: the RTL ME has {size} {key.replace('_', ' ')}"
                                    f", the config says {me_section[key]}")
        if int(me_section["command_fifo_depth"]) > 255:
            raise RtlBuildError(f"{config.name}: the RTL ME counts outstanding commands in 8 "
                                "bits (command_fifo_depth at most 255)")
        if int(me_section["branch_taken_penalty"]) > 15 or int(me_section["lm_addr_delay"]) > 15:
            raise RtlBuildError(f"{config.name}: the RTL ME counts branch_taken_penalty and "
                                "lm_addr_delay in 4 bits (at most 15)")
        return cls(lm_words=config.local_memory_words, cs_words=config.control_store_words,
                   nn_regs=int(me_section["nn_registers"]),
                   branch_penalty=int(me_section["branch_taken_penalty"]),
                   lm_addr_delay=int(me_section["lm_addr_delay"]),
                   cmd_fifo_depth=int(me_section["command_fifo_depth"]),
                   me_number=config.me_numbers[me], defines=tuple(defines))

    def verilator_args(self) -> list[str]:
        values = {"LM_WORDS": self.lm_words, "CS_WORDS": self.cs_words, "NN_REGS": self.nn_regs,
                  "BRANCH_PENALTY": self.branch_penalty, "LM_ADDR_DELAY": self.lm_addr_delay,
                  "CMD_FIFO_DEPTH": self.cmd_fifo_depth}
        return [f"-G{k}={v}" for k, v in values.items()] + [f"-D{d}" for d in self.defines]


def verilator() -> str | None:
    """The verilator executable, or None when it is not installed."""
    return shutil.which("verilator")


def cache_root() -> Path:
    env = os.environ.get("NPKIT_RTL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "npkit" / "rtl"


def _digest(names: tuple[str, ...], *extra: str) -> str:
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    for text in extra:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()[:20]


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=cwd)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise RtlBuildError(f"RTL build failed ({' '.join(cmd[:3])} ...):\n{tail}")


def _publish(work: Path, target: Path) -> None:
    """Move a finished build into place atomically (a concurrent build of the same key may
    have won the race: then its copy stays)."""
    try:
        work.rename(target)
    except OSError:
        if not target.exists():
            raise


# The C++ flags of Verilator's generated makefile (Vnpk_me_sim_classes.mk), for the runtime
# and harness objects compiled outside it.
_CXXFLAGS = ["-fPIC", "-Os", "-faligned-new", "-DVM_COVERAGE=0", "-DVM_SC=0", "-DVM_TRACE=1",
             "-DVM_TRACE_FST=0", "-DVM_TRACE_VCD=1", "-Wno-bool-operation", "-Wno-sign-compare",
             "-Wno-uninitialized", "-Wno-unused-but-set-variable", "-Wno-unused-parameter",
             "-Wno-unused-variable"]
# --trace: the model can write a VCD waveform (RtlME.wave_open); costs little when none is open
_VFLAGS = ["--trace", "-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "fast",
           "-CFLAGS", "-fPIC"]
_RUNTIME = ("verilated.cpp", "verilated_dpi.cpp", "verilated_threads.cpp", "verilated_vcd_c.cpp")


def _model(params: RtlParams, exe: str, jobs: int) -> Path:
    """Stage 1: the Verilated model and the Verilator runtime, compiled (the slow part),
    keyed by the SystemVerilog sources, the parameters and the Verilator version."""
    version = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             check=False).stdout
    flags = repr((_VFLAGS, _CXXFLAGS, _RUNTIME))
    key = repr(replace(params, me_number=0))  # the ME number is an input, not built in
    target = cache_root() / f"model-{_digest((*SOURCES, *INCLUDES), key, version, flags)}"
    if (target / "done").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=target.parent))
    try:
        _run([exe, "--cc", "--build", "-j", str(jobs), "--top-module", TOP, *_VFLAGS,
              "--Mdir", str(work), f"-I{HERE}", *params.verilator_args(),
              *[str(HERE / s) for s in SOURCES]])
        root = Path(subprocess.run([exe, "--getenv", "VERILATOR_ROOT"], capture_output=True,
                                   text=True, check=False).stdout.strip())
        for name in _RUNTIME:
            _run(["g++", *_CXXFLAGS, f"-I{root / 'include'}", f"-I{root / 'include' / 'vltstd'}",
                  "-c", "-o", name.replace(".cpp", ".o"), str(root / "include" / name)], cwd=work)
        (work / "root").write_text(str(root))
        (work / "done").write_text("")
        _publish(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def build(params: RtlParams, jobs: int = 2) -> Path:
    """The path of the built library for params (building what is not cached first)."""
    exe = verilator()
    if exe is None:
        raise RtlBuildError("verilator is not installed (Debian: apt-get install verilator)")
    model = _model(params, exe, jobs)
    lib = model / f"lib-{_digest((HARNESS,), repr(_CXXFLAGS))}" / LIBRARY
    if lib.exists():
        return lib
    root = Path((model / "root").read_text())
    work = Path(tempfile.mkdtemp(prefix="lib-", dir=model))
    try:
        # Stage 2: the harness, linked with the model into one shared library (seconds)
        _run(["g++", "-shared", *_CXXFLAGS, f"-I{model}", f"-I{root / 'include'}",
              f"-I{root / 'include' / 'vltstd'}", "-o", str(work / LIBRARY), str(HERE / HARNESS),
              *[str(model / n.replace(".cpp", ".o")) for n in _RUNTIME],
              str(model / f"V{TOP}__ALL.a"), "-pthread", "-latomic"])
        _publish(work, lib.parent)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return lib
