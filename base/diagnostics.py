"""Source locations and diagnostics: one kind of each for every tool that reads a user's
source (the assembler, the MBL checker, the ME back end).

A :class:`SourceLocation` names a file, a 1-based line and a 1-based column (as printed), and
how many characters of that line it covers.  A :class:`Diagnostic` is a message at a
location with a severity and a hint; ``render`` prints it like a C compiler::

    fwd.uc:12:19: error: immediate out of range: 99 does not fit an operand (0..63)
            alu[x, a1, +, 99]
                          ^
      hint: load it into a register first: immed[reg, 99]

(the source line indented by four spaces, a caret under the column with ``~`` under the
rest of the location's length, the hint indented by two).  A diagnostic with a ``kind`` --
the MBL checker's stable identifiers such as ``undefined-name``, which tests key on -- shows
it after the message in brackets.  Tools collect diagnostics and raise them together as a
:class:`DiagnosticError`, so one run reports every error of a file.

Output stays bounded whatever the input: a long source line is quoted as a window of
``QUOTE_CHARS`` around the column (``…`` marks the cut ends), a message is cut at
``MESSAGE_CHARS``, and ``render_all`` prints at most ``MAX_SHOWN`` diagnostics and then one
line saying how many more there are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from npkit.base.errors import NpkitError

Severity = Literal["error", "warning", "note"]
SOURCE_INDENT = "    "
HINT_INDENT = "  "
QUOTE_CHARS = 160      # at most this much of a source line is quoted
MESSAGE_CHARS = 1000   # a longer message (or hint) is cut
MAX_SHOWN = 50         # render_all prints this many diagnostics, then "N more"


@dataclass(frozen=True)
class SourceLocation:
    """A position in a source file: 1-based ``line`` (0: the file as a whole, printed as
    just the file name), 1-based ``column``, and the ``length`` in characters it covers on
    that line."""

    file: str
    line: int
    column: int = 1
    length: int = 1

    def __str__(self) -> str:
        if self.line == 0:
            return self.file
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Diagnostic:
    """One message about the user's source, at ``location`` when it has one."""

    message: str
    location: SourceLocation | None = None
    hint: str = ""
    severity: Severity = "error"
    kind: str = ""

    def render(self, sources: Mapping[str, str] | None = None) -> str:
        """``file:line:col: severity: message [kind]``, then -- when ``sources`` has the
        file's text -- the source line with a caret under the location, then the hint."""
        where = f"{_cut(str(self.location), MESSAGE_CHARS)}: " \
            if self.location is not None else ""
        kind = f" [{self.kind}]" if self.kind else ""
        out = [f"{where}{self.severity}: {_cut(self.message, MESSAGE_CHARS)}{kind}"]
        text = self._source_line(sources or {})
        if text is not None and self.location is not None:
            column = max(self.location.column - 1, 0)
            width = max(1, min(self.location.length, len(text) - column))
            if len(text) > QUOTE_CHARS:  # a window around the column
                start = max(0, min(column - QUOTE_CHARS // 4, len(text) - QUOTE_CHARS))
                end = start + QUOTE_CHARS
                lead = "…" if start else ""
                text = lead + text[start:end] + ("…" if end < len(text) else "")
                column = column - start + len(lead)
                width = max(1, min(width, end - start + len(lead) - column))
            out.append(SOURCE_INDENT + text)
            out.append(SOURCE_INDENT + " " * column + "^" + "~" * (width - 1))
        if self.hint:
            out.append(f"{HINT_INDENT}hint: {_cut(self.hint, MESSAGE_CHARS)}")
        return "\n".join(out)

    def _source_line(self, sources: Mapping[str, str]) -> str | None:
        if self.location is None or self.location.file not in sources:
            return None
        lines = _lines(sources[self.location.file])
        if not 1 <= self.location.line <= len(lines):
            return None
        return lines[self.location.line - 1].expandtabs(1)


@lru_cache(maxsize=16)
def _lines(text: str) -> list[str]:
    """A file's lines, split once however many diagnostics quote it."""
    return text.splitlines()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"…({len(text)} characters)"


def render_all(diagnostics: Sequence[Diagnostic], sources: Mapping[str, str] | None = None,
               limit: int = MAX_SHOWN) -> str:
    """The first ``limit`` diagnostics rendered, then a line with how many more there are
    (the errors among them first, so an error is never hidden behind warnings)."""
    ordered = [d for d in diagnostics if d.severity == "error"][:limit]
    shown = {id(d) for d in ordered}
    ordered += [d for d in diagnostics if id(d) not in shown][:limit - len(ordered)]
    shown = {id(d) for d in ordered}
    out = [d.render(sources) for d in diagnostics if id(d) in shown]
    rest = len(diagnostics) - len(out)
    if rest:
        errors = sum(1 for d in diagnostics if d.severity == "error" and id(d) not in shown)
        out.append(f"... and {rest} more ({errors} error{'s' if errors != 1 else ''}) not "
                   "shown")
    return "\n".join(out)


class DiagnosticError(NpkitError):
    """A source that does not assemble or compile: every diagnostic found, with the texts
    of the source files (file name -> text) they point into, for rendering."""

    def __init__(self, diagnostics: Sequence[Diagnostic],
                 sources: Mapping[str, str] | None = None) -> None:
        self.diagnostics = list(diagnostics)
        self.sources = dict(sources or {})
        super().__init__(self.render())

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def render(self) -> str:
        return render_all(self.diagnostics, self.sources)

    def __str__(self) -> str:
        return self.render()
