"""Errors of the front end: unsupported constructs are CompileErrors at their MBL
location (the checker's format); a bad request (an unknown entry) is a FrontError."""

from __future__ import annotations

from npkit.compiler.mbl.diagnostics import CompileError, Diagnostic, Span

from .. import wir

KIND = "unsupported"


class FrontError(ValueError):
    """The request cannot be served (e.g. no such pipeline or block)."""


def unsupported(message: str, loc: wir.Loc | None, sources: dict[str, str],
                hint: str = "") -> CompileError:
    """A CompileError for a construct the ME backend cannot compile, at `loc` (the MBL
    position of the construct; Loc columns count from 1)."""
    span = Span(loc.file, loc.line, max(0, loc.col - 1)) if loc else Span("<unknown>", 0, 0)
    hint = hint or "the native target (npkit run) supports it; the ME backend does not yet"
    return CompileError([Diagnostic(KIND, message, span, hint)], sources)
