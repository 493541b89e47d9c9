"""CompileError construction for the back end, in the MBL checker's format."""

from __future__ import annotations

from pathlib import Path

from ...mbl.diagnostics import CompileError, Diagnostic, Span
from ..wir import Loc


def _sources(loc: Loc | None) -> dict[str, str]:
    if loc is None:
        return {}
    try:
        return {loc.file: Path(loc.file).read_text(encoding="utf-8")}
    except OSError:
        return {}


def compile_error(kind: str, message: str, loc: Loc | None, hint: str) -> CompileError:
    """One diagnostic at an MBL location (WIR columns are 1-based, Span columns 0-based)."""
    span = Span(loc.file, loc.line, max(loc.col - 1, 0)) if loc else Span("<body>", 0, 0)
    return CompileError([Diagnostic(kind, message, span, hint)], _sources(loc))


def unsupported(construct: str, loc: Loc | None) -> CompileError:
    return compile_error("me-unsupported", f"the ME back end does not support {construct}",
                         loc, "see docs/me-backend.md, Diagnostics")
