"""Lockstep inside the chip: one ME of a running simulated chip mirrored by the RTL ME.

    mirror = Lockstep.attach(chip, me=2)           # after loading, before the first run
    chip.run(cycles=200_000)                        # raises LockstepMismatch on a difference
    mirror.checked                                  # instructions compared

The model runs the whole chip as usual; the core logs every instruction the chosen ME
retires and every delivery to it (sim/core/lockstep.cpp) and stops after each of its
instructions.  The RTL ME replays the same instruction stream: deliveries (a signal, a
completed command) are injected in the cycle they take effect in the model, the transfer-in
and NN registers and the scratch ring states are copied in from the model before each
instruction (the rest of the chip writes them), and the RTL only *issues* commands -- the
model serves memory.  After every instruction the two must agree on the cycle, context and
PC it retired at, the command it issued (unit, command, transfer register, count, signal,
ctx_swap, A and B operand values) and the whole architectural state (GPRs, transfer
registers, local memory, NN registers of this ME and of the next one (our writes), every
context's PC and condition codes, outstanding commands).  A word the RTL does not implement
stops the run with "not covered: <instruction>".  docs/rtl.md, "Lockstep inside the chip".
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from npkit.base.errors import NpkitError
from npkit.sim import isa
from npkit.sim.rtl.cosim import render
from npkit.sim.rtl.rtlme import RtlME

HISTORY = 16  # instructions shown before a mismatch
RETIRE, DELIVERY = 0, 1
_COMMANDS = {i.opcode for i in isa.INSTRUCTIONS
             if i.name in ("sram", "scratch", "dram", "msf", "hash")}
_NN_SIGNAL = isa.LOCAL_CSRS["NEXT_NEIGHBOR_SIGNAL"]


def _show_command(fields: tuple[int, ...] | None) -> str:
    if fields is None:
        return "none"
    names = ("unit", "cmd", "xfer", "count", "sig", "ctx_swap", "a", "b")
    return " ".join(f"{n}={v:#x}" if n in ("a", "b") else f"{n}={v}"
                    for n, v in zip(names, fields, strict=True))


class LockstepMismatch(NpkitError):
    """The RTL ME and the model ME disagree (or the RTL does not cover an instruction)."""

    def __init__(self, report: str) -> None:
        super().__init__(report)
        self.report = report


@dataclass(frozen=True)
class _Layout:
    """Where each part of a ``lockstep_state`` blob is (sim/core/lockstep.cpp), in words."""

    lm_words: int

    def parts(self) -> list[tuple[str, int, int]]:
        files = ["gpr_a", "gpr_b", "$ in", "$ out", "$$ in", "$$ out"]
        parts = [(name, 128 * k, 128) for k, name in enumerate(files)]
        at = 6 * 128
        parts.append(("local memory", at, self.lm_words))
        at += self.lm_words
        parts += [("nn", at, 128), ("next ME nn", at + 128, 128)]
        return parts

    @property
    def contexts(self) -> int:
        return 8 * 128 + self.lm_words

    def name(self, word: int) -> str:
        if word >= self.contexts:
            k = word - self.contexts
            if k >= 16:
                return "outstanding commands"
            return f"ctx {k // 2} " + ("pc" if k % 2 == 0 else "condition codes ZNCV")
        for name, start, length in self.parts():
            if start <= word < start + length:
                return f"{name}[{word - start}]"
        return f"word {word}"

    @cached_property
    def _spans(self) -> dict[str, tuple[int, int]]:
        """Each part's byte range, computed once (slice runs three times an instruction)."""
        return {name: (4 * start, 4 * (start + length)) for name, start, length in self.parts()}

    def slice(self, blob: bytes, part: str) -> bytes:
        start, end = self._spans[part]
        return blob[start:end]


