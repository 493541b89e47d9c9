"""Errors of the front end: unsupported constructs are CompileErrors at their MBL
location (the checker's format); a bad request (an unknown entry) is a FrontError."""

from __future__ import annotations

from npkit.base.diagnostics import Diagnostic, SourceLocation
from npkit.base.errors import NpkitError
from npkit.compiler.mbl.diagnostics import CompileError

KIND = "unsupported"


class FrontError(NpkitError, ValueError):
    """The request cannot be served (e.g. no such pipeline or block)."""


def unsupported(message: str, loc: SourceLocation | None, sources: dict[str, str],
                hint: str = "") -> CompileError:
    """A CompileError for a construct the ME backend cannot compile, at `loc` (the MBL
    position of the construct)."""
    hint = hint or "the native target (npkit run) supports it; the ME backend does not yet"
    return CompileError([Diagnostic(message, loc or SourceLocation("<unknown>", 0),
                                    hint, kind=KIND)], sources)
