"""The compile report: static cost of an assembled body (docs/me-backend.md, "Compile report
and graph").

``analyze(image, entry, exits)`` decodes the words between a label and its exits with the
ISA table (`sim/isa.py`), builds the control-flow graph from the branch targets, and walks
the **worst path**: the one with the most ME cycles from ``entry`` to an exit.

Cycle model (docs/sim-core.md, "Execution"): every instruction takes one cycle; a taken
branch (or ``jump``) costs ``me.branch_taken_penalty`` more, less its ``defer`` slots (never
below 0); a context swap costs nothing.  Loops: a back edge to a label of ``loop_trips``
is taken at most ``trips - 1`` times; a back edge to any other label is never taken, and the
report marks its figures as a lower bound, per iteration of that loop.

Memory: along the worst path a command issued at cycle *t* completes at
``t + ceil(bytes / bytes_per_cycle) + latency`` (unloaded; the chip config's numbers, the
core's rule), and a ``ctx_swap`` or ``ctx_arb`` sleeps until the signals it waits for have
completed.  The sleeping time is the path's **memory wait** ``W``; a wait on a signal that
nothing on the path raised (a token from another thread, a signal owed by the previous
packet) is counted as 0.

Throughput estimate (packets per second per ME, for packets taking the worst path)::

    C = worst-path cycles (ALU + branch penalties: the ME is busy for them)
    L = C + W            (one thread's time per packet)
    pps/ME = min(clock / C, threads * clock / L)

The first bound is the ME's ALU; the second, the threads' latency when ``threads`` packets
are in flight at once.  It is an estimate for packets that take the worst path on an idle
chip: it ignores queueing on memory channels, command FIFO stalls, the ordering tokens'
serialisation and other MEs' traffic (all of which lower what the simulator measures), and
packets on shorter paths go faster.  When the path is a lower bound (an unbounded loop),
so is C, and the estimate is optimistic.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable
from collections.abc import Mapping as AbcMapping
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from npkit.base.errors import NpkitError
from npkit.compiler.uc import Image, assemble_text
from npkit.sim import isa
from npkit.sim.config import ChipConfig

from .abi import (
    BODY_ENTRY,
    BODY_EXIT,
    POOL_NAMES,
    RX_TURN_LABEL,
    RX_TURN_TAKE_LABEL,
    BodyABI,
    Mapping,
)

UNITS = ("sram", "scratch", "dram", "msf", "hash")
WORDS_PER_HASH_KEY = {0: 2, 1: 2, 2: 4}   # hash_48, hash_64, hash_128 (docs/isa.md)
_READ_CMDS = {("sram", "read"), ("sram", "dequeue"), ("scratch", "read"), ("scratch", "get"),
              ("dram", "read"), ("dram", "tbuf_wr")}  # occupy the channel at the read rate


_FIXED_POINT = 65536     # the core keeps channel occupancy in 1/65536 cycles


class ReportError(NpkitError, ValueError):
    """A region that cannot be analyzed (unknown label, no path to an exit, ...)."""


@dataclass(frozen=True)
class BodyStats:
    """The static figures of one region (a body, or a dispatch loop between two labels)."""

    entry: str
    exits: tuple[str, ...]
    instructions: int                  # static count of the region's instructions
    path_cycles: int                   # worst path: instructions + taken-branch penalties
    path_instructions: int             # instructions executed on the worst path
    branch_penalty_cycles: int
    lower_bound: bool                  # an unbounded loop was cut: figures per iteration
    memory_commands: dict[str, int]    # per unit, on the worst path
    memory_detail: dict[str, int]      # "sram read" -> count, on the worst path
    memory_wait_cycles: int            # W: one thread asleep on memory, on the worst path
    signals_waited: tuple[int, ...]    # every signal a ctx_arb / ctx_swap of the region waits for
    signals_pending_at_exit: tuple[int, ...]  # raised on the worst path, never waited for
    registers: dict[str, tuple[str, ...]]     # class -> registers the region names
    clock_hz: float
    threads: int
    pps_per_me: float
    pps_bound: str                     # "alu" or "latency": which bound of the estimate holds
    notes: tuple[str, ...] = ()
    path: tuple[int, ...] = field(default=(), repr=False)  # addresses, in execution order

    @property
    def thread_cycles(self) -> int:
        """L: one thread's cycles per packet on the worst path (ALU + memory wait)."""
        return self.path_cycles + self.memory_wait_cycles

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["thread_cycles"] = self.thread_cycles
        return out


