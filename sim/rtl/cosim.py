"""Run one image on the RTL microengine and on one ME of the C++ model; compare; report.

``compare(words, ...)`` loads the same words on ME ``me`` of a fresh model chip (no other ME
loaded, so no memory traffic) and on an ``RtlME``, writes the same initial registers and
local memory into both, runs both until no context can run (or a cycle limit), and compares
the architectural state: per context PC, state, condition codes, pending signals and
instruction count; every GPR, transfer register and local-memory word; and the cycle count
(the RTL is cycle-accurate to the model's timing, docs/rtl.md).

On a difference it searches (by bisection over re-runs) the first cycle after which the two
disagree and reports the instruction the RTL retired there -- cycle, context, PC, the
decoded instruction, its source line when the caller passes ``source_of`` --, the expected
(model) and actual (RTL) values, and the last instructions before it.  An instruction the
RTL does not implement ends the run with outcome ``not_covered`` and the instruction's
name: never a silent pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npkit.sim import _core, isa
from npkit.sim.config import ChipConfig
from npkit.sim.rtl.rtlme import RtlME

MASK32 = 0xFFFF_FFFF
_CLASS_BY_NAME = {c.name: c for c in isa.OPERAND_CLASSES}


@dataclass(frozen=True)
class InitState:
    """Initial values written into both machines after load: registers by (ctx, operand
    code) -- GPRs and the *in* side of transfer registers --, and local-memory words."""

    regs: tuple[tuple[int, int, int], ...] = ()  # (ctx, operand code, value)
    lm: tuple[tuple[int, int], ...] = ()          # (word index, value)


@dataclass(frozen=True)
class Mismatch:
    what: str
    model: Any
    rtl: Any

    def text(self) -> str:
        def show(v: Any) -> str:
            return f"{v:#010x}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
        return f"{self.what}: model {show(self.model)}, RTL {show(self.rtl)}"


@dataclass
class Report:
    """The outcome of one co-simulation."""

    outcome: str                  # "agree", "mismatch" or "not_covered"
    cycles: int
    mismatches: list[Mismatch] = field(default_factory=list)
    culprit: str = ""             # the instruction after which the two first disagree
    history: list[str] = field(default_factory=list)
    model_end: str = ""           # "idle", "cycles" or the model's fault kind
    rtl_end: str = ""
    pair: _Pair | None = field(default=None, repr=False)  # the machines, to re-run

    @property
    def ok(self) -> bool:
        return self.outcome == "agree"

    def text(self) -> str:
        if self.ok:
            return f"RTL and model agree ({self.cycles} cycles, model: {self.model_end})"
        lines = [f"RTL and model: {self.outcome} (model ended: {self.model_end}; "
                 f"RTL ended: {self.rtl_end})"]
        if self.culprit:
            lines.append(f"first difference after: {self.culprit}")
        lines += ["  " + m.text() for m in self.mismatches[:20]]
        if len(self.mismatches) > 20:
            lines.append(f"  ... {len(self.mismatches) - 20} more")
        if self.history:
            lines.append("last instructions on the RTL (oldest first):")
            lines += ["  " + h for h in self.history]
        return "\n".join(lines)


_COMMAND_OPCODES = frozenset(i.opcode for i in isa.INSTRUCTIONS
                             if i.name in ("sram", "scratch", "dram", "msf", "hash"))


# ---------------------------------------------------------------- instruction text
def render_operand(code: int) -> str:
    cls = isa.operand_class(code)
    if cls is None:
        return f"<reserved {code:#x}>"
    i = code - cls.first
    return {"gpr_a": f"a{i}", "gpr_b": f"b{i}", "xfer_s": f"${i}", "xfer_d": f"$${i}",
            "nn": f"n${i}", "lm0": f"*l$index0[{i}]", "lm1": f"*l$index1[{i}]",
            "lm0_inc": "*l$index0++", "lm0_dec": "*l$index0--", "lm1_inc": "*l$index1++",
            "lm1_dec": "*l$index1--", "nn_ring": "*n$index++", "none": "--",
            "imm": str(i)}[cls.name]


def render(word: int) -> str:
    """A word as 'name field=value ...' from the ISA table (enum values by name)."""
    try:
        ins, fields = isa.decode(word)
    except ValueError as err:
        return f"<{err}>"
    parts = []
    for fld in isa.FORMATS[ins.format].fields:
        v = fields[fld.name]
        if fld.kind == "opnd":
            text = render_operand(v)
        elif fld.kind.startswith("enum:"):
            table = ins.cmds if fld.kind == "enum:CMD" else isa.ENUMS[fld.kind[5:]]
            text = next((k for k, x in table.items() if x == v), str(v))
        elif fld.kind == "csr":
            text = next((k for k, x in isa.LOCAL_CSRS.items() if x == v), str(v))
        else:
            text = str(v)
        parts.append(f"{fld.name}={text}")
    return f"{ins.name} " + " ".join(parts)


# ---------------------------------------------------------------- the two machines
@dataclass
class _Pair:
    words: Sequence[int]
    ctx_mode: int
    config: ChipConfig
    me: int
    seed: int
    init: InitState
    rtl: RtlME

    def model(self, cycles: int) -> tuple[Any, str]:
        """A fresh model chip run for up to ``cycles``: (core, how it ended); a fault ends as
        "kind ctx C pc P"."""
        core = _core.Core(self.config.to_core_dict(), self.seed)
        try:
            core.load(self.me, list(self.words), self.ctx_mode)
        except _core.SimFault as err:  # the model checks every word at load
            return core, f"{err.kind} (at load)"
        for ctx, code, value in self.init.regs:
            core.write_reg(self.me, ctx, code, value)
        lm = core.local_memory(self.me)
        for index, value in self.init.lm:
            lm[index] = value
        try:
            end = core.run(cycles, until_idle=True)
        except _core.SimFault as err:
            end = f"{err.kind} ctx {err.ctx} pc {err.pc}"
        return core, end

    def run_rtl(self, cycles: int) -> str:
        """The RTL loaded afresh and run for up to ``cycles``: how it ended."""
        self.rtl.load(self.words, self.ctx_mode)
        per_ctx = 128 // self.ctx_mode
        for ctx, code, value in self.init.regs:
            file, index = _file_of(code)
            self.rtl.write(file, ctx * per_ctx + index, value)
        for index, value in self.init.lm:
            self.rtl.write("lm", index, value)
        self.rtl.run(cycles, until_idle=True)
        status = self.rtl.status()
        if status.fault:
            return f"{status.fault} ctx {status.fault_ctx} pc {status.fault_pc}"
        if status.idle:
            return "idle"
        return "cycles"


def _file_of(code: int) -> tuple[str, int]:
    cls = isa.operand_class(code)
    files = {"gpr_a": "gpr_a", "gpr_b": "gpr_b", "xfer_s": "xfer_s_in", "xfer_d": "xfer_d_in",
             "nn": "nn"}
    if cls is None or cls.name not in files:
        raise ValueError(f"initial state: operand code {code:#x} is not a GPR, transfer or "
                         "NN register")
    return files[cls.name], code - cls.first


def _state_diff(pair: _Pair, core: Any, model_end: str, rtl_end: str) -> list[Mismatch]:
    rtl, me, n = pair.rtl, pair.me, pair.ctx_mode
    per_ctx = 128 // n
    out: list[Mismatch] = []
    status = rtl.status()
    # a deadlock is the model's word for "idle with contexts asleep for good"
    model_as_rtl = "idle" if model_end == "idle" or model_end.startswith("deadlock") \
        else model_end
    if model_as_rtl != rtl_end:
        out.append(Mismatch("how the run ended", model_end, rtl_end))
    if model_as_rtl not in ("idle", "cycles"):
        # a fault: the model stops inside the instruction (part of it done), the RTL before
        # it, so only where it happened is compared
        return out
    if core.now != status.cycle:
        out.append(Mismatch("cycles", core.now, status.cycle))
    for ci in range(n):
        mc = core.context(me, ci)
        rc = rtl.context(ci)
        for what, mv, rv in (("pc", mc["pc"], rc.pc), ("state", mc["state"], rc.state),
                             ("condition codes ZNCV", tuple(mc["condition_codes"]),
                              rc.condition_codes),
                             ("pending signals", mc["pending_signals"], rc.pending_signals),
                             ("instructions", mc["instructions"], rc.instructions)):
            if mv != rv:
                out.append(Mismatch(f"ctx {ci} {what}", mv, rv))
        for idx in range(per_ctx):
            phys = ci * per_ctx + idx
            for name, cls, file in (("a", "gpr_a", "gpr_a"), ("b", "gpr_b", "gpr_b"),
                                    ("$", "xfer_s", "xfer_s_in"), ("$$", "xfer_d", "xfer_d_in"),
                                    ("n$", "nn", "nn")):
                if idx >= _CLASS_BY_NAME[cls].count:
                    continue  # n$ has 16 operand codes in either context mode
                mv = core.read_reg(me, ci, _CLASS_BY_NAME[cls].first + idx)
                rv = rtl.read(file, phys)
                if mv != rv:
                    where = f"{name}{idx}" + (" (in)" if name.startswith("$") else "")
                    out.append(Mismatch(f"ctx {ci} {where}", mv, rv))
            for kind, name, file in ((0, "$", "xfer_s_out"), (1, "$$", "xfer_d_out")):
                mv = core.read_xfer_out(me, ci, kind, idx)
                rv = rtl.read(file, phys)
                if mv != rv:
                    out.append(Mismatch(f"ctx {ci} {name}{idx} (out)", mv, rv))
    # the next ME's NN registers, which n$k and *n$index++ write (16 per context there: it
    # is not loaded, so its register files keep the default split)
    nxt = (me + 1) % pair.config.me_count
    if nxt != me:
        nn_first = _CLASS_BY_NAME["nn"].first
        for p in range(128):
            mv = core.read_reg(nxt, p // 16, nn_first + p % 16)
            rv = rtl.read("next_nn", p)
            if mv != rv:
                out.append(Mismatch(f"next ME's NN register {p}", mv, rv))
    model_lm = core.local_memory(me)
    for i in range(rtl.lm_words):
        mv, rv = int(model_lm[i]), rtl.read("lm", i)
        if mv != rv:
            out.append(Mismatch(f"local memory word {i}", mv, rv))
    return out


def compare(words: Sequence[int], *, ctx_mode: int = 8, config: ChipConfig | None = None,
            me: int = 0, seed: int = 1, init: InitState | None = None,
            max_cycles: int = 100_000, rtl: RtlME | None = None,
            source_of: Callable[[int], str | None] | None = None,
            wave: str | Path | None = None) -> Report:
    """Run words on both machines and compare (module docstring).  Pass ``rtl`` to reuse a
    built RTL ME (a mutant, or to save the library load); it must match config and me.
    ``wave``: write the RTL's VCD waveform there -- of the run up to the first difference
    on a mismatch, of the whole run otherwise."""
    report = _compare(words, ctx_mode, config, me, seed, init, max_cycles, rtl, source_of)
    if wave is not None and report.pair is not None:  # (no pair: a command, nothing run)
        pair = report.pair
        pair.rtl.wave_open(wave)
        try:
            pair.run_rtl(report.cycles if report.outcome == "mismatch" else max_cycles)
        finally:
            pair.rtl.wave_close()
    return report


def _compare(words: Sequence[int], ctx_mode: int, config: ChipConfig | None, me: int,
             seed: int, init: InitState | None, max_cycles: int, rtl: RtlME | None,
             source_of: Callable[[int], str | None] | None) -> Report:
    config = config or ChipConfig.load("ixp2800")
    rtl = rtl or RtlME.for_config(config, me, seed)
    for pc, word in enumerate(words):  # the RTL issues commands; only the chip completes them
        if word >> isa.PAYLOAD_BITS in _COMMAND_OPCODES:
            return Report("not_covered", 0, model_end="not run",
                          rtl_end=f"not covered here: {render(word)} at pc {pc} (a memory or "
                                  "unit command: the standalone compare has no memory to "
                                  "complete it; run the image in lockstep inside the chip, "
                                  "sim/rtl/lockstep.py)")
    pair = _Pair(words, ctx_mode, config, me, seed, init or InitState(), rtl)
    core, model_end = pair.model(max_cycles)
    rtl_end = pair.run_rtl(max_cycles)
    status = rtl.status()
    if rtl_end.startswith("not_covered"):
        return Report("not_covered", status.cycle, model_end=model_end,
                      rtl_end=f"not covered: {status.fault_instruction()} at ctx "
                              f"{status.fault_ctx} pc {status.fault_pc} "
                              f"({render(status.fault_word)})", pair=pair)
    diff = _state_diff(pair, core, model_end, rtl_end)
    if not diff:
        return Report("agree", status.cycle, model_end=model_end, rtl_end=rtl_end, pair=pair)
    return _explain(pair, diff, model_end, rtl_end, max_cycles, source_of)


def _explain(pair: _Pair, diff: list[Mismatch], model_end: str, rtl_end: str,
             max_cycles: int, source_of: Callable[[int], str | None] | None) -> Report:
    """Bisect over re-runs for the first cycle after which the machines disagree."""
    end_cycle = pair.rtl.status().cycle
    lo, hi = 0, max(1, min(max_cycles, end_cycle))

    def differs(cycles: int) -> list[Mismatch]:
        core, m_end = pair.model(cycles)
        return _state_diff(pair, core, m_end, pair.run_rtl(cycles))

    first = differs(hi)
    if first:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = differs(mid)
            if found:
                hi, first = mid, found
            else:
                lo = mid
        differs(hi)  # leave the RTL at the first differing point for its trace
    else:
        first = diff
    trace = pair.rtl.trace(12)
    history = [_line(pair, c, ctx, pc, source_of) for c, ctx, pc in trace]
    culprit = history[-1] if history else ""
    return Report("mismatch", hi, mismatches=first, culprit=culprit, history=history,
                  model_end=model_end, rtl_end=rtl_end, pair=pair)


def _line(pair: _Pair, cycle: int, ctx: int, pc: int,
          source_of: Callable[[int], str | None] | None) -> str:
    word = pair.words[pc] if pc < len(pair.words) else 0
    text = f"cycle {cycle} ctx {ctx} pc {pc}: {render(word)}"
    source = source_of(pc) if source_of else None
    return f"{text}   [{source}]" if source else text
