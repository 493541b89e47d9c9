"""Diagnostics: every user-facing error of the MBL compiler.

A diagnostic names a source span (file:line:col), a message and a hint; ``render`` prints
it with the source line and a caret, like a C compiler.  Errors are collected, never raised
one at a time, so one run reports all errors of a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """A position in a source file (1-based line, 0-based column) and a length."""

    file: str
    line: int
    col: int
    length: int = 1


@dataclass(frozen=True)
class Diagnostic:
    kind: str  # a stable identifier, e.g. "undefined-name"; tests key on it
    message: str
    span: Span
    hint: str = ""
    severity: str = "error"

    def render(self, sources: dict[str, str]) -> str:
        """file:line:col: error: message, then the source line, a caret and the hint."""
        s = self.span
        head = f"{s.file}:{s.line}:{s.col + 1}: {self.severity}: {self.message} [{self.kind}]"
        lines = sources.get(s.file, "").splitlines()
        out = [head]
        if 1 <= s.line <= len(lines):
            text = lines[s.line - 1].expandtabs(1)
            out.append(f"  {text}")
            width = max(1, min(s.length, len(text) - s.col))
            out.append("  " + " " * s.col + "^" + "~" * (width - 1))
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)


# Hints for diagnostics raised without a specific one (every diagnostic shows a hint).
DEFAULT_HINTS: dict[str, str] = {
    "redefinition": "rename one of them",
    "literal-range": "use a smaller value or a wider bit<N>",
    "bad-type": "use bit<N> here (docs/language.md, Types)",
    "header-size": "declare at least one bit<N> field",
    "table-key": "use bit<N> with N <= 128",
    "resource": "see docs/language.md, Memories",
    "type-mismatch": "make the types match; convert with `as bit<N>`",
    "immutable": "writable meta fields: out_port, queue, flow_id, next_hop, class_id, user",
    "arity": "check the parameter list in the declaration",
    "bad-name": "use a constant, a variable or a memory element here",
    "bad-method": "methods exist on tables (lookup, contains), counters (count, add) and "
                  "registers (add)",
    "unknown-field": "check the field names in the declaration",
    "bad-cast": "cast between bit<N> widths, or from bool to bit<N>",
    "bad-ports": "write `ports low..high;`",
    "io": "check the path and permissions",
}


@dataclass
class DiagnosticBag:
    """Collects diagnostics during one compilation."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, kind: str, message: str, span: Span, hint: str = "") -> None:
        self.items.append(Diagnostic(kind, message, span, hint or DEFAULT_HINTS.get(kind, "")))

    def warning(self, kind: str, message: str, span: Span, hint: str = "") -> None:
        self.items.append(Diagnostic(kind, message, span, hint, "warning"))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    def render(self, sources: dict[str, str]) -> str:
        return "\n".join(d.render(sources) for d in self.items)


class CompileError(Exception):
    """Raised at the API boundary when a compilation has errors; carries all of them."""

    def __init__(self, diagnostics: list[Diagnostic], sources: dict[str, str]) -> None:
        self.diagnostics = diagnostics
        self.sources = sources
        super().__init__(self.render())

    def render(self) -> str:
        return "\n".join(d.render(self.sources) for d in self.diagnostics)

    def kinds(self) -> list[str]:
        return [d.kind for d in self.diagnostics]