# ------------------------------------------------------------------ decoding
@dataclass(frozen=True)
class _Insn:
    pc: int
    ins: isa.Instruction
    fields: dict[str, int]
    mnemonic: str       # the assembler spelling, e.g. "bne", "br_bset", "ctx_arb"


def _mnemonic(ins: isa.Instruction, fields: dict[str, int]) -> str:
    """The spelling that selects the sub-form (condition, flag, enum) of an instruction."""
    if ins.name == "br":
        return _enum_name(isa.CONDITIONS, fields["cond"])
    flag_forms = {"br_ctx": "ne", "br_bit": "clr", "br_byte": "ne", "br_signal": "not",
                  "br_inp_state": "not", "jump": "rtn"}
    if ins.name in flag_forms:
        return ins.mnemonics[fields[flag_forms[ins.name]]]
    return ins.mnemonics[0]


def _enum_name(table: dict[str, int], value: int) -> str:
    return next((name for name, v in table.items() if v == value), str(value))


def _decode_all(image: Image) -> list[_Insn]:
    out = []
    for pc, word in enumerate(image.words):
        ins, fields = isa.decode(word)
        out.append(_Insn(pc, ins, fields, _mnemonic(ins, fields)))
    return out


# ------------------------------------------------------------------ control flow
@dataclass(frozen=True)
class _Edge:
    target: int
    via: tuple[int, ...] = ()   # defer slots executed on the way
    penalty: int = 0


@dataclass
class _Cfg:
    insns: list[_Insn]
    exits: frozenset[int]
    penalty: int
    notes: list[str] = field(default_factory=list)

    def edges(self, pc: int) -> list[_Edge]:
        """The successors of the instruction at ``pc`` (targets outside the image dropped)."""
        insn = self.insns[pc]
        if insn.ins.timing == "branch":
            found = self._branch_edges(insn)
        elif insn.ins.name == "ctx_arb" and insn.fields["mode"] == isa.CTX_ARB_MODES["kill"]:
            found = []
        else:
            found = [_Edge(pc + 1)]
        return [e for e in found if e.target < len(self.insns)]

    def _branch_edges(self, insn: _Insn) -> list[_Edge]:
        defer = insn.fields.get("defer", 0)
        taken = _Edge(insn.fields["target"],
                      tuple(range(insn.pc + 1, insn.pc + 1 + defer)),
                      max(0, self.penalty - defer))
        if insn.mnemonic == "rtn":
            return []        # the return address is data: the path ends here
        if insn.mnemonic in ("br", "jump"):
            return [taken]
        return [_Edge(insn.pc + 1), taken]


def _label_name(image: Image, pc: int) -> str:
    return image.label_at(pc) or f"@{pc}"


def _region(cfg: _Cfg, entry: int) -> tuple[set[int], set[tuple[int, int]]]:
    """Instructions reachable from ``entry`` without passing an exit, and the back edges of
    a depth-first search from it (edges to an instruction on the search stack)."""
    reached = {entry}
    back: set[tuple[int, int]] = set()
    on_stack = {entry}
    stack = [(entry, iter(cfg.edges(entry)))]
    while stack:
        pc, pending = stack[-1]
        for edge in pending:
            reached.update(edge.via)
            if edge.target in cfg.exits:
                continue
            if edge.target in on_stack:
                back.add((pc, edge.target))
            elif edge.target not in reached:
                reached.add(edge.target)
                on_stack.add(edge.target)
                stack.append((edge.target, iter(cfg.edges(edge.target))))
                break
        else:
            on_stack.discard(pc)
            stack.pop()
    return reached, back


