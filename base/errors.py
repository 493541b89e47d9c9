"""One family of user errors.

Every error a user can act on -- a bad file, a bad option, a program that does not compile
or does not fit the chip, a fault of the simulated program -- is an :class:`NpkitError`.
The command line catches this one class, prints the message (no traceback) and exits with
status 1; anything else that escapes is a bug in npkit and is reported as one.  Library
modules raise these and never import the CLI framework.
"""

from __future__ import annotations


class NpkitError(Exception):
    """An error caused by the user's input, with a message that says what to do."""
