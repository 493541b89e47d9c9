"""Diagnostics of the MBL compiler: every user-facing error has a kind.

The diagnostics and source locations are the shared ones of ``npkit.base.diagnostics``
(``file:line:col``, the source line, a caret, a hint); an MBL diagnostic also has a
``kind``, a stable identifier such as ``undefined-name`` that tests key on and that the
rendering shows in brackets.  Errors are collected, never raised one at a time, so one run
reports all errors of a file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from npkit.base.diagnostics import Diagnostic, DiagnosticError, SourceLocation, render_all

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
    "too-large": "see docs/language.md, Limits",
}


@dataclass
class DiagnosticBag:
    """Collects diagnostics during one compilation."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, kind: str, message: str, location: SourceLocation, hint: str = "") -> None:
        self.items.append(Diagnostic(message, location, hint or DEFAULT_HINTS.get(kind, ""),
                                     "error", kind))

    def warning(self, kind: str, message: str, location: SourceLocation,
                hint: str = "") -> None:
        self.items.append(Diagnostic(message, location, hint, "warning", kind))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity == "error"]

    def render(self, sources: Mapping[str, str]) -> str:
        """Every diagnostic, up to MAX_SHOWN of them and then how many more there are."""
        return render_all(self.items, sources)


class CompileError(DiagnosticError):
    """Raised at the API boundary when a compilation has errors; carries all of them."""

    def __init__(self, diagnostics: Sequence[Diagnostic], sources: Mapping[str, str]) -> None:
        super().__init__(diagnostics, sources)

    def kinds(self) -> list[str]:
        return [d.kind for d in self.diagnostics]