# ------------------------------------------------------------------ the worst path
_State = tuple[int, tuple[int, ...]]     # (pc, back edges taken so far per bounded header)
_NO_PATH = -1


@dataclass
class _LoopBounds:
    back_edges: set[tuple[int, int]]
    headers: tuple[int, ...]             # bounded loop headers, in counter order
    trips: tuple[int, ...]

    def step(self, state: _State, edge: _Edge) -> _State | None:
        """The state after ``edge``, or None when the edge may not be taken."""
        pc, counts = state
        target = edge.target
        if target not in self.headers:
            return None if (pc, target) in self.back_edges else (target, counts)
        k = self.headers.index(target)
        if (pc, target) not in self.back_edges:     # entering the loop: a fresh count
            return target, counts[:k] + (0,) + counts[k + 1:]
        if counts[k] + 1 >= self.trips[k]:
            return None
        return target, counts[:k] + (counts[k] + 1,) + counts[k + 1:]


def _successors(cfg: _Cfg, loops: _LoopBounds, state: _State
                ) -> list[tuple[_Edge, _State | None]]:
    """(edge, next state) pairs; next state None = the edge leaves through an exit."""
    out: list[tuple[_Edge, _State | None]] = []
    for edge in cfg.edges(state[0]):
        if edge.target in cfg.exits:
            out.append((edge, None))
            continue
        nxt = loops.step(state, edge)
        if nxt is not None:
            out.append((edge, nxt))
    return out


def _worst_path(cfg: _Cfg, loops: _LoopBounds, start: _State
                ) -> dict[_State, tuple[int, int]]:
    """Longest cycles to an exit from every state reached: state -> (cycles, best choice
    index into ``_successors``), cycles ``_NO_PATH`` when no exit is reachable."""
    best: dict[_State, tuple[int, int]] = {}
    active = {start}
    stack = [(start, iter(_successors(cfg, loops, start)))]
    while stack:
        state, pending = stack[-1]
        for _, nxt in pending:
            if nxt is None or nxt in best:
                continue
            if nxt in active:
                raise ReportError(f"a loop through {nxt[0]} has no back edge the loop bounds "
                                  "can count (irreducible control flow)")
            active.add(nxt)
            stack.append((nxt, iter(_successors(cfg, loops, nxt))))
            break
        else:
            best[state] = _choose(cfg, loops, state, best)
            active.discard(state)
            stack.pop()
    return best


def _choose(cfg: _Cfg, loops: _LoopBounds, state: _State,
            best: dict[_State, tuple[int, int]]) -> tuple[int, int]:
    top, choice = _NO_PATH, -1
    for i, (edge, nxt) in enumerate(_successors(cfg, loops, state)):
        rest = 0 if nxt is None else best[nxt][0]
        if rest == _NO_PATH:
            continue
        cycles = 1 + len(edge.via) + edge.penalty + rest
        if cycles > top:
            top, choice = cycles, i
    return top, choice


def _path_steps(cfg: _Cfg, loops: _LoopBounds, start: _State,
                best: dict[_State, tuple[int, int]]) -> list[tuple[int, int]]:
    """The worst path as (pc, penalty cycles charged right after it) in execution order."""
    steps: list[tuple[int, int]] = []
    state: _State | None = start
    while state is not None:
        edge, nxt = _successors(cfg, loops, state)[best[state][1]]
        steps.append((state[0], edge.penalty))
        steps.extend((pc, 0) for pc in edge.via)
        state = nxt
    return steps


# ------------------------------------------------------------------ memory and signals
def _unit_and_command(insn: _Insn) -> tuple[str, str] | None:
    if insn.ins.format == "mem":
        return insn.ins.name, _enum_name(insn.ins.cmds, insn.fields["cmd"])
    if insn.ins.name == "hash":
        return "hash", _enum_name(isa.HASH_SIZES, insn.fields["size"])
    return None


