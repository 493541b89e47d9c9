"""The linker's user error."""

from __future__ import annotations

from npkit.base.errors import NpkitError


class LinkError(NpkitError, ValueError):
    """The program and the runtime's structures do not fit the chip together, or the
    platform asked for does not exist or cannot serve the program."""
