"""The ``npkit`` command group and its one error handler.

Library code reports what a user can act on by raising :class:`npkit.base.errors.NpkitError`
(a bad file, a program that does not compile or fit, a fault of the simulated program).
``NpkitGroup.invoke`` is the only place that catches it: the message is printed without a
traceback and the exit status is 1.  Two more cases are a user's to fix and are reported
the same way: an ``OSError`` naming a file (a folder that cannot be written, a full disk)
and an ``ImportError`` of a C++ extension (npkit not completely built).  Anything else
that escapes is a bug in npkit and is reported as one: "internal error" and how to see the
traceback (NPKIT_TRACEBACK=1).

Arguments are checked before any work starts: the option types and callbacks here bound
every number (``COUNT``, ``CYCLES``, ``SEED``, ``finite``) and check every file a command will
write (``writable``), so a typo fails at once with the option's name, exit status 1 (usage
errors too), never after a long run.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console

from npkit.base.errors import NpkitError
from npkit.base.portspec import check_writable

# bounds of the numbers a user types: large enough for any run, small enough for the C++
# core's 64-bit integers and for memory (a count of generated frames is held in memory)
MAX_CYCLES = 2**62
CYCLES = click.IntRange(1, MAX_CYCLES)
SEED = click.IntRange(0, 2**64 - 1)
MAX_GENERATED = 10_000_000

# the C++ extensions: missing when the checkout was never built (scripts/setup)
COMPILED_EXTENSIONS = ("._core", "._trie")


def reject_unused(names: set[str], why: str) -> None:
    """An error for options of the current command the user gave that it would not use,
    named as typed (e.g. --routes); nothing for options left at their defaults."""
    ctx = click.get_current_context()
    given = sorted(p.opts[0] for p in ctx.command.params if p.name in names
                   and ctx.get_parameter_source(p.name) not in (None, ParameterSource.DEFAULT))
    if given:
        raise NpkitError(f"{', '.join(given)}: {why}")


class FiniteFloat(click.FloatRange):
    """A FloatRange that also refuses nan and inf (which every comparison lets through)."""

    name = "finite float"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


def finite(min: float | None = None, max: float | None = None) -> FiniteFloat:
    """A float option type: finite, within min..max."""
    return FiniteFloat(min=min, max=max)


def writable(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Option callback for a file the command will write: its folder must exist and the
    path must not be a folder, checked when the arguments are read (before the run)."""
    if value is not None:
        check_writable(Path(value), param.opts[0] if param.opts else param.name or "")
    return value


def console() -> Console:
    """Standard output for reports; no automatic number/path colouring (the tables carry
    the emphasis)."""
    return Console(highlight=False)


class NpkitGroup(click.Group):
    """The command group; ``invoke`` turns errors into messages (see the module docstring)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as err:
            err.exit_code = 1  # a mistake the user can act on: exit status 1, like the rest
            raise
        except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
            raise
        except NpkitError as err:
            raise click.ClickException(str(err) or type(err).__name__) from None
        except OSError as err:
            if err.filename is None:
                raise _internal(err) from None
            raise click.ClickException(f"{err.filename}: {err.strerror or err}") from None
        except ImportError as err:
            if not (err.name or "").endswith(COMPILED_EXTENSIONS):
                raise _internal(err) from None
            raise click.ClickException(
                f"npkit is not completely installed or built ({err}); run `bash scripts/setup`"
                " in a checkout") from None
        except KeyboardInterrupt:
            raise click.ClickException("interrupted") from None
        except Exception as err:  # noqa: BLE001 -- the point is to catch everything else
            raise _internal(err) from None


def _internal(err: BaseException) -> click.ClickException:
    if os.environ.get("NPKIT_TRACEBACK"):
        raise err
    return click.ClickException(
        f"internal error: {type(err).__name__}: {err} (a bug in npkit: please report it; "
        "NPKIT_TRACEBACK=1 shows the traceback)")


@click.group(cls=NpkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="npkit")
def main() -> None:
    """npkit: tools for IXP-style network processors.

    `npkit run` with no arguments runs the product: the MBL dual-stack router compiled for
    the simulated IXP2800 under a 2 x OC-192 POS load.
    """