def _command_latency(chip: ChipConfig, insn: _Insn) -> int:
    """Issue to completion of one command on an idle unit (the core's schedule rule)."""
    unit, cmd = _unit_and_command(insn) or ("", "")
    count = insn.fields.get("count", 0) + 1
    raw = chip.raw
    if unit == "msf":
        return int(raw["msf"]["csr_latency"])
    if unit == "hash":
        return int(raw["hash"]["latency"]) + int(raw["hash"]["occupancy"]) * count
    conf = raw[unit]
    nbytes = count * (8 if unit == "dram" else 4)
    if unit == "sram" and cmd not in ("read", "write"):
        nbytes = 4
    rate_key = "read_bytes_per_cycle" if (unit, cmd) in _READ_CMDS else "write_bytes_per_cycle"
    rate = float(conf.get(rate_key, conf.get("bytes_per_cycle", 1.0)))
    charged = max(nbytes, int(conf.get("min_access_bytes", 4)))
    occupancy = math.ceil(round(charged / rate * _FIXED_POINT) / _FIXED_POINT)
    return max(1, occupancy + int(conf["latency"]))


def _waited_signals(insn: _Insn) -> tuple[int, ...]:
    """Signals the instruction sleeps on: ctx_arb's mask, a command's ctx_swap signal, the
    signal a `br_!signal` poll (a receive stage's wait in its turn) spins on."""
    if insn.ins.name == "ctx_arb":
        mask = insn.fields["sigs"]
        return tuple(s for s in range(1, 16) if mask >> s & 1)
    if insn.ins.name == "br_signal" and insn.fields.get("not"):
        return (insn.fields["sig"],)
    if insn.fields.get("swap") and insn.fields.get("sig"):
        return (insn.fields["sig"],)
    return ()


@dataclass
class _Timeline:
    """One thread walking the worst path: time, signals in flight, cycles asleep."""

    chip: ChipConfig
    time: int = 0
    waited: int = 0
    pending: dict[int, int] = field(default_factory=dict)   # signal -> completion cycle
    swap_after: int = -1                                     # defer slots before a ctx_arb
    swap_on: tuple[tuple[int, ...], bool] = ((), True)

    def run(self, insn: _Insn, penalty: int) -> None:
        if _unit_and_command(insn) and insn.fields.get("sig"):
            self.pending[insn.fields["sig"]] = self.time + _command_latency(self.chip, insn)
        if insn.mnemonic == "br_!signal" and insn.fields["sig"] in self.pending:
            self._sleep((insn.fields["sig"],), True)    # a poll: it spins until the signal
        elif insn.mnemonic in ("br_signal", "br_!signal"):
            done = self.pending.get(insn.fields["sig"])
            if done is not None and done <= self.time:
                del self.pending[insn.fields["sig"]]
        self.time += 1 + penalty
        if self.swap_after > 0:
            self.swap_after -= 1
            if self.swap_after == 0:
                self._sleep(*self.swap_on)
        if insn.ins.name == "ctx_arb" and insn.fields["mode"] in (0, 1):
            self.swap_on = (_waited_signals(insn), insn.fields["mode"] == 0)
            self.swap_after = insn.fields["defer"]
            if self.swap_after == 0:
                self._sleep(*self.swap_on)
        elif insn.ins.timing in ("mem", "unit") and insn.fields.get("swap"):
            self._sleep((insn.fields["sig"],), True)

    def _sleep(self, signals: tuple[int, ...], wait_all: bool) -> None:
        issued = [self.pending[s] for s in signals if s in self.pending]
        if not issued:
            return                      # raised elsewhere: counted as already there
        if wait_all:
            wake = max(issued)
            for s in signals:
                self.pending.pop(s, None)
        else:
            wake = self.time if len(issued) < len(signals) else min(issued)
        self.waited += max(0, wake - self.time)
        self.time = max(self.time, wake)


# ------------------------------------------------------------------ registers
_OPERAND_GROUPS = {"gpr_a": "gpr_a", "gpr_b": "gpr_b", "xfer_s": "xfer", "xfer_d": "xfer",
                   "nn": "nn", "nn_ring": "nn", "lm0": "lm", "lm1": "lm", "lm0_inc": "lm",
                   "lm0_dec": "lm", "lm1_inc": "lm", "lm1_dec": "lm"}
