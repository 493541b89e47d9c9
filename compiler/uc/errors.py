"""Source locations and the two user-facing error types of the microcode tools."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """Where an instruction came from: file name, 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One assembler error, with the text of the offending source line when known."""

    file: str
    line: int
    col: int
    message: str
    hint: str = ""
    source_line: str | None = None

    def render(self) -> str:
        out = [f"{self.file}:{self.line}:{self.col}: error: {self.message}"]
        if self.source_line is not None:
            text = self.source_line.rstrip("\n").expandtabs(1)
            out.append(f"    {text}")
            out.append("    " + " " * max(self.col - 1, 0) + "^")
        if self.hint:
            out.append(f"  hint: {self.hint}")
        return "\n".join(out)


class AsmError(Exception):
    """Assembly failed; ``diagnostics`` lists every error found in the run."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [d.render() for d in self.diagnostics]
        n = len(self.diagnostics)
        parts.append(f"{n} error{'s' if n != 1 else ''}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self._render()


class ImageError(Exception):
    """An image file is missing, truncated, corrupt, of another version or illegal."""
