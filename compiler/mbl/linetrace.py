"""The native reference per MBL line: one packet through the native target, with the value
of every variable in scope before each statement runs (issue 18: the debugger's values of
MBL variables on the chip are checked against these, line by line).

    tracer = LineTracer(program)            # a NativeProgram built with the trace hooks
    tracer.table_add("fib", ...)            # memories as for any NativeProgram
    run = tracer.trace(packet, in_port=0)   # -> LineRun(states, verdict)
    for state in run.states:                # one LineState per statement executed
        print(state.loc, state.values)      # {"outcome": 3, "nh_index": 3, ...}

The hooks are calls the lowering puts before every statement only in this build
(`lower(..., trace=LineTable())`); the targets' builds never contain them.  A variable is
in scope from its declaration to the end of its enclosing block (a function's parameters:
the whole function); an inner declaration hides an outer one of the same name.  Views
(`let ip = packet<ipv4_t>(14)`, `let nh = nexthops[i]`) are no values and are not listed.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from npkit.base.diagnostics import SourceLocation

from .lower import TRACE_LINE, TRACE_VAR, LineTable, TracedVariable
from .native import NativeProgram, Verdict
from .sema import Program

_LINE_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32)
_VAR_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64,
                             ctypes.c_uint64)


@dataclass
class LineState:
    """Before the statement at `loc` runs: the variables in scope and their values."""

    loc: SourceLocation
    values: dict[str, int] = field(default_factory=dict)        # name -> value
    variables: dict[str, TracedVariable] = field(default_factory=dict)  # name -> which

    @property
    def line(self) -> int:
        return self.loc.line


@dataclass
class LineRun:
    states: list[LineState]
    verdict: Verdict


class LineTracer(NativeProgram):
    """A NativeProgram whose block runs one packet at a time and reports every statement."""

    def __init__(self, program: Program, block: str | None = None, **native_options) -> None:
        self.lines = LineTable()
        super().__init__(program, block, trace=self.lines, **native_options)
        self._states: list[LineState] = []
        # the callbacks live as long as the program: the JIT code calls them
        self._line_cb = _LINE_HOOK(self._on_line)
        self._var_cb = _VAR_HOOK(self._on_var)
        for name, cb in ((TRACE_LINE, self._line_cb), (TRACE_VAR, self._var_cb)):
            try:
                address = self.engine.get_global_value_address(name)
            except RuntimeError:        # pragma: no cover - a program without statements
                continue
            if address:
                ctypes.c_void_p.from_address(address).value = ctypes.cast(
                    cb, ctypes.c_void_p).value

    def _on_line(self, _ctx: int, statement: int) -> None:
        self._states.append(LineState(self.lines.statements[statement]))

    def _on_var(self, _ctx: int, variable: int, low: int, high: int) -> None:
        var = self.lines.variables[variable]
        value = (low | high << 64) & ((1 << var.width) - 1)
        state = self._states[-1]
        state.values[var.name] = value
        state.variables[var.name] = var

    def trace(self, packet: bytes, in_port: int = 0) -> LineRun:
        """Run one packet; the states of the statements it executed, in order."""
        self._states = []
        verdict = self.run([packet], [in_port])[0]
        states, self._states = self._states, []
        return LineRun(states, verdict)

    def replica(self) -> NativeProgram:
        raise NotImplementedError("a line tracer runs on its own (one packet at a time)")


def native_line_trace(program: Program, packet: bytes, in_port: int = 0,
                      block: str | None = None) -> list[LineState]:
    """The line states of one packet on a fresh tracer (memories empty: tables missing;
    use LineTracer to fill them first)."""
    return LineTracer(program, block).trace(packet, in_port).states
