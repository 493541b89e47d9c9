"""``RtlME``: the Verilated RTL microengine (sim/rtl/npk_me.sv), driven from Python.

    me = RtlME.for_config(ChipConfig.load("ixp2800"))
    me.load(words, ctx_mode=8)
    me.run(10_000, until_idle=True)
    me.read("gpr_a", 3), me.context(0).pc, me.status().fault

The library is built on first use (``build.build``) and loaded with ctypes; its C API is
``harness.cpp``.  Register files are addressed by physical index (context ``c`` owns
``c*per_ctx .. c*per_ctx+per_ctx-1``, as in the C++ model).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from npkit.base.errors import NpkitError
from npkit.sim import isa
from npkit.sim.config import ChipConfig
from npkit.sim.rtl.build import RtlParams, build

FILES = {"gpr_a": 0, "gpr_b": 1, "xfer_s_in": 2, "xfer_s_out": 3, "xfer_d_in": 4,
         "xfer_d_out": 5, "lm": 6, "nn": 7, "next_nn": 8}  # next_nn: the next ME's, testbench side
CTX_STATES = ("inactive", "ready", "executing", "sleeping")  # the model's state names
FAULTS = {0: None, 1: "illegal_instruction", 2: "not_covered", 3: "bad_address",
          4: "illegal_instruction", 5: "control_store_overflow", 6: "ring_overflow",
          7: "illegal_instruction"}
FAULT_DETAIL = {4: "a taken branch or context swap in a defer slot",
                7: "mul_step out of sequence"}

# the deliberately broken instructions npk_me.sv can simulate (its "mutants" section)
MUTANTS = {"alu_xor_is_or": 1, "bge_inverted": 2, "lm_index0_inc_by_8": 3}

_U64P = ctypes.POINTER(ctypes.c_uint64)


class RtlError(NpkitError):
    """A misuse of the RTL ME (bad register file, index out of range, image too big)."""


@dataclass(frozen=True)
class RtlContext:
    pc: int
    state: str
    condition_codes: tuple[bool, bool, bool, bool]  # Z N C V
    pending_signals: int
    instructions: int
    lm_addr: tuple[int, int]


@dataclass(frozen=True)
class RtlStatus:
    cycle: int
    idle: bool
    fault: str | None      # None while running; "not_covered" names an unimplemented word
    fault_detail: str
    fault_word: int
    fault_pc: int
    fault_ctx: int
    retired: int

    def fault_instruction(self) -> str:
        """The faulting word's instruction name (from the ISA table), for reports."""
        opcode = self.fault_word >> isa.PAYLOAD_BITS
        ins = isa.BY_OPCODE.get(opcode)
        return ins.name if ins else f"opcode {opcode}"


def splitmix64_stream(seed: int, count: int) -> list[int]:
    """The model's per-ME PRNG seeds: ME i gets the i-th splitmix64 output of the chip seed
    (sim/core/chip.cpp, Chip::Chip), so PSEUDO_RANDOM_NUMBER agrees with the model."""
    mask = (1 << 64) - 1
    x = seed & mask
    out = []
    for _ in range(count):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(z ^ (z >> 31))
    return out


