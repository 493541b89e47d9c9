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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from npkit.base.errors import NpkitError

Severity = Literal["error", "warning", "note"]
SOURCE_INDENT = "    "
HINT_INDENT = "  "


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
        where = f"{self.location}: " if self.location is not None else ""
        kind = f" [{self.kind}]" if self.kind else ""
        out = [f"{where}{self.severity}: {self.message}{kind}"]
        text = self._source_line(sources or {})
        if text is not None and self.location is not None:
            column = max(self.location.column - 1, 0)
            width = max(1, min(self.location.length, len(text) - column))
            out.append(SOURCE_INDENT + text)
            out.append(SOURCE_INDENT + " " * column + "^" + "~" * (width - 1))
        if self.hint:
            out.append(f"{HINT_INDENT}hint: {self.hint}")
        return "\n".join(out)

    def _source_line(self, sources: Mapping[str, str]) -> str | None:
        if self.location is None or self.location.file not in sources:
            return None
        lines = sources[self.location.file].splitlines()
        if not 1 <= self.location.line <= len(lines):
            return None
        return lines[self.location.line - 1].expandtabs(1)


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
        return "\n".join(d.render(self.sources) for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()
