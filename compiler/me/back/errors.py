"""CompileError construction for the back end, in the MBL checker's format."""

from __future__ import annotations

from pathlib import Path

from npkit.base.diagnostics import Diagnostic, SourceLocation

from ...mbl.diagnostics import CompileError


def _sources(loc: SourceLocation | None) -> dict[str, str]:
    if loc is None:
        return {}
    try:
        return {loc.file: Path(loc.file).read_text(encoding="utf-8")}
    except OSError:
        return {}


def compile_error(kind: str, message: str, loc: SourceLocation | None,
                  hint: str) -> CompileError:
    """One diagnostic at an MBL location (``<body>`` when the code has none)."""
    where = loc or SourceLocation("<body>", 0)
    return CompileError([Diagnostic(message, where, hint, kind=kind)], _sources(loc))


def unsupported(construct: str, loc: SourceLocation | None) -> CompileError:
    return compile_error("me-unsupported", f"the ME back end does not support {construct}",
                         loc, "see docs/me-backend.md, Diagnostics")