class RtlME:
    """One RTL microengine in a Verilated library (one instance per object)."""

    def __init__(self, library: Path, params: RtlParams, me: int = 0, seed: int = 1) -> None:
        self.params = params
        self.me = me
        self.prng_seed = splitmix64_stream(seed, me + 1)[me]
        self._lib = ctypes.CDLL(str(library))
        self._declare()
        self._handle = ctypes.c_void_p(self._lib.npk_rtl_new())
        self.ctx_mode = 8

    @classmethod
    def for_config(cls, config: ChipConfig, me: int = 0, seed: int = 1,
                   defines: tuple[str, ...] = ()) -> RtlME:
        params = RtlParams.from_config(config, me, defines)
        return cls(build(params), params, me, seed)

    def _declare(self) -> None:
        lib = self._lib
        lib.npk_rtl_new.restype = ctypes.c_void_p
        lib.npk_rtl_free.argtypes = [ctypes.c_void_p]
        lib.npk_rtl_load.argtypes = [ctypes.c_void_p, _U64P, ctypes.c_uint32, ctypes.c_int,
                                     ctypes.c_uint64, ctypes.c_int]
        _U32P = ctypes.POINTER(ctypes.c_uint32)
        lib.npk_rtl_until.argtypes = [ctypes.c_void_p, ctypes.c_uint64, _U64P]
        lib.npk_rtl_deliver.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                        ctypes.c_int]
        lib.npk_rtl_inputs.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                       ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                                       ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32]
        lib.npk_rtl_state.argtypes = [ctypes.c_void_p, _U32P, ctypes.c_uint32]
        lib.npk_rtl_state.restype = ctypes.c_uint32
        lib.npk_rtl_set_state.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32,
                                          ctypes.c_uint64]
        lib.npk_rtl_run.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int]
        lib.npk_rtl_run.restype = ctypes.c_uint64
        lib.npk_rtl_signal.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.npk_rtl_read.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                     ctypes.POINTER(ctypes.c_uint32)]
        lib.npk_rtl_write.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                      ctypes.c_uint32]
        lib.npk_rtl_lm_words.argtypes = [ctypes.c_void_p]
        lib.npk_rtl_lm_words.restype = ctypes.c_uint32
        lib.npk_rtl_context.argtypes = [ctypes.c_void_p, ctypes.c_int, _U64P]
        lib.npk_rtl_status.argtypes = [ctypes.c_void_p, _U64P]
        lib.npk_rtl_trace.argtypes = [ctypes.c_void_p, _U64P, ctypes.c_int]
        lib.npk_rtl_set_mutant.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.npk_rtl_wave_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.npk_rtl_wave_close.argtypes = [ctypes.c_void_p]

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None and handle.value:
            self._lib.npk_rtl_free(handle)
            self._handle = None

    # ---------------------------------------------------------------- control
    def load(self, words: Sequence[int], ctx_mode: int = 8) -> None:
        """Put an image (40-bit words, e.g. an assembled ``Image.words``) in the control store
        and reset the ME: every context of the mode Ready at PC 0, registers zero."""
        if ctx_mode not in (4, 8):
            raise RtlError(f"context mode must be 4 or 8, got {ctx_mode}")
        if len(words) > self.params.cs_words:
            raise RtlError(f"{len(words)} words do not fit the {self.params.cs_words}-word "
                           "control store")
        array = (ctypes.c_uint64 * max(1, len(words)))(*[int(w) for w in words])
        self._lib.npk_rtl_load(self._handle, array, len(words), int(ctx_mode == 4),
                               self.prng_seed, self.params.me_number)
        self.ctx_mode = ctx_mode

    def run(self, cycles: int, until_idle: bool = False) -> int:
        """Run up to ``cycles`` cycles; stops early at a fault or (until_idle) when no context
        can run.  Returns the cycles run."""
        return int(self._lib.npk_rtl_run(self._handle, cycles, int(until_idle)))

    def set_mutant(self, mutant: int) -> None:
        """Break one instruction on purpose (``MUTANTS``); 0 restores the clean RTL."""
        self._lib.npk_rtl_set_mutant(self._handle, mutant)

    def wave_open(self, path: str | Path) -> None:
        """Write a VCD waveform of every signal to ``path`` from now on, until
        ``wave_close`` (VCD time counts half clock cycles)."""
        if self._lib.npk_rtl_wave_open(self._handle, str(path).encode()):
            raise RtlError(f"cannot write the waveform {path}")

    def wave_close(self) -> None:
        self._lib.npk_rtl_wave_close(self._handle)

    def signal(self, ctx: int, sig: int) -> None:
        """Deliver signal ``sig`` to ``ctx``: pending from the next cycle on."""
        self._lib.npk_rtl_signal(self._handle, ctx, sig)

    # ---------------------------------------------------------------- lockstep
    def until(self, limit: int) -> tuple[int, tuple[int, ...]]:
        """Run cycles while the cycle counter is below ``limit``, stopping after the first
        cycle that retires an instruction: (1, (cycle, ctx, pc, cmd_valid, op, sub, xfer,
        count, sig, swap, a, b)), (0, ()) at the limit, (-1, ()) on a fault."""
        out = (ctypes.c_uint64 * 12)()
        rc = int(self._lib.npk_rtl_until(self._handle, limit, out))
        return rc, (tuple(int(v) for v in out) if rc == 1 else ())

    def deliver(self, ctx: int, sig: int, counts: bool) -> None:
        """A completion from outside: signal ``sig`` (0: none) for ``ctx`` and, with
        ``counts``, one command of the FIFO done; effective in the next cycle run."""
        self._lib.npk_rtl_deliver(self._handle, ctx, sig, int(counts))

    def inputs(self, xs_in: bytes, xd_in: bytes, nn: bytes, nn_put: int, next_put: int,
               next_get: int, ring_full: int, ring_empty: int) -> None:
        """Set what the rest of the chip wrote or shows (128 words each, little-endian)."""
        self._lib.npk_rtl_inputs(self._handle, xs_in, xd_in, nn, nn_put, next_put, next_get,
                                 ring_full, ring_empty)

    def state_bytes(self) -> bytes:
        """The state in the model's ``Core.lockstep_state`` layout (sim/core/lockstep.cpp)."""
        n = 6 * 128 + self.lm_words + 2 * 128 + 16 + 1
        out = (ctypes.c_uint32 * n)()
        self._lib.npk_rtl_state(self._handle, out, n)
        return bytes(out)

    def set_state(self, state: bytes, cycle: int) -> None:
        """Take the register files, local memory and NN files from a model state (the
        ``lockstep_state`` layout) and set the cycle counter."""
        if self._lib.npk_rtl_set_state(self._handle, state, len(state) // 4, cycle):
            raise RtlError("the model state is shorter than the RTL's")

    # ---------------------------------------------------------------- state
    @property
    def per_ctx(self) -> int:
        return 128 // self.ctx_mode

    @property
    def lm_words(self) -> int:
        return int(self._lib.npk_rtl_lm_words(self._handle))

    def read(self, file: str, index: int) -> int:
        out = ctypes.c_uint32()
        if self._lib.npk_rtl_read(self._handle, self._file(file), index, ctypes.byref(out)):
            raise RtlError(f"{file}[{index}] is out of range")
        return int(out.value)

    def write(self, file: str, index: int, value: int) -> None:
        if self._lib.npk_rtl_write(self._handle, self._file(file), index, value & 0xFFFF_FFFF):
            raise RtlError(f"{file}[{index}] is out of range")

    def local_memory(self) -> list[int]:
        return [self.read("lm", i) for i in range(self.lm_words)]

    def context(self, ctx: int) -> RtlContext:
        out = (ctypes.c_uint64 * 10)()
        self._lib.npk_rtl_context(self._handle, ctx, out)
        return RtlContext(pc=int(out[0]), state=CTX_STATES[out[1]],
                          condition_codes=(bool(out[2]), bool(out[3]), bool(out[4]),
                                           bool(out[5])),
                          pending_signals=int(out[6]), instructions=int(out[7]),
                          lm_addr=(int(out[8]), int(out[9])))

    def status(self) -> RtlStatus:
        out = (ctypes.c_uint64 * 7)()
        self._lib.npk_rtl_status(self._handle, out)
        code = int(out[2])
        return RtlStatus(cycle=int(out[0]), idle=bool(out[1]), fault=FAULTS.get(code, "fault"),
                         fault_detail=FAULT_DETAIL.get(code, ""), fault_word=int(out[3]),
                         fault_pc=int(out[4]), fault_ctx=int(out[5]), retired=int(out[6]))

    def trace(self, count: int = 16) -> list[tuple[int, int, int]]:
        """The last retired instructions, oldest first: (cycle, ctx, pc)."""
        out = (ctypes.c_uint64 * (3 * count))()
        n = self._lib.npk_rtl_trace(self._handle, out, count)
        return [(int(out[3 * k]), int(out[3 * k + 1]), int(out[3 * k + 2])) for k in range(n)]

    @staticmethod
    def _file(name: str) -> int:
        try:
            return FILES[name]
        except KeyError:
            raise RtlError(f"no register file {name!r}; one of {', '.join(FILES)}") from None