@dataclass
class Lockstep:
    """The RTL mirror of ME ``me`` of ``chip`` (a ``npkit.sim.Chip``)."""

    chip: Any
    me: int
    rtl: RtlME
    image: Any
    layout: _Layout
    checked: int = 0          # instructions compared
    deliveries: int = 0       # deliveries injected
    commands: int = 0         # commands compared
    history: deque[str] = field(default_factory=lambda: deque(maxlen=HISTORY))
    # Per pc, what cannot change while the image is loaded: the instruction rendered with its
    # source, and the command it issues (operand values aside).  Every retired instruction
    # needs both; decoding and rendering them each time was about half of a lockstep run.
    _texts: dict[int, str] = field(default_factory=dict, repr=False)
    _shapes: dict[int, tuple[tuple[int, ...], bool] | None] = field(default_factory=dict,
                                                                    repr=False)

    @classmethod
    def attach(cls, chip: Any, me: int, *, wave: str | Path | None = None) -> Lockstep:
        """Mirror ME ``me`` of a loaded chip that has not run yet."""
        me = chip.config.check_me(me)
        image = chip._images.get(me)
        if image is None:
            raise NpkitError(f"ME {me} has no image loaded: nothing to run in lockstep")
        if chip.instructions_retired:
            raise NpkitError("lockstep starts from the loaded state: attach it before the "
                             "first run")
        rtl = RtlME.for_config(chip.config, me=me, seed=chip.seed)
        rtl.load(image.words, image.ctx_mode)
        core = chip._core
        rtl.set_state(bytes(core.lockstep_state(me)), chip.now)
        if wave is not None:
            rtl.wave_open(wave)
        mirror = cls(chip, me, rtl, image, _Layout(rtl.lm_words))
        core.lockstep_me = me
        chip.attach_lockstep(mirror)
        return mirror

    def detach(self) -> None:
        self.chip._core.lockstep_me = -1
        self.chip.attach_lockstep(None)
        self.rtl.wave_close()

    # ---------------------------------------------------------------- the run
    def run(self, core: Any, max_cycles: int, stop_tx_frames: int, until_idle: bool) -> str:
        """``Core.run`` with the mirror: the core stops after each instruction of the ME
        ("lockstep"); the RTL replays and compares, and the run goes on to the same limit."""
        limit = core.now + max_cycles
        while True:
            reason = str(core.run(max(0, limit - core.now), stop_tx_frames, until_idle))
            self._replay(core)
            if reason != "lockstep":
                return reason

    def _replay(self, core: Any) -> None:
        records = core.lockstep_take()
        last_retire = max((k for k, r in enumerate(records) if r[0] == RETIRE), default=-1)
        for k, rec in enumerate(records):
            kind, time, ctx, pc, counts, a, b, nn_put, next_put, next_get, rfull, rempty = rec
            if kind == DELIVERY:
                self._advance(time, f"a delivery to ctx {ctx} at cycle {time}")
                self.rtl.deliver(ctx, pc, bool(counts))
                self.deliveries += 1
                continue
            state = bytes(core.lockstep_state(self.me))
            self.rtl.inputs(self.layout.slice(state, "$ in"), self.layout.slice(state, "$$ in"),
                            self.layout.slice(state, "nn"), nn_put, next_put, next_get,
                            rfull, rempty)
            self._retire(time, ctx, pc, a, b)
            if k == last_retire:  # the model's state is the one after this instruction
                self._compare_state(state, time, ctx, pc)

    def _advance(self, cycle: int, why: str) -> None:
        """Run the RTL up to (not including) ``cycle``; it must retire nothing on the way."""
        rc, got = self.rtl.until(cycle)
        if rc == 1:
            self._fail(got[0], got[1], got[2],
                       [f"the RTL retired this instruction; the model retired nothing before "
                        f"{why}"])
        if rc < 0:
            self._rtl_fault()

    def _retire(self, time: int, ctx: int, pc: int, a: int, b: int) -> None:
        rc, got = self.rtl.until(time + 1)
        if rc < 0:
            self._rtl_fault()
        if rc == 0:
            self._fail(time, ctx, pc, [f"the model retired this instruction at cycle {time}; "
                                       "the RTL retired nothing by then"])
        cycle, rctx, rpc = got[:3]
        if (cycle, rctx, rpc) != (time, ctx, pc):
            self._fail(time, ctx, pc, [
                f"retired: model cycle {time} ctx {ctx} pc {pc}, "
                f"RTL cycle {cycle} ctx {rctx} pc {rpc} ({render(self._word(rpc))})"])
        self._compare_command(time, ctx, pc, a, b, got)
        self.history.append(self._line(time, ctx, pc))
        self.checked += 1

    def _compare_command(self, time: int, ctx: int, pc: int, a: int, b: int,
                         got: tuple[int, ...]) -> None:
        if pc not in self._shapes:
            self._shapes[pc] = self._command_shape(self._word(pc))
        expected = self._with_operands(self._shapes[pc], a, b)
        actual = None if not got[3] else got[4:12]
        if expected is None and actual is None:
            return
        self.commands += 1
        if expected != actual:
            self._fail(time, ctx, pc, [f"command: model {_show_command(expected)}",
                                       f"         RTL   {_show_command(actual)}"])

    @staticmethod
    def _expected_command(word: int, a: int, b: int) -> tuple[int, ...] | None:
        """The command a word issues per the ISA table, with the model's operand values."""
        return Lockstep._with_operands(Lockstep._command_shape(word), a, b)

    @staticmethod
    def _command_shape(word: int) -> tuple[tuple[int, ...], bool] | None:
        """The command a word issues without its operand values, and whether its A operand
        counts (an NN_SIGNAL write has only B), or None when it issues none."""
        try:
            ins, f = isa.decode(word)
        except ValueError:
            return None
        if ins.opcode in _COMMANDS:
            sub = f.get("cmd", f.get("size", 0))
            return (ins.opcode, sub, f["xfer"], f["count"], f["sig"], f["swap"]), True
        if ins.name == "local_csr" and f["write"] and f["csr"] == _NN_SIGNAL:
            return (ins.opcode, 0, 0, 0, 0, 0), False
        return None

    @staticmethod
    def _with_operands(shape: tuple[tuple[int, ...], bool] | None, a: int,
                       b: int) -> tuple[int, ...] | None:
        if shape is None:
            return None
        fields, uses_a = shape
        return (*fields, a if uses_a else 0, b)

    def _compare_state(self, model: bytes, time: int, ctx: int, pc: int) -> None:
        rtl = self.rtl.state_bytes()
        if rtl == model:
            return
        n = min(len(rtl), len(model)) // 4
        mw = struct.unpack(f"<{n}I", model[:4 * n])
        rw = struct.unpack(f"<{n}I", rtl[:4 * n])
        lines = [f"{self.layout.name(i)}: model {m:#010x}, RTL {r:#010x}"
                 for i, (m, r) in enumerate(zip(mw, rw, strict=True)) if m != r]
        shown = lines[:12] + ([f"... and {len(lines) - 12} more"] if len(lines) > 12 else [])
        self._fail(time, ctx, pc, ["state after it differs:", *shown], after=True)

    def _rtl_fault(self) -> None:
        st = self.rtl.status()
        if st.fault == "not_covered":
            self.rtl.wave_close()
            raise LockstepMismatch(f"not covered: {st.fault_instruction()} (ME {self.me} ctx "
                                   f"{st.fault_ctx} pc {st.fault_pc}, cycle {st.cycle}"
                                   f"{self._where(st.fault_pc)}): the RTL ME does not "
                                   "implement it, so the run cannot go on in lockstep")
        detail = f": {st.fault_detail}" if st.fault_detail else ""
        self._fail(st.cycle, st.fault_ctx, st.fault_pc,
                   [f"the RTL faulted ({st.fault}{detail}); the model did not"])

    # ---------------------------------------------------------------- reports
    def _word(self, pc: int) -> int:
        words = self.image.words
        return int(words[pc]) if 0 <= pc < len(words) else 0

    def _where(self, pc: int) -> str:
        try:
            source = self.image.source_of(pc)
        except (AttributeError, IndexError, KeyError, ValueError):
            source = None
        return f"   [{source}]" if source else ""

    def _variables(self, pc: int) -> list[str]:
        """The MBL variables in scope at pc (a compiled image's debug info), named."""
        at = getattr(self.image, "variables_at", None)
        names = sorted({v.variable.name for v in at(pc)}) if at is not None else []
        return [f"  MBL variables in scope: {', '.join(names)}"] if names else []

    def _line(self, cycle: int, ctx: int, pc: int) -> str:
        text = self._texts.get(pc)
        if text is None:
            text = self._texts[pc] = f"{render(self._word(pc))}{self._where(pc)}"
        return f"cycle {cycle} ctx {ctx} pc {pc}: {text}"

    def _fail(self, cycle: int, ctx: int, pc: int, detail: list[str],
              after: bool = False) -> None:
        label = self.chip.config.me_label(self.me)
        head = "first difference after" if after else "at"
        history = list(self.history)
        if after and history:
            history = history[:-1]  # the instruction itself is named above
        text = [f"lockstep mismatch: RTL ME and model ME {self.me} ({label}) after "
                f"{self.checked:,} instructions compared",
                f"{head}: {self._line(cycle, ctx, pc)}",
                *[f"  {d}" for d in detail],
                *self._variables(pc),
                f"last instructions on both (oldest first, {len(history)}):",
                *[f"  {h}" for h in history]]
        self.rtl.wave_close()  # the waveform up to the mismatch, complete on disk
        raise LockstepMismatch("\n".join(text))