_INDEXED_SPELLING = {"gpr_a": "a{}", "gpr_b": "b{}", "xfer_s": "${}", "xfer_d": "$${}",
                     "nn": "n${}", "lm0": "*l$index0[{}]", "lm1": "*l$index1[{}]"}


def _operand_name(code: int) -> tuple[str, str] | None:
    """(group, register spelling) for an operand code that names storage, else None."""
    cls = isa.operand_class(code)
    if cls is None or cls.name not in _OPERAND_GROUPS:
        return None
    spelling = _INDEXED_SPELLING.get(cls.name, cls.syntax).format(code - cls.first)
    return _OPERAND_GROUPS[cls.name], spelling


def _xfer_range(insn: _Insn) -> list[str]:
    """The transfer registers a memory or hash command moves data through."""
    first = insn.fields.get("xfer", isa.XFER_NONE)
    if first & isa.XFER_NONE:
        return []
    count = insn.fields["count"] + 1
    if insn.ins.name == "hash":
        return [f"${first + k}" for k in range(count * WORDS_PER_HASH_KEY[insn.fields["size"]])]
    if insn.ins.name == "dram":
        return [f"$${first + k}" for k in range(2 * count)]
    return [f"${first + k}" for k in range(count)]


def _registers(insns: Iterable[_Insn]) -> dict[str, tuple[str, ...]]:
    found: dict[str, set[str]] = {"gpr_a": set(), "gpr_b": set(), "xfer": set(), "lm": set(),
                                  "nn": set()}
    for insn in insns:
        layout = isa.FORMATS[insn.ins.format].fields
        for f in layout:
            if f.kind == "opnd":
                named = _operand_name(insn.fields[f.name])
                if named:
                    found[named[0]].add(named[1])
        found["xfer"].update(_xfer_range(insn))
    return {k: tuple(sorted(v, key=_register_order)) for k, v in found.items()}


def _register_order(name: str) -> tuple[str, int]:
    match = re.match(r"(.*?)(\d+)\]?$", name)
    return (match.group(1), int(match.group(2))) if match else (name, -1)


# ------------------------------------------------------------------ analyze
def analyze(image: Image, entry: str = BODY_ENTRY, exits: tuple[str, ...] = (BODY_EXIT,),
            loop_trips: dict[str, int] | None = None,
            chip: ChipConfig | None = None) -> BodyStats:
    """The figures of the code from label ``entry`` to any of the labels ``exits``."""
    chip = chip or ChipConfig.load("ixp2800")
    start = _address(image, entry, "entry")
    exit_pcs = frozenset(_address(image, name, "exit") for name in exits)
    cfg = _Cfg(_decode_all(image), exit_pcs, int(chip.raw["me"]["branch_taken_penalty"]))
    reached, back = _region(cfg, start)
    loops, unbounded = _loop_bounds(image, back, loop_trips or {})
    cfg.notes.extend(f"loop at {name}# has no bound: figures are per iteration (a lower "
                     "bound)" for name in unbounded)
    cfg.notes.extend(_indirect_notes(image, cfg, reached))
    begin: _State = (start, (0,) * len(loops.headers))
    best = _worst_path(cfg, loops, begin)
    if best[begin][0] == _NO_PATH:
        raise ReportError(f"no path from {entry}# reaches {', '.join(e + '#' for e in exits)}")
    steps = _path_steps(cfg, loops, begin, best)
    return _stats(image, chip, cfg, reached, steps, entry, exits, bool(unbounded))


def _address(image: Image, label: str, role: str) -> int:
    name = label.removesuffix("#")
    if name not in image.symbols:
        known = ", ".join(sorted(image.symbols)) or "none"
        raise ReportError(f"{role} label {name}# is not in the image (labels: {known})")
    return image.symbols[name]


