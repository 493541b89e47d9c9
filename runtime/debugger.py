"""A scriptable debugger over a loaded chip (docs/debugging.md).

`Debugger(chip, program)` drives a chip with images (and, for a linked MBL program, the
manifest's [program] table: drop counters, buffer layout).  It sets the core's stop
conditions (`Chip.set_breakpoints`, `step_after`, `add_watch`; docs/sim-core.md "Debug
hooks"), runs, and says where and why it stopped; between stops it reads registers, memories,
rings, signals and the packet a context holds.  `npkit debug` (npkit/cli/debug.py) is a
REPL over exactly this API, and the tests drive it directly:

    dbg = Debugger(run.chip, run.program)
    dbg.offer(0, frames)                          # frames up front: part of the chip state
    dbg.break_drop("bad_checksum")                # or break_line("ipv4_fwd.mbl:79"), ...
    stop = dbg.cont()                             # Stop(reason, me, ctx, pc, source, ...)
    dbg.packet(stop.me, stop.ctx)                 # the frame that context holds
    dbg.checkpoint(); ...; dbg.reverse()          # back to the checkpoint

Breakpoints are of five kinds: a source line (every PC whose debug info names that
file:line, on every ME running the image), a microcode label or PC, a memory watchpoint
(stop after an instruction changes the range), a drop reason (a watchpoint on the
program's drop counter of that reason: it stops in the context that counts the drop, right
after the count, with the dropped frame's handle still in its `handle` register), and a
packet's arrival (frames received; checked between short runs).  A fault ends `cont` with
a `fault` stop.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from npkit.base.errors import NpkitError
from npkit.sim import isa
from npkit.sim.chip import Chip, ChipSnapshot, SimFault
from npkit.sim.packets import ListSink

from .debug_condition import Condition, ConditionError

ARRIVAL_SLICE_CYCLES = 50      # run slices while a packet-arrival breakpoint is set
DEFAULT_BUDGET_CYCLES = 5_000_000
STEP_LINE_LIMIT = 20_000       # instructions one step-line may take before giving up
HANDLE_REGISTER = "handle"     # the dispatch loop's name of the frame's handle register
TAG_MASK = 0x1F                # link/dispatch/fwd.uc: the tag bits of a handle word
_DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(\S+)")
_REGISTER = re.compile(r"^(?:[ab]\d+|\$\$?\d+|n\$\d+)$")


class DebugError(NpkitError, ValueError):
    """A debugger request that cannot be done (unknown line, label, register, ...)."""


@dataclass(frozen=True)
class Breakpoint:
    id: int
    kind: str                   # line | pc | label | watch | drop | packet
    spec: str                   # as the user gave it
    pcs: dict[int, tuple[int, ...]] = field(default_factory=dict)  # ME -> PCs
    watch: int | None = None    # the core's watch index
    watch_args: tuple[str, int, int, int] | None = None  # Chip.add_watch's, to set it again
    packets: int | None = None  # packet: stop once this many frames have arrived
    condition: Condition | None = None  # stop only where it holds (set_condition)


@dataclass(frozen=True)
class Stop:
    """Why and where a run stopped.  reason: breakpoint (before the instruction at pc),
    step / watch / drop (after the instruction at pc), packet, fault, frames, cycles."""

    reason: str
    cycle: int
    me: int | None = None
    ctx: int | None = None
    pc: int | None = None           # the instruction the reason names
    source: str | None = None       # its file:line:col
    breakpoint: int | None = None   # the Breakpoint.id that fired
    detail: str = ""

    def describe(self) -> str:
        where = ""
        if self.me is not None:
            where = f" at ME {self.me} ctx {self.ctx}"
            if self.pc is not None:
                where += f" pc {self.pc}"
            if self.source:
                where += f" ({self.source})"
        bp = f" [breakpoint {self.breakpoint}]" if self.breakpoint is not None else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.reason}{bp}{where}, cycle {self.cycle:,}{detail}"


@dataclass
class _Checkpoint:
    snapshot: ChipSnapshot
    resume: tuple[int, int]
    outputs: dict[int, int]
    last: Stop | None


class ImageInfo:
    """What the debugger knows of one image: PCs per source line, labels, register and
    signal names (the image's own, plus `#define NAME REGISTER` / `#define SIG_x N` of the
    microcode sources it was assembled from)."""

    def __init__(self, image: Any) -> None:
        self.image = image
        self.line_pcs: dict[tuple[str, int], list[int]] = {}
        for pc, loc in enumerate(image.lines):
            if loc is not None and loc.file:
                self.line_pcs.setdefault((str(loc.file), int(loc.line)), []).append(pc)
        self.labels = sorted((addr, name) for name, addr in image.symbols.items())
        self.registers: dict[str, str] = dict(image.registers)
        self.signals: dict[str, int] = dict(image.signals)
        for file in sorted({f for f, _ in self.line_pcs if f.endswith(".uc")}):
            self._read_defines(Path(file))

    def _read_defines(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return
        for line in text.splitlines():
            m = _DEFINE.match(line)
            if not m:
                continue
            name, value = m.groups()
            if _REGISTER.match(value):
                self.registers.setdefault(name, value)
            elif name.startswith("SIG_") and value.isdigit() and 1 <= int(value) <= 15:
                self.signals.setdefault(name, int(value))

    def source_of(self, pc: int) -> str | None:
        return self.image.source_of(pc)

    def line_of(self, pc: int) -> tuple[str, int] | None:
        if 0 <= pc < len(self.image.lines):
            loc = self.image.lines[pc]
            return (str(loc.file), int(loc.line))
        return None

    def label_of(self, pc: int) -> str | None:
        """The nearest label at or before pc, as label+offset."""
        best = None
        for addr, name in self.labels:
            if addr > pc:
                break
            best = (addr, name)
        if best is None:
            return None
        return best[1] if best[0] == pc else f"{best[1]}+{pc - best[0]}"

    def files_matching(self, name: str) -> list[str]:
        files = {f for f, _ in self.line_pcs}
        if name in files:
            return [name]
        return sorted(f for f in files if f.endswith("/" + name) or Path(f).name == name)


class Debugger:
    """Breakpoints, stepping, inspection and checkpoints over one chip."""

    def __init__(self, chip: Chip, program: Any = None) -> None:
        self.chip = chip
        self.program = program      # a linked program's npkit.link.program.ProgramInfo
        self.layout = program.layout() if program is not None else None
        self.breakpoints: dict[int, Breakpoint] = {}
        self._next_id = 1
        self._infos: dict[int, ImageInfo] = {}
        self.sinks = {p: ListSink() for p in range(len(chip.config.ports))}
        for port, sink in self.sinks.items():
            chip.attach_sink(port, sink)
        self.checkpoints: list[_Checkpoint] = []
        self.last: Stop | None = None
        self._arrived_before = 0   # frames arrived at the last check (packet breakpoints)

    # ------------------------------------------------------------------ images
    def info(self, me: int) -> ImageInfo:
        image = self.chip.image_on(me)
        if image is None:
            raise DebugError(f"ME {me} runs no image")
        key = id(image)
        if key not in self._infos:
            self._infos[key] = ImageInfo(image)
        return self._infos[key]

    def loaded_mes(self) -> list[int]:
        return [me for me in range(self.chip.config.me_count)
                if self.chip.image_on(me) is not None]

    # ------------------------------------------------------------------ traffic
    def offer(self, port: int, frames: list[bytes], dues: list[int] | None = None) -> None:
        """Frames into ``port``, up front (so checkpoints hold them): back to back at line
        rate, or no earlier than the cycles ``dues``."""
        self.chip.offer_frames(port, list(frames), list(dues or [-1] * len(frames)))

    def output(self, port: int | None = None) -> list[Any]:
        """The frames transmitted so far (TxFrame), of one port or all in port order."""
        ports = [port] if port is not None else sorted(self.sinks)
        return [f for p in ports for f in self.sinks[p].frames]

    # ------------------------------------------------------------------ breakpoints
    def _add(self, kind: str, spec: str, **kw: Any) -> Breakpoint:
        bp = Breakpoint(self._next_id, kind, spec, **kw)
        self._next_id += 1
        self.breakpoints[bp.id] = bp
        self._sync_pcs()
        return bp

    def break_line(self, spec: str) -> Breakpoint:
        """FILE:LINE (a path, or its end, e.g. ipv4_fwd.mbl:79): every PC of that line."""
        file, sep, line = spec.rpartition(":")
        if not sep or not line.isdigit():
            raise DebugError(f"{spec!r}: expected FILE:LINE")
        pcs: dict[int, tuple[int, ...]] = {}
        files: set[str] = set()
        for me in self.loaded_mes():
            info = self.info(me)
            for f in info.files_matching(file):
                files.add(f)
                found = info.line_pcs.get((f, int(line)))
                if found:
                    pcs[me] = tuple(sorted(set(pcs.get(me, ())) | set(found)))
        if not files:
            raise DebugError(f"{spec}: no loaded image has code from a file named {file!r}")
        if len(files) > 1:
            raise DebugError(f"{spec}: {file!r} names several files: {', '.join(sorted(files))}")
        if not pcs:
            raise DebugError(f"{spec}: no instruction comes from that line (a comment, a "
                             "declaration, or code the compiler removed)")
        return self._add("line", spec, pcs=pcs)

    def break_pc(self, pc: int, me: int | None = None) -> Breakpoint:
        mes = [me] if me is not None else self.loaded_mes()
        pcs = {m: (pc,) for m in mes if 0 <= pc < len(self.info(m).image.words)}
        if not pcs:
            raise DebugError(f"pc {pc} is outside the image of ME {me}" if me is not None
                             else f"pc {pc} is outside every loaded image")
        return self._add("pc", f"{pc}" + (f" on ME {me}" if me is not None else ""), pcs=pcs)

    def break_label(self, label: str, me: int | None = None) -> Breakpoint:
        mes = [me] if me is not None else self.loaded_mes()
        pcs = {m: (self.info(m).image.symbols[label],) for m in mes
               if label in self.info(m).image.symbols}
        if not pcs:
            raise DebugError(f"no loaded image has a label {label!r}")
        return self._add("label", label, pcs=pcs)

    def watch(self, memory: str, address: int, length: int = 4, unit: int = 0) -> Breakpoint:
        """Stop after an instruction changes ``memory`` (sram | dram | scratch | local) at
        ``address``..+``length``.  SRAM addresses are chip addresses (channel in bits 27..26)
        unless ``unit`` names the channel; ``unit`` is the ME for local memory (byte address)."""
        if memory == "sram" and address >> 26:
            unit, address = (address >> 26) & 3, address & ((1 << 26) - 1)
        args = (memory, address, length, unit)
        try:
            index = self.chip.add_watch(*args)
        except ValueError as err:
            raise DebugError(str(err)) from None
        return self._add("watch", f"{memory} {address:#x} +{length}", watch=index,
                         watch_args=args)

    def break_drop(self, reason: str | None = None) -> Breakpoint:
        """Stop when a frame is dropped for ``reason`` (any reason: None), in the context
        that counts it (the program's drop counter changes)."""
        if self.program is None:
            raise DebugError("drop breakpoints need a linked MBL program (no [program] table)")
        reasons = self.program.drop_reasons
        if reason is None:
            first, count = 0, self.program.drop_counters
        else:
            index = [i for i, name in reasons.items() if name == reason]
            if not index:
                raise DebugError(f"no drop reason {reason!r}; the program's reasons: "
                                 f"{', '.join(reasons[i] for i in sorted(reasons))}")
            first, count = index[0], 1
        args = ("scratch", self.program.drop_counter_base + 4 * first, 4 * count, 0)
        index = self.chip.add_watch(*args)
        return self._add("drop", reason or "any", watch=index, watch_args=args)

    def break_packet(self, n: int) -> Breakpoint:
        """Stop once the n-th frame (counting from 1, over all ports) has arrived."""
        if n < 1:
            raise DebugError("break_packet: frames count from 1")
        return self._add("packet", f"{n}", packets=n)

    def set_condition(self, bp_id: int, text: str | None) -> Breakpoint:
        """Stop at breakpoint ``bp_id`` only where ``text`` holds in the stopped context
        (debug_condition.Condition: ``ttl == 1``, ``packet.IP.dst == 10.1.2.3 and a3 > 0``);
        None removes the condition."""
        bp = self.breakpoints.get(bp_id)
        if bp is None:
            raise DebugError(f"no breakpoint {bp_id}")
        if bp.kind == "packet" and text is not None:
            raise DebugError("a packet breakpoint stops no context, so a condition has "
                             "nothing to look at")
        bp = replace(bp, condition=None if text is None else Condition.parse(text))
        self.breakpoints[bp_id] = bp
        return bp

    def _condition_value(self, me: int, ctx: int, name: str) -> int | str:
        """A name of a condition in a stopped context: ``packet.FIELD``, an MBL variable at
        the context's PC, or a register (as ``print`` names them)."""
        if name.startswith("packet."):
            wanted = name.removeprefix("packet.")
            return self.packet_fields(me, ctx, [wanted])[wanted]
        if getattr(self.info(me).image, "variables_at", None) is not None:
            values = self.variables(me, ctx)
            if name in values:
                if values[name] is None:
                    raise ConditionError(f"{name} is optimized out at pc "
                                         f"{self.context(me, ctx)['pc']}")
                return int(values[name])
        return self.reg(me, ctx, name)

    def _condition_fails(self, stop: Stop) -> Stop | None:
        """None when ``stop``'s breakpoint has a condition that does not hold (run on);
        else the stop, with the reason when the condition could not be evaluated."""
        bp = self.breakpoints.get(stop.breakpoint) if stop.breakpoint is not None else None
        if bp is None or bp.condition is None or stop.me is None or stop.ctx is None:
            return stop
        try:
            holds = bp.condition.holds(lambda name: self._condition_value(stop.me, stop.ctx,
                                                                          name))
        except (DebugError, ConditionError) as error:
            return replace(stop, detail=f"condition {bp.condition.text!r} not evaluated: "
                                        f"{error}")
        return stop if holds else None

    def delete(self, bp_id: int) -> None:
        if bp_id not in self.breakpoints:
            raise DebugError(f"no breakpoint {bp_id}")
        bp = self.breakpoints.pop(bp_id)
        if bp.watch is not None:   # the core has no per-watch delete: set the others again
            self._rebuild_watches()
        self._sync_pcs()

    def _rebuild_watches(self) -> None:
        self.chip.clear_watches()
        for bp_id, bp in list(self.breakpoints.items()):
            if bp.watch_args is not None:
                index = self.chip.add_watch(*bp.watch_args)
                self.breakpoints[bp_id] = Breakpoint(bp.id, bp.kind, bp.spec, watch=index,
                                                     watch_args=bp.watch_args)

    def _sync_pcs(self) -> None:
        per_me: dict[int, set[int]] = {me: set() for me in self.loaded_mes()}
        for bp in self.breakpoints.values():
            for me, pcs in bp.pcs.items():
                per_me.setdefault(me, set()).update(pcs)
        for me, pcs in per_me.items():
            self.chip.set_breakpoints(me, sorted(pcs))

    # ------------------------------------------------------------------ running
    def cont(self, max_cycles: int = DEFAULT_BUDGET_CYCLES) -> Stop:
        """Run until a breakpoint, a fault, or ``max_cycles`` more cycles."""
        return self._run(max_cycles)

    def _run(self, max_cycles: int, packets: int | None = None) -> Stop:
        chip = self.chip
        end = chip.now + max_cycles
        arrivals = [bp for bp in self.breakpoints.values() if bp.kind == "packet"]
        out_before = sum(len(s.frames) for s in self.sinks.values())
        while chip.now < end:
            budget = end - chip.now
            if arrivals:
                budget = min(budget, ARRIVAL_SLICE_CYCLES)
            left = None if packets is None else packets - (
                sum(len(s.frames) for s in self.sinks.values()) - out_before)
            try:
                result = chip.run(cycles=budget, packets=left)
            except SimFault as fault:
                return self._stopped(Stop("fault", chip.now, fault.me, fault.ctx, fault.pc,
                                          fault.source, detail=f"{fault.kind}: {fault.detail}"))
            if result.reason in ("breakpoint", "step", "watch"):
                stop = self._condition_fails(self._core_stop())
                if stop is None:
                    continue        # its breakpoint's condition does not hold here
                return self._stopped(stop)
            if result.reason == "packets":
                return self._stopped(Stop("frames", chip.now, detail="a frame was transmitted"))
            arrived = self.frames_arrived()
            for bp in arrivals:
                if arrived >= (bp.packets or 0) and self._arrived_before < (bp.packets or 0):
                    self._arrived_before = arrived
                    return self._stopped(Stop("packet", chip.now, breakpoint=bp.id,
                                              detail=f"{arrived} frames have arrived"))
            self._arrived_before = arrived
        return self._stopped(Stop("cycles", chip.now))

    def frames_arrived(self) -> int:
        return sum(int(p["rx_frames"]) + sum(int(v) for k, v in p.items()
                                             if k.startswith("rx_dropped"))
                   for p in self.chip.counters()["ports"])

    def _core_stop(self) -> Stop:
        core = self.chip.debug_stop
        assert core is not None
        source = self.info(core.me).source_of(core.pc)
        if core.reason == "watch":
            bp = next((b for b in self.breakpoints.values() if b.watch == core.watch), None)
            if bp is not None and bp.kind == "drop":
                return Stop("drop", self.chip.now, core.me, core.ctx, core.pc, source, bp.id,
                            self._drop_detail())
            return Stop("watch", self.chip.now, core.me, core.ctx, core.pc, source,
                        bp.id if bp else None)
        if core.reason == "breakpoint":
            bp_id = next((b.id for b in self.breakpoints.values()
                          if core.pc in b.pcs.get(core.me, ())), None)
            return Stop("breakpoint", self.chip.now, core.me, core.ctx, core.pc, source, bp_id)
        return Stop(core.reason, self.chip.now, core.me, core.ctx, core.pc, source)

    def _drop_detail(self) -> str:
        assert self.program is not None
        counters = self.drop_counts()
        return "drop counters " + ", ".join(f"{k}={v}" for k, v in counters.items())

    def drop_counts(self) -> dict[str, int]:
        if self.program is None:
            return {}
        base = self.program.drop_counter_base // 4
        words = self.chip.scratch()[base:base + self.program.drop_counters]
        return {name: int(words[i]) for i, name in sorted(self.program.drop_reasons.items())
                if words[i]}

    def _stopped(self, stop: Stop) -> Stop:
        self.last = stop
        return stop

    def stepi(self, me: int, ctx: int, count: int = 1) -> Stop:
        """Run until context ``ctx`` of ME ``me`` has retired ``count`` more instructions
        (other contexts and MEs run meanwhile, as on the chip; a breakpoint may come first)."""
        self._check_ctx(me, ctx)
        self.chip.step_after(me, ctx, count)
        try:
            return self._run(DEFAULT_BUDGET_CYCLES)
        finally:
            self.chip.step_after(me, ctx, 0)

    def step_line(self, me: int, ctx: int) -> Stop:
        """Step context ``ctx`` until it is about to run a different MBL source line (code
        of other files, e.g. the dispatch loop, is stepped over)."""
        info = self.info(me)
        start = info.line_of(self.context(me, ctx)["pc"])
        for _ in range(STEP_LINE_LIMIT):
            stop = self.stepi(me, ctx)
            if stop.reason != "step":
                return stop
            line = info.line_of(self.context(me, ctx)["pc"])
            if line is not None and line != start and line[0].endswith(".mbl"):
                return stop
        return self._stopped(Stop("cycles", self.chip.now, me, ctx,
                                  detail=f"no new MBL line in {STEP_LINE_LIMIT} instructions"))

    def next_packet(self, max_cycles: int = DEFAULT_BUDGET_CYCLES) -> Stop:
        """Run until the next frame is transmitted (or a breakpoint)."""
        return self._run(max_cycles, packets=1)

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self) -> int:
        """Remember the chip's state (and the output so far); returns its number."""
        self.checkpoints.append(_Checkpoint(
            self.chip.snapshot(), self.chip.debug_resume,
            {p: len(s.frames) for p, s in self.sinks.items()}, self.last))
        return len(self.checkpoints)

    def reverse(self) -> int:
        """Go back to the last checkpoint (it stays, to go back to again)."""
        if not self.checkpoints:
            raise DebugError("no checkpoint to go back to: take one with checkpoint")
        cp = self.checkpoints[-1]
        self.chip.restore(cp.snapshot)
        self.chip.debug_resume = cp.resume
        for port, n in cp.outputs.items():
            del self.sinks[port].frames[n:]
        self.last = cp.last
        self._arrived_before = self.frames_arrived()
        return len(self.checkpoints)

    # ------------------------------------------------------------------ inspection
    def _check_ctx(self, me: int, ctx: int) -> None:
        self.chip.config.check_me(me)
        image = self.chip.image_on(me)
        if image is None:
            raise DebugError(f"ME {me} runs no image")
        if not 0 <= ctx < int(image.ctx_mode):
            raise DebugError(f"ME {me} runs contexts 0..{int(image.ctx_mode) - 1}, not {ctx}")

    def context(self, me: int, ctx: int) -> dict[str, Any]:
        self._check_ctx(me, ctx)
        return self.chip.context_state(me, ctx)

    def where(self, me: int, ctx: int) -> str:
        """``pc N (label+k) file:line:col, state``."""
        state = self.context(me, ctx)
        info = self.info(me)
        label = info.label_of(state["pc"])
        return (f"ME {me} ctx {ctx} pc {state['pc']}" + (f" ({label})" if label else "")
                + f" {info.source_of(state['pc']) or '?'}, {state['state']}")

    def disassemble(self, me: int, first: int, count: int) -> list[tuple[int, str, str]]:
        """(pc, microcode text, source) of ``count`` instructions of ME ``me`` from
        ``first``, with the image's register and signal names."""
        from npkit.compiler.uc.disassembler import RenderError, _Names, raw_word, render_word

        info = self.info(me)
        names = _Names(info.image)
        out = []
        for pc in range(max(0, first), min(len(info.image.words), first + count)):
            word = info.image.words[pc]
            try:
                text = render_word(word, names)
            except RenderError:
                text = raw_word(word)
            out.append((pc, text, info.source_of(pc) or "?"))
        return out

    def register_code(self, me: int, name: str) -> tuple[str, int]:
        """(file, index) of a register name: a0..a15, b0..b15, $n, $$n, n$n, or a name
        the image's sources give one."""
        spelling = self.info(me).registers.get(name, name)
        m = re.fullmatch(r"(a|b|\$\$|\$|n\$)(\d+)", spelling)
        if not m:
            raise DebugError(f"unknown register {name!r}: a0..a15, b0..b15, $0.., $$0.., "
                             "n$0.. or a name the microcode defines")
        classes = {"a": "gpr_a", "b": "gpr_b", "$": "xfer_s", "$$": "xfer_d", "n$": "nn"}
        return classes[m.group(1)], int(m.group(2))

    def reg(self, me: int, ctx: int, name: str) -> int:
        """A register of a context, by name.  $x / $$x read the *in* transfer register."""
        self._check_ctx(me, ctx)
        kind, index = self.register_code(me, name)
        first = next(c.first for c in isa.OPERAND_CLASSES if c.name == kind)
        try:
            return int(self.chip._core.read_reg(me, ctx, first + index))
        except (IndexError, ValueError) as err:
            raise DebugError(f"register {name}: {err}") from None

    def registers(self, me: int, ctx: int) -> dict[str, int]:
        """Every GPR and transfer register (in and out) of a context."""
        self._check_ctx(me, ctx)
        per = 16 if int(self.chip.image_on(me).ctx_mode) == 8 else 32
        out: dict[str, int] = {}
        for prefix in ("a", "b", "$", "$$"):
            for i in range(per):
                out[f"{prefix}{i}"] = self.reg(me, ctx, f"{prefix}{i}")
        for i in range(per):
            out[f"$out{i}"] = int(self.chip._core.read_xfer_out(me, ctx, 0, i))
            out[f"$$out{i}"] = int(self.chip._core.read_xfer_out(me, ctx, 1, i))
        return out

    def signals(self, me: int, ctx: int) -> dict[str, list[str]]:
        """Pending signals and those the context waits for, by name where the code has one."""
        state = self.context(me, ctx)
        names = {n: name for name, n in self.info(me).signals.items()}

        def spell(mask: int) -> list[str]:
            return [names.get(s, f"sig{s}") for s in range(1, 16) if mask >> s & 1]

        return {"pending": spell(int(state["pending_signals"])),
                "waiting": spell(int(state["wait_mask"]))}

    def memory(self, kind: str, address: int, count: int = 4, unit: int = 0) -> list[int]:
        """``count`` words (sram, scratch, local: 32-bit; dram: bytes) from ``address``
        (SRAM: a chip address, channel in bits 27..26; local: ``unit`` is the ME)."""
        chip = self.chip
        if kind == "sram":
            view = chip.sram((address >> 26) & 3)
            start = (address & ((1 << 26) - 1)) // 4
        elif kind == "scratch":
            view, start = chip.scratch(), address // 4
        elif kind == "local":
            view, start = chip.local_memory(unit), address // 4
        elif kind == "dram":
            view, start = chip.dram(), address
        else:
            raise DebugError(f"memory is sram, dram, scratch or local, not {kind!r}")
        if not 0 <= start < len(view):
            raise DebugError(f"{kind} address {address:#x} is outside the memory")
        return [int(v) for v in view[start:start + count]]

    def ring(self, ring: int) -> tuple[dict[str, Any], list[int]]:
        """A scratch ring's state and the words it holds, oldest first."""
        try:
            state = self.chip.ring_state(ring)
        except (IndexError, ValueError) as err:
            raise DebugError(f"ring {ring}: {err}") from None
        scratch = self.chip.scratch()
        words = [int(scratch[state["base"] + (state["head"] + k) % max(1, state["size"])])
                 for k in range(state["count"])]
        return state, words

    def packet(self, me: int, ctx: int) -> bytes:
        """The frame the context holds: the buffer its `handle` register names (linked
        programs' forwarding MEs)."""
        if self.layout is None:
            raise DebugError("the packet under a context needs a linked MBL program")
        if HANDLE_REGISTER not in self.info(me).registers:
            raise DebugError(f"ME {me}'s code names no {HANDLE_REGISTER!r} register: it is "
                             "not a forwarding ME of a linked program")
        from npkit.microblocks.uc import router4

        handle = self.reg(me, ctx, HANDLE_REGISTER) & ~TAG_MASK
        if handle == 0:
            raise DebugError(f"ME {me} ctx {ctx} holds no frame now")
        return router4.read_frame(self.chip, handle, self.layout)

    def scapy_packet(self, me: int, ctx: int) -> Any:
        """The packet under a context, dissected by scapy from Ethernet on."""
        from scapy.layers.l2 import Ether

        for layer in ("scapy.layers.inet", "scapy.layers.inet6"):  # IP, IPv6 under Ether
            importlib.import_module(layer)
        return Ether(self.packet(me, ctx))

    def dissect(self, me: int, ctx: int) -> str:
        """The packet under a context as scapy shows it (``show2``)."""
        return str(self.scapy_packet(me, ctx).show2(dump=True))

    def packet_fields(self, me: int, ctx: int, names: list[str]) -> dict[str, Any]:
        """Header fields of the packet under a context, by scapy field name (``ttl``,
        ``dst``, ``IP.dst``, ``Ether.dst``): the outermost layer that has the field."""
        pkt = self.scapy_packet(me, ctx)
        out: dict[str, Any] = {}
        for name in names:
            layer_name, _, field_name = name.rpartition(".")
            layer = pkt
            while layer is not None and layer.__class__.__name__ != "NoPayload":
                if (not layer_name or layer.__class__.__name__ == layer_name) and \
                        field_name in layer.fields:
                    out[name] = layer.sprintf(f"%{layer.__class__.__name__}.{field_name}%")
                    break
                layer = layer.payload
            else:
                raise DebugError(f"the packet has no field {name!r}")
        return out

    def variables(self, me: int, ctx: int) -> dict[str, int | None]:
        """The MBL variables whose scope covers the context's line and their values before
        the instruction at its PC (None: optimised out there), from the image's variable
        debug info (``Image.variables_at``).  An inner variable hides an outer one."""
        return {v.variable.name: value for v, value in self.variable_values(me, ctx)}

    def variable_values(self, me: int, ctx: int) -> list[tuple[Any, int | None]]:
        """(VariableAt, value) for every variable ``variables_at`` gives at the PC."""
        image = self.info(me).image
        at = getattr(image, "variables_at", None)
        if at is None:
            raise DebugError("this image carries no MBL variable debug info")
        pc = self.context(me, ctx)["pc"]
        return [(v, v.value(lambda part: self._read_part(me, ctx, part))) for v in at(pc)]

    def _read_part(self, me: int, ctx: int, part: str) -> int:
        """One 32-bit word of a variable's location: a register or a local memory word
        relative to the context's LM_ADDR_0/1."""
        m = re.fullmatch(r"\*l\$index([01])\[(\d+)\]", part)
        if m:
            base = int(self.context(me, ctx)["lm_addr"][int(m.group(1))])
            return self.memory("local", base + 4 * int(m.group(2)), 1, unit=me)[0]
        return self.reg(me, ctx, part)

    # ------------------------------------------------------------------ coverage
    def coverage(self) -> Any:
        from .coverage import Coverage

        return Coverage.of_chip(self.chip)
