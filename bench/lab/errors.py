"""The lab's user errors: a suite configuration that cannot run (an unknown preset or test,
sizes the frames cannot carry, a device whose ports the procedure cannot use)."""

from __future__ import annotations

from npkit.base.errors import NpkitError


class LabConfigError(NpkitError, ValueError):
    """A suite or preset asked for something it cannot do; the message says what to use.
    A ValueError too, for callers that caught the lab's earlier ValueErrors."""