def _loop_bounds(image: Image, back: set[tuple[int, int]], trips: dict[str, int]
                 ) -> tuple[_LoopBounds, list[str]]:
    """The bounded loop headers, and the names of the loops without a bound."""
    by_pc: dict[int, int] = {}
    for label, n in trips.items():
        pc = _address(image, label, "loop")
        if n < 1:
            raise ReportError(f"loop {label}#: trips must be at least 1, not {n}")
        by_pc[pc] = n
    headers = sorted({target for _, target in back} & set(by_pc))
    unbounded = [_label_name(image, t) for t in sorted({t for _, t in back} - set(by_pc))]
    return _LoopBounds(back, tuple(headers), tuple(by_pc[h] for h in headers)), unbounded


def _indirect_notes(image: Image, cfg: _Cfg, reached: set[int]) -> list[str]:
    notes = []
    for pc in sorted(reached):
        insn = cfg.insns[pc]
        if insn.mnemonic == "jump":
            notes.append(f"jump at {pc} assumed to go to its label "
                         f"{_label_name(image, insn.fields['target'])}#")
        elif insn.mnemonic == "rtn":
            notes.append(f"rtn at {pc}: a path ends there")
    return notes


def _stats(image: Image, chip: ChipConfig, cfg: _Cfg, reached: set[int],
           steps: list[tuple[int, int]], entry: str, exits: tuple[str, ...],
           lower_bound: bool) -> BodyStats:
    timeline = _Timeline(chip)
    units: dict[str, int] = {}
    detail: dict[str, int] = {}
    for pc, penalty in steps:
        insn = cfg.insns[pc]
        timeline.run(insn, penalty)
        command = _unit_and_command(insn)
        if command:
            units[command[0]] = units.get(command[0], 0) + 1
            detail[" ".join(command)] = detail.get(" ".join(command), 0) + 1
    cycles = len(steps) + sum(p for _, p in steps)
    region = [cfg.insns[pc] for pc in sorted(reached)]
    waited = sorted({s for insn in region for s in _waited_signals(insn)})
    threads = image.ctx_mode
    clock = chip.clock_hz
    alu_pps = clock / cycles
    latency_pps = threads * clock / (cycles + timeline.waited)
    if timeline.pending:
        cfg.notes.append("signals still pending at the exit: "
                         + ", ".join(str(s) for s in sorted(timeline.pending)))
    return BodyStats(
        entry=entry, exits=tuple(exits), instructions=len(reached), path_cycles=cycles,
        path_instructions=len(steps), branch_penalty_cycles=cycles - len(steps),
        lower_bound=lower_bound,
        memory_commands={u: units[u] for u in UNITS if u in units},
        memory_detail=dict(sorted(detail.items())), memory_wait_cycles=timeline.waited,
        signals_waited=tuple(waited), signals_pending_at_exit=tuple(sorted(timeline.pending)),
        registers=_registers(region), clock_hz=clock, threads=threads,
        pps_per_me=min(alu_pps, latency_pps),
        pps_bound="alu" if alu_pps <= latency_pps else "latency",
        notes=tuple(cfg.notes), path=tuple(pc for pc, _ in steps))


# ------------------------------------------------------------------ bodies
def wrap_body(fragment: str) -> str:
    """A body fragment in the minimal harness that assembles it alone: the fragment (which
    defines ``body_entry#``) then ``body_exit#``, where the dispatch loop would go on.  A
    body with buffer operations or a receive stage (pool.uc's) also gets pool.h's names
    (example values), and its calls of the dispatch's receive-turn routine count as one
    instruction each (the routine is the dispatch's; it returns where it was called)."""
    pool = [name for name in POOL_NAMES if name in fragment]
    head = "".join(f"#define {name} {POOL_NAMES[name]}\n" for name in pool)
    for label in (RX_TURN_LABEL, RX_TURN_TAKE_LABEL):
        fragment = fragment.replace(f"br[{label}#]", "alu[--, --, B, 0]")
    return f"{head}{fragment.rstrip()}\n{BODY_EXIT}#:\n    ctx_arb[kill]\n"


