"""The two user-facing error types of the microcode tools.  Source locations and
diagnostics are the shared ones of ``npkit.base.diagnostics``."""

from __future__ import annotations

from npkit.base.diagnostics import DiagnosticError
from npkit.base.errors import NpkitError


class AsmError(DiagnosticError):
    """Assembly failed; ``diagnostics`` lists every error found in the run, and the message
    ends with their count."""

    def render(self) -> str:
        n = len(self.diagnostics)
        return "\n".join([super().render(), f"{n} error{'s' if n != 1 else ''}"])


class ImageError(NpkitError):
    """An image file is missing, truncated, corrupt, of another version or illegal."""