def analyze_body(fragment: str, filename: str = "<body>",
                 loop_trips: dict[str, int] | None = None,
                 chip: ChipConfig | None = None) -> BodyStats:
    """``analyze`` of a back-end body fragment (raises npkit.compiler.uc.AsmError)."""
    image = assemble_text(wrap_body(fragment), filename=filename)
    return analyze(image, loop_trips=loop_trips, chip=chip)


def abi_violations(stats: BodyStats, abi: BodyABI | None = None) -> list[str]:
    """What a body's figures break of the body ABI: GPRs or signals the dispatch keeps,
    signals still pending when it leaves."""
    abi = abi or BodyABI()
    problems = []
    for bank, allowed in (("a", abi.gprs_a), ("b", abi.gprs_b)):
        bad = [r for r in stats.registers[f"gpr_{bank}"] if int(r[1:]) not in allowed]
        if bad:
            problems.append(f"uses dispatch registers {', '.join(bad)}")
    bad_sigs = [s for s in stats.signals_waited if s not in abi.signals]
    if bad_sigs:
        problems.append(f"waits for dispatch signals {', '.join(map(str, bad_sigs))}")
    if stats.signals_pending_at_exit:
        problems.append("leaves with signals pending: "
                        + ", ".join(map(str, stats.signals_pending_at_exit)))
    return problems


# ------------------------------------------------------------------ output
def to_json(stats_by_block: AbcMapping[str, BodyStats]) -> str:
    """The report as JSON: {block: BodyStats fields + thread_cycles}."""
    return json.dumps({name: s.to_dict() for name, s in stats_by_block.items()}, indent=2)


def _units_text(stats: BodyStats) -> str:
    return ", ".join(f"{u} {n}" for u, n in stats.memory_commands.items()) or "none"


def _registers_text(stats: BodyStats) -> str:
    regs = stats.registers
    return (f"{len(regs['gpr_a'])} A, {len(regs['gpr_b'])} B, {len(regs['xfer'])} xfer"
            + (f", {len(regs['lm'])} LM" if regs["lm"] else ""))


def render_report(stats_by_block: AbcMapping[str, BodyStats], title: str = "compile report",
                  width: int = 120) -> str:
    """A plain-text table (rich) of every block's figures, then notes and the formula."""
    table = Table(title=title)
    for column in ("block", "instr", "worst path (cycles)", "memory wait", "memory / packet",
                   "signals", "registers", "est. pps/ME"):
        table.add_column(column, justify="right" if column in ("instr", "est. pps/ME") else "left")
    for name, s in stats_by_block.items():
        cycles = f"{'>= ' if s.lower_bound else ''}{s.path_cycles}"
        table.add_row(name, str(s.instructions), cycles, str(s.memory_wait_cycles),
                      _units_text(s), " ".join(map(str, s.signals_waited)) or "-",
                      _registers_text(s), f"{s.pps_per_me / 1e6:.2f} M ({s.pps_bound})")
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, highlight=False)
    console.print(table)
    for name, s in stats_by_block.items():
        for note in s.notes:
            console.print(f"{name}: {note}")
    console.print("est. pps/ME = min(clock / C, threads x clock / (C + W)), C = worst-path "
                  "cycles, W = its memory wait: an estimate for packets on the worst path on "
                  "an idle chip (no channel contention, no ordering waits)")
    return buffer.getvalue()


def report_command_text(stats_by_block: AbcMapping[str, BodyStats],
                        mapping: Mapping | None = None, json_output: bool = False,
                        width: int = 120) -> str:
    """What ``npkit build --report`` prints: the table (or JSON), and with a mapping the
    chip-wide estimate of the run-to-completion placement."""
    if json_output:
        return to_json(stats_by_block)
    text = render_report(stats_by_block, width=width)
    if mapping is None:
        return text
    fwd = [a for a in mapping.mes if a.role == "fwd"]
    slowest = min((s.pps_per_me for s in stats_by_block.values()), default=0.0)
    return (text + f"mapping {mapping.pipeline}: the whole pipeline runs to completion on each "
            f"of {len(fwd)} forwarding MEs (stage-per-ME placement is not done yet): "
            f"est. {len(fwd) * slowest / 1e6:.2f} Mpps for the chip\n")
